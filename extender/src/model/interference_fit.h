// How a workload's CPI and memory traffic move with the cache it gets and the
// memory latency around it, fitted from its replica-windows (issue 22): each
// window is a natural experiment (a replica squeezed on a crowded L3, another
// alone; a busy controller, an idle one).
//
//   InterferenceFit fit;
//   fit.Add({.cache_loss = 0.4, .latency_factor = 1.3, .cpi = 0.8, .membw = 6e9}, weight);
//   InterferenceFit::Result r = fit.Solve(prior);
//   r.cache_sensitivity   // d(CPI)/d(loss) / CPI alone: 0.9 = 1.9x with all its cache lost
//
// The CPI model is the CPI stack's first order, CPI = c0 (1 + a x + b z), with
// x the fraction of its working set the window lost and z = latency factor - 1;
// traffic is m0 + g x (a victim misses more: g > 0; an aggressor's m0 holds).
// Decayed weighted least squares on running sums (the owner scales them as
// its weights grow), ridge-regularised toward the class prior (a, b) and the
// model's own traffic slope, so that a workload never seen squeezed keeps its
// prior instead of a slope fitted to noise.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_FIT_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_FIT_H_

#include <array>
#include <optional>

namespace neighborly::extender {

class InterferenceFit {
 public:
  struct Window {
    double cache_loss = 0;      // 1 - occupancy / working set, 0..1
    double latency_factor = 1;  // its NUMA node's loaded latency / idle
    double cpi = 0;             // 1 / IPC (> 0)
    std::optional<double> membw;  // its memory traffic, bytes/s
  };
  struct Prior {
    double cache_sensitivity = 0;
    double membw_sensitivity = 0;
    double traffic_slope = 0;  // bytes/s more per unit of loss (reuse x working set)
    // How many well-spread windows the prior is worth (ridge strength).
    double strength = 1.0;
  };
  struct Result {
    double cpi_alone = 0;
    double cache_sensitivity = 0;  // clamped to [0, kMaxSensitivity]
    double membw_sensitivity = 0;
    std::optional<double> solo_membw;  // traffic at no loss
    double windows = 0;                // decayed weight behind it
    double cache_loss_spread = 0;      // std deviation of the windows' loss
    double latency_spread = 0;
  };
  static constexpr double kMaxSensitivity = 3.0;
  static constexpr int kSums = 14;

  void Add(const Window& w, double weight);
  void Scale(double factor);
  // nullopt without any window. `unit`: the weight one window has now (the
  // owner's weights grow with time), so that the prior is worth
  // prior.strength windows whatever the scale.
  std::optional<Result> Solve(const Prior& prior, double unit = 1.0) const;
  double weight() const { return s_[0]; }

  const std::array<double, kSums>& sums() const { return s_; }
  static InterferenceFit Restore(const std::array<double, kSums>& sums);

 private:
  // 0 w, 1 wx, 2 wz, 3 wy, 4 wxx, 5 wzz, 6 wxz, 7 wxy, 8 wzy,
  // 9 w (traffic), 10 wx, 11 wxx, 12 wm, 13 wxm.
  std::array<double, kSums> s_{};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_FIT_H_
