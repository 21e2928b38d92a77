// Issue 26: the memory-pressure view (the kubelet's oom_score_adj rule and
// eviction ranking) and antagonist attribution (CPI baseline, victims,
// suspects, repeat antagonists), on hand-built reports.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "extender/src/model/interference_attribution.h"
#include "extender/src/model/memory_pressure.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/workload_profile.h"
#include "extender/src/model/workload_advice.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
constexpr uint64_t kGi = uint64_t{1} << 30;

TEST(OomScoreAdjTest, FollowsTheKubeletsRule) {
  // Guaranteed and node-critical: -997; BestEffort: 1000.
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_GUARANTEED, 4 * kGi, 64 * kGi), -997);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BEST_EFFORT, 0, 64 * kGi), 1000);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 4 * kGi, 64 * kGi, true), -997);
  // Burstable: 1000 - 1000 * request / capacity in integer arithmetic:
  // 4 Gi of 64 Gi is 62.5 per mille, truncated to 62.
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 4 * kGi, 64 * kGi), 938);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 32 * kGi, 64 * kGi), 500);
  // Held to 3..999: a tiny request is 999 (never BestEffort's 1000), a request
  // of the whole machine (or more) is 3 (never a Guaranteed value).
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 1024, 64 * kGi), 999);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 0, 64 * kGi), 999);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 64 * kGi, 64 * kGi), 3);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 640 * kGi, 64 * kGi), 3);
  EXPECT_EQ(ExpectedOomScoreAdj(tv1::QOS_CLASS_BURSTABLE, 63 * kGi + kGi / 2, 64 * kGi), 8);
}

TEST(EvictionThresholdTest, QuantitiesAndPercentages) {
  EXPECT_EQ(*ParseEvictionThreshold("100Mi", 64 * kGi), 100u << 20);
  EXPECT_EQ(*ParseEvictionThreshold(" 10% ", 64 * kGi), 6871947674u);  // rounded
  EXPECT_EQ(ParseEvictionThreshold("150%", kGi).status().message(),
            "eviction threshold \"150%\" is not a percentage in 0..100%");
  EXPECT_FALSE(ParseEvictionThreshold("lots", kGi).ok());
  EXPECT_FALSE(ParseEvictionThreshold("", kGi).ok());
}

tv1::PodReport* AddPod(tv1::NodeReport& r, const std::string& name, tv1::QosClass qos,
                       std::optional<uint64_t> request, std::optional<uint64_t> working_set,
                       std::vector<int32_t> oom) {
  tv1::PodReport* p = r.add_pods();
  p->set_uid("uid-" + name);
  p->set_namespace_("ns");
  p->set_name(name);
  p->set_qos_class(qos);
  if (request) p->set_memory_request_bytes(*request);
  if (working_set) p->set_memory_working_set_bytes(*working_set);
  for (int32_t v : oom) p->add_oom_score_adj(v);
  return p;
}

tv1::NodeReport MemoryNode() {
  tv1::NodeReport r;
  r.set_node_name("node-1");
  r.mutable_memory()->set_capacity_bytes(64 * kGi);
  r.mutable_memory()->set_available_bytes(3 * kGi);
  r.mutable_memory()->set_source("test");
  (*r.mutable_kubelet()->mutable_eviction_hard())["memory.available"] = "500Mi";
  (*r.mutable_kubelet()->mutable_eviction_soft())["memory.available"] = "10%";
  r.mutable_kubelet()->set_eviction_source("config /var/lib/kubelet/config.yaml");
  return r;
}

TEST(NodeMemoryViewTest, RanksAsTheKubeletAndFlagsOomScoreAdjMismatches) {
  tv1::NodeReport r = MemoryNode();
  AddPod(r, "article", tv1::QOS_CLASS_GUARANTEED, 4 * kGi, 3 * kGi, {-997});
  AddPod(r, "cache", tv1::QOS_CLASS_BURSTABLE, 4 * kGi, 6 * kGi, {938});   // 2 Gi over
  AddPod(r, "web", tv1::QOS_CLASS_BURSTABLE, 8 * kGi, 2 * kGi, {875});     // within
  AddPod(r, "debug", tv1::QOS_CLASS_BEST_EFFORT, std::nullopt, kGi / 2, {1000, 500});  // tampered
  AddPod(r, "batch", tv1::QOS_CLASS_BEST_EFFORT, std::nullopt, 3 * kGi, {1000})
      ->set_priority(-10);
  AddPod(r, "new", tv1::QOS_CLASS_BURSTABLE, kGi, std::nullopt, {});  // no statistics yet
  const NodeMemoryView v = BuildNodeMemoryView(r);

  // No statistics first; then over request, lower priority first, then by
  // usage above request; then within request (larger usage above request
  // first, i.e. the least to spare), Guaranteed among them.
  std::vector<std::string> order;
  for (const PodMemoryView& p : v.pods) order.push_back(p.name);
  EXPECT_EQ(order, (std::vector<std::string>{"new", "batch", "cache", "debug", "article", "web"}));
  EXPECT_EQ(v.pods[0].eviction_rank, 1);
  EXPECT_EQ(v.pods[2].eviction_reason, "over its request by 2.00 GiB");
  EXPECT_EQ(v.pods_over_request, 3);

  ASSERT_EQ(v.oom_score_adj_mismatches, 1);
  const PodMemoryView& debug = v.pods[3];
  EXPECT_TRUE(debug.oom_score_adj_mismatch);
  EXPECT_EQ(debug.oom_score_adj, (std::vector<int32_t>{500, 1000}));
  EXPECT_NE(debug.oom_note.find("oom_score_adj 500; the kubelet sets 1000"), std::string::npos)
      << debug.oom_note;
  EXPECT_FALSE(v.pods[2].oom_score_adj_mismatch);  // 938 for 4 Gi of 64 Gi
  EXPECT_EQ(v.pods[0].oom_note, "not checked: oom_score_adj not reported");

  // Thresholds: hard 500Mi, soft 10% of 64 Gi; 3 Gi available.
  ASSERT_EQ(v.thresholds.size(), 2u);
  EXPECT_EQ(v.thresholds[0].kind, "hard");
  EXPECT_EQ(*v.thresholds[0].distance_bytes, static_cast<int64_t>(3 * kGi - (500u << 20)));
  EXPECT_EQ(v.thresholds[1].kind, "soft");
  EXPECT_LT(*v.thresholds[1].distance_bytes, 0);  // soft crossed
  EXPECT_FALSE(v.under_pressure);                 // hard not
}

TEST(NodeMemoryViewTest, BurstableWithSeveralContainersUsesEachRequest) {
  tv1::NodeReport r = MemoryNode();
  tv1::PodReport* p = AddPod(r, "sidecars", tv1::QOS_CLASS_BURSTABLE, 5 * kGi, kGi, {938, 985});
  (*p->mutable_container_memory_request_bytes())["app"] = 4 * kGi;
  (*p->mutable_container_memory_request_bytes())["proxy"] = kGi;
  NodeMemoryView v = BuildNodeMemoryView(r);
  EXPECT_EQ(v.pods[0].expected_oom_score_adj, (std::vector<int32_t>{938, 985}));
  EXPECT_FALSE(v.pods[0].oom_score_adj_mismatch);
  // Without the containers' requests the pod's request gives a lower bound.
  p->clear_container_memory_request_bytes();
  v = BuildNodeMemoryView(r);
  EXPECT_TRUE(v.pods[0].expected_is_lower_bound);
  EXPECT_EQ(v.pods[0].expected_oom_score_adj, (std::vector<int32_t>{922}));
  EXPECT_FALSE(v.pods[0].oom_score_adj_mismatch);
  // A Burstable process at -997 is below any value the kubelet gives.
  p->clear_oom_score_adj();
  p->add_oom_score_adj(-997);
  v = BuildNodeMemoryView(r);
  EXPECT_TRUE(v.pods[0].oom_score_adj_mismatch);
}

TEST(NodeMemoryViewTest, UnderPressureAndOlderAgents) {
  tv1::NodeReport r = MemoryNode();
  r.mutable_memory()->set_available_bytes(100u << 20);
  EXPECT_TRUE(BuildNodeMemoryView(r).under_pressure);
  // An agent before issue 26: capacity from the NUMA nodes, the kubelet's
  // default hard threshold, no distance.
  tv1::NodeReport old;
  old.set_node_name("old");
  old.mutable_topology()->add_numa_nodes()->set_memory_bytes(32 * kGi);
  const NodeMemoryView v = BuildNodeMemoryView(old);
  EXPECT_EQ(v.capacity_bytes, 32 * kGi);
  ASSERT_EQ(v.thresholds.size(), 1u);
  EXPECT_EQ(v.thresholds[0].value, "100Mi");
  EXPECT_FALSE(v.thresholds[0].distance_bytes.has_value());
  EXPECT_FALSE(v.notes.empty());
  // A bad threshold is a note, not a failure.
  (*r.mutable_kubelet()->mutable_eviction_hard())["memory.available"] = "plenty";
  const NodeMemoryView bad = BuildNodeMemoryView(r);
  EXPECT_TRUE(bad.thresholds.size() == 1 && bad.thresholds[0].kind == "soft");
  ASSERT_FALSE(bad.notes.empty());
  EXPECT_NE(bad.notes[0].find("\"plenty\""), std::string::npos);
}

// --- Antagonist attribution ---------------------------------------------

struct PodSpec {
  std::string name;
  std::string app;
  bool latency_critical = false;
  std::string exclusive_cpus;
};

// A node with one 8-CPU L3 domain per socket; pods get per-window values.
class Fleet {
 public:
  void Window(const std::string& node, uint32_t sequence,
              const std::vector<std::tuple<PodSpec, std::optional<double>, double>>& pods) {
    tv1::NodeReport r;
    r.set_node_name(node);
    r.set_boot_id("boot");
    r.set_sequence(sequence);
    for (uint32_t d = 0; d < 2; ++d) {
      tv1::L3Domain* l3 = r.mutable_topology()->add_l3_domains();
      l3->set_id(d);
      l3->set_numa_node(d);
      l3->set_cpus(d == 0 ? "0-7" : "8-15");
    }
    for (const auto& [spec, ipc, membw] : pods) {
      tv1::PodReport* p = r.add_pods();
      p->set_uid(node + "/" + spec.name);
      p->set_namespace_("content");
      p->set_name(spec.name);
      (*p->mutable_labels())["app"] = spec.app;
      if (spec.latency_critical) (*p->mutable_annotations())["neighborly.io/class"] = "latency-critical";
      p->set_exclusive_cpus(spec.exclusive_cpus);
      if (ipc) p->set_ipc(*ipc);
      p->set_membw_total_bytes_per_second(static_cast<uint64_t>(membw));
    }
    tracker.Observe(r);
  }
  InterferenceTracker tracker;
};

const PodSpec kArticle1{"article-a", "article", true, "2-3"};
const PodSpec kArticle2{"article-b", "article", true, "2-3"};
const PodSpec kScan{"event-scan", "event-scan", false, "4-7"};
const PodSpec kSteady{"cdn-origin", "cdn-origin", false, "0-1"};
const PodSpec kOtherSocket{"indexer", "indexer", false, "8-15"};

// The seed's incident: the scan's bandwidth comes in bursts and the article
// replica beside it slows (IPC 2.1 -> 1.3) with each; the other replica runs
// at IPC 2.1 on a quiet node.
void Incident(Fleet& fleet, int windows, uint32_t first = 1) {
  for (int i = 0; i < windows; ++i) {
    const bool burst = i % 3 != 0;
    const double scan_bw = burst ? 22.1e9 : 4e9;
    const double ipc = burst ? 1.3 + 0.02 * (i % 2) : 1.9;
    const uint32_t seq = first + static_cast<uint32_t>(i);
    fleet.Window("node-1", seq,
                 {{kArticle1, ipc, 2.8e9}, {kScan, std::nullopt, scan_bw}, {kSteady, 1.0, 1e9},
                  {kOtherSocket, 1.0, 9e9 + 1e9 * (i % 2)}});
    fleet.Window("node-6", seq, {{kArticle2, 2.1 + 0.01 * (i % 3), 2.8e9}, {kSteady, 1.0, 1e9}});
  }
}

TEST(InterferenceTest, NamesTheStreamingJobAndNobodyOnTheQuietNode) {
  Fleet fleet;
  Incident(fleet, 12);
  const InterferenceView view = fleet.tracker.View();
  ASSERT_EQ(view.victims.size(), 1u);
  const Victim& v = view.victims[0];
  EXPECT_EQ(v.node, "node-1");
  EXPECT_EQ(v.pod, "content/article-a");
  EXPECT_NEAR(v.baseline_cpi, 1 / 2.11, 0.01);
  EXPECT_GT(v.cpi, v.baseline_cpi + 2 * v.baseline_stddev);
  // The scan (same L3 domain, bandwidth in step with the victim's CPI) is
  // named; the steady CDN origin (constant bandwidth) and the indexer on the
  // other socket are not.
  ASSERT_EQ(v.suspects.size(), 1u);
  EXPECT_EQ(v.suspects[0].pod, "content/event-scan");
  EXPECT_EQ(v.suspects[0].workload, "content/Pod/event-scan");
  EXPECT_GT(v.suspects[0].bandwidth_correlation, 0.9);
  EXPECT_GT(v.suspects[0].score, 0.5);
  EXPECT_EQ(v.suspects[0].shares, "L3 domain 0, NUMA node 0");
  EXPECT_EQ(view.per_node.at("node-6"), (std::pair<int, int>{0, 0}));
  EXPECT_EQ(view.per_node.at("node-1"), (std::pair<int, int>{1, 1}));
  // Named in every window since the victim was found: a repeat antagonist.
  EXPECT_EQ(view.repeat_antagonists, (std::vector<std::string>{"content/Pod/event-scan"}));
  EXPECT_EQ(fleet.tracker.RepeatAntagonists().count("content/Pod/event-scan"), 1u);
}

TEST(InterferenceTest, QuietFleetHasNoVictims) {
  Fleet fleet;
  for (uint32_t i = 1; i <= 12; ++i) {
    fleet.Window("node-1", i, {{kArticle1, 2.1 - 0.01 * (i % 2), 2.8e9},
                               {kScan, std::nullopt, 4e9 + 1e9 * (i % 3)}});
    fleet.Window("node-6", i, {{kArticle2, 2.1, 2.8e9}});
  }
  const InterferenceView view = fleet.tracker.View();
  EXPECT_TRUE(view.victims.empty());
  EXPECT_TRUE(view.repeat_antagonists.empty());
  EXPECT_EQ(view.windows_observed, 24u);
}

TEST(InterferenceTest, OldAndRepeatedWindowsAreIgnored) {
  Fleet fleet;
  Incident(fleet, 3);
  const size_t seen = fleet.tracker.View().windows_observed;
  Incident(fleet, 3);  // the same sequences again: nothing new
  EXPECT_EQ(fleet.tracker.View().windows_observed, seen);
}

TEST(InterferenceTest, NoBaselineWithoutOtherReplicas) {
  Fleet fleet;
  for (uint32_t i = 1; i <= 12; ++i) {
    const bool burst = i % 3 != 0;
    fleet.Window("node-1", i, {{kArticle1, burst ? 1.3 : 2.1, 2.8e9},
                               {kScan, std::nullopt, burst ? 22e9 : 4e9}});
  }
  EXPECT_TRUE(fleet.tracker.View().victims.empty());
}

// Feedback: a workload named repeatedly is an aggressor in placement even
// when its own bandwidth stays below the measured-aggressor thresholds, and
// quiet windows do not clear it.
TEST(InterferenceTest, RepeatAntagonistBecomesAnAggressor) {
  const ModelConfig config;
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  WorkloadObservation moderate;
  moderate.membw_bytes_per_second = 9e9;
  moderate.membw_share = 0.18;
  moderate.l3_share = 0.2;
  moderate.pod_uid_hash = 1;
  WorkloadProfile p;
  for (int i = 0; i < 10; ++i) p.Add(moderate, 7, t0 + absl::Seconds(i), config);
  ASSERT_FALSE(p.aggressor());
  p.MarkAntagonist("named repeatedly as an antagonist", t0 + absl::Seconds(10));
  EXPECT_TRUE(p.aggressor());
  for (int i = 11; i < 400; ++i) p.Add(moderate, 7, t0 + absl::Seconds(i), config);
  EXPECT_TRUE(p.aggressor());
  EXPECT_EQ(p.aggressor_why(), "named repeatedly as an antagonist");
  EXPECT_TRUE(p.Predict(t0 + absl::Seconds(400), config).aggressor);
}

// --- Advice -------------------------------------------------------------

tv1::NodeReport AdviceNode(const std::string& name, const std::string& cpu_policy,
                           const std::string& topology_policy) {
  tv1::NodeReport r;
  r.set_node_name(name);
  r.mutable_kubelet()->set_cpu_manager_policy(cpu_policy);
  r.mutable_kubelet()->set_topology_manager_policy(topology_policy);
  for (uint32_t n = 0; n < 2; ++n) {
    tv1::NumaNode* numa = r.mutable_topology()->add_numa_nodes();
    numa->set_id(n);
    numa->set_cpus(n == 0 ? "0-7" : "8-15");
    numa->set_memory_bytes(32 * kGi);
  }
  return r;
}

tv1::PodReport* AdvicePod(tv1::NodeReport& r, const std::string& name, tv1::QosClass qos,
                          int64_t cpu, uint64_t request, uint64_t limit, std::string pinned) {
  tv1::PodReport* p = r.add_pods();
  p->set_uid(r.node_name() + name);
  p->set_namespace_("content");
  p->set_name(name);
  (*p->mutable_labels())["app"] = "article-service";
  (*p->mutable_annotations())["neighborly.io/class"] = "latency-critical";
  p->set_qos_class(qos);
  p->set_cpu_request_millicores(cpu);
  p->set_memory_request_bytes(request);
  if (limit > 0) p->set_memory_limit_bytes(limit);
  p->set_exclusive_cpus(pinned);
  return p;
}

TEST(AdviceTest, ABurstableLatencyCriticalServiceGetsAPatch) {
  tv1::NodeReport a = AdviceNode("node-1", "static", "single-numa-node");
  tv1::NodeReport b = AdviceNode("node-2", "none", "none");
  AdvicePod(a, "article-x1", tv1::QOS_CLASS_BURSTABLE, 1500, 2 * kGi, 4 * kGi, "");
  AdvicePod(b, "article-x2", tv1::QOS_CLASS_BURSTABLE, 1500, 2 * kGi, 4 * kGi, "");
  std::optional<WorkloadAdvice> advice =
      AdviseWorkload("content/Pod/article-service", {&a, &b}, InterferenceView{});
  ASSERT_TRUE(advice.has_value());
  EXPECT_EQ(advice->replicas, 2);
  ASSERT_EQ(advice->layers.size(), 4u);
  EXPECT_TRUE(advice->layers[0].needed);
  EXPECT_FALSE(advice->layers[0].present);
  EXPECT_EQ(advice->layers[0].cost, "memory request raised to its limit: +2.0 GiB reserved per replica");
  EXPECT_TRUE(advice->layers[1].needed);
  EXPECT_EQ(advice->layers[1].cost,
            "2 whole core(s) per replica taken out of the shared pool (request rounded up from "
            "1500m)");
  EXPECT_TRUE(advice->layers[2].needed);  // 2 CPUs and 2 GiB fit one NUMA node
  EXPECT_NE(advice->patch.find("requests: {cpu: \"2\", memory: \"4096Mi\"}"), std::string::npos)
      << advice->patch;
  EXPECT_NE(advice->patch.find("kubectl patch Pod/article-service -n content"), std::string::npos);
  ASSERT_EQ(advice->notes.size(), 1u);  // node-2 lacks single-numa-node
  EXPECT_FALSE(AdviseWorkload("content/Pod/nobody", {&a, &b}, InterferenceView{}).has_value());
}

TEST(AdviceTest, APinnedGuaranteedServiceNeedsNoChange) {
  tv1::NodeReport a = AdviceNode("node-1", "static", "single-numa-node");
  AdvicePod(a, "article-y1", tv1::QOS_CLASS_GUARANTEED, 2000, 4 * kGi, 4 * kGi, "2-3");
  std::optional<WorkloadAdvice> advice =
      AdviseWorkload("content/Pod/article-service", {&a}, InterferenceView{});
  ASSERT_TRUE(advice.has_value());
  for (const AdviceLayer& l : advice->layers) EXPECT_TRUE(l.present) << l.layer;
  EXPECT_TRUE(advice->patch.empty()) << advice->patch;
}

}  // namespace
}  // namespace neighborly::extender
