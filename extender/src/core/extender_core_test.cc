// ExtenderCore end to end without transports: ingest, filter/prioritize with
// the current clock, bookings, remembered classes, views, persistence.
#include "extender/src/core/extender_core.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::SetMeasured;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

IncomingPod Pod(const std::string& name, std::map<std::string, std::string> annotations = {},
                std::map<std::string, std::string> labels = {}) {
  IncomingPod pod;
  pod.uid = "uid-" + name;
  pod.namespace_name = "ns";
  pod.name = name;
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 1000;
  pod.memory_request_bytes = 1 << 30;
  pod.annotations = std::move(annotations);
  pod.labels = std::move(labels);
  return pod;
}

IncomingPod LatencyCritical(const std::string& name) {
  return Pod(name, {{"neighborly.io/class", "latency-critical"}});
}

class ExtenderCoreTest : public ::testing::Test {
 protected:
  std::vector<NodeDecision> Filter(const IncomingPod& pod, std::vector<std::string_view> nodes) {
    std::vector<NodeDecision> out;
    core_.Filter(pod, nodes, out);
    return out;
  }
  std::vector<NodeDecision> Prioritize(const IncomingPod& pod,
                                       std::vector<std::string_view> nodes) {
    std::vector<NodeDecision> out;
    core_.Prioritize(pod, nodes, out);
    return out;
  }

  FakeClock clock_;
  ModelConfig config_ = PressureModelConfig();  // these tests pin down strict isolation
  ExtenderCore core_{config_, clock_};
};

TEST_F(ExtenderCoreTest, AcceptedReportIsVisibleInViews) {
  tv1::NodeReport r = TwoSocketNode("node-1", 7);
  SetMeasured(r, 0, 12 << 20, 20'000'000'000);
  AddPod(r, {.uid = "b",
             .namespace_name = "analytics",
             .name = "scan",
             .membw_bytes_per_second = 22'100'000'000});
  ASSERT_TRUE(core_.Ingest(r).ok());
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-2")).ok());
  EXPECT_EQ(core_.node_count(), 2u);
  std::optional<NodeSummary> n = core_.Node("node-1");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->sequence, 7u);
  EXPECT_EQ(n->confidence, 1.0);
  EXPECT_EQ(n->topology_manager_policy, "single-numa-node");
  ASSERT_EQ(n->numa_nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(n->numa_nodes[0].membw_utilisation, 0.4);
  EXPECT_EQ(n->numa_nodes[0].free_exclusive_cpus, 8u);
  EXPECT_EQ(n->l3_domains[0].occupancy_bytes, 12u << 20);
  EXPECT_THAT(n->aggressors, ElementsAre("analytics/scan"));
  ASSERT_EQ(n->pods.size(), 1u);
  EXPECT_EQ(n->pods[0].contention_class, "batch");
  EXPECT_EQ(n->pods[0].class_source, "measured");
  EXPECT_EQ(n->capabilities["resctrl_occupancy"], "available");
  EXPECT_FALSE(core_.Node("node-3").has_value());
  // Sorted by contention: node-1 first.
  std::vector<NodeSummary> all = core_.Nodes();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "node-1");
  EXPECT_TRUE(all[0].pods.empty());
  clock_.Advance(absl::Seconds(31.5));
  EXPECT_DOUBLE_EQ(core_.Node("node-1")->confidence, 0.5);
  EXPECT_EQ(core_.ingest_stats().reports_accepted, 2u);
}

TEST(ExtenderCoreCapacityTest, ACoreSizedForOneNodeRefusesASecondAndKeepsTheFirst) {
  FakeClock clock;
  ExtenderCore core(ModelConfig{}, clock, {.max_remembered_pods = 1000, .max_nodes = 1});
  ASSERT_TRUE(core.Ingest(TwoSocketNode("node-1", 1)).ok());
  const absl::Status second = core.Ingest(TwoSocketNode("node-2", 1));
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.message()), HasSubstr("node-2"));
  EXPECT_TRUE(core.Ingest(TwoSocketNode("node-1", 2)).ok()) << "a known node still reports";
  EXPECT_EQ(core.node_count(), 1u);
  ASSERT_TRUE(core.Node("node-1").has_value());
  EXPECT_EQ(core.Node("node-1")->sequence, 2u);
}

TEST_F(ExtenderCoreTest, InvalidReportChangesNoState) {
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-1", 1)).ok());
  tv1::NodeReport bad = TwoSocketNode("node-1", 2);
  AddPod(bad, {.uid = "p", .name = "p", .exclusive_cpus = "99"});
  absl::Status s = core_.Ingest(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("pods[0].exclusive_cpus"));
  EXPECT_EQ(core_.Node("node-1")->sequence, 1u);
  EXPECT_TRUE(core_.Node("node-1")->pods.empty());
  tv1::NodeReport unnamed = TwoSocketNode("node-9", 1);
  unnamed.mutable_window_duration()->set_seconds(0);
  EXPECT_EQ(core_.Ingest(unnamed).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(core_.node_count(), 1u);
  EXPECT_EQ(core_.ingest_stats().reports_rejected, 2u);
}

TEST_F(ExtenderCoreTest, ReplayedOrOldReportIsRefusedButANewBootStartsOver) {
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-1", 5)).ok());
  absl::Status replay = core_.Ingest(TwoSocketNode("node-1", 5));
  EXPECT_EQ(replay.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(replay.message()), HasSubstr("NodeReport.sequence: 5 is not after 5"));
  EXPECT_EQ(core_.Ingest(TwoSocketNode("node-1", 3)).code(), absl::StatusCode::kInvalidArgument);
  tv1::NodeReport rebooted = TwoSocketNode("node-1", 1);
  rebooted.set_boot_id("another-boot");
  EXPECT_TRUE(core_.Ingest(rebooted).ok());
  EXPECT_EQ(core_.Node("node-1")->sequence, 1u);
}

TEST_F(ExtenderCoreTest, NoTelemetryPassesEverythingWithTheBlindScore) {
  for (const NodeDecision& d : Filter(LatencyCritical("a"), {"x", "y", "z"})) {
    EXPECT_TRUE(d.feasible);
    EXPECT_EQ(d.score, 3);
  }
  for (const NodeDecision& d : Filter(Pod("plain"), {"x", "y", "z"})) {
    EXPECT_TRUE(d.feasible);
    EXPECT_EQ(d.score, 5);
  }
}

TEST_F(ExtenderCoreTest, LeastHarmFallbackPassesTheCheapestWhenIsolationRefusesEveryNode) {
  // Issue 14: both nodes carry batch pods; node-2's is lighter.
  tv1::NodeReport heavy = TwoSocketNode("node-1");
  AddPod(heavy, {.uid = "b1",
                 .name = "scan",
                 .labels = {{"workload-type", "batch"}},
                 .llc_bytes = 20 << 20,
                 .membw_bytes_per_second = 9'000'000'000});
  tv1::NodeReport light = TwoSocketNode("node-2");
  AddPod(light, {.uid = "b2",
                 .name = "etl",
                 .labels = {{"workload-type", "batch"}},
                 .llc_bytes = 4 << 20,
                 .membw_bytes_per_second = 1'000'000'000});
  ModelConfig fallback = PressureModelConfig();
  fallback.least_harm_fallback = true;
  ASSERT_TRUE(core_.Ingest(heavy).ok());
  ASSERT_TRUE(core_.Ingest(light).ok());
  // Default: refuse (the pod stays Pending).
  for (const NodeDecision& d : Filter(LatencyCritical("a"), {"node-1", "node-2"})) {
    EXPECT_FALSE(d.feasible);
  }
  ExtenderCore core(fallback, clock_);
  ASSERT_TRUE(core.Ingest(heavy).ok());
  ASSERT_TRUE(core.Ingest(light).ok());
  std::vector<NodeDecision> out;
  core.Filter(LatencyCritical("a"), std::vector<std::string_view>{"node-1", "node-2"}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].feasible);
  EXPECT_TRUE(out[1].feasible);
  EXPECT_TRUE(out[1].least_harm);
  bool explained = false;
  for (const Term& t : ExplainTerms(out[1])) explained |= t.name == "least_harm_fallback";
  EXPECT_TRUE(explained);
  // A node that passes on its own means no fallback.
  ASSERT_TRUE(core.Ingest(TwoSocketNode("node-3")).ok());
  core.Filter(LatencyCritical("a"), std::vector<std::string_view>{"node-1", "node-2", "node-3"},
              out);
  EXPECT_FALSE(out[1].feasible);
  EXPECT_TRUE(out[2].feasible);
  EXPECT_FALSE(out[2].least_harm);
}

TEST_F(ExtenderCoreTest, FilterUsesTheCurrentClock) {
  tv1::NodeReport r = TwoSocketNode("node-1");
  AddPod(r, {.uid = "b", .name = "scan", .labels = {{"workload-type", "batch"}}});
  ASSERT_TRUE(core_.Ingest(r).ok());
  EXPECT_FALSE(Filter(LatencyCritical("a"), {"node-1"})[0].feasible);
  clock_.Advance(absl::Seconds(60));  // the agent went silent: load fails open ...
  NodeDecision plain = Filter(Pod("plain"), {"node-1"})[0];
  EXPECT_TRUE(plain.feasible);
  EXPECT_EQ(plain.confidence, 0);
  EXPECT_EQ(plain.score, 5);
  // ... but its batch resident still keeps latency-critical pods away,
  EXPECT_FALSE(Filter(LatencyCritical("a"), {"node-1"})[0].feasible);
  clock_.Advance(config_.residents_max_age);  // until the residents are forgotten too
  NodeDecision d = Filter(LatencyCritical("a"), {"node-1"})[0];
  EXPECT_TRUE(d.feasible);
  EXPECT_EQ(d.score, 3);
}

TEST_F(ExtenderCoreTest, PrioritizeBooksTheBestNodeUntilTheAgentReportsThePod) {
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-1", 1)).ok());
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-2", 1)).ok());
  const IncomingPod heavy = Pod("heavy", {{"neighborly.io/llc-bytes", "20Mi"},
                                          {"neighborly.io/membw-bytes-per-second", "20G"}});
  std::vector<NodeDecision> first = Prioritize(heavy, {"node-1", "node-2"});
  EXPECT_EQ(first[0].score, first[1].score);  // identical nodes; the first wins the tie
  EXPECT_EQ(core_.Node("node-1")->bookings, 1);
  EXPECT_EQ(core_.bookings(), 1u);
  // The next pod sees the booked footprint on node-1.
  const IncomingPod next = Pod("next", {{"neighborly.io/llc-bytes", "20Mi"},
                                        {"neighborly.io/membw-bytes-per-second", "20G"}});
  std::vector<NodeDecision> second = Prioritize(next, {"node-1", "node-2"});
  EXPECT_LT(second[0].score, second[1].score);
  EXPECT_EQ(core_.Node("node-2")->bookings, 1);
  // node-1's agent lists the first pod, not measured yet: the booking still
  // carries its load (and the node's profile does not count it twice).
  tv1::NodeReport listed = TwoSocketNode("node-1", 2);
  AddPod(listed, {.uid = "uid-heavy", .namespace_name = "ns", .name = "heavy"});
  ASSERT_TRUE(core_.Ingest(listed).ok());
  EXPECT_EQ(core_.Node("node-1")->bookings, 1);
  EXPECT_EQ(core_.Node("node-1")->l3_domains[0].pressure, 0);
  // Once measured, its booking is released.
  tv1::NodeReport landed = TwoSocketNode("node-1", 3);
  AddPod(landed, {.uid = "uid-heavy",
                  .namespace_name = "ns",
                  .name = "heavy",
                  .llc_bytes = 20 << 20,
                  .membw_bytes_per_second = 20'000'000'000});
  ASSERT_TRUE(core_.Ingest(landed).ok());
  EXPECT_EQ(core_.Node("node-1")->bookings, 0);
  EXPECT_EQ(core_.bookings(), 1u);
  // Listed by another node than the one it is booked on: that node cannot
  // release it (scoped learning, docs/security.md); the TTL or its own node does.
  tv1::NodeReport elsewhere = TwoSocketNode("node-1", 4);
  AddPod(elsewhere, {.uid = "uid-next", .namespace_name = "ns", .name = "next"});
  ASSERT_TRUE(core_.Ingest(elsewhere).ok());
  EXPECT_EQ(core_.bookings(), 1u);
  std::vector<DecisionRecord> records = core_.Decisions("ns/next", 5);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verb, "prioritize");
  EXPECT_EQ(records[0].booked_node, "node-2");
  ASSERT_EQ(records[0].nodes.size(), 2u);
  EXPECT_EQ(records[0].nodes[1].node, "node-2");
}

TEST_F(ExtenderCoreTest, BookingsExpireAfterTheTtl) {
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-1", 1)).ok());
  Prioritize(Pod("p"), {"node-1"});
  EXPECT_EQ(core_.bookings(), 1u);
  clock_.Advance(config_.booking_ttl - absl::Seconds(1));
  Filter(Pod("q"), {"node-1"});
  EXPECT_EQ(core_.bookings(), 1u);
  clock_.Advance(absl::Seconds(1));
  Filter(Pod("q"), {"node-1"});
  EXPECT_EQ(core_.bookings(), 0u);
}

TEST_F(ExtenderCoreTest, RemembersDeclaredClassesForPodsTheAgentCannotLabel) {
  // The scheduler asks about a latency-critical pod ...
  Filter(LatencyCritical("article"), {"node-1"});
  // ... which then runs where the agent sees no annotations.
  tv1::NodeReport r = TwoSocketNode("node-1");
  AddPod(r, {.uid = "uid-article", .namespace_name = "ns", .name = "article"});
  ASSERT_TRUE(core_.Ingest(r).ok());
  std::optional<NodeSummary> n = core_.Node("node-1");
  ASSERT_EQ(n->pods.size(), 1u);
  EXPECT_EQ(n->pods[0].contention_class, "latency-critical");
  EXPECT_EQ(n->pods[0].class_source, "remembered");
  // And a batch pod is kept away from it.
  NodeDecision d = Filter(Pod("scan", {}, {{"workload-type", "batch"}}), {"node-1"})[0];
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("latency-critical pod ns/article"));
}

TEST_F(ExtenderCoreTest, LearnedStateSurvivesARestart) {
  const std::string dir = std::string(NEIGHBORLY_BINARY_DIR) + "/core_test_tmp";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/pods.json";
  Filter(LatencyCritical("article"), {"node-1"});
  EXPECT_EQ(core_.remembered_pods(), 1u);
  ASSERT_TRUE(core_.SaveState(path).ok());

  ExtenderCore restarted(config_, clock_);
  ASSERT_TRUE(restarted.LoadState(path).ok());
  tv1::NodeReport r = TwoSocketNode("node-1");
  AddPod(r, {.uid = "uid-article", .namespace_name = "ns", .name = "article"});
  ASSERT_TRUE(restarted.Ingest(r).ok());
  EXPECT_EQ(restarted.Node("node-1")->pods[0].contention_class, "latency-critical");

  std::ofstream(path) << "{ not json";
  ExtenderCore corrupt(config_, clock_);
  absl::Status s = corrupt.LoadState(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("corrupt"));
}

// What replicas taught survives a restart: the state file carries the profiles.
TEST_F(ExtenderCoreTest, WorkloadProfilesSurviveARestart) {
  for (uint64_t seq = 1; seq <= 40; ++seq) {
    tv1::NodeReport r = TwoSocketNode("node-1", seq);
    AddPod(r, {.uid = "scan-1",
               .namespace_name = "analytics",
               .name = "event-scan-7d9f8c6b5-x2k4q",
               .labels = {{"pod-template-hash", "7d9f8c6b5"}},
               .llc_bytes = 32925286,
               .membw_bytes_per_second = 22'100'000'000,
               .mpki = 30});
    ASSERT_TRUE(core_.Ingest(r).ok());
    clock_.Advance(absl::Seconds(1));
  }
  const std::string path = ::testing::TempDir() + "/core-workloads.json";
  ASSERT_TRUE(core_.SaveState(path).ok());
  ExtenderCore restarted(config_, clock_);
  ASSERT_TRUE(restarted.LoadState(path).ok());
  std::optional<WorkloadView> w = restarted.Workload("analytics/Deployment/event-scan");
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->prediction.aggressor);
  EXPECT_NEAR(w->prediction.windows, 40, 0.5);  // a minute of a 1 h half-life
  EXPECT_EQ(restarted.workload_profiles(), 1u);
  // The next replica, unlabelled, is batch on the restarted extender too.
  IncomingPod replica = Pod("event-scan-7d9f8c6b5-m7pqz", {});
  replica.namespace_name = "analytics";
  replica.labels = {{"pod-template-hash", "7d9f8c6b5"}};
  replica.owner_kind = "ReplicaSet";
  replica.owner_name = "event-scan-7d9f8c6b5";
  std::vector<NodeDecision> out;
  restarted.Prioritize(replica, std::vector<std::string_view>{"node-1"}, out);
  std::vector<DecisionRecord> records = restarted.Decisions(replica.uid, 1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].contention_class, "batch");
  EXPECT_EQ(records[0].workload, "analytics/Deployment/event-scan");
  EXPECT_THAT(records[0].prediction, HasSubstr("predicted from Deployment analytics/event-scan"));
  EXPECT_EQ(restarted.workload_predictions_used(), 1u);
}

TEST_F(ExtenderCoreTest, DecisionsAreServedWhileIngestRuns) {
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t seq = 1; seq <= 200; ++seq) {
      tv1::NodeReport r = TwoSocketNode("node-" + std::to_string(seq % 4), seq);
      AddPod(r, {.uid = "b" + std::to_string(seq % 4),
                 .name = "scan",
                 .labels = {{"workload-type", "batch"}}});
      ASSERT_TRUE(core_.Ingest(r).ok());
    }
    done = true;
  });
  int rounds = 0;
  const IncomingPod lc = LatencyCritical("a");
  while (!done.load() || rounds == 0) {
    std::vector<NodeDecision> d = Filter(lc, {"node-0", "node-1", "node-2", "node-3"});
    for (const NodeDecision& x : d) {
      // Either no telemetry yet (pass with the latency-critical blind score 3)
      // or the batch pod is seen (rejected).
      EXPECT_TRUE(x.has_telemetry ? !x.feasible : (x.feasible && x.score == 3));
    }
    ++rounds;
  }
  writer.join();
  for (const NodeDecision& x : Filter(lc, {"node-0", "node-1", "node-2", "node-3"})) {
    EXPECT_FALSE(x.feasible);
  }
}

// A large request is shared with helper threads: every decision is the one
// a single thread makes (and the same node is booked).
TEST(ExtenderCoreParallelTest, HelperThreadsDecideExactlyAsOneThread) {
  FakeClock clock;
  ExtenderCore one(ModelConfig{}, clock);
  ExtenderCore four(ModelConfig{}, clock, {.evaluation_threads = 4});
  EXPECT_EQ(one.evaluation_threads(), 1u);
  EXPECT_EQ(four.evaluation_threads(), 4u);
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) {
    names.push_back("node-" + std::to_string(i));
    if (i % 10 == 9) continue;  // no telemetry
    tv1::NodeReport r = TwoSocketNode(names.back());
    SetMeasured(r, static_cast<uint32_t>(i % 2), static_cast<uint64_t>(i % 25) << 20,
                static_cast<uint64_t>(i % 47) * 1'000'000'000);
    if (i % 3 == 0) {
      AddPod(
          r,
          {.uid = "b" + std::to_string(i), .name = "scan", .labels = {{"workload-type", "batch"}}});
    }
    if (i % 7 == 0) {
      AddPod(r, {.uid = "l" + std::to_string(i),
                 .name = "api",
                 .annotations = {{"neighborly.io/class", "latency-critical"}}});
    }
    ASSERT_TRUE(one.Ingest(r).ok());
    ASSERT_TRUE(four.Ingest(r).ok());
  }
  names.push_back("never-reported");
  const std::vector<std::string_view> views(names.begin(), names.end());
  IncomingPod pinned = LatencyCritical("pinned");
  pinned.qos = QosClass::kGuaranteed;
  pinned.cpu_request_millicores = 4000;
  pinned.wants_exclusive_cpus = true;
  const std::vector<IncomingPod> pods = {
      LatencyCritical("lc"), Pod("batch", {}, {{"workload-type", "batch"}}), Pod("web"), pinned};
  for (const IncomingPod& pod : pods) {
    for (bool prioritize : {false, true}) {
      std::vector<NodeDecision> a, b;
      if (prioritize) {
        one.Prioritize(pod, views, a);
        four.Prioritize(pod, views, b);
      } else {
        one.Filter(pod, views, a);
        four.Filter(pod, views, b);
      }
      ASSERT_EQ(a.size(), views.size());
      ASSERT_EQ(b.size(), views.size());
      for (size_t i = 0; i < views.size(); ++i) {
        SCOPED_TRACE(std::string(views[i]) + " for " + pod.name);
        EXPECT_EQ(a[i].feasible, b[i].feasible);
        EXPECT_EQ(a[i].reason, b[i].reason);
        EXPECT_EQ(a[i].score, b[i].score);
        EXPECT_EQ(a[i].cost, b[i].cost);
        EXPECT_EQ(a[i].confidence, b[i].confidence);
        EXPECT_EQ(a[i].numa_node, b[i].numa_node);
        EXPECT_EQ(a[i].l3_domain, b[i].l3_domain);
      }
    }
  }
  // Rejections and passes both occurred, so the comparison covered both.
  std::vector<NodeDecision> d;
  one.Filter(pods[0], views, d);
  EXPECT_GT(std::count_if(d.begin(), d.end(), [](const NodeDecision& x) { return !x.feasible; }),
            100);
  EXPECT_GT(std::count_if(d.begin(), d.end(), [](const NodeDecision& x) { return x.feasible; }),
            100);
  EXPECT_EQ(one.Decisions("", 100).size(), four.Decisions("", 100).size() + 1);
}

}  // namespace
}  // namespace neighborly::extender
