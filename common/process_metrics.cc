#include "common/process_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/prometheus_text.h"
#include "common/strings.h"

namespace neighborly {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool ParseProcStat(std::string_view stat, double ticks_per_second, uint64_t page_size_bytes,
                   double boot_time_seconds, ProcessStats& out) {
  // "PID (comm) S ppid ..." where comm may hold spaces and parentheses: the
  // fields start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return false;
  std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    rest = Trim(rest);
    if (rest.empty()) break;
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  // 1-based field numbers of proc(5): utime 14, stime 15, num_threads 20,
  // starttime 22, vsize 23, rss 24.
  auto field = [&](size_t number) -> std::optional<uint64_t> {
    if (number < 3 || number - 3 >= fields.size()) return std::nullopt;
    return ParseInt<uint64_t>(fields[number - 3]);
  };
  const std::optional<uint64_t> utime = field(14), stime = field(15), threads = field(20),
                                starttime = field(22), vsize = field(23), rss = field(24);
  if (!utime || !stime || !starttime || !vsize || !rss) return false;
  out.cpu_seconds = static_cast<double>(*utime + *stime) / ticks_per_second;
  out.start_time_seconds = boot_time_seconds + static_cast<double>(*starttime) / ticks_per_second;
  out.virtual_memory_bytes = *vsize;
  out.resident_memory_bytes = *rss * page_size_bytes;
  out.threads = threads;
  return true;
}

std::optional<double> ParseBootTime(std::string_view proc_stat) {
  while (!proc_stat.empty()) {
    const size_t end = proc_stat.find('\n');
    std::string_view line = proc_stat.substr(0, end);
    if (line.starts_with("btime ")) {
      std::optional<uint64_t> v = ParseInt<uint64_t>(Trim(line.substr(6)));
      if (v) return static_cast<double>(*v);
      return std::nullopt;
    }
    if (end == std::string_view::npos) break;
    proc_stat.remove_prefix(end + 1);
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseMaxOpenFiles(std::string_view limits) {
  const size_t at = limits.find("Max open files");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = Trim(limits.substr(at + 14));
  const size_t end = rest.find_first_of(" \t\n");
  const std::string_view soft = rest.substr(0, end);
  if (soft == "unlimited") return std::nullopt;
  return ParseInt<uint64_t>(soft);
}

std::optional<uint64_t> ParseStatusBytes(std::string_view status, std::string_view key) {
  for (size_t at = 0; at < status.size();) {
    size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    const std::string_view line = status.substr(at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ':') continue;
    std::string_view value = Trim(line.substr(key.size() + 1));
    if (value.ends_with(" kB")) value.remove_suffix(3);
    const std::optional<uint64_t> kib = ParseInt<uint64_t>(Trim(value));
    if (!kib) return std::nullopt;
    return *kib * 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> ReadStatusBytes(int pid, std::string_view key) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  return ParseStatusBytes(ReadFile(path.c_str()), key);
}

ProcessStats ReadSelfProcess() {
  ProcessStats stats;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  const std::optional<double> boot = ParseBootTime(ReadFile("/proc/stat"));
  if (ticks > 0 && page > 0 && boot) {
    ParseProcStat(ReadFile("/proc/self/stat"), static_cast<double>(ticks),
                  static_cast<uint64_t>(page), *boot, stats);
  }
  stats.max_fds = ParseMaxOpenFiles(ReadFile("/proc/self/limits"));
  if (DIR* dir = opendir("/proc/self/fd")) {
    uint64_t n = 0;
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(dir);
    stats.open_fds = n > 0 ? n - 1 : 0;  // not counting the directory being listed
  }
  return stats;
}

void AppendProcessMetrics(const ProcessStats& s, PrometheusWriter& page) {
  if (s.cpu_seconds) {
    page.Counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                 {}, *s.cpu_seconds);
  }
  if (s.start_time_seconds) {
    page.Gauge("process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.", {}, *s.start_time_seconds);
  }
  if (s.virtual_memory_bytes) {
    page.Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", {},
               static_cast<double>(*s.virtual_memory_bytes));
  }
  if (s.resident_memory_bytes) {
    page.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {},
               static_cast<double>(*s.resident_memory_bytes));
  }
  if (s.open_fds) {
    page.Gauge("process_open_fds", "Number of open file descriptors.", {},
               static_cast<double>(*s.open_fds));
  }
  if (s.max_fds) {
    page.Gauge("process_max_fds", "Maximum number of open file descriptors.", {},
               static_cast<double>(*s.max_fds));
  }
  if (s.threads) {
    page.Gauge("process_threads", "Number of OS threads in the process.", {},
               static_cast<double>(*s.threads));
  }
}

void AppendBuildInfo(std::string_view prefix, std::string_view version, PrometheusWriter& page) {
  page.Gauge(absl::StrCat(Av(prefix), "_build_info"),
             "A metric with a constant 1 labelled by the version of the binary.",
             {{"version", std::string(version)}}, 1);
}

}  // namespace neighborly
