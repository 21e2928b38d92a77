// The kubelet's pod cgroups: where they are, which pod each belongs to, and
// what they say about the pod (CPU time, memory per NUMA node, PSI, cpuset,
// thread ids), for cgroup v1, v2 and hybrid hosts with the systemd or cgroupfs
// driver and containerd, CRI-O or Docker container scopes.
//
//   PodCgroups cgroups(fs, *mounts);
//   absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
//   absl::StatusOr<PodSample> sample = cgroups.Sample(pods->front());  // NotFound: pod gone
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_CGROUPS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_CGROUPS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cpu_list.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"
#include "node-agent/src/pods/cgroup_mounts.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

enum class CgroupDriver { kSystemd, kCgroupfs };

struct ContainerCgroup {
  std::string id;       // runtime container id
  std::string runtime;  // "containerd", "cri-o", "docker", "pouch", "" (cgroupfs: unknown)
  std::string relpath;  // relative to the hierarchy root
};

struct PodCgroup {
  std::string uid;  // with dashes
  telemetry::v1::QosClass qos = telemetry::v1::QOS_CLASS_UNSPECIFIED;
  CgroupDriver driver = CgroupDriver::kSystemd;
  std::string
      relpath;  // e.g. "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice"
  bool on_unified = false;  // found on the cgroup2 hierarchy (else on the v1 ones)
  std::vector<ContainerCgroup> containers;
};

// One pod's cgroup readings at one instant. Cumulative counters are raw; the
// window code turns them into rates.
struct PodSample {
  std::optional<uint64_t> cpu_usage_ns;
  std::map<uint32_t, uint64_t> memory_bytes_by_numa;
  std::optional<double> psi_cpu_some_avg10;
  std::optional<double> psi_memory_some_avg10;
  std::optional<double> psi_memory_full_avg10;
  std::optional<CpuSet> cpuset;                    // effective CPUs of the pod
  std::optional<int64_t> cpu_request_millicores;   // from cpu.shares / cpu.weight
  // Issue 26: usage minus inactive file pages (the kubelet's working set) and
  // the memory limit (absent: unlimited).
  std::optional<uint64_t> memory_working_set_bytes;
  std::optional<uint64_t> memory_limit_bytes;
  std::map<std::string, std::string> unavailable;  // metric -> reason
};

// Name parsers (exposed for tests).
struct PodDirName {
  std::string uid;
  telemetry::v1::QosClass qos = telemetry::v1::QOS_CLASS_UNSPECIFIED;  // systemd names carry it
};
std::optional<PodDirName> ParsePodDirName(std::string_view name);
std::optional<ContainerCgroup> ParseContainerDirName(std::string_view name);

// Text parsers.
absl::StatusOr<uint64_t> ParseCpuStatUsageUsec(std::string_view cpu_stat);
// v2: "anon N0=<bytes> ..." lines; returns anon+file bytes per node.
absl::StatusOr<std::map<uint32_t, uint64_t>> ParseNumaStatV2(std::string_view text);
// v1: "hierarchical_total=<pages> N0=<pages>" (else "total=") in pages times page_size.
absl::StatusOr<std::map<uint32_t, uint64_t>> ParseNumaStatV1(std::string_view text,
                                                             uint64_t page_size);
struct Pressure {
  double some_avg10 = 0;
  std::optional<double> full_avg10;
};
absl::StatusOr<Pressure> ParsePressure(std::string_view text);
// memory.stat: the value of `key` ("inactive_file", "total_inactive_file").
absl::StatusOr<uint64_t> ParseMemoryStatField(std::string_view text, std::string_view key);
// Thread ids, one per line (cgroup.threads, tasks).
absl::StatusOr<std::vector<int>> ParseTids(std::string_view text);

class PodCgroups {
 public:
  PodCgroups(const Filesystem& fs, CgroupMounts mounts, uint64_t page_size = 4096);

  const CgroupMounts& mounts() const { return mounts_; }

  // Every pod cgroup the kubelet created, sorted by uid. Fails only when no
  // hierarchy has a kubepods directory (no kubelet on this host).
  absl::StatusOr<std::vector<PodCgroup>> Discover() const;

  // Reads one pod. NotFound when the pod's cgroup vanished; other metrics that
  // cannot be read are listed in PodSample::unavailable. With `counters_only`
  // just the cumulative counters are read (the start of a window needs no
  // gauges), which halves the agent's file reads.
  absl::StatusOr<PodSample> Sample(const PodCgroup& pod, bool counters_only = false) const;

  // Every thread of the pod (all its containers, the sandbox included).
  absl::StatusOr<std::vector<int>> Threads(const PodCgroup& pod) const;
  // The processes of the pod's containers (cgroup.procs of the container
  // leaves; issue 26 reads their oom_score_adj).
  absl::StatusOr<std::vector<int>> Processes(const PodCgroup& pod) const;

  // The directory perf_event_open should use for the pod's cgroup, or an
  // error saying why there is none (v1 without a perf_event hierarchy).
  absl::StatusOr<std::string> PerfEventDir(const PodCgroup& pod) const;

  // The directory of the pod in the hierarchy that holds `controller` ("" for
  // the walked hierarchy); empty when that controller is not mounted.
  std::string PodDir(const PodCgroup& pod, std::string_view controller) const;

 private:
  std::string WalkRoot(bool unified) const;

  const Filesystem& fs_;
  CgroupMounts mounts_;
  uint64_t page_size_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_CGROUPS_H_
