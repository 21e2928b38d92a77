#include "node-agent/src/pods/cgroup_mounts.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

// This VM's table: cgroup v1 controllers plus cgroup2 at /sys/fs/cgroup/unified.
constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(CgroupMountsTest, HybridFromMountinfo) {
  absl::StatusOr<CgroupMounts> mounts = ParseMountinfo(kHybridMountinfo, "/");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(mounts->mode, CgroupMode::kHybrid);
  EXPECT_EQ(mounts->unified, "/sys/fs/cgroup/unified");
  EXPECT_EQ(mounts->V1Dir("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(mounts->V1Dir("perf_event"), "");
  EXPECT_EQ(CgroupModeName(mounts->mode), "hybrid");
}

TEST(CgroupMountsTest, V1ComountedControllersFromProcMounts) {
  absl::StatusOr<CgroupMounts> mounts = ParseProcMounts(
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/perf_event cgroup rw,perf_event 0 0\n",
      "/");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(mounts->mode, CgroupMode::kV1);
  EXPECT_EQ(mounts->V1Dir("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts->V1Dir("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts->V1Dir("perf_event"), "/sys/fs/cgroup/perf_event");
  EXPECT_EQ(mounts->V1Dir("nosuid"), "");
}

TEST(CgroupMountsTest, PureV2SeenFromAContainerWithTheHostAtSlashHost) {
  absl::StatusOr<CgroupMounts> mounts =
      ParseProcMounts("cgroup2 /host/sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", "/host/");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(mounts->mode, CgroupMode::kV2);
  EXPECT_EQ(mounts->unified, "/sys/fs/cgroup");
}

TEST(CgroupMountsTest, NoCgroupsIsAnError) {
  absl::StatusOr<CgroupMounts> mounts = ParseProcMounts("proc /proc proc rw 0 0\n", "/");
  ASSERT_FALSE(mounts.ok());
  EXPECT_THAT(std::string(mounts.status().message()), HasSubstr("no cgroup"));
  EXPECT_FALSE(ParseMountinfo("garbage\n\n- - -\n", "/").ok());
}

TEST(CgroupMountsTest, DetectsFromTheHostRootNotTheAgentNamespace) {
  TestTree tree;
  tree.Write("/proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
  absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(*NewRealFilesystem(tree.root()), "/");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(mounts->mode, CgroupMode::kV2);
  tree.Write("/proc/self/mountinfo", kHybridMountinfo);
  mounts = DetectCgroupMounts(*NewRealFilesystem(tree.root()), "/");
  ASSERT_TRUE(mounts.ok());
  EXPECT_EQ(mounts->mode, CgroupMode::kHybrid);
}

TEST(CgroupMountsTest, ThisMachine) {
  absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(*NewRealFilesystem("/"), "/");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_FALSE(mounts->unified.empty() && mounts->v1.empty());
}

}  // namespace
}  // namespace neighborly::agent
