#include "extender/src/core/decision_reuse.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/model/testing/report_builder.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

// Every field of a decision, for comparisons.
std::string Describe(const NodeDecision& d) {
  return absl::StrFormat(
      "feasible=%d reason=%s score=%d cost=%.17g confidence=%.17g telemetry=%d l3=%.17g "
      "membw=%.17g harm=%.17g/%.17g numa_penalty=%.17g unmeasured=%.17g numa=%d l3_domain=%d "
      "cpus=%d first_cpu=%d full_cores=%d spans=%d policy=%d least_harm=%d",
      d.feasible, d.reason, d.score, d.cost, d.confidence, d.has_telemetry, d.l3_pressure,
      d.membw_utilisation, d.harm_to_incoming, d.harm_to_residents, d.numa_penalty,
      d.unmeasured_penalty, d.numa_node, d.l3_domain, d.exclusive_cpus, d.first_cpu, d.full_cores,
      d.spans_numa, d.topology_policy, d.least_harm);
}

tv1::NodeReport Report(int node, int pods, uint64_t sequence, absl::Time window_start,
                       uint64_t wobble) {
  tv1::NodeReport r = testing::TwoSocketNode(absl::StrFormat("node-%03d", node), sequence);
  r.mutable_window_start()->set_seconds(absl::ToUnixSeconds(window_start));
  for (int p = 0; p < pods; ++p) {
    testing::PodSpec pod;
    pod.uid = absl::StrFormat("resident-%03d-%02d", node, p);
    pod.namespace_name = "team";
    pod.name = absl::StrFormat("svc-%03d-%02d", node, p);
    if ((node + p) % 7 == 0) pod.annotations = {{"neighborly.io/class", "latency-critical"}};
    if ((node + p) % 5 == 1 && node % 3 == 0) pod.labels = {{"workload-type", "batch"}};
    pod.cpu_request_millicores = 500;
    pod.memory_request_bytes = uint64_t{1} << 30;
    pod.llc_bytes = static_cast<uint64_t>(1 + (node + p + wobble) % 6) << 20;
    pod.membw_bytes_per_second = static_cast<uint64_t>(1 + (node * 3 + p + wobble) % 7) << 30;
    testing::AddPod(r, pod);
  }
  testing::SetMeasured(r, 0, (8 + wobble % 8) << 20, (5 + wobble % 8) * 1'000'000'000);
  testing::SetMeasured(r, 1, (4 + wobble % 8) << 20, (3 + wobble % 8) * 1'000'000'000);
  return r;
}

IncomingPod Pod(uint64_t k, int shape) {
  IncomingPod pod;
  pod.uid = absl::StrCat("pod-", k);
  pod.namespace_name = "apps";
  pod.name = absl::StrCat("replica-", k);
  switch (shape) {
    case 0:
      pod.annotations = {{"neighborly.io/class", "latency-critical"}};
      break;
    case 1:
      pod.labels = {{"workload-type", "batch"}};
      break;
    case 2:
      pod.annotations = {{"neighborly.io/llc-bytes", "12Mi"}};
      break;
    default:
      pod.annotations = {{"neighborly.io/membw-bytes-per-second", absl::StrCat(shape, "G")}};
      break;
  }
  const int cpus = 1 + shape % 3;
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = 1000 * cpus;
  pod.cpu_limit_millicores = 1000 * cpus;
  pod.memory_request_bytes = int64_t{2} << 30;
  pod.wants_exclusive_cpus = true;
  return pod;
}

// Two cores fed the same reports and asked the same questions at the same
// times, one reusing decisions and one evaluating every candidate every
// time: every decision of every request is the same, while nodes report,
// pods are booked, bookings expire, telemetry ages past fresh into stale,
// and shapes come and go (more of them than a thread keeps).
TEST(DecisionReuseTest, DecidesExactlyAsEvaluatingEveryTime) {
  constexpr int kNodes = 40;
  FakeClock clock;
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  clock.Set(start);
  ModelConfig config;
  config.booking_ttl = absl::Seconds(3);
  ExtenderCore reusing(config, clock, {.max_nodes = 64, .reuse_decisions = true});
  ExtenderCore evaluating(config, clock, {.max_nodes = 64, .reuse_decisions = false});
  std::vector<std::string> names;
  for (int n = 0; n < kNodes; ++n) names.push_back(absl::StrFormat("node-%03d", n));
  names.push_back("node-without-telemetry");
  const std::vector<std::string_view> views(names.begin(), names.end());
  std::vector<uint64_t> sequence(kNodes, 0);
  auto report = [&](int n, uint64_t wobble) {
    const tv1::NodeReport r = Report(n, 6, ++sequence[n], clock.Now() - absl::Seconds(1), wobble);
    ASSERT_TRUE(reusing.Ingest(r).ok());
    ASSERT_TRUE(evaluating.Ingest(r).ok());
  };
  for (int n = 0; n < kNodes; ++n) report(n, 0);

  std::mt19937 random(15);
  std::vector<NodeDecision> a, b;
  size_t requests = 0;
  for (uint64_t k = 0; k < 1500; ++k) {
    // Time moves 0-400 ms a pod; now and then much more (telemetry goes stale).
    const int step = static_cast<int>(random() % 400);
    clock.Set(clock.Now() + absl::Milliseconds(k % 300 == 299 ? 20'000 : step));
    // Some nodes report (changing what they measured), most do not.
    for (int r = static_cast<int>(random() % 4); r > 0; --r) {
      report(static_cast<int>(random() % kNodes), random() % 8);
    }
    // Mostly repeated shapes (replicas), sometimes one of 7.
    const int shape = random() % 4 == 0 ? static_cast<int>(random() % 7) : static_cast<int>(k % 3);
    const IncomingPod pod = Pod(k, shape);
    const bool prioritize = k % 2 == 1;
    if (prioritize) {
      reusing.Prioritize(pod, views, a);
      evaluating.Prioritize(pod, views, b);
    } else {
      reusing.Filter(pod, views, a);
      evaluating.Filter(pod, views, b);
    }
    ++requests;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(Describe(a[i]), Describe(b[i]))
          << "pod " << k << " shape " << shape << " node " << names[i]
          << (prioritize ? " prioritize" : " filter");
    }
  }
  ASSERT_EQ(reusing.bookings(), evaluating.bookings());
  const ExtenderCore::ReuseStats stats = reusing.reuse_stats();
  // The test means something only if decisions were reused, and also evaluated.
  EXPECT_GT(stats.reused, requests * kNodes / 8) << stats.evaluated;
  EXPECT_GT(stats.evaluated, requests * kNodes / 20) << stats.reused;
  EXPECT_EQ(evaluating.reuse_stats().reused, 0u);
}

// A node whose batch pods stream hard (issue 25, part 6): a latency-critical
// pod is refused on it for the slowdown predicted, softly.
tv1::NodeReport BusyReport(int node, uint64_t sequence, absl::Time window_start, uint64_t wobble) {
  tv1::NodeReport r = testing::TwoSocketNode(absl::StrFormat("node-%03d", node), sequence);
  r.mutable_window_start()->set_seconds(absl::ToUnixSeconds(window_start));
  for (int p = 0; p < 6; ++p) {
    testing::PodSpec pod;
    pod.uid = absl::StrFormat("busy-%03d-%02d", node, p);
    pod.namespace_name = "team";
    pod.name = absl::StrFormat("job-%03d-%02d", node, p);
    pod.cpu_request_millicores = 500;
    pod.memory_request_bytes = uint64_t{1} << 30;
    pod.llc_bytes = uint64_t{4 + (p + wobble) % 3} << 20;
    pod.membw_bytes_per_second = (6 + (node + p + wobble) % 4) * 1'000'000'000;
    if (p % 2 == 0) {
      pod.labels = {{"workload-type", "batch"}};
      pod.mpki = 20;
    }
    testing::AddPod(r, pod);
  }
  testing::SetMeasured(r, 0, (20 + wobble % 4) << 20, (38 + wobble % 6) * 1'000'000'000);
  testing::SetMeasured(r, 1, (18 + wobble % 4) << 20, (36 + wobble % 6) * 1'000'000'000);
  return r;
}

// The least-harm fallback's second looks are reused as first looks are
// (issue 25, part 6): with a latency-critical pod that every busy node
// refuses, a core reusing decisions answers every request exactly as one
// that evaluates everything every time, while nodes report, pods are booked
// and bookings expire; and most second looks were reused.
TEST(DecisionReuseTest, LeastHarmFallbackDecidesExactlyAsEvaluatingEveryTime) {
  constexpr int kNodes = 30;
  FakeClock clock;
  clock.Set(absl::FromUnixSeconds(1'700'000'000));
  ModelConfig config;
  config.booking_ttl = absl::Seconds(3);
  ExtenderCore reusing(config, clock, {.max_nodes = 64, .reuse_decisions = true});
  ExtenderCore evaluating(config, clock, {.max_nodes = 64, .reuse_decisions = false});
  std::vector<std::string> names;
  for (int n = 0; n < kNodes; ++n) names.push_back(absl::StrFormat("node-%03d", n));
  const std::vector<std::string_view> views(names.begin(), names.end());
  std::vector<uint64_t> sequence(kNodes, 0);
  auto report = [&](int n, uint64_t wobble) {
    const tv1::NodeReport r = BusyReport(n, ++sequence[n], clock.Now() - absl::Seconds(1), wobble);
    ASSERT_TRUE(reusing.Ingest(r).ok());
    ASSERT_TRUE(evaluating.Ingest(r).ok());
  };
  for (int n = 0; n < kNodes; ++n) report(n, 0);
  std::mt19937 random(25);
  std::vector<NodeDecision> a, b;
  for (uint64_t k = 0; k < 600; ++k) {
    clock.Set(clock.Now() + absl::Milliseconds(static_cast<int>(random() % 60)));
    if (random() % 3 == 0) report(static_cast<int>(random() % kNodes), random() % 8);
    // Every node reports now and then, so that telemetry stays fresh.
    if (k % 40 == 39) {
      for (int n = 0; n < kNodes; ++n) report(n, random() % 8);
    }
    const IncomingPod pod = Pod(k, /*shape=*/random() % 8 == 0 ? 2 : 0);
    const bool prioritize = k % 2 == 1;
    if (prioritize) {
      reusing.Prioritize(pod, views, a);
      evaluating.Prioritize(pod, views, b);
    } else {
      reusing.Filter(pod, views, a);
      evaluating.Filter(pod, views, b);
    }
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(Describe(a[i]), Describe(b[i]))
          << "pod " << k << " node " << names[i] << (prioritize ? " prioritize" : " filter");
    }
  }
  ASSERT_EQ(reusing.bookings(), evaluating.bookings());
  EXPECT_EQ(reusing.least_harm_requests(), evaluating.least_harm_requests());
  // The fallback ran in most requests, and its second looks were mostly reused.
  EXPECT_GT(reusing.least_harm_requests(), 300u);
  const ExtenderCore::ReuseStats stats = reusing.reuse_stats();
  EXPECT_GT(stats.least_harm_reused, 4 * stats.least_harm_evaluated) << stats.least_harm_evaluated;
  EXPECT_GT(stats.least_harm_evaluated, 0u);
  EXPECT_EQ(evaluating.reuse_stats().least_harm_reused, 0u);
}

// A verdict tracker (issue 25) keeps each shape's table of every node
// current by evaluating only what changed: applied refresh after refresh,
// its tables equal a core's that evaluates every node every time, field by
// field, while nodes report (busy and quiet by turns, so that a shape comes
// to be refused everywhere and the least-harm fallback decides), pods are
// booked, reserved and unreserved, bookings expire, pinned guesses come and
// go and telemetry goes stale (the whole fleet's, and a few silent nodes'
// alone); most refreshes visit a few nodes only.
// A tracker's tables against evaluating every node each time. With
// `least_harm_state` the tables hold first looks and second looks, and the
// fallback is applied from each refresh's state, as the plugin applies it:
// what a reader sees (passes, its score; or the refusal's reason) must be
// what the calls decide.
void TrackerMatchesEvaluation(bool least_harm_state) {
  constexpr int kNodes = 40;
  FakeClock clock;
  clock.Set(absl::FromUnixSeconds(1'700'000'000));
  ModelConfig config;
  config.booking_ttl = absl::Seconds(3);
  ExtenderCore tracking(config, clock, {.max_nodes = 64, .reuse_decisions = true});
  ExtenderCore evaluating(config, clock, {.max_nodes = 64, .reuse_decisions = false});
  std::vector<uint64_t> sequence(kNodes, 0);
  bool busy_phase = false;
  auto report = [&](int n, uint64_t wobble) {
    const absl::Time window = clock.Now() - absl::Seconds(1);
    const tv1::NodeReport r = busy_phase || n % 4 == 0 ? BusyReport(n, ++sequence[n], window, wobble)
                                                       : Report(n, 6, ++sequence[n], window, wobble);
    ASSERT_TRUE(tracking.Ingest(r).ok());
    ASSERT_TRUE(evaluating.Ingest(r).ok());
  };
  for (int n = 0; n < kNodes; ++n) report(n, 0);

  // The shapes a stream subscribes: pinned latency-critical, batch, hinted,
  // and a standard pod that pins nothing. No UID, as a stream's.
  std::vector<IncomingPod> shapes = {Pod(0, 0), Pod(1, 1), Pod(2, 2), Pod(3, 0)};
  shapes[3].qos = QosClass::kBurstable;
  shapes[3].wants_exclusive_cpus = false;
  shapes[3].cpu_limit_millicores = 0;
  shapes[3].annotations.clear();
  for (IncomingPod& shape : shapes) shape.uid.clear();
  std::vector<ExtenderCore::VerdictTracker> trackers;
  for (size_t s = 0; s < shapes.size(); ++s) trackers.emplace_back(true, least_harm_state);
  // Least-harm state mode: per shape, each node's first look (visible) and
  // second look, and the fallback's state.
  std::vector<std::map<std::string, NodeDecision>> firsts(shapes.size());
  std::vector<std::map<std::string, ExtenderCore::VerdictChanges::SecondLook>> seconds(
      shapes.size());
  std::vector<ExtenderCore::VerdictChanges::LeastHarm> states(shapes.size());
  size_t state_passes = 0;
  auto visible = [](const NodeDecision& d) {
    return d.feasible ? absl::StrCat("passes, score ", d.score) : "refused: " + d.reason;
  };
  std::vector<std::map<std::string, std::string>> tables(shapes.size());
  ExtenderCore::VerdictChanges changes;
  std::vector<std::string_view> names;
  std::vector<NodeDecision> want;
  std::vector<std::string> all;
  for (int n = 0; n < kNodes; ++n) all.push_back(absl::StrFormat("node-%03d", n));
  const std::vector<std::string_view> candidates(all.begin(), all.end());

  std::mt19937 random(35);
  std::mt19937 repeat(36);  // apart, so that `random`'s sequence stays as it was
  std::vector<uint64_t> last_wobble(kNodes, 0);
  size_t incremental = 0, full = 0;
  std::vector<size_t> full_of(shapes.size(), 0), fallback_of(shapes.size(), 0),
      visited_of(shapes.size(), 0);
  constexpr size_t kSteps = 700;
  std::vector<absl::Time> next_due(kNodes);
  for (int n = 0; n < kNodes; ++n) next_due[n] = clock.Now() + absl::Milliseconds(25 * n);
  for (uint64_t k = 0; k < kSteps; ++k) {
    busy_phase = (k / 150) % 2 == 1;
    // 0-100 ms between refreshes (the stream's 50 ms), now and then 20 s
    // (telemetry goes stale until each node reports again).
    const int step = static_cast<int>(random() % 100);
    clock.Set(clock.Now() + absl::Milliseconds(k % 250 == 249 ? 20'000 : step));
    // Each node reports about once a second, as agents do; for a while one
    // in eight falls silent (its telemetry ages into stale with no report,
    // so only its decision's expiry can tell).
    for (int n = 0; n < kNodes; ++n) {
      if (clock.Now() < next_due[n] || (k >= 300 && k < 420 && n % 8 == 3)) continue;
      // Half the reports say what the node's last one said (a steady node):
      // they change nothing the model reads and re-journal nothing, and the
      // tables must stay exact through them as the decisions age and expire.
      const uint64_t wobble = random() % 8;
      if (repeat() % 2 == 0) last_wobble[n] = wobble;
      report(n, last_wobble[n]);
      next_due[n] = clock.Now() + absl::Milliseconds(800 + static_cast<int>(random() % 400));
    }
    // The scheduler's side: bindings (exact), guesses (a prioritize books its
    // best node; a pinned one is remembered as a guess), and unreserves.
    const IncomingPod pod = Pod(1000 + k, static_cast<int>(random() % 4));
    const std::string node = all[random() % kNodes];
    switch (random() % 4) {
      case 0:
        ASSERT_EQ(tracking.Reserve(pod, node, false), evaluating.Reserve(pod, node, false));
        break;
      case 1:
        tracking.Prioritize(pod, candidates, want);
        evaluating.Prioritize(pod, candidates, want);
        break;
      case 2: {
        const std::string uid = absl::StrCat("pod-", 1000 + k - random() % 10);
        ASSERT_EQ(tracking.Unreserve(uid, node), evaluating.Unreserve(uid, node));
        break;
      }
      default:
        break;
    }
    for (size_t s = 0; s < shapes.size(); ++s) {
      tracking.Verdicts(shapes[s], trackers[s], changes);
      ASSERT_EQ(changes.names.size(), changes.decisions.size());
      ASSERT_EQ(changes.names.size(), changes.ordinals.size());
      if (least_harm_state) {
        ASSERT_EQ(changes.second.size(), changes.names.size());
        states[s] = changes.least_harm;
        if (changes.full) {
          firsts[s].clear();
          seconds[s].clear();
        }
        for (size_t i = 0; i < changes.names.size(); ++i) {
          firsts[s][std::string(changes.names[i])] = changes.decisions[i];
          seconds[s][std::string(changes.names[i])] = changes.second[i];
        }
      } else {
        ASSERT_TRUE(changes.second.empty());
      }
      if (changes.full) {
        tables[s].clear();
        ++full;
        ++full_of[s];
      } else {
        ++incremental;
      }
      for (size_t i = 0; i < changes.names.size(); ++i) {
        tables[s][std::string(changes.names[i])] = Describe(changes.decisions[i]);
      }
      evaluating.FilterKnownNodes(shapes[s], /*teach=*/false, names, want);
      ASSERT_EQ(tables[s].size(), names.size()) << "step " << k << " shape " << s;
      bool any_least_harm = false;
      for (size_t i = 0; i < names.size(); ++i) {
        any_least_harm = any_least_harm || want[i].least_harm;
        if (!least_harm_state) {
          ASSERT_EQ(tables[s][std::string(names[i])], Describe(want[i]))
              << "step " << k << " shape " << s << " node " << names[i]
              << (changes.full ? " full" : " incremental");
          continue;
        }
        const std::string name(names[i]);
        const NodeDecision& first = firsts[s][name];
        const ExtenderCore::VerdictChanges::SecondLook& second = seconds[s][name];
        std::string seen = visible(first);
        if (!first.feasible && states[s].active && second.group == states[s].group &&
            second.harm_micros <= states[s].bound_micros) {
          seen = absl::StrCat("passes, score ", second.score);
          ++state_passes;
        }
        ASSERT_EQ(seen, visible(want[i]))
            << "step " << k << " shape " << s << " node " << names[i]
            << (changes.full ? " full" : " incremental");
      }
      if (any_least_harm) ++fallback_of[s];
      visited_of[s] += changes.names.size();
    }
  }
  const ExtenderCore::VerdictRefreshStats stats = tracking.verdict_refresh_stats();
  EXPECT_EQ(stats.full, full);
  EXPECT_EQ(stats.incremental, incremental);
  // The test means something only if the fallback decided many tables
  // (the pinned latency-critical and hinted shapes, refused on most nodes)
  // while the standard shape's were all incremental after its first, visiting
  // a few nodes each, and the pinned shapes' were whole only when a pinned
  // guess changed.
  EXPECT_GT(fallback_of[0] + fallback_of[2], 200u);
  EXPECT_LT(full_of[0] + full_of[2], kSteps / 2) << "the fallback's tables are incremental too";
  EXPECT_LT(visited_of[0] + visited_of[2], kSteps * kNodes / 3);
  EXPECT_EQ(full_of[3], 1u);
  EXPECT_EQ(fallback_of[3], 0u);
  EXPECT_LT(visited_of[3], kSteps * kNodes / 6);
  EXPECT_LT(full_of[1], kSteps / 4);
  EXPECT_GT(full_of[1], 1u);
  uint64_t visited = 0;
  for (size_t v : visited_of) visited += v;
  EXPECT_EQ(stats.nodes_visited, visited);
  // Every node visited is counted once by why; the test's steps make each kind.
  EXPECT_EQ(stats.nodes_changed + stats.nodes_expired + stats.nodes_regiven, stats.nodes_visited);
  EXPECT_GT(stats.nodes_expired, 0u);
  // Reports that repeated the node's last left the journal alone (432 of
  // them; a repeat across a phase change, or of a report already past
  // fresh, is journalled), and the tables above stayed exact through them.
  EXPECT_GT(stats.reports_unchanged, 200u);
  if (least_harm_state) {
    // Nothing is given again: the reader applies the fallback's moves.
    EXPECT_EQ(stats.nodes_regiven, 0u);
    EXPECT_GT(state_passes, 1000u);
  } else {
    EXPECT_GT(stats.nodes_regiven, 0u);
  }
}

TEST(VerdictTrackerTest, IncrementalTablesEqualEvaluatingEveryNode) {
  TrackerMatchesEvaluation(/*least_harm_state=*/false);
}

TEST(VerdictTrackerTest, LeastHarmStateAppliedByTheReaderEqualsEvaluatingEveryNode) {
  TrackerMatchesEvaluation(/*least_harm_state=*/true);
}

// A report that repeats the node's last (a steady node) re-evaluates the
// node in no table while the last is fresh; one that changes a measurement
// does, and so does a repeat of a report already past fresh (its decisions
// have begun to age, a fresh one's have not).
TEST(VerdictTrackerTest, AReportThatChangesNothingReevaluatesNothing) {
  FakeClock clock;
  clock.Set(absl::FromUnixSeconds(1'700'000'000));
  ModelConfig config;
  ExtenderCore core(config, clock, {.max_nodes = 8});
  uint64_t sequence = 0;
  auto ingest = [&](uint64_t wobble) {
    ASSERT_TRUE(core.Ingest(Report(1, 4, ++sequence, clock.Now() - absl::Seconds(1), wobble)).ok());
  };
  ingest(0);
  ExtenderCore::VerdictTracker tracker(true);
  ExtenderCore::VerdictChanges changes;
  IncomingPod pod = Pod(1, 0);
  pod.uid.clear();
  core.Verdicts(pod, tracker, changes);
  ASSERT_TRUE(changes.full);
  ASSERT_EQ(changes.names.size(), 1u);
  const std::string first = Describe(changes.decisions[0]);

  clock.Set(clock.Now() + absl::Seconds(1));
  ingest(0);  // the same measurements, a window later
  core.Verdicts(pod, tracker, changes);
  EXPECT_FALSE(changes.full);
  EXPECT_TRUE(changes.names.empty());
  EXPECT_EQ(core.verdict_refresh_stats().reports_unchanged, 1u);
  // The table's decision still is what evaluating the newest report gives.
  std::vector<std::string_view> names;
  std::vector<NodeDecision> want;
  core.FilterKnownNodes(pod, /*teach=*/false, names, want);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(first, Describe(want[0]));

  clock.Set(clock.Now() + absl::Seconds(1));
  ingest(3);  // the node's pods measured otherwise
  core.Verdicts(pod, tracker, changes);
  ASSERT_EQ(changes.names.size(), 1u);
  EXPECT_EQ(core.verdict_refresh_stats().reports_unchanged, 1u);

  // Past the last report's fresh_until (3 windows of 1 s) its decisions
  // age (confidence 31/32 from 1.8 s on). A repeat then is journalled: the
  // newest report is fresh, and the node is taken again at full confidence.
  clock.Set(clock.Now() + absl::Seconds(6));
  core.Verdicts(pod, tracker, changes);
  ASSERT_EQ(changes.names.size(), 1u);  // its decision expired
  EXPECT_LT(changes.decisions[0].confidence, 1.0);
  clock.Set(clock.Now() + absl::Milliseconds(100));
  ingest(3);
  EXPECT_EQ(core.verdict_refresh_stats().reports_unchanged, 1u);
  core.Verdicts(pod, tracker, changes);
  ASSERT_EQ(changes.names.size(), 1u);
  core.FilterKnownNodes(pod, /*teach=*/false, names, want);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(Describe(changes.decisions[0]), Describe(want[0]));
  EXPECT_EQ(changes.decisions[0].confidence, 1.0);
}

TEST(DecisionReuseTest, ShapesDifferInWhatEvaluationReads) {
  PodRequest a;
  a.contention_class = ContentionClass::kBatch;
  a.cpus = 2;
  a.admission.containers.push_back({.exclusive_cpus = 2, .memory_bytes = 1 << 30});
  a.pod = "apps/one";
  a.prediction = "prior";
  PodRequest b = a;
  b.pod = "apps/two";  // only in explanations
  b.prediction = "predicted from Deployment apps/web";
  b.source = ClassSource::kLabelRule;
  EXPECT_TRUE(SameShape(a, b));
  b = a;
  b.llc_bytes = 1;
  EXPECT_FALSE(SameShape(a, b));
  b = a;
  b.sensitivity = 0.9;
  EXPECT_FALSE(SameShape(a, b));
  b = a;
  b.admission.containers[0].memory_bytes = 2 << 30;
  EXPECT_FALSE(SameShape(a, b));
  b = a;
  b.admission.containers.push_back({.exclusive_cpus = 0, .memory_bytes = 0, .init = true});
  EXPECT_FALSE(SameShape(a, b));
  b = a;
  b.contention_class = ContentionClass::kStandard;
  EXPECT_FALSE(SameShape(a, b));
}

// A thread keeps at most kShapes tables, the least recently used replaced,
// and a new shape keeps nothing on its first request (a stream of distinct
// pods only pays for the comparison).
TEST(DecisionReuseTest, KeepsFromAShapesSecondRequestAndAtMostFourShapes) {
  FakeClock clock;
  clock.Set(absl::FromUnixSeconds(1'700'000'000));
  // Its one-node /filter requests would book each pod there (a new booking
  // list, so nothing to reuse): this test counts reuse alone.
  ModelConfig config;
  config.interference.book_single_candidate = false;
  ExtenderCore core(config, clock, {.max_nodes = 64});
  const tv1::NodeReport r = Report(1, 4, 1, clock.Now() - absl::Seconds(1), 0);
  ASSERT_TRUE(core.Ingest(r).ok());
  const std::vector<std::string_view> names = {"node-001"};
  std::vector<NodeDecision> out;
  core.Filter(Pod(1, 7), names, out);  // first of its shape: evaluated, not kept
  core.Filter(Pod(2, 7), names, out);  // second: evaluated, kept
  core.Filter(Pod(3, 7), names, out);  // third: reused
  EXPECT_EQ(core.reuse_stats().reused, 1u);
  EXPECT_EQ(core.reuse_stats().evaluated, 2u);
  // Four other shapes push shape 7 out; it starts over.
  for (int shape = 8; shape < 12; ++shape) core.Filter(Pod(10 + shape, shape), names, out);
  core.Filter(Pod(30, 7), names, out);
  EXPECT_EQ(core.reuse_stats().reused, 1u);
  core.Filter(Pod(31, 7), names, out);
  core.Filter(Pod(32, 7), names, out);
  EXPECT_EQ(core.reuse_stats().reused, 2u);
}

// A kept decision is returned only for the snapshot and booking list it was
// made from, while the telemetry is fresh and no booking has expired (the
// core republishes a list when one expires; this holds without that too).
// Find hands back the kept decision itself, not a copy (issue 25): every
// field as kept, at the same address while nothing is kept over it, and the
// newer decision once one is.
TEST(DecisionReuseTest, FindHandsBackTheKeptDecisionWhole) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  NodeSnapshot snapshot;
  snapshot.profile.numa.emplace_back();
  snapshot.profile.fresh_until = t0 + absl::Seconds(3);
  snapshot.profile.stale_at = t0 + absl::Seconds(35);
  snapshot.profile.residents_until = t0 + absl::Seconds(600);
  NodeDecision made;
  made.feasible = false;
  made.reason = "interference: predicted slowdown 1.31x > 1.20x (a reason past the inline size)";
  made.score = 3;
  made.cost = 0.125;
  made.confidence = 0.75;
  made.has_telemetry = true;
  made.l3_pressure = 0.5;
  made.membw_utilisation = 0.625;
  made.harm_to_incoming = 0.25;
  made.harm_to_residents = 0.375;
  made.numa_penalty = 1;
  made.unmeasured_penalty = 0.0625;
  made.numa_node = 1;
  made.l3_domain = 3;
  made.exclusive_cpus = 4;
  made.first_cpu = 8;
  made.full_cores = false;
  made.spans_numa = true;
  made.topology_policy = 2;
  made.least_harm = true;

  DecisionReuse reuse;
  PodRequest req;
  reuse.For(req);
  DecisionReuse::Table& table = reuse.For(req);  // keeps from the second request
  table.Keep(3, snapshot, nullptr, t0, made);
  const NodeDecision* kept = table.Find(3, snapshot.generation, 0, t0 + absl::Seconds(1));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(Describe(*kept), Describe(made));
  EXPECT_NE(kept, &made) << "the table's own";
  EXPECT_EQ(table.Find(3, snapshot.generation, 0, t0 + absl::Seconds(2)), kept);

  NodeDecision newer = made;
  newer.feasible = true;
  newer.reason.clear();
  newer.score = 9;
  table.Keep(3, snapshot, nullptr, t0 + absl::Seconds(2), newer);
  kept = table.Find(3, snapshot.generation, 0, t0 + absl::Seconds(2));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(Describe(*kept), Describe(newer));
}

TEST(DecisionReuseTest, FindsOnlyWhatWasMadeFromTheSameFreshState) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  NodeSnapshot snapshot;
  snapshot.profile.numa.emplace_back();
  snapshot.profile.fresh_until = t0 + absl::Seconds(3);
  snapshot.profile.stale_at = t0 + absl::Seconds(35);  // confidence steps of 1 s
  snapshot.profile.residents_until = t0 + absl::Seconds(600);
  NodeSnapshot newer;
  newer.profile.numa.emplace_back();
  newer.profile.fresh_until = t0 + absl::Seconds(3);
  Booking booking;
  booking.pod_uid = "u";
  booking.expires_at = t0 + absl::Seconds(2);
  const BookingList bookings(std::vector<Booking>{booking});
  const BookingList rebooked(std::vector<Booking>{booking});

  DecisionReuse reuse;
  PodRequest req;
  DecisionReuse::Table& first = reuse.For(req);
  NodeDecision made;
  made.feasible = false;
  made.reason = "isolation: kept";
  first.Keep(7, snapshot, &bookings, t0, made);  // a shape's first request keeps nothing
  EXPECT_EQ(first.Find(7, snapshot.generation, bookings.generation, t0), nullptr);

  DecisionReuse::Table& table = reuse.For(req);
  ASSERT_EQ(&table, &first);
  table.Keep(7, snapshot, &bookings, t0, made);
  const NodeDecision* kept =
      table.Find(7, snapshot.generation, bookings.generation, t0 + absl::Seconds(1));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->reason, "isolation: kept");
  EXPECT_FALSE(kept->feasible);
  EXPECT_EQ(table.Find(8, snapshot.generation, bookings.generation, t0), nullptr) << "another node";
  EXPECT_EQ(table.Find(7, newer.generation, bookings.generation, t0), nullptr)
      << "a newer snapshot";
  EXPECT_EQ(table.Find(7, snapshot.generation, rebooked.generation, t0), nullptr)
      << "another booking list";
  EXPECT_EQ(table.Find(7, snapshot.generation, 0, t0), nullptr) << "bookings gone";
  EXPECT_EQ(table.Find(7, snapshot.generation, bookings.generation, t0 + absl::Seconds(2)),
            nullptr)
      << "a booking expired";
  table.Keep(7, snapshot, nullptr, t0, made);
  EXPECT_NE(table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(3)), nullptr);
  EXPECT_EQ(
      table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(3) + absl::Nanoseconds(1)),
      nullptr)
      << "fresh no longer";
  // Aging: a decision holds for the rest of its confidence step (3-4 s, 4-5 s, ...).
  table.Keep(7, snapshot, nullptr, t0 + absl::Seconds(4.2), made);
  EXPECT_NE(table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(4.9)), nullptr);
  EXPECT_EQ(table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(5)), nullptr) << "next step";
  // Stale: until the residents it reported stop counting, then for good.
  table.Keep(7, snapshot, nullptr, t0 + absl::Seconds(40), made);
  EXPECT_NE(table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(599)), nullptr);
  EXPECT_EQ(table.Find(7, snapshot.generation, 0, t0 + absl::Seconds(600)), nullptr)
      << "residents aged out";
  table.Keep(7, snapshot, nullptr, t0 + absl::Seconds(600), made);
  EXPECT_NE(table.Find(7, snapshot.generation, 0, t0 + absl::Hours(100)), nullptr);
  table.Keep(7, snapshot, nullptr, t0, made);
  // Another shape takes another table; the first is still there.
  PodRequest other;
  other.cpus = 3;
  EXPECT_NE(&reuse.For(other), &table);
  EXPECT_NE(reuse.For(req).Find(7, snapshot.generation, 0, t0), nullptr);
}

}  // namespace
}  // namespace neighborly::extender
