// The interference fit on synthetic windows with known curves (issue 22):
// CPI = c0 (1 + a x + b z), traffic = m0 + g x, plus noise.
#include "extender/src/model/interference_fit.h"

#include <random>

#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

InterferenceFit::Prior Prior() {
  return {.cache_sensitivity = 0.4, .membw_sensitivity = 0.3, .traffic_slope = 0, .strength = 1};
}

// Windows spread over cache loss 0..0.8 and latency factor 1..2.
InterferenceFit Synthetic(double c0, double a, double b, double m0, double g, double noise,
                          int windows, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> loss(0, 0.8), latency(1, 2);
  std::normal_distribution<double> jitter(0, noise);
  InterferenceFit fit;
  for (int i = 0; i < windows; ++i) {
    const double x = loss(rng), l = latency(rng);
    const double cpi = c0 * (1 + a * x + b * (l - 1)) * (1 + jitter(rng));
    fit.Add({.cache_loss = x, .latency_factor = l, .cpi = cpi, .membw = (m0 + g * x) * (1 + jitter(rng))},
            1.0);
  }
  return fit;
}

TEST(InterferenceFitTest, RecoversKnownCurvesFromSpreadWindows) {
  // A cache-sensitive service: 2x CPI with all its cache lost; a victim's
  // traffic rises 2.8 -> 10 GB/s.
  const InterferenceFit fit = Synthetic(0.5, 1.0, 0.3, 2.8e9, 9e9, 0.02, 400, 1);
  const std::optional<InterferenceFit::Result> r = fit.Solve(Prior());
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->cpi_alone, 0.5, 0.02);
  EXPECT_NEAR(r->cache_sensitivity, 1.0, 0.08);
  EXPECT_NEAR(r->membw_sensitivity, 0.3, 0.08);
  ASSERT_TRUE(r->solo_membw.has_value());
  EXPECT_NEAR(*r->solo_membw, 2.8e9, 0.3e9);
}

TEST(InterferenceFitTest, AStreamerIsInsensitiveAndItsTrafficHolds) {
  // A scan: its CPI barely moves with the cache it gets; its traffic is its own.
  const InterferenceFit fit = Synthetic(2.0, 0.02, 0.6, 20e9, 0, 0.02, 400, 2);
  const std::optional<InterferenceFit::Result> r = fit.Solve(Prior());
  ASSERT_TRUE(r.has_value());
  EXPECT_LT(r->cache_sensitivity, 0.1);
  EXPECT_NEAR(r->membw_sensitivity, 0.6, 0.1);
  EXPECT_NEAR(*r->solo_membw, 20e9, 1.5e9);
}

TEST(InterferenceFitTest, WithoutSpreadThePriorHolds) {
  // Every window at the same loss and latency: nothing to learn a slope from.
  InterferenceFit fit;
  for (int i = 0; i < 200; ++i) fit.Add({.cache_loss = 0, .latency_factor = 1, .cpi = 0.7}, 1.0);
  const std::optional<InterferenceFit::Result> r = fit.Solve(Prior());
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->cache_sensitivity, 0.4, 1e-6);
  EXPECT_NEAR(r->membw_sensitivity, 0.3, 1e-6);
  EXPECT_NEAR(r->cpi_alone, 0.7, 1e-6);
  EXPECT_DOUBLE_EQ(r->cache_loss_spread, 0);
}

TEST(InterferenceFitTest, ScalingKeepsTheFitAndBadWindowsAreIgnored) {
  InterferenceFit fit = Synthetic(0.5, 1.0, 0.3, 2.8e9, 9e9, 0.0, 100, 3);
  const InterferenceFit::Result before = *fit.Solve(Prior());
  fit.Scale(1e-6);  // the owner rebases its weights
  fit.Add({.cache_loss = 0.5, .latency_factor = 1, .cpi = -1}, 1.0);  // not a measurement
  fit.Add({.cache_loss = 0.5, .latency_factor = 1, .cpi = 1.0}, 0.0);  // no weight
  const InterferenceFit::Result after = *fit.Solve(Prior(), /*unit=*/1e-6);
  EXPECT_NEAR(after.cache_sensitivity, before.cache_sensitivity, 1e-6);
  EXPECT_NEAR(after.windows, 100, 1e-6);
  EXPECT_FALSE(InterferenceFit().Solve(Prior()).has_value());
  EXPECT_EQ(InterferenceFit::Restore(fit.sums()).sums(), fit.sums());
}

}  // namespace
}  // namespace neighborly::extender
