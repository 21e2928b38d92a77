#include "node-agent/src/resctrl/resctrl_alloc.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/resctrl/resctrl.h"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

struct Host {
  explicit Host(const char* fixture) {
    tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + fixture);
    fs = NewRealFilesystem(tree.root());
  }
  ResctrlAllocInfo Detect(CpuVendor vendor) {
    absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*fs, "/");
    return DetectResctrlAllocation(*fs, table.ok() ? *table : std::vector<MountEntry>{}, vendor);
  }
  TestTree tree;
  std::unique_ptr<Filesystem> fs;
};

TEST(CpuInfoTest, VendorsAndArmParts) {
  EXPECT_EQ(ParseCpuInfo("processor\t: 0\nvendor_id\t: GenuineIntel\n").vendor, CpuVendor::kIntel);
  EXPECT_EQ(ParseCpuInfo("vendor_id : AuthenticAMD\n").description, "x86_64 (AuthenticAMD)");
  CpuArchitecture arm = ParseCpuInfo("CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n");
  EXPECT_EQ(arm.vendor, CpuVendor::kArm);
  EXPECT_EQ(arm.description, "aarch64 (Arm Neoverse V2)");
  EXPECT_EQ(ParseCpuInfo("CPU implementer : 0x61\nCPU part : 0x022\n").description,
            "aarch64 (implementer 0x61, part 0x022)");
  EXPECT_EQ(ParseCpuInfo("garbage\n\x01\x02").vendor, CpuVendor::kUnknown);
}

TEST(ResctrlAllocTest, AmdUnitsIntelSoftwareControllerAndMpam) {
  Host amd("epyc-2s8ccd-nps4-v1-cgroupfs-containerd");
  ResctrlAllocInfo a = amd.Detect(CpuVendor::kAmd);
  EXPECT_TRUE(a.l3_cat);
  EXPECT_EQ(a.cbm_bits, 16u);
  EXPECT_TRUE(a.mba);
  EXPECT_EQ(a.mba_unit, MbaUnit::kAmdEighthGBps);
  EXPECT_EQ(a.mba_max, 2048u);
  EXPECT_EQ(a.num_closids, 16u);

  Host snc("intel-snc2-submon-v2-systemd-containerd");
  ResctrlAllocInfo s = snc.Detect(CpuVendor::kIntel);
  EXPECT_EQ(s.mba_unit, MbaUnit::kMBps);  // mounted with mba_MBps
  EXPECT_EQ(s.num_closids, 8u);           // the smaller of L3 (16) and MB (8)
  EXPECT_EQ(s.cbm_bits, 15u);
  EXPECT_FALSE(s.sparse_masks);
  // A group someone else made takes a CLOSID.
  snc.tree.MkDir("/sys/fs/resctrl/COS1");
  EXPECT_EQ(snc.Detect(CpuVendor::kIntel).closids_used, 2u);

  Host mpam("arm-v2-mpam-v2-systemd-containerd");
  ResctrlAllocInfo m = mpam.Detect(CpuVendor::kArm);
  EXPECT_TRUE(m.l3_cat);
  EXPECT_EQ(m.mba_unit, MbaUnit::kPercent);
  EXPECT_EQ(m.mba_granularity, 5u);
  // MPAM without monitors: monitoring is refused, allocation is not.
  absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*mpam.fs, "/");
  ResctrlInfo mon = DetectResctrl(*mpam.fs, *table);
  EXPECT_FALSE(mon.usable);
  EXPECT_THAT(mon.reason, HasSubstr("info/L3_MON"));
}

TEST(ResctrlAllocTest, BadOrMissingInfoSaysWhy) {
  Host host("intel-snc2-submon-v2-systemd-containerd");
  host.tree.Write("/sys/fs/resctrl/info/L3/cbm_mask", "zz\n");
  host.tree.Write("/sys/fs/resctrl/info/MB/bandwidth_gran", "0\n");
  ResctrlAllocInfo bad = host.Detect(CpuVendor::kIntel);
  EXPECT_FALSE(bad.l3_cat);
  EXPECT_THAT(bad.l3_reason, HasSubstr("cbm_mask"));
  EXPECT_FALSE(bad.mba);
  EXPECT_THAT(bad.mba_reason, HasSubstr("bandwidth_gran"));

  Host none("arm-n1-noresctrl-v2-systemd-containerd");
  ResctrlAllocInfo n = none.Detect(CpuVendor::kArm);
  EXPECT_FALSE(n.l3_cat);
  EXPECT_EQ(n.l3_reason, "resctrl is not mounted");
}

// SNC: each mon_sub_L3_<node> is kept as that NUMA node's part of the domain.
TEST(ResctrlPartsTest, SubNumaPartsPerNode) {
  Host host("intel-snc2-submon-v2-systemd-containerd");
  absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*host.fs, "/");
  ResctrlInfo info = DetectResctrl(*host.fs, *table);
  ASSERT_TRUE(info.usable) << info.reason;
  absl::StatusOr<GroupCounters> start = ReadGroupCounters(*host.fs, "/sys/fs/resctrl", info);
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_EQ((*start)[1].parts.size(), 2u);
  EXPECT_EQ((*start)[1].parts[3].occupancy_bytes, 2000000u);
  // Node 3 moves 4 GB in 2 s, node 2 nothing.
  host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_01/mon_sub_L3_03/mbm_total_bytes",
                  "5000000000\n");
  absl::StatusOr<GroupCounters> end = ReadGroupCounters(*host.fs, "/sys/fs/resctrl", info);
  ResctrlRates rates = ComputeRates(*start, *end, 2.0, info);
  EXPECT_EQ(rates.domains[1].parts[3].mbm_total_bytes_per_second, 2000000000u);
  EXPECT_EQ(rates.domains[1].parts[2].mbm_total_bytes_per_second, 0u);
  // A part counter that went backwards gives no rate for that part.
  host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_01/mon_sub_L3_02/mbm_total_bytes", "1\n");
  absl::StatusOr<GroupCounters> later = ReadGroupCounters(*host.fs, "/sys/fs/resctrl", info);
  rates = ComputeRates(*end, *later, 1.0, info);
  EXPECT_FALSE(rates.domains[1].parts[2].mbm_total_bytes_per_second.has_value());
}

}  // namespace
}  // namespace neighborly::agent
