#include "node-agent/src/simulate/scenario.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/cpu_list.h"
#include "common/strings.h"
#include "common/yaml_fields.h"
#include "node-agent/src/simulate/node_report.h"
#include "yaml-cpp/yaml.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using yaml::Map;
using yaml::Value;

constexpr size_t kMaxNodeNameBytes = 253;  // a Kubernetes DNS subdomain

// Node-level optional keys beyond the design's example are documented in
// docs/simulation.md ("capabilities").
const std::vector<std::string> kRootKeys = {"apiVersion", "kind", "nodes"};
const std::vector<std::string> kNodeKeys = {"name", "kubelet",      "numaNodes",     "l3Domains",
                                            "pods", "capabilities", "threadsPerCore",
                                            // issue 26
                                            "memory"};
const std::vector<std::string> kNodeMemoryKeys = {"capacityBytes", "availableBytes"};
// All optional (issue 14 added the last five; older scenarios stay valid).
const std::vector<std::string> kKubeletKeys = {"cpuManagerPolicy",
                                               "topologyManagerPolicy",
                                               "topologyManagerScope",
                                               "reservedCpus",
                                               "memoryManagerPolicy",
                                               "cpuManagerPolicyOptions",
                                               "topologyManagerPolicyOptions",
                                               "reservedMemoryBytes",
                                               "allocatableCpus",
                                               // issue 26
                                               "evictionHard",
                                               "evictionSoft"};
const std::vector<std::string> kNumaKeys = {"id", "cpus", "memoryBytes", "peakMembwBytesPerSecond",
                                            "distances"};
const std::vector<std::string> kL3Keys = {"id",
                                          "cpus",
                                          "sizeBytes",
                                          "numaNode",
                                          "occupancyBytes",
                                          "membwTotalBytesPerSecond",
                                          "membwLocalBytesPerSecond"};
const std::vector<std::string> kPodKeys = {"uid",
                                           "namespace",
                                           "name",
                                           "qosClass",
                                           "labels",
                                           "annotations",
                                           "cpuRequestMillicores",
                                           "memoryRequestBytes",
                                           "exclusiveCpus",
                                           "cpuUsageMillicores",
                                           "llcOccupancyBytes",
                                           "membwTotalBytesPerSecond",
                                           "membwLocalBytesPerSecond",
                                           "ipc",
                                           "llcMissesPerKiloInstructions",
                                           "memoryBytesByNuma",
                                           "psiCpuSomeAvg10",
                                           "psiMemorySomeAvg10",
                                           "psiMemoryFullAvg10",
                                           "llcMissesPerSecond",
                                           // issue 26
                                           "memoryWorkingSetBytes",
                                           "memoryLimitBytes",
                                           "oomScoreAdj",
                                           "priority",
                                           "containerMemoryRequestBytes",
                                           "series"};
// Per-window values (issue 26): each list is cycled, window k taking element
// k mod its length. Byte keys take quantities, the others numbers.
const std::vector<std::string> kSeriesKeys = {
    "ipc",         "llcMissesPerKiloInstructions", "membwTotalBytesPerSecond",
    "membwLocalBytesPerSecond", "llcOccupancyBytes", "memoryWorkingSetBytes",
    "cpuUsageMillicores"};
constexpr size_t kMaxSeriesValues = 4096;

struct CapabilityKey {
  std::string_view key;
  std::function<tv1::Capability*(tv1::Capabilities*)> get;
};

const std::vector<CapabilityKey>& CapabilityKeys() {
  static const auto* keys = new std::vector<CapabilityKey>{
      {"resctrlOccupancy", [](tv1::Capabilities* c) { return c->mutable_resctrl_occupancy(); }},
      {"resctrlMbmTotal", [](tv1::Capabilities* c) { return c->mutable_resctrl_mbm_total(); }},
      {"resctrlMbmLocal", [](tv1::Capabilities* c) { return c->mutable_resctrl_mbm_local(); }},
      {"perfHardwareCounters",
       [](tv1::Capabilities* c) { return c->mutable_perf_hardware_counters(); }},
      {"psi", [](tv1::Capabilities* c) { return c->mutable_psi(); }},
      {"kubeletPodResources",
       [](tv1::Capabilities* c) { return c->mutable_kubelet_pod_resources(); }},
      {"cpuManagerState", [](tv1::Capabilities* c) { return c->mutable_cpu_manager_state(); }},
      {"podMetadata", [](tv1::Capabilities* c) { return c->mutable_pod_metadata(); }},
      {"peakMembw", [](tv1::Capabilities* c) { return c->mutable_peak_membw(); }},
  };
  return *keys;
}

// Checks `value` against a closed set of spellings.
absl::Status CheckOneOf(const Map& f, std::string_view key, const std::string& value,
                        const std::vector<std::string_view>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return absl::OkStatus();
  std::string list;
  for (std::string_view a : allowed) absl::StrAppend(&list, list.empty() ? "" : ", ", Av(a));
  return f.ErrorFor(key, absl::StrCat("must be one of ", list, ", got \"", value, "\""));
}

bool IsSubset(const CpuSet& inner, const CpuSet& outer) {
  return IntersectionSize(inner, outer) == inner.size();
}

CpuSet Union(const CpuSet& a, const CpuSet& b) {
  CpuSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Parses everything about one node and checks it for internal consistency.
class NodeParser {
 public:
  explicit NodeParser(std::set<std::string>* seen_uids) : seen_uids_(seen_uids) {}

  // Per-window series of the node's pods (empty: none), set by Parse.
  NodeTimeline& timeline() { return timeline_; }

  absl::StatusOr<tv1::NodeReport> Parse(const Value& item) {
    absl::StatusOr<Map> f = Map::Of(item, kNodeKeys);
    if (!f.ok()) return f.status();
    absl::StatusOr<std::string> name = f->RequiredString("name");
    if (!name.ok()) return name.status();
    if (name->size() > kMaxNodeNameBytes) {
      return f->ErrorFor("name",
                         absl::StrCat("node name is longer than ", kMaxNodeNameBytes, " bytes"));
    }
    report_.set_node_name(*name);
    what_ = absl::StrCat("node \"", *name, "\"");
    for (auto step :
         {&NodeParser::ParseNuma, &NodeParser::ParseCores, &NodeParser::ParseL3,
          &NodeParser::ParseKubelet, &NodeParser::ParseCapabilities, &NodeParser::ParsePods,
          &NodeParser::ParseNodeMemory}) {
      if (absl::Status s = (this->*step)(*f); !s.ok()) return s;
    }
    if (!timeline_.pods.empty()) timeline_.underived = report_;
    DeriveNodeMeasurements(&report_);
    return std::move(report_);
  }

 private:
  absl::Status ParseNuma(const Map& node) {
    absl::StatusOr<std::vector<Value>> list = node.Get("numaNodes").List();
    if (!list.ok()) return list.status();
    if (list->empty()) return node.Missing("numaNodes", "(at least one NUMA node)");
    std::vector<Map> entries;
    for (const Value& item : *list) {
      absl::StatusOr<Map> f = Map::Of(item, kNumaKeys);
      if (!f.ok()) return f.status();
      absl::StatusOr<uint64_t> id = f->RequiredUint("id");
      if (!id.ok()) return id.status();
      if (*id > UINT32_MAX) return f->ErrorFor("id", "NUMA node id is too large");
      if (numa_ids_.count(static_cast<uint32_t>(*id)) != 0) {
        return f->ErrorFor("id", absl::StrCat("duplicate NUMA node id ", *id, " in ", what_));
      }
      numa_ids_.insert(static_cast<uint32_t>(*id));
      absl::StatusOr<std::optional<CpuSet>> cpus = f->Cpus("cpus");
      if (!cpus.ok()) return cpus.status();
      if (!cpus->has_value() || (*cpus)->empty()) {
        return f->Missing("cpus");
      }
      if (IntersectionSize(**cpus, online_) != 0) {
        return f->ErrorFor("cpus", absl::StrCat("\"", FormatCpuList(**cpus),
                                                "\" overlap another NUMA node of ", what_));
      }
      online_ = Union(online_, **cpus);
      absl::StatusOr<uint64_t> memory = f->RequiredBytes("memoryBytes");
      if (!memory.ok()) return memory.status();
      absl::StatusOr<std::optional<uint64_t>> peak = f->Bytes("peakMembwBytesPerSecond");
      if (!peak.ok()) return peak.status();

      tv1::NumaNode* numa = report_.mutable_topology()->add_numa_nodes();
      numa->set_id(static_cast<uint32_t>(*id));
      numa->set_cpus(FormatCpuList(**cpus));
      numa->set_memory_bytes(*memory);
      if (peak->has_value()) {
        numa->set_peak_membw_bytes_per_second(**peak);
        numa->set_peak_membw_source("scenario");
      }
      entries.push_back(*std::move(f));
    }
    // Distances: given, or the kernel's usual 10 (local) / 21 (remote).
    const size_t count = report_.topology().numa_nodes_size();
    for (size_t i = 0; i < count; ++i) {
      tv1::NumaNode* numa = report_.mutable_topology()->mutable_numa_nodes(i);
      if (!entries[i].Has("distances")) {
        for (size_t j = 0; j < count; ++j) numa->add_distances(i == j ? 10 : 21);
        continue;
      }
      absl::StatusOr<std::vector<Value>> distances = entries[i].Get("distances").List();
      if (!distances.ok()) return distances.status();
      if (distances->size() != count) {
        return entries[i].ErrorFor(
            "distances", absl::StrCat("must list ", count, " values (one per NUMA node), got ",
                                      distances->size()));
      }
      for (const Value& d : *distances) {
        absl::StatusOr<uint64_t> v = d.Uint(UINT32_MAX);
        if (!v.ok()) return v.status();
        numa->add_distances(static_cast<uint32_t>(*v));
      }
    }
    report_.mutable_topology()->set_cpus_online(static_cast<uint32_t>(online_.size()));
    return absl::OkStatus();
  }

  absl::Status ParseL3(const Map& node) {
    absl::StatusOr<std::vector<Value>> list = node.Get("l3Domains").List();
    if (!list.ok()) return list.status();
    if (list->empty()) return node.Missing("l3Domains", "(at least one L3 domain)");
    std::set<uint32_t> ids;
    CpuSet covered;
    for (const Value& item : *list) {
      absl::StatusOr<Map> f = Map::Of(item, kL3Keys);
      if (!f.ok()) return f.status();
      absl::StatusOr<uint64_t> id = f->RequiredUint("id");
      if (!id.ok()) return id.status();
      if (*id > UINT32_MAX || !ids.insert(static_cast<uint32_t>(*id)).second) {
        return f->ErrorFor(
            "id", absl::StrCat("duplicate or too large L3 domain id ", *id, " in ", what_));
      }
      absl::StatusOr<std::optional<CpuSet>> cpus = f->Cpus("cpus");
      if (!cpus.ok()) return cpus.status();
      if (!cpus->has_value() || (*cpus)->empty()) {
        return f->Missing("cpus");
      }
      if (!IsSubset(**cpus, online_)) {
        return f->ErrorFor("cpus", absl::StrCat("\"", FormatCpuList(**cpus),
                                                "\" are not all in the NUMA nodes of ", what_));
      }
      if (IntersectionSize(**cpus, covered) != 0) {
        return f->ErrorFor("cpus", absl::StrCat("\"", FormatCpuList(**cpus),
                                                "\" overlap another L3 domain of ", what_));
      }
      covered = Union(covered, **cpus);
      absl::StatusOr<uint64_t> size = f->RequiredBytes("sizeBytes");
      if (!size.ok()) return size.status();

      tv1::L3Domain* l3 = report_.mutable_topology()->add_l3_domains();
      l3->set_id(static_cast<uint32_t>(*id));
      l3->set_cpus(FormatCpuList(**cpus));
      l3->set_size_bytes(*size);

      absl::StatusOr<std::optional<uint64_t>> numa = f->Uint("numaNode");
      if (!numa.ok()) return numa.status();
      if (numa->has_value()) {
        if (**numa > UINT32_MAX || numa_ids_.count(static_cast<uint32_t>(**numa)) == 0) {
          return f->ErrorFor("numaNode", absl::StrCat(**numa, " is not a NUMA node of ", what_));
        }
        l3->set_numa_node(static_cast<uint32_t>(**numa));
      } else {
        l3->set_numa_node(NumaOf(**cpus));
      }
      absl::StatusOr<std::optional<uint64_t>> occupancy = f->Bytes("occupancyBytes");
      absl::StatusOr<std::optional<uint64_t>> total = f->Bytes("membwTotalBytesPerSecond");
      absl::StatusOr<std::optional<uint64_t>> local = f->Bytes("membwLocalBytesPerSecond");
      for (const auto* s : {&occupancy, &total, &local}) {
        if (!s->ok()) return s->status();
      }
      if (occupancy->has_value()) l3->set_occupancy_bytes(**occupancy);
      if (total->has_value()) l3->set_membw_total_bytes_per_second(**total);
      if (local->has_value()) l3->set_membw_local_bytes_per_second(**local);
      if (total->has_value() && local->has_value() && **local > **total) {
        return f->ErrorFor("membwLocalBytesPerSecond", "is larger than membwTotalBytesPerSecond");
      }
    }
    return absl::OkStatus();
  }

  // The NUMA node holding most of `cpus`.
  uint32_t NumaOf(const CpuSet& cpus) const {
    uint32_t best = 0;
    size_t best_overlap = 0;
    for (const tv1::NumaNode& numa : report_.topology().numa_nodes()) {
      const size_t overlap = IntersectionSize(cpus, *ParseCpuList(numa.cpus()));
      if (overlap > best_overlap) {
        best = numa.id();
        best_overlap = overlap;
      }
    }
    return best;
  }

  // threadsPerCore (optional): each NUMA node's CPUs, in order, form
  // cores of that many adjacent threads ("0-7" with 2: 0-1, 2-3, ...); one
  // socket per NUMA node. Reported as topology.cores.
  absl::Status ParseCores(const Map& node) {
    absl::StatusOr<std::optional<uint64_t>> threads = node.Uint("threadsPerCore");
    if (!threads.ok()) return threads.status();
    if (!threads->has_value()) return absl::OkStatus();  // not reported: one thread per core
    const uint64_t per_core = **threads;
    if (per_core < 1 || per_core > 8) {
      return node.ErrorFor("threadsPerCore", "must be between 1 and 8");
    }
    for (const tv1::NumaNode& numa : report_.topology().numa_nodes()) {
      const CpuSet cpus = *ParseCpuList(numa.cpus());
      if (cpus.size() % per_core != 0) {
        return node.ErrorFor(
            "threadsPerCore",
            absl::StrCat("NUMA node ", numa.id(), " of ", what_, " has ", cpus.size(),
                         " CPUs, not a multiple of threadsPerCore ", per_core));
      }
      for (size_t first = 0; first < cpus.size(); first += per_core) {
        tv1::CpuCore* core = report_.mutable_topology()->add_cores();
        core->set_socket(numa.id());
        core->set_core_id(static_cast<uint32_t>(first / per_core));
        core->set_cpus(
            FormatCpuList(CpuSet(cpus.begin() + static_cast<ptrdiff_t>(first),
                                 cpus.begin() + static_cast<ptrdiff_t>(first + per_core))));
        core->set_numa_node(numa.id());
      }
    }
    return absl::OkStatus();
  }

  // The resource-manager settings of issue 14: all optional.
  absl::Status ParseKubeletManagers(const Map& f) {
    tv1::KubeletPolicies* kubelet = report_.mutable_kubelet();
    absl::StatusOr<std::optional<std::string>> memory = f.String("memoryManagerPolicy");
    if (!memory.ok()) return memory.status();
    if (memory->has_value()) {
      if (absl::Status s =
              CheckOneOf(f, "memoryManagerPolicy", **memory, {"None", "Static", "none", "static"});
          !s.ok()) {
        return s;
      }
      kubelet->set_memory_manager_policy(absl::AsciiStrToLower(**memory));
    }
    for (std::string_view key : {"cpuManagerPolicyOptions", "topologyManagerPolicyOptions"}) {
      absl::StatusOr<std::map<std::string, std::string>> options = f.Get(key).StringMap();
      if (!options.ok()) return options.status();
      auto* out = key == "cpuManagerPolicyOptions"
                      ? kubelet->mutable_cpu_manager_policy_options()
                      : kubelet->mutable_topology_manager_policy_options();
      out->insert(options->begin(), options->end());
    }
    absl::StatusOr<Map> reserved = Map::OfAnyKeys(f.Get("reservedMemoryBytes"));
    if (!reserved.ok()) return reserved.status();
    for (const Map::Entry& entry : reserved->entries()) {
      std::optional<uint32_t> id = ParseInt<uint32_t>(entry.key);
      if (!id || numa_ids_.count(*id) == 0) {
        return f.ErrorFor("reservedMemoryBytes",
                          absl::StrCat("key \"", entry.key, "\" is not a NUMA node id of ", what_));
      }
      absl::StatusOr<int64_t> bytes = entry.value.Bytes(0);
      if (!bytes.ok()) return bytes.status();
      (*kubelet->mutable_reserved_memory_bytes_by_numa())[*id] = static_cast<uint64_t>(*bytes);
    }
    for (std::string_view key : {"evictionHard", "evictionSoft"}) {
      absl::StatusOr<std::map<std::string, std::string>> thresholds = f.Get(key).StringMap();
      if (!thresholds.ok()) return thresholds.status();
      auto* out = key == "evictionHard" ? kubelet->mutable_eviction_hard()
                                        : kubelet->mutable_eviction_soft();
      out->insert(thresholds->begin(), thresholds->end());
      if (!thresholds->empty()) kubelet->set_eviction_source("scenario");
    }
    absl::StatusOr<std::optional<CpuSet>> allocatable = f.Cpus("allocatableCpus");
    if (!allocatable.ok()) return allocatable.status();
    if (allocatable->has_value()) {
      if (!IsSubset(**allocatable, online_)) {
        return f.ErrorFor("allocatableCpus",
                          absl::StrCat("\"", FormatCpuList(**allocatable),
                                       "\" are not all in the NUMA nodes of ", what_));
      }
      kubelet->set_allocatable_cpus(FormatCpuList(**allocatable));
    }
    return absl::OkStatus();
  }

  absl::Status ParseKubelet(const Map& node) {
    tv1::KubeletPolicies* kubelet = report_.mutable_kubelet();
    // The kubelet's own defaults.
    kubelet->set_cpu_manager_policy("none");
    kubelet->set_topology_manager_policy("none");
    kubelet->set_topology_manager_scope("container");
    absl::StatusOr<Map> f = Map::Of(node.Get("kubelet"), kKubeletKeys);
    if (!f.ok()) return f.status();
    struct Policy {
      std::string_view key;
      std::vector<std::string_view> allowed;
      std::function<void(const std::string&)> set;
    };
    const Policy policies[] = {
        {"cpuManagerPolicy",
         {"none", "static"},
         [&](const std::string& v) { kubelet->set_cpu_manager_policy(v); }},
        {"topologyManagerPolicy",
         {"none", "best-effort", "restricted", "single-numa-node"},
         [&](const std::string& v) { kubelet->set_topology_manager_policy(v); }},
        {"topologyManagerScope",
         {"container", "pod"},
         [&](const std::string& v) { kubelet->set_topology_manager_scope(v); }},
    };
    for (const Policy& policy : policies) {
      absl::StatusOr<std::optional<std::string>> value = f->String(policy.key);
      if (!value.ok()) return value.status();
      if (!value->has_value()) continue;
      if (absl::Status s = CheckOneOf(*f, policy.key, **value, policy.allowed); !s.ok()) return s;
      policy.set(**value);
    }
    absl::StatusOr<std::optional<CpuSet>> reserved = f->Cpus("reservedCpus");
    if (!reserved.ok()) return reserved.status();
    if (reserved->has_value()) {
      if (!IsSubset(**reserved, online_)) {
        return f->ErrorFor("reservedCpus",
                           absl::StrCat("\"", FormatCpuList(**reserved),
                                        "\" are not all in the NUMA nodes of ", what_));
      }
      reserved_ = **reserved;
      kubelet->set_reserved_cpus(FormatCpuList(reserved_));
    }
    return ParseKubeletManagers(*f);
  }

  // memory (issue 26, optional): the node's memory.available signal. Absent:
  // capacity is the NUMA nodes' memory, and availability is derived from the
  // pods' working sets when any gives one (DeriveNodeMeasurements).
  absl::Status ParseNodeMemory(const Map& node) {
    uint64_t total = 0;
    for (const tv1::NumaNode& numa : report_.topology().numa_nodes()) total += numa.memory_bytes();
    if (!node.Has("memory")) return absl::OkStatus();
    absl::StatusOr<Map> f = Map::Of(node.Get("memory"), kNodeMemoryKeys);
    if (!f.ok()) return f.status();
    absl::StatusOr<std::optional<uint64_t>> capacity = f->Bytes("capacityBytes");
    if (!capacity.ok()) return capacity.status();
    absl::StatusOr<std::optional<uint64_t>> available = f->Bytes("availableBytes");
    if (!available.ok()) return available.status();
    tv1::NodeMemory* memory = report_.mutable_memory();
    memory->set_capacity_bytes(capacity->value_or(total));
    memory->set_source("scenario");
    if (available->has_value()) {
      if (**available > memory->capacity_bytes()) {
        return f->ErrorFor("availableBytes", "is larger than the node's memory capacity");
      }
      memory->set_available_bytes(**available);
    } else {
      memory->set_source("scenario (available derived from the pods' working sets)");
      memory->set_available_bytes(UINT64_MAX);  // derived later
    }
    return absl::OkStatus();
  }

  absl::Status ParseCapabilities(const Map& node) {
    tv1::Capabilities* caps = report_.mutable_capabilities();
    for (const CapabilityKey& key : CapabilityKeys()) {
      tv1::Capability* cap = key.get(caps);
      cap->set_available(true);
      cap->set_reason("simulated");
    }
    if (!node.Has("capabilities")) return absl::OkStatus();
    std::vector<std::string> allowed = {"rmidsFree", "rmidsTotal"};
    for (const CapabilityKey& key : CapabilityKeys()) allowed.emplace_back(key.key);
    absl::StatusOr<Map> f = Map::Of(node.Get("capabilities"), allowed);
    if (!f.ok()) return f.status();
    for (const CapabilityKey& key : CapabilityKeys()) {
      const Map::Entry* value = f->Find(key.key);
      if (value == nullptr) continue;
      tv1::Capability* cap = key.get(caps);
      // true: available; false or a string: unavailable, the string being the reason.
      absl::StatusOr<std::optional<std::string>> text = f->String(key.key);
      if (!text.ok()) return text.status();
      if (**text == "true") continue;
      if ((*text)->empty()) {
        return f->ErrorFor(key.key, "must be true, false or a reason string");
      }
      cap->set_available(false);
      cap->set_reason(**text == "false" ? "disabled in scenario" : **text);
    }
    for (std::string_view key : {"rmidsFree", "rmidsTotal"}) {
      if (!f->Has(key)) continue;
      absl::StatusOr<uint64_t> v = f->Get(key).Uint(UINT32_MAX);
      if (!v.ok()) return v.status();
      if (key == "rmidsFree") caps->set_rmids_free(static_cast<uint32_t>(*v));
      if (key == "rmidsTotal") caps->set_rmids_total(static_cast<uint32_t>(*v));
    }
    return absl::OkStatus();
  }

  absl::Status ParsePods(const Map& node) {
    absl::StatusOr<std::vector<Value>> list = node.Get("pods").List();
    if (!list.ok()) return list.status();
    if (list->size() > kMaxPodsPerNode) {
      return node.ErrorFor(
          "pods", absl::StrCat(what_, " has ", list->size(), " pods; at most ", kMaxPodsPerNode));
    }
    for (const Value& item : *list) {
      if (absl::Status s = ParsePod(item); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status ParsePod(const Value& item) {
    absl::StatusOr<Map> f = Map::Of(item, kPodKeys);
    if (!f.ok()) return f.status();
    tv1::PodReport* pod = report_.add_pods();
    for (auto [key, setter] : std::initializer_list<
             std::pair<std::string_view, void (tv1::PodReport::*)(const std::string&)>>{
             {"uid", &tv1::PodReport::set_uid},
             {"namespace", &tv1::PodReport::set_namespace_},
             {"name", &tv1::PodReport::set_name}}) {
      absl::StatusOr<std::string> value = f->RequiredString(key);
      if (!value.ok()) return value.status();
      (pod->*setter)(*value);
    }
    if (!seen_uids_->insert(pod->uid()).second) {
      return f->ErrorFor("uid", absl::StrCat("duplicate pod uid \"", pod->uid(), "\""));
    }
    absl::StatusOr<std::string> qos = f->RequiredString("qosClass");
    if (!qos.ok()) return qos.status();
    if (absl::Status s =
            CheckOneOf(*f, "qosClass", *qos, {"Guaranteed", "Burstable", "BestEffort"});
        !s.ok()) {
      return s;
    }
    pod->set_qos_class(*qos == "Guaranteed"  ? tv1::QOS_CLASS_GUARANTEED
                       : *qos == "Burstable" ? tv1::QOS_CLASS_BURSTABLE
                                             : tv1::QOS_CLASS_BEST_EFFORT);
    for (std::string_view key : {"labels", "annotations"}) {
      absl::StatusOr<std::map<std::string, std::string>> map = f->Get(key).StringMap();
      if (!map.ok()) return map.status();
      auto* out = key == "labels" ? pod->mutable_labels() : pod->mutable_annotations();
      out->insert(map->begin(), map->end());
    }

    // Requests and usage.
    absl::StatusOr<std::optional<int64_t>> cpu_request = f->Int("cpuRequestMillicores");
    absl::StatusOr<std::optional<int64_t>> cpu_usage = f->Int("cpuUsageMillicores");
    for (const auto* s : {&cpu_request, &cpu_usage}) {
      if (!s->ok()) return s->status();
    }
    if (cpu_request->has_value()) {
      if (**cpu_request < 0) return f->ErrorFor("cpuRequestMillicores", "is negative");
      pod->set_cpu_request_millicores(**cpu_request);
    }
    if (cpu_usage->has_value()) {
      if (**cpu_usage < 0) return f->ErrorFor("cpuUsageMillicores", "is negative");
      pod->set_cpu_usage_millicores(**cpu_usage);
    }

    // Byte-valued fields.
    struct BytesField {
      std::string_view key;
      void (tv1::PodReport::*set)(uint64_t);
    };
    for (const BytesField& field : {
             BytesField{"memoryRequestBytes", &tv1::PodReport::set_memory_request_bytes},
             BytesField{"llcOccupancyBytes", &tv1::PodReport::set_llc_occupancy_bytes},
             BytesField{"membwTotalBytesPerSecond",
                        &tv1::PodReport::set_membw_total_bytes_per_second},
             BytesField{"membwLocalBytesPerSecond",
                        &tv1::PodReport::set_membw_local_bytes_per_second},
             BytesField{"llcMissesPerSecond", &tv1::PodReport::set_llc_misses_per_second},
         }) {
      absl::StatusOr<std::optional<uint64_t>> value = f->Bytes(field.key);
      if (!value.ok()) return value.status();
      if (value->has_value()) (pod->*field.set)(**value);
    }
    if (pod->has_membw_local_bytes_per_second() && pod->has_membw_total_bytes_per_second() &&
        pod->membw_local_bytes_per_second() > pod->membw_total_bytes_per_second()) {
      return f->ErrorFor("membwLocalBytesPerSecond", "is larger than membwTotalBytesPerSecond");
    }

    // Ratios and pressure.
    struct DoubleField {
      std::string_view key;
      void (tv1::PodReport::*set)(double);
      double max;
    };
    for (const DoubleField& field : {
             DoubleField{"ipc", &tv1::PodReport::set_ipc, 64},
             DoubleField{"llcMissesPerKiloInstructions",
                         &tv1::PodReport::set_llc_misses_per_kilo_instructions, 1000},
             DoubleField{"psiCpuSomeAvg10", &tv1::PodReport::set_psi_cpu_some_avg10, 100},
             DoubleField{"psiMemorySomeAvg10", &tv1::PodReport::set_psi_memory_some_avg10, 100},
             DoubleField{"psiMemoryFullAvg10", &tv1::PodReport::set_psi_memory_full_avg10, 100},
         }) {
      absl::StatusOr<std::optional<double>> value = f->Double(field.key, 0, field.max);
      if (!value.ok()) return value.status();
      if (value->has_value()) (pod->*field.set)(**value);
    }

    // Exclusive cpus.
    absl::StatusOr<std::optional<CpuSet>> exclusive = f->Cpus("exclusiveCpus");
    if (!exclusive.ok()) return exclusive.status();
    if (exclusive->has_value() && !(*exclusive)->empty()) {
      const CpuSet& cpus = **exclusive;
      const std::string text = FormatCpuList(cpus);
      if (!IsSubset(cpus, online_)) {
        return f->ErrorFor("exclusiveCpus",
                           absl::StrCat("\"", text, "\" are not all cpus of ", what_));
      }
      if (IntersectionSize(cpus, reserved_) != 0) {
        return f->ErrorFor("exclusiveCpus", absl::StrCat("\"", text, "\" include reserved cpus"));
      }
      if (IntersectionSize(cpus, exclusive_) != 0) {
        return f->ErrorFor(
            "exclusiveCpus",
            absl::StrCat("\"", text, "\" overlap another pod's exclusive cpus on ", what_));
      }
      exclusive_ = Union(exclusive_, cpus);
      pod->set_exclusive_cpus(text);
    }

    if (absl::Status s = ParsePodMemory(*f, pod); !s.ok()) return s;
    if (absl::Status s = ParseSeries(*f, report_.pods_size() - 1); !s.ok()) return s;
    return ParseMemoryByNuma(*f, pod);
  }

  // Issue 26: working set, limit, oom_score_adj, priority, container requests.
  absl::Status ParsePodMemory(const Map& f, tv1::PodReport* pod) {
    for (auto [key, set] :
         std::initializer_list<std::pair<std::string_view, void (tv1::PodReport::*)(uint64_t)>>{
             {"memoryWorkingSetBytes", &tv1::PodReport::set_memory_working_set_bytes},
             {"memoryLimitBytes", &tv1::PodReport::set_memory_limit_bytes}}) {
      absl::StatusOr<std::optional<uint64_t>> value = f.Bytes(key);
      if (!value.ok()) return value.status();
      if (value->has_value()) (pod->*set)(**value);
    }
    if (f.Has("oomScoreAdj")) {
      // One value (every container) or a list of the values seen.
      std::vector<Value> values;
      if (f.Get("oomScoreAdj").node().IsSequence()) {
        absl::StatusOr<std::vector<Value>> list = f.Get("oomScoreAdj").List();
        if (!list.ok()) return list.status();
        values = *std::move(list);
      } else {
        values.push_back(f.Get("oomScoreAdj"));
      }
      std::set<int32_t> seen;
      for (const Value& v : values) {
        absl::StatusOr<int64_t> adj = v.Int(-1000, 1000);
        if (!adj.ok()) return adj.status();
        seen.insert(static_cast<int32_t>(*adj));
      }
      for (int32_t adj : seen) pod->add_oom_score_adj(adj);
    }
    absl::StatusOr<std::optional<int64_t>> priority = f.Int("priority");
    if (!priority.ok()) return priority.status();
    if (priority->has_value()) {
      if (**priority < INT32_MIN || **priority > INT32_MAX) {
        return f.ErrorFor("priority", "is outside the 32-bit range of a PriorityClass value");
      }
      pod->set_priority(static_cast<int32_t>(**priority));
    }
    absl::StatusOr<Map> requests = Map::OfAnyKeys(f.Get("containerMemoryRequestBytes"));
    if (!requests.ok()) return requests.status();
    for (const Map::Entry& entry : requests->entries()) {
      absl::StatusOr<int64_t> bytes = entry.value.Bytes(0);
      if (!bytes.ok()) return bytes.status();
      (*pod->mutable_container_memory_request_bytes())[entry.key] = static_cast<uint64_t>(*bytes);
    }
    return absl::OkStatus();
  }

  absl::Status ParseSeries(const Map& f, int pod_index) {
    if (!f.Has("series")) return absl::OkStatus();
    absl::StatusOr<Map> series = Map::Of(f.Get("series"), kSeriesKeys);
    if (!series.ok()) return series.status();
    PodSeries out;
    out.pod_index = pod_index;
    for (const Map::Entry& entry : series->entries()) {
      absl::StatusOr<std::vector<Value>> list = entry.value.List();
      if (!list.ok()) return list.status();
      if (list->empty() || list->size() > kMaxSeriesValues) {
        return series->ErrorFor(entry.key, absl::StrCat("must list 1 to ", kMaxSeriesValues,
                                                        " values, got ", list->size()));
      }
      const bool bytes = absl::EndsWith(entry.key, "Bytes") ||
                         absl::EndsWith(entry.key, "BytesPerSecond");
      std::vector<double> values;
      for (const Value& v : *list) {
        if (bytes) {
          absl::StatusOr<int64_t> b = v.Bytes(0);
          if (!b.ok()) return b.status();
          values.push_back(static_cast<double>(*b));
        } else {
          absl::StatusOr<double> d = v.Double(0, entry.key == "ipc" ? 64
                                                 : entry.key == "cpuUsageMillicores" ? 1e9
                                                                                     : 1000);
          if (!d.ok()) return d.status();
          values.push_back(*d);
        }
      }
      out.metrics.emplace_back(entry.key, std::move(values));
    }
    timeline_.pods.push_back(std::move(out));
    return absl::OkStatus();
  }

  absl::Status ParseMemoryByNuma(const Map& f, tv1::PodReport* pod) {
    absl::StatusOr<Map> by_numa = Map::OfAnyKeys(f.Get("memoryBytesByNuma"));
    if (!by_numa.ok()) return by_numa.status();
    for (const Map::Entry& entry : by_numa->entries()) {
      const std::optional<uint32_t> id = ParseInt<uint32_t>(entry.key);
      if (!id || numa_ids_.count(*id) == 0) {
        return entry.value.Error(
            absl::StrCat("\"", entry.key, "\" is not a NUMA node id of ", what_));
      }
      absl::StatusOr<int64_t> bytes = entry.value.Bytes(0);
      if (!bytes.ok()) return bytes.status();
      if (!pod->mutable_memory_bytes_by_numa()
               ->insert({*id, static_cast<uint64_t>(*bytes)})
               .second) {
        return entry.value.Error(absl::StrCat("NUMA node ", *id, " is listed twice"));
      }
    }
    return absl::OkStatus();
  }

  std::set<std::string>* seen_uids_;
  NodeTimeline timeline_;
  std::string what_;
  tv1::NodeReport report_;
  std::set<uint32_t> numa_ids_;
  CpuSet online_;
  CpuSet reserved_;
  CpuSet exclusive_;
};

absl::StatusOr<Scenario> ParseLoaded(const Value& root) {
  // Top-level keys starting with "x-" hold YAML anchors for the rest of the file
  // (as in docker-compose) and are otherwise ignored.
  std::vector<std::string> allowed = kRootKeys;
  if (root.node().IsMap()) {
    for (const auto& kv : root.node()) {
      if (kv.first.IsScalar() && kv.first.Scalar().starts_with("x-")) {
        allowed.push_back(kv.first.Scalar());
      }
    }
  }
  absl::StatusOr<Map> f = Map::Of(root, allowed);
  if (!f.ok()) return f.status();
  absl::StatusOr<std::string> api_version = f->RequiredString("apiVersion");
  if (!api_version.ok()) return api_version.status();
  if (*api_version != kScenarioApiVersion) {
    return f->ErrorFor("apiVersion", absl::StrCat("must be \"", Av(kScenarioApiVersion),
                                                  "\", got \"", *api_version, "\""));
  }
  absl::StatusOr<std::string> kind = f->RequiredString("kind");
  if (!kind.ok()) return kind.status();
  if (*kind != kScenarioKind) {
    return f->ErrorFor("kind",
                       absl::StrCat("must be \"", Av(kScenarioKind), "\", got \"", *kind, "\""));
  }
  absl::StatusOr<std::vector<Value>> nodes = f->Get("nodes").List();
  if (!nodes.ok()) return nodes.status();
  if (nodes->empty()) return f->Missing("nodes", "(at least one node)");
  if (nodes->size() > kMaxScenarioNodes) {
    return f->ErrorFor("nodes", absl::StrCat("scenario has ", nodes->size(), " nodes; at most ",
                                             kMaxScenarioNodes));
  }
  Scenario scenario;
  std::set<std::string> uids;
  std::set<std::string> names;
  for (const Value& item : *nodes) {
    NodeParser parser(&uids);
    absl::StatusOr<tv1::NodeReport> node = parser.Parse(item);
    if (!node.ok()) return node.status();
    scenario.timelines.push_back(std::move(parser.timeline()));
    if (!names.insert(node->node_name()).second) {
      return item.Error(absl::StrCat("duplicate node name \"", node->node_name(), "\""));
    }
    scenario.nodes.push_back(*std::move(node));
  }
  return scenario;
}

}  // namespace

absl::StatusOr<Scenario> ParseScenario(std::string_view text, std::string_view source_name) {
  const yaml::Source source{std::string(source_name)};
  if (text.size() > kMaxScenarioBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.name, ": file is larger than ", kMaxScenarioBytes, " bytes"));
  }
  if (Trim(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source.name, ": file is empty"));
  }
  absl::StatusOr<YAML::Node> root = yaml::Load(source, text);
  if (!root.ok()) return root.status();
  return ParseLoaded(Value(source, *root));
}

absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open scenario file"));
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxScenarioBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": file is larger than ", kMaxScenarioBytes, " bytes"));
    }
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": cannot read scenario file"));
  return ParseScenario(text, path);
}

}  // namespace neighborly::agent
