// The process_* metrics of the Prometheus client libraries' convention
// (https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics)
// and a `<program>_build_info` gauge, appended to a /metrics page. Both
// binaries add them; docs/performance.md's memory targets are read off
// process_resident_memory_bytes.
//
//   PrometheusWriter page;                        // the page so far
//   AppendProcessMetrics(ReadSelfProcess(), page);
//   AppendBuildInfo("neighborly_extender", NEIGHBORLY_VERSION, page);
//
// The parsers take text, so tests feed them /proc contents.
#ifndef NEIGHBORLY_COMMON_PROCESS_METRICS_H_
#define NEIGHBORLY_COMMON_PROCESS_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/prometheus_text.h"

namespace neighborly {

// What /proc says about one process; a field that could not be read is empty.
struct ProcessStats {
  std::optional<double> cpu_seconds;         // utime + stime
  std::optional<double> start_time_seconds;  // since the Unix epoch
  std::optional<uint64_t> virtual_memory_bytes;
  std::optional<uint64_t> resident_memory_bytes;
  std::optional<uint64_t> open_fds;
  std::optional<uint64_t> max_fds;
  std::optional<uint64_t> threads;
};

// Fills the fields /proc/PID/stat gives: utime, stime, starttime (in clock
// ticks since boot, so `boot_time_seconds` from /proc/stat's btime and the tick
// rate are needed), vsize, rss (pages), num_threads. False when malformed.
bool ParseProcStat(std::string_view stat, double ticks_per_second, uint64_t page_size_bytes,
                   double boot_time_seconds, ProcessStats& out);
// btime from /proc/stat.
std::optional<double> ParseBootTime(std::string_view proc_stat);
// The soft limit of "Max open files" in /proc/PID/limits.
std::optional<uint64_t> ParseMaxOpenFiles(std::string_view limits);

// One "<key>: N kB" field of /proc/PID/status ("VmRSS", "VmHWM"), in bytes.
std::optional<uint64_t> ParseStatusBytes(std::string_view status, std::string_view key);
// The same read from /proc/PID/status of a running process (the memory tests
// and benchmarks watch the extender they started); nullopt when unreadable.
std::optional<uint64_t> ReadStatusBytes(int pid, std::string_view key);

// This process, from /proc/self.
ProcessStats ReadSelfProcess();

// process_cpu_seconds_total, process_start_time_seconds,
// process_virtual_memory_bytes, process_resident_memory_bytes,
// process_open_fds, process_max_fds, process_threads; absent fields are left out.
void AppendProcessMetrics(const ProcessStats& stats, PrometheusWriter& page);

// `<prefix>_build_info{version="..."} 1`, e.g. neighborly_extender_build_info.
void AppendBuildInfo(std::string_view prefix, std::string_view version, PrometheusWriter& page);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_PROCESS_METRICS_H_
