#include "node-agent/src/resctrl/resctrl.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/resctrl/fake_resctrl.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::UnorderedElementsAre;

constexpr char kG[] = "6f1c0e1a-0000-4000-8000-000000000001";
constexpr char kB[] = "7a2b0e1a-0000-4000-8000-000000000002";
constexpr char kBE[] = "8b3c0e1a-0000-4000-8000-000000000003";
constexpr char kStale[] = "deadbeef-0000-4000-8000-000000000000";

std::string Fixture(const char* name) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + name;
}

struct Host {
  explicit Host(const char* fixture) {
    tree.CopyFrom(Fixture(fixture));
    real = NewRealFilesystem(tree.root());
    fake = std::make_unique<FakeResctrl>(*real);
    absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*fake, "/");
    info = DetectResctrl(*fake, table.ok() ? *table : std::vector<MountEntry>{});
  }
  TestTree tree;
  std::unique_ptr<Filesystem> real;
  std::unique_ptr<FakeResctrl> fake;
  ResctrlInfo info;
};

TEST(ResctrlParseTest, MonValuesAndDomainNames) {
  EXPECT_EQ(*ParseMonValue("123\n"), 123u);
  for (const char* token : {"Unavailable\n", "Error\n", "Unassigned\n", "", "-1", "12abc"}) {
    absl::StatusOr<uint64_t> v = ParseMonValue(token);
    EXPECT_TRUE(absl::IsUnavailable(v.status())) << token;
  }
  EXPECT_THAT(std::string(ParseMonValue("Unavailable\n").status().message()),
              HasSubstr("Unavailable"));
  EXPECT_EQ(ParseMonDomainName("mon_L3_05"), 5u);
  EXPECT_EQ(ParseMonDomainName("mon_L3_100"), 100u);
  EXPECT_EQ(ParseMonDomainName("mon_sub_L3_02", "mon_sub_L3_"), 2u);
  EXPECT_FALSE(ParseMonDomainName("mon_MB_00"));
}

TEST(ResctrlDetectTest, Layouts) {
  Host intel("intel-mbm-v2-systemd-containerd");
  EXPECT_TRUE(intel.info.usable) << intel.info.reason;
  EXPECT_EQ(intel.info.num_rmids, 224u);
  EXPECT_TRUE(intel.info.mbm_local);

  Host cmt("cmt-only-hybrid-systemd-crio");
  EXPECT_TRUE(cmt.info.usable);
  EXPECT_TRUE(cmt.info.occupancy);
  EXPECT_FALSE(cmt.info.mbm_total);

  Host vm("no-rdt-hybrid-systemd-containerd");
  EXPECT_FALSE(vm.info.usable);
  EXPECT_THAT(vm.info.reason, HasSubstr("no resctrl"));

  intel.tree.Remove("/sys/fs/resctrl/info/L3_MON");
  ResctrlInfo no_mon = DetectResctrl(*intel.fake, *ReadMountTable(*intel.fake, "/"));
  EXPECT_FALSE(no_mon.usable);
  EXPECT_THAT(no_mon.reason, HasSubstr("info/L3_MON"));
}

TEST(ResctrlMonitorTest, StartCollectsOurStaleGroupsOnly) {
  Host host("amd-v1-cgroupfs-docker");
  ASSERT_TRUE(host.info.usable) << host.info.reason;
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({kG}).ok());
  EXPECT_FALSE(
      host.fake->IsDirectory(std::string("/sys/fs/resctrl/mon_groups/neighborly-") + kStale));
  EXPECT_TRUE(host.fake->IsDirectory("/sys/fs/resctrl/mon_groups/pqos-1234-0"));
}

TEST(ResctrlMonitorTest, GroupsThreadsAndRatesOnIntel) {
  Host host("intel-mbm-v2-systemd-containerd");
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  std::map<std::string, std::string> unmonitored = monitor.Sync({{kG, 2, {10, 11}}, {kB, 1, {20}}});
  EXPECT_THAT(unmonitored, IsEmpty());
  EXPECT_EQ(*host.fake->ReadFile(monitor.GroupDir(kG) + "/tasks"), "10\n11\n");
  EXPECT_EQ(monitor.rmids_free(), 224u - 1 - 2);

  // Re-sync writes only new threads; a thread that exited is no error.
  unmonitored = monitor.Sync({{kG, 2, {10, 11, 12}}, {kB, 1, {20}}});
  EXPECT_THAT(unmonitored, IsEmpty());
  EXPECT_EQ(*host.fake->ReadFile(monitor.GroupDir(kG) + "/tasks"), "10\n11\n12\n");

  host.fake->SetCounter(monitor.GroupDir(kG), 0, "llc_occupancy", "1000");
  host.fake->SetCounter(monitor.GroupDir(kG), 1, "llc_occupancy", "500");
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_total_bytes", "1000");
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_local_bytes", "1000");
  std::map<std::string, GroupCounters> before = monitor.ReadPods();
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_total_bytes", "3001000");
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_local_bytes", "1001000");
  std::map<std::string, GroupCounters> after = monitor.ReadPods();
  ASSERT_THAT(after, UnorderedElementsAre(Key(kG), Key(kB)));
  ResctrlRates rates = ComputeRates(before[kG], after[kG], 2.0, host.info);
  EXPECT_EQ(rates.occupancy_bytes, 1500u);
  EXPECT_EQ(rates.mbm_total_bytes_per_second, 1'500'000u);
  EXPECT_EQ(rates.mbm_local_bytes_per_second, 500'000u);
  EXPECT_EQ(rates.domains[0].mbm_total_bytes_per_second, 1'500'000u);
  EXPECT_THAT(rates.unavailable, IsEmpty());

  // The pod goes: its group goes too.
  monitor.Sync({{kB, 1, {20}}});
  EXPECT_FALSE(host.fake->IsDirectory(monitor.GroupDir(kG)));
  EXPECT_THAT(monitor.monitored(), ElementsAre(kB));

  absl::StatusOr<GroupCounters> node = monitor.ReadNode();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)[1].occupancy_bytes, 10'000'001u);
}

TEST(ResctrlMonitorTest, UnavailableErrorAndResetsGiveNoSample) {
  Host host("intel-mbm-v2-systemd-containerd");
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  monitor.Sync({{kG, 2, {10}}});
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_total_bytes", "5000");
  host.fake->SetCounter(monitor.GroupDir(kG), 1, "llc_occupancy", "Unavailable");
  GroupCounters before = monitor.ReadPods()[kG];
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "mbm_total_bytes", "100");  // reset
  host.fake->SetCounter(monitor.GroupDir(kG), 1, "mbm_local_bytes", "Error");
  GroupCounters after = monitor.ReadPods()[kG];
  ResctrlRates rates = ComputeRates(before, after, 1.0, host.info);
  EXPECT_FALSE(rates.occupancy_bytes);
  EXPECT_THAT(rates.unavailable["llc_occupancy_bytes"], HasSubstr("Unavailable"));
  EXPECT_FALSE(rates.mbm_total_bytes_per_second);
  EXPECT_THAT(rates.unavailable["membw_total_bytes_per_second"], HasSubstr("reset"));
  EXPECT_FALSE(rates.mbm_local_bytes_per_second);
  EXPECT_THAT(rates.unavailable["membw_local_bytes_per_second"], HasSubstr("Error"));
}

TEST(ResctrlMonitorTest, RmidBudgetFavoursHighPriorityAndReportsTheRest) {
  // num_rmids 4: the default group and pqos's foreign group leave two.
  Host host("amd-v1-cgroupfs-docker");
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  std::map<std::string, std::string> unmonitored =
      monitor.Sync({{kBE, 0, {30}}, {kB, 1, {20}}, {kG, 5, {10}}});
  EXPECT_THAT(monitor.monitored(), UnorderedElementsAre(kG, kB));
  ASSERT_THAT(unmonitored, ElementsAre(Key(kBE)));
  EXPECT_THAT(unmonitored[kBE], HasSubstr("RMID budget exhausted"));
  EXPECT_EQ(monitor.rmids_free(), 0u);
}

TEST(ResctrlMonitorTest, EnospcAndEbusyFromTheKernel) {
  Host host("intel-mbm-v2-systemd-containerd");
  host.tree.Write("/sys/fs/resctrl/info/L3_MON/num_rmids", "3\n");  // kernel's count drifts
  ResctrlMonitor monitor(*host.fake, host.info);                    // ours still says 224
  ASSERT_TRUE(monitor.Start({}).ok());
  host.fake->FailNextMkdirBusy();
  std::map<std::string, std::string> unmonitored = monitor.Sync({{kG, 2, {10}}, {kB, 1, {20}}});
  EXPECT_THAT(unmonitored[kG], HasSubstr("EBUSY"));
  EXPECT_THAT(unmonitored[kB], HasSubstr("EBUSY"));
  unmonitored = monitor.Sync({{kG, 2, {10}}, {kB, 1, {20}}, {kBE, 0, {30}}});
  EXPECT_THAT(monitor.monitored(), UnorderedElementsAre(kG, kB));
  EXPECT_THAT(unmonitored[kBE], HasSubstr("ENOSPC"));
}

TEST(ResctrlMonitorTest, PersistentShortageMovesPodsIntoSharedQosGroups) {
  Host host("intel-mbm-v2-systemd-containerd");
  host.tree.Write("/sys/fs/resctrl/info/L3_MON/num_rmids", "6\n");  // 5 for our groups
  host.info.num_rmids = 6;
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  std::vector<ResctrlPod> pods = {{"g1", 2, {1}, "guaranteed"},    {"g2", 2, {2}, "guaranteed"},
                                  {"g3", 2, {3}, "guaranteed"},    {"b1", 1, {4}, "burstable"},
                                  {"b2", 1, {5}, "burstable"},     {"be1", 0, {6}, "besteffort"},
                                  {"be2", 0, {7, 8}, "besteffort"}};
  std::map<std::string, std::string> unmonitored;
  for (int window = 1; window <= kSharedGroupsAfterWindows; ++window) {
    EXPECT_FALSE(monitor.shared_mode()) << window;
    unmonitored = monitor.Sync(pods);
    EXPECT_THAT(unmonitored, UnorderedElementsAre(Key("be1"), Key("be2")));
    EXPECT_THAT(unmonitored["be1"], HasSubstr("RMID budget exhausted"));
  }
  EXPECT_TRUE(monitor.shared_mode());

  // g3 ends: its RMID goes to the shared BestEffort group, not to a new pod group.
  pods.erase(pods.begin() + 2);
  unmonitored = monitor.Sync(pods);
  EXPECT_THAT(monitor.monitored(), UnorderedElementsAre("g1", "g2", "b1", "b2"));
  EXPECT_THAT(monitor.shared_groups(), ElementsAre("besteffort"));
  const std::string shared = "/sys/fs/resctrl/mon_groups/neighborly-qos-besteffort";
  EXPECT_EQ(*host.fake->ReadFile(shared + "/tasks"), "6\n7\n8\n");
  EXPECT_THAT(unmonitored, UnorderedElementsAre(Key("be1"), Key("be2")));
  EXPECT_THAT(unmonitored["be2"], HasSubstr("shared besteffort group neighborly-qos-besteffort"));
  EXPECT_THAT(unmonitored["be2"], HasSubstr("not measured"));
  EXPECT_EQ(monitor.rmids_free(), 0u);

  // Room for everyone again: back to per-pod groups, the shared one removed.
  pods = {{"g2", 2, {2}, "guaranteed"},
          {"be1", 0, {6}, "besteffort"},
          {"be2", 0, {7, 8}, "besteffort"}};
  unmonitored = monitor.Sync(pods);
  EXPECT_FALSE(monitor.shared_mode());
  EXPECT_THAT(unmonitored, IsEmpty());
  EXPECT_THAT(monitor.monitored(), UnorderedElementsAre("g2", "be1", "be2"));
  EXPECT_FALSE(host.fake->IsDirectory(shared));
}

TEST(ResctrlMonitorTest, SharedGroupWithoutAnRmidSaysSo) {
  Host host("amd-v1-cgroupfs-docker");  // 2 RMIDs for us
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  std::vector<ResctrlPod> pods = {
      {kG, 2, {10}, "guaranteed"}, {kB, 1, {20}, "burstable"}, {kBE, 0, {30}, "besteffort"}};
  std::map<std::string, std::string> unmonitored;
  for (int window = 0; window <= kSharedGroupsAfterWindows; ++window) {
    unmonitored = monitor.Sync(pods);
  }
  EXPECT_TRUE(monitor.shared_mode());
  EXPECT_THAT(unmonitored, ElementsAre(Key(kBE)));
  EXPECT_THAT(unmonitored[kBE], HasSubstr("no RMID for the shared besteffort group either"));
  EXPECT_THAT(monitor.monitored(), UnorderedElementsAre(kG, kB));
}

TEST(ResctrlMonitorTest, ThreadInAForeignCtrlMonGroupIsReported) {
  Host host("intel-mbm-v2-systemd-containerd");
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  host.fake->RejectTid(11);
  std::map<std::string, std::string> unmonitored = monitor.Sync({{kG, 2, {10, 11}}});
  EXPECT_THAT(unmonitored[kG], HasSubstr("1 of 2 threads"));
  EXPECT_THAT(unmonitored[kG], HasSubstr("EINVAL"));
}

TEST(ResctrlMonitorTest, CmtOnlyReportsBandwidthUnsupported) {
  Host host("cmt-only-hybrid-systemd-crio");
  ResctrlMonitor monitor(*host.fake, host.info);
  ASSERT_TRUE(monitor.Start({}).ok());
  monitor.Sync({{kG, 2, {10}}});
  host.fake->SetCounter(monitor.GroupDir(kG), 0, "llc_occupancy", "4096");
  EXPECT_FALSE(host.fake->Exists(monitor.GroupDir(kG) + "/mon_data/mon_L3_00/mbm_total_bytes"));
  GroupCounters counters = monitor.ReadPods()[kG];
  ResctrlRates rates = ComputeRates(counters, counters, 1.0, host.info);
  EXPECT_EQ(rates.occupancy_bytes, 4096u);
  EXPECT_THAT(rates.unavailable["membw_total_bytes_per_second"], HasSubstr("CMT-only"));
}

TEST(ResctrlMonitorTest, SncSumsSubNumaDomainsWhenTheTopLevelIsMissing) {
  Host host("snc-v2-cgroupfs-containerd");
  absl::StatusOr<GroupCounters> node = ReadGroupCounters(*host.fake, "/sys/fs/resctrl", host.info);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)[0].mbm_total_bytes, 5'000'000'000u);  // top-level sum
  for (const char* f : {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"}) {
    host.tree.Remove(std::string("/sys/fs/resctrl/mon_data/mon_L3_00/") + f);
  }
  host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes", "7\n");
  node = ReadGroupCounters(*host.fake, "/sys/fs/resctrl", host.info);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)[0].mbm_total_bytes, 2'500'000'000u + 7);
  EXPECT_EQ((*node)[0].occupancy_bytes, 10'000'000u);
  host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_00/mon_sub_L3_01/mbm_local_bytes",
                  "Unavailable\n");
  node = ReadGroupCounters(*host.fake, "/sys/fs/resctrl", host.info);
  EXPECT_FALSE((*node)[0].mbm_local_bytes);
  EXPECT_THAT((*node)[0].problem, HasSubstr("mon_sub_L3_01"));
}

}  // namespace
}  // namespace neighborly::agent
