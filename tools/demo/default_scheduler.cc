#include "tools/demo/default_scheduler.h"

#include <cmath>

namespace neighborly::demo {

DefaultScore ScoreDefault(const NodeLoad& node, int64_t pod_millicores, int64_t pod_memory_bytes) {
  DefaultScore out;
  const double cpu_req = static_cast<double>(node.requested_millicores + pod_millicores);
  const double mem_req = static_cast<double>(node.requested_memory_bytes + pod_memory_bytes);
  const double cpu_alloc = static_cast<double>(node.allocatable_millicores);
  const double mem_alloc = static_cast<double>(node.allocatable_memory_bytes);
  if (cpu_alloc <= 0 || mem_alloc <= 0 || cpu_req > cpu_alloc || mem_req > mem_alloc) {
    out.fits = false;
    return out;
  }
  // LeastAllocated: mean over resources of (allocatable - requested) * 100 / allocatable.
  const double least =
      ((cpu_alloc - cpu_req) * 100 / cpu_alloc + (mem_alloc - mem_req) * 100 / mem_alloc) / 2;
  // BalancedAllocation (two resources): (1 - |cpu fraction - memory fraction|) * 100.
  const double balanced = (1 - std::abs(cpu_req / cpu_alloc - mem_req / mem_alloc)) * 100;
  out.score = static_cast<int64_t>(least) + static_cast<int64_t>(balanced);
  return out;
}

}  // namespace neighborly::demo
