// What kube-scheduler would decide without Neighborly, for the demo's side-by-side
// view: the two default scorers that matter when nodes differ only in load,
// NodeResourcesFit (LeastAllocated) and NodeResourcesBalancedAllocation, both
// weight 1, on CPU and memory requests. Other default plugins (taints, affinity,
// spread, image locality) score every node of the reference scenario alike.
#ifndef NEIGHBORLY_TOOLS_DEMO_DEFAULT_SCHEDULER_H_
#define NEIGHBORLY_TOOLS_DEMO_DEFAULT_SCHEDULER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace neighborly::demo {

struct NodeLoad {
  std::string name;
  int64_t allocatable_millicores = 0;
  int64_t allocatable_memory_bytes = 0;
  int64_t requested_millicores = 0;  // sum of the pods already there
  int64_t requested_memory_bytes = 0;
};

struct DefaultScore {
  bool fits = true;
  int64_t score = 0;  // 0..200: LeastAllocated (0..100) + BalancedAllocation (0..100)
};

DefaultScore ScoreDefault(const NodeLoad& node, int64_t pod_millicores, int64_t pod_memory_bytes);

}  // namespace neighborly::demo

#endif  // NEIGHBORLY_TOOLS_DEMO_DEFAULT_SCHEDULER_H_
