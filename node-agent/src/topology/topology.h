// The node's CPU, NUMA and L3 layout, read once from sysfs under the host root.
//
//   absl::StatusOr<Topology> topology = ReadTopology(fs);
//   topology->l3_domains[0].cpus   // CPUs sharing the first L3 (resctrl mon_L3_<id>)
//
// L3 domains come from cpu*/cache/index*/ entries whose `level` is 3 (never
// from the index number). Where sysfs has no cache information the domains
// fall back to one per package, then one per NUMA node, and `note` says so.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_TOPOLOGY_TOPOLOGY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cpu_list.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

struct NumaNodeInfo {
  uint32_t id = 0;
  CpuSet cpus;
  std::optional<uint64_t> memory_bytes;  // absent when meminfo is unreadable
  std::vector<uint32_t> distances;       // to every online node, in id order
};

struct L3DomainInfo {
  uint32_t id = 0;  // the cache id (resctrl mon_L3_<id>)
  CpuSet cpus;
  std::optional<uint64_t> size_bytes;
  uint32_t numa_node = 0;  // the node holding the domain's first CPU
  // Every NUMA node with CPUs in the domain, ascending: more than one under
  // sub-NUMA clustering, where one L3 spans several nodes.
  std::vector<uint32_t> numa_nodes;
};

// One physical core and its SMT threads (sysfs cpuN/topology).
struct CoreInfo {
  uint32_t socket = 0;   // physical_package_id
  uint32_t core_id = 0;  // unique within its socket
  CpuSet cpus;           // thread_siblings_list
  uint32_t numa_node = 0;
};

struct Topology {
  CpuSet cpus_online;
  // Physical cores, ordered by first CPU. Empty when sysfs lacks
  // core_id / thread_siblings_list for some online CPU (`note` says so).
  std::vector<CoreInfo> cores;
  std::vector<NumaNodeInfo> numa_nodes;
  std::vector<L3DomainInfo> l3_domains;
  std::string note;  // why the topology is approximate; empty when read in full

  // The NUMA node of `cpu`, or nullopt.
  std::optional<uint32_t> NodeOfCpu(uint32_t cpu) const;
};

absl::StatusOr<Topology> ReadTopology(const Filesystem& fs);

// "Node 0 MemTotal:       16384 kB" (sysfs nodeN/meminfo) or "MemTotal: 16384 kB"
// (/proc/meminfo): the MemTotal line in bytes.
absl::StatusOr<uint64_t> ParseMemTotalBytes(std::string_view meminfo);
// "10 21\n" -> {10, 21}.
absl::StatusOr<std::vector<uint32_t>> ParseDistances(std::string_view text);
// "36608K\n" -> 37486592; also accepts "M" and "G" and plain bytes.
absl::StatusOr<uint64_t> ParseCacheSize(std::string_view text);

void ToProto(const Topology& topology, telemetry::v1::Topology* out);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_TOPOLOGY_TOPOLOGY_H_
