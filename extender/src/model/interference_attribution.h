// Antagonist attribution (issue 26, after Google's CPI², Zhang et al.,
// EuroSys 2013): which co-runner is hurting a latency-critical pod, from
// telemetry alone.
//
// Per latency-critical workload (annotation neighborly.io/class), a baseline
// of cycles per instruction (1 / IPC) is learned from its replicas' recent
// windows. A replica whose CPI stays above its workload's baseline (mean +
// `sigma` standard deviations of the *other* replicas' samples, the spread
// floored at `min_relative_spread` of the mean) in at least
// `victim_windows` of the last `recent_windows` windows is a victim. Its CPI
// is then correlated (Pearson, over the windows both were measured) with
// each co-runner's memory bandwidth and L3 occupancy on the same node; a
// co-runner that shares the victim's L3 domain or NUMA node and whose
// correlation passes `min_correlation` is a suspect, with a score that
// weighs the correlation by the co-runner's share of the pressure. A
// workload named `repeat_offender_count` times is a repeat antagonist
// (what placement treats as an aggressor).
//
//   InterferenceTracker tracker;
//   tracker.Observe(report);            // once per new window of each node
//   InterferenceView view = tracker.View();
//
// Pure: no clock, no I/O; windows are told apart by (node, boot id, sequence).
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_ATTRIBUTION_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_ATTRIBUTION_H_

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

struct InterferenceOptions {
  size_t history_windows = 30;  // kept per node
  size_t recent_windows = 5;
  size_t victim_windows = 3;
  double sigma = 2.0;
  double min_relative_spread = 0.05;
  size_t min_correlation_windows = 6;
  double min_correlation = 0.5;
  double min_score = 0.3;
  // Baseline samples need at least this many windows of other replicas.
  size_t min_baseline_samples = 5;
  size_t repeat_offender_count = 3;
  size_t max_nodes = 50'000;
};

struct Suspect {
  std::string pod;  // "namespace/name"
  std::string uid;
  std::string workload;  // "namespace/Kind/name"
  double score = 0;      // 0..1
  double bandwidth_correlation = 0;
  double occupancy_correlation = 0;
  double mean_membw_bytes_per_second = 0;
  double mean_llc_occupancy_bytes = 0;
  std::string shares;  // "L3 domain 0, NUMA node 0" | "node (placement unknown)"
};

struct Victim {
  std::string node;
  std::string pod;
  std::string uid;
  std::string workload;
  double cpi = 0;  // mean over the recent windows
  double baseline_cpi = 0;
  double baseline_stddev = 0;
  size_t windows_above = 0;
  size_t recent_windows = 0;
  // Consecutive windows of its node in which it has been a victim (the
  // rebalancing advice waits for a persisting victim: hysteresis).
  size_t persisting_windows = 0;
  std::vector<Suspect> suspects;  // highest score first
};

struct InterferenceView {
  std::vector<Victim> victims;  // by node, then pod
  // Workload -> in how many (window, victim) findings it was a suspect, since start.
  std::map<std::string, uint64_t> antagonist_counts;
  std::vector<std::string> repeat_antagonists;  // workloads at or above the repeat count
  // Per node with telemetry: victims and suspects now (for /metrics).
  std::map<std::string, std::pair<int, int>> per_node;
  size_t windows_observed = 0;
};

class InterferenceTracker {
 public:
  explicit InterferenceTracker(InterferenceOptions options = {});

  // Records one window; a report already seen (same node, boot id, sequence)
  // or older is ignored. Returns whether it was new.
  bool Observe(const telemetry::v1::NodeReport& report);

  InterferenceView View() const;
  // Workloads named often enough to be treated as antagonists.
  std::set<std::string> RepeatAntagonists() const;

 private:
  struct PodWindow {
    std::string uid;
    std::string pod;
    std::string workload;
    bool latency_critical = false;
    std::optional<double> cpi;
    std::optional<double> membw;
    std::optional<double> occupancy;
    std::set<uint32_t> l3_domains;  // empty: unknown
    std::set<uint32_t> numa_nodes;
  };
  struct Window {
    uint64_t sequence = 0;
    std::vector<PodWindow> pods;
  };
  struct NodeHistory {
    std::string boot_id;
    uint64_t last_sequence = 0;
    std::deque<Window> windows;
  };

  void Analyse(const std::string& node, NodeHistory& history);
  std::vector<Victim> FindVictims(const std::string& node, const NodeHistory& history) const;

  InterferenceOptions options_;
  mutable std::mutex mu_;  // Observe (the observer thread) against View (the API)
  // By node name: a report looks its node up, and a cluster has thousands
  // (a std::map's string compares were half of Observe's own time in a
  // 5,000-node scheduler_perf round). View sorts what it gives out.
  absl::flat_hash_map<std::string, NodeHistory> nodes_;
  std::map<std::string, std::vector<Victim>> findings_;  // node -> current victims
  std::map<std::string, size_t> streaks_;  // victim uid -> consecutive windows as a victim
  // Latency-critical replicas' recent CPI: workload -> uid -> samples.
  struct ReplicaCpi {
    std::deque<double> cpi;
    size_t last_seen = 0;  // windows_observed_ at its last sample
  };
  std::map<std::string, std::map<std::string, ReplicaCpi>> replica_cpi_;
  std::map<std::string, uint64_t> antagonist_counts_;
  size_t windows_observed_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_INTERFERENCE_ATTRIBUTION_H_
