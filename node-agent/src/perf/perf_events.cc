#include "node-agent/src/perf/perf_events.h"

#include <fcntl.h>
#include <perfmon/pfmlib.h>
#include <perfmon/pfmlib_perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace neighborly::agent {
namespace {

class RealPerfSyscalls final : public PerfSyscalls {
 public:
  int Open(const perf_event_attr& attr, int pid, int cpu, int group_fd,
           unsigned long flags) override {
    const long fd = syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags);
    return fd < 0 ? -errno : static_cast<int>(fd);
  }
  long Read(int fd, void* buffer, size_t size) override {
    const ssize_t n = read(fd, buffer, size);
    return n < 0 ? -errno : n;
  }
  int Ioctl(int fd, unsigned long request, unsigned long arg) override {
    return ioctl(fd, request, arg) < 0 ? -errno : 0;
  }
  void Close(int fd) override { close(fd); }
  int OpenDirectory(const std::string& path) override {
    const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
  }
};

std::string ErrnoName(int err) {
  switch (err) {
    case ENOENT:
      return "ENOENT";
    case ENODEV:
      return "ENODEV";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EINVAL:
      return "EINVAL";
    case EBADF:
      return "EBADF";
    case EMFILE:
      return "EMFILE";
    case EBUSY:
      return "EBUSY";
    default:
      return absl::StrCat("errno ", err);
  }
}

}  // namespace

std::unique_ptr<PerfSyscalls> NewRealPerfSyscalls() { return std::make_unique<RealPerfSyscalls>(); }

absl::StatusOr<EncodedEvent> EncodeFirst(const std::vector<std::string>& candidates) {
  // pfm_initialize is idempotent: later calls return the first result.
  if (const int init = pfm_initialize(); init != PFM_SUCCESS) {
    return absl::FailedPreconditionError(
        absl::StrCat("libpfm4 initialisation failed: ", pfm_strerror(init)));
  }
  std::string refusals;
  for (const std::string& name : candidates) {
    EncodedEvent event;
    event.name = name;
    std::memset(&event.attr, 0, sizeof event.attr);
    event.attr.size = sizeof event.attr;
    pfm_perf_encode_arg_t arg;
    std::memset(&arg, 0, sizeof arg);
    arg.attr = &event.attr;
    arg.size = sizeof arg;
    const int r =
        pfm_get_os_event_encoding(name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (r == PFM_SUCCESS) {
      event.attr.size = sizeof event.attr;
      return event;
    }
    absl::StrAppend(&refusals, refusals.empty() ? "" : ", ", name, ": ", pfm_strerror(r));
  }
  return absl::NotFoundError(absl::StrCat("no candidate event encodes (", refusals, ")"));
}

absl::StatusOr<HardwareEvents> EncodeHardwareEvents() {
  absl::StatusOr<EncodedEvent> cycles =
      EncodeFirst({"CPU_CLK_UNHALTED:THREAD_P", "UNHALTED_CORE_CYCLES", "cycles"});
  if (!cycles.ok()) return cycles.status();
  absl::StatusOr<EncodedEvent> instructions = EncodeFirst(
      {"INST_RETIRED:ANY_P", "INSTRUCTION_RETIRED", "RETIRED_INSTRUCTIONS", "instructions"});
  if (!instructions.ok()) return instructions.status();
  HardwareEvents events{*cycles, *instructions, std::nullopt};
  // Haswell and later name LLC misses LONGEST_LAT_CACHE:MISS; older models and
  // the architectural table LLC_MISSES; the generic fallback is cache-misses.
  absl::StatusOr<EncodedEvent> misses =
      EncodeFirst({"LONGEST_LAT_CACHE:MISS", "LLC_MISSES", "cache-misses"});
  if (misses.ok()) events.llc_misses = *misses;
  return events;
}

perf_event_attr SoftwareCpuClock() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  return attr;
}

PmuProbe ProbePmu(PerfSyscalls& syscalls, const absl::StatusOr<HardwareEvents>& events,
                  const std::string& cgroup_dir, int cpu, bool cpu_pmu_in_sysfs) {
  PmuProbe probe;
  const int cgroup_fd = syscalls.OpenDirectory(cgroup_dir);
  if (cgroup_fd < 0) {
    probe.reason = probe.software_reason =
        absl::StrCat("cannot open cgroup ", cgroup_dir, " for perf: ", ErrnoName(-cgroup_fd));
    return probe;
  }
  auto try_open = [&](perf_event_attr attr) -> int {
    attr.disabled = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    const int fd =
        syscalls.Open(attr, cgroup_fd, cpu, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
    if (fd >= 0) syscalls.Close(fd);
    return fd;
  };
  const int software = try_open(SoftwareCpuClock());
  probe.software_cgroup = software >= 0;
  if (software < 0) {
    probe.software_reason =
        absl::StrCat("software cpu-clock in cgroup mode refused: ", ErrnoName(-software),
                     -software == EACCES || -software == EPERM
                         ? " (needs CAP_PERFMON or perf_event_paranoid <= 0)"
                         : "");
  }
  if (!events.ok()) {
    probe.reason = absl::StrCat("no hardware event encodes: ", events.status().message());
  } else {
    const int hardware = try_open(events->cycles.attr);
    if (hardware >= 0) {
      probe.hardware = true;
    } else {
      const int err = -hardware;
      if (err == ENOENT || err == ENODEV || err == EOPNOTSUPP) {
        probe.reason = absl::StrCat(
            "no hardware PMU: ", events->cycles.name, " refused with ", ErrnoName(err),
            cpu_pmu_in_sysfs ? "" : " and /sys/bus/event_source/devices/cpu is absent",
            probe.software_cgroup ? "; software events work in cgroup mode, so the cgroup is fine"
                                  : "");
      } else {
        probe.reason = absl::StrCat("cycles refused with ", ErrnoName(err),
                                    err == EACCES || err == EPERM
                                        ? " (needs CAP_PERFMON or perf_event_paranoid <= 0)"
                                        : "");
      }
    }
  }
  syscalls.Close(cgroup_fd);
  return probe;
}

absl::StatusOr<GroupRead> ParseGroupRead(const uint64_t* words, size_t word_count,
                                         size_t expected_events) {
  if (word_count < 3) return absl::DataLossError("perf group read: shorter than its header");
  const uint64_t nr = words[0];
  if (nr != expected_events || word_count < 3 + 2 * nr) {
    return absl::DataLossError(absl::StrCat("perf group read: ", nr, " events in ", word_count,
                                            " words, expected ", expected_events));
  }
  GroupRead read;
  read.time_enabled = words[1];
  read.time_running = words[2];
  for (uint64_t i = 0; i < nr; ++i) read.values.push_back(words[3 + 2 * i]);
  return read;
}

PerfWindow ComputePerfWindow(const CounterSnapshot& start, const CounterSnapshot& end) {
  PerfWindow window;
  double enabled_sum = 0, running_sum = 0;
  const size_t cpus = std::min(start.per_cpu.size(), end.per_cpu.size());
  for (size_t c = 0; c < cpus; ++c) {
    const std::optional<GroupRead>& a = start.per_cpu[c];
    const std::optional<GroupRead>& b = end.per_cpu[c];
    if (!a || !b || a->values.size() != b->values.size()) continue;
    if (window.values.size() < b->values.size()) window.values.resize(b->values.size());
    if (b->time_enabled < a->time_enabled || b->time_running < a->time_running) continue;
    const uint64_t enabled = b->time_enabled - a->time_enabled;
    const uint64_t running = b->time_running - a->time_running;
    enabled_sum += static_cast<double>(enabled);
    running_sum += static_cast<double>(running);
    if (running == 0) continue;  // never scheduled on this CPU: no sample, not zero
    const double scale = static_cast<double>(enabled) / static_cast<double>(running);
    for (size_t e = 0; e < b->values.size(); ++e) {
      if (b->values[e] < a->values[e]) continue;
      window.values[e] =
          window.values[e].value_or(0) + static_cast<double>(b->values[e] - a->values[e]) * scale;
    }
  }
  window.scale = enabled_sum > 0 ? running_sum / enabled_sum : 0;
  return window;
}

absl::StatusOr<std::unique_ptr<CgroupCounters>> CgroupCounters::Open(
    PerfSyscalls& syscalls, const std::string& cgroup_dir, const CpuSet& cpus,
    const std::vector<perf_event_attr>& events) {
  if (events.empty()) return absl::InvalidArgumentError("no perf events to open");
  const int cgroup_fd = syscalls.OpenDirectory(cgroup_dir);
  if (cgroup_fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("open cgroup ", cgroup_dir, ": ", ErrnoName(-cgroup_fd)));
  }
  std::unique_ptr<CgroupCounters> counters(new CgroupCounters(syscalls, events.size()));
  absl::Status failure;
  for (uint32_t cpu : cpus) {
    int leader = -1;
    for (size_t e = 0; e < events.size(); ++e) {
      perf_event_attr attr = events[e];
      attr.disabled = e == 0 ? 1 : 0;
      attr.inherit = 0;
      attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
                         PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
      const int fd = syscalls.Open(attr, cgroup_fd, static_cast<int>(cpu), leader,
                                   PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) {
        failure = absl::UnavailableError(absl::StrCat("perf_event_open on cpu ", cpu, " for ",
                                                      cgroup_dir, ": ", ErrnoName(-fd)));
        break;
      }
      counters->fds_.push_back(fd);
      if (e == 0) leader = fd;
    }
    if (!failure.ok()) break;
    counters->leaders_.push_back(leader);
    syscalls.Ioctl(leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    syscalls.Ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  }
  syscalls.Close(cgroup_fd);
  if (!failure.ok()) return failure;  // the destructor closes what was opened
  return counters;
}

CgroupCounters::~CgroupCounters() {
  for (int fd : fds_) syscalls_.Close(fd);
}

CounterSnapshot CgroupCounters::Read() {
  CounterSnapshot snapshot;
  std::vector<uint64_t> words(3 + 2 * event_count_);
  for (int leader : leaders_) {
    const long n = syscalls_.Read(leader, words.data(), words.size() * sizeof(uint64_t));
    if (n < 0) {
      snapshot.per_cpu.push_back(std::nullopt);
      continue;
    }
    absl::StatusOr<GroupRead> read =
        ParseGroupRead(words.data(), static_cast<size_t>(n) / sizeof(uint64_t), event_count_);
    snapshot.per_cpu.push_back(read.ok() ? std::optional<GroupRead>(*read) : std::nullopt);
  }
  return snapshot;
}

}  // namespace neighborly::agent
