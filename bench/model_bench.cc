// The decision core without HTTP: the contention model alone (EvaluateNode
// over prebuilt profiles) and ExtenderCore::Filter / Prioritize over a
// 15,000-node cluster of synthetic telemetry, at 500, 5,000 and 15,000
// candidate names. Three pods: the protocol notes' batch trainer (shared pool),
// a latency-critical pod pinned to 4 exclusive CPUs, a standard web pod.
//
//   build/default/bench/model_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/http_bench_support.h"
#include "bench/soak_fleet.h"
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

// What ingest pays to tell a report that changes nothing the model reads
// (issue 25: such a report re-evaluates its node in no verdict table), beside
// what it pays anyway to build the node's profile. The comparison of two
// equal profiles is its most expensive case (every field is compared); a
// report that changes something stops at the first field that differs.
//   build/default/bench/model_bench --benchmark_filter='Profile(Build|Compare)'
void BM_ProfileBuild(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  const ModelConfig config;
  const absl::Time now = absl::FromUnixSeconds(1'700'000'001);
  const telemetry::v1::NodeReport report = SyntheticReport(7, 1, pods);
  for (auto _ : state) {
    NodeProfile p = extender::BuildNodeProfile(report, config, nullptr, now);
    benchmark::DoNotOptimize(p);
  }
  state.SetLabel(absl::StrCat(pods, " pods"));
}
BENCHMARK(BM_ProfileBuild)->Arg(6)->Arg(50)->Unit(benchmark::kMicrosecond);

void BM_ProfileCompareEqual(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  const ModelConfig config;
  const absl::Time now = absl::FromUnixSeconds(1'700'000'001);
  const NodeProfile previous =
      extender::BuildNodeProfile(SyntheticReport(7, 1, pods), config, nullptr, now);
  NodeProfile next = extender::BuildNodeProfile(SyntheticReport(7, 2, pods), config, nullptr,
                                                now + absl::Seconds(1));
  bool same = false;
  for (auto _ : state) {
    same = extender::SameDecisionsWhileFresh(previous, next);
    benchmark::DoNotOptimize(same);
  }
  if (!same) state.SkipWithError("the two reports' profiles differ: nothing compared whole");
  state.SetLabel(absl::StrCat(pods, " pods, equal"));
}
BENCHMARK(BM_ProfileCompareEqual)->Arg(6)->Arg(50)->Unit(benchmark::kMicrosecond);

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

// The soak's request mix without HTTP or other threads (issue 15, finding 7;
// bench/soak_load --nodes 500 --pods-per-second 375 --candidates 500): 500
// nodes of 50-pod reports as soak_load's fleet sends them, and pods that are
// Guaranteed with one whole CPU, one in three latency-critical, one in three
// batch, each sent to Filter and then Prioritize with all 500 names. The
// clock moves 1/375 s per pod, so bookings build up to the soak's ~22 per
// node (none is ever reported back), and 4 reports are ingested for every 3
// pods (500 nodes at 1 Hz), outside the timing, so that the snapshots the
// requests read are as fresh in memory as in the soak. One iteration is one
// pod: its filter and its prioritize.
//
// `lc_refused`: soak_load's --case lc-refused instead (issue 25, part 6): 500
// nodes of 20 pods of mixed classes (soak_fleet.h, LcRefusedReport) and
// only latency-critical pods, refused on nine nodes in ten, at 350 pods/s.
struct SoakMix {
  static constexpr int kNodes = 500;
  // `reuse`: decisions reused between pods of the same shape (the default);
  // `distinct`: every pod a shape of its own (a hint no other pod has), the
  // case where nothing can be reused.
  SoakMix(bool reuse, bool distinct_pods, bool lc_refused_fleet = false)
      : distinct(distinct_pods),
        lc_refused(lc_refused_fleet),
        pods_per_second(lc_refused_fleet ? 350 : 375) {
    core = std::make_unique<extender::ExtenderCore>(
        ModelConfig{}, clock, extender::ExtenderCore::Options{.reuse_decisions = reuse});
    clock.Set(start);
    for (int i = 0; i < kNodes; ++i) {
      reports.push_back(lc_refused ? LcRefusedReport(i, 20) : SoakReport(i, 50));
    }
    for (int i = 0; i < kNodes; ++i) Report();
    names = Names(kNodes);
    views.assign(names.begin(), names.end());
    // 40 s of pods first: the bookings reach their steady state (30 s TTL).
    for (int warm = 0; warm < 40 * pods_per_second; ++warm) {
      if (lc_refused) ReportsDue();  // the fleet streams throughout, as in soak_load
      Pod();
    }
  }
  // The next node's next report.
  void Report() {
    const int node = static_cast<int>(next_report % kNodes);
    telemetry::v1::NodeReport& r = reports[static_cast<size_t>(node)];
    const uint64_t tick = next_report / kNodes;
    ++next_report;
    r.set_sequence(r.sequence() + 1);
    r.mutable_window_start()->set_seconds(absl::ToUnixSeconds(clock.Now()) - 1);
    const uint64_t wobble = (tick * 2654435761u + r.sequence()) % 8;
    if (lc_refused) {
      SetLcRefusedMeasured(r, node, wobble);
    } else {
      extender::testing::SetMeasured(r, 0, (8 + wobble) << 20, (5 + wobble) * 1'000'000'000);
      extender::testing::SetMeasured(r, 1, (4 + wobble) << 20, (3 + wobble) * 1'000'000'000);
    }
    if (absl::Status s = core->Ingest(r); !s.ok()) {
      std::fprintf(stderr, "soak report rejected: %s\n", std::string(s.message()).c_str());
      std::abort();
    }
  }
  // The next pod: filter, then prioritize (which books).
  void Pod() {
    IncomingPod pod;
    pod.uid = absl::StrFormat("soak-pod-%012d", k);
    pod.namespace_name = "soak";
    pod.name = absl::StrCat("soak-", k);
    if (lc_refused || k % 3 == 0) {
      pod.annotations = {{"neighborly.io/class", "latency-critical"}};
    } else if (k % 3 == 1) {
      pod.labels = {{"workload-type", "batch"}};
    }
    if (distinct) pod.annotations["neighborly.io/llc-bytes"] = absl::StrCat(1 + k % 100'000, "Ki");
    pod.qos = extender::QosClass::kGuaranteed;
    pod.cpu_request_millicores = 1000;
    pod.cpu_limit_millicores = 1000;
    pod.memory_request_bytes = int64_t{2} << 30;
    pod.wants_exclusive_cpus = true;
    core->Filter(pod, views, out);
    core->Prioritize(pod, views, out);
    ++k;
    clock.Set(start + absl::Seconds(static_cast<double>(k) / pods_per_second));
  }
  // Reports due by now (500 nodes at 1 Hz).
  void ReportsDue() {
    const auto due = static_cast<uint64_t>(absl::ToDoubleSeconds(clock.Now() - start) * kNodes);
    while (next_report < due + kNodes) Report();
  }

  const absl::Time start = absl::FromUnixSeconds(1'700'000'001);
  FakeClock clock;
  std::unique_ptr<extender::ExtenderCore> core;
  std::vector<telemetry::v1::NodeReport> reports;
  uint64_t next_report = 0;
  uint64_t k = 0;
  const bool distinct;
  const bool lc_refused;
  const double pods_per_second;
  std::vector<std::string> names;
  std::vector<std::string_view> views;
  std::vector<NodeDecision> out;
};

void BM_CoreSoakMix(benchmark::State& state) {
  const bool reuse = state.range(0) != 0;
  const bool distinct = state.range(1) != 0;
  static std::map<std::pair<bool, bool>, SoakMix*> mixes;
  SoakMix*& mix = mixes[{reuse, distinct}];
  if (mix == nullptr) mix = new SoakMix(reuse, distinct);
  for (auto _ : state) {
    state.PauseTiming();
    mix->ReportsDue();
    state.ResumeTiming();
    mix->Pod();
    benchmark::DoNotOptimize(mix->out.data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * SoakMix::kNodes);
  state.SetLabel(
      absl::StrCat("filter + prioritize, 500 names", distinct ? ", every pod its own shape" : ""));
}
BENCHMARK(BM_CoreSoakMix)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"reuse", "distinct"})
    ->Unit(benchmark::kMicrosecond);

// The tail of soak_load --case lc-refused without HTTP (issue 25, part 6):
// each pod's filter + prioritize timed alone, the percentiles over the run
// printed as counters (p50_us, p99_us, p999_us, max_us), with the candidates
// evaluated (reuse misses) and reused per pod.
void BM_CoreLcRefused(benchmark::State& state) {
  static SoakMix* mix = new SoakMix(/*reuse=*/true, /*distinct=*/false, /*lc_refused=*/true);
  std::vector<double> us;
  const extender::ExtenderCore::ReuseStats before = mix->core->reuse_stats();
  for (auto _ : state) {
    state.PauseTiming();
    mix->ReportsDue();
    const auto t0 = std::chrono::steady_clock::now();
    state.ResumeTiming();
    mix->Pod();
    state.PauseTiming();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    state.ResumeTiming();
    benchmark::DoNotOptimize(mix->out.data());
  }
  const extender::ExtenderCore::ReuseStats after = mix->core->reuse_stats();
  std::sort(us.begin(), us.end());
  auto q = [&](double p) {
    return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))];
  };
  state.counters["p50_us"] = q(0.5);
  state.counters["p99_us"] = q(0.99);
  state.counters["p999_us"] = q(0.999);
  state.counters["max_us"] = us.empty() ? 0.0 : us.back();
  const double pods = static_cast<double>(std::max<size_t>(us.size(), 1));
  state.counters["evaluated_per_pod"] = static_cast<double>(after.evaluated - before.evaluated) / pods;
  state.counters["reused_per_pod"] = static_cast<double>(after.reused - before.reused) / pods;
  state.counters["least_harm_evaluated_per_pod"] =
      static_cast<double>(after.least_harm_evaluated - before.least_harm_evaluated) / pods;
  state.counters["least_harm_reused_per_pod"] =
      static_cast<double>(after.least_harm_reused - before.least_harm_reused) / pods;
  state.SetItemsProcessed(state.iterations() * 2 * SoakMix::kNodes);
  state.SetLabel("latency-critical pods refused on 9 nodes in 10, filter + prioritize, 500 names");
}
BENCHMARK(BM_CoreLcRefused)->Unit(benchmark::kMicrosecond)->Iterations(7000);

// One refresh of a verdict stream's table (issue 25): 5,000 nodes of 20-pod
// reports at 1 Hz, `ms` between refreshes (50: the stream's timer, 250
// nodes report in that time; 1: a booking's refresh at kube-scheduler's
// pace, 5 report), outside the timing, and a booking on one node per
// refresh, as a plugin's Reserve; one iteration is one refresh of one shape
// (a standard Burstable pod, SchedulingBasic's; `refused` 1: a
// latency-critical pod that tolerates almost nothing, refused on every node
// so that the least-harm fallback decides; both tracked with
// least_harm_state as the plugin subscribes them, except a standard pod at
// 50 ms, measured before the plugin did). `incremental` 0 is the control: every node
// visited each refresh, its decision reused when unchanged (the stream
// before the journal); 1 visits only the nodes the journal lists.
// Counters: nodes evaluated or visited per refresh, the share of refreshes
// that were full, the share of the last refresh's decisions that passed.
void BM_VerdictRefresh(benchmark::State& state) {
  constexpr int kNodes = 5000;
  const bool incremental = state.range(0) != 0;
  const bool refused = state.range(1) != 0;
  const absl::Duration interval = absl::Milliseconds(state.range(2));
  FakeClock clock;
  const absl::Time start = absl::FromUnixSeconds(1'700'000'001);
  clock.Set(start);
  extender::ExtenderCore core(ModelConfig{}, clock, {});
  std::vector<telemetry::v1::NodeReport> reports;
  for (int i = 0; i < kNodes; ++i) reports.push_back(SoakReport(i, 20));
  uint64_t next_report = 0;
  auto report = [&] {
    telemetry::v1::NodeReport& r = reports[next_report % kNodes];
    const uint64_t wobble = (next_report / kNodes * 2654435761u + r.sequence()) % 8;
    ++next_report;
    r.set_sequence(r.sequence() + 1);
    r.mutable_window_start()->set_seconds(absl::ToUnixSeconds(clock.Now()) - 1);
    extender::testing::SetMeasured(r, 0, (8 + wobble) << 20, (5 + wobble) * 1'000'000'000);
    extender::testing::SetMeasured(r, 1, (4 + wobble) << 20, (3 + wobble) * 1'000'000'000);
    if (absl::Status st = core.Ingest(r); !st.ok()) {
      std::fprintf(stderr, "report rejected: %s\n", std::string(st.message()).c_str());
      std::abort();
    }
  };
  for (int i = 0; i < kNodes; ++i) report();
  const IncomingPod shape = [&] {
    IncomingPod pod;
    pod.namespace_name = "bench";
    pod.name = "pod";
    pod.qos = extender::QosClass::kBurstable;
    pod.cpu_request_millicores = 100;
    pod.memory_request_bytes = int64_t{500} << 20;
    if (refused) {
      pod.annotations = {{"neighborly.io/class", "latency-critical"},
                         {"neighborly.io/max-slowdown", "1.001"}};
    }
    return pod;
  }();
  const std::vector<std::string> names = Names(kNodes);
  // As the plugin subscribes, except in the 50 ms rows measured before it did.
  extender::ExtenderCore::VerdictTracker tracker(
      incremental, /*least_harm_state=*/refused || interval < absl::Milliseconds(50));
  extender::ExtenderCore::VerdictChanges changes;
  core.Verdicts(shape, tracker, changes);  // the table's first, full refresh
  const extender::ExtenderCore::VerdictRefreshStats before = core.verdict_refresh_stats();
  uint64_t k = 0;
  for (auto _ : state) {
    state.PauseTiming();
    clock.Set(clock.Now() + interval);
    const auto due = static_cast<uint64_t>(absl::ToDoubleSeconds(clock.Now() - start) * kNodes);
    while (next_report < due + kNodes) report();
    IncomingPod pod = shape;
    pod.uid = absl::StrFormat("bench-pod-%012d", k);
    core.Reserve(pod, names[(k * 7919) % kNodes], /*teach=*/false);
    ++k;
    state.ResumeTiming();
    core.Verdicts(shape, tracker, changes);
    benchmark::DoNotOptimize(changes.decisions.data());
  }
  const extender::ExtenderCore::VerdictRefreshStats after = core.verdict_refresh_stats();
  const double refreshes = static_cast<double>(std::max<uint64_t>(1, state.iterations()));
  state.counters["nodes_per_refresh"] =
      static_cast<double>(after.nodes_visited - before.nodes_visited) / refreshes;
  state.counters["full_share"] = static_cast<double>(after.full - before.full) / refreshes;
  const auto passed = std::count_if(changes.decisions.begin(), changes.decisions.end(),
                                    [](const extender::NodeDecision& d) { return d.feasible; });
  const size_t given = std::max<size_t>(1, changes.decisions.size());
  state.counters["feasible_share"] = static_cast<double>(passed) / static_cast<double>(given);
  state.SetLabel(absl::StrCat(
      incremental ? "journal: changed nodes only" : "control: every node visited",
      refused ? "; refused everywhere, least_harm_state" : ""));
}
BENCHMARK(BM_VerdictRefresh)
    ->Args({0, 0, 50})
    ->Args({1, 0, 50})
    ->Args({1, 1, 50})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->ArgNames({"incremental", "refused", "ms"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace neighborly::bench

BENCHMARK_MAIN();
