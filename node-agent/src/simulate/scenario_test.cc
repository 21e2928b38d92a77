#include "node-agent/src/simulate/scenario.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/scenarios/" + name;
}

// A one-node scenario whose only pod, `{body}`, sits on line 10.
std::string PodLine(const std::string& body) {
  return "apiVersion: neighborly.io/v1alpha1\n"            // 1
         "kind: Scenario\n"                                // 2
         "nodes:\n"                                        // 3
         "- name: n1\n"                                    // 4
         "  numaNodes:\n"                                  // 5
         "  - {id: 0, cpus: \"0-3\", memoryBytes: 8Gi}\n"  // 6
         "  l3Domains:\n"                                  // 7
         "  - {id: 0, cpus: \"0-3\", sizeBytes: 8Mi}\n"    // 8
         "  pods:\n"                                       // 9
         "  - {" +
         body + "}\n";  // 10
}

std::string WithPod(const std::string& extra) {
  return PodLine("uid: u1, namespace: ns, name: p1, qosClass: Burstable" + extra);
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
  EXPECT_FALSE(s.ok()) << "parsed: " << text;
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(s.status().message());
}

TEST(ScenarioTest, LoadsYamlWithAnchorsAndMergeKeys) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(Fixture("two-nodes.yaml"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 2u);
  for (const tv1::NodeReport& node : s->nodes) {
    // The merged shape reaches both nodes.
    EXPECT_EQ(node.kubelet().cpu_manager_policy(), "static");
    EXPECT_EQ(node.kubelet().topology_manager_policy(), "single-numa-node");
    EXPECT_EQ(node.kubelet().topology_manager_scope(), "container");  // kubelet default
    EXPECT_EQ(node.kubelet().reserved_cpus(), "0");
    ASSERT_EQ(node.topology().numa_nodes_size(), 2);
    EXPECT_EQ(node.topology().numa_nodes(1).cpus(), "4-7");
    EXPECT_EQ(node.topology().numa_nodes(1).memory_bytes(), 8ull << 30);
    EXPECT_EQ(node.topology().numa_nodes(1).peak_membw_bytes_per_second(), 20'000'000'000ull);
    EXPECT_EQ(node.topology().numa_nodes(1).peak_membw_source(), "scenario");
    EXPECT_THAT(node.topology().numa_nodes(0).distances(), ::testing::ElementsAre(10, 21));
    EXPECT_EQ(node.topology().cpus_online(), 8u);
    EXPECT_EQ(node.topology().l3_domains(1).numa_node(), 1u);
    EXPECT_EQ(node.topology().l3_domains(1).size_bytes(), 8u << 20);
    EXPECT_TRUE(node.capabilities().resctrl_occupancy().available());
    EXPECT_EQ(node.capabilities().resctrl_occupancy().reason(), "simulated");
  }
  const tv1::NodeReport& n1 = s->nodes[0];
  EXPECT_EQ(n1.node_name(), "small-1");
  EXPECT_EQ(s->nodes[1].node_name(), "small-2");
  EXPECT_EQ(s->nodes[1].pods_size(), 0);
  ASSERT_EQ(n1.pods_size(), 2);
  const tv1::PodReport& web = n1.pods(0);
  EXPECT_EQ(web.uid(), "00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(web.namespace_(), "web");
  EXPECT_EQ(web.name(), "frontend-1");
  EXPECT_EQ(web.qos_class(), tv1::QOS_CLASS_GUARANTEED);
  EXPECT_EQ(web.labels().at("app"), "frontend");
  EXPECT_EQ(web.annotations().at("neighborly.io/class"), "latency-critical");
  EXPECT_EQ(web.cpu_request_millicores(), 2000);
  EXPECT_EQ(web.memory_request_bytes(), 2ull << 30);
  EXPECT_EQ(web.exclusive_cpus(), "2-3");
  EXPECT_EQ(web.cpu_usage_millicores(), 1500);
  EXPECT_EQ(web.llc_occupancy_bytes(), 4'000'000u);
  EXPECT_EQ(web.membw_total_bytes_per_second(), 1'000'000'000u);
  EXPECT_EQ(web.membw_local_bytes_per_second(), 900'000'000u);
  EXPECT_DOUBLE_EQ(web.ipc(), 2.0);
  EXPECT_DOUBLE_EQ(web.llc_misses_per_kilo_instructions(), 1.2);
  EXPECT_EQ(web.memory_bytes_by_numa().at(0), 2147483648u);
  EXPECT_EQ(n1.pods(1).qos_class(), tv1::QOS_CLASS_BURSTABLE);
  EXPECT_EQ(n1.pods(1).memory_bytes_by_numa().at(1), 1ull << 30);
}

TEST(ScenarioTest, LoadsJson) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(Fixture("two-nodes.json"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes.size(), 1u);
  EXPECT_EQ(s->nodes[0].node_name(), "json-1");
  EXPECT_EQ(s->nodes[0].pods(0).qos_class(), tv1::QOS_CLASS_BEST_EFFORT);
  EXPECT_FALSE(s->nodes[0].pods(0).has_cpu_request_millicores());
}

TEST(ScenarioTest, UnknownKeyNamesKeyObjectAndLine) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(Fixture("unknown-key.yaml"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("unknown-key.yaml:14: unknown key \"nodes[0].pods[0].cpuRequestMilicores\" "
                        "(known in nodes[0].pods[0]: uid, namespace, name,"));
  EXPECT_THAT(ErrorOf(WithPod(", colour: blue")),
              HasSubstr("t.yaml:10: unknown key \"nodes[0].pods[0].colour\""));
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nextra: 1\nnodes: []\n"),
              HasSubstr("t.yaml:3: unknown key \"extra\" (known: apiVersion, kind, nodes)"));
}

TEST(ScenarioTest, BadCpuListNamesKeyAndLine) {
  absl::StatusOr<Scenario> s = LoadScenarioFile(Fixture("bad-cpu-list.yaml"));
  ASSERT_FALSE(s.ok());
  const std::string message(s.status().message());
  EXPECT_THAT(
      message,
      HasSubstr("bad-cpu-list.yaml:14: nodes[0].pods[0].exclusiveCpus: expected a cpu list"));
  EXPECT_THAT(message, HasSubstr("2-x"));
}

TEST(ScenarioTest, WrongTypesNameKeyAndLine) {
  EXPECT_THAT(
      ErrorOf(WithPod(", cpuRequestMillicores: two")),
      HasSubstr(
          "t.yaml:10: nodes[0].pods[0].cpuRequestMillicores: expected an integer, got \"two\""));
  EXPECT_THAT(ErrorOf(WithPod(", labels: [a, b]")),
              HasSubstr("t.yaml:10: nodes[0].pods[0].labels: expected a map, got a list"));
  EXPECT_THAT(ErrorOf(WithPod(", ipc: fast")),
              HasSubstr("t.yaml:10: nodes[0].pods[0].ipc: expected a number, got \"fast\""));
  EXPECT_THAT(ErrorOf(PodLine("uid: u1, namespace: ns, name: {a: 1}, qosClass: Burstable")),
              HasSubstr("t.yaml:10: nodes[0].pods[0].name: expected a string, got a map"));
  EXPECT_THAT(ErrorOf(WithPod(", psiCpuSomeAvg10: 140")),
              HasSubstr("t.yaml:10: nodes[0].pods[0].psiCpuSomeAvg10: 140 is outside 0..100"));
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes: {a: 1}\n"),
              HasSubstr("t.yaml:3: nodes: expected a list, got a map"));
}

TEST(ScenarioTest, BadQuantityNamesKeyAndLine) {
  const std::string message = ErrorOf(WithPod(", memoryRequestBytes: 4 GiB"));
  EXPECT_THAT(
      message,
      HasSubstr("t.yaml:10: nodes[0].pods[0].memoryRequestBytes: expected a byte quantity"));
  EXPECT_THAT(message, HasSubstr("4 GiB"));
  EXPECT_THAT(
      ErrorOf(WithPod(", memoryBytesByNuma: {\"0\": lots}")),
      HasSubstr("t.yaml:10: nodes[0].pods[0].memoryBytesByNuma.0: expected a byte quantity"));
}

TEST(ScenarioTest, RequiredFieldsAreEnforced) {
  EXPECT_EQ(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n"
                    "- name: n1\n  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
                    "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n  pods:\n"
                    "  - {namespace: ns, name: p1, qosClass: Burstable}\n"),
            "t.yaml:10: missing required key \"nodes[0].pods[0].uid\"");
  EXPECT_THAT(
      ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n"
              "- name: n1\n  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n"),
      HasSubstr("t.yaml:4: missing required key \"nodes[0].numaNodes\" (at least one NUMA node)"));
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n"
                      "- name: n1\n  numaNodes:\n  - {id: 0, memoryBytes: 1}\n"),
              HasSubstr("t.yaml:6: missing required key \"nodes[0].numaNodes[0].cpus\""));
  EXPECT_THAT(ErrorOf("kind: Scenario\nnodes: []\n"),
              HasSubstr("missing required key \"apiVersion\""));
  EXPECT_THAT(
      ErrorOf("apiVersion: neighborly.io/v2\nkind: Scenario\nnodes: []\n"),
      HasSubstr(
          "t.yaml:1: apiVersion: must be \"neighborly.io/v1alpha1\", got \"neighborly.io/v2\""));
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes: []\n"),
              HasSubstr("t.yaml:3: missing required key \"nodes\" (at least one node)"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("t.yaml: file is empty"));
}

TEST(ScenarioTest, EnumsAreChecked) {
  EXPECT_THAT(ErrorOf(PodLine("uid: u1, namespace: ns, name: p1, qosClass: Gold")),
              HasSubstr("must be one of Guaranteed, Burstable, BestEffort, got \"Gold\""));
  const std::string text =
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
      "  kubelet: {cpuManagerPolicy: dynamic}\n"
      "  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n";
  EXPECT_THAT(ErrorOf(text), HasSubstr("t.yaml:5: nodes[0].kubelet.cpuManagerPolicy: must be one "
                                       "of none, static, got \"dynamic\""));
}

TEST(ScenarioTest, DuplicatesAreRefused) {
  const std::string node =
      "- name: n1\n  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n";
  const std::string head = "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n";
  EXPECT_EQ(ErrorOf(head + node + node), "t.yaml:9: nodes[1]: duplicate node name \"n1\"");
  EXPECT_THAT(ErrorOf(WithPod("}\n  - {uid: u1, namespace: ns, name: p2, qosClass: Burstable")),
              HasSubstr("t.yaml:11: nodes[0].pods[1].uid: duplicate pod uid \"u1\""));
  EXPECT_THAT(ErrorOf(WithPod(", name: p2")),
              HasSubstr("t.yaml:10: duplicate key \"nodes[0].pods[0].name\""));
  EXPECT_THAT(
      ErrorOf(head + "- name: n1\n  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
                     "  - {id: 0, cpus: \"4-7\", memoryBytes: 1}\n"),
      HasSubstr("t.yaml:7: nodes[0].numaNodes[1].id: duplicate NUMA node id 0 in node \"n1\""));
}

TEST(ScenarioTest, CpuConsistencyIsChecked) {
  EXPECT_THAT(
      ErrorOf(WithPod(", exclusiveCpus: \"2-5\"")),
      HasSubstr(
          "t.yaml:10: nodes[0].pods[0].exclusiveCpus: \"2-5\" are not all cpus of node \"n1\""));
  EXPECT_THAT(ErrorOf(WithPod(", exclusiveCpus: \"2\"}\n  - {uid: u2, namespace: ns, name: p2, "
                              "qosClass: Guaranteed, exclusiveCpus: \"1-2\"")),
              HasSubstr("t.yaml:11: nodes[0].pods[1].exclusiveCpus: \"1-2\" overlap another pod's "
                        "exclusive cpus"));
  EXPECT_THAT(
      ErrorOf(WithPod(", memoryBytesByNuma: {\"3\": 1}")),
      HasSubstr("t.yaml:10: nodes[0].pods[0].memoryBytesByNuma.3: \"3\" is not a NUMA node id"));
  EXPECT_THAT(ErrorOf(WithPod(", membwTotalBytesPerSecond: 1, membwLocalBytesPerSecond: 2")),
              HasSubstr("membwLocalBytesPerSecond: is larger than membwTotalBytesPerSecond"));
}

TEST(ScenarioTest, ResourceManagerKeysAndSmtAreOptional) {
  const std::string text =
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
      "  threadsPerCore: 2\n"
      "  kubelet: {cpuManagerPolicy: static, memoryManagerPolicy: Static,\n"
      "    cpuManagerPolicyOptions: {full-pcpus-only: \"true\"},\n"
      "    topologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"},\n"
      "    reservedMemoryBytes: {\"0\": 1Gi, \"1\": 512Mi}, allocatableCpus: \"1-7\"}\n"
      "  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 8Gi}\n"
      "  - {id: 1, cpus: \"4-7\", memoryBytes: 8Gi}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-7\", sizeBytes: 8Mi}\n";
  absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  const tv1::NodeReport& r = s->nodes[0];
  EXPECT_EQ(r.kubelet().memory_manager_policy(), "static");
  EXPECT_EQ(r.kubelet().cpu_manager_policy_options().at("full-pcpus-only"), "true");
  EXPECT_EQ(r.kubelet().topology_manager_policy_options().at("prefer-closest-numa-nodes"), "true");
  EXPECT_EQ(r.kubelet().reserved_memory_bytes_by_numa().at(1), 512u << 20);
  EXPECT_EQ(r.kubelet().allocatable_cpus(), "1-7");
  ASSERT_EQ(r.topology().cores_size(), 4);
  EXPECT_EQ(r.topology().cores(2).cpus(), "4-5");
  EXPECT_EQ(r.topology().cores(2).numa_node(), 1u);

  // Older scenarios: none of it; no cores reported (the extender assumes one
  // thread per core).
  absl::StatusOr<Scenario> old = ParseScenario(WithPod(""), "t.yaml");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->nodes[0].topology().cores_size(), 0);
  EXPECT_EQ(old->nodes[0].kubelet().memory_manager_policy(), "");

  const std::string head =
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n";
  const std::string numa =
      "  numaNodes:\n  - {id: 0, cpus: \"0-2\", memoryBytes: 8Gi}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-2\", sizeBytes: 8Mi}\n";
  EXPECT_THAT(
      ErrorOf(head + "  threadsPerCore: 2\n" + numa),
      HasSubstr("NUMA node 0 of node \"n1\" has 3 CPUs, not a multiple of threadsPerCore 2"));
  EXPECT_THAT(ErrorOf(head + "  kubelet: {memoryManagerPolicy: Dynamic}\n" + numa),
              HasSubstr("memoryManagerPolicy"));
  EXPECT_THAT(ErrorOf(head + "  kubelet: {reservedMemoryBytes: {\"7\": 1Gi}}\n" + numa),
              HasSubstr("nodes[0].kubelet.reservedMemoryBytes: key \"7\" is not a NUMA node id"));
  EXPECT_THAT(ErrorOf(head + "  kubelet: {reservedMemoryBytes: {\"0\": lots}}\n" + numa),
              HasSubstr("nodes[0].kubelet.reservedMemoryBytes.0: expected a byte quantity like "
                        "64Mi, got \"lots\""));
  EXPECT_THAT(ErrorOf(head + "  kubelet: {allocatableCpus: \"0-9\"}\n" + numa),
              HasSubstr("nodes[0].kubelet.allocatableCpus: \"0-9\" are not all in the NUMA nodes"));
}

TEST(ScenarioTest, InvalidYamlNamesLine) {
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes: [\n"),
              HasSubstr("t.yaml:"));
  EXPECT_THAT(ErrorOf("a: b\n c: d\n  - e\n"), HasSubstr("t.yaml:2: not valid YAML"));
  EXPECT_THAT(ErrorOf("- just\n- a list\n"),
              HasSubstr("t.yaml:1: top level: expected a map, got a list"));
}

TEST(ScenarioTest, MissingFileIsNamed) {
  absl::StatusOr<Scenario> s = LoadScenarioFile("/nonexistent/scenario.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("/nonexistent/scenario.yaml"));
}

TEST(ScenarioTest, MergeKeepsOwnKeysFirst) {
  const std::string text =
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\n"
      "x-pod: &pod {namespace: ns, qosClass: Burstable, cpuUsageMillicores: 100}\n"
      "nodes:\n- name: n1\n  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n  pods:\n"
      "  - {<<: *pod, uid: a, name: a, cpuUsageMillicores: 700}\n"
      "  - {<<: *pod, uid: b, name: b}\n";
  absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->nodes[0].pods_size(), 2);
  EXPECT_EQ(s->nodes[0].pods(0).cpu_usage_millicores(), 700);
  EXPECT_EQ(s->nodes[0].pods(1).cpu_usage_millicores(), 100);
  EXPECT_EQ(s->nodes[0].pods(1).namespace_(), "ns");
}

TEST(ScenarioTest, CapabilitiesCanBeSwitchedOff) {
  const std::string text =
      "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
      "  capabilities: {resctrlOccupancy: resctrl not mounted, psi: false, rmidsFree: 12}\n"
      "  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n";
  absl::StatusOr<Scenario> s = ParseScenario(text, "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  const tv1::Capabilities& caps = s->nodes[0].capabilities();
  EXPECT_FALSE(caps.resctrl_occupancy().available());
  EXPECT_EQ(caps.resctrl_occupancy().reason(), "resctrl not mounted");
  EXPECT_FALSE(caps.psi().available());
  EXPECT_EQ(caps.psi().reason(), "disabled in scenario");
  EXPECT_TRUE(caps.resctrl_mbm_total().available());
  EXPECT_EQ(caps.rmids_free(), 12u);
  EXPECT_FALSE(caps.has_rmids_total());
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nnodes:\n- name: n1\n"
                      "  capabilities: {rdt: true}\n"
                      "  numaNodes:\n  - {id: 0, cpus: \"0-3\", memoryBytes: 1}\n"
                      "  l3Domains:\n  - {id: 0, cpus: \"0-3\", sizeBytes: 1}\n"),
              HasSubstr("t.yaml:5: unknown key \"nodes[0].capabilities.rdt\""));
}

// Merge keys through aliases: a map merging itself (found by scenario_fuzzer:
// unbounded recursion, a stack overflow) and maps merging maps exponentially
// ("billion laughs": hours of CPU for a 400-byte file) are refused; chains of
// merges within the limits still resolve.
TEST(ScenarioTest, MergeOfItselfIsRefused) {
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\n"
                      "nodes: [&a {name: x, <<: *a}]\n"),
              HasSubstr("t.yaml:3: merge key \"<<\" in nodes[0] refers to a map that contains it"));
  // The same two levels down.
  EXPECT_THAT(ErrorOf("apiVersion: neighborly.io/v1alpha1\nkind: Scenario\n"
                      "nodes: [&a {name: x, <<: {<<: {<<: *a}}}]\n"),
              HasSubstr("a map cannot merge itself"));
}

TEST(ScenarioTest, ExponentialMergesAreRefused) {
  std::string text = "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nx-a0: &a0 {name: n1}\n";
  for (int i = 1; i <= 9; ++i) {
    text += "x-a" + std::to_string(i) + ": &a" + std::to_string(i) + " {<<: [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]}\n";
  }
  text += "nodes: [{<<: *a9}]\n";  // 10^9 merges unbounded
  EXPECT_THAT(ErrorOf(text),
              HasSubstr("t.yaml:13: merge keys in nodes[0] expand to more than 256 maps"));
}

TEST(ScenarioTest, DeepMergeChainsAreRefused) {
  auto chain = [](int depth) {
    std::string text = "apiVersion: neighborly.io/v1alpha1\nkind: Scenario\nx-m0: &m0 {name: n1}\n";
    for (int i = 1; i < depth; ++i) {
      text += "x-m" + std::to_string(i) + ": &m" + std::to_string(i) + " {<<: *m" +
              std::to_string(i - 1) + "}\n";
    }
    return text + "nodes: [{<<: *m" + std::to_string(depth - 1) +
           ", numaNodes: [{id: 0, cpus: \"0-3\", memoryBytes: 1}],"
           " l3Domains: [{id: 0, cpus: \"0-3\", sizeBytes: 1}]}]\n";
  };
  // 16 maps deep (the node and 15 merged below it) is allowed; the name comes
  // from the innermost.
  absl::StatusOr<Scenario> s = ParseScenario(chain(15), "t.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes[0].node_name(), "n1");
  EXPECT_THAT(ErrorOf(chain(16)),
              HasSubstr("t.yaml:19: merge keys in nodes[0] are nested more than 16 deep"));
}

}  // namespace
}  // namespace neighborly::agent
