// BookingFold (booking_fold.h): evaluation from a node's folded bookings must
// decide as evaluation from the list does, for any mix of bookings (pinned,
// shared, on NUMA nodes or L3 domains the node lacks, tiny batch pods below
// the isolation floors, expired ones) and any pod.
#include "extender/src/model/booking_fold.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "extender/src/model/classify.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "extender/src/model/testing/report_builder.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using testing::TwoSocketNode;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

IncomingPod RandomPod(std::mt19937& random, int i) {
  IncomingPod pod;
  pod.uid = "uid-" + std::to_string(i);
  pod.namespace_name = "ns";
  pod.name = "p" + std::to_string(i);
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 500;
  pod.memory_request_bytes = int64_t{1} << 30;
  switch (random() % 3) {
    case 0:
      pod.annotations = {{"neighborly.io/class", "latency-critical"}};
      break;
    case 1:
      pod.labels = {{"workload-type", "batch"}};
      break;
    default:
      break;
  }
  pod.annotations["neighborly.io/llc-bytes"] = std::to_string(random() % 30'000'000);
  pod.annotations["neighborly.io/membw-bytes-per-second"] =
      std::to_string(random() % 20'000'000'000ull);
  if (random() % 2) {  // Guaranteed, pinned: the kubelet's NUMA admission too
    pod.qos = QosClass::kGuaranteed;
    pod.cpu_request_millicores = 1000 * (1 + static_cast<int64_t>(random() % 6));
    pod.memory_request_bytes = (int64_t{1} << 30) * (1 + static_cast<int64_t>(random() % 24));
    pod.wants_exclusive_cpus = true;
  }
  return pod;
}

Booking RandomBooking(std::mt19937& random, int i) {
  Booking b;
  b.pod_uid = "booked-" + std::to_string(i);
  b.pod = "ns/booked-" + std::to_string(i);
  const ContentionClass classes[] = {ContentionClass::kLatencyCritical, ContentionClass::kBatch,
                                     ContentionClass::kStandard};
  b.contention_class = classes[random() % 3];
  // NUMA node 0 or 1 of the node, one it lacks (7), or the shared pool.
  const int32_t numa[] = {-1, 0, 1, 7};
  b.numa_node = numa[random() % 4];
  const int32_t l3[] = {-1, 0, 1, 9};
  b.l3_domain = l3[random() % 4];
  // Sometimes tiny (below the isolation floors: a batch pod blocks nothing).
  const bool tiny = random() % 4 == 0;
  b.llc_bytes = static_cast<double>(random() % (tiny ? 1'000 : 20'000'000));
  b.membw_bytes_per_second = static_cast<double>(random() % (tiny ? 1'000 : 15'000'000'000ull));
  b.exclusive_cpus = b.numa_node >= 0 ? static_cast<int32_t>(random() % 4) : 0;
  b.memory_bytes = (int64_t{1} << 28) * static_cast<int64_t>(random() % 16);
  b.expires_at = kT0 + absl::Seconds(1 + static_cast<int64_t>(random() % 60));
  return b;
}

void ExpectSameDecision(const NodeDecision& list, const NodeDecision& fold, const std::string& at) {
  EXPECT_EQ(list.feasible, fold.feasible) << at;
  EXPECT_EQ(list.reason, fold.reason) << at;
  EXPECT_EQ(list.score, fold.score) << at;
  EXPECT_EQ(list.numa_node, fold.numa_node) << at;
  EXPECT_EQ(list.l3_domain, fold.l3_domain) << at;
  EXPECT_EQ(list.exclusive_cpus, fold.exclusive_cpus) << at;
  // The same sums in another order: equal to rounding.
  for (auto [a, b] : {std::pair{list.cost, fold.cost},
                      {list.l3_pressure, fold.l3_pressure},
                      {list.membw_utilisation, fold.membw_utilisation},
                      {list.harm_to_incoming, fold.harm_to_incoming},
                      {list.harm_to_residents, fold.harm_to_residents}}) {
    EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::fabs(a))) << at;
  }
}

TEST(BookingFoldTest, DecidesAsTheListDoesForAnyBookings) {
  std::mt19937 random(15);
  ModelConfig config;
  int rejected_by_booking = 0;
  for (int round = 0; round < 300; ++round) {
    // A node with a few residents of every class, some pinned.
    telemetry::v1::NodeReport report = TwoSocketNode("node-" + std::to_string(round));
    for (int r = 0; r < static_cast<int>(random() % 4); ++r) {
      AddPod(report,
             {.uid = "r" + std::to_string(r),
              .name = "resident-" + std::to_string(r),
              .labels = r % 2 ? std::map<std::string, std::string>{{"workload-type", "batch"}}
                              : std::map<std::string, std::string>{},
              .exclusive_cpus = r == 0 ? "2-3" : "",
              .llc_bytes = static_cast<uint64_t>(random() % 10'000'000),
              .membw_bytes_per_second = static_cast<uint64_t>(random() % 10'000'000'000ull)});
    }
    const NodeProfile profile = BuildNodeProfile(report, config, nullptr, kT0);
    std::vector<Booking> bookings;
    for (int b = 0; b < static_cast<int>(random() % 30); ++b) {
      bookings.push_back(RandomBooking(random, b));
    }
    const BookingFold fold = FoldBookings(bookings);
    for (int q = 0; q < 8; ++q) {
      const PodRequest req = MakePodRequest(RandomPod(random, q), nullptr, config);
      // Before every booking expires (the fold holds) and after some have
      // (it does not; evaluation must fold the live ones itself).
      for (const absl::Time now : {kT0, kT0 + absl::Seconds(static_cast<int64_t>(random() % 60))}) {
        NodeDecision from_list, from_fold, without;
        EvaluateNode(req, &profile, bookings, now, config, from_list);
        EvaluateNode(req, &profile, bookings, now, config, from_fold, &fold);
        EvaluateNode(req, &profile, {}, now, config, without);
        ExpectSameDecision(from_list, from_fold,
                           "round " + std::to_string(round) + " pod " + std::to_string(q));
        if (without.feasible && !from_list.feasible) ++rejected_by_booking;
      }
    }
    if (HasFailure()) break;
  }
  // The bookings decided something in this run (else it proves little).
  EXPECT_GT(rejected_by_booking, 50);
}

TEST(BookingFoldTest, HoldsUntilTheEarliestExpiry) {
  Booking early;
  early.pod_uid = "a";
  early.expires_at = kT0 + absl::Seconds(5);
  Booking late = early;
  late.pod_uid = "b";
  late.expires_at = kT0 + absl::Seconds(30);
  const std::vector<Booking> bookings = {late, early};
  const BookingFold fold = FoldBookings(bookings);
  EXPECT_TRUE(fold.any);
  EXPECT_EQ(fold.valid_until, kT0 + absl::Seconds(5));
  EXPECT_TRUE(fold.Valid(kT0 + absl::Seconds(4)));
  EXPECT_FALSE(fold.Valid(kT0 + absl::Seconds(5)));
  EXPECT_FALSE(FoldBookings({}).any);
  EXPECT_TRUE(FoldBookings({}).Valid(kT0 + absl::Hours(1000)));
}

}  // namespace
}  // namespace neighborly::extender
