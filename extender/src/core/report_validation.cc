#include "extender/src/core/report_validation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/cpu_list.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

// A field's path, put together only when a problem is reported: a valid
// report (the common case, thousands per second) formats no paths at all.
struct Path {
  Path(const char* s) : a(s) {}         // NOLINT: implicit on purpose
  Path(std::string_view s) : a(s) {}    // NOLINT
  Path(const std::string& s) : a(s) {}  // NOLINT
  Path(std::string_view x, std::string_view y, std::string_view z = {}, std::string_view w = {},
       std::string_view v = {})
      : a(x), b(y), c(z), d(w), e(v) {}
  std::string Str() const { return absl::StrCat(Av(a), Av(b), Av(c), Av(d), Av(e)); }
  std::string_view a, b, c, d, e;
};

absl::Status Bad(const Path& field, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("NodeReport.", field.Str(), ": ", Av(problem)));
}

#define NB_RETURN_IF_ERROR(expr) \
  do {                           \
    absl::Status _s = (expr);    \
    if (!_s.ok()) return _s;     \
  } while (false)

absl::Status CheckLength(const Path& field, std::string_view value, size_t max) {
  if (value.size() > max) {
    return Bad(field, absl::StrCat("too long (", value.size(), " bytes, at most ", max, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CpuSet> CheckCpus(const Path& field, std::string_view text) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList(text);
  if (!cpus.ok()) return Bad(field, Sv(cpus.status().message()));
  return cpus;
}

absl::Status CheckDouble(const Path& field, bool present, double value,
                         std::optional<double> max = std::nullopt) {
  if (!present) return absl::OkStatus();
  if (!std::isfinite(value)) return Bad(field, "not a finite number");
  if (value < 0) return Bad(field, absl::StrCat("negative (", value, ")"));
  if (max && value > *max) return Bad(field, absl::StrCat(value, " exceeds ", *max));
  return absl::OkStatus();
}

// A byte or byte-per-second quantity (found by fuzz/report_mutation_fuzzer: a
// bandwidth of 2^64-1 made the model's double sums overflow uint64 on the way back).
absl::Status CheckBytes(const Path& field, bool present, uint64_t value,
                        const ReportLimits& limits) {
  if (present && value > limits.max_bytes) {
    return Bad(field, absl::StrCat(value, " exceeds ", limits.max_bytes, " (no host has that)"));
  }
  return absl::OkStatus();
}

absl::Status CheckCapability(std::string_view field, const tv1::Capability& c,
                             const ReportLimits& limits) {
  return CheckLength(Path(field, ".reason"), c.reason(), limits.max_string_bytes);
}

absl::Status CheckOneOf(std::string_view field, const std::string& value,
                        std::initializer_list<std::string_view> allowed) {
  for (std::string_view a : allowed) {
    if (value == a) return absl::OkStatus();
  }
  std::string list;
  for (std::string_view a : allowed) {
    absl::StrAppend(&list, list.empty() ? "" : ", ", a.empty() ? "\"\"" : Av(a));
  }
  return Bad(field, absl::StrCat("\"", value.substr(0, 64), "\" is not one of ", list));
}

// A pod's labels or annotations (`name` is ".labels" or ".annotations"):
// entry count, non-empty keys, key and value lengths. Adds the bytes of keys
// and values to `*total_bytes` when given.
template <typename Map>
absl::Status CheckStringMap(const Map& map, const std::string& field, const char* name,
                            size_t max_entries, size_t max_key_bytes, size_t max_value_bytes,
                            size_t* total_bytes) {
  if (static_cast<size_t>(map.size()) > max_entries) {
    return Bad(Path(field, name), absl::StrCat(map.size(), " entries, at most ", max_entries));
  }
  for (const auto& [k, v] : map) {
    if (k.empty()) return Bad(Path(field, name), "empty key");
    NB_RETURN_IF_ERROR(CheckLength(
        Path(field, name, "[", std::string_view(k).substr(0, 64), "] key"), k, max_key_bytes));
    NB_RETURN_IF_ERROR(CheckLength(Path(field, name, "[", k, "]"), v, max_value_bytes));
    if (total_bytes != nullptr) *total_bytes += k.size() + v.size();
  }
  return absl::OkStatus();
}

absl::Status ValidatePod(const tv1::PodReport& pod, const std::string& field,
                         const std::set<uint32_t>& numa_ids, const CpuSet& all_cpus,
                         const ReportLimits& limits) {
  if (pod.uid().empty()) return Bad(Path(field, ".uid"), "empty");
  NB_RETURN_IF_ERROR(CheckLength(Path(field, ".uid"), pod.uid(), 128));
  if (pod.namespace_().empty()) return Bad(Path(field, ".namespace"), "empty");
  NB_RETURN_IF_ERROR(CheckLength(Path(field, ".namespace"), pod.namespace_(), 253));
  if (pod.name().empty()) return Bad(Path(field, ".name"), "empty");
  NB_RETURN_IF_ERROR(CheckLength(Path(field, ".name"), pod.name(), 253));
  if (!tv1::QosClass_IsValid(pod.qos_class())) {
    return Bad(Path(field, ".qos_class"), absl::StrCat("unknown value ", pod.qos_class()));
  }
  NB_RETURN_IF_ERROR(CheckStringMap(pod.labels(), field, ".labels", limits.max_labels,
                                    limits.max_key_bytes, limits.max_label_value_bytes, nullptr));
  size_t total = 0;
  NB_RETURN_IF_ERROR(CheckStringMap(pod.annotations(), field, ".annotations",
                                    limits.max_annotations, limits.max_key_bytes,
                                    limits.max_annotation_value_bytes, &total));
  if (total > limits.max_annotations_total_bytes) {
    return Bad(Path(field, ".annotations"), absl::StrCat("total size ", total, " bytes exceeds ",
                                                         limits.max_annotations_total_bytes));
  }
  if (pod.has_cpu_request_millicores() && pod.cpu_request_millicores() < 0) {
    return Bad(Path(field, ".cpu_request_millicores"), "negative");
  }
  if (pod.has_cpu_usage_millicores() && pod.cpu_usage_millicores() < 0) {
    return Bad(Path(field, ".cpu_usage_millicores"), "negative");
  }
  if (pod.cpu_request_millicores() > limits.max_millicores) {
    return Bad(Path(field, ".cpu_request_millicores"),
               absl::StrCat(pod.cpu_request_millicores(), " exceeds ", limits.max_millicores));
  }
  if (pod.cpu_usage_millicores() > limits.max_millicores) {
    return Bad(Path(field, ".cpu_usage_millicores"),
               absl::StrCat(pod.cpu_usage_millicores(), " exceeds ", limits.max_millicores));
  }
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".memory_request_bytes"),
                                pod.has_memory_request_bytes(), pod.memory_request_bytes(),
                                limits));
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".llc_occupancy_bytes"), pod.has_llc_occupancy_bytes(),
                                pod.llc_occupancy_bytes(), limits));
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".membw_total_bytes_per_second"),
                                pod.has_membw_total_bytes_per_second(),
                                pod.membw_total_bytes_per_second(), limits));
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".membw_local_bytes_per_second"),
                                pod.has_membw_local_bytes_per_second(),
                                pod.membw_local_bytes_per_second(), limits));
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".llc_misses_per_second"),
                                pod.has_llc_misses_per_second(), pod.llc_misses_per_second(),
                                limits));
  absl::StatusOr<CpuSet> cpus = CheckCpus(Path(field, ".exclusive_cpus"), pod.exclusive_cpus());
  if (!cpus.ok()) return cpus.status();
  for (uint32_t cpu : *cpus) {
    if (!std::binary_search(all_cpus.begin(), all_cpus.end(), cpu)) {
      return Bad(Path(field, ".exclusive_cpus"),
                 absl::StrCat("CPU ", cpu, " is not in any NUMA node of the topology"));
    }
  }
  NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".ipc"), pod.has_ipc(), pod.ipc()));
  NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".llc_misses_per_kilo_instructions"),
                                 pod.has_llc_misses_per_kilo_instructions(),
                                 pod.llc_misses_per_kilo_instructions()));
  NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".psi_cpu_some_avg10"), pod.has_psi_cpu_some_avg10(),
                                 pod.psi_cpu_some_avg10(), 100.0));
  NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".psi_memory_some_avg10"),
                                 pod.has_psi_memory_some_avg10(), pod.psi_memory_some_avg10(),
                                 100.0));
  NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".psi_memory_full_avg10"),
                                 pod.has_psi_memory_full_avg10(), pod.psi_memory_full_avg10(),
                                 100.0));
  if (static_cast<size_t>(pod.memory_bytes_by_numa_size()) > limits.max_numa_nodes) {
    return Bad(Path(field, ".memory_bytes_by_numa"), "more entries than NUMA nodes allowed");
  }
  for (const auto& [id, bytes] : pod.memory_bytes_by_numa()) {
    if (!numa_ids.contains(id)) {
      return Bad(absl::StrCat(field, ".memory_bytes_by_numa[", id, "]"),
                 "no such NUMA node in the topology");
    }
    if (bytes > limits.max_bytes) {
      return CheckBytes(absl::StrCat(field, ".memory_bytes_by_numa[", id, "]"), true, bytes,
                        limits);
    }
  }
  // Issue 27: the cap the agent holds the pod under.
  if (pod.has_resctrl_cap()) {
    const tv1::ResctrlCap& cap = pod.resctrl_cap();
    NB_RETURN_IF_ERROR(CheckLength(Path(field, ".resctrl_cap.group"), cap.group(), 253));
    NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".resctrl_cap.l3_fraction"), cap.has_l3_fraction(),
                                   cap.l3_fraction(), 1.0));
    NB_RETURN_IF_ERROR(CheckDouble(Path(field, ".resctrl_cap.mba_fraction"),
                                   cap.has_mba_fraction(), cap.mba_fraction(), 1.0));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".resctrl_cap.mba_bytes_per_second"),
                                  cap.has_mba_bytes_per_second(), cap.mba_bytes_per_second(),
                                  limits));
    if (static_cast<size_t>(cap.l3_domains_size()) > limits.max_map_entries) {
      return Bad(Path(field, ".resctrl_cap.l3_domains"), "more entries than allowed");
    }
  }
  // Issue 26: memory pressure inputs.
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".memory_working_set_bytes"),
                                pod.has_memory_working_set_bytes(),
                                pod.memory_working_set_bytes(), limits));
  NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".memory_limit_bytes"), pod.has_memory_limit_bytes(),
                                pod.memory_limit_bytes(), limits));
  if (static_cast<size_t>(pod.oom_score_adj_size()) > limits.max_map_entries) {
    return Bad(Path(field, ".oom_score_adj"), "too many values");
  }
  for (int32_t adj : pod.oom_score_adj()) {
    if (adj < -1000 || adj > 1000) {
      return Bad(Path(field, ".oom_score_adj"), absl::StrCat(adj, " is outside -1000..1000"));
    }
  }
  if (static_cast<size_t>(pod.container_memory_request_bytes_size()) > limits.max_map_entries) {
    return Bad(Path(field, ".container_memory_request_bytes"), "too many entries");
  }
  for (const auto& [name, bytes] : pod.container_memory_request_bytes()) {
    NB_RETURN_IF_ERROR(CheckLength(Path(field, ".container_memory_request_bytes key"), name,
                                   limits.max_string_bytes));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".container_memory_request_bytes"), true, bytes,
                                  limits));
  }
  if (static_cast<size_t>(pod.unavailable_size()) > limits.max_map_entries) {
    return Bad(Path(field, ".unavailable"), "too many entries");
  }
  for (const auto& [k, v] : pod.unavailable()) {
    NB_RETURN_IF_ERROR(CheckLength(Path(field, ".unavailable key"), k, limits.max_string_bytes));
    NB_RETURN_IF_ERROR(
        CheckLength(Path(field, ".unavailable[", k, "]"), v, limits.max_string_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsDns1123Subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (alnum(c) || c == '-') continue;
    if (c == '.' && alnum(name[i - 1]) && alnum(name[i + 1])) continue;
    return false;
  }
  return true;
}

absl::Status ValidateReport(const tv1::NodeReport& r, const ReportLimits& limits) {
  return ValidateReport(r, limits, nullptr);
}

void RemoveInvalidPods(const std::vector<InvalidPod>& invalid, tv1::NodeReport& report) {
  if (invalid.empty()) return;
  auto* pods = report.mutable_pods();
  int write = 0;
  size_t next = 0;
  for (int read = 0; read < pods->size(); ++read) {
    if (next < invalid.size() && invalid[next].index == read) {
      ++next;
      continue;
    }
    if (write != read) pods->SwapElements(write, read);
    ++write;
  }
  pods->DeleteSubrange(write, pods->size() - write);
}

absl::Status ValidateReport(const tv1::NodeReport& r, const ReportLimits& limits,
                            std::vector<InvalidPod>* invalid_pods) {
  // Identity.
  if (r.node_name().empty()) return Bad("node_name", "empty");
  if (!IsDns1123Subdomain(r.node_name())) {
    return Bad("node_name", absl::StrCat("\"", r.node_name().substr(0, 64),
                                         "\" is not a valid node name (DNS-1123 subdomain: "
                                         "lowercase letters, digits, '-' and '.', at most 253)"));
  }
  NB_RETURN_IF_ERROR(CheckLength("agent_version", r.agent_version(), limits.max_string_bytes));
  NB_RETURN_IF_ERROR(CheckLength("boot_id", r.boot_id(), 128));
  if (r.has_window_start()) {
    const auto& ts = r.window_start();
    if (ts.nanos() < 0 || ts.nanos() >= 1'000'000'000 || ts.seconds() < 0 ||
        ts.seconds() > 253402300799) {
      return Bad("window_start", "not a valid timestamp");
    }
  }
  if (!r.has_window_duration()) return Bad("window_duration", "missing (must be > 0)");
  {
    const auto& d = r.window_duration();
    if (d.seconds() < 0 || d.nanos() < 0 || d.nanos() >= 1'000'000'000 ||
        (d.seconds() == 0 && d.nanos() == 0)) {
      return Bad("window_duration", "must be > 0");
    }
    if (d.seconds() > 3600) return Bad("window_duration", "longer than one hour");
  }

  // Capabilities.
  const tv1::Capabilities& caps = r.capabilities();
  NB_RETURN_IF_ERROR(
      CheckCapability("capabilities.resctrl_occupancy", caps.resctrl_occupancy(), limits));
  NB_RETURN_IF_ERROR(
      CheckCapability("capabilities.resctrl_mbm_total", caps.resctrl_mbm_total(), limits));
  NB_RETURN_IF_ERROR(
      CheckCapability("capabilities.resctrl_mbm_local", caps.resctrl_mbm_local(), limits));
  NB_RETURN_IF_ERROR(CheckCapability("capabilities.perf_hardware_counters",
                                     caps.perf_hardware_counters(), limits));
  NB_RETURN_IF_ERROR(CheckCapability("capabilities.psi", caps.psi(), limits));
  NB_RETURN_IF_ERROR(
      CheckCapability("capabilities.kubelet_pod_resources", caps.kubelet_pod_resources(), limits));
  NB_RETURN_IF_ERROR(
      CheckCapability("capabilities.cpu_manager_state", caps.cpu_manager_state(), limits));
  NB_RETURN_IF_ERROR(CheckCapability("capabilities.pod_metadata", caps.pod_metadata(), limits));
  NB_RETURN_IF_ERROR(CheckCapability("capabilities.peak_membw", caps.peak_membw(), limits));
  if (static_cast<size_t>(caps.unmonitored_pods_size()) > limits.max_map_entries) {
    return Bad("capabilities.unmonitored_pods", "too many entries");
  }
  for (const auto& [uid, why] : caps.unmonitored_pods()) {
    NB_RETURN_IF_ERROR(CheckLength("capabilities.unmonitored_pods key", uid, 128));
    NB_RETURN_IF_ERROR(CheckLength(absl::StrCat("capabilities.unmonitored_pods[", uid, "]"), why,
                                   limits.max_string_bytes));
  }

  // Topology.
  const tv1::Topology& topo = r.topology();
  NB_RETURN_IF_ERROR(CheckLength("topology.note", topo.note(), limits.max_string_bytes));
  if (topo.numa_nodes_size() == 0)
    return Bad("topology.numa_nodes", "empty (at least one NUMA node)");
  if (static_cast<size_t>(topo.numa_nodes_size()) > limits.max_numa_nodes) {
    return Bad("topology.numa_nodes",
               absl::StrCat(topo.numa_nodes_size(), " entries, at most ", limits.max_numa_nodes));
  }
  std::set<uint32_t> numa_ids;
  CpuSet all_cpus;
  for (int i = 0; i < topo.numa_nodes_size(); ++i) {
    const tv1::NumaNode& n = topo.numa_nodes(i);
    const std::string field = absl::StrCat("topology.numa_nodes[", i, "]");
    if (!numa_ids.insert(n.id()).second) {
      return Bad(Path(field, ".id"), absl::StrCat("duplicate NUMA node id ", n.id()));
    }
    absl::StatusOr<CpuSet> cpus = CheckCpus(Path(field, ".cpus"), n.cpus());
    if (!cpus.ok()) return cpus.status();
    if (IntersectionSize(*cpus, all_cpus) != 0) {
      return Bad(Path(field, ".cpus"), "overlaps the CPUs of another NUMA node");
    }
    all_cpus.insert(all_cpus.end(), cpus->begin(), cpus->end());
    std::sort(all_cpus.begin(), all_cpus.end());
    if (n.distances_size() != 0 && n.distances_size() != topo.numa_nodes_size()) {
      return Bad(Path(field, ".distances"), absl::StrCat(n.distances_size(), " entries for ",
                                                         topo.numa_nodes_size(), " NUMA nodes"));
    }
    if (n.has_peak_membw_bytes_per_second() && n.peak_membw_bytes_per_second() == 0) {
      return Bad(Path(field, ".peak_membw_bytes_per_second"), "zero (omit it when unknown)");
    }
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".memory_bytes"), true, n.memory_bytes(), limits));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".peak_membw_bytes_per_second"),
                                  n.has_peak_membw_bytes_per_second(),
                                  n.peak_membw_bytes_per_second(), limits));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".membw_bytes_per_second"),
                                  n.has_membw_bytes_per_second(), n.membw_bytes_per_second(),
                                  limits));
    NB_RETURN_IF_ERROR(CheckLength(Path(field, ".peak_membw_source"), n.peak_membw_source(),
                                   limits.max_string_bytes));
    NB_RETURN_IF_ERROR(CheckLength(Path(field, ".peak_membw_detail"), n.peak_membw_detail(),
                                   limits.max_string_bytes));
  }
  if (static_cast<size_t>(topo.l3_domains_size()) > limits.max_l3_domains) {
    return Bad("topology.l3_domains",
               absl::StrCat(topo.l3_domains_size(), " entries, at most ", limits.max_l3_domains));
  }
  std::set<uint32_t> l3_ids;
  for (int i = 0; i < topo.l3_domains_size(); ++i) {
    const tv1::L3Domain& d = topo.l3_domains(i);
    const std::string field = absl::StrCat("topology.l3_domains[", i, "]");
    if (!l3_ids.insert(d.id()).second) {
      return Bad(Path(field, ".id"), absl::StrCat("duplicate L3 domain id ", d.id()));
    }
    absl::StatusOr<CpuSet> cpus = CheckCpus(Path(field, ".cpus"), d.cpus());
    if (!cpus.ok()) return cpus.status();
    if (!numa_ids.contains(d.numa_node())) {
      return Bad(Path(field, ".numa_node"),
                 absl::StrCat("no NUMA node ", d.numa_node(), " in the topology"));
    }
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".size_bytes"), true, d.size_bytes(), limits));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".occupancy_bytes"), d.has_occupancy_bytes(),
                                  d.occupancy_bytes(), limits));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".membw_total_bytes_per_second"),
                                  d.has_membw_total_bytes_per_second(),
                                  d.membw_total_bytes_per_second(), limits));
    NB_RETURN_IF_ERROR(CheckBytes(Path(field, ".membw_local_bytes_per_second"),
                                  d.has_membw_local_bytes_per_second(),
                                  d.membw_local_bytes_per_second(), limits));
    // size_bytes 0 is "unknown": hosts without cache information in sysfs report
    // one domain per package without a size; the model skips L3 terms there.
  }

  // Kubelet policies.
  const tv1::KubeletPolicies& k = r.kubelet();
  NB_RETURN_IF_ERROR(
      CheckOneOf("kubelet.cpu_manager_policy", k.cpu_manager_policy(), {"", "none", "static"}));
  NB_RETURN_IF_ERROR(CheckOneOf("kubelet.topology_manager_policy", k.topology_manager_policy(),
                                {"", "none", "best-effort", "restricted", "single-numa-node"}));
  NB_RETURN_IF_ERROR(CheckOneOf("kubelet.topology_manager_scope", k.topology_manager_scope(),
                                {"", "container", "pod"}));
  if (absl::StatusOr<CpuSet> c = CheckCpus("kubelet.reserved_cpus", k.reserved_cpus()); !c.ok()) {
    return c.status();
  }
  if (absl::StatusOr<CpuSet> c = CheckCpus("kubelet.shared_pool_cpus", k.shared_pool_cpus());
      !c.ok()) {
    return c.status();
  }
  // Issue 14: resource-manager settings and SMT cores (all optional).
  NB_RETURN_IF_ERROR(CheckOneOf("kubelet.memory_manager_policy", k.memory_manager_policy(),
                                {"", "none", "static"}));
  if (absl::StatusOr<CpuSet> c = CheckCpus("kubelet.allocatable_cpus", k.allocatable_cpus());
      !c.ok()) {
    return c.status();
  }
  if (k.cpu_manager_policy_options_size() > 64 || k.topology_manager_policy_options_size() > 64) {
    return Bad("kubelet", "more than 64 policy options");
  }
  for (const auto& [id, bytes] : k.reserved_memory_bytes_by_numa()) {
    if (!numa_ids.contains(id)) {
      return Bad("kubelet.reserved_memory_bytes_by_numa",
                 absl::StrCat("NUMA node ", id, " is not in the topology"));
    }
  }
  // Issue 26: eviction thresholds (text, parsed by the memory view) and node memory.
  if (k.eviction_hard_size() > 64 || k.eviction_soft_size() > 64) {
    return Bad("kubelet", "more than 64 eviction thresholds");
  }
  for (const auto* thresholds : {&k.eviction_hard(), &k.eviction_soft()}) {
    for (const auto& [signal, value] : *thresholds) {
      NB_RETURN_IF_ERROR(CheckLength("kubelet.eviction signal", signal, limits.max_string_bytes));
      NB_RETURN_IF_ERROR(CheckLength("kubelet.eviction value", value, limits.max_string_bytes));
    }
  }
  NB_RETURN_IF_ERROR(CheckLength("kubelet.eviction_source", k.eviction_source(),
                                 limits.max_string_bytes));
  if (r.has_memory()) {
    NB_RETURN_IF_ERROR(CheckBytes("memory.capacity_bytes", true, r.memory().capacity_bytes(), limits));
    if (r.memory().available_bytes() > r.memory().capacity_bytes()) {
      return Bad("memory.available_bytes", "is larger than memory.capacity_bytes");
    }
    NB_RETURN_IF_ERROR(CheckLength("memory.source", r.memory().source(), limits.max_string_bytes));
  }
  if (static_cast<size_t>(r.topology().cores_size()) > all_cpus.size()) {
    return Bad("topology.cores",
               absl::StrCat(r.topology().cores_size(), " cores for ", all_cpus.size(), " CPUs"));
  }
  for (int i = 0; i < r.topology().cores_size(); ++i) {
    const tv1::CpuCore& core = r.topology().cores(i);
    const std::string field = absl::StrCat("topology.cores[", i, "]");
    absl::StatusOr<CpuSet> cpus = CheckCpus(Path(field, ".cpus"), core.cpus());
    if (!cpus.ok()) return cpus.status();
    if (cpus->empty() || IntersectionSize(*cpus, all_cpus) != cpus->size()) {
      return Bad(Path(field, ".cpus"), "not CPUs of the report's NUMA nodes");
    }
    if (!numa_ids.contains(core.numa_node())) {
      return Bad(Path(field, ".numa_node"),
                 absl::StrCat("NUMA node ", core.numa_node(), " is not in the topology"));
    }
  }

  // Pods.
  if (static_cast<size_t>(r.pods_size()) > limits.max_pods) {
    return Bad("pods", absl::StrCat(r.pods_size(), " pods, at most ", limits.max_pods));
  }
  absl::flat_hash_set<absl::string_view> uids;
  uids.reserve(r.pods_size());
  for (int i = 0; i < r.pods_size(); ++i) {
    const std::string field = absl::StrCat("pods[", i, "]");
    absl::Status pod = ValidatePod(r.pods(i), field, numa_ids, all_cpus, limits);
    if (pod.ok() && uids.contains(Av(r.pods(i).uid()))) {
      pod = Bad(Path(field, ".uid"), absl::StrCat("duplicate pod uid ", r.pods(i).uid()));
    }
    if (!pod.ok()) {
      if (invalid_pods == nullptr) return pod;
      invalid_pods->push_back({i, r.pods(i).uid().substr(0, 128), std::string(pod.message())});
      continue;
    }
    uids.insert(Av(r.pods(i).uid()));
  }
  return absl::OkStatus();
}

#undef NB_RETURN_IF_ERROR

}  // namespace neighborly::extender
