// Workload identity, profiles (decayed statistics, hysteresis, the per-node
// cap) and the arriving pod's prediction (profile > hints > prior).
#include <string>

#include "extender/src/model/classify.h"
#include "extender/src/model/workload_key.h"
#include "extender/src/model/workload_profile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const absl::Time kT0 = absl::FromUnixSeconds(1'790'000'000);

IncomingPod Pod(std::string name, std::map<std::string, std::string> labels = {},
                std::string owner_kind = "", std::string owner_name = "") {
  IncomingPod p;
  p.uid = "uid-" + name;
  p.namespace_name = "shop";
  p.name = std::move(name);
  p.labels = std::move(labels);
  p.owner_kind = std::move(owner_kind);
  p.owner_name = std::move(owner_name);
  return p;
}

TEST(WorkloadKeyTest, ReplicaSetWithTemplateHashIsItsDeployment) {
  EXPECT_EQ(WorkloadKeyOf(Pod("event-scan-7d9f8c6b5-x2k4q", {{"pod-template-hash", "7d9f8c6b5"}},
                              "ReplicaSet", "event-scan-7d9f8c6b5"))
                .ToString(),
            "shop/Deployment/event-scan");
  // A ReplicaSet not made by a Deployment (no hash suffix) stays a ReplicaSet.
  EXPECT_EQ(WorkloadKeyOf(Pod("rs-abcde", {}, "ReplicaSet", "handmade")).ToString(),
            "shop/ReplicaSet/handmade");
}

TEST(WorkloadKeyTest, JobOfACronJobIsTheCronJob) {
  EXPECT_EQ(WorkloadKeyOf(Pod("nightly-29412360-abcde", {}, "Job", "nightly-29412360")).ToString(),
            "shop/CronJob/nightly");
  EXPECT_EQ(WorkloadKeyOf(Pod("migrate-abcde", {}, "Job", "migrate-2")).ToString(),
            "shop/Job/migrate-2");
  // Digits that cannot be a schedule time in minutes are part of the Job's name.
  EXPECT_EQ(WorkloadKeyOf(Pod("x", {}, "Job", "backup-12345678")).ToString(),
            "shop/Job/backup-12345678");
}

TEST(WorkloadKeyTest, OtherControllersAreThemselves) {
  EXPECT_EQ(WorkloadKeyOf(Pod("redis-0", {}, "StatefulSet", "redis")).ToString(),
            "shop/StatefulSet/redis");
  EXPECT_EQ(WorkloadKeyOf(Pod("fluent-x2k4q", {}, "DaemonSet", "fluent")).ToString(),
            "shop/DaemonSet/fluent");
}

TEST(WorkloadKeyTest, BarePodsByAppLabelsElseNameWithoutSuffix) {
  EXPECT_EQ(WorkloadKeyOf(Pod("a-x2k4q", {{"app.kubernetes.io/name", "api"}, {"app", "other"}}))
                .ToString(),
            "shop/Pod/api");
  EXPECT_EQ(WorkloadKeyOf(Pod("a-x2k4q", {{"app", "web"}})).ToString(), "shop/Pod/web");
  EXPECT_EQ(WorkloadKeyOf(Pod("debug-x2k4q")).ToString(), "shop/Pod/debug");
  EXPECT_EQ(WorkloadKeyOf(Pod("debug-pod")).ToString(), "shop/Pod/debug-pod");
}

TEST(WorkloadKeyTest, ReportedPodsByControllerLabels) {
  using Labels = std::map<std::string, std::string>;
  // The hash is known, so any suffix will do (hand-written names too).
  EXPECT_EQ(WorkloadKeyFromLabels("content", "article-service-5d8f7-abcde",
                                  Labels{{"pod-template-hash", "5d8f7"}})
                .ToString(),
            "content/Deployment/article-service");
  EXPECT_EQ(WorkloadKeyFromLabels("shop", "event-scan-7d9f8c6b5-x2k4q",
                                  Labels{{"pod-template-hash", "7d9f8c6b5"}, {"app", "scan"}})
                .ToString(),
            "shop/Deployment/event-scan");
  EXPECT_EQ(WorkloadKeyFromLabels("shop", "nightly-29412360-q8zlm",
                                  Labels{{"batch.kubernetes.io/job-name", "nightly-29412360"},
                                         {"job-name", "nightly-29412360"}})
                .ToString(),
            "shop/CronJob/nightly");
  EXPECT_EQ(WorkloadKeyFromLabels("shop", "redis-2",
                                  Labels{{"controller-revision-hash", "redis-5c7"},
                                         {"statefulset.kubernetes.io/pod-name", "redis-2"}})
                .ToString(),
            "shop/StatefulSet/redis");
  EXPECT_EQ(WorkloadKeyFromLabels(
                "kube-system", "fluent-x2k4q",
                Labels{{"controller-revision-hash", "6d9"}, {"pod-template-generation", "3"}})
                .ToString(),
            "kube-system/DaemonSet/fluent");
}

TEST(WorkloadKeyTest, ParseRoundTripsAndNamesErrors) {
  absl::StatusOr<WorkloadKey> k = ParseWorkloadKey("shop/Deployment/web");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->ToString(), "shop/Deployment/web");
  EXPECT_THAT(ParseWorkloadKey("shop/web").status().message(), HasSubstr("NAMESPACE/KIND/NAME"));
  EXPECT_THAT(ParseWorkloadKey("shop//web").status().message(), HasSubstr("must not be empty"));
}

TEST(DecayedStatTest, MeanAndHighPercentile) {
  DecayedStat s;
  const double base = WorkloadMetricBase(WorkloadMetric::kMembw);
  EXPECT_EQ(s.Quantile(0.95), 0);
  for (int i = 0; i < 95; ++i) s.Add(2e9, 1, base);
  for (int i = 0; i < 5; ++i) s.Add(20e9, 1, base);
  EXPECT_NEAR(s.Mean(), 0.95 * 2e9 + 0.05 * 20e9, 1e6);
  // The 95th percentile lies at the top of the 2 GB/s bucket; the 99th among the 20 GB/s.
  // Buckets hold float sums: exact to float precision for a steady value.
  EXPECT_NEAR(s.Quantile(0.5), 2e9, 2e9 * 1e-6);
  EXPECT_NEAR(s.Quantile(0.95), 2e9, 2e9 * 1e-6);
  EXPECT_NEAR(s.Quantile(0.99), 20e9, 20e9 * 1e-6);
}

WorkloadObservation Streaming(double bw, double share, uint64_t pod = 1) {
  WorkloadObservation o;
  o.membw_bytes_per_second = bw;
  o.llc_bytes = 31.4e6;
  o.mpki = 30;
  o.membw_share = share;
  o.l3_share = 0.1;
  o.pod_uid_hash = pod;
  return o;
}

TEST(WorkloadProfileTest, ConfidenceGrowsWithReplicaWindows) {
  ModelConfig config;
  WorkloadProfile p;
  for (int i = 0; i < 15; ++i) p.Add(Streaming(22.1e9, 0.44), 7, kT0 + absl::Seconds(i), config);
  WorkloadPrediction half = p.Predict(kT0 + absl::Seconds(15), config);
  EXPECT_NEAR(half.windows, 15, 0.1);
  EXPECT_NEAR(half.confidence, 0.5, 0.01);
  for (int i = 15; i < 40; ++i) p.Add(Streaming(22.1e9, 0.44), 7, kT0 + absl::Seconds(i), config);
  WorkloadPrediction full = p.Predict(kT0 + absl::Seconds(40), config);
  EXPECT_EQ(full.confidence, 1.0);
  EXPECT_EQ(full.nodes, 1);
  EXPECT_EQ(full.replicas, 1);
  ASSERT_TRUE(full.membw_bytes_per_second);
  EXPECT_NEAR(*full.membw_bytes_per_second, 22.1e9, 22.1e9 * 1e-6);
  EXPECT_TRUE(full.aggressor);
  EXPECT_THAT(full.aggressor_why, HasSubstr("44%"));
}

TEST(WorkloadProfileTest, OldWindowsFadeWithTheHalfLife) {
  ModelConfig config;
  WorkloadProfile p;
  for (int i = 0; i < 40; ++i) p.Add(Streaming(2e9, 0.04), 1, kT0 + absl::Seconds(i), config);
  const absl::Time later = kT0 + absl::Seconds(40) + config.workloads.half_life;
  EXPECT_NEAR(p.Predict(later, config).windows, 20, 0.5);
}

// A scan with quiet phases stays an aggressor: the verdict reads the decayed
// recent peak, exits below a lower threshold, and not before the minimum dwell.
TEST(WorkloadProfileTest, AggressorVerdictDoesNotFlapOverPhases) {
  ModelConfig config;
  WorkloadProfile p;
  absl::Time t = kT0;
  for (int cycle = 0; cycle < 20; ++cycle) {
    for (int i = 0; i < 30; ++i, t += absl::Seconds(1)) {
      p.Add(Streaming(22.1e9, 0.44), 1, t, config);  // busy 30 s
    }
    for (int i = 0; i < 90; ++i, t += absl::Seconds(1)) {
      p.Add(Streaming(0.5e9, 0.01), 1, t, config);  // quiet 90 s
      ASSERT_TRUE(p.aggressor()) << "flapped in cycle " << cycle << " at quiet second " << i;
    }
  }
  // Quiet for good: the verdict ends, but only once the peak has decayed below
  // the exit threshold and the dwell has passed.
  absl::Time ended = absl::InfinitePast();
  const absl::Time quiet_since = t - absl::Seconds(91);  // the last busy window
  for (int i = 0; i < 3600 && ended == absl::InfinitePast(); ++i, t += absl::Seconds(1)) {
    p.Add(Streaming(0.5e9, 0.01), 1, t, config);
    if (!p.aggressor()) ended = t;
  }
  ASSERT_NE(ended, absl::InfinitePast());
  // 44% decays below 0.6 x 25% = 15% after log2(44/15) = 1.55 half-lives
  // (15.5 min) past the last busy window, long after the 5-minute dwell.
  const absl::Duration quiet_for = ended - quiet_since;
  EXPECT_GT(quiet_for, absl::Minutes(15));
  EXPECT_LT(quiet_for, absl::Minutes(17));
  EXPECT_LT(p.recent_membw_share(ended, config), 0.6 * config.aggressor_membw_share);
}

TEST(WorkloadProfileTest, OneNodeCannotDominateWhenOthersReport) {
  ModelConfig config;
  WorkloadProfile p;
  absl::Time t = kT0;
  // Two honest nodes report 2 GB/s, one liar floods 10x as many windows of 40 GB/s.
  for (int i = 0; i < 60; ++i, t += absl::Seconds(1)) {
    p.Add(Streaming(2e9, 0.04, 1), 101, t, config);
    p.Add(Streaming(2e9, 0.04, 2), 102, t, config);
    for (int k = 0; k < 10; ++k) p.Add(Streaming(40e9, 0.04, 3), 666, t, config);
  }
  std::optional<WorkloadMetricSummary> bw = p.Summary(WorkloadMetric::kMembw, config);
  ASSERT_TRUE(bw);
  // Capped at half of the weight, the liar moves the mean to at most ~halfway.
  EXPECT_LT(bw->mean, 0.55 * 40e9 + 0.45 * 2e9);
  EXPECT_GT(bw->mean, 2e9);  // it still counts for something
  EXPECT_EQ(p.Predict(t, config).nodes, 3);
}

TEST(WorkloadProfileTest, SaveAndRestoreKeepThePrediction) {
  ModelConfig config;
  WorkloadProfile p;
  for (int i = 0; i < 40; ++i) p.Add(Streaming(22.1e9, 0.44), 1, kT0 + absl::Seconds(i), config);
  const WorkloadProfile q = WorkloadProfile::Restore(p.Save());
  const absl::Time now = kT0 + absl::Minutes(1);
  EXPECT_EQ(q.Predict(now, config).membw_bytes_per_second,
            p.Predict(now, config).membw_bytes_per_second);
  EXPECT_EQ(q.aggressor(), p.aggressor());
}

TEST(PredictionTest, ConfidentProfileWinsAndMakesAnAggressorBatch) {
  ModelConfig config;
  IncomingPod pod = Pod("event-scan-7d9f8c6b5-abcde", {{"pod-template-hash", "7d9f8c6b5"}},
                        "ReplicaSet", "event-scan-7d9f8c6b5");
  WorkloadPrediction profile;
  profile.windows = 412;
  profile.confidence = 1;
  profile.replicas = 3;
  profile.nodes = 3;
  profile.membw_bytes_per_second = 21.8e9;
  profile.llc_bytes = 30.9e6;
  profile.aggressor = true;
  profile.aggressor_why = "recent peak membw 44% of its NUMA node's peak";
  const WorkloadKey key = WorkloadKeyOf(pod);
  const PodRequest req = MakePodRequest(pod, nullptr, config, &key, &profile);
  EXPECT_EQ(req.contention_class, ContentionClass::kBatch);
  EXPECT_EQ(req.source, ClassSource::kMeasured);
  EXPECT_DOUBLE_EQ(req.membw_bytes_per_second, 21.8e9);
  EXPECT_THAT(req.prediction, StartsWith("predicted from Deployment shop/event-scan, 3 replicas "
                                         "on 3 nodes, 412 windows: 21.8 GB/s, 30.9 MB"));
  // A declared class still wins over the verdict.
  pod.annotations["neighborly.io/class"] = "standard";
  EXPECT_EQ(MakePodRequest(pod, nullptr, config, &key, &profile).contention_class,
            ContentionClass::kStandard);
}

TEST(PredictionTest, YoungProfileBlendsWithThePrior) {
  ModelConfig config;
  IncomingPod pod = Pod("w-abcde");
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 1000;
  WorkloadPrediction profile;
  profile.windows = 15;
  profile.confidence = 0.5;
  profile.membw_bytes_per_second = 11e9;
  const PodRequest req = MakePodRequest(pod, nullptr, config, nullptr, &profile);
  EXPECT_DOUBLE_EQ(req.membw_bytes_per_second, 0.5 * 11e9 + 0.5 * 1e9);
  EXPECT_THAT(req.prediction, HasSubstr("young profile"));
  EXPECT_THAT(req.prediction, HasSubstr("50% profile, 50% prior"));
}

TEST(PredictionTest, PriorScalesWithCpus) {
  ModelConfig config;
  IncomingPod small = Pod("web-abcde");
  small.qos = QosClass::kBurstable;
  small.cpu_request_millicores = 500;
  IncomingPod big = Pod("crunch-abcde");
  big.qos = QosClass::kBurstable;
  big.cpu_request_millicores = 4000;
  big.cpu_limit_millicores = 16000;  // Burstable: the limit is what it may use
  const PodRequest s = MakePodRequest(small, nullptr, config);
  const PodRequest b = MakePodRequest(big, nullptr, config);
  EXPECT_DOUBLE_EQ(s.membw_bytes_per_second, 1e9);
  EXPECT_DOUBLE_EQ(b.membw_bytes_per_second, 16e9);
  EXPECT_DOUBLE_EQ(b.llc_bytes, (4 << 20) + 15 * (1 << 20));
  EXPECT_THAT(b.prediction, HasSubstr("prior for a standard pod of 16.0 CPUs (Burstable)"));
  // A batch pod starts from its class default: 4 CPUs add 3 GB/s, not 4x.
  IncomingPod batch = big;
  batch.labels["workload-type"] = "batch";
  batch.cpu_limit_millicores = 4000;
  EXPECT_DOUBLE_EQ(MakePodRequest(batch, nullptr, config).membw_bytes_per_second, 18e9);
  // Hints still come before the prior.
  big.annotations["neighborly.io/membw-bytes-per-second"] = "3G";
  EXPECT_DOUBLE_EQ(MakePodRequest(big, nullptr, config).membw_bytes_per_second, 3e9);
}

TEST(PredictionTest, GuaranteedWithExclusiveCpusIsLatencyCriticalUnlessDeclared) {
  ModelConfig config;
  IncomingPod pod = Pod("pinned-abcde");
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = 2000;
  pod.wants_exclusive_cpus = true;
  PodRequest req = MakePodRequest(pod, nullptr, config);
  EXPECT_EQ(req.contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(req.source, ClassSource::kQos);
  pod.labels["workload-type"] = "batch";
  EXPECT_EQ(MakePodRequest(pod, nullptr, config).contention_class, ContentionClass::kBatch);
  config.guaranteed_exclusive_is_latency_critical = false;
  pod.labels.clear();
  EXPECT_EQ(MakePodRequest(pod, nullptr, config).contention_class, ContentionClass::kStandard);
}

// Issue 22: a Job's pods are batch by their controller, even Guaranteed with
// whole cores (many batch Jobs set limits = requests), unless declared.
TEST(PredictionTest, AJobsPodsAreBatchWhateverTheirQos) {
  ModelConfig config;
  IncomingPod pod = Pod("scan-7-x2k4p");
  pod.owner_kind = "Job";
  pod.owner_name = "scan-7";
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = 4000;
  pod.wants_exclusive_cpus = true;
  PodRequest req = MakePodRequest(pod, nullptr, config);
  EXPECT_EQ(req.contention_class, ContentionClass::kBatch);
  EXPECT_EQ(req.source, ClassSource::kOwner);
  EXPECT_EQ(ClassSourceName(req.source), "owner");
  EXPECT_TRUE(req.exclusive_cpus);  // still pinned where the kubelet pins it
  // Declared beats the controller.
  pod.annotations["neighborly.io/class"] = "latency-critical";
  req = MakePodRequest(pod, nullptr, config);
  EXPECT_EQ(req.contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(req.source, ClassSource::kAnnotation);
  // Off: the QoS rule decides again.
  pod.annotations.clear();
  config.jobs_are_batch = false;
  req = MakePodRequest(pod, nullptr, config);
  EXPECT_EQ(req.contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(req.source, ClassSource::kQos);
  // A ReplicaSet's Guaranteed pod is not touched by the rule.
  config.jobs_are_batch = true;
  pod.owner_kind = "ReplicaSet";
  EXPECT_EQ(MakePodRequest(pod, nullptr, config).source, ClassSource::kQos);
}

}  // namespace
}  // namespace neighborly::extender
