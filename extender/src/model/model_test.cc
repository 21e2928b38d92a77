// Unit tests of the contention model: classes, hints, the three filters and
// their reasons, score ordering, staleness, bookings.
#include <cmath>
#include <string>
#include <vector>

#include "extender/src/model/classify.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using ::testing::HasSubstr;
using testing::PodSpec;
using testing::SetMeasured;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

IncomingPod Pod(std::string name, std::map<std::string, std::string> annotations = {},
                std::map<std::string, std::string> labels = {}) {
  IncomingPod pod;
  pod.uid = "uid-" + name;
  pod.namespace_name = "ns";
  pod.name = std::move(name);
  pod.annotations = std::move(annotations);
  pod.labels = std::move(labels);
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 500;
  pod.memory_request_bytes = 1 << 30;
  return pod;
}

IncomingPod LatencyCritical(std::string name = "article") {
  return Pod(std::move(name), {{"neighborly.io/class", "latency-critical"},
                               {"neighborly.io/llc-bytes", "19188940"},
                               {"neighborly.io/membw-bytes-per-second", "2.8G"}});
}

IncomingPod Batch(std::string name = "analytics") {
  return Pod(
      std::move(name),
      {{"neighborly.io/llc-bytes", "31.4M"}, {"neighborly.io/membw-bytes-per-second", "22.1G"}},
      {{"workload-type", "batch"}});
}

IncomingPod Pinned(IncomingPod pod, int cpus, int64_t memory_bytes) {
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = cpus * 1000;
  pod.memory_request_bytes = memory_bytes;
  pod.wants_exclusive_cpus = true;
  return pod;
}

class ModelTest : public ::testing::Test {
 protected:
  NodeProfile Profile(const tv1::NodeReport& r, absl::Time at = kT0) {
    return BuildNodeProfile(r, config_, nullptr, at);
  }
  NodeDecision Eval(const IncomingPod& pod, const NodeProfile* profile,
                    std::span<const Booking> bookings = {}, absl::Time now = kT0) {
    NodeDecision d;
    EvaluateNode(MakePodRequest(pod, nullptr, config_), profile, bookings, now, config_, d);
    return d;
  }
  ModelConfig config_ = PressureModelConfig();  // the strict pressure model these tests pin down
};

// --- classes and hints ---

TEST_F(ModelTest, AnnotationBeatsLabelRule) {
  IncomingPod pod =
      Pod("p", {{"neighborly.io/class", "latency-critical"}}, {{"workload-type", "batch"}});
  PodRequest req = MakePodRequest(pod, nullptr, config_);
  EXPECT_EQ(req.contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(req.source, ClassSource::kAnnotation);
}

TEST_F(ModelTest, LabelRuleBeatsRememberedAndDefault) {
  RememberedPod remembered{ContentionClass::kLatencyCritical, ClassSource::kAnnotation, {}};
  PodRequest req = MakePodRequest(Pod("p", {}, {{"workload-type", "etl"}}), &remembered, config_);
  EXPECT_EQ(req.contention_class, ContentionClass::kBatch);
  EXPECT_EQ(req.source, ClassSource::kLabelRule);
}

TEST_F(ModelTest, RememberedClassAndHintsApplyWhenNothingIsDeclared) {
  RememberedPod remembered{ContentionClass::kBatch, ClassSource::kMeasured, {.llc_bytes = 1234}};
  PodRequest req = MakePodRequest(Pod("p"), &remembered, config_);
  EXPECT_EQ(req.contention_class, ContentionClass::kBatch);
  EXPECT_EQ(req.source, ClassSource::kRemembered);
  EXPECT_EQ(req.llc_bytes, 1234);
  EXPECT_EQ(req.membw_bytes_per_second, config_.default_batch.membw_bytes_per_second);
}

TEST_F(ModelTest, DefaultIsStandardAndUnknownAnnotationIsExplained) {
  PodRequest req = MakePodRequest(Pod("p", {{"neighborly.io/class", "urgent"}}), nullptr, config_);
  EXPECT_EQ(req.contention_class, ContentionClass::kStandard);
  EXPECT_EQ(req.source, ClassSource::kDefault);
  EXPECT_THAT(req.note, HasSubstr("urgent"));
}

TEST_F(ModelTest, FootprintHintsAreKubernetesQuantities) {
  PodRequest req = MakePodRequest(Pod("p", {{"neighborly.io/llc-bytes", "18Mi"},
                                            {"neighborly.io/membw-bytes-per-second", "2.8G"}}),
                                  nullptr, config_);
  EXPECT_EQ(req.llc_bytes, 18 * 1024 * 1024);
  EXPECT_EQ(req.membw_bytes_per_second, 2.8e9);
  PodRequest bad =
      MakePodRequest(Pod("p", {{"neighborly.io/llc-bytes", "lots"}}), nullptr, config_);
  EXPECT_EQ(bad.llc_bytes, config_.default_standard.llc_bytes);
  EXPECT_THAT(bad.note, HasSubstr("neighborly.io/llc-bytes"));
}

TEST_F(ModelTest, GuaranteedIntegerCpusMeansExclusive) {
  IncomingPod pod = Pod("p");
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = 2000;
  EXPECT_TRUE(MakePodRequest(pod, nullptr, config_).exclusive_cpus);
  pod.cpu_request_millicores = 1500;
  EXPECT_FALSE(MakePodRequest(pod, nullptr, config_).exclusive_cpus);
}

TEST_F(ModelTest, ResidentPrecedenceAnnotationLabelMeasuredRemembered) {
  tv1::NodeReport r = TwoSocketNode("n");
  // Streams 22.1 GB/s but is annotated standard: the annotation wins.
  AddPod(r, {.uid = "a",
             .name = "annotated",
             .annotations = {{"neighborly.io/class", "standard"}},
             .membw_bytes_per_second = 22'100'000'000});
  // No declaration, streams: a measured aggressor even though remembered as latency-critical.
  AddPod(r, {.uid = "b", .name = "streamer", .membw_bytes_per_second = 22'100'000'000});
  // No declaration, quiet, remembered as latency-critical.
  AddPod(r, {.uid = "c", .name = "quiet", .membw_bytes_per_second = 100'000'000});
  // Big cache footprint but cache-friendly (low MPKI): not an aggressor.
  AddPod(
      r,
      {.uid = "d", .name = "cachey", .exclusive_cpus = "2-3", .llc_bytes = 19188940, .mpki = 1.5});
  RememberedPod lc{ContentionClass::kLatencyCritical, ClassSource::kAnnotation, {}};
  NodeProfile p = BuildNodeProfile(
      r, config_,
      [&](std::string_view uid) -> const RememberedPod* {
        return uid == "b" || uid == "c" ? &lc : nullptr;
      },
      kT0);
  ASSERT_EQ(p.pods.size(), 4u);
  EXPECT_EQ(p.pods[0].source, ClassSource::kAnnotation);
  EXPECT_EQ(p.pods[0].contention_class, ContentionClass::kStandard);
  EXPECT_EQ(p.pods[1].source, ClassSource::kMeasured);
  EXPECT_TRUE(p.pods[1].aggressor);
  EXPECT_EQ(p.pods[1].contention_class, ContentionClass::kBatch);
  EXPECT_EQ(p.pods[2].source, ClassSource::kRemembered);
  EXPECT_EQ(p.pods[2].contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(p.pods[3].source, ClassSource::kDefault);
  EXPECT_FALSE(p.pods[3].aggressor);
}

// --- profile ---

TEST_F(ModelTest, ProfileCountsFreeExclusiveCpusAndMemoryPerNumaNode) {
  tv1::NodeReport r = TwoSocketNode("n");
  r.mutable_kubelet()->set_reserved_cpus("0");
  AddPod(r, {.uid = "a",
             .name = "pinned",
             .qos = tv1::QOS_CLASS_GUARANTEED,
             .memory_request_bytes = 4ull << 30,
             .exclusive_cpus = "2-3,8"});
  NodeProfile p = Profile(r);
  ASSERT_EQ(p.numa.size(), 2u);
  EXPECT_EQ(p.numa[0].free_exclusive_cpus, 5);  // 8 - reserved 0 - 2,3
  EXPECT_EQ(p.numa[1].free_exclusive_cpus, 7);
  // 4 GiB split by where its CPUs are: 2/3 on node 0.
  EXPECT_NEAR(static_cast<double>(p.numa[0].free_memory_bytes),
              static_cast<double>(testing::kNumaMemoryBytes) - (4.0 * (1 << 30)) * 2 / 3, 2);
  EXPECT_TRUE(p.single_numa_admission);
}

// --- filters ---

TEST_F(ModelTest, NoTelemetryPassesWithTheBlindScore) {
  NodeDecision d = Eval(LatencyCritical(), nullptr);
  EXPECT_TRUE(d.feasible);
  EXPECT_EQ(d.score, 3);  // nothing protects a latency-critical pod there
  EXPECT_FALSE(d.has_telemetry);
  EXPECT_EQ(Eval(Pod("plain"), nullptr).score, 5);
  config_.latency_critical_blind_score = 5;
  EXPECT_EQ(Eval(LatencyCritical(), nullptr).score, 5);
}

TEST_F(ModelTest, IsolationKeepsLatencyCriticalAwayFromBatch) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "b",
             .namespace_name = "analytics",
             .name = "scan-1",
             .labels = {{"workload-type", "batch"}}});
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(LatencyCritical(), &p);
  EXPECT_FALSE(d.feasible);
  EXPECT_EQ(d.reason,
            "isolation: latency-critical pod would run beside batch pod analytics/scan-1");
  EXPECT_TRUE(Eval(Pod("plain"), &p).feasible);
  config_.isolate_latency_critical = false;
  EXPECT_TRUE(Eval(LatencyCritical(), &p).feasible);
}

TEST_F(ModelTest, IsolationNamesMeasuredAggressors) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "b",
             .namespace_name = "analytics",
             .name = "scan-1",
             .membw_bytes_per_second = 22'100'000'000});
  AddPod(r, {.uid = "c",
             .namespace_name = "analytics",
             .name = "scan-2",
             .membw_bytes_per_second = 22'100'000'000});
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(LatencyCritical(), &p);
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("aggressor pod analytics/scan-1 (measured membw 44%"));
  EXPECT_THAT(d.reason, HasSubstr("and 1 more"));
}

TEST_F(ModelTest, IsolationKeepsBatchAwayFromLatencyCritical) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "a",
             .namespace_name = "content",
             .name = "article",
             .annotations = {{"neighborly.io/class", "latency-critical"}}});
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(Batch(), &p);
  EXPECT_FALSE(d.feasible);
  EXPECT_EQ(d.reason, "isolation: batch pod would run beside latency-critical pod content/article");
  config_.isolate_batch = false;
  EXPECT_TRUE(Eval(Batch(), &p).feasible);
}

TEST_F(ModelTest, BandwidthHeadroomNamesTheNumaNode) {
  tv1::NodeReport r = TwoSocketNode("n");
  SetMeasured(r, 0, 10 << 20, 30'000'000'000);
  SetMeasured(r, 1, 10 << 20, 40'600'000'000);
  NodeProfile p = Profile(r);
  // Shared pool: spread over both NUMA nodes; node 1 would reach 42/50 = 84 %.
  NodeDecision d = Eval(LatencyCritical(), &p);
  EXPECT_FALSE(d.feasible);
  EXPECT_EQ(d.reason, "membw 84% > 80% on NUMA node 1");
  // Pinned: it can live on NUMA node 0 alone (65.6 %).
  NodeDecision pinned = Eval(Pinned(LatencyCritical(), 2, 1 << 30), &p);
  EXPECT_TRUE(pinned.feasible) << pinned.reason;
  EXPECT_EQ(pinned.numa_node, 0);
  // Only latency-critical pods are held to the headroom.
  EXPECT_TRUE(Eval(Pod("plain"), &p).feasible);
  config_.membw_headroom = 0.9;
  EXPECT_TRUE(Eval(LatencyCritical(), &p).feasible);
}

TEST_F(ModelTest, BandwidthHeadroomPinnedEverywhereFull) {
  tv1::NodeReport r = TwoSocketNode("n");
  SetMeasured(r, 0, 10 << 20, 40'000'000'000);
  SetMeasured(r, 1, 10 << 20, 41'000'000'000);
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(Pinned(LatencyCritical(), 2, 1 << 30), &p);
  EXPECT_FALSE(d.feasible);
  // The kubelet pins it to NUMA node 0 (lowest mask among equal hints).
  EXPECT_EQ(d.reason, "membw 86% > 80% on NUMA node 0 (where the kubelet will pin it)");
}

TEST_F(ModelTest, NumaAdmissionRejectsWhereNoNumaNodeCanHoldThePod) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "a", .name = "a", .qos = tv1::QOS_CLASS_GUARANTEED, .exclusive_cpus = "0-5"});
  AddPod(r, {.uid = "b", .name = "b", .qos = tv1::QOS_CLASS_GUARANTEED, .exclusive_cpus = "8-13"});
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(Pinned(Pod("p"), 4, 1 << 30), &p);
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason,
              HasSubstr("NUMA admission (topologyManagerPolicy single-numa-node, scope container): "
                        "no single NUMA node can hold 4 exclusive CPUs (TopologyAffinityError)"));
  EXPECT_THAT(d.reason, HasSubstr("NUMA node 0 has 2 free CPUs (2 short)"));
  // Two CPUs fit on either NUMA node.
  EXPECT_TRUE(Eval(Pinned(Pod("p"), 2, 1 << 30), &p).feasible);
  // A Burstable pod is not subject to the topology manager.
  EXPECT_TRUE(Eval(Pod("p"), &p).feasible);
  // Without single-numa-node, the kubelet admits it spread (but the score pays).
  tv1::NodeReport none = r;
  none.mutable_kubelet()->set_topology_manager_policy("best-effort");
  NodeProfile pn = Profile(none);
  NodeDecision spread = Eval(Pinned(Pod("p"), 4, 1 << 30), &pn);
  EXPECT_TRUE(spread.feasible);
  EXPECT_EQ(spread.numa_penalty, 1);
}

TEST_F(ModelTest, NumaAdmissionCountsMemoryOnlyUnderTheStaticMemoryManager) {
  tv1::NodeReport r = TwoSocketNode("n", 1, "restricted");
  r.mutable_kubelet()->set_memory_manager_policy("static");
  NodeProfile p = Profile(r);
  NodeDecision d = Eval(Pinned(Pod("p"), 2, 40ll << 30), &p);  // 40 GiB > 32 GiB per node
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("NUMA admission (topologyManagerPolicy restricted"));
  EXPECT_THAT(d.reason, HasSubstr("40.0 GiB of memory"));
  // Issue 14: memory manager None (or unreported: the kubelet's default) gives
  // no memory hint, so the kubelet admits the pod.
  r.mutable_kubelet()->set_memory_manager_policy("none");
  NodeProfile none = Profile(r);
  EXPECT_TRUE(Eval(Pinned(Pod("p"), 2, 40ll << 30), &none).feasible);
  r.mutable_kubelet()->clear_memory_manager_policy();
  NodeProfile unknown = Profile(r);
  EXPECT_TRUE(Eval(Pinned(Pod("p"), 2, 40ll << 30), &unknown).feasible);
}

// --- score ---

TEST_F(ModelTest, QuietNodeScoresAboveBusyNode) {
  tv1::NodeReport quiet = TwoSocketNode("quiet");
  tv1::NodeReport busy = TwoSocketNode("busy");
  SetMeasured(busy, 0, 22 << 20, 30'000'000'000);
  SetMeasured(busy, 1, 22 << 20, 30'000'000'000);
  AddPod(busy, {.uid = "s",
                .name = "web",
                .llc_bytes = 44 << 20,
                .membw_bytes_per_second = 6'000'000'000,
                .mpki = 1.0});
  NodeProfile pq = Profile(quiet), pb = Profile(busy);
  for (const IncomingPod& pod : {LatencyCritical(), Pod("plain"), Batch()}) {
    NodeDecision dq = Eval(pod, &pq), db = Eval(pod, &pb);
    ASSERT_TRUE(dq.feasible && db.feasible) << pod.name << ": " << db.reason;
    EXPECT_GT(dq.score, db.score) << pod.name;
    EXPECT_LT(dq.cost, db.cost) << pod.name;
    EXPECT_GT(db.harm_to_incoming, 0) << pod.name;
  }
  EXPECT_EQ(Eval(Pod("plain"), &pq).score, 10);
}

TEST_F(ModelTest, BandwidthCostRisesSteeplyNearSaturation) {
  auto cost_at = [&](uint64_t membw) {
    tv1::NodeReport r = TwoSocketNode("n");
    SetMeasured(r, 0, 0, membw);
    SetMeasured(r, 1, 0, membw);
    NodeProfile p = Profile(r);
    return Eval(Pod("plain"), &p).cost;
  };
  const double c20 = cost_at(10'000'000'000), c50 = cost_at(25'000'000'000),
               c80 = cost_at(40'000'000'000);
  EXPECT_LT(c20, c50);
  EXPECT_GT(c80 - c50, 2 * (c50 - c20));  // convex: the last 30 % costs far more
}

TEST_F(ModelTest, HarmToSensitiveResidentsCounts) {
  // Same load, but on one node the residents are latency-critical.
  tv1::NodeReport standard = TwoSocketNode("a");
  tv1::NodeReport sensitive = TwoSocketNode("b");
  for (auto* r : {&standard, &sensitive}) {
    SetMeasured(*r, 0, 18 << 20, 20'000'000'000);
    SetMeasured(*r, 1, 18 << 20, 20'000'000'000);
  }
  AddPod(standard, {.uid = "x", .name = "x", .llc_bytes = 36 << 20});
  AddPod(sensitive, {.uid = "x",
                     .name = "x",
                     .annotations = {{"neighborly.io/class", "latency-critical"}},
                     .llc_bytes = 36 << 20});
  NodeProfile pa = Profile(standard), pb = Profile(sensitive);
  IncomingPod plain = Pod("plain", {{"neighborly.io/llc-bytes", "10Mi"}});
  NodeDecision da = Eval(plain, &pa), db = Eval(plain, &pb);
  EXPECT_GT(db.harm_to_residents, da.harm_to_residents);
  EXPECT_LT(db.score, da.score + 1);
}

// --- staleness ---

TEST_F(ModelTest, StalenessBlendsTowardNeutral) {
  tv1::NodeReport busy = TwoSocketNode("busy");
  SetMeasured(busy, 0, 24 << 20, 38'000'000'000);
  SetMeasured(busy, 1, 24 << 20, 38'000'000'000);
  NodeProfile p = Profile(busy, kT0);
  const IncomingPod pod = Pod("plain");
  NodeDecision fresh = Eval(pod, &p, {}, kT0 + absl::Seconds(3));  // 3 intervals of 1 s
  EXPECT_EQ(fresh.confidence, 1.0);
  ASSERT_LE(fresh.score, 7);
  // Halfway between 3 s and 60 s: confidence 0.5, score halfway to 5.
  NodeDecision half = Eval(pod, &p, {}, kT0 + absl::Seconds(31.5));
  EXPECT_DOUBLE_EQ(half.confidence, 0.5);
  EXPECT_EQ(half.score, static_cast<int>(std::lround(5 + 0.5 * (10 * (1 - fresh.cost) - 5))));
  NodeDecision old = Eval(pod, &p, {}, kT0 + absl::Seconds(60));
  EXPECT_EQ(old.confidence, 0.0);
  EXPECT_EQ(old.score, 5);
}

// Confidence falls in held steps, and DecisionHeldUntil names each step's
// last instant: the same value up to it, another just after (issue 25: what
// lets a decision on an aging node be reused for a step).
TEST_F(ModelTest, ConfidenceStepsHoldUntilDecisionHeldUntil) {
  tv1::NodeReport r = TwoSocketNode("aging");
  const NodeProfile p = Profile(r, kT0);
  const ModelConfig config;
  EXPECT_EQ(DecisionHeldUntil(p, kT0 + absl::Seconds(1)), p.fresh_until);
  int changes = 0;
  double last = 1.0;
  for (absl::Time t = p.fresh_until + absl::Milliseconds(1); t < p.stale_at;
       t += absl::Milliseconds(250)) {
    const double c = Confidence(p, t, config);
    const absl::Time held = DecisionHeldUntil(p, t);
    ASSERT_GE(held, t);
    EXPECT_EQ(Confidence(p, held, config), c) << absl::FormatTime(t);
    EXPECT_NE(Confidence(p, held + absl::Nanoseconds(1), config), c) << absl::FormatTime(t);
    EXPECT_LE(c, last);
    if (c != last) ++changes;
    last = c;
  }
  EXPECT_EQ(changes, kConfidenceSteps - 1) << "the first step holds 1, the last 1/32";
  EXPECT_EQ(Confidence(p, p.stale_at, config), 0.0);
  // Stale: held until the reported residents age out, then for good.
  EXPECT_EQ(DecisionHeldUntil(p, p.stale_at), p.residents_until - absl::Nanoseconds(1));
  EXPECT_EQ(DecisionHeldUntil(p, p.residents_until), absl::InfiniteFuture());
}

TEST_F(ModelTest, StaleTelemetryKeepsIsolationUntilResidentsAge) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "b", .name = "scan", .labels = {{"workload-type", "batch"}}});
  NodeProfile p = Profile(r);
  EXPECT_FALSE(Eval(LatencyCritical(), &p, {}, kT0 + absl::Seconds(10)).feasible);
  // Load is stale at 61 s, but the batch resident has not gone anywhere.
  NodeDecision stale = Eval(LatencyCritical(), &p, {}, kT0 + absl::Seconds(61));
  EXPECT_FALSE(stale.feasible);
  EXPECT_THAT(stale.reason, HasSubstr("beside batch pod"));
  // A standard pod on the stale node: no filter, neutral.
  NodeDecision plain = Eval(Pod("plain"), &p, {}, kT0 + absl::Seconds(61));
  EXPECT_TRUE(plain.feasible);
  EXPECT_EQ(plain.score, 5);
  // Past residentsMaxAge the node fails open entirely, with the blind score.
  NodeDecision forgotten = Eval(LatencyCritical(), &p, {}, kT0 + absl::Minutes(11));
  EXPECT_TRUE(forgotten.feasible);
  EXPECT_EQ(forgotten.score, 3);
}

// --- bookings ---

TEST_F(ModelTest, BookingsAddTheirFootprint) {
  tv1::NodeReport r = TwoSocketNode("n");
  SetMeasured(r, 0, 8 << 20, 15'000'000'000);
  SetMeasured(r, 1, 8 << 20, 15'000'000'000);
  NodeProfile p = Profile(r);
  const IncomingPod pod = Pod("plain");
  NodeDecision before = Eval(pod, &p);
  PodRequest heavy = MakePodRequest(Pod("heavy", {{"neighborly.io/llc-bytes", "30Mi"},
                                                  {"neighborly.io/membw-bytes-per-second", "20G"}}),
                                    nullptr, config_);
  std::vector<Booking> bookings = {MakeBooking("uid-heavy", heavy, before, kT0 + absl::Seconds(2))};
  NodeDecision after = Eval(pod, &p, bookings);
  EXPECT_LT(after.score, before.score);
  EXPECT_GT(after.membw_utilisation, before.membw_utilisation);
  // An expired booking weighs nothing (telemetry still fresh at 2 s).
  NodeDecision expired = Eval(pod, &p, bookings, kT0 + absl::Seconds(2));
  EXPECT_EQ(expired.score, before.score);
  EXPECT_EQ(expired.membw_utilisation, before.membw_utilisation);
}

TEST_F(ModelTest, BookedLatencyCriticalPodRepelsBatch) {
  tv1::NodeReport r = TwoSocketNode("n");
  NodeProfile p = Profile(r);
  PodRequest lc = MakePodRequest(LatencyCritical(), nullptr, config_);
  NodeDecision placed = Eval(LatencyCritical(), &p);
  std::vector<Booking> bookings = {MakeBooking("uid-article", lc, placed, kT0 + absl::Seconds(30))};
  NodeDecision d = Eval(Batch(), &p, bookings);
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("in-flight latency-critical pod ns/article"));
}

TEST_F(ModelTest, PinnedBookingTakesCpusFromItsNumaNode) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "a", .name = "a", .qos = tv1::QOS_CLASS_GUARANTEED, .exclusive_cpus = "0-3"});
  AddPod(r, {.uid = "b", .name = "b", .qos = tv1::QOS_CLASS_GUARANTEED, .exclusive_cpus = "8-11"});
  NodeProfile p = Profile(r);
  const IncomingPod pod = Pinned(Pod("p"), 4, 1 << 30);
  NodeDecision first = Eval(pod, &p);
  ASSERT_TRUE(first.feasible);
  PodRequest req = MakePodRequest(pod, nullptr, config_);
  std::vector<Booking> bookings = {MakeBooking("uid-p", req, first, kT0 + absl::Seconds(30))};
  NodeDecision second = Eval(pod, &p, bookings);
  ASSERT_TRUE(second.feasible);
  EXPECT_NE(second.numa_node, first.numa_node);
  bookings.push_back(MakeBooking("uid-q", req, second, kT0 + absl::Seconds(30)));
  EXPECT_FALSE(Eval(pod, &p, bookings).feasible);
}

// --- explanations ---

TEST_F(ModelTest, ExplainTermsDescribeTheDecision) {
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "b", .name = "scan", .labels = {{"workload-type", "batch"}}});
  NodeProfile p = Profile(r);
  std::vector<Term> rejected = ExplainTerms(Eval(LatencyCritical(), &p));
  ASSERT_FALSE(rejected.empty());
  EXPECT_EQ(rejected[0].name, "rejected");
  EXPECT_THAT(rejected[0].detail, HasSubstr("isolation"));
  std::vector<Term> scored = ExplainTerms(Eval(Pod("plain"), &p));
  std::vector<std::string> names;
  for (const Term& t : scored) names.push_back(t.name);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"confidence", "l3_pressure", "membw_utilisation",
                                              "harm_to_incoming", "harm_to_residents",
                                              "numa_penalty", "cost"}));
  EXPECT_EQ(ExplainTerms(Eval(Pod("plain"), nullptr))[0].name, "telemetry");
}

TEST(RoundHalfAwayFromZeroTest, AgreesWithLround) {
  const double cases[] = {
      0.0,       -0.0, 0.49999999999999994, 0.5,  1.5,        2.5,        -0.5,   -1.5,
      4.4999999, 4.5,  9.5000001,           10.0, -2.5000001, 1e15 + 0.5, 0x1p52, -0x1p52 - 2};
  for (double x : cases) EXPECT_EQ(RoundHalfAwayFromZero(x), std::lround(x)) << x;
  for (int i = -2000; i <= 2000; ++i) {
    const double x = i / 100.0 + 0.005;
    EXPECT_EQ(RoundHalfAwayFromZero(x), std::lround(x)) << x;
    EXPECT_EQ(RoundHalfAwayFromZero(std::nextafter(x, 0.0)), std::lround(std::nextafter(x, 0.0)));
  }
}

}  // namespace
}  // namespace neighborly::extender
