// Per-pod hardware counters (cycles, instructions, LLC misses) through
// perf_event_open in cgroup mode: one event group per CPU on the pod's cgroup,
// events encoded by libpfm4 (model-specific names first, generic ones last),
// multiplexing scaled by time_enabled / time_running.
//
//   absl::StatusOr<HardwareEvents> events = EncodeHardwareEvents();
//   PmuProbe probe = ProbePmu(syscalls, events, "/sys/fs/cgroup", 0);  // once, at start
//   auto group = CgroupCounters::Open(syscalls, pod_cgroup_dir, cpus, attrs);
//   auto a = group->Read(); ... auto b = group->Read();
//   PerfWindow w = ComputePerfWindow(*a, *b);   // scaled deltas; IPC = w.values[1] / w.values[0]
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PERF_PERF_EVENTS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PERF_PERF_EVENTS_H_

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cpu_list.h"

namespace neighborly::agent {

// The system calls perf needs, behind a door so tests can fake them.
class PerfSyscalls {
 public:
  virtual ~PerfSyscalls() = default;
  // perf_event_open; returns the fd or -errno.
  virtual int Open(const perf_event_attr& attr, int pid, int cpu, int group_fd,
                   unsigned long flags) = 0;
  // read(2); returns bytes read or -errno.
  virtual long Read(int fd, void* buffer, size_t size) = 0;
  virtual int Ioctl(int fd, unsigned long request, unsigned long arg) = 0;
  virtual void Close(int fd) = 0;
  // open(dir, O_RDONLY|O_DIRECTORY); the fd or -errno.
  virtual int OpenDirectory(const std::string& path) = 0;
};
std::unique_ptr<PerfSyscalls> NewRealPerfSyscalls();

struct EncodedEvent {
  std::string name;  // the candidate that libpfm4 accepted
  perf_event_attr attr;
};

// Encodes the first candidate libpfm4 knows; the error lists every refusal.
absl::StatusOr<EncodedEvent> EncodeFirst(const std::vector<std::string>& candidates);

struct HardwareEvents {
  EncodedEvent cycles;
  EncodedEvent instructions;
  std::optional<EncodedEvent> llc_misses;
};
absl::StatusOr<HardwareEvents> EncodeHardwareEvents();

// A software event (cpu-clock) for probing and for tests on PMU-less machines.
perf_event_attr SoftwareCpuClock();

struct PmuProbe {
  bool hardware = false;
  std::string reason;            // why hardware counters are unavailable
  bool software_cgroup = false;  // a software event opened in cgroup mode
  std::string software_reason;
};

// Opens cycles (then a software event) on `cpu` for the cgroup at
// `cgroup_dir` (an agent-side path). Done once; its verdict is sticky.
PmuProbe ProbePmu(PerfSyscalls& syscalls, const absl::StatusOr<HardwareEvents>& events,
                  const std::string& cgroup_dir, int cpu, bool cpu_pmu_in_sysfs);

// One read of a group: per CPU, the raw values and enabled/running times.
struct GroupRead {
  uint64_t time_enabled = 0;
  uint64_t time_running = 0;
  std::vector<uint64_t> values;
};
// PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID layout.
absl::StatusOr<GroupRead> ParseGroupRead(const uint64_t* words, size_t word_count,
                                         size_t expected_events);

struct CounterSnapshot {
  std::vector<std::optional<GroupRead>> per_cpu;  // nullopt: that CPU's read failed
};

struct PerfWindow {
  std::vector<std::optional<double>> values;  // scaled deltas per event; nullopt: never ran
  double scale = 0;  // Σrunning / Σenabled over the window (1: no multiplexing)
};
PerfWindow ComputePerfWindow(const CounterSnapshot& start, const CounterSnapshot& end);

// Event groups (leader = events[0]) on every CPU in `cpus` for one cgroup.
class CgroupCounters {
 public:
  static absl::StatusOr<std::unique_ptr<CgroupCounters>> Open(
      PerfSyscalls& syscalls, const std::string& cgroup_dir, const CpuSet& cpus,
      const std::vector<perf_event_attr>& events);
  ~CgroupCounters();
  CgroupCounters(const CgroupCounters&) = delete;
  CgroupCounters& operator=(const CgroupCounters&) = delete;

  CounterSnapshot Read();
  size_t event_count() const { return event_count_; }

 private:
  CgroupCounters(PerfSyscalls& syscalls, size_t event_count)
      : syscalls_(syscalls), event_count_(event_count) {}

  PerfSyscalls& syscalls_;
  size_t event_count_;
  std::vector<int> leaders_;
  std::vector<int> fds_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PERF_PERF_EVENTS_H_
