#include "node-agent/src/report/agent_metrics.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/prometheus_text.h"

namespace neighborly::agent {
namespace {

namespace tv1 = telemetry::v1;

struct PodGauge {
  const char* name;
  const char* help;
  std::function<std::optional<double>(const tv1::PodReport&)> value;
};

}  // namespace

void AgentMetrics::RecordWindow(const tv1::NodeReport& report, absl::Duration sample_cost) {
  const double seconds = absl::ToDoubleSeconds(sample_cost);
  const double window_seconds =
      std::max(0.0, static_cast<double>(report.window_duration().seconds()) +
                        report.window_duration().nanos() / 1e9);
  absl::MutexLock lock(&mu_);
  last_ = report;
  size_t bucket = 0;
  while (bucket < kCostBuckets.size() && seconds > kCostBuckets[bucket]) ++bucket;
  ++cost_buckets_[bucket];
  cost_sum_seconds_ += seconds;
  pods_skipped_unidentified_ += static_cast<uint64_t>(report.capabilities().skipped_pods_size());
  // The rates of the window times its length; a pod gone from the report is
  // forgotten (its series end), as a restarted pod's counters start again.
  std::map<std::string, PodTotals> pods;
  for (const tv1::PodReport& p : report.pods()) {
    auto it = pod_totals_.find(p.uid());
    PodTotals totals = it == pod_totals_.end() ? PodTotals{} : it->second;
    totals.namespace_name = p.namespace_();
    totals.name = p.name();
    if (p.has_cpu_usage_millicores() && p.cpu_usage_millicores() >= 0) {
      totals.cpu_seconds =
          totals.cpu_seconds.value_or(0) + p.cpu_usage_millicores() / 1000.0 * window_seconds;
    }
    if (p.has_membw_total_bytes_per_second()) {
      totals.membw_bytes = totals.membw_bytes.value_or(0) +
                           static_cast<double>(p.membw_total_bytes_per_second()) * window_seconds;
    }
    if (p.has_membw_local_bytes_per_second()) {
      totals.membw_local_bytes =
          totals.membw_local_bytes.value_or(0) +
          static_cast<double>(p.membw_local_bytes_per_second()) * window_seconds;
    }
    pods[p.uid()] = std::move(totals);
  }
  pod_totals_ = std::move(pods);
  for (const tv1::NumaNode& n : report.topology().numa_nodes()) {
    if (n.has_membw_bytes_per_second()) {
      numa_membw_bytes_[n.id()] += static_cast<double>(n.membw_bytes_per_second()) * window_seconds;
    }
  }
}

void AgentMetrics::RecordFailure() {
  absl::MutexLock lock(&mu_);
  ++failures_;
}

std::string AgentMetrics::Render() const {
  PrometheusWriter page;
  AppendTo(page);
  return page.Render();
}

void AgentMetrics::AppendTo(PrometheusWriter& page) const {
  absl::MutexLock lock(&mu_);
  uint64_t windows = 0;
  for (uint64_t c : cost_buckets_) windows += c;
  page.Counter("neighborly_agent_windows_total", "Windows measured.", {},
               static_cast<double>(windows));
  page.Counter("neighborly_agent_window_failures_total", "Windows that could not be measured.", {},
               static_cast<double>(failures_));
  page.Counter("neighborly_agent_pods_skipped_total",
               "Pods left out of a window's report, by reason (unidentified: no namespace/name "
               "from CRI, /var/log/pods or /var/lib/kubelet/pods); one per pod and window.",
               {{"reason", "unidentified"}}, static_cast<double>(pods_skipped_unidentified_));
  page.Histogram("neighborly_agent_sample_duration_seconds",
                 "Time the agent spent sampling per window, the window's wait excluded.", {},
                 kCostBuckets, cost_buckets_, cost_sum_seconds_);

  for (const auto& [uid, pod] : pod_totals_) {
    const PrometheusWriter::Labels labels = {
        {"namespace", pod.namespace_name}, {"pod", pod.name}, {"uid", uid}};
    if (pod.cpu_seconds) {
      page.Counter("neighborly_pod_cpu_seconds_total",
                   "CPU time the pod used, summed over the windows it was measured in.", labels,
                   *pod.cpu_seconds);
    }
    if (pod.membw_bytes) {
      page.Counter("neighborly_pod_membw_bytes_total",
                   "Memory traffic of the pod (MBM total), summed over the windows it was "
                   "measured in.",
                   labels, *pod.membw_bytes);
    }
    if (pod.membw_local_bytes) {
      page.Counter("neighborly_pod_membw_local_bytes_total",
                   "Memory traffic of the pod to its local NUMA node (MBM local), summed over "
                   "the windows it was measured in.",
                   labels, *pod.membw_local_bytes);
    }
  }
  for (const auto& [numa, bytes] : numa_membw_bytes_) {
    page.Counter("neighborly_node_membw_bytes_total",
                 "Memory traffic per NUMA node (sum over its L3 domains), summed over the "
                 "windows measured.",
                 {{"numa_node", absl::StrCat(numa)}}, bytes);
  }

  if (!last_) return;
  const tv1::NodeReport& r = *last_;
  const tv1::Capabilities& caps = r.capabilities();
  const std::pair<const char*, const tv1::Capability*> capabilities[] = {
      {"resctrl_occupancy", &caps.resctrl_occupancy()},
      {"resctrl_mbm_total", &caps.resctrl_mbm_total()},
      {"resctrl_mbm_local", &caps.resctrl_mbm_local()},
      {"perf_hardware_counters", &caps.perf_hardware_counters()},
      {"psi", &caps.psi()},
      {"kubelet_pod_resources", &caps.kubelet_pod_resources()},
      {"cpu_manager_state", &caps.cpu_manager_state()},
      {"pod_metadata", &caps.pod_metadata()},
      {"peak_membw", &caps.peak_membw()},
  };
  for (const auto& [name, capability] : capabilities) {
    page.Gauge("neighborly_agent_capability_available",
               "1 when the node offers the measurement source, else 0 with the reason.",
               {{"capability", name}, {"reason", capability->reason()}},
               capability->available() ? 1 : 0);
  }

  if (caps.has_rmids_total()) {
    const double total = caps.rmids_total(), free = caps.rmids_free();
    constexpr std::string_view kHelp =
        "RDT monitoring ids (RMIDs) by state: free for new groups, or used; their sum is the "
        "node's total.";
    page.Gauge("neighborly_agent_rmids", kHelp, {{"state", "free"}}, free);
    page.Gauge("neighborly_agent_rmids", kHelp, {{"state", "used"}},
               total > free ? total - free : 0);
  }

  // Issue 27: the opt-in allocator, where the node's resctrl has CAT or MBA.
  if (caps.has_resctrl_allocation() &&
      (caps.resctrl_allocation().l3_cat().available() ||
       caps.resctrl_allocation().mba().available())) {
    const tv1::ResctrlAllocation& a = caps.resctrl_allocation();
    uint64_t capped = 0;
    for (const tv1::PodReport& pod : r.pods()) capped += pod.has_resctrl_cap() ? 1 : 0;
    page.Gauge("neighborly_agent_resctrl_allocation_active",
               "1 while the agent caps batch pods through resctrl (flag, policy and hardware).",
               {}, a.allocating() ? 1 : 0);
    page.Gauge("neighborly_agent_resctrl_capped_pods",
               "Pods in the newest report that run in a capped resctrl control group.", {},
               static_cast<double>(capped));
    page.Counter("neighborly_agent_resctrl_allocation_changes_total",
                 "resctrl control groups made or removed, schemata written, pods moved.", {},
                 static_cast<double>(a.changes_total()));
    page.Counter("neighborly_agent_resctrl_closid_exhausted_total",
                 "Times a control group could not be made for want of a CLOSID.", {},
                 static_cast<double>(a.closid_exhausted_total()));
    page.Counter("neighborly_agent_resctrl_write_errors_total",
                 "resctrl writes (mkdir, schemata, tasks) the kernel refused.", {},
                 static_cast<double>(a.write_errors_total()));
  }

  uint64_t monitored = 0;
  for (const tv1::PodReport& pod : r.pods()) {
    if (pod.has_llc_occupancy_bytes() || pod.has_membw_total_bytes_per_second()) ++monitored;
  }
  constexpr std::string_view kPodsHelp =
      "Pods in the newest report, by whether RDT measured them individually.";
  page.Gauge("neighborly_agent_pods", kPodsHelp, {{"rdt", "monitored"}},
             static_cast<double>(monitored));
  page.Gauge("neighborly_agent_pods", kPodsHelp, {{"rdt", "unmonitored"}},
             static_cast<double>(static_cast<uint64_t>(r.pods_size()) - monitored));
  page.Gauge("neighborly_agent_last_window_timestamp_seconds",
             "Start of the newest measured window, Unix time.", {},
             static_cast<double>(r.window_start().seconds()) + r.window_start().nanos() / 1e9);

  // Instantaneous per-pod values of the newest window (the traffic and CPU
  // time are the counters above).
  const PodGauge pod_gauges[] = {
      {"neighborly_pod_llc_occupancy_bytes", "L3 cache occupancy of the pod.",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_llc_occupancy_bytes()) return std::nullopt;
         return static_cast<double>(p.llc_occupancy_bytes());
       }},
      {"neighborly_pod_ipc", "Instructions per cycle of the pod.",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_ipc()) return std::nullopt;
         return p.ipc();
       }},
      {"neighborly_pod_llc_misses_per_kilo_instructions", "LLC misses per 1000 instructions.",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_llc_misses_per_kilo_instructions()) return std::nullopt;
         return p.llc_misses_per_kilo_instructions();
       }},
  };
  for (const PodGauge& gauge : pod_gauges) {
    for (const tv1::PodReport& pod : r.pods()) {
      if (std::optional<double> v = gauge.value(pod)) {
        page.Gauge(gauge.name, gauge.help,
                   {{"namespace", pod.namespace_()}, {"pod", pod.name()}, {"uid", pod.uid()}}, *v);
      }
    }
  }

  for (const tv1::L3Domain& d : r.topology().l3_domains()) {
    if (d.has_occupancy_bytes()) {
      page.Gauge("neighborly_node_l3_occupancy_bytes",
                 "L3 occupancy per cache domain (all groups).",
                 {{"l3_domain", absl::StrCat(d.id())}}, static_cast<double>(d.occupancy_bytes()));
    }
  }
  for (const tv1::NumaNode& n : r.topology().numa_nodes()) {
    if (n.has_peak_membw_bytes_per_second()) {
      page.Gauge("neighborly_node_peak_membw_bytes_per_second",
                 "Peak memory bandwidth per NUMA node (a capacity) and where it came from "
                 "(override, measured, smbios); absent when the extender's default applies.",
                 {{"numa_node", absl::StrCat(n.id())}, {"source", n.peak_membw_source()}},
                 static_cast<double>(n.peak_membw_bytes_per_second()));
    }
  }
}

}  // namespace neighborly::agent
