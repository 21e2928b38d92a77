// End to end: the built neighborly-agent binary, `--once --output json
// --host-root <fixture>`, on copies of the fixture hosts. For the Intel host
// the pods' MON groups are made beforehand through the fake resctrl (which
// creates the mon_data files as the kernel would), and the agent adopts them.
#include <sys/wait.h>

#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/resctrl/fake_resctrl.h"
#include "node-agent/src/sys/test_tree.h"
#include "test/support/subprocess.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

struct OnceRun {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

// Fixture trees describe other machines, so measuring this one's bandwidth
// for them would be wrong: by default the runs here do not measure.
OnceRun RunOnce(const std::string& host_root,
                const std::string& extra = " --peak-membw-measure off") {
  TestTree out;
  const std::string stdout_path = out.Path("/stdout");
  const std::string command =
      absl::StrCat(neighborly::testing::BinaryPath("node-agent/neighborly-agent"),
                   " --once --output json --interval 50ms --host-root ", host_root, extra, " > ",
                   stdout_path, " 2> ", out.Path("/stderr"));
  OnceRun run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(out.root());
  run.stdout_text = fs->ReadFile("/stdout").value_or("");
  run.stderr_text = fs->ReadFile("/stderr").value_or("");
  return run;
}

TEST(HostOnceE2eTest, IntelFixtureWithAdoptedResctrlGroups) {
  TestTree tree;
  tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) +
                "/test/testdata/hosts/intel-mbm-v2-systemd-containerd");
  std::unique_ptr<Filesystem> real = NewRealFilesystem(tree.root());
  FakeResctrl fake(*real);
  const std::string group =
      "/sys/fs/resctrl/mon_groups/neighborly-6f1c0e1a-0000-4000-8000-000000000001";
  ASSERT_TRUE(fake.MakeDir(group).ok());
  fake.SetCounter(group, 0, "llc_occupancy", "18300000");
  // rmdir on a plain directory needs it empty (the kernel's resctrl does not).
  const std::string stale =
      "/sys/fs/resctrl/mon_groups/neighborly-deadbeef-0000-4000-8000-000000000000";
  tree.Remove(stale);
  tree.MkDir(stale);

  OnceRun run = RunOnce(tree.root());
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  nlohmann::json report = nlohmann::json::parse(run.stdout_text, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.stdout_text;
  EXPECT_EQ(report["nodeName"], "intel-mbm-v2-systemd-containerd");
  EXPECT_EQ(report["capabilities"]["resctrlOccupancy"]["available"], true);
  EXPECT_EQ(report["kubelet"]["cpuManagerPolicy"], "static");
  ASSERT_EQ(report["pods"].size(), 3u);
  bool found = false;
  for (const auto& pod : report["pods"]) {
    if (pod["uid"] != "6f1c0e1a-0000-4000-8000-000000000001") continue;
    found = true;
    EXPECT_EQ(pod["name"], "article-service-5d8f7-abcde");
    EXPECT_EQ(pod["llcOccupancyBytes"], "18300000");
    EXPECT_EQ(pod["exclusiveCpus"], "2-3");
  }
  EXPECT_TRUE(found);
  // The stale group was collected; the adopted one is still there.
  EXPECT_FALSE(real->IsDirectory(stale));
  EXPECT_TRUE(real->IsDirectory(group));
}

TEST(HostOnceE2eTest, VmLikeFixtureExplainsWhatIsMissing) {
  TestTree tree;
  tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) +
                "/test/testdata/hosts/no-rdt-hybrid-systemd-containerd");
  OnceRun run = RunOnce(tree.root());
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  nlohmann::json report = nlohmann::json::parse(run.stdout_text, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.stdout_text;
  EXPECT_THAT(report["capabilities"]["resctrlOccupancy"]["reason"].get<std::string>(),
              HasSubstr("no resctrl"));
  EXPECT_FALSE(report["capabilities"]["perfHardwareCounters"].contains("available"));
  EXPECT_EQ(report["pods"].size(), 3u);
  EXPECT_THAT(report["topology"]["note"].get<std::string>(), HasSubstr("package"));
}

TEST(HostOnceE2eTest, PeakBandwidthFromOverrideAndSmbios) {
  TestTree tree;
  tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) +
                "/test/testdata/hosts/intel-mbm-v2-systemd-containerd");
  tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/smbios/intel-2s-ddr5");
  OnceRun run =
      RunOnce(tree.root(), " --peak-membw-measure off --peak-membw-bytes-per-second 1=180G");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  nlohmann::json report = nlohmann::json::parse(run.stdout_text, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.stdout_text;
  const nlohmann::json& numa = report["topology"]["numaNodes"];
  ASSERT_EQ(numa.size(), 2u);
  EXPECT_EQ(numa[0]["peakMembwSource"], "smbios");
  // 16 channels x 4800 MT/s x 8 B x 80 % sustainable, split by memory.
  EXPECT_THAT(numa[0]["peakMembwDetail"].get<std::string>(), HasSubstr("16 DDR5 module(s)"));
  EXPECT_EQ(numa[1]["peakMembwSource"], "override");
  EXPECT_EQ(numa[1]["peakMembwBytesPerSecond"], "180000000000");
  EXPECT_FALSE(report["capabilities"]["peakMembw"].contains("available"));
  EXPECT_THAT(report["capabilities"]["peakMembw"]["reason"].get<std::string>(),
              HasSubstr("node 0: not measured (measurement disabled"));

  OnceRun bad = RunOnce(tree.root(), " --peak-membw-bytes-per-second fast");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.stderr_text, HasSubstr("\"fast\" is not a positive bandwidth"));
}

TEST(HostOnceE2eTest, MissingHostRootFailsWithOneLine) {
  OnceRun run = RunOnce("/nonexistent-neighborly-root");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.stderr_text, HasSubstr("topology"));
}

// Issue 26: the memory view's inputs from the fixture trees: each pod's
// working set (usage minus inactive file pages) and limit, its processes'
// oom_score_adj (cgroup.procs -> /proc/PID/oom_score_adj), the node's
// /proc/meminfo and the kubelet's eviction thresholds, on cgroup v2 and v1.
TEST(HostOnceE2eTest, MemoryPressureInputsFromFixtureHosts) {
  for (const char* host : {"intel-mbm-v2-systemd-containerd", "amd-v1-cgroupfs-docker"}) {
    SCOPED_TRACE(host);
    TestTree tree;
    tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + host);
    const OnceRun run = RunOnce(tree.root());
    ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
    const nlohmann::json report = nlohmann::json::parse(run.stdout_text);
    // MemTotal 65536000 kB; available = MemFree + Inactive(file).
    EXPECT_EQ(report["memory"]["capacityBytes"], "67108864000");
    EXPECT_EQ(report["memory"]["availableBytes"], std::to_string((20480000ull + 10240000) << 10));
    EXPECT_EQ(report["memory"]["source"], "/proc/meminfo");
    EXPECT_EQ(report["kubelet"]["evictionHard"]["memory.available"], "500Mi");
    EXPECT_EQ(report["kubelet"]["evictionSoft"]["memory.available"], "1Gi");
    EXPECT_THAT(report["kubelet"]["evictionSource"].get<std::string>(), HasSubstr("config"));
    std::map<std::string, nlohmann::json> pods;
    for (const nlohmann::json& p : report["pods"]) pods[p["name"].get<std::string>()] = p;
    ASSERT_EQ(pods.size(), 3u) << run.stdout_text;
    const nlohmann::json& article = pods["article-service-5d8f7-abcde"];
    EXPECT_EQ(article["memoryWorkingSetBytes"], std::to_string(3758096384ull - 268435456));
    EXPECT_EQ(article["memoryLimitBytes"], "4294967296");
    EXPECT_EQ(article["oomScoreAdj"], nlohmann::json::array({-997}));
    const nlohmann::json& scan = pods["event-scan-7c9d-xyz12"];
    EXPECT_FALSE(scan.contains("memoryLimitBytes"));  // "max" / PAGE_COUNTER_MAX: no limit
    EXPECT_EQ(scan["oomScoreAdj"], nlohmann::json::array({994}));
    // The BestEffort pod's tampered process shows beside the kubelet's 1000.
    EXPECT_EQ(pods["debug-shell"]["oomScoreAdj"], nlohmann::json::array({500, 1000}));
  }
}

}  // namespace
}  // namespace neighborly::agent
