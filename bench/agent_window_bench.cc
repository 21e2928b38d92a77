// The node agent's own cost: CPU time and peak RSS per measurement window on a
// host with 100 pods (cgroup v2, systemd, containerd, 3 containers of 10
// threads each per pod, resctrl with MBM on 2 L3 domains, a PMU on 16 CPUs).
// The tree is generated under $TMPDIR; resctrl and the PMU are the test fakes
// (their own bookkeeping is counted too, so the numbers are an upper bound for
// the agent's work; kernel time spent in real resctrl/perf reads is not).
//
//   build/host/bench/agent_window_bench [pods=100] [windows=20]
//
// At a 1 s interval, CPU per window / 1 s is the share of one core.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_format.h"
#include "node-agent/src/host/host_agent.h"
#include "node-agent/src/perf/perf_events.h"
#include "node-agent/src/resctrl/fake_resctrl.h"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

constexpr int kCpus = 16;

// Every group read answers a fixed, plausible layout.
class BenchPmu final : public PerfSyscalls {
 public:
  int Open(const perf_event_attr&, int, int, int, unsigned long) override { return next_fd_++; }
  long Read(int, void* buffer, size_t size) override {
    ticks_ += 1;
    const uint64_t words[] = {
        3, ticks_ * 1000, ticks_ * 1000, ticks_ * 900, 1, ticks_ * 1800, 2, ticks_ * 3, 3};
    if (size < sizeof words) return -22;
    std::memcpy(buffer, words, sizeof words);
    return sizeof words;
  }
  int Ioctl(int, unsigned long, unsigned long) override { return 0; }
  void Close(int) override {}
  int OpenDirectory(const std::string&) override { return 3; }

 private:
  int next_fd_ = 10;
  uint64_t ticks_ = 0;
};

void WriteHost(const TestTree& tree, int pods) {
  tree.Write("/sys/devices/system/cpu/online", absl::StrFormat("0-%d\n", kCpus - 1));
  tree.Write("/sys/devices/system/node/online", "0-1\n");
  for (int n = 0; n < 2; ++n) {
    const std::string dir = absl::StrFormat("/sys/devices/system/node/node%d", n);
    tree.Write(dir + "/cpulist", absl::StrFormat("%d-%d\n", n * 8, n * 8 + 7));
    tree.Write(dir + "/distance", n == 0 ? "10 21\n" : "21 10\n");
    tree.Write(dir + "/meminfo", absl::StrFormat("Node %d MemTotal: 33554432 kB\n", n));
  }
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    const std::string dir = absl::StrFormat("/sys/devices/system/cpu/cpu%d/cache/index3", cpu);
    tree.Write(dir + "/level", "3\n");
    tree.Write(dir + "/id", absl::StrFormat("%d\n", cpu / 8));
    tree.Write(dir + "/size", "36608K\n");
    tree.Write(dir + "/shared_cpu_list", cpu < 8 ? "0-7\n" : "8-15\n");
  }
  tree.Write("/proc/mounts",
             "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\nresctrl /sys/fs/resctrl resctrl rw 0 0\n");
  tree.Write("/proc/pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  tree.Write("/proc/sys/kernel/hostname", "bench-node\n");
  tree.Write("/sys/fs/resctrl/info/L3_MON/num_rmids", "224\n");
  tree.Write("/sys/fs/resctrl/info/L3_MON/mon_features",
             "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
  tree.MkDir("/sys/fs/resctrl/mon_groups");
  for (int d = 0; d < 2; ++d) {
    for (const char* f : {"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"}) {
      tree.Write(absl::StrFormat("/sys/fs/resctrl/mon_data/mon_L3_%02d/%s", d, f), "1000\n");
    }
  }
  tree.Write("/var/lib/kubelet/cpu_manager_state", R"({"policyName":"none","defaultCpuSet":""})");
  tree.Write("/var/lib/kubelet/config.yaml", "cpuManagerPolicy: none\n");
  int tid = 1000;
  for (int p = 0; p < pods; ++p) {
    const std::string uid = absl::StrFormat("00000000-0000-4000-8000-%012d", p);
    std::string uid_ = uid;
    for (char& c : uid_) c = c == '-' ? '_' : c;
    const std::string rel = absl::StrFormat(
        "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice",
        uid_);
    tree.Write(rel + "/cpu.stat", "usage_usec 123456789\nuser_usec 1\nsystem_usec 1\n");
    tree.Write(rel + "/cpu.weight", "20\n");
    tree.Write(rel + "/memory.numa_stat",
               "anon N0=1048576 N1=2097152\nfile N0=4096 N1=8192\nkernel_stack N0=1 N1=1\n");
    tree.Write(rel + "/cpu.pressure", "some avg10=0.10 avg60=0 avg300=0 total=1\n");
    tree.Write(
        rel + "/memory.pressure",
        "some avg10=0.00 avg60=0 avg300=0 total=0\nfull avg10=0.00 avg60=0 avg300=0 total=0\n");
    tree.Write(rel + "/cgroup.threads", "");
    for (int c = 0; c < 3; ++c) {
      std::string threads;
      for (int t = 0; t < 10; ++t) threads += std::to_string(tid++) + "\n";
      tree.Write(absl::StrFormat("%s/cri-containerd-%064d.scope/cgroup.threads", rel, p * 3 + c),
                 threads);
    }
    tree.MkDir(absl::StrFormat("/var/log/pods/bench_pod-%d_%s", p, uid));
  }
}

double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

long MaxRssKib() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

int Main(int argc, char** argv) {
  const int pods = argc > 1 ? std::atoi(argv[1]) : 100;
  const int windows = argc > 2 ? std::atoi(argv[2]) : 20;
  TestTree tree;
  WriteHost(tree, pods);
  std::shared_ptr<Filesystem> real(NewRealFilesystem(tree.root()));
  auto fake = std::make_shared<FakeResctrl>(*real);
  HostAgentOptions options;
  options.host_root = tree.root();
  HostAgentEnvironment env;
  env.filesystem = fake;
  env.perf = std::make_shared<BenchPmu>();
  env.wait = [](absl::Duration) {};  // the window's sleep costs no CPU
  const long rss_before_kib = MaxRssKib();
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options, env);
  if (!agent.ok()) {
    std::fprintf(stderr, "agent: %s\n", std::string(agent.status().message()).c_str());
    return 1;
  }
  // The first window creates the resctrl groups and perf groups; measure it apart.
  double t0 = CpuSeconds();
  absl::StatusOr<telemetry::v1::NodeReport> first = (*agent)->MeasureWindow(absl::Seconds(1));
  const double first_window = CpuSeconds() - t0;
  if (!first.ok() || first->pods_size() != pods) {
    std::fprintf(stderr, "first window: %d pods\n", first.ok() ? first->pods_size() : -1);
    return 1;
  }
  t0 = CpuSeconds();
  size_t bytes = 0;
  for (int w = 0; w < windows; ++w) {
    absl::StatusOr<telemetry::v1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
    if (!report.ok()) return 1;
    bytes = report->ByteSizeLong();
  }
  const double per_window = (CpuSeconds() - t0) / windows;
  std::printf("pods=%d cpus=%d windows=%d\n", pods, kCpus, windows);
  std::printf("first window (creates groups): %.2f ms CPU\n", first_window * 1e3);
  std::printf("steady window: %.2f ms CPU = %.3f %% of one core at a 1 s interval\n",
              per_window * 1e3, per_window * 100);
  std::printf("peak RSS: %.1f MiB (%.1f MiB before the agent was created)\n",
              static_cast<double>(MaxRssKib()) / 1024, static_cast<double>(rss_before_kib) / 1024);
  std::printf("report size: %zu bytes\n", bytes);
  return 0;
}

}  // namespace
}  // namespace neighborly::agent

int main(int argc, char** argv) { return neighborly::agent::Main(argc, argv); }
