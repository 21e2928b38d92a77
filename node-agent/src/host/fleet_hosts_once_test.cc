// The fleet fixture hosts (test/testdata/hosts/generate_fleet.py) through the
// built binary: `neighborly-agent --once --output json --host-root <copy>`.
// Each test checks what an operator of that kind of server would look for:
// the L3 domains with their CPUs and NUMA nodes, monitoring per domain (and
// per SNC part), allocation capabilities, and what the node cannot measure.
#include <sys/wait.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/sys/test_tree.h"
#include "test/support/subprocess.h"

namespace neighborly::agent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using nlohmann::json;

constexpr char kGuaranteed[] = "6f1c0e1a-0000-4000-8000-000000000001";

struct Once {
  int exit_code = -1;
  json report;
  std::string stderr_text;
};

Once RunOnce(const char* fixture) {
  TestTree tree;
  tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + fixture);
  TestTree out;
  const std::string command = absl::StrCat(
      neighborly::testing::BinaryPath("node-agent/neighborly-agent"),
      " --once --output json --interval 50ms --peak-membw-measure off --host-root ", tree.root(),
      " > ", out.Path("/stdout"), " 2> ", out.Path("/stderr"));
  Once run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(out.root());
  run.report = json::parse(fs->ReadFile("/stdout").value_or(""), nullptr, false);
  run.stderr_text = fs->ReadFile("/stderr").value_or("");
  return run;
}

std::vector<std::string> NotMeasured(const json& report) {
  std::vector<std::string> lines;
  if (report["capabilities"].contains("notMeasured")) {
    for (const json& line : report["capabilities"]["notMeasured"]) lines.push_back(line);
  }
  return lines;
}

const json* FindPod(const json& report, const std::string& uid) {
  for (const json& pod : report["pods"]) {
    if (pod["uid"] == uid) return &pod;
  }
  return nullptr;
}

TEST(FleetHostsOnceTest, EpycNps1SixteenCcdL3Domains) {
  Once run = RunOnce("epyc-2s8ccd-nps1-v2-systemd-containerd");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& topo = run.report["topology"];
  ASSERT_EQ(topo["numaNodes"].size(), 2u);
  EXPECT_EQ(topo["numaNodes"][0]["cpus"], "0-15,32-47");
  ASSERT_EQ(topo["l3Domains"].size(), 16u);  // one L3 per CCD, eight per socket
  // CCD 1 of socket 0: two cores and their SMT siblings 32 CPUs up.
  EXPECT_EQ(topo["l3Domains"][1]["cpus"], "2-3,34-35");
  EXPECT_EQ(topo["l3Domains"][1]["sizeBytes"], "33554432");
  EXPECT_FALSE(topo["l3Domains"][1].contains("numaNode"));  // 0, proto3 default
  EXPECT_EQ(topo["l3Domains"][1]["numaNodes"], json::array({0}));
  EXPECT_EQ(topo["l3Domains"][9]["numaNode"], 1);
  EXPECT_EQ(topo["l3Domains"][9]["cpus"], "18-19,50-51");
  // Monitoring per CCD from the root group's mon_L3_<id>.
  EXPECT_EQ(topo["l3Domains"][9]["occupancyBytes"], "4000009");
  EXPECT_EQ(topo["l3Domains"][9]["membwTotalBytesPerSecond"], "0");
  EXPECT_EQ(topo["numaNodes"][1]["membwBytesPerSecond"], "0");
  EXPECT_EQ(topo["cores"].size(), 32u);
  EXPECT_EQ(topo["cores"][1]["cpus"], "1,33");

  const json& caps = run.report["capabilities"];
  EXPECT_EQ(caps["cpuArchitecture"], "x86_64 (AuthenticAMD)");
  EXPECT_EQ(caps["resctrlMbmLocal"]["available"], true);
  const json& alloc = caps["resctrlAllocation"];
  EXPECT_EQ(alloc["l3Cat"]["available"], true);
  EXPECT_EQ(alloc["l3CbmMask"], "ffff");
  EXPECT_EQ(alloc["numClosids"], 16);
  EXPECT_EQ(alloc["closidsUsed"], 1);
  EXPECT_EQ(alloc["mbaUnit"], "amd-1/8-GBps");  // AMD MBA: units of 1/8 GB/s
  EXPECT_EQ(alloc["mbaMax"], 2048);
  EXPECT_EQ(run.report["kubelet"]["cpuManagerPolicyOptions"]["prefer-align-cpus-by-uncorecache"],
            "true");
  const json* g = FindPod(run.report, kGuaranteed);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["exclusiveCpus"], "2-3,34-35");
}

TEST(FleetHostsOnceTest, EpycNps4EightNumaNodesTwoCcdsEach) {
  Once run = RunOnce("epyc-2s8ccd-nps4-v1-cgroupfs-containerd");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& topo = run.report["topology"];
  ASSERT_EQ(topo["numaNodes"].size(), 8u);
  EXPECT_EQ(topo["numaNodes"][5]["cpus"], "20-23,52-55");
  // Same socket 12, other socket 32 (NPS4 quadrants).
  EXPECT_EQ(topo["numaNodes"][0]["distances"], json::array({10, 12, 12, 12, 32, 32, 32, 32}));
  ASSERT_EQ(topo["l3Domains"].size(), 16u);
  EXPECT_EQ(topo["l3Domains"][2]["numaNode"], 1);
  EXPECT_EQ(topo["l3Domains"][11]["numaNode"], 5);
  EXPECT_EQ(topo["l3Domains"][11]["numaNodes"], json::array({5}));
  // Each NUMA node's bandwidth is the sum of its two CCDs.
  for (const json& node : topo["numaNodes"]) EXPECT_TRUE(node.contains("membwBytesPerSecond"));
  EXPECT_EQ(run.report["kubelet"]["topologyManagerPolicy"], "restricted");
  EXPECT_EQ(run.report["pods"].size(), 3u);  // cgroup v1, cgroupfs driver
}

TEST(FleetHostsOnceTest, IntelSnc2OneL3OverTwoNumaNodesMonitoredPerNode) {
  Once run = RunOnce("intel-snc2-submon-v2-systemd-containerd");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& topo = run.report["topology"];
  ASSERT_EQ(topo["numaNodes"].size(), 4u);
  EXPECT_EQ(topo["numaNodes"][1]["cpus"], "4-7,20-23");
  EXPECT_EQ(topo["numaNodes"][1]["distances"], json::array({12, 10, 21, 21}));
  ASSERT_EQ(topo["l3Domains"].size(), 2u);
  const json& l3 = topo["l3Domains"][1];
  EXPECT_EQ(l3["cpus"], "8-15,24-31");
  EXPECT_EQ(l3["numaNodes"], json::array({2, 3}));
  ASSERT_EQ(l3["monitorParts"].size(), 2u);
  EXPECT_EQ(l3["monitorParts"][0]["numaNode"], 2);
  EXPECT_EQ(l3["monitorParts"][1]["numaNode"], 3);
  EXPECT_EQ(l3["monitorParts"][1]["occupancyBytes"], "2000000");  // 4000001 / 2 parts
  EXPECT_EQ(l3["occupancyBytes"], "4000001");
  // Every SNC node gets its own bandwidth from its part.
  for (const json& node : topo["numaNodes"]) EXPECT_TRUE(node.contains("membwBytesPerSecond"));
  const json& alloc = run.report["capabilities"]["resctrlAllocation"];
  EXPECT_EQ(alloc["mbaUnit"], "MBps");  // mounted with mba_MBps: the software controller
  EXPECT_EQ(alloc["numClosids"], 8);    // min(L3 16, MB 8)
  EXPECT_EQ(alloc["l3CbmMask"], "7fff");
  EXPECT_FALSE(alloc.contains("l3SparseMasks"));
  EXPECT_TRUE(NotMeasured(run.report).empty() ||
              NotMeasured(run.report)[0].find("L3 domain") == std::string::npos);
  const json* g = FindPod(run.report, kGuaranteed);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["exclusiveCpus"], "4-5,20-21");
}

TEST(FleetHostsOnceTest, ArmWithoutResctrlSaysWhatItCannotMeasure) {
  Once run = RunOnce("arm-n1-noresctrl-v2-systemd-containerd");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& caps = run.report["capabilities"];
  EXPECT_EQ(caps["cpuArchitecture"], "aarch64 (Arm Neoverse N1)");
  EXPECT_FALSE(caps["resctrlOccupancy"].contains("available"));
  EXPECT_THAT(caps["resctrlOccupancy"]["reason"].get<std::string>(), HasSubstr("MPAM"));
  EXPECT_THAT(caps["resctrlAllocation"]["l3Cat"]["reason"].get<std::string>(),
              HasSubstr("not mounted"));
  const json& topo = run.report["topology"];
  ASSERT_EQ(topo["l3Domains"].size(), 1u);
  EXPECT_EQ(topo["l3Domains"][0]["cpus"], "0-15");
  EXPECT_FALSE(topo["l3Domains"][0].contains("sizeBytes"));
  EXPECT_THAT(topo["note"].get<std::string>(), HasSubstr("no L3 in the sysfs cache information"));
  std::vector<std::string> gaps = NotMeasured(run.report);
  EXPECT_THAT(gaps, Contains(HasSubstr("L3 occupancy and memory bandwidth")));
  EXPECT_THAT(gaps, Contains(HasSubstr("L3 size")));
  EXPECT_EQ(topo["cores"].size(), 16u);  // no SMT
  EXPECT_EQ(run.report["pods"].size(), 3u);
}

TEST(FleetHostsOnceTest, ArmMpamAllocationWithoutMonitors) {
  Once run = RunOnce("arm-v2-mpam-v2-systemd-containerd");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& caps = run.report["capabilities"];
  EXPECT_EQ(caps["cpuArchitecture"], "aarch64 (Arm Neoverse V2)");
  const std::string why = caps["resctrlOccupancy"]["reason"];
  EXPECT_THAT(why, HasSubstr("info/L3_MON"));
  EXPECT_THAT(why, HasSubstr("MPAM"));
  const json& alloc = caps["resctrlAllocation"];
  EXPECT_EQ(alloc["l3Cat"]["available"], true);  // MPAM cache portions through resctrl
  EXPECT_EQ(alloc["mba"]["available"], true);
  EXPECT_EQ(alloc["numClosids"], 32);
  EXPECT_EQ(alloc["l3CbmMask"], "fff");
  EXPECT_EQ(alloc["l3SparseMasks"], true);
  EXPECT_EQ(alloc["mbaUnit"], "percent");
  EXPECT_EQ(alloc["mbaMin"], 5);
  EXPECT_EQ(run.report["topology"]["l3Domains"][0]["sizeBytes"], "120586240");
  EXPECT_FALSE(run.report["topology"]["l3Domains"][0].contains("occupancyBytes"));
  EXPECT_THAT(NotMeasured(run.report), Contains(HasSubstr("MPAM")));
}

TEST(FleetHostsOnceTest, CgroupV2OnlyHostWithResctrlNotMounted) {
  Once run = RunOnce("v2only-nomount-systemd-crio");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_FALSE(run.report.is_discarded()) << run.stderr_text;
  const json& caps = run.report["capabilities"];
  EXPECT_THAT(caps["resctrlOccupancy"]["reason"].get<std::string>(),
              HasSubstr("supported but not mounted"));
  EXPECT_EQ(caps["psi"]["available"], true);
  EXPECT_EQ(run.report["pods"].size(), 3u);
  EXPECT_EQ(run.report["kubelet"]["cpuManagerPolicyOptions"]["strict-cpu-reservation"], "true");
  const json* g = FindPod(run.report, kGuaranteed);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["exclusiveCpus"], "2,10");  // one whole core: a thread and its sibling
  EXPECT_THAT(run.report["topology"]["l3Domains"][0]["cpus"], "0-15");
  EXPECT_THAT(NotMeasured(run.report), Contains(HasSubstr("supported but not mounted")));
}

}  // namespace
}  // namespace neighborly::agent
