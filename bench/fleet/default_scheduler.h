// kube-scheduler's default scoring (the v1 default profile, release 1.36) for
// the placement benchmark: the filter NodeResourcesFit and the scores that
// separate nodes of a fleet without affinities, taints or images:
// NodeResourcesFit LeastAllocated (cpu and memory, weight 1 each; plugin
// weight 1), NodeResourcesBalancedAllocation (weight 1) and PodTopologySpread
// with the default system constraints (hostname maxSkew 3, zone maxSkew 5,
// both ScheduleAnyway; plugin weight 2), each normalised as kube-scheduler
// does; an extender's 0..10 scores are scaled by MaxNodeScore /
// MaxExtenderPriority and the extender's weight and added. The other default
// score plugins (TaintToleration, NodeAffinity, InterPodAffinity,
// ImageLocality) give every node of the benchmark's fleets the same score.
//
//   std::vector<NodeLoad> nodes = ...;       // requests already bound per node
//   PodRequest pod{.millicores = 2000, .memory_bytes = 4 << 30, .default_spread = true};
//   std::vector<size_t> feasible = FeasibleNodes(nodes, pod);
//   std::vector<int64_t> scores = ScoreNodes(nodes, feasible, pod);
//   size_t chosen = feasible[SelectHost(scores, rng)];
//
// (tools/demo/default_scheduler.h is the demo's two-plugin shortcut.)
#ifndef NEIGHBORLY_BENCH_FLEET_DEFAULT_SCHEDULER_H_
#define NEIGHBORLY_BENCH_FLEET_DEFAULT_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace neighborly::fleet {

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMaxExtenderPriority = 10;

struct NodeLoad {
  int zone = 0;  // topology.kubernetes.io/zone, as an index
  int64_t allocatable_millicores = 0;
  int64_t allocatable_memory_bytes = 0;
  int64_t requested_millicores = 0;  // the pods bound to it (scheduler cache)
  int64_t requested_memory_bytes = 0;
  // Pods on it matching the incoming pod's default spread selector (the
  // selectors of the Services, ReplicaSets and StatefulSets owning it).
  int matching_pods = 0;
};

struct PodRequest {
  int64_t millicores = 0;
  int64_t memory_bytes = 0;
  // Whether the default constraints apply (a pod owned by a ReplicaSet; a
  // Job's pod has no default selector, so PodTopologySpread skips it).
  bool default_spread = false;
};

struct PluginWeights {
  int64_t least_allocated = 1;
  int64_t balanced_allocation = 1;
  int64_t topology_spread = 2;
};

// Indices of the nodes NodeResourcesFit passes (requests fit the allocatable).
std::vector<size_t> FeasibleNodes(const std::vector<NodeLoad>& nodes, const PodRequest& pod);

// Weighted sum of the normalised plugin scores of each feasible node, in
// `feasible`'s order (0 .. 400 with the default weights).
std::vector<int64_t> ScoreNodes(const std::vector<NodeLoad>& nodes,
                                const std::vector<size_t>& feasible, const PodRequest& pod,
                                const PluginWeights& weights = {});

// The plugins one by one (0..100), for tests and explanations.
int64_t LeastAllocatedScore(const NodeLoad& node, const PodRequest& pod);
int64_t BalancedAllocationScore(const NodeLoad& node, const PodRequest& pod);
// Normalised over `feasible`; counts zones over every node.
std::vector<int64_t> TopologySpreadScores(const std::vector<NodeLoad>& nodes,
                                          const std::vector<size_t>& feasible);

// An extender's score (0..kMaxExtenderPriority) as kube-scheduler adds it.
inline int64_t ExtenderContribution(int64_t extender_score, int64_t extender_weight) {
  return extender_score * (kMaxNodeScore / kMaxExtenderPriority) * extender_weight;
}

// kube-scheduler's selectHost: the highest score, ties broken uniformly at
// random (reservoir sampling over the tied nodes). Returns an index into
// `scores`, which must not be empty.
size_t SelectHost(const std::vector<int64_t>& scores, std::mt19937_64& rng);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_DEFAULT_SCHEDULER_H_
