// Issue 12's scenarios, end to end through the real pieces in-process: the
// simulator turns scenario YAML into the NodeReports an agent would send, the
// extender core ingests them on a fake clock, and kube-scheduler-shaped JSON
// goes through the HTTP codec to /filter and /prioritize decisions. Each test
// also runs the model the way it was before prediction existed, where that
// shows the incident the feature prevents.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/clock.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/http/extender_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::extender {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Two sockets of 8 CPUs, one NUMA node, 25 MiB L3 and 50 GB/s each.
std::string NodeYaml(const std::string& name, const std::string& pods,
                     const std::string& extra = "") {
  return absl::StrCat(R"(
- name: )",
                      name, R"(
  kubelet: {cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node}
  numaNodes:
  - {id: 0, cpus: "0-7", memoryBytes: 34359738368, peakMembwBytesPerSecond: 50000000000}
  - {id: 1, cpus: "8-15", memoryBytes: 34359738368, peakMembwBytesPerSecond: 50000000000}
  l3Domains:
  - {id: 0, cpus: "0-7", sizeBytes: 26214400}
  - {id: 1, cpus: "8-15", sizeBytes: 26214400}
)",
                      extra, "  pods:", pods.empty() ? " []\n" : "\n", pods);
}

std::string ScenarioYaml(const std::vector<std::string>& nodes) {
  std::string out = "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:";
  for (const std::string& n : nodes) out += n;
  return out;
}

const char kArticle[] =
    "  - {uid: article-1, namespace: content, name: article-service-5d8f7-abcde, qosClass: "
    "Guaranteed, labels: {app: article-service, pod-template-hash: 5d8f7}, annotations: "
    "{neighborly.io/class: latency-critical}, cpuRequestMillicores: 2000, memoryRequestBytes: "
    "4294967296, exclusiveCpus: \"2-3\", llcOccupancyBytes: 19188940, membwTotalBytesPerSecond: "
    "2800000000, llcMissesPerKiloInstructions: 1.5}\n";

// A streaming pod of the analytics scan, unlabelled: only measurement says what it is.
std::string ScanPod(const std::string& uid, const std::string& suffix, uint64_t membw) {
  return absl::StrCat("  - {uid: ", uid, ", namespace: analytics, name: event-scan-7d9f8c6b5-",
                      suffix,
                      ", qosClass: Burstable, labels: {pod-template-hash: 7d9f8c6b5}, "
                      "cpuRequestMillicores: 4000, llcOccupancyBytes: 32925286, "
                      "membwTotalBytesPerSecond: ",
                      membw, ", llcMissesPerKiloInstructions: 30}\n");
}

const char kSmallWeb[] =
    "  - {uid: web-1, namespace: shop, name: web-6c8d9-qwxyz, qosClass: Burstable, labels: "
    "{pod-template-hash: 6c8d9}, cpuRequestMillicores: 500, llcOccupancyBytes: 2097152, "
    "membwTotalBytesPerSecond: 300000000, llcMissesPerKiloInstructions: 1}\n";

json PodJson(const std::string& name, const std::string& ns, json labels, json owner,
             json resources, json annotations = json::object()) {
  json metadata = {{"name", name},
                   {"namespace", ns},
                   {"uid", "incoming-" + name},
                   {"labels", std::move(labels)},
                   {"annotations", std::move(annotations)}};
  if (!owner.is_null()) metadata["ownerReferences"] = json::array({std::move(owner)});
  return {{"metadata", std::move(metadata)},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"resources", resources}}})}}}};
}

json Owner(const std::string& kind, const std::string& name) {
  return {{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", name}, {"controller", true}};
}

class PredictionScenarioTest : public ::testing::Test {
 protected:
  // These scenarios pin down the strict pressure model (issue 22 scenarios: below).
  void Start(const std::vector<std::string>& nodes, ModelConfig config = PressureModelConfig()) {
    core_ = std::make_unique<ExtenderCore>(config, clock_);
    Replace(nodes, "boot-1");
  }
  // (Re)starts the simulated agents of these nodes, e.g. with new measurements.
  void Replace(const std::vector<std::string>& nodes, const std::string& boot_id) {
    absl::StatusOr<agent::Scenario> s = agent::ParseScenario(ScenarioYaml(nodes), "test.yaml");
    ASSERT_TRUE(s.ok()) << s.status();
    for (const auto& n : s->nodes) {
      agents_.insert_or_assign(n.node_name(), std::make_unique<agent::SimulatedNode>(n, boot_id));
    }
  }
  // One report window from these nodes (all when empty), then the clock moves on.
  void Tick(int windows = 1, const std::vector<std::string>& only = {}) {
    for (int i = 0; i < windows; ++i) {
      for (auto& [name, node] : agents_) {
        if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
        absl::Status s =
            core_->Ingest(node->NextReport(clock_.Now() - absl::Seconds(1), absl::Seconds(1)));
        ASSERT_TRUE(s.ok()) << s;
      }
      clock_.Advance(absl::Seconds(1));
    }
  }
  // Decodes the pod as kube-scheduler sends it, then asks the verb.
  std::vector<NodeDecision> Ask(const std::string& verb, const json& pod,
                                const std::vector<std::string>& names) {
    const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
    body_.Clear();
    body_.Assign(args.dump());
    body_.Seal();
    ExtenderArgs decoded;
    absl::Status s = codec_.Decode(body_, decoded);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<NodeDecision> out;
    if (verb == "filter") {
      core_->Filter(decoded.pod, decoded.node_names, out);
    } else {
      core_->Prioritize(decoded.pod, decoded.node_names, out);
    }
    return out;
  }
  std::string LastPrediction(const json& pod) {
    std::vector<DecisionRecord> r = core_->Decisions(pod["metadata"]["uid"].get<std::string>(), 1);
    return r.empty() ? "" : r[0].prediction;
  }

  FakeClock clock_{absl::FromUnixSeconds(1'790'000'000)};
  std::unique_ptr<ExtenderCore> core_;
  std::map<std::string, std::unique_ptr<agent::SimulatedNode>> agents_;
  ExtenderCodec codec_;
  RequestBody body_;
};

const json kScanResources = {{"requests", {{"cpu", "4"}}}};
const json kLcResources = {{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}};
const json kLcHints = {{"neighborly.io/class", "latency-critical"},
                       {"neighborly.io/llc-bytes", "18Mi"},
                       {"neighborly.io/membw-bytes-per-second", "2.8G"}};

// The seed's incident: replica 2 of an unlabelled scan whose replica 1 was
// measured at 22.1 GB/s must not be booked beside the article service.
TEST_F(PredictionScenarioTest, ReplicaOfAMeasuredUnlabelledAggressorKeepsOffLatencyCriticalNode) {
  const std::vector<std::string> nodes = {
      NodeYaml("scan-node", ScanPod("scan-1", "x2k4q", 22'100'000'000)),
      NodeYaml("article-node", kArticle), NodeYaml("web-node", kSmallWeb)};
  const json replica2 =
      PodJson("event-scan-7d9f8c6b5-m7pqz", "analytics", {{"pod-template-hash", "7d9f8c6b5"}},
              Owner("ReplicaSet", "event-scan-7d9f8c6b5"), kScanResources);
  const std::vector<std::string> names = {"article-node", "web-node"};

  // Before: with profiles off, replica 2 is a "standard" pod and may go beside the article service.
  ModelConfig before = PressureModelConfig();
  before.workloads.enabled = false;
  Start(nodes, before);
  Tick(40);
  EXPECT_TRUE(Ask("filter", replica2, names)[0].feasible);

  Start(nodes);
  Tick(40);
  const std::vector<NodeDecision> filter = Ask("filter", replica2, names);
  EXPECT_FALSE(filter[0].feasible);
  EXPECT_THAT(filter[0].reason,
              HasSubstr("isolation: batch pod would run beside latency-critical"));
  EXPECT_TRUE(filter[1].feasible);
  Ask("prioritize", replica2, names);
  EXPECT_THAT(
      LastPrediction(replica2),
      StartsWith(
          "predicted from Deployment analytics/event-scan, 1 replica on 1 node, 40 windows"));
  EXPECT_THAT(LastPrediction(replica2), HasSubstr("is an aggressor"));
  std::optional<WorkloadView> w = core_->Workload("analytics/Deployment/event-scan");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->prediction.aggressor);
}

// A first-ever unlabelled 16-CPU Burstable pod is not predicted as a 1 GB/s web pod.
TEST_F(PredictionScenarioTest, FirstSixteenCpuBurstablePodIsNotASmallWebPod) {
  Start({NodeYaml("quiet", kSmallWeb)});
  Tick(3);
  const json big = PodJson("crunch-x2k4q", "ml", json::object(), json(),
                           {{"requests", {{"cpu", "8"}}}, {"limits", {{"cpu", "16"}}}});
  const json small = PodJson("api-x2k4q", "ml", json::object(), json(),
                             {{"requests", {{"cpu", "500m"}}}, {"limits", {{"cpu", "1"}}}});
  // (The small one first: a /filter that passes one node books the pod there.)
  const NodeDecision s = Ask("filter", small, {"quiet"})[0];
  const NodeDecision b = Ask("filter", big, {"quiet"})[0];
  EXPECT_THAT(LastPrediction(big),
              HasSubstr("prior for a standard pod of 16.0 CPUs (Burstable): 16.0 GB/s"));
  EXPECT_GT(b.membw_utilisation, 0.15);  // 16 GB/s over two 50 GB/s sockets
  EXPECT_LT(s.membw_utilisation, 0.02);
}

// Pods listed but not yet measured count at their predicted footprint: here a
// warming-up replica whose sibling was measured at 12 GB/s on another node.
TEST_F(PredictionScenarioTest, WarmUpPodsCountAtTheirPredictedLoad) {
  auto on_numa0 = [](const std::string& uid, const std::string& name, const std::string& measured) {
    return absl::StrCat("  - {uid: ", uid, ", namespace: etl, name: ", name,
                        ", qosClass: Burstable, labels: {pod-template-hash: 5f6g7}, "
                        "cpuRequestMillicores: 2000, memoryBytesByNuma: {\"0\": 4294967296}",
                        measured, "}\n");
  };
  const std::string busy =
      ", llcOccupancyBytes: 4194304, membwTotalBytesPerSecond: 12000000000, "
      "llcMissesPerKiloInstructions: 2";
  const std::vector<std::string> nodes = {
      NodeYaml("warm", on_numa0("a", "ingest-5f6g7-aaaaa", busy) +
                           on_numa0("b", "ingest-5f6g7-bbbbb", busy) +
                           on_numa0("c", "ingest-5f6g7-ccccc", busy) +
                           on_numa0("d", "ingest-5f6g7-ddddd", "")),  // just started
      NodeYaml("other", on_numa0("e", "ingest-5f6g7-eeeee", busy))};
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);

  ModelConfig before = PressureModelConfig();
  before.workloads.enabled = false;
  before.priors.scale_with_cpus = false;
  Start(nodes, before);
  Tick(40);
  EXPECT_TRUE(Ask("filter", lc, {"warm"})[0].feasible) << "the warm-up pod was invisible before";

  Start(nodes);
  Tick(40);
  const NodeDecision d = Ask("filter", lc, {"warm"})[0];
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("> 80% on NUMA node 0"));
  std::optional<NodeSummary> warm = core_->Node("warm");
  ASSERT_TRUE(warm);
  EXPECT_NEAR(warm->numa_nodes[0].membw_utilisation, 48.0 / 50, 0.08);
  // Its sibling's profile is confident: three replicas on "warm" weigh no
  // more than the one on "other" (the per-node cap), about 2 windows a tick.
  std::optional<WorkloadView> ingest = core_->Workload("etl/Deployment/ingest");
  ASSERT_TRUE(ingest);
  EXPECT_EQ(ingest->prediction.confidence, 1.0);
  EXPECT_EQ(ingest->prediction.nodes, 2);
  EXPECT_EQ(ingest->prediction.replicas, 4);
}

// Four streamers, each below the aggressor share, are judged together.
TEST_F(PredictionScenarioTest, FourSubThresholdStreamersAreJudgedTogether) {
  std::string pods;
  for (int i = 0; i < 4; ++i) {
    pods +=
        absl::StrCat("  - {uid: s", i, ", namespace: etl, name: shard-", i,
                     ", qosClass: Burstable, labels: {app: shard}, cpuRequestMillicores: 1000, "
                     "memoryBytesByNuma: {\"0\": 1073741824}, llcOccupancyBytes: 2097152, "
                     "membwTotalBytesPerSecond: 8000000000, llcMissesPerKiloInstructions: 20}\n");
  }
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  ModelConfig before = PressureModelConfig();
  before.aggregate_streamers = false;
  Start({NodeYaml("streamers", pods)}, before);
  Tick(3);
  EXPECT_TRUE(Ask("filter", lc, {"streamers"})[0].feasible) << "each alone passes";

  Start({NodeYaml("streamers", pods)});
  Tick(3);
  const NodeDecision d = Ask("filter", lc, {"streamers"})[0];
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason,
              HasSubstr("4 streaming pods on NUMA node 0 (together 32.0 GB/s, 64% of its peak)"));
}

// A node without RDT, whose streamer is seen only through LLC misses, ranks
// below a measured quiet node for a latency-critical pod.
TEST_F(PredictionScenarioTest, NodeWithoutRdtRanksBelowAMeasuredQuietNode) {
  const std::string streamer =
      "  - {uid: z1, namespace: etl, name: zip-x2k4q, qosClass: Burstable, cpuRequestMillicores: "
      "2000, llcOccupancyBytes: 8388608, membwTotalBytesPerSecond: 8000000000, "
      "llcMissesPerKiloInstructions: 25}\n";
  const std::string no_rdt =
      "  capabilities: {resctrlOccupancy: \"no resctrl\", resctrlMbmTotal: \"no resctrl\", "
      "resctrlMbmLocal: \"no resctrl\"}\n";
  Start({NodeYaml("blind", streamer, no_rdt), NodeYaml("measured", kSmallWeb)});
  Tick(3);
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  const std::vector<NodeDecision> d = Ask("prioritize", lc, {"blind", "measured"});
  EXPECT_LT(d[0].score, d[1].score);
  EXPECT_GT(d[0].unmeasured_penalty, 0);
  // The streamer's bandwidth was estimated from its misses, not assumed to be a web pod's.
  std::optional<NodeSummary> blind = core_->Node("blind");
  ASSERT_TRUE(blind);
  EXPECT_GT(blind->numa_nodes[0].membw_utilisation + blind->numa_nodes[1].membw_utilisation,
            7.9e9 / 50e9);
}

// A scan with a long quiet phase stays an aggressor for isolation.
TEST_F(PredictionScenarioTest, AggressorVerdictDoesNotFlapOverAPhasedWorkload) {
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  for (bool profiles : {false, true}) {
    ModelConfig config = PressureModelConfig();
    config.workloads.enabled = profiles;
    Start({NodeYaml("scan-node", ScanPod("scan-1", "x2k4q", 22'100'000'000))}, config);
    Tick(60);  // busy
    EXPECT_FALSE(Ask("filter", lc, {"scan-node"})[0].feasible);
    // The same pod, now in a quiet phase (0.5 GB/s, its L3 mostly released).
    Replace({NodeYaml("scan-node", absl::StrReplaceAll(ScanPod("scan-1", "x2k4q", 500'000'000),
                                                       {{"32925286", "2097152"}}))},
            "boot-2");
    Tick(120);
    const NodeDecision d = Ask("filter", lc, {"scan-node"})[0];
    if (!profiles) {
      EXPECT_TRUE(d.feasible) << "per-window verdicts flap: the reason this test exists";
      continue;
    }
    EXPECT_FALSE(d.feasible);
    EXPECT_THAT(d.reason, HasSubstr("its workload analytics/Deployment/event-scan"));
  }
}

// Stale telemetry fades load to neutral, but isolation keeps the residents.
TEST_F(PredictionScenarioTest, IsolationHoldsAtSixtyOneSecondsOfStaleness) {
  const std::string batch =
      "  - {uid: b1, namespace: etl, name: nightly-x2k4q, qosClass: Burstable, labels: "
      "{workload-type: batch}, cpuRequestMillicores: 2000, llcOccupancyBytes: 4194304, "
      "membwTotalBytesPerSecond: 3000000000}\n";
  Start({NodeYaml("batch-node", batch), NodeYaml("article-node", kArticle),
         NodeYaml("fresh", kSmallWeb)});
  Tick(1);
  clock_.Advance(absl::Seconds(60));
  Tick(1, {"fresh"});  // 61 s since the other two reported
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  std::vector<NodeDecision> d = Ask("filter", lc, {"batch-node", "fresh"});
  EXPECT_EQ(d[0].confidence, 0);
  EXPECT_FALSE(d[0].feasible);
  EXPECT_THAT(d[0].reason, HasSubstr("beside batch pod etl/nightly-x2k4q"));
  const json scan =
      PodJson("report-x2k4q", "etl", {{"workload-type", "batch"}}, json(), kScanResources);
  EXPECT_FALSE(Ask("filter", scan, {"article-node"})[0].feasible);
  // A latency-critical pod scores a blind node below neutral; a batch pod neutrally.
  d = Ask("prioritize", lc, {"article-node"});
  EXPECT_EQ(d[0].score, 3);
  EXPECT_EQ(Ask("prioritize", scan, {"batch-node"})[0].score, 5);
  // Much later, without reports, the node's residents are forgotten: fail open.
  clock_.Advance(absl::Minutes(10));
  EXPECT_TRUE(Ask("filter", lc, {"batch-node"})[0].feasible);
}

// Issue 22: the four failures of the pressure model on held-out fleets, each
// with today's (default) model and, where a config can reproduce it, the
// pressure model it replaced (PressureModelConfig) showing the failure.
class HarmScenarioTest : public PredictionScenarioTest {
 protected:
  static std::string CachePod(const std::string& uid, const std::string& suffix, uint64_t llc,
                              double mpki) {
    return absl::StrCat(
        "  - {uid: ", uid, ", namespace: shop, name: cache-6f7d8-", suffix,
        ", qosClass: Burstable, labels: {pod-template-hash: 6f7d8}, annotations: "
        "{neighborly.io/class: latency-critical}, cpuRequestMillicores: 1000, llcOccupancyBytes: ",
        llc, ", membwTotalBytesPerSecond: 1500000000, llcMissesPerKiloInstructions: ", mpki,
        ", ipc: 1.8}\n");
  }
  static json CacheReplica() {
    return PodJson("cache-6f7d8-zzzzz", "shop", {{"pod-template-hash", "6f7d8"}},
                   {{"apiVersion", "apps/v1"},
                    {"kind", "ReplicaSet"},
                    {"name", "cache-6f7d8"},
                    {"controller", true}},
                   kLcResources, {{"neighborly.io/class", "latency-critical"}});
  }
  // Two pinned databases leaving 4 free CPUs on NUMA node 0 (4-7) and none on 1.
  static std::string PinnedDatabases() {
    return "  - {uid: db-1, namespace: data, name: pg-0, qosClass: Guaranteed, "
           "cpuRequestMillicores: 8000, exclusiveCpus: \"8-15\", llcOccupancyBytes: 2000000, "
           "membwTotalBytesPerSecond: 500000000}\n"
           "  - {uid: db-2, namespace: data, name: pg-1, qosClass: Guaranteed, "
           "cpuRequestMillicores: 4000, exclusiveCpus: \"0-3\", llcOccupancyBytes: 2000000, "
           "membwTotalBytesPerSecond: 500000000}\n";
  }
  // Three labelled scans at 14 GB/s each: a latency-critical pod is refused there.
  static std::string ThreeStreamers() {
    std::string out;
    for (const char* n : {"s1", "s2", "s3"}) {
      absl::StrAppend(&out, "  - {uid: ", n, ", namespace: etl, name: scan-", n,
                      ", qosClass: Burstable, labels: {workload-type: batch}, "
                      "cpuRequestMillicores: 2000, llcOccupancyBytes: 8000000, "
                      "membwTotalBytesPerSecond: 14000000000, llcMissesPerKiloInstructions: 30}\n");
    }
    return out;
  }
  // A Guaranteed pod of 4 whole CPUs (pinned on a static node).
  static json PinnedPod(const std::string& name, json annotations = json::object()) {
    return PodJson(name, "shop", json::object(), json(),
                   {{"requests", {{"cpu", "4"}, {"memory", "1Gi"}}},
                    {"limits", {{"cpu", "4"}, {"memory", "1Gi"}}}},
                   std::move(annotations));
  }
  const NodeDecision& On(const std::vector<NodeDecision>& d, const std::vector<std::string>& names,
                         const std::string& node) {
    return d[static_cast<size_t>(std::find(names.begin(), names.end(), node) - names.begin())];
  }
};

// 1. Crowded caches: three replicas of a 24 MB cache service share both L3s
// of one node (8-12 MB each measured: what they got, not what they need).
// Their working set is known from a replica that had room.
TEST_F(HarmScenarioTest, CrowdedCacheIsJudgedByDemandNotOccupancy) {
  const std::vector<std::string> names = {"crowded", "roomy", "quiet"};
  const std::vector<std::string> nodes = {
      NodeYaml("crowded", CachePod("c1", "aaaaa", 11'000'000, 4) +
                              CachePod("c2", "bbbbb", 11'000'000, 4) +
                              CachePod("c3", "ccccc", 11'000'000, 4)),
      NodeYaml("roomy", CachePod("c4", "ddddd", 24'000'000, 1)), NodeYaml("quiet", kSmallWeb)};
  for (const bool pressure : {true, false}) {
    Start(nodes, pressure ? PressureModelConfig() : ModelConfig{});
    Tick(5);
    const std::vector<NodeDecision> d = Ask("prioritize", CacheReplica(), names);
    if (pressure) {  // the failure: the crowded node is a candidate like any other
      EXPECT_TRUE(On(d, names, "crowded").feasible);
    } else {
      EXPECT_FALSE(On(d, names, "crowded").feasible) << On(d, names, "crowded").score;
      EXPECT_THAT(On(d, names, "crowded").reason, StartsWith("interference:"));
      EXPECT_TRUE(On(d, names, "quiet").feasible);
      EXPECT_GE(On(d, names, "quiet").score, 8);
    }
  }
}

// 2. A victim is not an aggressor: an unannotated service squeezed by a
// streamer misses more and moves more bytes (2.8 -> 14 GB/s, 28 % of the
// controller) while its IPC falls; its next replica stays standard, not batch.
TEST_F(HarmScenarioTest, SqueezedServiceIsAVictimNotAnAggressor) {
  auto catalog = [](const std::string& uid, const std::string& suffix, double ipc, double mpki,
                    uint64_t membw) {
    return absl::StrCat("  - {uid: ", uid, ", namespace: shop, name: catalog-5b6c7-", suffix,
                        ", qosClass: Burstable, labels: {pod-template-hash: 5b6c7}, "
                        "cpuRequestMillicores: 2000, llcOccupancyBytes: 18000000, "
                        "membwTotalBytesPerSecond: ",
                        membw, ", llcMissesPerKiloInstructions: ", mpki, ", ipc: ", ipc, "}\n");
  };
  Start({NodeYaml("solo", catalog("k1", "aaaaa", 2.1, 1.5, 2'800'000'000))});
  Tick(12);  // its uncontended baseline
  agents_.clear();
  Replace({NodeYaml("solo", catalog("k1", "aaaaa", 2.1, 1.5, 2'800'000'000)),
           NodeYaml("squeezed", catalog("k2", "bbbbb", 1.3, 4.4, 14'000'000'000) +
                                    ScanPod("s1", "x2k4q", 20'000'000'000))},
          "boot-2");
  Tick(3);
  const json replica =
      PodJson("catalog-5b6c7-zzzzz", "shop", {{"pod-template-hash", "5b6c7"}},
              {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "catalog-5b6c7"},
               {"controller", true}},
              {{"requests", {{"cpu", "2"}}}});
  Ask("filter", replica, {"solo", "squeezed"});
  const std::vector<DecisionRecord> r = core_->Decisions("incoming-catalog-5b6c7-zzzzz", 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].contention_class, "standard") << r[0].prediction;
  // The streamer beside it is still what it is.
  const json scan = PodJson("event-scan-7d9f8c6b5-zzzzz", "analytics",
                            {{"pod-template-hash", "7d9f8c6b5"}},
                            {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"},
                             {"name", "event-scan-7d9f8c6b5"}, {"controller", true}},
                            kScanResources);
  Ask("filter", scan, {"solo", "squeezed"});
  const std::vector<DecisionRecord> s = core_->Decisions("incoming-event-scan-7d9f8c6b5-zzzzz", 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].contention_class, "batch") << s[0].prediction;
}

// 3. When every node holds both classes, class isolation refuses a
// latency-critical pod everywhere and it stays Pending though the default
// scheduler would run it; predicted harm (and the least-harm fallback) runs it.
TEST_F(HarmScenarioTest, MixedFleetDoesNotStrandALatencyCriticalPod) {
  auto mixed = [](const std::string& n) {
    return NodeYaml(
        n, absl::StrCat("  - {uid: b-", n, ", namespace: etl, name: rollup-", n,
                        ", qosClass: Burstable, labels: {workload-type: batch}, "
                        "cpuRequestMillicores: 2000, llcOccupancyBytes: 6000000, "
                        "membwTotalBytesPerSecond: 4000000000, llcMissesPerKiloInstructions: 20}\n"
                        "  - {uid: l-",
                        n, ", namespace: shop, name: api-", n,
                        ", qosClass: Burstable, annotations: {neighborly.io/class: "
                        "latency-critical}, cpuRequestMillicores: 1000, llcOccupancyBytes: "
                        "4000000, membwTotalBytesPerSecond: 800000000, "
                        "llcMissesPerKiloInstructions: 1}\n"));
  };
  const std::vector<std::string> names = {"m1", "m2", "m3"};
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  for (const bool pressure : {true, false}) {
    Start({mixed("m1"), mixed("m2"), mixed("m3")}, pressure ? PressureModelConfig() : ModelConfig{});
    Tick(2);
    const std::vector<NodeDecision> d = Ask("filter", lc, names);
    const bool any = std::any_of(d.begin(), d.end(), [](const NodeDecision& x) { return x.feasible; });
    EXPECT_EQ(any, !pressure) << (pressure ? "the pressure model runs it" : d[0].reason);
  }
}

// 4. Scores that decide: a node where the pod would be slowed by some 10 % (a
// 10 MB service beside its 18 MB working set overfills each 25 MB L3) scores
// points below a quiet one, not within kube-scheduler's noise.
TEST_F(HarmScenarioTest, MateriallyDifferentCandidatesArePointsApart) {
  std::string busy;
  for (const char* suffix : {"aaaaa"}) {
    absl::StrAppend(&busy, "  - {uid: w-", suffix, ", namespace: shop, name: search-7c8d9-", suffix,
                    ", qosClass: Burstable, labels: {pod-template-hash: 7c8d9}, "
                    "cpuRequestMillicores: 2000, llcOccupancyBytes: 10000000, "
                    "membwTotalBytesPerSecond: 8000000000, llcMissesPerKiloInstructions: 3}\n");
  }
  const std::vector<std::string> names = {"quiet", "busy"};
  const json lc = PodJson("checkout-x2k4q", "shop", json::object(), json(), kLcResources, kLcHints);
  int spread[2] = {0, 0};
  for (const bool pressure : {true, false}) {
    Start({NodeYaml("quiet", kSmallWeb), NodeYaml("busy", busy)},
          pressure ? PressureModelConfig() : ModelConfig{});
    Tick(2);
    const std::vector<NodeDecision> d = Ask("filter", lc, names);
    ASSERT_TRUE(d[0].feasible && d[1].feasible) << d[0].reason << d[1].reason;
    spread[pressure ? 0 : 1] = d[0].score - d[1].score;
  }
  EXPECT_GE(spread[1], 3) << "pressure model " << spread[0];
  EXPECT_GT(spread[1], spread[0]);
}

// NUMA refusals are exact: /prioritize's guessed booking on the node
// Neighborly liked best (kube-scheduler may have chosen another) never makes
// the kubelet's admission refuse the next pod there; Reserve's exact one does.
TEST_F(HarmScenarioTest, GuessedBookingsDoNotHoldCpus) {
  const std::string pinned_full = PinnedDatabases();
  auto pinned = [](const std::string& name) { return PinnedPod(name); };
  const std::vector<std::string> names = {"one-slot"};
  for (const bool pressure : {true, false}) {
    Start({NodeYaml("one-slot", pinned_full)}, pressure ? PressureModelConfig() : ModelConfig{});
    Tick(1);
    ASSERT_TRUE(Ask("prioritize", pinned("first-x2k4q"), names)[0].feasible);  // guessed booking
    const NodeDecision second = Ask("filter", pinned("second-x2k4q"), names)[0];
    EXPECT_EQ(second.feasible, !pressure) << second.reason;
  }
  // The scheduler's plugin reserves the first pod there: now the CPUs are taken.
  const json args = {{"Pod", pinned("first-x2k4q")}, {"Nodes", nullptr}, {"NodeNames", names}};
  body_.Clear();
  body_.Assign(args.dump());
  body_.Seal();
  ExtenderArgs decoded;
  ASSERT_TRUE(codec_.Decode(body_, decoded).ok());
  ASSERT_TRUE(core_->Reserve(decoded.pod, "one-slot", /*teach=*/true));
  const NodeDecision second = Ask("filter", pinned("second-x2k4q"), names)[0];
  EXPECT_FALSE(second.feasible);
  EXPECT_THAT(second.reason, HasSubstr("NUMA admission"));
}

// The least-harm fallback passes a node refused only for interference before
// one a guessed booking refuses: if kube-scheduler did put that booking's pod
// there, the kubelet would refuse this one (a TopologyAffinityError).
TEST_F(HarmScenarioTest, LeastHarmPrefersANodeNoBookingCouldMakeTheKubeletRefuse) {
  const std::string pinned_full = PinnedDatabases();
  const std::string streamers = ThreeStreamers();
  auto pinned = [](const std::string& name) { return PinnedPod(name, kLcHints); };
  const json first = pinned("first-x2k4q");
  const json second = pinned("second-x2k4q");
  const std::vector<std::string> names = {"one-slot", "streamed"};
  Start({NodeYaml("one-slot", pinned_full), NodeYaml("streamed", streamers)}, ModelConfig{});
  Tick(1);
  ASSERT_TRUE(Ask("prioritize", first, {"one-slot"})[0].feasible);  // guessed booking
  const std::vector<NodeDecision> d = Ask("filter", second, names);
  const NodeDecision& streamed = On(d, names, "streamed");
  const NodeDecision& one_slot = On(d, names, "one-slot");
  EXPECT_TRUE(streamed.feasible && streamed.least_harm) << streamed.reason << " / " << one_slot.reason;
  EXPECT_FALSE(one_slot.feasible);
  EXPECT_THAT(one_slot.reason, HasSubstr("in-flight"));
  // Alone, the guessed node still passes: nothing is stranded.
  EXPECT_TRUE(Ask("filter", second, {"one-slot"})[0].feasible);
}

// Two pinned replicas back to back: /prioritize guessed the first onto a
// roomy node, but kube-scheduler may have bound it on the tight one, which
// then has no room for the second (a TopologyAffinityError). The tight node
// is refused softly while the guess is in flight; alone it still passes.
TEST_F(HarmScenarioTest, APinnedPodInFlightElsewhereMayBeOnTheTightNode) {
  const std::string tight = PinnedDatabases();
  const std::string streamers = ThreeStreamers();
  auto pinned = [](const std::string& name) { return PinnedPod(name, kLcHints); };
  Start({NodeYaml("roomy", ""), NodeYaml("tight", tight), NodeYaml("streamed", streamers)},
        ModelConfig{});
  Tick(1);
  ASSERT_TRUE(Ask("prioritize", pinned("first-x2k4q"), {"roomy"})[0].feasible);  // the guess
  const std::vector<std::string> names = {"tight", "streamed"};
  const std::vector<NodeDecision> d = Ask("filter", pinned("second-x2k4q"), names);
  const NodeDecision& on_tight = On(d, names, "tight");
  const NodeDecision& on_streamed = On(d, names, "streamed");
  EXPECT_FALSE(on_tight.feasible);
  EXPECT_THAT(on_tight.reason, HasSubstr("in-flight: pinned pod shop/first-x2k4q (4 CPUs, guessed "
                                         "on roomy) may be here"));
  EXPECT_TRUE(on_streamed.feasible && on_streamed.least_harm) << on_streamed.reason;
  // Alone, the tight node passes: nothing is stranded.
  EXPECT_TRUE(Ask("filter", pinned("third-x2k4q"), {"tight"})[0].feasible);
  // Once the first pod is placed exactly (the plugin's Reserve), the guess is gone.
  Start({NodeYaml("roomy", ""), NodeYaml("tight", tight), NodeYaml("streamed", streamers)},
        ModelConfig{});
  Tick(1);
  ASSERT_TRUE(Ask("prioritize", pinned("first-x2k4q"), {"roomy"})[0].feasible);
  const json args = {{"Pod", pinned("first-x2k4q")}, {"Nodes", nullptr}, {"NodeNames", {"roomy"}}};
  body_.Clear();
  body_.Assign(args.dump());
  body_.Seal();
  ExtenderArgs decoded;
  ASSERT_TRUE(codec_.Decode(body_, decoded).ok());
  ASSERT_TRUE(core_->Reserve(decoded.pod, "roomy", /*teach=*/true));
  EXPECT_TRUE(On(Ask("filter", pinned("fourth-x2k4q"), names), names, "tight").feasible);
}

}  // namespace
}  // namespace neighborly::extender
