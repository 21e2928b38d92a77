// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/render.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace neighborly::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNodes[] = R"({"nodes": [
  {"name": "node-quiet", "contention_score": 0.12, "telemetry_age_seconds": 0.8, "confidence": 1,
   "l3_domains": [{"id": 0, "pressure": 0.10}, {"id": 1, "pressure": 0.12}],
   "numa_nodes": [{"id": 0, "membw_utilisation": 0.05}],
   "pods_by_class": {"standard": 2}, "aggressors": []},
  {"name": "node-noisy", "contention_score": 0.91, "telemetry_age_seconds": 1.5, "confidence": 1,
   "l3_domains": [{"id": 0, "pressure": 0.2}, {"id": 1, "pressure": 1.25}],
   "numa_nodes": [{"id": 0, "membw_utilisation": 0.3}, {"id": 1, "membw_utilisation": 0.88}],
   "pods_by_class": {"batch": 1, "latency-critical": 1},
   "aggressors": ["analytics/ingest-7x"]},
  {"name": "node-blind", "telemetry_age_seconds": 75, "confidence": 0}
]})";

TEST(RenderNodesTable, SortsByContentionHighestFirstAndShowsTheWorstDomain) {
  absl::StatusOr<std::string> table = RenderNodesTable(kNodes);
  ASSERT_TRUE(table.ok()) << table.status();
  const size_t noisy = table->find("node-noisy");
  const size_t quiet = table->find("node-quiet");
  const size_t blind = table->find("node-blind");
  ASSERT_NE(noisy, std::string::npos);
  EXPECT_LT(noisy, quiet);
  EXPECT_LT(quiet, blind);  // no score at all sorts last
  EXPECT_THAT(*table, HasSubstr("125% (L3 1)"));
  EXPECT_THAT(*table, HasSubstr("88% (NUMA 1)"));
  EXPECT_THAT(*table, HasSubstr("latency-critical=1 batch=1"));
  EXPECT_THAT(*table, HasSubstr("analytics/ingest-7x"));
  EXPECT_THAT(*table, HasSubstr("1m15s"));
  EXPECT_EQ(table->substr(0, 4), "NODE");
}

TEST(RenderNodesTable, AMissingMeasurementIsADashNotAZero) {
  absl::StatusOr<std::string> table = RenderNodesTable(R"([{"name": "n1"}])");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("n1"));
  EXPECT_THAT(*table, Not(HasSubstr("0%")));
  EXPECT_THAT(*table, Not(HasSubstr("0.00")));
}

TEST(RenderNodesTable, AcceptsABareListAndTheAgeAsADurationString) {
  absl::StatusOr<std::string> table =
      RenderNodesTable(R"([{"name": "n1", "contention_score": 0.5, "telemetry_age": "2.5s"}])");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("2.5s"));
}

// The operator API (extender/src/api) spells keys in camelCase.
TEST(RenderNodesTable, ReadsCamelCaseKeysToo) {
  constexpr char kCamel[] = R"([
    {"name": "n1", "contentionScore": 0.3, "telemetryAgeSeconds": 2.0, "confidence": 1,
     "l3Domains": [{"id": 0, "pressure": 0.3}], "numaNodes": [{"id": 1, "membwUtilisation": 0.2}],
     "podsByClass": {"standard": 4}, "aggressors": []},
    {"name": "n2", "contentionScore": 0.8, "telemetryAgeSeconds": null, "confidence": 0}])";
  absl::StatusOr<std::string> table = RenderNodesTable(kCamel);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_LT(table->find("n2"), table->find("n1"));
  EXPECT_THAT(*table, HasSubstr("30% (L3 0)"));
  EXPECT_THAT(*table, HasSubstr("20% (NUMA 1)"));
  EXPECT_THAT(*table, HasSubstr("standard=4"));
  EXPECT_THAT(*table, HasSubstr("2.0s"));
}

TEST(RenderDecisions, ReadsCamelCaseKeysToo) {
  absl::StatusOr<std::string> text = RenderDecisions(R"([{"at": "t", "verb": "prioritize",
      "pod": "content/a", "contentionClass": "batch", "classSource": "label-rule",
      "bookedNode": "n3", "nodes": [{"node": "n3", "feasible": true, "score": 8,
      "terms": [{"name": "membw_utilisation", "value": 0.5, "detail": ""}]}]}])");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("class batch (label-rule)  booked on n3"));
  EXPECT_THAT(*text, HasSubstr("membw_utilisation=0.50"));
}

TEST(RenderDecisions, SaysHowManyFeasibleNodesWereNotKept) {
  absl::StatusOr<std::string> text = RenderDecisions(R"([{"at": "t", "verb": "filter",
      "pod": "content/a", "contentionClass": "batch", "classSource": "label-rule",
      "candidates": 500, "omittedNodes": 384, "nodes": [{"node": "n3", "feasible": false,
      "reason": "isolation: n3 runs content/article"}]}])");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("isolation: n3 runs content/article"));
  EXPECT_THAT(*text, HasSubstr("(384 more feasible nodes with lower scores not kept)"));
}

TEST(RenderNodesTable, SaysSoWhenNoNodeReported) {
  absl::StatusOr<std::string> table = RenderNodesTable(R"({"nodes": []})");
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(*table, HasSubstr("No nodes reported yet"));
}

TEST(RenderNodesTable, RefusesAnswersOfTheWrongShape) {
  EXPECT_THAT(std::string(RenderNodesTable("<html>").status().message()), HasSubstr("not JSON"));
  EXPECT_THAT(std::string(RenderNodesTable(R"({"items": []})").status().message()),
              HasSubstr("\"nodes\" list"));
  EXPECT_THAT(std::string(RenderNodesTable(R"([{"score": 1}])").status().message()),
              HasSubstr("no \"name\""));
}

TEST(RenderNodeDetail, ShowsDomainsNumaNodesAndPods) {
  constexpr char kNode[] = R"({
    "name": "node-1", "contention_score": 0.7, "telemetry_age_seconds": 1.0, "confidence": 1,
    "agent_version": "0.1.0", "sequence": 42,
    "cpu_manager_policy": "static", "topology_manager_policy": "single-numa-node",
    "capabilities": {"resctrl_monitoring": "available", "perf": "EACCES: perf_event_paranoid 3"},
    "l3_domains": [{"id": 1, "numa_node": 1, "size_bytes": 26214400,
                    "occupancy_bytes": 32925696, "pressure": 1.256}],
    "numa_nodes": [{"id": 1, "cpus": "8-15", "memory_bytes": 34359738368,
                    "peak_membw_bytes_per_second": 50000000000,
                    "membw_bytes_per_second": 22100000000, "membw_utilisation": 0.442,
                    "free_exclusive_cpus": 6, "free_memory_bytes": 17179869184}],
    "pods_by_class": {"batch": 1},
    "aggressors": ["analytics/ingest"],
    "pods": [{"namespace": "analytics", "name": "ingest", "qos_class": "Burstable",
              "contention_class": "batch", "class_source": "label-rule", "aggressor": true,
              "llc_occupancy_bytes": 32925696, "membw_total_bytes_per_second": 22100000000,
              "ipc": 0.9}]
  })";
  absl::StatusOr<std::string> text = RenderNodeDetail(kNode);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("Node:         node-1"));
  EXPECT_THAT(*text, HasSubstr("single-numa-node"));
  EXPECT_THAT(*text, HasSubstr("perf: EACCES: perf_event_paranoid 3"));
  EXPECT_THAT(*text, HasSubstr("25.0MiB"));
  EXPECT_THAT(*text, HasSubstr("126%"));
  EXPECT_THAT(*text, HasSubstr("22.10GB/s"));
  EXPECT_THAT(*text, HasSubstr("analytics/ingest"));
  EXPECT_THAT(*text, HasSubstr("label-rule"));
  EXPECT_THAT(*text, HasSubstr("0.90"));
}

TEST(RenderDecisions, ShowsReasonsForRejectionsAndTermsForScores) {
  constexpr char kDecisions[] = R"({"decisions": [
    {"at": "2026-11-30T10:00:02Z", "verb": "prioritize", "pod": "content/article-1",
     "contention_class": "latency-critical", "class_source": "annotation",
     "booked_node": "node-2",
     "nodes": [{"node": "node-2", "decision": {"feasible": true, "score": 9, "cost": 0.08,
                "confidence": 1, "terms": [{"name": "l3_pressure", "value": 0.4,
                "detail": "domain 0: 10.0 MB of 25 MB"}]}}]},
    {"at": "2026-11-30T10:00:01Z", "verb": "filter", "pod": "content/article-1",
     "contention_class": "latency-critical", "class_source": "annotation",
     "nodes": [{"node": "node-1", "feasible": false,
                "reason": "isolation: batch pod analytics/ingest on this node"},
               {"node": "node-2", "feasible": true, "score": 5, "l3_pressure": 0.4,
                "membw_utilisation": 0.1}]}
  ]})";
  absl::StatusOr<std::string> text = RenderDecisions(kDecisions);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("prioritize  content/article-1  class latency-critical (annotation)"
                               "  booked on node-2"));
  EXPECT_THAT(*text, HasSubstr("l3_pressure: domain 0: 10.0 MB of 25 MB"));
  EXPECT_THAT(*text, HasSubstr("rejected"));
  EXPECT_THAT(*text, HasSubstr("isolation: batch pod analytics/ingest on this node"));
  EXPECT_THAT(*text, HasSubstr("l3_pressure=0.40 membw_utilisation=0.10"));
}

TEST(RenderDecisions, SaysSoWhenThereAreNone) {
  absl::StatusOr<std::string> text = RenderDecisions("[]");
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("No recorded decisions"));
}

constexpr char kWorkloads[] = R"([
  {"workload": "analytics/Deployment/event-scan", "replicas": 3, "nodes": 3, "windows": 412.0,
   "confidence": 1.0, "aggressor": true,
   "aggressorWhy": "recent peak membw 44% of its NUMA node's peak",
   "predictedMembwBytesPerSecond": 21.8e9, "predictedLlcBytes": 30.9e6,
   "metrics": {"membw_total_bytes_per_second": {"mean": 21.1e9, "p95": 21.8e9},
               "llc_occupancy_bytes": {"mean": 30.0e6, "p95": 30.9e6},
               "llc_misses_per_kilo_instructions": {"mean": 28.0, "p95": 31.0}}},
  {"workload": "shop/Deployment/web", "replicas": 1, "nodes": 1, "windows": 12.0,
   "confidence": 0.4, "aggressor": false, "metrics": {}}
])";

TEST(RenderWorkloads, TableShowsEvidenceBandwidthAndVerdict) {
  absl::StatusOr<std::string> table = RenderWorkloadsTable(kWorkloads);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("analytics/Deployment/event-scan"));
  EXPECT_THAT(*table, HasSubstr("21.10GB/s / 21.80GB/s"));
  EXPECT_THAT(*table, HasSubstr("aggressor (recent peak membw 44%"));
  EXPECT_THAT(*table, HasSubstr("0.40"));
  EXPECT_EQ(*RenderWorkloadsTable("[]"),
            "No workload profiles yet: no replica has been measured.\n");
  EXPECT_FALSE(RenderWorkloadsTable("{\"x\": 1}").ok());
}

TEST(RenderWorkloads, DetailShowsThePredictionAndEveryMetric) {
  const std::string one = nlohmann::json::parse(kWorkloads)[0].dump();
  absl::StatusOr<std::string> detail = RenderWorkloadDetail(one);
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_THAT(*detail, HasSubstr("Workload analytics/Deployment/event-scan"));
  EXPECT_THAT(*detail, HasSubstr("replicas 3 on 3 node(s), 412 replica-windows"));
  EXPECT_THAT(*detail, HasSubstr("predicted: 21.80GB/s"));
  EXPECT_THAT(*detail, HasSubstr("llc_misses_per_kilo_instructions"));
  EXPECT_FALSE(RenderWorkloadDetail("[]").ok());
}

// Issue 22: what the workload needs and how it suffers, with the evidence.
TEST(RenderWorkloads, DetailShowsTheInterferenceFit) {
  nlohmann::json one = nlohmann::json::parse(kWorkloads)[0];
  one["interference"] = {{"llcDemandBytes", 19188940},       {"soloMembwBytesPerSecond", 2.8e9},
                         {"cacheSensitivity", 0.91},         {"membwSensitivity", 0.35},
                         {"fitConfidence", 0.62},            {"baselineIpc", 2.1},
                         {"baselineMpki", 1.5}};
  absl::StatusOr<std::string> detail = RenderWorkloadDetail(one.dump());
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_THAT(*detail, HasSubstr("needs: 18.3MiB of L3 (working set), 2.80GB/s alone"));
  EXPECT_THAT(*detail, HasSubstr("cache sensitivity 0.91, bandwidth sensitivity 0.35"));
  EXPECT_THAT(*detail, HasSubstr("fit confidence 0.62; baseline IPC 2.10, MPKI 1.50"));
  // A workload not yet fitted shows dashes, not zeros.
  one["interference"] = {{"fitConfidence", 0}};
  detail = RenderWorkloadDetail(one.dump());
  ASSERT_TRUE(detail.ok());
  EXPECT_THAT(*detail, HasSubstr("needs: - of L3"));
}

TEST(Format, UnitsAreHumanReadable) {
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(19188940), "18.3MiB");
  EXPECT_EQ(FormatBytesPerSecond(2.8e9), "2.80GB/s");
  EXPECT_EQ(FormatPercent(0.842), "84%");
  EXPECT_EQ(FormatSeconds(1.25), "1.2s");
  EXPECT_EQ(FormatSeconds(185), "3m05s");
  EXPECT_EQ(FormatSeconds(7260), "2h1m");
}

}  // namespace
}  // namespace neighborly::ctl
