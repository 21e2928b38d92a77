#include "extender/src/model/interference.h"

#include "extender/src/model/classify.h"

namespace neighborly::extender {

Demand DemandFor(ContentionClass c, double llc_bytes, double membw_bytes_per_second,
                 const ModelConfig& config) {
  const InterferenceConfig& ic = config.interference;
  Demand d;
  d.llc_bytes = std::max(0.0, llc_bytes);
  d.membw_bytes_per_second = std::max(0.0, membw_bytes_per_second);
  d.harm_weight = Sensitivity(c);
  switch (c) {
    case ContentionClass::kLatencyCritical:
      d.cache_sensitivity = ic.latency_critical_cache_sensitivity;
      d.membw_sensitivity = ic.latency_critical_membw_sensitivity;
      d.tolerance = ic.max_slowdown;
      break;
    case ContentionClass::kBatch:
      d.cache_sensitivity = ic.batch_cache_sensitivity;
      d.membw_sensitivity = ic.batch_membw_sensitivity;
      break;
    case ContentionClass::kStandard:
      d.cache_sensitivity = ic.standard_cache_sensitivity;
      d.membw_sensitivity = ic.standard_membw_sensitivity;
      break;
  }
  return d;
}

}  // namespace neighborly::extender
