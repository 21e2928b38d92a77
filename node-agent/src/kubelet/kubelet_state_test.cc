#include "node-agent/src/kubelet/kubelet_state.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUid[] = "39b37746-7f5e-4064-b8e1-eebd2bfaa003";

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
