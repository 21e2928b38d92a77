#include "extender/src/model/interference_fit.h"

#include <algorithm>
#include <cmath>

namespace neighborly::extender {
namespace {

// Solves a x = b for a symmetric 3x3 `a` (Cramer's rule); false when singular.
bool Solve3(const std::array<std::array<double, 3>, 3>& a, const std::array<double, 3>& b,
            std::array<double, 3>& x) {
  auto det = [](const std::array<std::array<double, 3>, 3>& m) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double d = det(a);
  if (!(std::fabs(d) > 1e-300)) return false;
  for (int c = 0; c < 3; ++c) {
    std::array<std::array<double, 3>, 3> m = a;
    for (int r = 0; r < 3; ++r) m[r][c] = b[r];
    x[c] = det(m) / d;
  }
  return std::isfinite(x[0]) && std::isfinite(x[1]) && std::isfinite(x[2]);
}

}  // namespace

void InterferenceFit::Add(const Window& w, double weight) {
  if (!(weight > 0) || !(w.cpi > 0) || !std::isfinite(w.cpi)) return;
  const double x = std::clamp(w.cache_loss, 0.0, 1.0);
  const double z = std::clamp(w.latency_factor - 1.0, 0.0, 10.0);
  const double y = w.cpi;
  s_[0] += weight;
  s_[1] += weight * x;
  s_[2] += weight * z;
  s_[3] += weight * y;
  s_[4] += weight * x * x;
  s_[5] += weight * z * z;
  s_[6] += weight * x * z;
  s_[7] += weight * x * y;
  s_[8] += weight * z * y;
  if (w.membw && *w.membw >= 0 && std::isfinite(*w.membw)) {
    s_[9] += weight;
    s_[10] += weight * x;
    s_[11] += weight * x * x;
    s_[12] += weight * *w.membw;
    s_[13] += weight * x * *w.membw;
  }
}

void InterferenceFit::Scale(double factor) {
  for (double& v : s_) v *= factor;
}

InterferenceFit InterferenceFit::Restore(const std::array<double, kSums>& sums) {
  InterferenceFit f;
  for (size_t i = 0; i < sums.size(); ++i) f.s_[i] = std::isfinite(sums[i]) ? sums[i] : 0;
  return f;
}

std::optional<InterferenceFit::Result> InterferenceFit::Solve(const Prior& prior,
                                                             double unit) const {
  const double w = s_[0];
  if (!(w > 0)) return std::nullopt;
  Result r;
  r.windows = w / (unit > 0 ? unit : 1.0);
  const double mx = s_[1] / w, mz = s_[2] / w, my = s_[3] / w;
  r.cache_loss_spread = std::sqrt(std::max(0.0, s_[4] / w - mx * mx));
  r.latency_spread = std::sqrt(std::max(0.0, s_[5] / w - mz * mz));
  // Minimise sum w (y - c0 - c1 x - c2 z)^2 + l (c1 - a c0)^2 + l (c2 - b c0)^2,
  // the ridge in CPI^2 units (l = strength x my^2 makes it scale-free).
  const double scale = unit > 0 ? unit : 1.0;
  const double l = std::max(1e-9, prior.strength) * scale * my * my;
  const double a = prior.cache_sensitivity, b = prior.membw_sensitivity;
  std::array<std::array<double, 3>, 3> m = {{{s_[0], s_[1], s_[2]},  //
                                             {s_[1], s_[4], s_[6]},
                                             {s_[2], s_[6], s_[5]}}};
  // The ridge terms, l v v^T with v = (-a, 1, 0) and (-b, 0, 1); scaled by
  // 1/my^2 so that they act on the ratios c1/c0 and c2/c0 (c0 ~ my).
  const double k = l / (my * my);
  m[0][0] += k * (a * a + b * b);
  m[0][1] += -k * a;
  m[1][0] += -k * a;
  m[1][1] += k;
  m[0][2] += -k * b;
  m[2][0] += -k * b;
  m[2][2] += k;
  std::array<double, 3> rhs = {s_[3], s_[7], s_[8]};
  std::array<double, 3> c;
  if (Solve3(m, rhs, c) && c[0] > 0) {
    r.cpi_alone = c[0];
    r.cache_sensitivity = std::clamp(c[1] / c[0], 0.0, kMaxSensitivity);
    r.membw_sensitivity = std::clamp(c[2] / c[0], 0.0, kMaxSensitivity);
  } else {
    r.cpi_alone = my;
    r.cache_sensitivity = a;
    r.membw_sensitivity = b;
  }
  // Traffic: m = m0 + g x, ridge on g toward the prior slope.
  const double tw = s_[9];
  if (tw > 0) {
    const double mm = s_[12] / tw;
    const double lg = std::max(1e-9, prior.strength) * scale;
    // [tw  sx ][m0]   [sm ]      with the ridge lg (g - g_p)^2 on g
    // [sx  sxx+lg][g ] = [sxm + lg g_p]
    const double sx = s_[10], sxx = s_[11] + lg;
    const double det = tw * sxx - sx * sx;
    if (std::fabs(det) > 1e-300) {
      const double m0 = (s_[12] * sxx - sx * (s_[13] + lg * prior.traffic_slope)) / det;
      r.solo_membw = std::clamp(m0, 0.0, std::max(mm, 0.0));
    } else {
      r.solo_membw = mm;
    }
  }
  return r;
}

}  // namespace neighborly::extender
