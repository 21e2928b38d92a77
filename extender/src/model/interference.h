// Predicted slowdown: the currency of placement (issue 22, docs/scoring.md
// section 4). Each workload is described by what it *needs* (cache demand,
// solo bandwidth, access pressure) and by how much it suffers when it does not
// get it (cache and bandwidth sensitivity); a placement is judged by the
// slowdown it predicts for the incoming pod and every resident.
//
//   Demand a = InterferenceFor(ContentionClass::kLatencyCritical, 18e6, 2.8e9, config);
//   CacheLoss(/*demand=*/a.llc_bytes, a.Coldness(), /*domain demand*/ 50e6,
//             /*domain coldness sum*/ K, /*size*/ 25e6)  // fraction of its working set lost
//   Slowdown(a, loss, LoadedLatency(0.6, config))       // e.g. 1.6
//
// Forms (references in docs/scoring.md):
// * cache sharing under LRU: when the working sets of one L3 domain exceed its
//   size, the shortfall is taken from each pod in proportion to its bytes times
//   its *coldness* (working set / access rate: the time between two touches
//   of one of its lines), the lines LRU evicts first; a streamer with a huge
//   access rate keeps its lines, a cache-friendly service loses most;
// * access rate = solo memory traffic + `reuse_per_second` x working set (its hits);
//   a pod that loses a fraction x of its working set misses that much more,
//   adding reuse_per_second x x x working set of memory traffic (a victim's
//   bandwidth rises: it is not an aggressor);
// * loaded memory latency as a queue: 1 + k u / (1 - u), capped;
// * slowdown as a CPI stack: (1 + cache_sensitivity x loss) x
//   (1 + membw_sensitivity x (latency factor - 1)).
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_H_

#include <algorithm>

#include "extender/src/model/model_config.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

// What one pod needs and how it suffers (its workload's fit, else its class's prior).
struct Demand {
  double llc_bytes = 0;               // working set it would keep in L3 alone
  double membw_bytes_per_second = 0;  // its memory traffic alone (full cache, idle controller)
  double cache_sensitivity = 0;       // slowdown per unit of working set lost (1: 2x at all lost)
  double membw_sensitivity = 0;       // memory-bound share of its CPI (latency factor's weight)
  double tolerance = 0;               // max slowdown it accepts (latency-critical), else 0
  double harm_weight = 0;             // how much its slowdown counts (class sensitivity)

  // L3 access rate (bytes/s): its misses plus its hits on its working set.
  double AccessRate(const InterferenceConfig& c) const {
    return membw_bytes_per_second + c.reuse_per_second * llc_bytes;
  }
  // Seconds between two touches of one of its lines: LRU evicts the coldest first.
  double Coldness(const InterferenceConfig& c) const {
    const double rate = AccessRate(c);
    return rate > 0 ? llc_bytes / rate : 0;
  }
};

// The class's prior sensitivities (and tolerance, for latency-critical pods)
// around a footprint.
Demand DemandFor(ContentionClass c, double llc_bytes, double membw_bytes_per_second,
                 const ModelConfig& config);

// Fraction (0..1) of a pod's working set it loses in an L3 domain of
// `size_bytes` whose pods (it included) demand `domain_demand` bytes with
// coldness-weighted demand `domain_cold` (sum of demand x coldness).
inline double CacheLoss(double coldness, double domain_demand, double domain_cold,
                        double size_bytes) {
  const double shortfall = domain_demand - size_bytes;
  if (shortfall <= 0 || domain_cold <= 0 || size_bytes <= 0) return 0;
  return std::min(1.0, shortfall * coldness / domain_cold);
}

// Memory latency under load relative to idle, at utilisation u of the peak.
inline double LoadedLatency(double utilisation, const InterferenceConfig& c) {
  const double u = std::clamp(utilisation, 0.0, c.max_utilisation);
  return std::min(c.max_latency_factor, 1.0 + c.latency_scale * u / (1.0 - u));
}

inline double Slowdown(double cache_sensitivity, double membw_sensitivity, double cache_loss,
                       double latency_factor) {
  return (1.0 + cache_sensitivity * cache_loss) *
         (1.0 + membw_sensitivity * (latency_factor - 1.0));
}

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_H_
