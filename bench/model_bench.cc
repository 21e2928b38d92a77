// The decision core without HTTP: the contention model alone (EvaluateNode
// over prebuilt profiles) and ExtenderCore::Filter / Prioritize over a
// 15,000-node cluster of synthetic telemetry, at 500, 5,000 and 15,000
// candidate names. Three pods: the protocol notes' batch trainer (shared pool),
// a latency-critical pod pinned to 4 exclusive CPUs, a standard web pod.
//
//   build/default/bench/model_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/http_bench_support.h"
#include "extender/src/model/booking_fold.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"

namespace neighborly::bench {
namespace {

using extender::IncomingPod;
using extender::ModelConfig;
using extender::NodeDecision;
using extender::NodeProfile;

constexpr int kClusterNodes = 15'000;

SyntheticCluster& Cluster() {
  static SyntheticCluster* cluster = new SyntheticCluster(kClusterNodes);
  return *cluster;
}

IncomingPod Pod(int kind) {
  IncomingPod pod;
  pod.uid = "bench-uid-" + std::to_string(kind);
  pod.namespace_name = "bench";
  switch (kind) {
    case 0:  // the protocol notes' trainer: batch by label, shared pool, 24Mi hint
      pod.name = "trainer";
      pod.labels = {{"workload-type", "batch"}};
      pod.annotations = {{"neighborly.io/llc-bytes", "24Mi"}};
      pod.qos = extender::QosClass::kBurstable;
      pod.cpu_request_millicores = 2000;
      pod.memory_request_bytes = int64_t{4} << 30;
      break;
    case 1:  // latency-critical, Guaranteed, 4 exclusive CPUs: tries each NUMA node
      pod.name = "article";
      pod.annotations = {{"neighborly.io/class", "latency-critical"}};
      pod.qos = extender::QosClass::kGuaranteed;
      pod.cpu_request_millicores = 4000;
      pod.memory_request_bytes = int64_t{4} << 30;
      pod.wants_exclusive_cpus = true;
      break;
    default:  // a standard web pod
      pod.name = "web";
      pod.qos = extender::QosClass::kBurstable;
      pod.cpu_request_millicores = 500;
      pod.memory_request_bytes = int64_t{1} << 30;
      break;
  }
  return pod;
}

const char* PodLabel(int kind) {
  return kind == 0 ? "batch-shared" : kind == 1 ? "lc-pinned" : "standard-shared";
}

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  names.reserve(n);
  for (int i = 0; i < n; ++i) names.push_back(NodeName(i));
  return names;
}

// The model alone: profiles built once, one request, EvaluateNode per node.
void BM_EvaluateNodes(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int kind = static_cast<int>(state.range(1));
  const ModelConfig config;
  const absl::Time now = absl::FromUnixSeconds(1'700'000'001);
  std::vector<NodeProfile> profiles;
  profiles.reserve(n);
  for (int i = 0; i < n; ++i) {
    profiles.push_back(extender::BuildNodeProfile(SyntheticReport(i), config, nullptr, now));
  }
  const extender::PodRequest req = extender::MakePodRequest(Pod(kind), nullptr, config);
  std::vector<NodeDecision> out(n);
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) extender::EvaluateNode(req, &profiles[i], {}, now, config, out[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(PodLabel(kind));
}
BENCHMARK(BM_EvaluateNodes)
    ->ArgsProduct({{500, 5000, 15000}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

// In-flight bookings (issue 15, finding 7): 500 nodes with `bookings` live
// bookings each (a mix of classes, pinned and shared, as a burst of pods
// leaves them), evaluated from the list (fold=0, the only way before) or
// from the fold the ledger publishes with it (fold=1, booking_fold.h).
void BM_EvaluateBookedNodes(benchmark::State& state) {
  constexpr int kNodes = 500;
  const int per_node = static_cast<int>(state.range(0));
  const bool use_fold = state.range(1) != 0;
  const int kind = static_cast<int>(state.range(2));
  const ModelConfig config;
  const absl::Time now = absl::FromUnixSeconds(1'700'000'001);
  std::vector<NodeProfile> profiles;
  std::vector<std::vector<extender::Booking>> bookings(kNodes);
  std::vector<extender::BookingFold> folds;
  profiles.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    profiles.push_back(extender::BuildNodeProfile(SyntheticReport(i), config, nullptr, now));
    for (int b = 0; b < per_node; ++b) {
      extender::Booking booking;
      booking.pod_uid = "booked-" + std::to_string(i) + "-" + std::to_string(b);
      booking.pod = "bench/booked-" + std::to_string(b);
      booking.contention_class = b % 3 == 0   ? extender::ContentionClass::kLatencyCritical
                                 : b % 3 == 1 ? extender::ContentionClass::kBatch
                                              : extender::ContentionClass::kStandard;
      booking.numa_node = b % 4 == 3 ? -1 : b % 2;
      booking.llc_bytes = 2e6 + 1e5 * b;
      booking.membw_bytes_per_second = 1e9 + 1e7 * b;
      booking.exclusive_cpus = booking.numa_node >= 0 ? 1 : 0;
      booking.memory_bytes = int64_t{1} << 30;
      booking.expires_at = now + absl::Seconds(30);
      bookings[i].push_back(booking);
    }
    folds.push_back(extender::FoldBookings(bookings[i]));
  }
  const extender::PodRequest req = extender::MakePodRequest(Pod(kind), nullptr, config);
  std::vector<NodeDecision> out(kNodes);
  for (auto _ : state) {
    for (int i = 0; i < kNodes; ++i) {
      extender::EvaluateNode(req, &profiles[i], bookings[i], now, config, out[i],
                             use_fold ? &folds[i] : nullptr);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kNodes);
  state.SetLabel(absl::StrCat(PodLabel(kind), use_fold ? " fold" : " list"));
}
BENCHMARK(BM_EvaluateBookedNodes)
    ->ArgsProduct({{4, 22, 100}, {0, 1}, {1, 2}})
    ->ArgNames({"bookings", "fold", "pod"})
    ->Unit(benchmark::kMicrosecond);

// The core as the HTTP layer calls it: name lookup, snapshot and booking
// reads, evaluation, booking (prioritize) and the decision log.
void RunCore(benchmark::State& state, bool prioritize) {
  const int n = static_cast<int>(state.range(0));
  const int kind = static_cast<int>(state.range(1));
  extender::ExtenderCore& core = *Cluster().core;
  const std::vector<std::string> names = Names(n);
  const std::vector<std::string_view> views(names.begin(), names.end());
  const IncomingPod pod = Pod(kind);
  std::vector<NodeDecision> out;
  for (auto _ : state) {
    if (prioritize) {
      core.Prioritize(pod, views, out);
    } else {
      core.Filter(pod, views, out);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(PodLabel(kind));
}

void BM_CoreFilter(benchmark::State& state) { RunCore(state, false); }
BENCHMARK(BM_CoreFilter)
    ->ArgsProduct({{500, 5000, 15000}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

void BM_CorePrioritize(benchmark::State& state) { RunCore(state, true); }
BENCHMARK(BM_CorePrioritize)
    ->ArgsProduct({{500, 5000, 15000}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace neighborly::bench

BENCHMARK_MAIN();
