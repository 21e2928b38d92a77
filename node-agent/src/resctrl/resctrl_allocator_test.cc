#include "node-agent/src/resctrl/resctrl_allocator.h"

#include <cerrno>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/resctrl/fake_resctrl.h"
#include "node-agent/src/resctrl/resctrl.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kLc[] = "1c000000-0000-4000-8000-000000000001";
constexpr char kBatch[] = "ba000000-0000-4000-8000-000000000002";
constexpr char kFar[] = "fa000000-0000-4000-8000-000000000003";
constexpr char kRoot[] = "/sys/fs/resctrl";

struct Host {
  explicit Host(const char* fixture, CpuVendor cpu_vendor) : vendor(cpu_vendor) {
    tree.CopyFrom(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + fixture);
    real = NewRealFilesystem(tree.root());
    fake = std::make_unique<FakeResctrl>(*real);
  }
  ResctrlAllocInfo Detect() {
    absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*fake, "/");
    return DetectResctrlAllocation(*fake, table.ok() ? *table : std::vector<MountEntry>{}, vendor);
  }
  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> text = fake->ReadFile(path);
    return text.ok() ? *text : std::string(text.status().message());
  }
  CpuVendor vendor;
  TestTree tree;
  std::unique_ptr<Filesystem> real;
  std::unique_ptr<FakeResctrl> fake;
};

// The Intel fixture with monitoring plus CAT (11 ways) and MBA in percent, as
// a Xeon with RDT allocation shows them.
std::unique_ptr<Host> IntelCatMba(int closids = 16) {
  auto host = std::make_unique<Host>("intel-mbm-v2-systemd-containerd", CpuVendor::kIntel);
  host->tree.Write("/sys/fs/resctrl/info/L3/cbm_mask", "7ff\n");
  host->tree.Write("/sys/fs/resctrl/info/L3/min_cbm_bits", "1\n");
  host->tree.Write("/sys/fs/resctrl/info/L3/sparse_masks", "0\n");
  host->tree.Write("/sys/fs/resctrl/info/L3/num_closids", absl::StrCat(closids, "\n"));
  host->tree.Write("/sys/fs/resctrl/info/MB/num_closids", "8\n");
  host->tree.Write("/sys/fs/resctrl/info/MB/min_bandwidth", "10\n");
  host->tree.Write("/sys/fs/resctrl/info/MB/bandwidth_gran", "10\n");
  host->tree.Write("/sys/fs/resctrl/schemata", "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
  return host;
}

const std::map<uint32_t, std::set<uint32_t>> kTwoSockets = {{0, {0}}, {1, {1}}};

AllocationPolicyView BatchPolicy(double ways, uint32_t percent, uint32_t mbps = 0) {
  return AllocationPolicyView{.classes = {{.workload_class = "batch",
                                           .l3_ways_fraction = ways,
                                           .mba_percent = percent,
                                           .mba_mbps = mbps}}};
}

std::vector<AllocPod> Pods() {
  return {{.uid = kLc, .workload_class = "latency-critical", .l3_domains = {0}, .tids = {100}},
          {.uid = kBatch, .workload_class = "batch", .l3_domains = {0}, .tids = {200, 201}},
          {.uid = kFar, .workload_class = "batch", .l3_domains = {1}, .tids = {300}}};
}

TEST(SchemataTest, ParseFormatAndMasks) {
  absl::StatusOr<std::vector<SchemataLine>> lines =
      ParseSchemata("    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n");
  ASSERT_TRUE(lines.ok()) << lines.status();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].resource, "L3");
  EXPECT_EQ((*lines)[1].values.at(1), "100");
  EXPECT_EQ(FormatSchemataLine((*lines)[0]), "L3:0=7ff;1=7ff");
  EXPECT_THAT(std::string(ParseSchemata("L3:0=").status().message()), HasSubstr("ID=VALUE"));
  EXPECT_THAT(std::string(ParseSchemata("nonsense").status().message()), HasSubstr("RESOURCE"));
  EXPECT_EQ(ContiguousMask(3), "7");
  EXPECT_EQ(ContiguousMask(11), "7ff");
  EXPECT_EQ(ContiguousMask(16), "ffff");
}

TEST(MbaValueTest, EachUnit) {
  std::string why;
  auto info = [](uint32_t min, uint32_t gran, uint32_t max, MbaUnit unit) {
    ResctrlAllocInfo i;
    i.mba = true;
    i.mba_min = min;
    i.mba_granularity = gran;
    i.mba_max = max;
    i.mba_unit = unit;
    return i;
  };
  auto percent_of = [](uint32_t percent, uint32_t mbps = 0) {
    ClassCapPolicy p;
    p.mba_percent = percent;
    p.mba_mbps = mbps;
    return p;
  };
  const ResctrlAllocInfo percent = info(10, 10, 100, MbaUnit::kPercent);
  EXPECT_EQ(MbaValue(percent, percent_of(55), &why), 50u);  // down to the granularity
  EXPECT_EQ(MbaValue(percent, percent_of(3), &why), 10u);   // at least the minimum
  EXPECT_FALSE(MbaValue(percent, percent_of(100), &why));
  const ResctrlAllocInfo amd = info(0, 1, 2048, MbaUnit::kAmdEighthGBps);
  EXPECT_EQ(MbaValue(amd, percent_of(25), &why), 512u);
  const ResctrlAllocInfo mbps = info(10, 10, UINT32_MAX, MbaUnit::kMBps);
  EXPECT_EQ(MbaValue(mbps, percent_of(50, 4000), &why), 4000u);
  EXPECT_FALSE(MbaValue(mbps, percent_of(50), &why));
  EXPECT_THAT(why, HasSubstr("mba_MBps"));
}

// Intel CAT + MBA in percent: the batch pod beside the latency-critical one
// is capped on that domain, the one on the other socket is not; the capped
// pod's MON group moves under the CTRL_MON group and back when it is let go.
TEST(ResctrlAllocatorTest, IntelCapsTheSharedDomainAndMovesMonGroups) {
  std::unique_ptr<Host> host = IntelCatMba();
  ResctrlAllocInfo info = host->Detect();
  ASSERT_TRUE(info.l3_cat) << info.l3_reason;
  ASSERT_TRUE(info.mba) << info.mba_reason;
  ResctrlAllocator allocator(*host->fake, info, /*enabled=*/true);
  ASSERT_TRUE(allocator.Start().ok());
  absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*host->fake, "/");
  ResctrlMonitor monitor(*host->fake, DetectResctrl(*host->fake, *table));
  ASSERT_TRUE(monitor.Start({}).ok());

  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_TRUE(allocator.status().allocating);
  EXPECT_EQ(allocator.status().reason, "");
  EXPECT_THAT(allocator.status().groups, ElementsAre("neighborly-batch"));
  const std::string group = "/sys/fs/resctrl/neighborly-batch";
  // 0.25 of 11 ways is 3 ("7"), on domain 0 only; MBA 50 % there.
  EXPECT_EQ(host->Read(group + "/schemata"), "L3:0=7;1=7ff\nMB:0=50;1=100\n");
  EXPECT_EQ(host->Read(group + "/tasks"), "200\n201\n");
  EXPECT_EQ(allocator.GroupOf(kBatch), "neighborly-batch");
  EXPECT_EQ(allocator.GroupOf(kFar), "");
  EXPECT_EQ(allocator.GroupOf(kLc), "");
  const PodCap& cap = allocator.caps().at(kBatch);
  EXPECT_DOUBLE_EQ(*cap.l3_fraction, 3.0 / 11);
  EXPECT_DOUBLE_EQ(*cap.mba_fraction, 0.5);
  EXPECT_FALSE(cap.mba_bytes_per_second);
  EXPECT_THAT(cap.l3_domains, ElementsAre(0u));
  const uint64_t changes = allocator.status().changes_total;
  EXPECT_EQ(changes, 3u);  // mkdir, schemata, the pod joined

  std::vector<ResctrlPod> targets;
  for (const AllocPod& pod : Pods()) {
    targets.emplace_back(pod.uid, 0, pod.tids);
    targets.back().ctrl_group = allocator.GroupOf(pod.uid);
  }
  EXPECT_THAT(monitor.Sync(targets), IsEmpty());
  EXPECT_EQ(monitor.GroupDir(kBatch),
            absl::StrCat(group, "/mon_groups/neighborly-", kBatch));
  EXPECT_EQ(host->Read(monitor.GroupDir(kBatch) + "/tasks"), "200\n201\n");
  EXPECT_TRUE(host->fake->IsDirectory(monitor.GroupDir(kFar)));
  EXPECT_TRUE(monitor.ReadPods().contains(kBatch));

  // Steady: nothing rewritten.
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_EQ(allocator.status().changes_total, changes);

  // The latency-critical pod leaves: the batch pod is let go, the group removed.
  std::vector<AllocPod> rest = Pods();
  rest.erase(rest.begin());
  allocator.Sync(BatchPolicy(0.25, 50), rest, kTwoSockets);
  EXPECT_FALSE(host->fake->Exists(group));
  EXPECT_THAT(allocator.status().groups, IsEmpty());
  EXPECT_THAT(allocator.caps(), IsEmpty());
  EXPECT_THAT(host->Read("/sys/fs/resctrl/tasks"), HasSubstr("200\n201\n"));
  targets.erase(targets.begin());
  for (ResctrlPod& pod : targets) pod.ctrl_group = allocator.GroupOf(pod.uid);
  EXPECT_THAT(monitor.Sync(targets), IsEmpty());
  EXPECT_EQ(monitor.GroupDir(kBatch), absl::StrCat(kRoot, "/mon_groups/neighborly-", kBatch));
  EXPECT_TRUE(host->fake->IsDirectory(monitor.GroupDir(kBatch)));
}

// The extender's model names each pod's class in the ack: an unlabelled
// streaming Job it measured as an aggressor is capped like a labelled one,
// and its class wins over an annotation the agent reads (which the model
// itself honours first; here it says "standard" for a pod annotated batch).
TEST(ResctrlAllocatorTest, ModelClassFromTheAckWinsOverTheAnnotation) {
  std::unique_ptr<Host> host = IntelCatMba();
  ResctrlAllocator allocator(*host->fake, host->Detect(), /*enabled=*/true);
  ASSERT_TRUE(allocator.Start().ok());
  std::vector<AllocPod> pods = Pods();
  pods[1].workload_class = "";  // the streamer: no annotation
  pods[2].l3_domains = {0};     // annotated batch, beside the latency-critical pod

  // Without the model's classes only the annotated pod is capped.
  allocator.Sync(BatchPolicy(0.25, 50), pods, kTwoSockets);
  EXPECT_EQ(allocator.GroupOf(kBatch), "");
  EXPECT_EQ(allocator.GroupOf(kFar), "neighborly-batch");

  AllocationPolicyView policy = BatchPolicy(0.25, 50);
  policy.pod_classes = {{kBatch, "batch"}, {kFar, "standard"}};
  allocator.Sync(policy, pods, kTwoSockets);
  EXPECT_EQ(allocator.GroupOf(kBatch), "neighborly-batch");
  EXPECT_EQ(allocator.GroupOf(kFar), "");
  // (The fake kernel appends to tasks files: the streamer's threads joined,
  // the annotated pod's went back to the default group.)
  EXPECT_THAT(host->Read("/sys/fs/resctrl/neighborly-batch/tasks"), HasSubstr("200\n201\n"));
  EXPECT_THAT(host->Read("/sys/fs/resctrl/tasks"), HasSubstr("300\n"));

  // The model also says where the latency-critical pods are: with none, nothing is capped.
  policy.pod_classes[kLc] = "standard";
  allocator.Sync(policy, pods, kTwoSockets);
  EXPECT_THAT(allocator.caps(), IsEmpty());
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
}

// AMD: MBA in 1/8 GB/s per CCX. In NPS4 two CCDs share a NUMA node: a batch
// pod on the other CCD of the latency-critical pod's node gets the bandwidth
// cap, not the cache cap (it does not share that L3).
TEST(ResctrlAllocatorTest, AmdNps4CapsBandwidthOnTheSharedNumaNode) {
  Host host("epyc-2s8ccd-nps4-v1-cgroupfs-containerd", CpuVendor::kAmd);
  ResctrlAllocInfo info = host.Detect();
  ASSERT_EQ(info.mba_unit, MbaUnit::kAmdEighthGBps);
  std::map<uint32_t, std::set<uint32_t>> l3_numa;
  for (uint32_t d = 0; d < 16; ++d) l3_numa[d] = {d / 2};
  ResctrlAllocator allocator(*host.fake, info, true);
  std::vector<AllocPod> pods = {
      {.uid = kLc, .workload_class = "latency-critical", .l3_domains = {0}, .tids = {100}},
      {.uid = kBatch, .workload_class = "batch", .l3_domains = {1}, .tids = {200}},
      {.uid = kFar, .workload_class = "batch", .l3_domains = {5}, .tids = {300}}};
  allocator.Sync(BatchPolicy(0.5, 25), pods, l3_numa);
  const std::string schemata = host.Read("/sys/fs/resctrl/neighborly-batch/schemata");
  EXPECT_THAT(schemata, HasSubstr("L3:0=ff;1=ffff;2=ffff"));
  EXPECT_THAT(schemata, HasSubstr("MB:0=512;1=512;2=2048"));
  EXPECT_EQ(host.Read("/sys/fs/resctrl/neighborly-batch/tasks"), "200\n");
  const PodCap& cap = allocator.caps().at(kBatch);
  EXPECT_FALSE(cap.l3_fraction);  // its CCX is not the latency-critical pod's
  EXPECT_DOUBLE_EQ(*cap.mba_fraction, 0.25);
  EXPECT_EQ(cap.mba_bytes_per_second, uint64_t{512} * 125'000'000);  // 64 GB/s
  EXPECT_FALSE(allocator.caps().contains(kFar));
}

// mba_MBps: the MBA Software Controller takes MB/s, from the policy's mbaMBps.
TEST(ResctrlAllocatorTest, SoftwareControllerInMBps) {
  Host host("intel-snc2-submon-v2-systemd-containerd", CpuVendor::kIntel);
  ResctrlAllocInfo info = host.Detect();
  ASSERT_EQ(info.mba_unit, MbaUnit::kMBps);
  ResctrlAllocator allocator(*host.fake, info, true);
  const std::map<uint32_t, std::set<uint32_t>> snc = {{0, {0, 1}}, {1, {2, 3}}};
  allocator.Sync(BatchPolicy(0.2, 50, 3000), Pods(), snc);
  EXPECT_EQ(host.Read("/sys/fs/resctrl/neighborly-batch/schemata"),
            "L3:0=7;1=7fff\nMB:0=3000;1=4294967295\n");
  EXPECT_EQ(allocator.caps().at(kBatch).mba_bytes_per_second, 3000u << 20);
  // Without mbaMBps the bandwidth is not capped there; the cache still is.
  allocator.Sync(BatchPolicy(0.2, 50), Pods(), snc);
  EXPECT_EQ(host.Read("/sys/fs/resctrl/neighborly-batch/schemata"),
            "L3:0=7;1=7fff\nMB:0=4294967295;1=4294967295\n");
  EXPECT_FALSE(allocator.caps().at(kBatch).mba_bytes_per_second);
}

// Arm MPAM through resctrl: cache portions and bandwidth in percent (5 %
// steps); no monitors, and the groups are made all the same.
TEST(ResctrlAllocatorTest, ArmMpam) {
  Host host("arm-v2-mpam-v2-systemd-containerd", CpuVendor::kArm);
  ResctrlAllocInfo info = host.Detect();
  ResctrlAllocator allocator(*host.fake, info, true);
  std::vector<AllocPod> pods = {
      {.uid = kLc, .workload_class = "latency-critical", .l3_domains = {0}, .tids = {100}},
      {.uid = kBatch, .workload_class = "batch", .l3_domains = {0}, .tids = {200}}};
  allocator.Sync(BatchPolicy(0.5, 33), pods, {{0, {0}}});
  EXPECT_EQ(host.Read("/sys/fs/resctrl/neighborly-batch/schemata"), "L3:0=3f\nMB:0=30\n");
  EXPECT_DOUBLE_EQ(*allocator.caps().at(kBatch).mba_fraction, 0.3);
}

TEST(ResctrlAllocatorTest, ClosidExhaustionSkipsAllocationAndKeepsMonitoring) {
  std::unique_ptr<Host> host = IntelCatMba(/*closids=*/2);
  host->tree.MkDir("/sys/fs/resctrl/COS1");  // another user's group takes the only free one
  ResctrlAllocInfo info = host->Detect();
  ResctrlAllocator allocator(*host->fake, info, true);
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_EQ(allocator.status().closid_exhausted_total, 1u);
  EXPECT_THAT(allocator.status().reason, HasSubstr("no CLOSID left for neighborly-batch"));
  EXPECT_THAT(allocator.status().reason, HasSubstr("still monitored"));
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  EXPECT_THAT(allocator.caps(), IsEmpty());
  // Monitoring goes on in the default group.
  absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*host->fake, "/");
  ResctrlMonitor monitor(*host->fake, DetectResctrl(*host->fake, *table));
  std::vector<ResctrlPod> targets = {{kBatch, 0, {200, 201}}};
  targets[0].ctrl_group = allocator.GroupOf(kBatch);
  EXPECT_THAT(monitor.Sync(targets), IsEmpty());
  EXPECT_TRUE(monitor.monitored().contains(kBatch));

  // The kernel's own ENOSPC (our count thought there was room) is the same.
  std::unique_ptr<Host> other = IntelCatMba(/*closids=*/8);
  ResctrlAllocInfo roomy = other->Detect();
  other->tree.Write("/sys/fs/resctrl/info/L3/num_closids", "1\n");
  ResctrlAllocator second(*other->fake, roomy, true);
  second.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_EQ(second.status().closid_exhausted_total, 1u);
  EXPECT_THAT(second.status().reason, HasSubstr("ENOSPC"));
}

// After a crash the next agent removes the groups with our prefix, not others'.
TEST(ResctrlAllocatorTest, StaleGroupsRemovedAtStart) {
  std::unique_ptr<Host> host = IntelCatMba();
  ASSERT_TRUE(host->fake->MakeDir("/sys/fs/resctrl/neighborly-batch").ok());
  ASSERT_TRUE(host->fake->WriteFile("/sys/fs/resctrl/neighborly-batch/tasks", "200").ok());
  host->tree.MkDir("/sys/fs/resctrl/COS1");
  // The agent now runs with the feature off: the leftovers go all the same.
  ResctrlAllocator allocator(*host->fake, host->Detect(), /*enabled=*/false);
  ASSERT_TRUE(allocator.Start().ok());
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  EXPECT_TRUE(host->fake->Exists("/sys/fs/resctrl/COS1"));
  EXPECT_THAT(host->Read("/sys/fs/resctrl/tasks"), HasSubstr("200"));
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_FALSE(allocator.status().allocating);
  EXPECT_THAT(allocator.status().reason, HasSubstr("--resctrl-allocation"));
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
}

TEST(ResctrlAllocatorTest, PolicyWithdrawnAndStopRemoveGroups) {
  std::unique_ptr<Host> host = IntelCatMba();
  ResctrlAllocator allocator(*host->fake, host->Detect(), true);
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  ASSERT_TRUE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  allocator.Sync(std::nullopt, Pods(), kTwoSockets);  // the extender turned it off
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  EXPECT_THAT(allocator.status().reason, HasSubstr("no allocation policy"));
  EXPECT_THAT(allocator.caps(), IsEmpty());

  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  ASSERT_TRUE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  allocator.Stop();  // SIGTERM
  EXPECT_FALSE(host->fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  EXPECT_THAT(host->Read("/sys/fs/resctrl/tasks"), HasSubstr("200\n201\n"));
}

TEST(ResctrlAllocatorTest, KernelRefusalIsReportedNotFatal) {
  std::unique_ptr<Host> host = IntelCatMba();
  // The fake checks as the kernel does: a non-contiguous mask without
  // sparse_masks, a bandwidth below the minimum and an unknown domain are refused.
  ASSERT_TRUE(host->fake->MakeDir("/sys/fs/resctrl/other").ok());
  EXPECT_EQ(ErrnoOf(host->fake->WriteFile("/sys/fs/resctrl/other/schemata", "L3:0=5\n")), EINVAL);
  EXPECT_EQ(ErrnoOf(host->fake->WriteFile("/sys/fs/resctrl/other/schemata", "MB:0=5\n")), EINVAL);
  EXPECT_EQ(ErrnoOf(host->fake->WriteFile("/sys/fs/resctrl/other/schemata", "L3:7=f\n")), EINVAL);
  EXPECT_TRUE(host->fake->WriteFile("/sys/fs/resctrl/other/schemata", "L3:0=f0\n").ok());
  ASSERT_TRUE(host->fake->RemoveDir("/sys/fs/resctrl/other").ok());

  host->fake->RejectSchemata(true);
  ResctrlAllocator allocator(*host->fake, host->Detect(), true);
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_EQ(allocator.status().write_errors_total, 1u);
  EXPECT_THAT(allocator.status().last_write_error, HasSubstr("schemata"));
  EXPECT_THAT(allocator.status().reason, HasSubstr("schemata refused"));
  EXPECT_THAT(allocator.caps(), IsEmpty());  // not capped, so not reported as capped
  EXPECT_EQ(host->Read("/sys/fs/resctrl/neighborly-batch/tasks"), "");
  // The same text is not retried every window.
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_EQ(allocator.status().write_errors_total, 1u);
  // A different policy is tried, and accepted once the kernel takes it.
  host->fake->RejectSchemata(false);
  allocator.Sync(BatchPolicy(0.5, 50), Pods(), kTwoSockets);
  EXPECT_EQ(allocator.status().reason, "");
  EXPECT_TRUE(allocator.caps().contains(kBatch));
}

TEST(ResctrlAllocatorTest, NoAllocationHardwareSaysWhy) {
  Host host("no-rdt-hybrid-systemd-containerd", CpuVendor::kIntel);
  ResctrlAllocator allocator(*host.fake, host.Detect(), true);
  allocator.Sync(BatchPolicy(0.25, 50), Pods(), kTwoSockets);
  EXPECT_FALSE(allocator.status().allocating);
  EXPECT_THAT(allocator.status().reason, HasSubstr("unavailable: resctrl is not mounted"));
}

}  // namespace
}  // namespace neighborly::agent
