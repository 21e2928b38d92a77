#include "node-agent/src/host/host_agent.h"

#include <cerrno>
#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "node-agent/src/cri/pod_metadata.h"
#include "node-agent/src/perf/perf_events.h"
#include "node-agent/src/podresources/pod_resources.h"
#include "node-agent/src/pqos/fake_pqos.h"
#include "node-agent/src/resctrl/fake_resctrl.h"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/sys/test_tree.h"
#include "runtime/v1/api_subset.grpc.pb.h"

namespace neighborly::agent {
namespace {

namespace tv1 = telemetry::v1;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kG[] = "6f1c0e1a-0000-4000-8000-000000000001";
constexpr char kB[] = "7a2b0e1a-0000-4000-8000-000000000002";
constexpr char kBE[] = "8b3c0e1a-0000-4000-8000-000000000003";

std::string Fixture(const char* name) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/hosts/" + name;
}

// A PMU whose counters advance by one "tick" per window: per CPU and tick,
// 1000 cycles, 2000 instructions, 10 LLC misses, counted half of the time.
class FakePmu final : public PerfSyscalls {
 public:
  int Open(const perf_event_attr&, int, int, int group_fd, unsigned long) override {
    const int fd = next_fd_++;
    if (group_fd < 0) leaders_.insert(fd);
    return fd;
  }
  long Read(int fd, void* buffer, size_t size) override {
    if (!leaders_.contains(fd) || size < 9 * sizeof(uint64_t)) return -EINVAL;
    const uint64_t words[] = {
        3, ticks * 1000, ticks * 500, ticks * 500, 1, ticks * 1000, 2, ticks * 5, 3};
    std::memcpy(buffer, words, sizeof words);
    return sizeof words;
  }
  int Ioctl(int, unsigned long, unsigned long) override { return 0; }
  void Close(int) override {}
  int OpenDirectory(const std::string&) override { return 3; }
  uint64_t ticks = 0;

 private:
  int next_fd_ = 10;
  std::set<int> leaders_;
};

// A fixed figure for every NUMA node (the real meter is tested in membw/).
class FixedMeter final : public BandwidthMeter {
 public:
  absl::StatusOr<TriadResult> Measure(const TriadRequest& request) override {
    ++calls;
    TriadResult r;
    r.bytes_per_second = r.best_any_bytes_per_second = 150e9;
    r.cpu_share = 0.97;
    r.threads = static_cast<int>(request.cpus.size());
    r.cpus = request.cpus;
    r.passes = r.clean_passes = 20;
    r.working_set_bytes = request.working_set_bytes;
    r.placement = "bound (fixed meter)";
    return r;
  }
  int calls = 0;
};

struct Host {
  explicit Host(const char* fixture, bool with_pmu = true) {
    tree.CopyFrom(Fixture(fixture));
    real = std::shared_ptr<Filesystem>(NewRealFilesystem(tree.root()));
    fake = std::make_shared<FakeResctrl>(*real);
    pmu = std::make_shared<FakePmu>();
    clock = std::make_shared<FakeClock>();
    options.host_root = tree.root();
    env.filesystem = fake;
    if (with_pmu) env.perf = pmu;
    env.clock = clock;
    env.page_size_bytes = 4096;
    env.bandwidth_meter = meter;
    env.wait = [this](absl::Duration d) {
      clock->Advance(d);
      pmu->ticks += 1;
      if (during_window) during_window();
    };
  }
  TestTree tree;
  std::shared_ptr<Filesystem> real;
  std::shared_ptr<FakeResctrl> fake;
  std::shared_ptr<FakePmu> pmu;
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FixedMeter> meter = std::make_shared<FixedMeter>();
  HostAgentOptions options;
  HostAgentEnvironment env;
  std::function<void()> during_window;
};

const tv1::PodReport* FindPod(const tv1::NodeReport& report, const std::string& uid) {
  for (const tv1::PodReport& pod : report.pods()) {
    if (pod.uid() == uid) return &pod;
  }
  return nullptr;
}

TEST(HostAgentTest, IntelHostWithEverything) {
  Host host("intel-mbm-v2-systemd-containerd");
  const std::string g_cgroup =
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1c0e1a_0000_4000_8000_000000000001.slice";
  host.during_window = [&] {
    host.tree.Write(g_cgroup + "/cpu.stat", "usage_usec 3000000\n");  // +2 s of CPU in 2 s
    const std::string group = "/sys/fs/resctrl/mon_groups/neighborly-" + std::string(kG);
    host.fake->SetCounter(group, 0, "mbm_total_bytes", "4000000000");
    host.fake->SetCounter(group, 0, "mbm_local_bytes", "3000000000");
    host.fake->SetCounter(group, 0, "llc_occupancy", "18000000");
    host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "9000000000\n");
  };
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  // The stale group of a pod that is gone was collected at start.
  EXPECT_FALSE(host.fake->IsDirectory(
      "/sys/fs/resctrl/mon_groups/neighborly-deadbeef-0000-4000-8000-000000000000"));

  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(2));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->node_name(), "intel-mbm-v2-systemd-containerd");
  EXPECT_EQ(report->boot_id(), "0b5e55ed-0000-4000-8000-00000000b007");
  EXPECT_EQ(report->sequence(), 1u);
  EXPECT_EQ(report->window_duration().seconds(), 2);

  const tv1::Capabilities& caps = report->capabilities();
  EXPECT_TRUE(caps.resctrl_occupancy().available());
  EXPECT_TRUE(caps.resctrl_mbm_local().available());
  EXPECT_TRUE(caps.perf_hardware_counters().available()) << caps.perf_hardware_counters().reason();
  EXPECT_EQ(caps.rmids_total(), 224u);
  EXPECT_EQ(caps.rmids_free(), 224u - 1 - 3);
  EXPECT_TRUE(caps.cpu_manager_state().available());
  EXPECT_FALSE(caps.pod_metadata().available());
  EXPECT_FALSE(caps.pod_metadata().reason().empty());

  EXPECT_EQ(report->kubelet().cpu_manager_policy(), "static");
  EXPECT_EQ(report->kubelet().topology_manager_policy(), "single-numa-node");
  EXPECT_EQ(report->kubelet().topology_manager_scope(), "pod");
  EXPECT_EQ(report->kubelet().reserved_cpus(), "0");
  EXPECT_EQ(report->kubelet().shared_pool_cpus(), "0-1,4-7");
  // Resource-manager settings (issue 14): config file, then checkpoints.
  EXPECT_EQ(report->kubelet().cpu_manager_policy_options().at("full-pcpus-only"), "true");
  EXPECT_EQ(report->kubelet().topology_manager_policy_options().at("prefer-closest-numa-nodes"),
            "true");
  EXPECT_EQ(report->kubelet().memory_manager_policy(), "static");
  EXPECT_EQ(report->kubelet().reserved_memory_bytes_by_numa().at(0), 1u << 30);
  EXPECT_EQ(report->kubelet().reserved_memory_bytes_by_numa().at(1), 512u << 20);
  EXPECT_EQ(report->kubelet().allocatable_cpus(), "1-7");
  EXPECT_EQ(report->kubelet().source(),
            "config /var/lib/kubelet/config.yaml; memory_manager_state; cpu_manager_state");
  // Two SMT threads per core: CPUs 0-1, 2-3, ... are siblings.
  ASSERT_EQ(report->topology().cores_size(), 4);
  EXPECT_EQ(report->topology().cores(1).cpus(), "2-3");
  EXPECT_EQ(report->topology().cores(2).socket(), 1u);
  EXPECT_EQ(report->topology().cores(2).numa_node(), 1u);

  const tv1::Topology& topology = report->topology();
  ASSERT_EQ(topology.l3_domains_size(), 2);
  EXPECT_EQ(topology.l3_domains(0).membw_total_bytes_per_second(), 2'000'000'000u);
  EXPECT_EQ(topology.numa_nodes(0).membw_bytes_per_second(), 2'000'000'000u);
  EXPECT_EQ(topology.l3_domains(1).occupancy_bytes(), 10'000'001u);

  ASSERT_EQ(report->pods_size(), 3);
  const tv1::PodReport* g = FindPod(*report, kG);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->namespace_(), "content");
  EXPECT_EQ(g->name(), "article-service-5d8f7-abcde");
  EXPECT_EQ(g->qos_class(), tv1::QOS_CLASS_GUARANTEED);
  EXPECT_EQ(g->exclusive_cpus(), "2-3");
  EXPECT_EQ(g->cpu_usage_millicores(), 1000);
  EXPECT_NEAR(g->cpu_request_millicores(), 2000, 30);
  EXPECT_EQ(g->llc_occupancy_bytes(), 18'000'000u);
  EXPECT_EQ(g->membw_total_bytes_per_second(), 2'000'000'000u);
  EXPECT_EQ(g->membw_local_bytes_per_second(), 1'500'000'000u);
  EXPECT_DOUBLE_EQ(g->ipc(), 2.0);
  EXPECT_DOUBLE_EQ(g->llc_misses_per_kilo_instructions(), 5.0);
  EXPECT_THAT(g->memory_bytes_by_numa(),
              UnorderedElementsAre(Pair(0u, 1048576u + 4096), Pair(1u, 2097152u + 4096)));
  EXPECT_DOUBLE_EQ(g->psi_cpu_some_avg10(), 1.25);
  EXPECT_DOUBLE_EQ(g->psi_memory_full_avg10(), 0.25);
  EXPECT_FALSE(g->has_memory_request_bytes());
  EXPECT_THAT(g->unavailable(), ::testing::Contains(Key("memory_request_bytes")));
  // Threads of every container were moved into the pod's group.
  EXPECT_EQ(
      *host.fake->ReadFile("/sys/fs/resctrl/mon_groups/neighborly-" + std::string(kG) + "/tasks"),
      "1000\n1001\n1002\n");
  const tv1::PodReport* be = FindPod(*report, kBE);
  ASSERT_NE(be, nullptr);
  EXPECT_EQ(be->exclusive_cpus(), "");
  EXPECT_EQ(be->cpu_request_millicores(), 0);

  // A second window: sequence moves on; a pod whose cgroup vanishes mid-window
  // is dropped, and its resctrl group goes in the window after.
  host.during_window = [&] {
    host.tree.Remove(
        "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/"
        "kubepods-besteffort-pod8b3c0e1a_0000_4000_8000_000000000003.slice");
  };
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->sequence(), 2u);
  EXPECT_EQ(report->pods_size(), 2);
  EXPECT_EQ(FindPod(*report, kBE), nullptr);
  EXPECT_EQ(FindPod(*report, kG)->cpu_usage_millicores(), 0);  // it idled
  host.during_window = nullptr;
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(host.fake->IsDirectory("/sys/fs/resctrl/mon_groups/neighborly-" + std::string(kBE)));
}

// An NTP step during a window moves the wall clock, not the window: its
// duration and every rate come from the monotonic clock.
TEST(HostAgentTest, WallClockStepMidWindowSkewsNothing) {
  Host host("intel-mbm-v2-systemd-containerd");
  const std::string g_cgroup =
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1c0e1a_0000_4000_8000_000000000001.slice";
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  ASSERT_TRUE((*agent)->MeasureWindow(absl::Seconds(1)).ok());
  for (const absl::Duration step : {-absl::Hours(1), absl::Minutes(10)}) {
    host.during_window = [&] {
      host.tree.Write(g_cgroup + "/cpu.stat", "usage_usec 9000000\n");  // +x s of CPU
      host.clock->Set(host.clock->Now() + step);                        // NTP steps the clock
    };
    host.tree.Write(g_cgroup + "/cpu.stat", "usage_usec 5000000\n");
    absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(2));
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->window_duration().seconds(), 2) << "step " << step;
    EXPECT_EQ(report->window_duration().nanos(), 0);
    // 4 s of CPU over the 2-s window: 2 cores, whatever the wall clock did.
    EXPECT_EQ(FindPod(*report, kG)->cpu_usage_millicores(), 2000) << "step " << step;
  }
}

TEST(HostAgentTest, AmdV1CgroupfsDockerRunsOutOfRmids) {
  Host host("amd-v1-cgroupfs-docker");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::Capabilities& caps = report->capabilities();
  EXPECT_THAT(caps.unmonitored_pods(), UnorderedElementsAre(Key(kBE)));
  EXPECT_THAT(caps.unmonitored_pods().at(kBE), HasSubstr("RMID budget exhausted"));
  EXPECT_EQ(caps.rmids_free(), 0u);
  EXPECT_FALSE(caps.cpu_manager_state().available());
  EXPECT_THAT(caps.cpu_manager_state().reason(), HasSubstr("format v1"));
  const tv1::PodReport* be = FindPod(*report, kBE);
  ASSERT_NE(be, nullptr);
  EXPECT_FALSE(be->has_llc_occupancy_bytes());
  EXPECT_THAT(be->unavailable().at("llc_occupancy_bytes"), HasSubstr("RMID"));
  const tv1::PodReport* g = FindPod(*report, kG);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->has_llc_occupancy_bytes());
  EXPECT_EQ(g->cpu_request_millicores(), 2000);
  EXPECT_THAT(g->memory_bytes_by_numa(), UnorderedElementsAre(Pair(0u, 512u * 4096)));
  EXPECT_THAT(g->unavailable().at("psi_cpu_some_avg10"), HasSubstr("cgroup v2"));
}

TEST(HostAgentTest, CmtOnlyHybridCrioWithV4KubeletState) {
  Host host("cmt-only-hybrid-systemd-crio");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->capabilities().resctrl_occupancy().available());
  EXPECT_FALSE(report->capabilities().resctrl_mbm_total().available());
  EXPECT_THAT(report->capabilities().resctrl_mbm_total().reason(), HasSubstr("mon_features"));
  const tv1::PodReport* g = FindPod(*report, kG);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->exclusive_cpus(), "2-3");
  EXPECT_TRUE(g->has_llc_occupancy_bytes());
  EXPECT_FALSE(g->has_membw_total_bytes_per_second());
  EXPECT_THAT(g->unavailable().at("membw_total_bytes_per_second"), HasSubstr("CMT-only"));
  EXPECT_DOUBLE_EQ(g->psi_cpu_some_avg10(), 2.0);  // from the cgroup2 mirror
  EXPECT_FALSE(report->topology().numa_nodes(0).has_membw_bytes_per_second());

  // The kubelet (pid 812) names its config file with --config and overrides it
  // with flags; the memory manager's checkpoint still says Static.
  const tv1::KubeletPolicies& k = report->kubelet();
  EXPECT_EQ(k.source(),
            "config /etc/kubernetes/kubelet-config.yaml; flags of pid 812; memory_manager_state; "
            "cpu_manager_state");
  EXPECT_EQ(k.topology_manager_policy(), "restricted");
  EXPECT_EQ(k.topology_manager_scope(), "container");
  EXPECT_EQ(k.cpu_manager_policy_options().size(), 2u);
  EXPECT_EQ(k.cpu_manager_policy_options().at("align-by-socket"), "true");
  EXPECT_EQ(k.topology_manager_policy_options().at("prefer-closest-numa-nodes"), "true");
  EXPECT_EQ(k.reserved_memory_bytes_by_numa().at(0), 256u << 20);
  EXPECT_EQ(k.reserved_memory_bytes_by_numa().at(1), 512u << 20);
  EXPECT_EQ(k.memory_manager_policy(), "static");
  EXPECT_EQ(report->topology().cores_size(), 8);  // one thread per core
}

TEST(HostAgentTest, SncV2Cgroupfs) {
  Host host("snc-v2-cgroupfs-containerd");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->topology().l3_domains_size(), 1);
  EXPECT_EQ(report->topology().l3_domains(0).cpus(), "0-7");
  EXPECT_EQ(report->topology().l3_domains(0).membw_total_bytes_per_second(), 0u);
  EXPECT_EQ(report->pods_size(), 3);
  EXPECT_TRUE(FindPod(*report, kB)->has_membw_total_bytes_per_second());
}

// Issue 27: with SNC each NUMA node's bandwidth comes from its own
// mon_sub_L3_<node> part, not from the whole L3 (which spans two nodes).
TEST(HostAgentTest, Snc2BandwidthPerNumaNodeFromSubDomains) {
  Host host("intel-snc2-submon-v2-systemd-containerd");
  host.during_window = [&] {
    // Node 3 moves 3 GB in the 1 s window; node 2 nothing; socket 0 nothing.
    host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_01/mon_sub_L3_03/mbm_total_bytes",
                    "4000000000\n");
    host.tree.Write("/sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "5000000000\n");
  };
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::Topology& t = report->topology();
  ASSERT_EQ(t.numa_nodes_size(), 4);
  EXPECT_EQ(t.numa_nodes(3).membw_bytes_per_second(), 3'000'000'000u);
  EXPECT_EQ(t.numa_nodes(2).membw_bytes_per_second(), 0u);
  ASSERT_EQ(t.l3_domains_size(), 2);
  EXPECT_EQ(t.l3_domains(1).membw_total_bytes_per_second(), 3'000'000'000u);
  ASSERT_EQ(t.l3_domains(1).monitor_parts_size(), 2);
  EXPECT_EQ(t.l3_domains(1).monitor_parts(1).membw_total_bytes_per_second(), 3'000'000'000u);

  // Without the parts (an SNC kernel without sub-domain files) those NUMA
  // nodes report no bandwidth rather than all of it on the first one.
  Host bare("intel-snc2-submon-v2-systemd-containerd");
  for (const char* sub : {"mon_L3_00/mon_sub_L3_00", "mon_L3_00/mon_sub_L3_01",
                          "mon_L3_01/mon_sub_L3_02", "mon_L3_01/mon_sub_L3_03"}) {
    bare.tree.Remove(std::string("/sys/fs/resctrl/mon_data/") + sub);
  }
  absl::StatusOr<std::unique_ptr<HostAgent>> agent2 = HostAgent::Create(bare.options, bare.env);
  ASSERT_TRUE(agent2.ok()) << agent2.status();
  absl::StatusOr<tv1::NodeReport> r2 = (*agent2)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_FALSE(r2->topology().numa_nodes(0).has_membw_bytes_per_second());
  EXPECT_FALSE(r2->topology().numa_nodes(1).has_membw_bytes_per_second());
  bool said = false;
  for (const std::string& line : r2->capabilities().not_measured()) {
    said = said || line.find("inside L3 domain 0") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(HostAgentTest, VmWithoutRdtOrPmuSaysWhy) {
  Host host("no-rdt-hybrid-systemd-containerd", /*with_pmu=*/false);
  host.env.perf = nullptr;  // the real kernel answers (against a fixture directory)
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::Capabilities& caps = report->capabilities();
  EXPECT_FALSE(caps.resctrl_occupancy().available());
  EXPECT_THAT(caps.resctrl_occupancy().reason(), HasSubstr("no resctrl"));
  EXPECT_FALSE(caps.has_rmids_total());
  EXPECT_FALSE(caps.resctrl_allocation().allocating());
  EXPECT_THAT(caps.resctrl_allocation().allocation_reason(),
              HasSubstr("unavailable: resctrl is not mounted"));
  EXPECT_FALSE(caps.perf_hardware_counters().available());
  EXPECT_FALSE(caps.perf_hardware_counters().reason().empty());
  EXPECT_THAT(report->topology().note(), HasSubstr("one L3 domain per package"));
  EXPECT_EQ(report->kubelet().cpu_manager_policy(), "none");
  EXPECT_EQ(report->kubelet().shared_pool_cpus(), "0-1");
  ASSERT_EQ(report->pods_size(), 3);
  for (const tv1::PodReport& pod : report->pods()) {
    EXPECT_FALSE(pod.has_llc_occupancy_bytes());
    EXPECT_FALSE(pod.has_ipc());
    EXPECT_THAT(pod.unavailable().at("llc_occupancy_bytes"), HasSubstr("no resctrl"));
    EXPECT_FALSE(pod.unavailable().at("ipc").empty());
  }
}

TEST(HostAgentTest, BadOptionsAndHostileTrees) {
  Host host("intel-mbm-v2-systemd-containerd");
  host.options.rdt_backend = "magic";
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_FALSE(agent.ok());
  EXPECT_THAT(std::string(agent.status().message()), HasSubstr("magic"));

  Host empty("intel-mbm-v2-systemd-containerd");
  empty.tree.Remove("/sys/devices/system/cpu/online");
  agent = HostAgent::Create(empty.options, empty.env);
  ASSERT_FALSE(agent.ok());
  EXPECT_THAT(std::string(agent.status().message()), HasSubstr("topology"));

  Host junk("intel-mbm-v2-systemd-containerd");
  junk.tree.Write("/var/lib/kubelet/cpu_manager_state", "\x01\x02garbage");
  junk.tree.Write("/proc/mounts", "nonsense\n");
  junk.tree.Write(
      "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1c0e1a_0000_4000_8000_000000000001"
      ".slice/cpu.stat",
      "usage_usec lots\n");
  agent = HostAgent::Create(junk.options, junk.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->capabilities().cpu_manager_state().available());
  EXPECT_THAT(report->capabilities().cpu_manager_state().reason(), HasSubstr("JSON"));
  EXPECT_EQ(report->pods_size(), 0);  // no cgroup mount in the table: no pods, no crash
}

class FakeCri final : public PodMetadataSource {
 public:
  absl::StatusOr<std::map<std::string, PodMetadata>> List() override { return pods; }
  std::string Describe() const override { return "fake CRI"; }
  absl::StatusOr<std::map<std::string, PodMetadata>> pods;
};

class FakePodResources final : public PodResourcesSource {
 public:
  absl::StatusOr<std::vector<PodAllocation>> List() override { return pods; }
  absl::StatusOr<Allocatable> GetAllocatableResources() override { return allocatable; }
  std::string Describe() const override { return "fake PodResources"; }
  absl::StatusOr<std::vector<PodAllocation>> pods;
  absl::StatusOr<Allocatable> allocatable;
};

TEST(HostAgentTest, CriMetadataLabelsPodsAndPutsLatencyCriticalFirstForRmids) {
  Host host("amd-v1-cgroupfs-docker");  // 2 RMIDs for pods
  auto cri = std::make_shared<FakeCri>();
  cri->pods = std::map<std::string, PodMetadata>{
      {kBE,
       {"content",
        "cache-warmer",
        {{"app", "warmer"}},
        {{"neighborly.io/class", "latency-critical"}}}},
      {kG, {"content", "article-service-5d8f7-abcde", {{"workload-type", "web"}}, {}}},
  };
  host.env.pod_metadata = cri;
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->capabilities().pod_metadata().available());
  // The latency-critical BestEffort pod got an RMID before the Burstable one.
  EXPECT_THAT(report->capabilities().unmonitored_pods(), UnorderedElementsAre(Key(kB)));
  const tv1::PodReport* be = FindPod(*report, kBE);
  ASSERT_NE(be, nullptr);
  EXPECT_EQ(be->name(), "cache-warmer");
  EXPECT_THAT(be->labels(), UnorderedElementsAre(Pair("app", "warmer")));
  EXPECT_THAT(be->annotations(),
              UnorderedElementsAre(Pair("neighborly.io/class", "latency-critical")));
  EXPECT_TRUE(be->has_llc_occupancy_bytes());
  EXPECT_FALSE(be->unavailable().contains("labels"));
  const tv1::PodReport* b = FindPod(*report, kB);
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(b->unavailable().at("labels"), HasSubstr("no sandbox"));

  // The runtime goes away: capability off with its reason, pods without metadata.
  cri->pods = absl::UnavailableError("ListPodSandbox on /run/containerd/containerd.sock failed");
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->capabilities().pod_metadata().available());
  EXPECT_THAT(report->capabilities().pod_metadata().reason(), HasSubstr("ListPodSandbox"));
  EXPECT_TRUE(FindPod(*report, kBE)->labels().empty());
  EXPECT_THAT(FindPod(*report, kBE)->unavailable().at("annotations"), HasSubstr("ListPodSandbox"));
}

// Issue 27: with --resctrl-allocation and the extender's policy, the batch pod
// beside the latency-critical one runs in neighborly-batch (its MON group
// under it, still monitored) and the report says so; the policy withdrawn or
// the agent gone, the group goes.
TEST(HostAgentTest, AllocationCapsTheBatchNeighbourAndCleansUp) {
  Host host("intel-mbm-v2-systemd-containerd");  // kG pinned to 2-3
  host.tree.Write("/sys/fs/resctrl/info/L3/cbm_mask", "7ff\n");
  host.tree.Write("/sys/fs/resctrl/info/L3/min_cbm_bits", "1\n");
  host.tree.Write("/sys/fs/resctrl/info/L3/num_closids", "16\n");
  host.tree.Write("/sys/fs/resctrl/info/MB/num_closids", "8\n");
  host.tree.Write("/sys/fs/resctrl/info/MB/min_bandwidth", "10\n");
  host.tree.Write("/sys/fs/resctrl/info/MB/bandwidth_gran", "10\n");
  host.tree.Write("/sys/fs/resctrl/schemata", "L3:0=7ff;1=7ff\nMB:0=100;1=100\n");
  host.tree.Write("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
  auto cri = std::make_shared<FakeCri>();
  cri->pods = std::map<std::string, PodMetadata>{
      {kG, {"content", "article", {}, {{"neighborly.io/class", "latency-critical"}}}},
      {kB, {"batch", "etl", {}, {{"neighborly.io/class", "batch"}}}},
  };
  host.env.pod_metadata = cri;
  host.options.resctrl_allocation = true;
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  tv1::AllocationPolicy policy;
  tv1::ClassAllocation* batch = policy.add_classes();
  batch->set_workload_class("batch");
  batch->set_l3_ways_fraction(0.25);
  batch->set_mba_percent(50);
  (*agent)->SetAllocationPolicy(policy);
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::ResctrlAllocation& alloc = report->capabilities().resctrl_allocation();
  EXPECT_TRUE(alloc.allocating()) << alloc.allocation_reason();
  EXPECT_THAT(alloc.groups(), UnorderedElementsAre("neighborly-batch"));
  EXPECT_GE(alloc.changes_total(), 3u);
  const tv1::PodReport* b = FindPod(*report, kB);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->has_resctrl_cap());
  EXPECT_EQ(b->resctrl_cap().group(), "neighborly-batch");
  EXPECT_DOUBLE_EQ(b->resctrl_cap().l3_fraction(), 3.0 / 11);
  EXPECT_DOUBLE_EQ(b->resctrl_cap().mba_fraction(), 0.5);
  EXPECT_TRUE(b->has_llc_occupancy_bytes()) << "the capped pod is still monitored";
  EXPECT_TRUE(host.fake->IsDirectory(
      absl::StrCat("/sys/fs/resctrl/neighborly-batch/mon_groups/neighborly-", kB)));
  EXPECT_FALSE(FindPod(*report, kG)->has_resctrl_cap());

  (*agent)->SetAllocationPolicy(std::nullopt);  // the extender turned it off
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->capabilities().resctrl_allocation().allocating());
  EXPECT_THAT(report->capabilities().resctrl_allocation().allocation_reason(),
              HasSubstr("no allocation policy"));
  EXPECT_FALSE(host.fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  EXPECT_FALSE(FindPod(*report, kB)->has_resctrl_cap());
  EXPECT_TRUE(FindPod(*report, kB)->has_llc_occupancy_bytes());

  (*agent)->SetAllocationPolicy(policy);
  ASSERT_TRUE((*agent)->MeasureWindow(absl::Seconds(1)).ok());
  ASSERT_TRUE(host.fake->Exists("/sys/fs/resctrl/neighborly-batch"));
  agent->reset();  // SIGTERM: the agent stops
  EXPECT_FALSE(host.fake->Exists("/sys/fs/resctrl/neighborly-batch"));
}

TEST(HostAgentTest, NoCriSocketSaysWhereItLooked) {
  Host host("intel-mbm-v2-systemd-containerd");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->capabilities().pod_metadata().available());
  EXPECT_THAT(report->capabilities().pod_metadata().reason(),
              HasSubstr("/run/containerd/containerd.sock"));
  EXPECT_THAT(FindPod(*report, kG)->unavailable().at("labels"), HasSubstr("no CRI socket"));
}

// A containerd answering ListPodSandbox on the fixture tree's socket path.
class SocketRuntime final : public ::runtime::v1::RuntimeService::Service {
 public:
  grpc::Status ListPodSandbox(grpc::ServerContext*, const ::runtime::v1::ListPodSandboxRequest*,
                              ::runtime::v1::ListPodSandboxResponse* response) override {
    ::runtime::v1::PodSandbox* s = response->add_items();
    s->set_id("sandbox-1");
    s->mutable_metadata()->set_uid(kG);
    s->mutable_metadata()->set_name("article-service-5d8f7-abcde");
    s->mutable_metadata()->set_namespace_("content");
    (*s->mutable_labels())["app"] = "article-service";
    (*s->mutable_labels())["team"] = "web";
    (*s->mutable_annotations())["neighborly.io/class"] = "latency-critical";
    return grpc::Status::OK;
  }
};

TEST(HostAgentTest, FindsTheContainerdSocketUnderTheHostRoot) {
  Host host("intel-mbm-v2-systemd-containerd");
  host.tree.MkDir("/run/containerd");
  SocketRuntime runtime;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + host.tree.Path("/run/containerd/containerd.sock"),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(&runtime);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->capabilities().pod_metadata().available())
      << report->capabilities().pod_metadata().reason();
  const tv1::PodReport* g = FindPod(*report, kG);
  EXPECT_THAT(g->labels(), UnorderedElementsAre(Pair("app", "article-service")));
  EXPECT_THAT(g->annotations(), UnorderedElementsAre(Key("neighborly.io/class")));
  server->Shutdown();
}

TEST(HostAgentTest, PodResourcesGiveExclusiveCpusAndFallBackToTheStateFile) {
  Host host("intel-mbm-v2-systemd-containerd");  // cpu_manager_state: kG holds 2-3
  auto kubelet = std::make_shared<FakePodResources>();
  kubelet->pods = std::vector<PodAllocation>{
      {"content", "article-service-5d8f7-abcde", {4, 5}, {}},
  };
  kubelet->allocatable = Allocatable{{1, 2, 3, 4, 5, 6, 7}, {}};
  host.env.pod_resources = kubelet;
  host.tree.Remove("/var/lib/kubelet/cpu_manager_state");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->capabilities().kubelet_pod_resources().available());
  EXPECT_EQ(FindPod(*report, kG)->exclusive_cpus(), "4-5");
  EXPECT_EQ(FindPod(*report, kB)->exclusive_cpus(), "");
  EXPECT_EQ(report->kubelet().shared_pool_cpus(), "1-3,6-7");

  // The kubelet stops answering: back to cpu_manager_state.
  host.tree.Write("/var/lib/kubelet/cpu_manager_state",
                  R"({"policyName":"static","defaultCpuSet":"0-1,4-7",)"
                  R"("entries":{"6f1c0e1a-0000-4000-8000-000000000001":{"app":"2-3"}},)"
                  R"("checksum":1})");
  kubelet->pods = absl::UnavailableError("PodResources List on kubelet.sock failed");
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->capabilities().kubelet_pod_resources().available());
  EXPECT_THAT(report->capabilities().kubelet_pod_resources().reason(),
              HasSubstr("cpu_manager_state"));
  EXPECT_EQ(FindPod(*report, kG)->exclusive_cpus(), "2-3");
}

TEST(HostAgentTest, PqosBackendMonitorsPodsByThreadIds) {
  Host host("intel-mbm-v2-systemd-containerd");
  auto pqos = std::make_shared<FakePqos>();
  host.env.pqos = pqos;
  host.options.rdt_backend = "pqos";
  host.during_window = [&] {
    const int group = pqos->GroupOf(1000);  // the Guaranteed pod's first thread
    ASSERT_NE(group, 0);
    pqos->values[group] = {18'000'000, 4'000'000'000, 3'000'000'000};
  };
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  // Our stale resctrl group is not touched: libpqos keeps its own groups.
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(2));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::Capabilities& caps = report->capabilities();
  EXPECT_TRUE(caps.resctrl_occupancy().available());
  EXPECT_TRUE(caps.resctrl_mbm_total().available());
  EXPECT_EQ(caps.rmids_total(), 8u);
  EXPECT_EQ(caps.rmids_free(), 8u - 1 - 3);
  EXPECT_EQ(pqos->groups.size(), 3u);
  EXPECT_EQ(pqos->GroupOf(1001), pqos->GroupOf(1000));
  const tv1::PodReport* g = FindPod(*report, kG);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->llc_occupancy_bytes(), 18'000'000u);
  EXPECT_EQ(g->membw_total_bytes_per_second(), 2'000'000'000u);
  EXPECT_EQ(g->membw_local_bytes_per_second(), 1'500'000'000u);
  // Node totals still come from resctrl's root group.
  EXPECT_TRUE(report->topology().l3_domains(1).has_occupancy_bytes());
}

TEST(HostAgentTest, PqosInitFailureIsTheCapabilityReason) {
  Host host("intel-mbm-v2-systemd-containerd");
  auto pqos = std::make_shared<FakePqos>();
  pqos->init = absl::FailedPreconditionError(
      "libpqos pqos_init failed (PQOS_RETVAL_ERROR): ERROR: cpuid: no RDT");
  host.env.pqos = pqos;
  host.options.rdt_backend = "pqos";
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->capabilities().resctrl_occupancy().available());
  EXPECT_THAT(report->capabilities().resctrl_occupancy().reason(), HasSubstr("no RDT"));
  EXPECT_FALSE(report->capabilities().has_rmids_total());
  EXPECT_THAT(FindPod(*report, kG)->unavailable().at("llc_occupancy_bytes"),
              HasSubstr("--rdt-backend pqos"));

  // The real libpqos refuses a fixture tree: it would read this machine instead.
  Host tree("intel-mbm-v2-systemd-containerd");
  tree.options.rdt_backend = "pqos";
  agent = HostAgent::Create(tree.options, tree.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->capabilities().resctrl_occupancy().reason(), HasSubstr("--host-root"));
}

TEST(HostAgentTest, ThisMachineWithTheRealLibpqos) {
  HostAgentOptions options;
  options.node_name = "build-vm";
  options.rdt_backend = "pqos";
  options.peak_membw.measure = MeasureMode::kOff;
  HostAgentEnvironment env;
  env.wait = [](absl::Duration) {};
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options, env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Milliseconds(10));
  ASSERT_TRUE(report.ok()) << report.status();
  const tv1::Capability& occupancy = report->capabilities().resctrl_occupancy();
  if (!occupancy.available()) {
    EXPECT_THAT(occupancy.reason(), HasSubstr("libpqos pqos_init failed"));
  } else {
    EXPECT_GT(report->capabilities().rmids_total(), 0u);
  }
}

TEST(HostAgentTest, PeakBandwidthPerNumaNodeWithItsSource) {
  Host host("intel-mbm-v2-systemd-containerd");
  host.options.peak_membw.override_peak = *ParsePeakOverride("1=180G");
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok()) << report.status();
  const auto& numa = report->topology().numa_nodes();
  ASSERT_EQ(numa.size(), 2);
  EXPECT_EQ(numa[0].peak_membw_bytes_per_second(), 150'000'000'000ull);
  EXPECT_EQ(numa[0].peak_membw_source(), "measured");
  EXPECT_THAT(numa[0].peak_membw_detail(), HasSubstr("STREAM triad"));
  EXPECT_EQ(numa[1].peak_membw_bytes_per_second(), 180'000'000'000ull);
  EXPECT_EQ(numa[1].peak_membw_source(), "override");
  EXPECT_TRUE(report->capabilities().peak_membw().available());
  EXPECT_EQ(host.meter->calls, 1);
  // Cached under the host root: a restart on this boot does not measure again.
  EXPECT_TRUE(host.fake->Exists("/var/lib/neighborly/peak-membw.json"));
  agent = HostAgent::Create(host.options, host.env);
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ(host.meter->calls, 1);
  EXPECT_EQ((*agent)->peak_membw().nodes[0].source, "measured");

  // Measurement off and no SMBIOS in the tree: no figure, and the reason.
  Host off("no-rdt-hybrid-systemd-containerd");
  off.options.peak_membw.measure = MeasureMode::kOff;
  agent = HostAgent::Create(off.options, off.env);
  ASSERT_TRUE(agent.ok());
  report = (*agent)->MeasureWindow(absl::Seconds(1));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->topology().numa_nodes(0).has_peak_membw_bytes_per_second());
  EXPECT_EQ(report->topology().numa_nodes(0).peak_membw_source(), "default");
  EXPECT_FALSE(report->capabilities().peak_membw().available());
  EXPECT_THAT(report->capabilities().peak_membw().reason(),
              HasSubstr("measurement disabled (--peak-membw-measure off)"));
  EXPECT_EQ(off.meter->calls, 0);
}

TEST(HostAgentTest, ThisMachine) {
  HostAgentOptions options;
  options.node_name = "build-vm";
  options.peak_membw.measure = MeasureMode::kOff;  // measured in ThisMachinesPeakBandwidth
  HostAgentEnvironment env;
  env.wait = [](absl::Duration) {};
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options, env);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(absl::Milliseconds(10));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->topology().cpus_online(), 0u);
  const tv1::Capabilities& caps = report->capabilities();
  if (!caps.perf_hardware_counters().available()) {
    EXPECT_FALSE(caps.perf_hardware_counters().reason().empty());
  }
  if (!caps.resctrl_occupancy().available()) {
    EXPECT_FALSE(caps.resctrl_occupancy().reason().empty());
  }
}

// The real measurement through the agent on this VM (one NUMA node, 2 CPUs),
// cached in a scratch file rather than in this machine's /var/lib.
TEST(HostAgentTest, ThisMachinesPeakBandwidth) {
  TestTree scratch;
  HostAgentOptions options;
  options.node_name = "build-vm";
  options.peak_membw.cache_path = scratch.Path("/peak-membw.json");
  absl::StatusOr<PeakMembwReport> peak = CalibratePeakMembw(options);
  ASSERT_TRUE(peak.ok()) << peak.status();
  ASSERT_FALSE(peak->nodes.empty());
  const NodePeak& node = peak->nodes[0];
  if (node.source == "measured") {
    EXPECT_GT(*node.bytes_per_second, 1'000'000'000ull);      // 1 GB/s
    EXPECT_LT(*node.bytes_per_second, 2'000'000'000'000ull);  // 2 TB/s
    EXPECT_THAT(node.detail, HasSubstr("STREAM triad"));
  } else {
    // Only when the CPUs were too busy to stream at all; it says so.
    EXPECT_THAT(node.detail, AnyOf(HasSubstr("no undisturbed pass"), HasSubstr("budget")))
        << node.detail;
  }
  EXPECT_TRUE(peak->measured_now);
  // A second start on this boot reads the cache instead of measuring (except
  // after a disturbed run, which it measures again).
  absl::StatusOr<PeakMembwReport> again = CalibratePeakMembw(options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->measured_now, node.source != "measured");
  if (node.source == "measured") {
    EXPECT_EQ(again->nodes[0].bytes_per_second, node.bytes_per_second);
  }
}

}  // namespace
}  // namespace neighborly::agent
