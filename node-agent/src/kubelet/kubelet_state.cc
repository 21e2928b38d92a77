#include "node-agent/src/kubelet/kubelet_state.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "common/yaml_fields.h"
#include "nlohmann/json.hpp"

namespace neighborly::agent {
namespace {

using Json = nlohmann::json;

std::string Lower(std::string s) {
  absl::AsciiStrToLower(&s);
  return s;
}

absl::StatusOr<Json> ParseJson(std::string_view file, std::string_view text) {
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(Av(file), ": not valid JSON"));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(Av(file), ": not a JSON object"));
  }
  // Format v4 and later wrap the state in a "data" string.
  if (auto data = json.find("data"); data != json.end()) {
    if (!data->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(Av(file), ": \"data\" is not a string"));
    }
    const std::string& inner = data->get_ref<const std::string&>();
    Json unwrapped = Json::parse(inner, nullptr, /*allow_exceptions=*/false);
    if (unwrapped.is_discarded() || !unwrapped.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(file), ": \"data\" does not hold a JSON object"));
    }
    return unwrapped;
  }
  return json;
}

absl::StatusOr<std::string> StringField(std::string_view file, const Json& json,
                                        std::string_view key, bool required) {
  auto it = json.find(std::string(key));
  if (it == json.end() || it->is_null()) {
    if (required) {
      return absl::InvalidArgumentError(absl::StrCat(Av(file), ": no \"", Av(key), "\""));
    }
    return std::string();
  }
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(file), ": \"", Av(key), "\" is not a string"));
  }
  return it->get<std::string>();
}

absl::StatusOr<CpuSet> CpuListField(std::string_view file, std::string_view where,
                                    const std::string& text) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList(text);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(file), ": ", Av(where), ": ", Av(Sv(cpus.status().message()))));
  }
  return cpus;
}

absl::StatusOr<uint64_t> Uint64Field(std::string_view file, const Json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number_unsigned()) {
    if (it != json.end() && it->is_number_integer() && it->get<int64_t>() >= 0) {
      return it->get<uint64_t>();
    }
    return absl::InvalidArgumentError(
        absl::StrCat(Av(file), ": \"", key, "\" is missing or not a non-negative integer"));
  }
  return it->get<uint64_t>();
}

// cpuManagerPolicyOptions, topologyManagerPolicyOptions (string maps) and
// reservedMemory (a list of {numaNode, limits: {memory: <quantity>, ...}}).
// The kubelet's schema is not ours: unknown keys are ignored.
absl::Status ParseResourceManagerConfig(const yaml::Map& root, KubeletConfig& config) {
  for (auto [key, out] :
       {std::pair<const char*, std::map<std::string, std::string>*>{
            "cpuManagerPolicyOptions", &config.cpu_manager_policy_options},
        {"topologyManagerPolicyOptions", &config.topology_manager_policy_options}}) {
    absl::StatusOr<std::map<std::string, std::string>> options = root.Get(key).StringMap();
    if (!options.ok()) return options.status();
    *out = *std::move(options);
  }
  absl::StatusOr<std::vector<yaml::Value>> reserved = root.Get("reservedMemory").List();
  if (!reserved.ok()) return reserved.status();
  for (const yaml::Value& item : *reserved) {
    absl::StatusOr<yaml::Map> entry = yaml::Map::OfAnyKeys(item);
    if (!entry.ok()) return entry.status();
    if (!entry->Has("numaNode")) return entry->Missing("numaNode");
    absl::StatusOr<uint64_t> numa = entry->Get("numaNode").Uint(UINT32_MAX);
    if (!numa.ok()) return numa.status();
    absl::StatusOr<yaml::Map> limits = yaml::Map::OfAnyKeys(entry->Get("limits"));
    if (!limits.ok()) return limits.status();
    if (!limits->Has("memory")) continue;
    absl::StatusOr<int64_t> bytes = limits->Get("memory").Bytes(0);
    if (!bytes.ok()) return bytes.status();
    config.reserved_memory_bytes[static_cast<uint32_t>(*numa)] += static_cast<uint64_t>(*bytes);
  }
  return absl::OkStatus();
}

}  // namespace

CpuSet CpuManagerState::ExclusiveCpus(std::string_view pod_uid) const {
  CpuSet all;
  auto it = entries.find(std::string(pod_uid));
  if (it == entries.end()) return all;
  for (const auto& [container, cpus] : it->second) all.insert(all.end(), cpus.begin(), cpus.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

absl::StatusOr<CpuManagerState> ParseCpuManagerState(std::string_view text) {
  constexpr std::string_view kFile = "cpu_manager_state";
  absl::StatusOr<Json> json = ParseJson(kFile, text);
  if (!json.ok()) return json.status();
  CpuManagerState state;
  absl::StatusOr<std::string> policy = StringField(kFile, *json, "policyName", true);
  if (!policy.ok()) return policy.status();
  state.policy = Lower(*policy);
  absl::StatusOr<std::string> defaults = StringField(kFile, *json, "defaultCpuSet", false);
  if (!defaults.ok()) return defaults.status();
  absl::StatusOr<CpuSet> default_cpus = CpuListField(kFile, "defaultCpuSet", *defaults);
  if (!default_cpus.ok()) return default_cpus.status();
  state.default_cpu_set = std::move(*default_cpus);
  auto entries = json->find("entries");
  if (entries == json->end() || entries->is_null()) return state;
  if (!entries->is_object()) {
    return absl::InvalidArgumentError("cpu_manager_state: \"entries\" is not an object");
  }
  for (const auto& [key, value] : entries->items()) {
    if (value.is_string()) {
      state.legacy_container_keys = true;  // v1: containerID -> cpuset
      continue;
    }
    if (!value.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu_manager_state: entry \"", key, "\" is neither an object nor a string"));
    }
    for (const auto& [container, cpus] : value.items()) {
      if (!cpus.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("cpu_manager_state: entry \"", key, "/",
                                                       container, "\" is not a cpu list"));
      }
      absl::StatusOr<CpuSet> set =
          CpuListField(kFile, absl::StrCat(key, "/", container), cpus.get<std::string>());
      if (!set.ok()) return set.status();
      state.entries[key][container] = std::move(*set);
    }
  }
  return state;
}

absl::StatusOr<MemoryManagerState> ParseMemoryManagerState(std::string_view text) {
  constexpr std::string_view kFile = "memory_manager_state";
  absl::StatusOr<Json> json = ParseJson(kFile, text);
  if (!json.ok()) return json.status();
  MemoryManagerState state;
  absl::StatusOr<std::string> policy = StringField(kFile, *json, "policyName", true);
  if (!policy.ok()) return policy.status();
  state.policy = Lower(*policy);
  if (auto machine = json->find("machineState"); machine != json->end() && !machine->is_null()) {
    if (!machine->is_object()) {
      return absl::InvalidArgumentError("memory_manager_state: \"machineState\" is not an object");
    }
    for (const auto& [node_key, node] : machine->items()) {
      std::optional<uint32_t> node_id = ParseInt<uint32_t>(node_key);
      if (!node_id || !node.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("memory_manager_state: bad NUMA node \"", node_key, "\""));
      }
      auto map = node.find("memoryMap");
      if (map == node.end() || !map->is_object()) continue;
      for (const auto& [resource, values] : map->items()) {
        if (!values.is_object()) continue;
        absl::StatusOr<uint64_t> total = Uint64Field(kFile, values, "total");
        absl::StatusOr<uint64_t> free_bytes = Uint64Field(kFile, values, "free");
        if (!total.ok()) return total.status();
        if (!free_bytes.ok()) return free_bytes.status();
        state.machine_state[*node_id][resource] = {*total, *free_bytes};
      }
    }
  }
  if (auto entries = json->find("entries"); entries != json->end() && !entries->is_null()) {
    if (!entries->is_object()) {
      return absl::InvalidArgumentError("memory_manager_state: \"entries\" is not an object");
    }
    for (const auto& [uid, containers] : entries->items()) {
      if (!containers.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("memory_manager_state: entry \"", uid, "\" is not an object"));
      }
      for (const auto& [container, blocks] : containers.items()) {
        if (!blocks.is_array()) {
          return absl::InvalidArgumentError(absl::StrCat("memory_manager_state: entry \"", uid, "/",
                                                         container, "\" is not a list"));
        }
        std::vector<MemoryBlock>& out = state.entries[uid][container];
        for (const Json& block : blocks) {
          if (!block.is_object()) {
            return absl::InvalidArgumentError("memory_manager_state: a block is not an object");
          }
          MemoryBlock b;
          absl::StatusOr<uint64_t> size = Uint64Field(kFile, block, "size");
          if (!size.ok()) return size.status();
          b.size_bytes = *size;
          absl::StatusOr<std::string> type = StringField(kFile, block, "type", false);
          if (!type.ok()) return type.status();
          b.type = *type;
          if (auto affinity = block.find("numaAffinity"); affinity != block.end()) {
            if (!affinity->is_array()) {
              return absl::InvalidArgumentError(
                  "memory_manager_state: \"numaAffinity\" is not a list");
            }
            for (const Json& n : *affinity) {
              if (!n.is_number_unsigned()) {
                return absl::InvalidArgumentError(
                    "memory_manager_state: a NUMA affinity is not a node id");
              }
              b.numa_affinity.push_back(n.get<uint32_t>());
            }
          }
          out.push_back(std::move(b));
        }
      }
    }
  }
  return state;
}

absl::StatusOr<KubeletConfig> ParseKubeletConfig(std::string_view text,
                                                 std::string_view source_name) {
  const yaml::Source source{std::string(source_name)};
  absl::StatusOr<YAML::Node> doc = yaml::Load(source, text);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<yaml::Map> root = yaml::Map::OfAnyKeys(yaml::Value(source, *doc));
  if (!root.ok()) return root.status();
  KubeletConfig config;
  for (auto [key, out] :
       {std::pair<const char*, std::string*>{"cpuManagerPolicy", &config.cpu_manager_policy},
        {"topologyManagerPolicy", &config.topology_manager_policy},
        {"topologyManagerScope", &config.topology_manager_scope},
        {"reservedSystemCPUs", &config.reserved_system_cpus},
        {"cgroupDriver", &config.cgroup_driver},
        {"memoryManagerPolicy", &config.memory_manager_policy}}) {
    absl::StatusOr<std::optional<std::string>> value = root->String(key);
    if (!value.ok()) return value.status();
    if (value->has_value()) *out = **value;
  }
  config.memory_manager_policy = Lower(config.memory_manager_policy);
  if (absl::Status s = ParseResourceManagerConfig(*root, config); !s.ok()) return s;
  for (auto [key, out] : {std::pair<const char*, std::map<std::string, std::string>*>{
                              "evictionHard", &config.eviction_hard},
                          {"evictionSoft", &config.eviction_soft}}) {
    absl::StatusOr<std::map<std::string, std::string>> thresholds = root->Get(key).StringMap();
    if (!thresholds.ok()) return thresholds.status();
    *out = *std::move(thresholds);
  }
  if (!config.reserved_system_cpus.empty()) {
    absl::StatusOr<CpuSet> cpus = root->Get("reservedSystemCPUs").Cpus();
    if (!cpus.ok()) return cpus.status();
    config.reserved_system_cpus = FormatCpuList(*cpus);
  }
  return config;
}

KubeletState ReadKubeletState(const Filesystem& fs, std::string_view kubelet_dir) {
  KubeletState state;
  // The running kubelet's flags name its config file and override it.
  absl::StatusOr<KubeletCommandLine> cmdline = FindKubeletProcess(fs);
  absl::StatusOr<std::string> cpu = fs.ReadFile(JoinPath(kubelet_dir, "cpu_manager_state"));
  state.cpu_manager =
      cpu.ok() ? ParseCpuManagerState(*cpu) : absl::StatusOr<CpuManagerState>(cpu.status());
  absl::StatusOr<std::string> memory = fs.ReadFile(JoinPath(kubelet_dir, "memory_manager_state"));
  state.memory_manager = memory.ok() ? ParseMemoryManagerState(*memory)
                                     : absl::StatusOr<MemoryManagerState>(memory.status());
  const std::string config_path = cmdline.ok() && !cmdline->config_path.empty()
                                      ? cmdline->config_path
                                      : JoinPath(kubelet_dir, "config.yaml");
  absl::StatusOr<std::string> config = fs.ReadFile(config_path);
  if (config.ok()) {
    state.config = ParseKubeletConfig(*config, config_path);
    state.config_source = absl::StrCat("config ", config_path);
  } else if (cmdline.ok()) {
    // No file (a kubelet configured by flags alone): the flags on the defaults.
    state.config = KubeletConfig();
  } else {
    state.config = config.status();
  }
  if (state.config.ok() && cmdline.ok()) {
    if (absl::Status s = ApplyKubeletFlags(*cmdline, *state.config); !s.ok()) {
      state.config = s;
    } else {
      if (!state.config_source.empty()) state.config_source += "; ";
      absl::StrAppend(&state.config_source, "flags of pid ", cmdline->pid);
    }
  }
  return state;
}

}  // namespace neighborly::agent
