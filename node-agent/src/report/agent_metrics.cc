#include "node-agent/src/report/agent_metrics.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/prometheus_text.h"

namespace neighborly::agent {
namespace {

namespace tv1 = telemetry::v1;

// Integers exactly (byte counts pass 2^24 and absl::StrCat(double) keeps 6
// digits); other values with enough digits to round-trip.
std::string Number(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value)) && value < 9.0e15 &&
      value > -9.0e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);  // short where it round-trips
  if (std::strtod(buffer, nullptr) != value) std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  ((((out += "# HELP ") += name) += ' ') += help) += '\n';
  ((((out += "# TYPE ") += name) += ' ') += type) += '\n';
}

using Labels = std::vector<std::pair<std::string, std::string>>;

void Sample(std::string& out, std::string_view name, const Labels& labels, double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out += ',';
      ((((out += labels[i].first) += "=\"") += PrometheusLabelValue(labels[i].second)) += '"');
    }
    out += '}';
  }
  ((out += ' ') += Number(value)) += '\n';
}

struct PodGauge {
  const char* name;
  const char* help;
  std::function<std::optional<double>(const tv1::PodReport&)> value;
};

}  // namespace

void AgentMetrics::RecordWindow(const tv1::NodeReport& report, absl::Duration sample_cost) {
  const double seconds = absl::ToDoubleSeconds(sample_cost);
  absl::MutexLock lock(&mu_);
  last_ = report;
  for (size_t i = 0; i < kCostBuckets.size(); ++i) {
    if (seconds <= kCostBuckets[i]) ++cost_buckets_[i];
  }
  ++cost_count_;
  cost_sum_seconds_ += seconds;
  pods_skipped_unidentified_ += static_cast<uint64_t>(report.capabilities().skipped_pods_size());
}

void AgentMetrics::RecordFailure() {
  absl::MutexLock lock(&mu_);
  ++failures_;
}

std::string AgentMetrics::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;

  Header(out, "neighborly_agent_windows_total", "counter", "Windows measured.");
  Sample(out, "neighborly_agent_windows_total", {}, static_cast<double>(cost_count_));
  Header(out, "neighborly_agent_window_failures_total", "counter",
         "Windows that could not be measured.");
  Sample(out, "neighborly_agent_window_failures_total", {}, static_cast<double>(failures_));
  Header(out, "neighborly_agent_pods_skipped_total", "counter",
         "Pods left out of a window's report, by reason (unidentified: no namespace/name from "
         "CRI, /var/log/pods or /var/lib/kubelet/pods); one per pod and window.");
  Sample(out, "neighborly_agent_pods_skipped_total", {{"reason", "unidentified"}},
         static_cast<double>(pods_skipped_unidentified_));

  Header(out, "neighborly_agent_sample_duration_seconds", "histogram",
         "Time the agent spent sampling per window, the window's wait excluded.");
  for (size_t i = 0; i < kCostBuckets.size(); ++i) {
    Sample(out, "neighborly_agent_sample_duration_seconds_bucket",
           {{"le", Number(kCostBuckets[i])}}, static_cast<double>(cost_buckets_[i]));
  }
  Sample(out, "neighborly_agent_sample_duration_seconds_bucket", {{"le", "+Inf"}},
         static_cast<double>(cost_count_));
  Sample(out, "neighborly_agent_sample_duration_seconds_sum", {}, cost_sum_seconds_);
  Sample(out, "neighborly_agent_sample_duration_seconds_count", {},
         static_cast<double>(cost_count_));

  if (!last_) return out;
  const tv1::NodeReport& r = *last_;
  const tv1::Capabilities& caps = r.capabilities();

  Header(out, "neighborly_agent_capability_available", "gauge",
         "1 when the node offers the measurement source, else 0 with the reason.");
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
    Sample(out, "neighborly_agent_capability_available",
           {{"capability", name}, {"reason", capability->reason()}},
           capability->available() ? 1 : 0);
  }

  if (caps.has_rmids_total()) {
    Header(out, "neighborly_agent_rmids", "gauge",
           "RDT monitoring ids (RMIDs): total on the node, free for new groups, and used.");
    const double total = caps.rmids_total(), free = caps.rmids_free();
    Sample(out, "neighborly_agent_rmids", {{"state", "total"}}, total);
    Sample(out, "neighborly_agent_rmids", {{"state", "free"}}, free);
    Sample(out, "neighborly_agent_rmids", {{"state", "used"}}, total > free ? total - free : 0);
  }

  uint64_t monitored = 0;
  for (const tv1::PodReport& pod : r.pods()) {
    if (pod.has_llc_occupancy_bytes() || pod.has_membw_total_bytes_per_second()) ++monitored;
  }
  Header(out, "neighborly_agent_pods", "gauge",
         "Pods in the newest report, by whether RDT measured them individually.");
  Sample(out, "neighborly_agent_pods", {{"rdt", "monitored"}}, static_cast<double>(monitored));
  Sample(out, "neighborly_agent_pods", {{"rdt", "unmonitored"}},
         static_cast<double>(r.pods_size() - monitored));

  Header(out, "neighborly_agent_last_window_timestamp_seconds", "gauge",
         "Start of the newest measured window, Unix time.");
  Sample(out, "neighborly_agent_last_window_timestamp_seconds", {},
         static_cast<double>(r.window_start().seconds()) + r.window_start().nanos() / 1e9);

  const PodGauge pod_gauges[] = {
      {"neighborly_pod_llc_occupancy_bytes", "L3 cache occupancy of the pod.",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_llc_occupancy_bytes()) return std::nullopt;
         return static_cast<double>(p.llc_occupancy_bytes());
       }},
      {"neighborly_pod_membw_total_bytes_per_second", "Memory bandwidth of the pod (MBM total).",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_membw_total_bytes_per_second()) return std::nullopt;
         return static_cast<double>(p.membw_total_bytes_per_second());
       }},
      {"neighborly_pod_membw_local_bytes_per_second",
       "Memory bandwidth of the pod to its local NUMA node (MBM local).",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_membw_local_bytes_per_second()) return std::nullopt;
         return static_cast<double>(p.membw_local_bytes_per_second());
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
      {"neighborly_pod_cpu_usage_millicores", "CPU used by the pod over the window.",
       [](const tv1::PodReport& p) -> std::optional<double> {
         if (!p.has_cpu_usage_millicores()) return std::nullopt;
         return static_cast<double>(p.cpu_usage_millicores());
       }},
  };
  for (const PodGauge& gauge : pod_gauges) {
    Header(out, gauge.name, "gauge", gauge.help);
    for (const tv1::PodReport& pod : r.pods()) {
      if (std::optional<double> v = gauge.value(pod)) {
        Sample(out, gauge.name,
               {{"namespace", pod.namespace_()}, {"pod", pod.name()}, {"uid", pod.uid()}}, *v);
      }
    }
  }

  Header(out, "neighborly_node_l3_occupancy_bytes", "gauge",
         "L3 occupancy per cache domain (all groups).");
  for (const tv1::L3Domain& d : r.topology().l3_domains()) {
    if (d.has_occupancy_bytes()) {
      Sample(out, "neighborly_node_l3_occupancy_bytes", {{"l3_domain", absl::StrCat(d.id())}},
             static_cast<double>(d.occupancy_bytes()));
    }
  }
  Header(out, "neighborly_node_membw_bytes_per_second", "gauge",
         "Memory bandwidth per NUMA node (sum over its L3 domains).");
  for (const tv1::NumaNode& n : r.topology().numa_nodes()) {
    if (n.has_membw_bytes_per_second()) {
      Sample(out, "neighborly_node_membw_bytes_per_second", {{"numa_node", absl::StrCat(n.id())}},
             static_cast<double>(n.membw_bytes_per_second()));
    }
  }
  Header(out, "neighborly_node_peak_membw_bytes_per_second", "gauge",
         "Peak memory bandwidth per NUMA node and where it came from (override, measured, "
         "smbios); absent when the extender's default applies.");
  for (const tv1::NumaNode& n : r.topology().numa_nodes()) {
    if (n.has_peak_membw_bytes_per_second()) {
      Sample(out, "neighborly_node_peak_membw_bytes_per_second",
             {{"numa_node", absl::StrCat(n.id())}, {"source", n.peak_membw_source()}},
             static_cast<double>(n.peak_membw_bytes_per_second()));
    }
  }
  return out;
}

}  // namespace neighborly::agent
