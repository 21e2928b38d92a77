// The design's acceptance on the reference scenario, at model level: six
// nodes of 2 x 8 cores (one NUMA node and one 25 MiB L3 per socket, 32 GiB and
// 50 GB/s per NUMA node), the article service (latency-critical, Guaranteed,
// pinned cores, 18.3 MB L3, 2.8 GB/s) and the analytics batch job (31.4 MB
// L3, 22.1 GB/s).
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
using testing::SetMeasured;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);
constexpr uint64_t kArticleLlc = 19188940;  // 18.3 MB
constexpr uint64_t kArticleMembw = 2'800'000'000;
constexpr uint64_t kBatchLlc = 32925286;  // 31.4 MB
constexpr uint64_t kBatchMembw = 22'100'000'000;

class ReferenceScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // node-1: the article service, pinned to cores 2-3, plus the search API.
    tv1::NodeReport n1 = TwoSocketNode("node-1");
    AddPod(n1, {.uid = "article-1",
                .namespace_name = "content",
                .name = "article-service-1",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .labels = {{"app", "article-service"}},
                .annotations = {{"neighborly.io/class", "latency-critical"}},
                .cpu_request_millicores = 2000,
                .memory_request_bytes = 4ull << 30,
                .exclusive_cpus = "2-3",
                .llc_bytes = kArticleLlc,
                .membw_bytes_per_second = kArticleMembw,
                .mpki = 1.5});
    AddPod(n1, {.uid = "search-1",
                .namespace_name = "content",
                .name = "search-api-1",
                .cpu_request_millicores = 1000,
                .memory_request_bytes = 2ull << 30,
                .llc_bytes = 4 << 20,
                .membw_bytes_per_second = 1'500'000'000});
    // node-2: the labelled analytics batch job.
    tv1::NodeReport n2 = TwoSocketNode("node-2");
    AddPod(n2, {.uid = "batch-1",
                .namespace_name = "analytics",
                .name = "event-scan-1",
                .labels = {{"workload-type", "batch"}},
                .cpu_request_millicores = 4000,
                .memory_request_bytes = 8ull << 30,
                .llc_bytes = kBatchLlc,
                .membw_bytes_per_second = kBatchMembw,
                .mpki = 25});
    // node-3: an unlabelled job saturating NUMA node 0's memory controller.
    tv1::NodeReport n3 = TwoSocketNode("node-3");
    AddPod(n3, {.uid = "etl-1",
                .namespace_name = "analytics",
                .name = "nightly-rollup",
                .cpu_request_millicores = 4000,
                .memory_request_bytes = 8ull << 30,
                .exclusive_cpus = "",
                .llc_bytes = kBatchLlc,
                .membw_bytes_per_second = 44'000'000'000,
                .mpki = 30});
    SetMeasured(n3, 0, 24 << 20, 44'500'000'000);
    SetMeasured(n3, 1, 9 << 20, 3'000'000'000);
    // node-4: exclusive cores nearly all taken; no NUMA node has 4 free.
    tv1::NodeReport n4 = TwoSocketNode("node-4");
    AddPod(n4, {.uid = "db-1",
                .namespace_name = "data",
                .name = "postgres-0",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .cpu_request_millicores = 6000,
                .memory_request_bytes = 12ull << 30,
                .exclusive_cpus = "0-5",
                .llc_bytes = 6 << 20,
                .membw_bytes_per_second = 3'000'000'000});
    AddPod(n4, {.uid = "db-2",
                .namespace_name = "data",
                .name = "postgres-1",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .cpu_request_millicores = 6000,
                .memory_request_bytes = 12ull << 30,
                .exclusive_cpus = "8-13",
                .llc_bytes = 6 << 20,
                .membw_bytes_per_second = 3'000'000'000});
    // node-5: ordinary web pods, moderate load.
    tv1::NodeReport n5 = TwoSocketNode("node-5");
    for (int i = 0; i < 3; ++i) {
      AddPod(n5, {.uid = "web-" + std::to_string(i),
                  .namespace_name = "web",
                  .name = "frontend-" + std::to_string(i),
                  .cpu_request_millicores = 1000,
                  .memory_request_bytes = 2ull << 30,
                  .llc_bytes = 5 << 20,
                  .membw_bytes_per_second = 2'000'000'000});
    }
    // node-6: quiet.
    tv1::NodeReport n6 = TwoSocketNode("node-6");
    for (const tv1::NodeReport* r : {&n1, &n2, &n3, &n4, &n5, &n6}) {
      profiles_.push_back(BuildNodeProfile(*r, config_, nullptr, kNow));
    }
  }

  static IncomingPod ArticleService() {
    IncomingPod pod;
    pod.uid = "article-2";
    pod.namespace_name = "content";
    pod.name = "article-service-2";
    pod.qos = QosClass::kGuaranteed;
    pod.cpu_request_millicores = 4000;
    pod.memory_request_bytes = 4ll << 30;
    pod.wants_exclusive_cpus = true;
    pod.labels = {{"app", "article-service"}};
    pod.annotations = {{"neighborly.io/class", "latency-critical"},
                       {"neighborly.io/llc-bytes", "18.3M"},
                       {"neighborly.io/membw-bytes-per-second", "2.8G"}};
    return pod;
  }

  static IncomingPod AnalyticsBatch() {
    IncomingPod pod;
    pod.uid = "batch-2";
    pod.namespace_name = "analytics";
    pod.name = "event-scan-2";
    pod.qos = QosClass::kBurstable;
    pod.cpu_request_millicores = 4000;
    pod.memory_request_bytes = 8ll << 30;
    pod.labels = {{"workload-type", "batch"}};
    pod.annotations = {{"neighborly.io/llc-bytes", "31.4M"},
                       {"neighborly.io/membw-bytes-per-second", "22.1G"}};
    return pod;
  }

  std::vector<NodeDecision> Decide(const IncomingPod& pod, bool with_telemetry = true) {
    std::vector<NodeDecision> out(profiles_.size());
    const PodRequest req = MakePodRequest(pod, nullptr, config_);
    for (size_t i = 0; i < profiles_.size(); ++i) {
      const std::span<const Booking> bookings = bookings_[i];
      EvaluateNode(req, with_telemetry ? &profiles_[i] : nullptr, bookings, kNow, config_, out[i]);
    }
    return out;
  }

  static size_t Best(const std::vector<NodeDecision>& d) {
    size_t best = d.size();
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i].feasible && (best == d.size() || d[i].score > d[best].score)) best = i;
    }
    return best;
  }

  ModelConfig config_;
  std::vector<NodeProfile> profiles_;
  std::vector<std::vector<Booking>> bookings_ = std::vector<std::vector<Booking>>(6);
};

// Issue 22: the filters judge predicted slowdown, so the reasons name the
// latency-critical pod that would suffer and by how much.
TEST_F(ReferenceScenarioTest, BatchJobIsNeverPlacedBesideTheArticleService) {
  std::vector<NodeDecision> d = Decide(AnalyticsBatch());
  EXPECT_FALSE(d[0].feasible);
  EXPECT_THAT(d[0].reason,
              HasSubstr("interference: would slow latency-critical pod content/article-service-1"));
  EXPECT_GT(d[0].worst_resident_slowdown, 1.2);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_TRUE(d[i].feasible) << i << ": " << d[i].reason;
  EXPECT_NE(Best(d), 0u);
}

TEST_F(ReferenceScenarioTest, ArticleServiceAvoidsBatchSaturationAndFullNumaNodes) {
  std::vector<NodeDecision> d = Decide(ArticleService());
  // The kubelet pins it to NUMA node 0, beside its first replica: two 18.3 MB
  // working sets in one 25 MB L3 slow it past 1.2x.
  EXPECT_FALSE(d[0].feasible);
  EXPECT_THAT(d[0].reason, HasSubstr("interference: predicted slowdown"));
  EXPECT_FALSE(d[1].feasible);  // beside the labelled batch job
  EXPECT_THAT(d[1].reason, HasSubstr("interference"));
  EXPECT_FALSE(d[2].feasible);  // the bandwidth-saturating job, unlabelled
  EXPECT_GT(d[2].predicted_slowdown, 2.0);
  EXPECT_FALSE(d[3].feasible);
  EXPECT_THAT(d[3].reason, HasSubstr("NUMA"));
  EXPECT_TRUE(d[4].feasible) << d[4].reason;
  EXPECT_TRUE(d[5].feasible) << d[5].reason;
  // The quiet node is the best; the busy web node scores lower.
  EXPECT_EQ(Best(d), 5u);
  EXPECT_GT(d[5].score, d[4].score);
  EXPECT_EQ(d[5].score, 10);
  EXPECT_LT(d[5].predicted_slowdown, 1.02);  // only its own traffic on an idle controller
}

TEST_F(ReferenceScenarioTest, SaturatedNodeIsRejectedOnBandwidthEvenWithoutIsolation) {
  std::vector<NodeDecision> d = Decide(ArticleService());
  // Pinned, it could live on the quiet NUMA node 1, but the kubelet's topology
  // manager takes the lowest of two equally narrow hints: NUMA node 0, the
  // saturated one (issue 14).
  EXPECT_FALSE(d[2].feasible);
  EXPECT_THAT(d[2].reason, HasSubstr("on NUMA node 0)"));
  // Shared-pool replica: its threads would touch the saturated NUMA node 0.
  IncomingPod shared = ArticleService();
  shared.wants_exclusive_cpus = false;
  shared.qos = QosClass::kBurstable;
  std::vector<NodeDecision> s = Decide(shared);
  EXPECT_FALSE(s[2].feasible);
  EXPECT_THAT(s[2].reason, HasSubstr("interference: predicted slowdown"));
  EXPECT_GT(s[2].membw_utilisation, 0.8);
}

TEST_F(ReferenceScenarioTest, BookedBatchJobKeepsTheNextArticleReplicaAway) {
  std::vector<NodeDecision> batch = Decide(AnalyticsBatch());
  const size_t where = Best(batch);
  ASSERT_LT(where, batch.size());
  bookings_[where].push_back(MakeBooking("batch-2",
                                         MakePodRequest(AnalyticsBatch(), nullptr, config_),
                                         batch[where], kNow + absl::Seconds(30)));
  std::vector<NodeDecision> article = Decide(ArticleService());
  EXPECT_FALSE(article[where].feasible);
  EXPECT_THAT(article[where].reason, HasSubstr("interference"));
}

// The strict option keeps the seed's class isolation as a hard rule.
TEST_F(ReferenceScenarioTest, StrictIsolationStillAvailable) {
  config_ = PressureModelConfig();
  std::vector<NodeDecision> d = Decide(AnalyticsBatch());
  EXPECT_EQ(d[0].reason,
            "isolation: batch pod would run beside latency-critical pod content/article-service-1");
}

// Without telemetry every node passes; the batch job scores them all a neutral
// 5, the latency-critical article service a blind 3 (nothing protects it).
TEST_F(ReferenceScenarioTest, NoTelemetryPassesEveryNodeWithTheBlindScore) {
  for (const IncomingPod& pod : {ArticleService(), AnalyticsBatch()}) {
    const int blind = pod.annotations.contains("neighborly.io/class") &&
                              pod.annotations.at("neighborly.io/class") == "latency-critical"
                          ? 3
                          : 5;
    for (const NodeDecision& d : Decide(pod, /*with_telemetry=*/false)) {
      EXPECT_TRUE(d.feasible);
      EXPECT_EQ(d.score, blind);
    }
  }
}

}  // namespace
}  // namespace neighborly::extender
