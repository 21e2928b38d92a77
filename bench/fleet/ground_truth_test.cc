#include "bench/fleet/ground_truth.h"

#include <gtest/gtest.h>

namespace neighborly::fleet {
namespace {

MemoryBehaviour CacheSensitive() {
  MemoryBehaviour b;
  b.cpi_core = 0.6;
  b.mpki_cold = 20;
  b.mpki_floor = 0.5;
  b.working_set_bytes = 20e6;
  b.footprint_bytes = 30e6;
  b.curve_exponent = 2.5;
  b.mlp = 2;
  return b;
}

MemoryBehaviour Streamer() {
  MemoryBehaviour b;
  b.cpi_core = 0.5;
  b.mpki_cold = 30;
  b.mpki_floor = 25;
  b.working_set_bytes = 200e6;
  b.footprint_bytes = 400e6;
  b.curve_exponent = 0.5;
  b.mlp = 6;
  return b;
}

Placement Pinned(const MemoryBehaviour& b, double cpus, int socket) {
  Placement p;
  p.behaviour = b;
  p.cpus = cpus;
  p.socket_share = {socket == 0 ? 1.0 : 0.0, socket == 1 ? 1.0 : 0.0};
  p.memory_share = p.socket_share;
  return p;
}

TEST(GroundTruth, MissCurveFallsWithCacheAndFlattensAtTheFootprint) {
  const MemoryBehaviour b = CacheSensitive();
  EXPECT_DOUBLE_EQ(MissesPerKiloInstruction(b, 0), 20);
  EXPECT_GT(MissesPerKiloInstruction(b, 5e6), MissesPerKiloInstruction(b, 20e6));
  EXPECT_DOUBLE_EQ(MissesPerKiloInstruction(b, 30e6), MissesPerKiloInstruction(b, 60e6));
  EXPECT_GE(MissesPerKiloInstruction(b, 1e9), b.mpki_floor);
}

TEST(GroundTruth, ALonePodIsNotSlowed) {
  const NodeShape shape;
  for (const Placement& p : {Pinned(CacheSensitive(), 4, 0), Pinned(Streamer(), 6, 1)}) {
    const NodeOutcome out = SolveNode(shape, {p}, {});
    ASSERT_EQ(out.pods.size(), 1u);
    EXPECT_NEAR(out.pods[0].slowdown, 1.0, 1e-9);
  }
  Placement shared;
  shared.behaviour = CacheSensitive();
  EXPECT_NEAR(SolveNode(shape, {shared}, {}).pods[0].slowdown, 1.0, 1e-9);
}

TEST(GroundTruth, AStreamerBesideACacheSensitivePodSlowsItAndRaisesItsBandwidth) {
  const NodeShape shape{
      .sockets = 2, .l3_bytes_per_socket = 25e6, .peak_membw_bytes_per_second_per_socket = 45e9};
  const NodeOutcome alone = SolveNode(shape, {Pinned(CacheSensitive(), 3, 0)}, {});
  const NodeOutcome together =
      SolveNode(shape, {Pinned(CacheSensitive(), 3, 0), Pinned(Streamer(), 4, 0)}, {});
  const PodOutcome& victim = together.pods[0];
  EXPECT_GT(victim.slowdown, 1.3);
  // What the agent then measures of the victim: less cache, more misses, and
  // more bandwidth, although its own demand did not change.
  EXPECT_LT(victim.llc_occupancy_bytes, alone.pods[0].llc_occupancy_bytes / 2);
  EXPECT_GT(victim.mpki, 2 * alone.pods[0].mpki);
  EXPECT_GT(victim.membw_bytes_per_second, alone.pods[0].membw_bytes_per_second);
  // The streamer takes most of the cache that it cannot use.
  EXPECT_GT(together.pods[1].llc_occupancy_bytes, victim.llc_occupancy_bytes);
  // On the other socket it does not touch the victim's L3 or controller.
  const NodeOutcome apart =
      SolveNode(shape, {Pinned(CacheSensitive(), 3, 0), Pinned(Streamer(), 4, 1)}, {});
  EXPECT_NEAR(apart.pods[0].slowdown, 1.0, 1e-6);
}

TEST(GroundTruth, SlowdownIsNeverBelowOneAndGrowsWithNeighbours) {
  const NodeShape shape;
  std::vector<Placement> pods;
  double previous = 1;
  for (int i = 0; i < 6; ++i) {
    pods.push_back(i % 2 ? Pinned(Streamer(), 2, 0) : Pinned(CacheSensitive(), 2, 0));
    const NodeOutcome out = SolveNode(shape, pods, {});
    for (const PodOutcome& p : out.pods) EXPECT_GE(p.slowdown, 1.0);
    EXPECT_GE(out.pods[0].slowdown, previous - 1e-6);
    previous = out.pods[0].slowdown;
  }
}

TEST(GroundTruth, ASaturatedControllerHoldsBandwidthNearItsPeak) {
  const NodeShape shape{
      .sockets = 2, .l3_bytes_per_socket = 25e6, .peak_membw_bytes_per_second_per_socket = 20e9};
  std::vector<Placement> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(Pinned(Streamer(), 4, 0));
  const NodeOutcome out = SolveNode(shape, pods, {});
  EXPECT_LT(out.membw_utilisation[0], 1.1);
  EXPECT_GT(out.pods[0].slowdown, 1.5);
}

TEST(GroundTruth, SensitivityScaleMovesTheVictimsSlowdown) {
  const std::vector<Placement> pods = {Pinned(CacheSensitive(), 3, 0), Pinned(Streamer(), 4, 0)};
  GroundTruthParams low, high;
  low.sensitivity_scale = 0.7;
  high.sensitivity_scale = 1.3;
  EXPECT_LT(SolveNode({}, pods, low).pods[0].slowdown, SolveNode({}, pods, high).pods[0].slowdown);
}

}  // namespace
}  // namespace neighborly::fleet
