// Memory pressure and eviction per node (issue 26): from one NodeReport, what
// the kubelet's eviction manager and the kernel's OOM killer would do.
//
// The kubelet sets every container's oom_score_adj from its pod's QoS class
// (pkg/kubelet/qos/policy.go): Guaranteed and node-critical pods -997,
// BestEffort 1000, Burstable 1000 - 1000 * containerRequest / capacity
// (integer division) held to 3..999. Under memory pressure it evicts in the
// order of pkg/kubelet/eviction/helpers.go's rankMemoryPressure: pods without
// usage statistics first, then those whose working set exceeds their memory
// request, then by priority (lower first), then by usage above request
// (larger first). This file computes both, compares the observed
// oom_score_adj with the expected one, and measures the node's distance to
// its memory.available thresholds.
//
//   absl::StatusOr<NodeMemoryView> view = BuildNodeMemoryView(report);
//   view->pods.front()  // the pod the kubelet would evict first
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_MEMORY_PRESSURE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_MEMORY_PRESSURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

// The kubelet's values (policy.go).
inline constexpr int kGuaranteedOomScoreAdj = -997;
inline constexpr int kBestEffortOomScoreAdj = 1000;
// PriorityClass system-node-critical: such pods get the Guaranteed value.
inline constexpr int64_t kSystemNodeCriticalPriority = 2'000'001'000;
// The kubelet's default evictionHard memory.available on Linux.
inline constexpr std::string_view kDefaultEvictionHardMemory = "100Mi";

// What the kubelet sets for a container with `container_request_bytes` of
// memory request in a pod of `qos` on a node of `capacity_bytes`.
int ExpectedOomScoreAdj(telemetry::v1::QosClass qos, uint64_t container_request_bytes,
                        uint64_t capacity_bytes, bool node_critical = false);

// "100Mi" -> bytes; "10%" -> that share of `capacity_bytes`. An error names
// the value.
absl::StatusOr<uint64_t> ParseEvictionThreshold(std::string_view value, uint64_t capacity_bytes);

struct MemoryThreshold {
  std::string kind;   // "hard" | "soft"
  std::string value;  // as configured, "100Mi" or "10%"
  uint64_t bytes = 0;
  std::string source;  // "kubelet config", "kubelet default", "scenario", ...
  // available - threshold; negative: crossed (the kubelet evicts, after the
  // grace period for a soft threshold).
  std::optional<int64_t> distance_bytes;
};

struct PodMemoryView {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string qos_class;  // "Guaranteed" | "Burstable" | "BestEffort"
  std::optional<int32_t> priority;
  std::optional<uint64_t> working_set_bytes;
  std::optional<uint64_t> request_bytes;
  std::optional<uint64_t> limit_bytes;
  // working set - request (request 0 when none); absent without a working set.
  std::optional<int64_t> usage_above_request_bytes;
  bool exceeds_request = false;
  std::vector<int32_t> oom_score_adj;  // observed, ascending
  // The values the kubelet would set: one per container when the containers'
  // requests are known, else the value for a single container with the pod's
  // request (a pod of several containers may then show values up to 999).
  std::vector<int32_t> expected_oom_score_adj;
  bool expected_is_lower_bound = false;
  bool oom_score_adj_mismatch = false;
  std::string oom_note;  // why it mismatches, or why it was not checked
  int eviction_rank = 0;  // 1: evicted first
  std::string eviction_reason;  // "no usage statistics", "over request by 1.2 GiB", ...
};

struct NodeMemoryView {
  std::string node;
  uint64_t capacity_bytes = 0;
  std::string capacity_source;  // "/proc/meminfo", "NUMA nodes", "scenario"
  std::optional<uint64_t> available_bytes;
  std::vector<MemoryThreshold> thresholds;  // hard first, then soft
  // Whether the hard threshold is crossed (memory pressure).
  bool under_pressure = false;
  std::vector<PodMemoryView> pods;  // in the kubelet's eviction order
  int oom_score_adj_mismatches = 0;
  int pods_over_request = 0;
  std::vector<std::string> notes;  // approximations and inputs that were missing
};

// Never fails on a validated report; an unparsable eviction threshold is kept
// as a note (and skipped), not an error.
NodeMemoryView BuildNodeMemoryView(const telemetry::v1::NodeReport& report);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_MEMORY_PRESSURE_H_
