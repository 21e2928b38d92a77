// The agent's own measurements and health for /metrics on --metrics-address:
// capabilities (with their reasons), RMIDs, pods monitored or not, what each
// window cost, per-pod and per-domain gauges from the newest report, and
// counters of CPU time and memory traffic summed over the windows (the
// report's rates times the window's length), which survive scrape gaps.
//
//   AgentMetrics metrics;
//   metrics.RecordWindow(report, sample_cost);   // after every window
//   PrometheusWriter page;
//   AppendStreamMetrics(streams, page);
//   metrics.AppendTo(page);
//   std::string body = page.Render();
//
// Thread-safe: the sampling loop records while the HTTP server renders.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_AGENT_METRICS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_AGENT_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/prometheus_text.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::agent {

class AgentMetrics {
 public:
  // Upper bounds (seconds) of the sample-cost histogram's buckets.
  static constexpr std::array<double, 8> kCostBuckets = {0.001, 0.0025, 0.005, 0.01,
                                                         0.025, 0.05,   0.1,   0.5};

  // One measured window: its report and the time the agent spent sampling
  // (the window's wait excluded).
  void RecordWindow(const telemetry::v1::NodeReport& report, absl::Duration sample_cost);
  // A window that could not be measured.
  void RecordFailure();

  void AppendTo(PrometheusWriter& page) const;
  // These families alone, rendered (tests).
  std::string Render() const;

 private:
  mutable absl::Mutex mu_;
  std::optional<telemetry::v1::NodeReport> last_ ABSL_GUARDED_BY(mu_);
  // Windows per cost bucket, not cumulative; the last above kCostBuckets.back().
  std::array<uint64_t, kCostBuckets.size() + 1> cost_buckets_ ABSL_GUARDED_BY(mu_) = {};
  double cost_sum_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  // Pod-windows not reported because the pod could not be identified
  // (capabilities.skipped_pods), summed over windows.
  uint64_t pods_skipped_unidentified_ ABSL_GUARDED_BY(mu_) = 0;
  // Counters of the pods in the newest report, by uid.
  struct PodTotals {
    std::string namespace_name;
    std::string name;
    std::optional<double> cpu_seconds;
    std::optional<double> membw_bytes;
    std::optional<double> membw_local_bytes;
  };
  std::map<std::string, PodTotals> pod_totals_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, double> numa_membw_bytes_ ABSL_GUARDED_BY(mu_);  // by NUMA node id
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_AGENT_METRICS_H_
