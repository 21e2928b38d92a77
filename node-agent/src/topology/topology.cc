#include "node-agent/src/topology/topology.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {
namespace {

constexpr char kCpuDir[] = "/sys/devices/system/cpu";
constexpr char kNodeDir[] = "/sys/devices/system/node";

absl::StatusOr<CpuSet> ReadCpuList(const Filesystem& fs, std::string_view path) {
  absl::StatusOr<std::string> text = fs.ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<CpuSet> cpus = ParseCpuList(*text);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(path), ": ", Av(Sv(cpus.status().message()))));
  }
  return cpus;
}

absl::StatusOr<uint32_t> ReadUint(const Filesystem& fs, std::string_view path) {
  absl::StatusOr<std::string> text = fs.ReadFile(path);
  if (!text.ok()) return text.status();
  std::optional<uint32_t> value = ParseInt<uint32_t>(Trim(*text));
  if (!value) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(path), ": \"", Av(Trim(*text)), "\" is not a number"));
  }
  return *value;
}

void AppendNote(std::string& note, std::string_view text) {
  if (!note.empty()) note += "; ";
  note += text;
}

// NUMA nodes from node/online and nodeN/{cpulist,meminfo,distance}; one
// synthetic node 0 on kernels without NUMA sysfs.
absl::Status ReadNumaNodes(const Filesystem& fs, Topology& topology) {
  absl::StatusOr<CpuSet> online = ReadCpuList(fs, absl::StrCat(kNodeDir, "/online"));
  if (!online.ok()) {
    NumaNodeInfo node;
    node.cpus = topology.cpus_online;
    if (absl::StatusOr<std::string> meminfo = fs.ReadFile("/proc/meminfo"); meminfo.ok()) {
      if (absl::StatusOr<uint64_t> bytes = ParseMemTotalBytes(*meminfo); bytes.ok()) {
        node.memory_bytes = *bytes;
      }
    }
    node.distances = {10};
    topology.numa_nodes.push_back(std::move(node));
    AppendNote(topology.note,
               absl::StrCat("no NUMA information in sysfs (", Av(Sv(online.status().message())),
                            "): one NUMA node with every CPU"));
    return absl::OkStatus();
  }
  for (uint32_t id : *online) {
    NumaNodeInfo node;
    node.id = id;
    const std::string dir = absl::StrCat(kNodeDir, "/node", id);
    absl::StatusOr<CpuSet> cpus = ReadCpuList(fs, dir + "/cpulist");
    if (!cpus.ok()) return cpus.status();
    node.cpus = std::move(*cpus);
    absl::StatusOr<std::string> meminfo = fs.ReadFile(dir + "/meminfo");
    absl::StatusOr<uint64_t> bytes =
        meminfo.ok() ? ParseMemTotalBytes(*meminfo) : absl::StatusOr<uint64_t>(meminfo.status());
    if (bytes.ok()) {
      node.memory_bytes = *bytes;
    } else {
      AppendNote(topology.note,
                 absl::StrCat("node", id, " memory unknown: ", Av(Sv(bytes.status().message()))));
    }
    absl::StatusOr<std::string> distance = fs.ReadFile(dir + "/distance");
    absl::StatusOr<std::vector<uint32_t>> distances =
        distance.ok() ? ParseDistances(*distance)
                      : absl::StatusOr<std::vector<uint32_t>>(distance.status());
    if (distances.ok() && distances->size() == online->size()) {
      node.distances = std::move(*distances);
    } else {
      AppendNote(topology.note,
                 absl::StrCat("node", id, " distances unusable: ",
                              distances.ok() ? "one value per online node expected"
                                             : Av(Sv(distances.status().message()))));
    }
    topology.numa_nodes.push_back(std::move(node));
  }
  return absl::OkStatus();
}

// L3 domains from the cache entries. Returns false when no CPU has an L3 entry.
bool ReadCacheDomains(const Filesystem& fs, Topology& topology) {
  std::map<uint32_t, L3DomainInfo> by_id;
  bool missing_id = false;
  for (uint32_t cpu : topology.cpus_online) {
    const std::string cache_dir = absl::StrCat(kCpuDir, "/cpu", cpu, "/cache");
    absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir(cache_dir);
    if (!entries.ok()) continue;
    for (const DirEntry& entry : *entries) {
      if (!entry.is_dir || !entry.name.starts_with("index")) continue;
      const std::string dir = absl::StrCat(cache_dir, "/", entry.name);
      absl::StatusOr<uint32_t> level = ReadUint(fs, dir + "/level");
      if (!level.ok() || *level != 3) continue;
      absl::StatusOr<CpuSet> shared = ReadCpuList(fs, dir + "/shared_cpu_list");
      if (!shared.ok() || shared->empty()) shared = CpuSet{cpu};
      absl::StatusOr<uint32_t> id = ReadUint(fs, dir + "/id");
      if (!id.ok()) {
        // Kernels without cache ids: the first sharing CPU names the domain.
        missing_id = true;
        id = shared->front();
      }
      L3DomainInfo& domain = by_id[*id];
      domain.id = *id;
      if (domain.cpus.empty()) {
        domain.cpus = *shared;
        if (absl::StatusOr<std::string> size = fs.ReadFile(dir + "/size"); size.ok()) {
          if (absl::StatusOr<uint64_t> bytes = ParseCacheSize(*size); bytes.ok()) {
            domain.size_bytes = *bytes;
          }
        }
      }
      break;
    }
  }
  if (by_id.empty()) return false;
  if (missing_id) {
    AppendNote(topology.note, "L3 cache ids missing in sysfs: domains named by their first CPU");
  }
  for (auto& [id, domain] : by_id) topology.l3_domains.push_back(std::move(domain));
  return true;
}

void FallbackDomains(const Filesystem& fs, Topology& topology) {
  std::map<uint32_t, CpuSet> packages;
  bool all_known = true;
  for (uint32_t cpu : topology.cpus_online) {
    absl::StatusOr<uint32_t> package =
        ReadUint(fs, absl::StrCat(kCpuDir, "/cpu", cpu, "/topology/physical_package_id"));
    if (!package.ok()) {
      all_known = false;
      break;
    }
    packages[*package].push_back(cpu);
  }
  if (all_known && !packages.empty()) {
    for (auto& [id, cpus] : packages) {
      topology.l3_domains.push_back({id, cpus, std::nullopt, 0, {}});
    }
    // Arm servers often describe caches only up to L2 (their system-level
    // cache is not in the cache information): say so, it is not a missing file.
    const bool has_caches =
        fs.IsDirectory(absl::StrCat(kCpuDir, "/cpu", topology.cpus_online.front(), "/cache"));
    AppendNote(topology.note, has_caches ? "no L3 in the sysfs cache information (caches up to "
                                           "L2 only): one L3 domain per package, size unknown"
                                         : "no cache information in sysfs: one L3 domain per "
                                           "package");
    return;
  }
  for (const NumaNodeInfo& node : topology.numa_nodes) {
    topology.l3_domains.push_back({node.id, node.cpus, std::nullopt, node.id, {}});
  }
  AppendNote(topology.note,
             "no cache or package information in sysfs: one L3 domain per NUMA node");
}

// Physical cores from cpuN/topology/{physical_package_id,core_id,
// thread_siblings_list}: the CPU manager's view of SMT. All or nothing: a
// partial core list would make whole cores look like half cores.
void ReadCores(const Filesystem& fs, Topology& topology) {
  std::map<uint32_t, CoreInfo> by_first_cpu;
  for (uint32_t cpu : topology.cpus_online) {
    const std::string dir = absl::StrCat(kCpuDir, "/cpu", cpu, "/topology");
    absl::StatusOr<uint32_t> package = ReadUint(fs, dir + "/physical_package_id");
    absl::StatusOr<uint32_t> core = ReadUint(fs, dir + "/core_id");
    absl::StatusOr<CpuSet> siblings = ReadCpuList(fs, dir + "/thread_siblings_list");
    if (!package.ok() || !core.ok() || !siblings.ok() || siblings->empty() ||
        !std::binary_search(siblings->begin(), siblings->end(), cpu)) {
      const absl::Status why =
          !package.ok() ? package.status()
          : !core.ok()  ? core.status()
          : !siblings.ok()
              ? siblings.status()
              : absl::InvalidArgumentError(absl::StrCat(dir,
                                                        "/thread_siblings_list: does not "
                                                        "name cpu",
                                                        cpu));
      AppendNote(topology.note, absl::StrCat("no SMT information in sysfs (", Av(Sv(why.message())),
                                             "): cores not reported"));
      return;
    }
    // Keep only online siblings (an offlined thread is no CPU to hand out).
    CpuSet online;
    for (uint32_t s : *siblings) {
      if (std::binary_search(topology.cpus_online.begin(), topology.cpus_online.end(), s)) {
        online.push_back(s);
      }
    }
    if (by_first_cpu.contains(online.front())) continue;
    CoreInfo info;
    info.socket = *package;
    info.core_id = *core;
    info.cpus = std::move(online);
    info.numa_node = topology.NodeOfCpu(info.cpus.front()).value_or(0);
    by_first_cpu.emplace(info.cpus.front(), std::move(info));
  }
  for (auto& [first, core] : by_first_cpu) topology.cores.push_back(std::move(core));
}

}  // namespace

std::optional<uint32_t> Topology::NodeOfCpu(uint32_t cpu) const {
  for (const NumaNodeInfo& node : numa_nodes) {
    if (std::binary_search(node.cpus.begin(), node.cpus.end(), cpu)) return node.id;
  }
  return std::nullopt;
}

absl::StatusOr<Topology> ReadTopology(const Filesystem& fs) {
  Topology topology;
  absl::StatusOr<CpuSet> online = ReadCpuList(fs, absl::StrCat(kCpuDir, "/online"));
  if (!online.ok()) return online.status();
  if (online->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kCpuDir, "/online: no CPU online"));
  }
  topology.cpus_online = std::move(*online);
  if (absl::Status status = ReadNumaNodes(fs, topology); !status.ok()) return status;
  if (!ReadCacheDomains(fs, topology)) FallbackDomains(fs, topology);
  for (L3DomainInfo& domain : topology.l3_domains) {
    if (!domain.cpus.empty())
      domain.numa_node = topology.NodeOfCpu(domain.cpus.front()).value_or(0);
    for (uint32_t cpu : domain.cpus) {
      std::optional<uint32_t> node = topology.NodeOfCpu(cpu);
      if (node && std::find(domain.numa_nodes.begin(), domain.numa_nodes.end(), *node) ==
                      domain.numa_nodes.end()) {
        domain.numa_nodes.push_back(*node);
      }
    }
    std::sort(domain.numa_nodes.begin(), domain.numa_nodes.end());
  }
  ReadCores(fs, topology);
  return topology;
}

absl::StatusOr<uint64_t> ParseMemTotalBytes(std::string_view meminfo) {
  for (std::string_view line : SplitLines(meminfo)) {
    const size_t key = line.find("MemTotal:");
    if (key == std::string_view::npos) continue;
    std::string_view rest = Trim(line.substr(key + 9));
    uint64_t multiplier = 1;
    if (rest.ends_with("kB")) {
      multiplier = 1024;
      rest = Trim(rest.substr(0, rest.size() - 2));
    }
    std::optional<uint64_t> value = ParseInt<uint64_t>(rest);
    if (!value || *value > UINT64_MAX / multiplier) {
      return absl::InvalidArgumentError(
          absl::StrCat("meminfo: bad MemTotal line \"", Av(Trim(line)), "\""));
    }
    return *value * multiplier;
  }
  return absl::InvalidArgumentError("meminfo: no MemTotal line");
}

absl::StatusOr<std::vector<uint32_t>> ParseDistances(std::string_view text) {
  std::vector<uint32_t> distances;
  for (std::string_view token : SplitFields(Trim(text))) {
    std::optional<uint32_t> value = ParseInt<uint32_t>(token);
    if (!value) {
      return absl::InvalidArgumentError(
          absl::StrCat("distance: \"", Av(token), "\" is not a number"));
    }
    distances.push_back(*value);
  }
  if (distances.empty()) return absl::InvalidArgumentError("distance: empty");
  return distances;
}

absl::StatusOr<uint64_t> ParseCacheSize(std::string_view text) {
  std::string_view size = Trim(text);
  uint64_t multiplier = 1;
  if (!size.empty()) {
    switch (size.back()) {
      case 'K':
        multiplier = 1ull << 10;
        break;
      case 'M':
        multiplier = 1ull << 20;
        break;
      case 'G':
        multiplier = 1ull << 30;
        break;
      default:
        break;
    }
    if (multiplier != 1) size.remove_suffix(1);
  }
  std::optional<uint64_t> value = ParseInt<uint64_t>(size);
  if (!value || *value > UINT64_MAX / multiplier) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache size \"", Av(Trim(text)), "\" is not a size"));
  }
  return *value * multiplier;
}

void ToProto(const Topology& topology, telemetry::v1::Topology* out) {
  out->set_cpus_online(static_cast<uint32_t>(topology.cpus_online.size()));
  out->set_note(topology.note);
  for (const NumaNodeInfo& node : topology.numa_nodes) {
    telemetry::v1::NumaNode* n = out->add_numa_nodes();
    n->set_id(node.id);
    n->set_cpus(FormatCpuList(node.cpus));
    if (node.memory_bytes) n->set_memory_bytes(*node.memory_bytes);
    for (uint32_t d : node.distances) n->add_distances(d);
  }
  for (const L3DomainInfo& domain : topology.l3_domains) {
    telemetry::v1::L3Domain* d = out->add_l3_domains();
    d->set_id(domain.id);
    d->set_cpus(FormatCpuList(domain.cpus));
    if (domain.size_bytes) d->set_size_bytes(*domain.size_bytes);
    d->set_numa_node(domain.numa_node);
    for (uint32_t node : domain.numa_nodes) d->add_numa_nodes(node);
  }
  for (const CoreInfo& core : topology.cores) {
    telemetry::v1::CpuCore* c = out->add_cores();
    c->set_socket(core.socket);
    c->set_core_id(core.core_id);
    c->set_cpus(FormatCpuList(core.cpus));
    c->set_numa_node(core.numa_node);
  }
}

}  // namespace neighborly::agent
