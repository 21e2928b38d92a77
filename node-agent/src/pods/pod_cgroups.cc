#include "node-agent/src/pods/pod_cgroups.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {
namespace {

using telemetry::v1::QosClass;

constexpr size_t kUidLength = 36;
constexpr size_t kMaxThreads = 1 << 20;

bool IsHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// A pod UID as it appears in a cgroup name: 36 characters of lowercase hex
// and `separator` ('-' for cgroupfs, '_' for systemd).
std::optional<std::string> ParseUid(std::string_view s, char separator) {
  if (s.size() != kUidLength) return std::nullopt;
  std::string uid(s);
  for (char& c : uid) {
    if (c == separator) {
      c = '-';
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return std::nullopt;
    }
  }
  return uid;
}

std::string Dir(std::string_view root, std::string_view relpath) {
  return root.empty() ? std::string() : JoinPath(root, relpath);
}

std::string Parent(std::string_view relpath) {
  const size_t slash = relpath.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(relpath.substr(0, slash));
}

std::string Reason(const absl::Status& status) {
  if (ErrnoOf(status) == EOPNOTSUPP) {
    return absl::StrCat("PSI disabled in the kernel (EOPNOTSUPP): ", Av(Sv(status.message())));
  }
  return std::string(status.message());
}

}  // namespace

std::optional<PodDirName> ParsePodDirName(std::string_view name) {
  if (name.ends_with(".slice")) {
    name.remove_suffix(6);
    struct Prefix {
      std::string_view text;
      QosClass qos;
    };
    constexpr Prefix kPrefixes[] = {
        {"kubepods-burstable-pod", telemetry::v1::QOS_CLASS_BURSTABLE},
        {"kubepods-besteffort-pod", telemetry::v1::QOS_CLASS_BEST_EFFORT},
        {"kubepods-pod", telemetry::v1::QOS_CLASS_GUARANTEED},
    };
    for (const Prefix& prefix : kPrefixes) {
      if (!name.starts_with(prefix.text)) continue;
      std::optional<std::string> uid = ParseUid(name.substr(prefix.text.size()), '_');
      if (!uid) return std::nullopt;
      return PodDirName{std::move(*uid), prefix.qos};
    }
    return std::nullopt;
  }
  if (name.starts_with("pod")) {
    std::optional<std::string> uid = ParseUid(name.substr(3), '-');
    if (!uid) return std::nullopt;
    return PodDirName{std::move(*uid), telemetry::v1::QOS_CLASS_UNSPECIFIED};
  }
  return std::nullopt;
}

std::optional<ContainerCgroup> ParseContainerDirName(std::string_view name) {
  if (name.ends_with(".scope")) {
    const std::string_view stem = name.substr(0, name.size() - 6);
    struct Prefix {
      std::string_view text;
      std::string_view runtime;
    };
    constexpr Prefix kPrefixes[] = {{"cri-containerd-", "containerd"},
                                    {"crio-", "cri-o"},
                                    {"docker-", "docker"},
                                    {"pouch-", "pouch"}};
    for (const Prefix& prefix : kPrefixes) {
      if (!stem.starts_with(prefix.text)) continue;
      const std::string_view id = stem.substr(prefix.text.size());
      // crio-conmon-<id>.scope is CRI-O's monitor process, not a container.
      if (!IsHex(id)) return std::nullopt;
      return ContainerCgroup{std::string(id), std::string(prefix.runtime), std::string(name)};
    }
    return std::nullopt;
  }
  if (name.starts_with("crio-") && IsHex(name.substr(5))) {
    return ContainerCgroup{std::string(name.substr(5)), "cri-o", std::string(name)};
  }
  if (name.size() == 64 && IsHex(name)) {
    return ContainerCgroup{std::string(name), "", std::string(name)};
  }
  return std::nullopt;
}

absl::StatusOr<uint64_t> ParseCpuStatUsageUsec(std::string_view cpu_stat) {
  for (std::string_view line : SplitLines(cpu_stat)) {
    std::vector<std::string_view> f = SplitFields(line);
    if (f.size() == 2 && f[0] == "usage_usec") {
      std::optional<uint64_t> value = ParseInt<uint64_t>(f[1]);
      if (!value) {
        return absl::InvalidArgumentError(
            absl::StrCat("cpu.stat: usage_usec \"", Av(f[1]), "\" is not a number"));
      }
      return *value;
    }
  }
  return absl::InvalidArgumentError("cpu.stat: no usage_usec line");
}

namespace {

// "N0=123" -> (0, 123).
absl::Status ParseNodeValues(std::string_view file, std::string_view line,
                             const std::vector<std::string_view>& fields, uint64_t scale,
                             std::map<uint32_t, uint64_t>& out) {
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string_view field = fields[i];
    const size_t eq = field.find('=');
    std::optional<uint32_t> node;
    std::optional<uint64_t> value;
    if (field.starts_with("N") && eq != std::string_view::npos) {
      node = ParseInt<uint32_t>(field.substr(1, eq - 1));
      value = ParseInt<uint64_t>(field.substr(eq + 1));
    }
    if (!node || !value || *value > UINT64_MAX / scale) {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(file), ": bad field \"", Av(field), "\" in \"", Av(line), "\""));
    }
    out[*node] += *value * scale;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<uint32_t, uint64_t>> ParseNumaStatV2(std::string_view text) {
  std::map<uint32_t, uint64_t> bytes;
  bool found = false;
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> f = SplitFields(line);
    if (f.empty() || (f[0] != "anon" && f[0] != "file")) continue;
    found = true;
    if (absl::Status s = ParseNodeValues("memory.numa_stat", line, f, 1, bytes); !s.ok()) return s;
  }
  if (!found) return absl::InvalidArgumentError("memory.numa_stat: no anon or file line");
  return bytes;
}

absl::StatusOr<std::map<uint32_t, uint64_t>> ParseNumaStatV1(std::string_view text,
                                                             uint64_t page_size) {
  std::string_view chosen;
  for (std::string_view line : SplitLines(text)) {
    if (line.starts_with("hierarchical_total=")) {
      chosen = line;
      break;
    }
    if (line.starts_with("total=")) chosen = line;
  }
  if (chosen.empty()) return absl::InvalidArgumentError("memory.numa_stat: no total line");
  std::map<uint32_t, uint64_t> bytes;
  if (absl::Status s =
          ParseNodeValues("memory.numa_stat", chosen, SplitFields(chosen), page_size, bytes);
      !s.ok()) {
    return s;
  }
  return bytes;
}

absl::StatusOr<Pressure> ParsePressure(std::string_view text) {
  Pressure pressure;
  bool some = false;
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> f = SplitFields(line);
    if (f.size() < 2 || (f[0] != "some" && f[0] != "full")) continue;
    if (!f[1].starts_with("avg10=")) {
      return absl::InvalidArgumentError(absl::StrCat("pressure: bad line \"", Av(line), "\""));
    }
    std::optional<double> value = ParseDouble(f[1].substr(6));
    if (!value || *value < 0 || *value > 100) {
      return absl::InvalidArgumentError(absl::StrCat("pressure: bad avg10 in \"", Av(line), "\""));
    }
    if (f[0] == "some") {
      pressure.some_avg10 = *value;
      some = true;
    } else {
      pressure.full_avg10 = *value;
    }
  }
  if (!some) return absl::InvalidArgumentError("pressure: no \"some\" line");
  return pressure;
}

absl::StatusOr<std::vector<int>> ParseTids(std::string_view text) {
  std::vector<int> tids;
  for (std::string_view line : SplitLines(text)) {
    std::optional<int> tid = ParseInt<int>(Trim(line));
    if (!tid || *tid <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad thread id \"", Av(Trim(line)), "\""));
    }
    tids.push_back(*tid);
  }
  return tids;
}

PodCgroups::PodCgroups(const Filesystem& fs, CgroupMounts mounts, uint64_t page_size)
    : fs_(fs), mounts_(std::move(mounts)), page_size_(page_size) {}

std::string PodCgroups::WalkRoot(bool unified) const {
  if (unified) return mounts_.unified;
  for (std::string_view controller : {"cpuacct", "cpu", "memory", "cpuset"}) {
    std::string dir = mounts_.V1Dir(controller);
    if (!dir.empty()) return dir;
  }
  return {};
}

std::string PodCgroups::PodDir(const PodCgroup& pod, std::string_view controller) const {
  if (pod.on_unified || controller.empty()) return Dir(WalkRoot(pod.on_unified), pod.relpath);
  return Dir(mounts_.V1Dir(controller), pod.relpath);
}

absl::StatusOr<std::vector<PodCgroup>> PodCgroups::Discover() const {
  std::vector<bool> order;
  if (mounts_.mode != CgroupMode::kV2) order.push_back(false);
  if (!mounts_.unified.empty()) order.push_back(true);
  std::vector<std::string> looked;
  for (bool unified : order) {
    const std::string root = WalkRoot(unified);
    if (root.empty()) continue;
    for (const auto& [top, driver] :
         {std::pair<std::string_view, CgroupDriver>{"kubepods.slice", CgroupDriver::kSystemd},
          {"kubepods", CgroupDriver::kCgroupfs}}) {
      const std::string top_dir = JoinPath(root, top);
      looked.push_back(top_dir);
      if (!fs_.IsDirectory(top_dir)) continue;
      std::vector<PodCgroup> pods;
      // Pod directories sit in kubepods (Guaranteed) and in the QoS children.
      std::vector<std::pair<std::string, QosClass>> parents = {
          {std::string(top), telemetry::v1::QOS_CLASS_GUARANTEED}};
      if (driver == CgroupDriver::kSystemd) {
        parents.push_back(
            {"kubepods.slice/kubepods-burstable.slice", telemetry::v1::QOS_CLASS_BURSTABLE});
        parents.push_back(
            {"kubepods.slice/kubepods-besteffort.slice", telemetry::v1::QOS_CLASS_BEST_EFFORT});
      } else {
        parents.push_back({"kubepods/burstable", telemetry::v1::QOS_CLASS_BURSTABLE});
        parents.push_back({"kubepods/besteffort", telemetry::v1::QOS_CLASS_BEST_EFFORT});
      }
      for (const auto& [parent, qos] : parents) {
        absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(JoinPath(root, parent));
        if (!entries.ok()) continue;
        for (const DirEntry& entry : *entries) {
          if (!entry.is_dir) continue;
          std::optional<PodDirName> name = ParsePodDirName(entry.name);
          if (!name) continue;
          PodCgroup pod;
          pod.uid = std::move(name->uid);
          pod.qos = name->qos != telemetry::v1::QOS_CLASS_UNSPECIFIED ? name->qos : qos;
          pod.driver = driver;
          pod.relpath = absl::StrCat(parent, "/", entry.name);
          pod.on_unified = unified;
          absl::StatusOr<std::vector<DirEntry>> children = fs_.ListDir(JoinPath(root, pod.relpath));
          if (!children.ok()) continue;  // vanished between the two reads
          for (const DirEntry& child : *children) {
            if (!child.is_dir) continue;
            std::optional<ContainerCgroup> container = ParseContainerDirName(child.name);
            if (!container) continue;
            container->relpath = absl::StrCat(pod.relpath, "/", child.name);
            pod.containers.push_back(std::move(*container));
          }
          pods.push_back(std::move(pod));
        }
      }
      std::sort(pods.begin(), pods.end(),
                [](const PodCgroup& a, const PodCgroup& b) { return a.uid < b.uid; });
      return pods;
    }
  }
  std::string where;
  for (const std::string& dir : looked) absl::StrAppend(&where, where.empty() ? "" : ", ", dir);
  return absl::NotFoundError(absl::StrCat("no kubelet pod cgroups (looked for ", where, ")"));
}

absl::StatusOr<PodSample> PodCgroups::Sample(const PodCgroup& pod, bool counters_only) const {
  PodSample sample;
  const std::string walked = PodDir(pod, "");
  auto vanished = [&]() { return !fs_.IsDirectory(walked); };
  auto gone = [&]() {
    return absl::NotFoundError(absl::StrCat("pod ", pod.uid, ": cgroup ", walked, " vanished"));
  };

  // CPU time (cumulative).
  absl::StatusOr<uint64_t> usage_ns;
  if (pod.on_unified) {
    absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(walked, "cpu.stat"));
    if (text.ok()) {
      absl::StatusOr<uint64_t> usec = ParseCpuStatUsageUsec(*text);
      usage_ns = usec.ok() ? absl::StatusOr<uint64_t>(*usec * 1000) : usec.status();
    } else {
      usage_ns = text.status();
    }
  } else {
    const std::string dir = PodDir(pod, "cpuacct");
    if (dir.empty()) {
      usage_ns = absl::NotFoundError("cgroup v1 cpuacct controller not mounted");
    } else {
      absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(dir, "cpuacct.usage"));
      if (text.ok()) {
        std::optional<uint64_t> ns = ParseInt<uint64_t>(Trim(*text));
        usage_ns = ns ? absl::StatusOr<uint64_t>(*ns)
                      : absl::InvalidArgumentError(absl::StrCat(
                            "cpuacct.usage: \"", Av(Trim(*text)), "\" is not a number"));
      } else {
        usage_ns = text.status();
      }
    }
  }
  if (usage_ns.ok()) {
    sample.cpu_usage_ns = *usage_ns;
  } else {
    if (vanished()) return gone();
    sample.unavailable["cpu_usage_millicores"] = Reason(usage_ns.status());
  }
  if (counters_only) return sample;

  // Memory per NUMA node.
  absl::StatusOr<std::map<uint32_t, uint64_t>> numa;
  const std::string memory_dir = PodDir(pod, "memory");
  if (memory_dir.empty()) {
    numa = absl::NotFoundError("cgroup v1 memory controller not mounted");
  } else {
    absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(memory_dir, "memory.numa_stat"));
    if (!text.ok()) {
      numa = text.status();
    } else if (pod.on_unified) {
      numa = ParseNumaStatV2(*text);
    } else {
      numa = ParseNumaStatV1(*text, page_size_);
    }
  }
  if (numa.ok()) {
    sample.memory_bytes_by_numa = std::move(*numa);
  } else {
    if (vanished()) return gone();
    sample.unavailable["memory_bytes_by_numa"] = Reason(numa.status());
  }

  // Working set and limit (issue 26), as the kubelet's eviction manager reads them.
  if (!memory_dir.empty()) {
    const bool v2 = pod.on_unified;
    absl::StatusOr<std::string> usage =
        fs_.ReadFile(JoinPath(memory_dir, v2 ? "memory.current" : "memory.usage_in_bytes"));
    absl::StatusOr<std::string> stat = fs_.ReadFile(JoinPath(memory_dir, "memory.stat"));
    const std::optional<uint64_t> parsed =
        usage.ok() ? ParseInt<uint64_t>(Trim(*usage)) : std::nullopt;
    const bool have_usage = parsed.has_value();
    const uint64_t used = parsed.value_or(0);
    absl::StatusOr<uint64_t> inactive =
        stat.ok() ? ParseMemoryStatField(*stat, v2 ? "inactive_file" : "total_inactive_file")
                  : absl::StatusOr<uint64_t>(stat.status());
    if (have_usage && inactive.ok()) {
      sample.memory_working_set_bytes = used > *inactive ? used - *inactive : 0;
    } else {
      sample.unavailable["memory_working_set_bytes"] =
          !usage.ok() ? Reason(usage.status())
          : !have_usage ? absl::StrCat("memory usage \"", Av(Trim(*usage)), "\" is not a number")
                      : Reason(inactive.status());
    }
    absl::StatusOr<std::string> limit =
        fs_.ReadFile(JoinPath(memory_dir, v2 ? "memory.max" : "memory.limit_in_bytes"));
    if (limit.ok()) {
      // "max" (v2) or PAGE_COUNTER_MAX pages (v1, about 2^63): no limit.
      std::optional<uint64_t> bytes = ParseInt<uint64_t>(Trim(*limit));
      if (bytes && *bytes < (uint64_t{1} << 62)) sample.memory_limit_bytes = *bytes;
    }
  } else {
    sample.unavailable["memory_working_set_bytes"] = "cgroup v1 memory controller not mounted";
  }

  // PSI lives on the cgroup2 hierarchy only (hybrid hosts mirror pods there).
  const std::string psi_dir = Dir(mounts_.unified, pod.relpath);
  if (psi_dir.empty() || !fs_.IsDirectory(psi_dir)) {
    const std::string reason = "no cgroup v2 directory for the pod: PSI needs cgroup v2";
    sample.unavailable["psi_cpu_some_avg10"] = reason;
    sample.unavailable["psi_memory_some_avg10"] = reason;
    sample.unavailable["psi_memory_full_avg10"] = reason;
  } else {
    absl::StatusOr<std::string> cpu = fs_.ReadFile(JoinPath(psi_dir, "cpu.pressure"));
    absl::StatusOr<Pressure> cpu_pressure =
        cpu.ok() ? ParsePressure(*cpu) : absl::StatusOr<Pressure>(cpu.status());
    if (cpu_pressure.ok()) {
      sample.psi_cpu_some_avg10 = cpu_pressure->some_avg10;
    } else {
      sample.unavailable["psi_cpu_some_avg10"] = Reason(cpu_pressure.status());
    }
    absl::StatusOr<std::string> memory = fs_.ReadFile(JoinPath(psi_dir, "memory.pressure"));
    absl::StatusOr<Pressure> memory_pressure =
        memory.ok() ? ParsePressure(*memory) : absl::StatusOr<Pressure>(memory.status());
    if (memory_pressure.ok()) {
      sample.psi_memory_some_avg10 = memory_pressure->some_avg10;
      if (memory_pressure->full_avg10) {
        sample.psi_memory_full_avg10 = *memory_pressure->full_avg10;
      } else {
        sample.unavailable["psi_memory_full_avg10"] = "memory.pressure has no full line";
      }
    } else {
      sample.unavailable["psi_memory_some_avg10"] = Reason(memory_pressure.status());
      sample.unavailable["psi_memory_full_avg10"] = Reason(memory_pressure.status());
    }
  }

  // Effective cpuset: the nearest ancestor that has one.
  const std::string cpuset_root = pod.on_unified ? mounts_.unified : mounts_.V1Dir("cpuset");
  if (!cpuset_root.empty()) {
    const char* file = pod.on_unified ? "cpuset.cpus.effective" : "cpuset.effective_cpus";
    for (std::string rel = pod.relpath;; rel = Parent(rel)) {
      absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(JoinPath(cpuset_root, rel), file));
      if (!text.ok() && !pod.on_unified) {
        text = fs_.ReadFile(JoinPath(JoinPath(cpuset_root, rel), "cpuset.cpus"));
      }
      if (!text.ok()) {
        if (rel.empty()) break;
        continue;
      }
      absl::StatusOr<CpuSet> cpus = ParseCpuList(*text);
      if (cpus.ok() && !cpus->empty()) sample.cpuset = std::move(*cpus);
      break;
    }
  }

  // CPU request from the weight the kubelet derived from it.
  if (pod.on_unified) {
    if (absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(walked, "cpu.weight"));
        text.ok()) {
      if (std::optional<uint64_t> weight = ParseInt<uint64_t>(Trim(*text));
          weight && *weight >= 1 && *weight <= 10000) {
        // Inverse of the kubelet's weight = 1 + (shares - 2) * 9999 / 262142.
        const uint64_t shares = (*weight - 1) * 262142 / 9999 + 2;
        sample.cpu_request_millicores =
            shares <= 2 ? 0 : static_cast<int64_t>(shares * 1000 / 1024);
      }
    }
  } else if (std::string cpu_dir = PodDir(pod, "cpu"); !cpu_dir.empty()) {
    if (absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(cpu_dir, "cpu.shares"));
        text.ok()) {
      if (std::optional<uint64_t> shares = ParseInt<uint64_t>(Trim(*text));
          shares && *shares <= 262144) {
        sample.cpu_request_millicores =
            *shares <= 2 ? 0 : static_cast<int64_t>(*shares * 1000 / 1024);
      }
    }
  }
  if (!sample.cpu_request_millicores) {
    sample.unavailable["cpu_request_millicores"] = "no cpu.weight or cpu.shares for the pod";
  }
  return sample;
}

absl::StatusOr<uint64_t> ParseMemoryStatField(std::string_view text, std::string_view key) {
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> f = SplitFields(line);
    if (f.size() != 2 || f[0] != key) continue;
    std::optional<uint64_t> v = ParseInt<uint64_t>(f[1]);
    if (!v) {
      return absl::InvalidArgumentError(
          absl::StrCat("memory.stat: ", Av(key), " \"", Av(f[1]), "\" is not a number"));
    }
    return *v;
  }
  return absl::NotFoundError(absl::StrCat("memory.stat has no ", Av(key), " line"));
}

absl::StatusOr<std::vector<int>> PodCgroups::Processes(const PodCgroup& pod) const {
  const std::string root = WalkRoot(pod.on_unified);
  std::vector<int> pids;
  bool read_any = false;
  for (const ContainerCgroup& container : pod.containers) {
    absl::StatusOr<std::string> text =
        fs_.ReadFile(JoinPath(JoinPath(root, container.relpath), "cgroup.procs"));
    if (!text.ok()) continue;  // a container that just exited
    read_any = true;
    absl::StatusOr<std::vector<int>> some = ParseTids(*text);
    if (!some.ok()) return some.status();
    pids.insert(pids.end(), some->begin(), some->end());
    if (pids.size() > kMaxThreads) {
      return absl::OutOfRangeError(
          absl::StrCat("pod ", pod.uid, ": more than ", kMaxThreads, " processes"));
    }
  }
  if (!read_any) {
    return absl::NotFoundError(
        absl::StrCat("pod ", pod.uid, ": no cgroup.procs in its container cgroups"));
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

absl::StatusOr<std::vector<int>> PodCgroups::Threads(const PodCgroup& pod) const {
  // The pod directory and its container leaves (found by Discover); walking
  // every directory instead would cost a getdents per container per window.
  const std::string file = pod.on_unified ? "cgroup.threads" : "tasks";
  const std::string root = WalkRoot(pod.on_unified);
  std::vector<std::string> dirs = {PodDir(pod, "")};
  for (const ContainerCgroup& container : pod.containers) {
    dirs.push_back(JoinPath(root, container.relpath));
  }
  std::vector<int> tids;
  bool read_any = false;
  for (const std::string& dir : dirs) {
    absl::StatusOr<std::string> text = fs_.ReadFile(JoinPath(dir, file));
    if (!text.ok()) continue;  // a container that just exited
    read_any = true;
    absl::StatusOr<std::vector<int>> some = ParseTids(*text);
    if (!some.ok()) return some.status();
    tids.insert(tids.end(), some->begin(), some->end());
    if (tids.size() > kMaxThreads) {
      return absl::OutOfRangeError(
          absl::StrCat("pod ", pod.uid, ": more than ", kMaxThreads, " threads"));
    }
  }
  if (!read_any) {
    return absl::NotFoundError(
        absl::StrCat("pod ", pod.uid, ": no ", file, " under ", PodDir(pod, "")));
  }
  std::sort(tids.begin(), tids.end());
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  return tids;
}

absl::StatusOr<std::string> PodCgroups::PerfEventDir(const PodCgroup& pod) const {
  if (pod.on_unified) return PodDir(pod, "");
  if (std::string dir = PodDir(pod, "perf_event"); !dir.empty()) return dir;
  // Without a v1 perf_event hierarchy the controller is bound to cgroup2.
  if (const std::string unified = Dir(mounts_.unified, pod.relpath);
      !unified.empty() && fs_.IsDirectory(unified)) {
    return unified;
  }
  return absl::NotFoundError(
      "cgroup v1 host without a perf_event hierarchy or a cgroup2 mirror of the pod");
}

}  // namespace neighborly::agent
