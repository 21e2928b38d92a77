#include "node-agent/src/kubelet/kubelet_state.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUid[] = "39b37746-7f5e-4064-b8e1-eebd2bfaa003";

// argv as /proc/PID/cmdline holds it: each argument followed by a NUL.
std::string Argv(std::initializer_list<std::string_view> args) {
  std::string out;
  for (std::string_view a : args) {
    out.append(a);
    out.push_back('\0');
  }
  return out;
}

TEST(CpuManagerStateTest, FormatV2Static) {
  absl::StatusOr<CpuManagerState> state = ParseCpuManagerState(
      R"({"policyName":"static","defaultCpuSet":"0,4-27","entries":{"39b37746-7f5e-4064-b8e1-eebd2bfaa003":{"app":"1-3","side":"28"}},"checksum":3300516549})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->policy, "static");
  EXPECT_EQ(state->default_cpu_set.size(), 25u);
  EXPECT_THAT(state->ExclusiveCpus(kUid), ElementsAre(1, 2, 3, 28));
  EXPECT_TRUE(state->ExclusiveCpus("other").empty());
}

TEST(CpuManagerStateTest, NonePolicyWithoutEntries) {
  absl::StatusOr<CpuManagerState> state =
      ParseCpuManagerState(R"({"policyName":"none","defaultCpuSet":"","checksum":1353318690})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->policy, "none");
  EXPECT_TRUE(state->default_cpu_set.empty());
}

TEST(CpuManagerStateTest, FormatV4DataStringAndUnknownKeys) {
  absl::StatusOr<CpuManagerState> state = ParseCpuManagerState(
      R"({"policyName":"static","defaultCpuSet":"0-7","checksum":0,"dataChecksum":5,)"
      R"("data":"{\"policyName\":\"static\",\"defaultCpuSet\":\"0,3-7\",\"entries\":{\"39b37746-7f5e-4064-b8e1-eebd2bfaa003\":{\"app\":\"1-2\"}},\"podEntries\":{},\"future\":1}"})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_THAT(state->default_cpu_set, ElementsAre(0, 3, 4, 5, 6, 7));
  EXPECT_THAT(state->ExclusiveCpus(kUid), ElementsAre(1, 2));
}

TEST(CpuManagerStateTest, LegacyV1ContainerKeysAreFlagged) {
  absl::StatusOr<CpuManagerState> state = ParseCpuManagerState(
      R"({"policyName":"static","defaultCpuSet":"0-3","entries":{"abcdef":"1"}})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE(state->legacy_container_keys);
  EXPECT_TRUE(state->entries.empty());
}

TEST(CpuManagerStateTest, OddContentNamesTheProblem) {
  EXPECT_THAT(std::string(ParseCpuManagerState("{").status().message()),
              HasSubstr("not valid JSON"));
  EXPECT_THAT(std::string(ParseCpuManagerState("[]").status().message()),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(std::string(ParseCpuManagerState(R"({"defaultCpuSet":""})").status().message()),
              HasSubstr("policyName"));
  EXPECT_THAT(std::string(ParseCpuManagerState(R"({"policyName":"static","defaultCpuSet":"7-1"})")
                              .status()
                              .message()),
              HasSubstr("defaultCpuSet"));
  EXPECT_FALSE(ParseCpuManagerState(R"({"policyName":"static","entries":{"u":{"c":5}}})").ok());
  EXPECT_FALSE(ParseCpuManagerState(R"({"policyName":"static","data":7})").ok());
}

TEST(MemoryManagerStateTest, StaticWithEntries) {
  absl::StatusOr<MemoryManagerState> state = ParseMemoryManagerState(
      R"({"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":68719476736,"systemReserved":1073741824,"allocatable":67645734912,"reserved":0,"free":67645734912}},"cells":[0]}},)"
      R"("entries":{"39b37746-7f5e-4064-b8e1-eebd2bfaa003":{"app":[{"numaAffinity":[0],"type":"memory","size":512}]}},"checksum":1})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->policy, "static");
  EXPECT_EQ(state->machine_state.at(0).at("memory").total_bytes, 68719476736u);
  EXPECT_EQ(state->entries.at(kUid).at("app")[0].size_bytes, 512u);
  EXPECT_THAT(state->entries.at(kUid).at("app")[0].numa_affinity, ElementsAre(0));
}

TEST(MemoryManagerStateTest, NoneAndV3DataAndJunk) {
  EXPECT_EQ(ParseMemoryManagerState(R"({"policyName":"None","checksum":1})")->policy, "none");
  absl::StatusOr<MemoryManagerState> v3 = ParseMemoryManagerState(
      R"({"data":"{\"policyName\":\"Static\",\"machineState\":{},\"entries\":{},\"podEntries\":{}}","dataChecksum":1})");
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->policy, "static");
  EXPECT_FALSE(ParseMemoryManagerState(R"({"policyName":"Static","machineState":{"x":{}}})").ok());
  EXPECT_FALSE(
      ParseMemoryManagerState(R"({"policyName":"Static","entries":{"u":{"c":[{"size":-1}]}}})")
          .ok());
}

TEST(KubeletConfigTest, PoliciesAndReservedCpus) {
  absl::StatusOr<KubeletConfig> config = ParseKubeletConfig(
      "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
      "cpuManagerPolicy: static\ntopologyManagerPolicy: single-numa-node\n"
      "topologyManagerScope: pod\nreservedSystemCPUs: \"0,1\"\ncgroupDriver: systemd\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cpu_manager_policy, "static");
  EXPECT_EQ(config->topology_manager_policy, "single-numa-node");
  EXPECT_EQ(config->topology_manager_scope, "pod");
  EXPECT_EQ(config->reserved_system_cpus, "0-1");
  EXPECT_EQ(config->cgroup_driver, "systemd");
  EXPECT_FALSE(ParseKubeletConfig("a: [\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("- 1\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("cpuManagerPolicy: [a]\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("reservedSystemCPUs: banana\n").ok());
}

TEST(KubeletConfigTest, ResourceManagerOptionsAndReservedMemory) {
  absl::StatusOr<KubeletConfig> config = ParseKubeletConfig(
      "memoryManagerPolicy: Static\n"
      "cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n  distribute-cpus-across-numa: "
      "\"true\"\n"
      "topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: \"16\"\n"
      "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\n    hugepages-2Mi: 1Gi\n"
      "- numaNode: 1\n  limits:\n    memory: 1100Mi\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory_manager_policy, "static");
  EXPECT_EQ(config->cpu_manager_policy_options.size(), 2u);
  EXPECT_EQ(config->cpu_manager_policy_options.at("full-pcpus-only"), "true");
  EXPECT_EQ(config->topology_manager_policy_options.at("max-allowable-numa-nodes"), "16");
  EXPECT_EQ(config->reserved_memory_bytes.at(0), 1u << 30);
  EXPECT_EQ(config->reserved_memory_bytes.at(1), 1100u << 20);

  for (const char* bad :
       {"cpuManagerPolicyOptions: [a]\n", "topologyManagerPolicyOptions:\n  a: [1]\n",
        "reservedMemory: {a: 1}\n", "reservedMemory:\n- limits: {memory: 1Gi}\n",
        "reservedMemory:\n- numaNode: x\n",
        "reservedMemory:\n- numaNode: 0\n  limits: {memory: lots}\n"}) {
    absl::StatusOr<KubeletConfig> c = ParseKubeletConfig(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("kubelet config:")) << bad;
  }
  EXPECT_EQ(ParseKubeletConfig("reservedMemory:\n- numaNode: 0\n  limits: {memory: lots}\n",
                               "/var/lib/kubelet/config.yaml")
                .status()
                .message(),
            "/var/lib/kubelet/config.yaml:3: reservedMemory[0].limits.memory: expected a byte "
            "quantity like 64Mi, got \"lots\" (\"lots\" is not a quantity)");
}

// KubeletConfiguration is read by the kubelet with a YAML library that resolves
// merge keys; this reader now does too (before, "<<" was an ignored unknown key
// and the merged settings were lost).
TEST(KubeletConfigTest, MergeKeysAreResolved) {
  absl::StatusOr<KubeletConfig> config = ParseKubeletConfig(
      "x-numa-reserve: &reserve {limits: {memory: 1Gi}}\n"
      "x-policies: &policies {cpuManagerPolicy: static, memoryManagerPolicy: Static}\n"
      "<<: *policies\n"
      "topologyManagerPolicy: single-numa-node\n"
      "cpuManagerPolicyOptions: {<<: {full-pcpus-only: \"true\"}}\n"
      "reservedMemory:\n- {<<: *reserve, numaNode: 0}\n- {<<: *reserve, numaNode: 1}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cpu_manager_policy, "static");
  EXPECT_EQ(config->memory_manager_policy, "static");
  EXPECT_EQ(config->topology_manager_policy, "single-numa-node");
  EXPECT_EQ(config->cpu_manager_policy_options.at("full-pcpus-only"), "true");
  EXPECT_EQ(config->reserved_memory_bytes.at(0), 1u << 30);
  EXPECT_EQ(config->reserved_memory_bytes.at(1), 1u << 30);
  // A duplicate key is ambiguous (which one did the kubelet take?): refused.
  EXPECT_THAT(std::string(ParseKubeletConfig("cpuManagerPolicy: static\ncpuManagerPolicy: none\n")
                              .status()
                              .message()),
              HasSubstr("kubelet config:2: duplicate key \"cpuManagerPolicy\""));
}

TEST(KubeletFlagsTest, FlagsOverrideTheConfigFile) {
  // "--flag value" and "--flag=value" both.
  const std::string cmdline =
      Argv({"/usr/local/bin/kubelet", "--config=/etc/k/kubelet.yaml", "--fail-swap-on",
            "--cpu-manager-policy", "static", "--topology-manager-policy=Best-Effort",
            "--topology-manager-scope=pod", "--cpu-manager-policy-options=full-pcpus-only=true",
            "--topology-manager-policy-options=prefer-closest-numa-nodes=true",
            "--memory-manager-policy=Static", "--reserved-cpus=0,8", "--reserved-memory",
            "0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=512Mi", "--reserved-memory=1:memory=512Mi"});
  absl::StatusOr<KubeletCommandLine> parsed = ParseKubeletCmdline(cmdline);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->config_path, "/etc/k/kubelet.yaml");
  EXPECT_EQ(parsed->reserved_memory.size(), 2u);

  absl::StatusOr<KubeletConfig> config = ParseKubeletConfig(
      "cpuManagerPolicy: none\ntopologyManagerPolicy: single-numa-node\n"
      "cpuManagerPolicyOptions:\n  align-by-socket: \"true\"\n"
      "reservedMemory:\n- numaNode: 3\n  limits:\n    memory: 1Gi\n");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(ApplyKubeletFlags(*parsed, *config).ok());
  EXPECT_EQ(config->cpu_manager_policy, "static");
  EXPECT_EQ(config->topology_manager_policy, "best-effort");
  EXPECT_EQ(config->topology_manager_scope, "pod");
  EXPECT_EQ(config->memory_manager_policy, "static");
  EXPECT_EQ(config->reserved_system_cpus, "0,8");
  // A map flag replaces the file's map; --reserved-memory accumulates over repeats.
  EXPECT_EQ(config->cpu_manager_policy_options.size(), 1u);
  EXPECT_EQ(config->cpu_manager_policy_options.at("full-pcpus-only"), "true");
  EXPECT_EQ(config->topology_manager_policy_options.at("prefer-closest-numa-nodes"), "true");
  EXPECT_EQ(config->reserved_memory_bytes.size(), 2u);
  EXPECT_EQ(config->reserved_memory_bytes.at(0), 1u << 30);
  EXPECT_EQ(config->reserved_memory_bytes.at(1), 1u << 30);
}

TEST(KubeletFlagsTest, BadFlagsAreErrorsNamingTheFlag) {
  EXPECT_FALSE(ParseKubeletCmdline(Argv({"/bin/bash", "-c"})).ok());
  EXPECT_FALSE(ParseKubeletCmdline("").ok());
  absl::StatusOr<KubeletCommandLine> dangling =
      ParseKubeletCmdline(Argv({"kubelet", "--reserved-cpus"}));
  ASSERT_FALSE(dangling.ok());
  EXPECT_THAT(std::string(dangling.status().message()), HasSubstr("--reserved-cpus has no value"));

  auto apply = [](const std::string& cmdline) {
    absl::StatusOr<KubeletCommandLine> parsed = ParseKubeletCmdline(cmdline);
    if (!parsed.ok()) return parsed.status();
    KubeletConfig config;
    return ApplyKubeletFlags(*parsed, config);
  };
  EXPECT_THAT(std::string(apply(Argv({"kubelet", "--reserved-cpus=x"})).message()),
              HasSubstr("--reserved-cpus"));
  EXPECT_THAT(
      std::string(apply(Argv({"kubelet", "--cpu-manager-policy-options=novalue"})).message()),
      HasSubstr("--cpu-manager-policy-options: \"novalue\" is not key=value"));
  EXPECT_THAT(std::string(apply(Argv({"kubelet", "--reserved-memory=memory=1Gi"})).message()),
              HasSubstr("does not start with <NUMA node>:"));
  EXPECT_THAT(std::string(apply(Argv({"kubelet", "--reserved-memory=0:memory=lots"})).message()),
              HasSubstr("--reserved-memory: memory=\"lots\""));
}

TEST(KubeletStateTest, FindsTheKubeletProcessAndItsConfigFile) {
  TestTree tree;
  tree.Write("/proc/1/cmdline", Argv({"/sbin/init"}));
  tree.Write("/proc/2/cmdline", "");                    // a kernel thread
  tree.Write("/proc/self/cmdline", Argv({"kubelet"}));  // not a pid
  tree.Write("/proc/4242/cmdline", Argv({"/usr/bin/kubelet", "--config", "/etc/kubelet.yaml",
                                         "--topology-manager-policy=restricted"}));
  tree.Write("/etc/kubelet.yaml",
             "topologyManagerPolicy: single-numa-node\ncpuManagerPolicy: static\n");
  KubeletState state = ReadKubeletState(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(state.config.ok()) << state.config.status();
  EXPECT_EQ(state.config->topology_manager_policy, "restricted");
  EXPECT_EQ(state.config->cpu_manager_policy, "static");
  EXPECT_EQ(state.config_source, "config /etc/kubelet.yaml; flags of pid 4242");

  // Flags alone (no config file): the flags on the kubelet's defaults.
  tree.Remove("/etc/kubelet.yaml");
  state = ReadKubeletState(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(state.config.ok()) << state.config.status();
  EXPECT_EQ(state.config->topology_manager_policy, "restricted");
  EXPECT_EQ(state.config_source, "flags of pid 4242");
}

TEST(KubeletStateTest, ReadsEachFileIndependently) {
  TestTree tree;
  tree.Write("/var/lib/kubelet/cpu_manager_state", R"({"policyName":"none","defaultCpuSet":""})");
  tree.Write("/var/lib/kubelet/config.yaml", "cpuManagerPolicy: [\n");
  KubeletState state = ReadKubeletState(*NewRealFilesystem(tree.root()));
  EXPECT_TRUE(state.cpu_manager.ok());
  EXPECT_TRUE(absl::IsNotFound(state.memory_manager.status()));
  EXPECT_FALSE(state.config.ok());
}

}  // namespace
}  // namespace neighborly::agent
