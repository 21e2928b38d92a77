#include "bench/fleet/default_scheduler.h"

#include <gtest/gtest.h>

#include <set>

namespace neighborly::fleet {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

NodeLoad Node(int64_t requested_millicores, int64_t requested_memory_bytes, int zone = 0,
              int matching = 0) {
  return NodeLoad{.zone = zone,
                  .allocatable_millicores = 16000,
                  .allocatable_memory_bytes = 64 * kGiB,
                  .requested_millicores = requested_millicores,
                  .requested_memory_bytes = requested_memory_bytes,
                  .matching_pods = matching};
}

TEST(DefaultScheduler, FilterDropsNodesWhereTheRequestsDoNotFit) {
  const std::vector<NodeLoad> nodes = {Node(15000, 0), Node(8000, 63 * kGiB), Node(8000, 0)};
  const PodRequest pod{.millicores = 2000, .memory_bytes = 2 * kGiB};
  EXPECT_EQ(FeasibleNodes(nodes, pod), (std::vector<size_t>{2}));
}

TEST(DefaultScheduler, LeastAllocatedAndBalancedFollowKubeScheduler) {
  const PodRequest pod{.millicores = 0, .memory_bytes = 0};
  // cpu 50 % requested, memory 25 %: LeastAllocated (50 + 75) / 2 = 62 (integers);
  // BalancedAllocation (1 - |0.5 - 0.25| / 2) * 100 = 87.5, truncated to 87.
  const NodeLoad n = Node(8000, 16 * kGiB);
  EXPECT_EQ(LeastAllocatedScore(n, pod), 62);
  EXPECT_EQ(BalancedAllocationScore(n, pod), 87);
}

TEST(DefaultScheduler, PrefersTheEmptierNode) {
  const std::vector<NodeLoad> nodes = {Node(12000, 40 * kGiB), Node(2000, 8 * kGiB)};
  const PodRequest pod{.millicores = 1000, .memory_bytes = 2 * kGiB};
  const std::vector<size_t> feasible = FeasibleNodes(nodes, pod);
  const std::vector<int64_t> scores = ScoreNodes(nodes, feasible, pod);
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_GT(scores[1], scores[0]);
  std::mt19937_64 rng(1);
  EXPECT_EQ(SelectHost(scores, rng), 1u);
}

TEST(DefaultScheduler, TopologySpreadPrefersNodesAndZonesWithFewerReplicas) {
  const std::vector<NodeLoad> nodes = {Node(4000, 8 * kGiB, 0, 3), Node(4000, 8 * kGiB, 1, 0),
                                       Node(4000, 8 * kGiB, 2, 1)};
  const std::vector<int64_t> spread = TopologySpreadScores(nodes, {0, 1, 2});
  EXPECT_EQ(spread[1], kMaxNodeScore);  // the fewest matching pods
  EXPECT_LT(spread[0], spread[2]);
  // No replica anywhere: every node alike.
  const std::vector<NodeLoad> empty = {Node(0, 0, 0), Node(0, 0, 1)};
  EXPECT_EQ(TopologySpreadScores(empty, {0, 1}), (std::vector<int64_t>{100, 100}));
  // A Job's pod (no default selector) gets no spread score.
  const PodRequest job{.millicores = 1000, .memory_bytes = kGiB, .default_spread = false};
  const PodRequest replica{.millicores = 1000, .memory_bytes = kGiB, .default_spread = true};
  EXPECT_LT(ScoreNodes(nodes, {0}, job)[0], ScoreNodes(nodes, {0}, replica)[0]);
}

TEST(DefaultScheduler, ExtenderScoresAreScaledByTenAndTheirWeight) {
  EXPECT_EQ(ExtenderContribution(10, 2), 200);
  EXPECT_EQ(ExtenderContribution(3, 1), 30);
}

TEST(DefaultScheduler, TiesAreBrokenAtRandomAmongTheBest) {
  const std::vector<int64_t> scores = {50, 90, 90, 10, 90};
  std::set<size_t> picked;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::mt19937_64 rng(seed);
    picked.insert(SelectHost(scores, rng));
  }
  EXPECT_EQ(picked, (std::set<size_t>{1, 2, 4}));
}

}  // namespace
}  // namespace neighborly::fleet
