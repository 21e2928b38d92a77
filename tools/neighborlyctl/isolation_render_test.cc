// SPDX-License-Identifier: Apache-2.0
// Issue 26: neighborlyctl memory NODE and neighborlyctl interference.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/neighborlyctl/render.h"

namespace neighborly::ctl {
namespace {

using ::testing::HasSubstr;

constexpr char kMemory[] = R"({"node": "node-1", "capacityBytes": 68719476736,
  "capacitySource": "scenario", "availableBytes": 7516192768, "underPressure": false,
  "thresholds": [{"kind": "hard", "value": "500Mi", "bytes": 524288000, "source": "scenario",
                  "distanceBytes": 6991904768},
                 {"kind": "soft", "value": "8Gi", "bytes": 8589934592, "source": "scenario",
                  "distanceBytes": -1073741824}],
  "oomScoreAdjMismatches": 1, "podsOverRequest": 2,
  "evictionOrder": [
    {"evictionRank": 1, "namespace": "analytics", "name": "event-ingest", "qosClass": "Burstable",
     "priority": null, "workingSetBytes": 12884901888, "requestBytes": 8589934592,
     "limitBytes": null, "usageAboveRequestBytes": 4294967296, "oomScoreAdj": [875],
     "expectedOomScoreAdj": [875], "expectedIsLowerBound": true, "oomScoreAdjMismatch": false,
     "oomNote": ""},
    {"evictionRank": 2, "namespace": "logging", "name": "fluent-bit", "qosClass": "BestEffort",
     "workingSetBytes": 268435456, "usageAboveRequestBytes": 268435456,
     "oomScoreAdj": [500, 1000], "expectedOomScoreAdj": [1000], "oomScoreAdjMismatch": true,
     "oomNote": "a process has oom_score_adj 500; the kubelet sets 1000"}],
  "notes": ["no pod priorities reported: ranked as if all had priority 0"]})";

TEST(RenderNodeMemory, ShowsThresholdsEvictionOrderAndMismatches) {
  absl::StatusOr<std::string> text = RenderNodeMemory(kMemory);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("Available:   7.0GiB\n"));
  EXPECT_THAT(*text, HasSubstr("hard memory.available<500Mi (500.0MiB, scenario): distance 6.5GiB"));
  EXPECT_THAT(*text, HasSubstr("soft memory.available<8Gi (8.0GiB, scenario): distance -1.0GiB"));
  EXPECT_THAT(*text, HasSubstr("analytics/event-ingest"));
  EXPECT_THAT(*text, HasSubstr("875..999"));
  EXPECT_THAT(*text, HasSubstr("MISMATCH"));
  EXPECT_THAT(*text, HasSubstr("note: logging/fluent-bit: a process has oom_score_adj 500"));
  // The kubelet's order: rank 1 before rank 2.
  EXPECT_LT(text->find("event-ingest"), text->find("fluent-bit"));
  EXPECT_FALSE(RenderNodeMemory("[1]").ok());
  EXPECT_FALSE(RenderNodeMemory("nope").ok());
}

TEST(RenderInterference, NamesVictimsAndSuspects) {
  absl::StatusOr<std::string> text = RenderInterference(R"({"windowsObserved": 40,
    "victims": [{"node": "node-1", "pod": "content/article", "cpi": 0.71, "baselineCpi": 0.48,
      "baselineStddev": 0.02, "windowsAbove": 5, "recentWindows": 5,
      "suspects": [{"pod": "analytics/event-ingest", "score": 0.81, "bandwidthCorrelation": 0.99,
        "occupancyCorrelation": 0.98, "meanMembwBytesPerSecond": 16000000000,
        "shares": "NUMA node 0", "repeatAntagonist": true}]}],
    "repeatAntagonists": ["analytics/Deployment/event-ingest"]})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("content/article"));
  EXPECT_THAT(*text, HasSubstr("0.48±0.02"));
  EXPECT_THAT(*text, HasSubstr("analytics/event-ingest (repeat)"));
  EXPECT_THAT(*text, HasSubstr("16.00GB/s"));
  EXPECT_THAT(*text, HasSubstr("Repeat antagonists (placed as aggressors): "
                               "analytics/Deployment/event-ingest"));
  absl::StatusOr<std::string> quiet =
      RenderInterference(R"({"windowsObserved": 12, "victims": []})");
  ASSERT_TRUE(quiet.ok());
  EXPECT_THAT(*quiet, HasSubstr("No victims"));
}

}  // namespace
}  // namespace neighborly::ctl
