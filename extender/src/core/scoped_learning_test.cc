// Scoped learning (issue 15, finding 1): a node's report teaches about, releases
// bookings of and evicts only pods on that node; the scheduler teaches only when
// authenticated and never over what a pod's own node reported; what is
// persisted keeps those scopes. One test per attack of the finding, each
// against a real ExtenderCore (the gRPC and HTTP transports add nothing to the
// decision: ingest_limits_test.cc and main_test.cc cover them).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "extender/src/core/extender_core.h"
#include "extender/src/model/testing/report_builder.h"
#include "extender/src/state/pod_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using ::testing::HasSubstr;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

const std::map<std::string, std::string> kBatch = {{"neighborly.io/class", "batch"}};
const std::map<std::string, std::string> kLatencyCritical = {
    {"neighborly.io/class", "latency-critical"}};

IncomingPod Pod(const std::string& uid, std::map<std::string, std::string> annotations = {}) {
  IncomingPod pod;
  pod.uid = uid;
  pod.namespace_name = "ns";
  pod.name = uid;
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 1000;
  pod.memory_request_bytes = 1 << 30;
  pod.annotations = std::move(annotations);
  return pod;
}

class ScopedLearningTest : public ::testing::Test {
 protected:
  // Node `node` reports these pods (uid -> annotations), with the next sequence.
  absl::Status Report(
      ExtenderCore& core, const std::string& node,
      const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& pods) {
    tv1::NodeReport r = TwoSocketNode(node, ++sequence_[node]);
    for (const auto& [uid, annotations] : pods) {
      AddPod(r, {.uid = uid, .namespace_name = "ns", .name = uid, .annotations = annotations});
    }
    return core.Ingest(r);
  }
  // The class `core` uses for pod `uid` on `node` (from the node's own view).
  std::string ClassOn(ExtenderCore& core, const std::string& node, const std::string& uid) {
    std::optional<NodeSummary> n = core.Node(node);
    if (!n) return "no node";
    for (const PodSummary& p : n->pods) {
      if (p.uid == uid) return p.contention_class + "/" + p.class_source;
    }
    return "no pod";
  }
  // What `core` remembers of `uid` and who taught it, from its state file
  // ("latency-critical by node-a"). A scheduler request shows only what the
  // scheduler taught: a pod being scheduled runs on no node (issue 24).
  std::string Remembered(ExtenderCore& core, const std::string& uid) {
    const std::string path =
        ::testing::TempDir() + "/scoped-remembered-" + std::to_string(getpid()) + ".json";
    if (!core.SaveState(path).ok()) return "not saved";
    std::ifstream in(path);
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    std::filesystem::remove(path);
    if (!doc.is_object() || !doc.contains("pods")) return "no pods";
    for (const nlohmann::json& p : doc["pods"]) {
      if (p.value("uid", "") == uid) {
        return p.value("class", "") + " by " + p.value("node", std::string("the scheduler"));
      }
    }
    return "not remembered";
  }
  // The class a scheduler request for `uid` without annotations is given.
  std::string ClassForScheduler(ExtenderCore& core, const std::string& uid) {
    std::vector<NodeDecision> out;
    std::vector<std::string_view> nodes = {"node-a"};
    core.Filter(Pod(uid), nodes, out);
    std::vector<DecisionRecord> d = core.Decisions(uid, 1);
    return d.empty() ? "none" : d[0].contention_class + "/" + d[0].class_source;
  }

  std::map<std::string, uint64_t> sequence_;
  FakeClock clock_;
  ModelConfig config_ = PressureModelConfig();  // these tests pin down strict isolation
  ExtenderCore core_{config_, clock_, {.learn_from_scheduler = false}};
};

// Attack: node B reports node A's pod with a batch annotation, so that
// latency-critical pods are filtered off A. A's agent sees no annotations
// (no CRI) and relies on what was learned.
TEST_F(ScopedLearningTest, ANodeCannotReclassifyAnotherNodesPod) {
  ASSERT_TRUE(Report(core_, "node-a", {{"victim", kLatencyCritical}}).ok());
  ASSERT_TRUE(Report(core_, "node-b", {{"victim", kBatch}}).ok());  // the report itself stands
  EXPECT_EQ(core_.foreign_pod_claims(), 1u);
  // A reports the pod again, now without annotations: still latency-critical.
  ASSERT_TRUE(Report(core_, "node-a", {{"victim", {}}}).ok());
  EXPECT_EQ(ClassOn(core_, "node-a", "victim"), "latency-critical/remembered");
  EXPECT_EQ(Remembered(core_, "victim"), "latency-critical by node-a");
  // A batch pod is still kept off node-a: its latency-critical pod is known.
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core_.Filter(Pod("scan", kBatch), nodes, out);
  EXPECT_FALSE(out[0].feasible);
  EXPECT_THAT(out[0].reason, HasSubstr("latency-critical pod ns/victim"));
}

// Attack: node B teaches about a pod of node A that nothing was learned about
// yet (A's agent has no CRI): A's own profile never uses B's teaching.
TEST_F(ScopedLearningTest, AnotherNodesTeachingNeverChangesHowANodeIsJudged) {
  ASSERT_TRUE(Report(core_, "node-a", {{"quiet", {}}}).ok());
  ASSERT_TRUE(Report(core_, "node-b", {{"quiet", kBatch}}).ok());  // an unknown UID: B's now
  ASSERT_TRUE(Report(core_, "node-a", {{"quiet", {}}}).ok());
  EXPECT_EQ(ClassOn(core_, "node-a", "quiet"), "standard/default");
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core_.Filter(Pod("article", kLatencyCritical), nodes, out);
  EXPECT_TRUE(out[0].feasible) << out[0].reason;
}

// A pod the scheduler taught about becomes its node's when the node reports
// it (even without annotations): no other node can claim it afterwards.
TEST_F(ScopedLearningTest, ThePodsNodeClaimsWhatTheSchedulerTaught) {
  ExtenderCore core(config_, clock_, {.learn_from_scheduler = true});
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core.Filter(Pod("article", kLatencyCritical), nodes, out);
  ASSERT_TRUE(Report(core, "node-a", {{"article", {}}}).ok());
  ASSERT_TRUE(Report(core, "node-b", {{"article", kBatch}}).ok());
  EXPECT_EQ(core.foreign_pod_claims(), 1u);
  EXPECT_EQ(Remembered(core, "article"), "latency-critical by node-a");
  ASSERT_TRUE(Report(core, "node-a", {{"article", {}}}).ok());
  EXPECT_EQ(ClassOn(core, "node-a", "article"), "latency-critical/remembered");
}

// Attack: node B names a pending pod that the scheduler booked on node A, with
// a batch annotation, to get it rejected everywhere and release its booking.
TEST_F(ScopedLearningTest, ANodeCannotClaimOrReleaseAPodBookedOnAnotherNode) {
  ExtenderCore core(config_, clock_, {.learn_from_scheduler = true});
  ASSERT_TRUE(Report(core, "node-a", {}).ok());
  ASSERT_TRUE(Report(core, "node-b", {}).ok());
  std::vector<NodeDecision> out;
  std::vector<std::string_view> only_a = {"node-a"};
  core.Prioritize(Pod("pending", kLatencyCritical), only_a, out);
  ASSERT_EQ(core.bookings(), 1u);

  ASSERT_TRUE(Report(core, "node-b", {{"pending", kBatch}}).ok());
  EXPECT_EQ(core.bookings(), 1u) << "node-b's report released node-a's booking";
  EXPECT_EQ(core.foreign_pod_claims(), 1u);
  EXPECT_EQ(ClassForScheduler(core, "pending"), "latency-critical/remembered");

  // The pod lands on node-a: its report takes the pod, and once the pod is
  // measured releases the booking (until then the booking carries its load).
  ASSERT_TRUE(Report(core, "node-a", {{"pending", {}}}).ok());
  EXPECT_EQ(core.bookings(), 1u);
  EXPECT_EQ(ClassOn(core, "node-a", "pending"), "latency-critical/remembered");
  tv1::NodeReport measured = TwoSocketNode("node-a", ++sequence_["node-a"]);
  AddPod(measured, {.uid = "pending",
                    .namespace_name = "ns",
                    .name = "pending",
                    .llc_bytes = 4 << 20,
                    .membw_bytes_per_second = 1'000'000'000});
  ASSERT_TRUE(core.Ingest(measured).ok());
  EXPECT_EQ(core.bookings(), 0u);
  EXPECT_EQ(ClassOn(core, "node-a", "pending"), "latency-critical/remembered");
}

// Issue 24, finding 4: node B names a pending pod's UID before any node runs
// it (nothing booked it yet: a pod kube-scheduler is still filtering), with
// forged hints and a batch class. B's claim stands for B's own profile, but
// the pod's scheduling requests are decided from the pod alone: before, the
// claim refused it on every node for as long as it was pending.
TEST_F(ScopedLearningTest, AClaimOfAPendingPodChangesNothingForItsScheduling) {
  ASSERT_TRUE(Report(core_, "node-a", {}).ok());
  ASSERT_TRUE(Report(core_, "node-b", {{"pending",
                                        {{"neighborly.io/class", "batch"},
                                         {"neighborly.io/membw-bytes-per-second", "900G"},
                                         {"neighborly.io/llc-bytes", "1Gi"}}}})
                  .ok());
  EXPECT_EQ(Remembered(core_, "pending"), "batch by node-b");
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core_.Filter(Pod("pending"), nodes, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].feasible) << out[0].reason;
  EXPECT_EQ(ClassForScheduler(core_, "pending"), "standard/default");
  // Its own annotations still decide it.
  core_.Filter(Pod("pending", kLatencyCritical), nodes, out);
  EXPECT_TRUE(out[0].feasible) << out[0].reason;
  EXPECT_EQ(core_.Decisions("pending", 1)[0].contention_class, "latency-critical");
}

// Attack: node B reports hundreds of new UIDs to evict everything learned.
TEST_F(ScopedLearningTest, ANodeFloodingNewUidsEvictsOnlyItsOwnEntries) {
  ExtenderCore core(config_, clock_,
                    {.max_remembered_pods = 1000,
                     .max_remembered_pods_per_node = 100,
                     .learn_from_scheduler = false});
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> a_pods;
  for (int i = 0; i < 50; ++i) a_pods.push_back({"a-" + std::to_string(i), kLatencyCritical});
  ASSERT_TRUE(Report(core, "node-a", a_pods).ok());
  for (int round = 0; round < 30; ++round) {
    std::vector<std::pair<std::string, std::map<std::string, std::string>>> flood;
    for (int i = 0; i < 200; ++i) {
      flood.push_back({"b-" + std::to_string(round) + "-" + std::to_string(i), kBatch});
    }
    ASSERT_TRUE(Report(core, "node-b", flood).ok());
  }
  EXPECT_LE(core.remembered_pods(), 150u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(Remembered(core, "a-" + std::to_string(i)), "latency-critical by node-a") << i;
  }
}

// The registry on its own: when it is full, an owner below its fair share
// evicts the biggest owner's oldest entry, never a small owner's.
TEST(PodRegistryPartitionTest, AFullRegistryNeverPushesAnOwnerBelowItsFairShare) {
  PodRegistry registry(100);  // one shard of 100
  const absl::Time t = absl::FromUnixSeconds(1000);
  RememberedPod lc{ContentionClass::kLatencyCritical, ClassSource::kAnnotation, {}};
  for (int i = 0; i < 30; ++i) registry.Remember("node-a", "a" + std::to_string(i), lc, t);
  for (int i = 0; i < 1000; ++i) {
    registry.Remember("node-b", "b" + std::to_string(i), lc, t + absl::Seconds(i));
  }
  EXPECT_EQ(registry.size(), 100u);
  EXPECT_EQ(registry.size_of("node-a"), 30u);  // below its fair share of 50: untouched
  EXPECT_EQ(registry.size_of("node-b"), 70u);
  // A third owner takes from the biggest (node-b), not from node-a.
  for (int i = 0; i < 40; ++i) registry.Remember("node-c", "c" + std::to_string(i), lc, t);
  EXPECT_EQ(registry.size_of("node-a"), 30u);
  EXPECT_EQ(registry.size(), 100u);
  EXPECT_GE(registry.size_of("node-c"), 33u);
}

// Attack: an anonymous POST /filter (no client certificate) reclassifies a pod.
TEST_F(ScopedLearningTest, AnUnauthenticatedSchedulerTeachesNothing) {
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core_.Filter(Pod("victim", kBatch), nodes, out);
  EXPECT_EQ(core_.remembered_pods(), 0u);
  ASSERT_TRUE(Report(core_, "node-a", {{"victim", {}}}).ok());
  EXPECT_EQ(ClassOn(core_, "node-a", "victim"), "standard/default");
}

// An authenticated scheduler teaches pending pods, but never over what the
// pod's own node reported.
TEST_F(ScopedLearningTest, TheSchedulerNeverOverridesWhatThePodsNodeReported) {
  ExtenderCore core(config_, clock_, {.learn_from_scheduler = true});
  ASSERT_TRUE(Report(core, "node-a", {{"victim", kLatencyCritical}}).ok());
  std::vector<NodeDecision> out;
  std::vector<std::string_view> nodes = {"node-a"};
  core.Filter(Pod("victim", kBatch), nodes, out);
  ASSERT_TRUE(Report(core, "node-a", {{"victim", {}}}).ok());
  EXPECT_EQ(ClassOn(core, "node-a", "victim"), "latency-critical/remembered");
  // A pod no node has reported is learned from the scheduler.
  core.Filter(Pod("fresh", kBatch), nodes, out);
  EXPECT_EQ(ClassForScheduler(core, "fresh"), "batch/remembered");
}

// Persisted state keeps the scopes: after a restart, node B still cannot
// reclassify node A's pod, and the file never held B's claim.
TEST_F(ScopedLearningTest, PersistedStateKeepsOwnersAndCannotBePoisoned) {
  const std::string dir = ::testing::TempDir() + "/scoped-learning-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/pods.json";
  ASSERT_TRUE(Report(core_, "node-a", {{"victim", kLatencyCritical}}).ok());
  ASSERT_TRUE(Report(core_, "node-b", {{"victim", kBatch}}).ok());
  ASSERT_TRUE(core_.SaveState(path).ok());
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"node\":\"node-a\""));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("\"batch\"")));

  ExtenderCore restarted(config_, clock_, {.learn_from_scheduler = false});
  ASSERT_TRUE(restarted.LoadState(path).ok());
  sequence_.clear();
  ASSERT_TRUE(Report(restarted, "node-b", {{"victim", kBatch}}).ok());
  EXPECT_EQ(restarted.foreign_pod_claims(), 1u);
  ASSERT_TRUE(Report(restarted, "node-a", {{"victim", {}}}).ok());
  EXPECT_EQ(ClassOn(restarted, "node-a", "victim"), "latency-critical/remembered");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

// The per-node quota is for nodes: what the scheduler taught (and state files
// written before owners existed) is bounded by the capacity alone.
TEST(PodRegistryPartitionTest, TheSchedulerHasNoPerNodeQuota) {
  PodRegistry registry(10'000, 100);
  RememberedPod batch{ContentionClass::kBatch, ClassSource::kAnnotation, {}};
  for (int i = 0; i < 5000; ++i) {
    registry.Remember("u" + std::to_string(i), batch, absl::FromUnixSeconds(i));
  }
  EXPECT_EQ(registry.size_of(PodRegistry::kScheduler), 5000u);
  for (int i = 0; i < 500; ++i) {
    registry.Remember("node-a", "a" + std::to_string(i), batch, absl::FromUnixSeconds(i));
  }
  EXPECT_LE(registry.size_of("node-a"), 100u + 10u);  // per shard, rounded up
  EXPECT_EQ(registry.size_of(PodRegistry::kScheduler), 5000u);
}

}  // namespace
}  // namespace neighborly::extender
