// The kubelet static CPU manager's choice of exclusive CPUs, emulated CPU by
// CPU: which sockets, NUMA nodes, uncore (L3) caches, cores and threads it
// takes, in its order, under the options `full-pcpus-only`,
// `distribute-cpus-across-numa`, `align-by-socket`,
// `prefer-align-cpus-by-uncorecache` and `strict-cpu-reservation`
// (kubelet pkg/kubelet/cm/cpumanager cpu_assignment.go, policy_static.go; the
// rules and the upstream test case each table test mirrors:
// docs/scoring.md section 3c).
//
//   CpuTopologyView topo = *CpuTopologyView::FromReport(report.topology());
//   StaticPolicyOptions opts = StaticPolicyOptionsFrom(report.kubelet());
//   absl::StatusOr<CpuIds> cpus = AllocateExclusiveCpus(topo, opts, free, 4, {0});
//   // *cpus == {2, 3, 34, 35}: two whole cores of NUMA node 0, one L3
//
// Pure: no clock, no I/O. Allocation is linear in the CPUs per step; the
// model calls it once per candidate node for a pinned pod.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_CPU_ASSIGNMENT_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_CPU_ASSIGNMENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

using CpuIds = std::vector<int32_t>;  // ascending, no duplicates

// One logical CPU as the kubelet's CPUDetails holds it.
struct KubeletCpu {
  int32_t cpu = 0;
  int32_t core = 0;    // the kubelet's core id: the lowest thread id of the core
  int32_t socket = 0;  // physical package
  int32_t numa = 0;
  int32_t uncore = 0;  // L3 cache id (the socket id where the kernel names no L3)
};

// The kubelet's CPUTopology: every CPU with its core, socket, NUMA node and
// uncore cache, and the per-level sizes it derives (NumCPUs / NumCores, ...).
class CpuTopologyView {
 public:
  // Largest CPU id accepted (a report naming more is refused, not truncated).
  static constexpr int32_t kMaxCpuId = 8191;

  // `cpus` in any order; ids must be unique and within [0, kMaxCpuId].
  static absl::StatusOr<CpuTopologyView> Make(std::vector<KubeletCpu> cpus);
  // From the agent's report: cores (SMT), NUMA nodes and L3 domains. Without
  // core information every CPU is its own core.
  static absl::StatusOr<CpuTopologyView> FromReport(const telemetry::v1::Topology& topology);

  const std::vector<KubeletCpu>& cpus() const { return cpus_; }  // ascending by id
  const KubeletCpu* Find(int32_t cpu) const;
  int32_t num_cores() const { return num_cores_; }
  int32_t num_sockets() const { return num_sockets_; }
  int32_t num_numa_nodes() const { return num_numa_; }
  int32_t num_uncore_caches() const { return num_uncore_; }
  int32_t CpusPerCore() const { return Per(num_cores_); }
  int32_t CpusPerSocket() const { return Per(num_sockets_); }
  int32_t CpusPerUncore() const { return Per(num_uncore_); }
  // Every CPU of a NUMA node / socket / uncore cache / core (ascending).
  CpuIds CpusInNuma(int32_t numa) const;
  CpuIds CpusInSocket(int32_t socket) const;

 private:
  int32_t Per(int32_t n) const { return n == 0 ? 0 : static_cast<int32_t>(cpus_.size()) / n; }
  std::vector<KubeletCpu> cpus_;
  std::vector<int32_t> index_;  // cpu id -> position in cpus_, -1 when absent
  int32_t num_cores_ = 0, num_sockets_ = 0, num_numa_ = 0, num_uncore_ = 0;
};

// takeByTopologyNUMAPacked: whole NUMA nodes and sockets (the larger level
// first), then (with `prefer_uncore`) whole and then fitting uncore caches,
// then whole cores, then single threads; at each level the most used
// candidates first (fewest free CPUs), ties to the lower id. Errors read as
// the kubelet's: "not enough cpus available to satisfy request: requested=5,
// available=4".
absl::StatusOr<CpuIds> TakeByTopologyNumaPacked(const CpuTopologyView& topo,
                                                std::span<const int32_t> available, int32_t count,
                                                bool prefer_uncore);

// takeByTopologyNUMADistributed: spread `count` CPUs evenly, in groups of
// `group_size`, over the fewest NUMA nodes that can hold them, choosing the
// combination that leaves the free CPUs most balanced; packed inside each.
// `align_by_socket`: among balanced choices, one inside a single socket wins.
absl::StatusOr<CpuIds> TakeByTopologyNumaDistributed(const CpuTopologyView& topo,
                                                     std::span<const int32_t> available,
                                                     int32_t count, int32_t group_size,
                                                     bool align_by_socket = false);

struct StaticPolicyOptions {
  bool full_pcpus_only = false;
  bool distribute_cpus_across_numa = false;
  bool align_by_socket = false;
  bool prefer_align_cpus_by_uncore_cache = false;
  bool strict_cpu_reservation = false;  // reserved CPUs leave the shared pool too
};
// From cpuManagerPolicyOptions ("true" / "false"; anything else is false).
StaticPolicyOptions StaticPolicyOptionsFrom(const telemetry::v1::KubeletPolicies& kubelet);

// The static policy's allocateCPUs for one container: with a NUMA affinity
// (the topology manager's merged hint, NUMA node ids; empty: none), the CPUs
// inside it first (with align-by-socket: inside its sockets), then the rest
// from anywhere. `available`: free CPUs, reserved ones already removed.
// full-pcpus-only refuses a count that is not a multiple of the threads per
// core (SMTAlignmentError).
absl::StatusOr<CpuIds> AllocateExclusiveCpus(const CpuTopologyView& topo,
                                             const StaticPolicyOptions& options,
                                             std::span<const int32_t> available, int32_t count,
                                             std::span<const int32_t> numa_affinity);

// The uncore caches (L3 ids) a set of CPUs touches, ascending.
std::vector<int32_t> UncoreCachesOf(const CpuTopologyView& topo, std::span<const int32_t> cpus);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_CPU_ASSIGNMENT_H_
