#include "node-agent/src/simulate/node_report.h"

#include <regex>
#include <set>
#include <string>

#include "common/cpu_list.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::google::protobuf::util::TimeUtil;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

Scenario Load(const std::string& name) {
  absl::StatusOr<Scenario> s =
      LoadScenarioFile(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/scenarios/" + name);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : Scenario{};
}

Scenario Parse(const std::string& text) {
  absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : Scenario{};
}

TEST(NodeReportTest, DomainSumsFollowWherePodsRun) {
  const Scenario s = Load("two-nodes.yaml");
  ASSERT_EQ(s.nodes.size(), 2u);
  const tv1::NodeReport& n = s.nodes[0];
  // frontend-1 is pinned to cpus 2-3 (L3 0); scanner-1 runs in the shared pool but
  // its memory is on NUMA node 1, so its footprint is counted on L3 1.
  EXPECT_EQ(n.topology().l3_domains(0).occupancy_bytes(), 4'000'000u);
  EXPECT_EQ(n.topology().l3_domains(1).occupancy_bytes(), 2'000'000u);
  EXPECT_EQ(n.topology().l3_domains(0).membw_total_bytes_per_second(), 1'000'000'000u);
  EXPECT_EQ(n.topology().l3_domains(1).membw_total_bytes_per_second(), 8'000'000'000u);
  EXPECT_EQ(n.topology().l3_domains(0).membw_local_bytes_per_second(), 900'000'000u);
  EXPECT_EQ(n.topology().l3_domains(1).membw_local_bytes_per_second(), 0u);
  EXPECT_EQ(n.topology().numa_nodes(0).membw_bytes_per_second(), 1'000'000'000u);
  EXPECT_EQ(n.topology().numa_nodes(1).membw_bytes_per_second(), 8'000'000'000u);
  // Shared pool: everything but frontend-1's exclusive cpus (reserved cpu 0 included).
  EXPECT_EQ(n.kubelet().shared_pool_cpus(), "0-1,4-7");
  // An idle node measures zero, which is a measurement.
  const tv1::NodeReport& idle = s.nodes[1];
  EXPECT_TRUE(idle.topology().l3_domains(0).has_occupancy_bytes());
  EXPECT_EQ(idle.topology().l3_domains(0).occupancy_bytes(), 0u);
  EXPECT_EQ(idle.kubelet().shared_pool_cpus(), "0-7");
}

TEST(NodeReportTest, MissingMeasurementsAreAbsentWithReason) {
  const Scenario s = Load("two-nodes.yaml");
  const tv1::PodReport& full = s.nodes[0].pods(0);
  // Everything but PSI is given for frontend-1.
  EXPECT_THAT(full.unavailable(),
              UnorderedElementsAre(Pair("psi_cpu_some_avg10", "not in scenario"),
                                   Pair("psi_memory_some_avg10", "not in scenario"),
                                   Pair("psi_memory_full_avg10", "not in scenario")));
  const tv1::PodReport& scanner = s.nodes[0].pods(1);
  EXPECT_FALSE(scanner.has_ipc());
  EXPECT_FALSE(scanner.has_cpu_usage_millicores());
  EXPECT_FALSE(scanner.has_membw_local_bytes_per_second());
  EXPECT_EQ(scanner.unavailable().at("ipc"), "not in scenario");
  EXPECT_EQ(scanner.unavailable().at("cpu_usage_millicores"), "not in scenario");
  EXPECT_EQ(scanner.unavailable().at("membw_local_bytes_per_second"), "not in scenario");
  EXPECT_EQ(scanner.unavailable().at("psi_memory_full_avg10"), "not in scenario");
  EXPECT_EQ(scanner.unavailable().count("llc_occupancy_bytes"), 0u);
  EXPECT_EQ(scanner.unavailable().count("memory_bytes_by_numa"), 0u);
}

TEST(NodeReportTest, ScenarioValuesForDomainsWin) {
  const Scenario s = Load("two-nodes.json");
  const tv1::L3Domain& l3 = s.nodes[0].topology().l3_domains(0);
  EXPECT_EQ(l3.occupancy_bytes(), 5'000'000u);                   // given
  EXPECT_EQ(l3.membw_total_bytes_per_second(), 3'000'000'000u);  // from the pod
  EXPECT_FALSE(l3.has_membw_local_bytes_per_second());           // no pod measures it
  EXPECT_EQ(s.nodes[0].topology().numa_nodes(0).membw_bytes_per_second(), 3'000'000'000u);
}

TEST(NodeReportTest, UnavailableCapabilityRemovesItsMeasurements) {
  const Scenario s = Parse(
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
      "  capabilities: {resctrlOccupancy: resctrl not mounted, perfHardwareCounters: false}\n"
      "  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1, occupancyBytes: 9}\n"
      "  pods:\n  - {uid: u, namespace: n, name: p, qosClass: BestEffort,\n"
      "     llcOccupancyBytes: 5, ipc: 1.5, membwTotalBytesPerSecond: 7}\n");
  ASSERT_EQ(s.nodes.size(), 1u);
  const tv1::PodReport& pod = s.nodes[0].pods(0);
  EXPECT_FALSE(pod.has_llc_occupancy_bytes());
  EXPECT_FALSE(pod.has_ipc());
  EXPECT_EQ(pod.unavailable().at("llc_occupancy_bytes"), "resctrl not mounted");
  EXPECT_EQ(pod.unavailable().at("ipc"), "disabled in scenario");
  EXPECT_EQ(pod.membw_total_bytes_per_second(), 7u);
  EXPECT_FALSE(s.nodes[0].topology().l3_domains(0).has_occupancy_bytes());
  EXPECT_EQ(s.nodes[0].topology().l3_domains(0).membw_total_bytes_per_second(), 7u);
}

TEST(NodeReportTest, SplitsAcrossDomainsWithoutLosingBytes) {
  // 3 of the pod's cpus on L3 0 and 1 on L3 1: 10 bytes split 7.5 / 2.5.
  const Scenario s = Parse(
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
      "  numaNodes:\n  - {id: 0, cpus: \"0-7\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n"
      "  - {id: 1, cpus: \"4-7\", sizeBytes: 1}\n"
      "  pods:\n  - {uid: u, namespace: n, name: p, qosClass: Guaranteed,\n"
      "     exclusiveCpus: \"1-4\", llcOccupancyBytes: 10}\n");
  ASSERT_EQ(s.nodes.size(), 1u);
  const auto& l3 = s.nodes[0].topology().l3_domains();
  EXPECT_EQ(l3[0].occupancy_bytes() + l3[1].occupancy_bytes(), 10u);
  EXPECT_EQ(l3[0].occupancy_bytes(), 8u);
  EXPECT_FALSE(l3[0].has_membw_total_bytes_per_second());  // no pod gives bandwidth
  EXPECT_FALSE(s.nodes[0].topology().numa_nodes(0).has_membw_bytes_per_second());
}

TEST(NodeReportTest, SimulatedNodeStampsIdentityAndWindow) {
  const Scenario s = Load("two-nodes.yaml");
  SimulatedNode node(s.nodes[0], "boot-1");
  EXPECT_EQ(node.name(), "small-1");
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  const tv1::NodeReport first = node.NextReport(start, absl::Seconds(1));
  const tv1::NodeReport second =
      node.NextReport(start + absl::Seconds(1), absl::Milliseconds(1500));
  EXPECT_EQ(first.sequence(), 1u);
  EXPECT_EQ(second.sequence(), 2u);
  EXPECT_EQ(first.boot_id(), "boot-1");
  EXPECT_EQ(first.agent_version(), NEIGHBORLY_VERSION);
  EXPECT_EQ(first.node_name(), "small-1");
  EXPECT_EQ(TimeUtil::TimestampToSeconds(first.window_start()), 1'700'000'000);
  EXPECT_EQ(TimeUtil::DurationToMilliseconds(second.window_duration()), 1500);
  EXPECT_EQ(first.pods_size(), 2);
  EXPECT_THAT(first.pods(0).memory_bytes_by_numa(), UnorderedElementsAre(Pair(0u, 2147483648u)));
}

TEST(NodeReportTest, BootIdsAreRandomUuids) {
  const std::string a = NewBootId();
  const std::string b = NewBootId();
  EXPECT_NE(a, b);
  EXPECT_TRUE(std::regex_match(
      a, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << a;
}

// deploy/examples/content-platform.yaml must keep exercising every filter the
// demo and the acceptance test show.
TEST(NodeReportTest, ContentPlatformScenarioTellsTheStory) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(std::string(NEIGHBORLY_SOURCE_DIR) +
                                                "/deploy/examples/content-platform.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 6u);
  int pods = 0;
  std::set<std::string> latency_critical_nodes;
  for (const tv1::NodeReport& node : s->nodes) {
    pods += node.pods_size();
    EXPECT_EQ(node.topology().cpus_online(), 16u);
    EXPECT_EQ(node.kubelet().topology_manager_policy(), "single-numa-node");
    for (const tv1::PodReport& pod : node.pods()) {
      auto it = pod.annotations().find("neighborly.io/class");
      if (it != pod.annotations().end() && it->second == "latency-critical") {
        latency_critical_nodes.insert(node.node_name());
      }
    }
  }
  EXPECT_EQ(pods, 14);
  EXPECT_EQ(latency_critical_nodes, (std::set<std::string>{"node-1", "node-2", "node-6"}));
  // node-3: a batch job moving > 40 % of socket 0's peak bandwidth.
  const tv1::NumaNode& busy = s->nodes[2].topology().numa_nodes(0);
  EXPECT_GT(busy.membw_bytes_per_second(), busy.peak_membw_bytes_per_second() * 4 / 10);
  // node-4: 6 cores free for exclusive use, but no NUMA node has 4.
  const tv1::NodeReport& full = s->nodes[3];
  const absl::StatusOr<CpuSet> shared = ParseCpuList(full.kubelet().shared_pool_cpus());
  const absl::StatusOr<CpuSet> reserved = ParseCpuList(full.kubelet().reserved_cpus());
  ASSERT_TRUE(shared.ok() && reserved.ok());
  size_t free_total = 0;
  for (const tv1::NumaNode& numa : full.topology().numa_nodes()) {
    const absl::StatusOr<CpuSet> cpus = ParseCpuList(numa.cpus());
    ASSERT_TRUE(cpus.ok());
    const size_t free = IntersectionSize(*shared, *cpus) - IntersectionSize(*reserved, *cpus);
    EXPECT_LT(free, 4u) << numa.id();
    free_total += free;
  }
  EXPECT_GE(free_total, 4u);
}

}  // namespace
}  // namespace neighborly::agent
