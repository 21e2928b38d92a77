// Issue 26's scenario keys: pod memory (working set, limit, oom_score_adj,
// priority, container requests), node memory, the kubelet's eviction
// thresholds and per-window series; the incident scenario they describe.
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Node(const std::string& node_extra, const std::string& pod_extra) {
  return "apiVersion: neighborly.io/v1alpha1\n"
         "kind: Scenario\n"
         "nodes:\n"
         "- name: n1\n"
         "  kubelet: {evictionHard: {memory.available: 500Mi}, evictionSoft: {memory.available: "
         "\"10%\"}}\n"
         "  numaNodes:\n"
         "  - {id: 0, cpus: \"0-3\", memoryBytes: 8Gi}\n"
         "  l3Domains:\n"
         "  - {id: 0, cpus: \"0-3\", sizeBytes: 8Mi}\n" +
         node_extra +
         "  pods:\n"
         "  - {uid: u1, namespace: ns, name: p1, qosClass: Burstable" +
         pod_extra + "}\n";
}

TEST(ScenarioMemoryTest, PodAndNodeMemoryKeys) {
  absl::StatusOr<Scenario> s = ParseScenario(
      Node("", ", memoryRequestBytes: 1Gi, memoryWorkingSetBytes: 1.5Gi, memoryLimitBytes: 2Gi,"
               " oomScoreAdj: [875, 875, 999], priority: -5,"
               " containerMemoryRequestBytes: {app: 1Gi}"),
      "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  const tv1::NodeReport& n = s->nodes[0];
  const tv1::PodReport& p = n.pods(0);
  EXPECT_EQ(p.memory_working_set_bytes(), 3ull << 29);
  EXPECT_EQ(p.memory_limit_bytes(), 2ull << 30);
  EXPECT_THAT(p.oom_score_adj(), ElementsAre(875, 999));
  EXPECT_EQ(p.priority(), -5);
  EXPECT_EQ(p.container_memory_request_bytes().at("app"), 1ull << 30);
  EXPECT_EQ(n.kubelet().eviction_hard().at("memory.available"), "500Mi");
  EXPECT_EQ(n.kubelet().eviction_soft().at("memory.available"), "10%");
  EXPECT_EQ(n.kubelet().eviction_source(), "scenario");
  // No `memory` key: capacity from the NUMA nodes, availability from the
  // pods' working sets.
  ASSERT_TRUE(n.has_memory());
  EXPECT_EQ(n.memory().capacity_bytes(), 8ull << 30);
  EXPECT_EQ(n.memory().available_bytes(), (8ull << 30) - (3ull << 29));

  s = ParseScenario(Node("  memory: {availableBytes: 2Gi}\n", ""), "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes[0].memory().capacity_bytes(), 8ull << 30);
  EXPECT_EQ(s->nodes[0].memory().available_bytes(), 2ull << 30);
  EXPECT_EQ(s->nodes[0].memory().source(), "scenario");
  // No memory information at all: nothing is made up.
  s = ParseScenario(Node("", ""), "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->nodes[0].has_memory());
}

TEST(ScenarioMemoryTest, BadMemoryKeysNameTheKey) {
  auto error = [](const std::string& text) {
    absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
    return s.ok() ? std::string("parsed") : std::string(s.status().message());
  };
  EXPECT_THAT(error(Node("", ", oomScoreAdj: 2000")), HasSubstr("oomScoreAdj"));
  EXPECT_THAT(error(Node("", ", oomScoreAdj: [1, two]")), HasSubstr("oomScoreAdj"));
  EXPECT_THAT(error(Node("", ", priority: 3000000000")),
              HasSubstr("outside the 32-bit range"));
  EXPECT_THAT(error(Node("", ", memoryWorkingSetBytes: lots")),
              HasSubstr("memoryWorkingSetBytes"));
  EXPECT_THAT(error(Node("  memory: {availableBytes: 9Gi}\n", "")),
              HasSubstr("larger than the node's memory capacity"));
  EXPECT_THAT(error(Node("  memory: {free: 1Gi}\n", "")), HasSubstr("unknown key"));
  EXPECT_THAT(error(Node("", ", series: {ipc: []}")), HasSubstr("must list 1 to 4096 values"));
  EXPECT_THAT(error(Node("", ", series: {ipc: [2, 99]}")), HasSubstr("series.ipc"));
  EXPECT_THAT(error(Node("", ", series: {cpi: [1]}")), HasSubstr("unknown key"));
  EXPECT_THAT(error(Node("", ", series: {membwTotalBytesPerSecond: [1G, \"4 GB\"]}")),
              HasSubstr("membwTotalBytesPerSecond"));
}

TEST(ScenarioMemoryTest, SeriesAreCycledAndDomainSumsFollowThem) {
  absl::StatusOr<Scenario> s = ParseScenario(
      Node("", ", memoryWorkingSetBytes: 1Gi, series: {ipc: [2.0, 1.0],"
               " membwTotalBytesPerSecond: [1G, 5G, 3G], memoryWorkingSetBytes: [1Gi, 2Gi]}"),
      "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->timelines.size(), 1u);
  SimulatedNode node(s->nodes[0], "boot", s->timelines[0]);
  std::vector<double> ipc;
  std::vector<uint64_t> l3_membw, available;
  for (int i = 0; i < 6; ++i) {
    tv1::NodeReport r = node.NextReport(absl::UnixEpoch(), absl::Seconds(1));
    EXPECT_EQ(r.sequence(), static_cast<uint64_t>(i + 1));
    ipc.push_back(r.pods(0).ipc());
    l3_membw.push_back(r.topology().l3_domains(0).membw_total_bytes_per_second());
    available.push_back(r.memory().available_bytes());
  }
  EXPECT_THAT(ipc, ElementsAre(2.0, 1.0, 2.0, 1.0, 2.0, 1.0));
  EXPECT_THAT(l3_membw, ElementsAre(1'000'000'000u, 5'000'000'000u, 3'000'000'000u,
                                    1'000'000'000u, 5'000'000'000u, 3'000'000'000u));
  EXPECT_EQ(available[0], 7ull << 30);
  EXPECT_EQ(available[1], 6ull << 30);
}

TEST(ScenarioMemoryTest, TheIncidentScenarioParses) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(
      std::string(NEIGHBORLY_SOURCE_DIR) + "/deploy/examples/content-platform-incident.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 3u);
  EXPECT_EQ(s->nodes[0].memory().available_bytes(), 7ull << 30);
  EXPECT_EQ(s->timelines[0].pods.size(), 2u);  // the article service and the analytics job
  EXPECT_THAT(s->nodes[0].pods(2).oom_score_adj(), ElementsAre(500, 1000));
}

}  // namespace
}  // namespace neighborly::agent
