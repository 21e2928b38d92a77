#include "bench/fleet/workload_mix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace neighborly::fleet {
namespace {

// Each workload's arrival times, in replica order.
std::map<int, std::vector<double>> ArrivalsByWorkload(const FleetSpec& fleet) {
  std::map<int, std::vector<std::pair<int, double>>> by_replica;
  for (const Arrival& a : fleet.arrivals) by_replica[a.workload].push_back({a.replica, a.at_s});
  std::map<int, std::vector<double>> out;
  for (auto& [w, replicas] : by_replica) {
    std::sort(replicas.begin(), replicas.end());
    for (const auto& [r, at] : replicas) out[w].push_back(at);
  }
  return out;
}

// Without scale-ups a controller creates all its pods at once: they arrive
// 0.2 s apart.
TEST(WorkloadMix, WithoutScaleUpsEveryReplicaArrivesAtCreation) {
  const FleetSpec fleet = GenerateFleet(3, MixOptions{});
  for (const auto& [w, at] : ArrivalsByWorkload(fleet)) {
    for (size_t r = 1; r < at.size(); ++r) EXPECT_NEAR(at[r] - at[r - 1], 0.2, 1e-9) << w;
  }
}

// With scale-ups a Deployment of three or more replicas starts with a third
// of them and gets the rest 30-180 s later; Jobs and smaller Deployments
// arrive as before. The fleet is otherwise the same: the same workloads,
// replicas and creation moments, so the two runs compare placements alone.
TEST(WorkloadMix, ScaleUpsBringADeploymentsLaterReplicasAfterItsFirstRan) {
  MixOptions scaled;
  scaled.scale_ups = true;
  const FleetSpec plain = GenerateFleet(3, MixOptions{});
  const FleetSpec fleet = GenerateFleet(3, scaled);
  ASSERT_EQ(fleet.workloads.size(), plain.workloads.size());
  ASSERT_EQ(fleet.arrivals.size(), plain.arrivals.size());
  const auto plain_at = ArrivalsByWorkload(plain);
  int scaled_workloads = 0;
  for (const auto& [w, at] : ArrivalsByWorkload(fleet)) {
    const Workload& workload = fleet.workloads[static_cast<size_t>(w)];
    EXPECT_EQ(workload.name, plain.workloads[static_cast<size_t>(w)].name);
    ASSERT_EQ(at.size(), plain_at.at(w).size());
    EXPECT_DOUBLE_EQ(at[0], plain_at.at(w)[0]) << workload.name;
    if (workload.is_job || at.size() < 3) {
      EXPECT_EQ(at, plain_at.at(w)) << workload.name;
      continue;
    }
    ++scaled_workloads;
    const size_t first = std::max<size_t>(1, at.size() / 3);
    for (size_t r = 1; r < first; ++r) EXPECT_NEAR(at[r] - at[r - 1], 0.2, 1e-9);
    EXPECT_GE(at[first] - at[0], 30) << workload.name;
    EXPECT_LE(at[first] - at[0], 180 + 0.2 * static_cast<double>(first)) << workload.name;
    for (size_t r = first + 1; r < at.size(); ++r) EXPECT_NEAR(at[r] - at[r - 1], 0.2, 1e-9);
  }
  EXPECT_GT(scaled_workloads, 5);
  // Arrivals stay in time order.
  for (size_t i = 1; i < fleet.arrivals.size(); ++i) {
    EXPECT_LE(fleet.arrivals[i - 1].at_s, fleet.arrivals[i].at_s);
  }
}

}  // namespace
}  // namespace neighborly::fleet
