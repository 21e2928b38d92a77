// What the kubelet decided about CPUs and memory on this node, from its
// checkpoint files and config under /var/lib/kubelet (internal formats, so
// every parser tolerates unknown keys and reports odd content as an error
// that becomes "capability unavailable" with the reason).
//
//   absl::StatusOr<CpuManagerState> cpu = ParseCpuManagerState(text);
//   cpu->exclusive["<pod uid>"]  // union of the pod's containers' exclusive CPUs
#ifndef NEIGHBORLY_NODE_AGENT_SRC_KUBELET_KUBELET_STATE_H_
#define NEIGHBORLY_NODE_AGENT_SRC_KUBELET_KUBELET_STATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cpu_list.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

struct CpuManagerState {
  std::string policy;  // "none" | "static" (lower-cased)
  CpuSet default_cpu_set;
  // pod uid -> container -> exclusive CPUs (format v2 and later).
  std::map<std::string, std::map<std::string, CpuSet>> entries;
  // Format v1 keyed entries by container id, which cannot be tied to a pod.
  bool legacy_container_keys = false;

  // The union of the pod's exclusive CPUs (empty: shared pool).
  CpuSet ExclusiveCpus(std::string_view pod_uid) const;
};

struct MemoryBlock {
  std::vector<uint32_t> numa_affinity;
  std::string type;  // "memory", "hugepages-1Gi", ...
  uint64_t size_bytes = 0;
};

struct MemoryManagerState {
  std::string policy;  // "none" | "static" (lower-cased)
  // NUMA node -> resource -> {total, free} bytes ("memory", "hugepages-2Mi").
  struct Resource {
    uint64_t total_bytes = 0;
    uint64_t free_bytes = 0;
  };
  std::map<uint32_t, std::map<std::string, Resource>> machine_state;
  // pod uid -> container -> blocks.
  std::map<std::string, std::map<std::string, std::vector<MemoryBlock>>> entries;
};

struct KubeletConfig {
  std::string cpu_manager_policy;       // empty when unset in the file (kubelet default "none")
  std::string topology_manager_policy;  // kubelet default "none"
  std::string topology_manager_scope;   // kubelet default "container"
  std::string reserved_system_cpus;     // kernel list format
  std::string cgroup_driver;            // "systemd" | "cgroupfs"
  // cpuManagerPolicyOptions / topologyManagerPolicyOptions, e.g.
  // {"full-pcpus-only": "true"}; {"max-allowable-numa-nodes": "8"}.
  std::map<std::string, std::string> cpu_manager_policy_options;
  std::map<std::string, std::string> topology_manager_policy_options;
  std::string memory_manager_policy;  // lower-cased; kubelet default "none"
  // reservedMemory of type "memory", per NUMA node.
  std::map<uint32_t, uint64_t> reserved_memory_bytes;
  // evictionHard / evictionSoft (issue 26): signal -> "100Mi" | "10%". The
  // flags --eviction-hard / --eviction-soft ("memory.available<100Mi,...")
  // replace them.
  std::map<std::string, std::string> eviction_hard;
  std::map<std::string, std::string> eviction_soft;
};

// The running kubelet's command line (from /proc/PID/cmdline): flags override
// the config file (kubelet semantics; the last occurrence of a flag wins,
// --reserved-memory accumulates).
struct KubeletCommandLine {
  int pid = 0;
  std::string config_path;                   // --config, empty when absent
  std::map<std::string, std::string> flags;  // name without dashes -> value
  std::vector<std::string> reserved_memory;  // every --reserved-memory value
};

// `cmdline`: NUL-separated argv. Error when argv[0] is not a kubelet.
absl::StatusOr<KubeletCommandLine> ParseKubeletCmdline(std::string_view cmdline);
// Applies the resource-manager flags of `cmdline` to `config`; an unparsable
// flag value is an error naming the flag.
absl::Status ApplyKubeletFlags(const KubeletCommandLine& cmdline, KubeletConfig& config);
// "full-pcpus-only=true,align-by-socket=true" -> map (the kubelet's
// mapStringString flag format).
absl::StatusOr<std::map<std::string, std::string>> ParseOptionList(std::string_view flag,
                                                                   std::string_view text);
// "0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=2Gi" -> {0: 1Gi, 1: 2Gi} (memory only).
// "memory.available<100Mi,nodefs.available<10%" -> {signal: value}.
absl::StatusOr<std::map<std::string, std::string>> ParseEvictionFlag(std::string_view flag,
                                                                     std::string_view text);
absl::Status ParseReservedMemoryFlag(std::string_view text, std::map<uint32_t, uint64_t>& out);
// The kubelet process under /proc (argv[0] named "kubelet"), or NotFound.
absl::StatusOr<KubeletCommandLine> FindKubeletProcess(const Filesystem& fs);

absl::StatusOr<CpuManagerState> ParseCpuManagerState(std::string_view json);
absl::StatusOr<MemoryManagerState> ParseMemoryManagerState(std::string_view json);
// The kubelet's config file (KubeletConfiguration YAML), read through
// common/yaml_fields.h: unknown keys ignored, merge keys resolved, duplicate
// keys refused; errors name `source_name`, the line and the key path.
absl::StatusOr<KubeletConfig> ParseKubeletConfig(std::string_view text,
                                                 std::string_view source_name = "kubelet config");

// Everything at once, each part with its own status so one bad file does not
// hide the others.
struct KubeletState {
  absl::StatusOr<CpuManagerState> cpu_manager = absl::UnknownError("not read");
  absl::StatusOr<MemoryManagerState> memory_manager = absl::UnknownError("not read");
  // The config file with the kubelet's command-line flags applied.
  absl::StatusOr<KubeletConfig> config = absl::UnknownError("not read");
  // Where `config` came from: "config /var/lib/kubelet/config.yaml; flags of pid 812".
  std::string config_source;
};
KubeletState ReadKubeletState(const Filesystem& fs,
                              std::string_view kubelet_dir = "/var/lib/kubelet");

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_KUBELET_KUBELET_STATE_H_
