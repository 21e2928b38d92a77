#include "node-agent/src/perf/perf_events.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/pods/cgroup_mounts.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

TEST(PerfParseTest, GroupReadLayout) {
  const uint64_t words[] = {2, 100, 50, 7, 1001, 9, 1002};
  absl::StatusOr<GroupRead> read = ParseGroupRead(words, 7, 2);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->time_enabled, 100u);
  EXPECT_EQ(read->time_running, 50u);
  EXPECT_EQ(read->values, (std::vector<uint64_t>{7, 9}));
  EXPECT_FALSE(ParseGroupRead(words, 5, 2).ok());
  EXPECT_FALSE(ParseGroupRead(words, 7, 3).ok());
  EXPECT_FALSE(ParseGroupRead(words, 2, 2).ok());
}

TEST(PerfWindowTest, ScalesMultiplexedCountsAndSkipsIdleCpus) {
  CounterSnapshot start, end;
  start.per_cpu = {GroupRead{0, 0, {0, 0}}, GroupRead{0, 0, {0, 0}}, std::nullopt};
  // CPU 0 counted half the time; CPU 1 never ran the group; CPU 2 failed to read.
  end.per_cpu = {GroupRead{1000, 500, {100, 200}}, GroupRead{1000, 0, {0, 0}},
                 GroupRead{1000, 1000, {5, 5}}};
  PerfWindow w = ComputePerfWindow(start, end);
  ASSERT_EQ(w.values.size(), 2u);
  EXPECT_DOUBLE_EQ(*w.values[0], 200);
  EXPECT_DOUBLE_EQ(*w.values[1], 400);
  EXPECT_DOUBLE_EQ(w.scale, 0.25);

  CounterSnapshot idle_end;
  idle_end.per_cpu = {GroupRead{1000, 0, {0, 0}}, GroupRead{1000, 0, {0, 0}}, std::nullopt};
  PerfWindow idle = ComputePerfWindow(start, idle_end);
  EXPECT_FALSE(idle.values[0].has_value());  // no sample, never zero
}

// Fake kernel: hardware events answer ENOENT (no PMU), software events work.
class NoPmuSyscalls final : public PerfSyscalls {
 public:
  int Open(const perf_event_attr& attr, int, int, int, unsigned long) override {
    opens.push_back(attr.type);
    return attr.type == PERF_TYPE_SOFTWARE ? 100 + static_cast<int>(opens.size()) : -ENOENT;
  }
  long Read(int, void*, size_t) override { return -EIO; }
  int Ioctl(int, unsigned long, unsigned long) override { return 0; }
  void Close(int fd) override { closed.push_back(fd); }
  int OpenDirectory(const std::string& path) override { return path == "/missing" ? -ENOENT : 3; }
  std::vector<uint32_t> opens;
  std::vector<int> closed;
};

TEST(PmuProbeTest, MissingPmuIsReportedWithItsReason) {
  NoPmuSyscalls syscalls;
  perf_event_attr cycles{};
  cycles.type = PERF_TYPE_HARDWARE;
  HardwareEvents events{{"cycles", cycles}, {"instructions", cycles}, std::nullopt};
  PmuProbe probe = ProbePmu(syscalls, events, "/sys/fs/cgroup", 0, /*cpu_pmu_in_sysfs=*/false);
  EXPECT_FALSE(probe.hardware);
  EXPECT_TRUE(probe.software_cgroup);
  EXPECT_THAT(probe.reason, HasSubstr("no hardware PMU"));
  EXPECT_THAT(probe.reason, HasSubstr("ENOENT"));
  EXPECT_THAT(probe.reason, HasSubstr("devices/cpu is absent"));
  EXPECT_EQ(syscalls.closed.size(), 2u);  // the software fd and the cgroup fd

  PmuProbe bad_dir = ProbePmu(syscalls, events, "/missing", 0, false);
  EXPECT_FALSE(bad_dir.software_cgroup);
  EXPECT_THAT(bad_dir.reason, HasSubstr("cannot open cgroup"));
}

TEST(CgroupCountersTest, OpenFailureClosesWhatWasOpened) {
  NoPmuSyscalls syscalls;
  perf_event_attr hw{};
  hw.type = PERF_TYPE_HARDWARE;
  absl::StatusOr<std::unique_ptr<CgroupCounters>> counters =
      CgroupCounters::Open(syscalls, "/sys/fs/cgroup/x", {0, 1}, {SoftwareCpuClock(), hw});
  ASSERT_FALSE(counters.ok());
  EXPECT_THAT(std::string(counters.status().message()), HasSubstr("ENOENT"));
  EXPECT_EQ(syscalls.closed.size(), 2u);  // software leader on cpu 0 + the cgroup fd
}

// The real kernel: the probe on this machine, then a software event counted
// in cgroup mode on a real cgroup with a busy process in it.
TEST(PerfKernelTest, ProbeThisMachine) {
  std::unique_ptr<PerfSyscalls> syscalls = NewRealPerfSyscalls();
  absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(*NewRealFilesystem("/"), "/");
  ASSERT_TRUE(mounts.ok());
  const std::string dir = !mounts->unified.empty() ? mounts->unified : mounts->V1Dir("perf_event");
  if (dir.empty()) GTEST_SKIP() << "no cgroup hierarchy with perf_event on this machine";
  PmuProbe probe = ProbePmu(*syscalls, EncodeHardwareEvents(), dir, 0,
                            std::filesystem::exists("/sys/bus/event_source/devices/cpu"));
  if (!probe.hardware) {
    EXPECT_FALSE(probe.reason.empty());
  }
  if (!probe.software_cgroup) {
    EXPECT_FALSE(probe.software_reason.empty());
  }
  std::cout << "hardware: " << probe.hardware << " (" << probe.reason
            << ")\nsoftware cgroup mode: " << probe.software_cgroup << " (" << probe.software_reason
            << ")\n";
}

TEST(PerfKernelTest, SoftwareEventInCgroupModeOnARealCgroup) {
  absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(*NewRealFilesystem("/"), "/");
  ASSERT_TRUE(mounts.ok());
  const std::string root =
      !mounts->V1Dir("perf_event").empty() ? mounts->V1Dir("perf_event") : mounts->unified;
  if (root.empty()) GTEST_SKIP() << "no cgroup hierarchy with perf_event on this machine";
  const std::string dir = absl::StrCat(root, "/neighborly-perf-test-", getpid());
  std::error_code error;
  std::filesystem::create_directory(dir, error);
  if (error) GTEST_SKIP() << "cannot create a cgroup under " << root << ": " << error.message();
  const pid_t child = fork();
  if (child == 0) {
    while (true) {
    }
  }
  std::ofstream(dir + "/cgroup.procs") << child << "\n";
  std::unique_ptr<PerfSyscalls> syscalls = NewRealPerfSyscalls();
  CpuSet cpus;
  for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); ++c) cpus.push_back(static_cast<uint32_t>(c));
  absl::StatusOr<std::unique_ptr<CgroupCounters>> counters =
      CgroupCounters::Open(*syscalls, dir, cpus, {SoftwareCpuClock()});
  std::optional<double> counted;
  std::string refused;
  if (counters.ok()) {
    const CounterSnapshot start = (*counters)->Read();
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline && !counted) {
      PerfWindow w = ComputePerfWindow(start, (*counters)->Read());
      if (!w.values.empty() && w.values[0] && *w.values[0] > 0) counted = w.values[0];
    }
    counters->reset();
  } else {
    refused = std::string(counters.status().message());
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  rmdir(dir.c_str());
  if (!refused.empty())
    GTEST_SKIP() << "the kernel refused a cgroup-mode software event: " << refused;
  ASSERT_TRUE(counted.has_value()) << "cpu-clock never advanced for a busy cgroup";
  EXPECT_GT(*counted, 0);
}

}  // namespace
}  // namespace neighborly::agent
