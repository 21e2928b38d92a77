#include "extender/src/model/interference_attribution.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cpu_list.h"
#include "extender/src/model/workload_key.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

constexpr std::string_view kClassAnnotation = "neighborly.io/class";

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double Stddev(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return std::sqrt(sum / static_cast<double>(v.size() - 1));
}

// Pearson correlation; 0 when either side is constant.
double Correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = Mean(x), my = Mean(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  // Relative tolerance: a series whose spread is rounding noise is constant.
  if (sxx <= 1e-12 * (mx * mx + 1) * static_cast<double>(x.size()) ||
      syy <= 1e-12 * (my * my + 1) * static_cast<double>(y.size())) {
    return 0;
  }
  return sxy / std::sqrt(sxx * syy);
}

std::set<uint32_t> Intersect(const std::set<uint32_t>& a, const std::set<uint32_t>& b) {
  std::set<uint32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.begin()));
  return out;
}

}  // namespace

InterferenceTracker::InterferenceTracker(InterferenceOptions options) : options_(options) {}

bool InterferenceTracker::Observe(const tv1::NodeReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(report.node_name());
  if (it == nodes_.end()) {
    if (nodes_.size() >= options_.max_nodes) return false;
    it = nodes_.emplace(report.node_name(), NodeHistory{}).first;
  }
  NodeHistory& history = it->second;
  if (history.boot_id != report.boot_id()) {
    history = NodeHistory{};  // a restarted agent: a new sequence space, a fresh history
    history.boot_id = report.boot_id();
  } else if (report.sequence() <= history.last_sequence) {
    return false;
  }
  history.last_sequence = report.sequence();

  // Where each pod runs: L3 domains and NUMA nodes of its exclusive CPUs,
  // else of its memory; unknown for a shared-pool pod without either.
  std::vector<std::pair<uint32_t, CpuSet>> domains;
  for (const tv1::L3Domain& l3 : report.topology().l3_domains()) {
    absl::StatusOr<CpuSet> cpus = ParseCpuList(l3.cpus());
    if (cpus.ok()) domains.emplace_back(l3.id(), *std::move(cpus));
  }
  std::map<uint32_t, uint32_t> numa_of_domain;
  for (const tv1::L3Domain& l3 : report.topology().l3_domains()) {
    numa_of_domain[l3.id()] = l3.numa_node();
  }
  Window window;
  window.sequence = report.sequence();
  for (const tv1::PodReport& pod : report.pods()) {
    PodWindow w;
    w.uid = pod.uid();
    w.pod = absl::StrCat(pod.namespace_(), "/", pod.name());
    w.workload = WorkloadKeyFromLabels(pod.namespace_(), pod.name(), pod.labels()).ToString();
    auto cls = pod.annotations().find(std::string(kClassAnnotation));
    w.latency_critical = cls != pod.annotations().end() && cls->second == "latency-critical";
    if (pod.has_ipc() && pod.ipc() > 0) w.cpi = 1.0 / pod.ipc();
    if (pod.has_membw_total_bytes_per_second()) {
      w.membw = static_cast<double>(pod.membw_total_bytes_per_second());
    } else if (pod.has_llc_misses_per_second()) {
      w.membw = static_cast<double>(pod.llc_misses_per_second()) * 64;  // a lower bound
    }
    if (pod.has_llc_occupancy_bytes()) w.occupancy = static_cast<double>(pod.llc_occupancy_bytes());
    if (!pod.exclusive_cpus().empty()) {
      absl::StatusOr<CpuSet> cpus = ParseCpuList(pod.exclusive_cpus());
      if (cpus.ok()) {
        for (const auto& [id, domain_cpus] : domains) {
          if (IntersectionSize(*cpus, domain_cpus) > 0) {
            w.l3_domains.insert(id);
            w.numa_nodes.insert(numa_of_domain[id]);
          }
        }
      }
    } else if (!pod.memory_bytes_by_numa().empty()) {
      for (const auto& [numa, bytes] : pod.memory_bytes_by_numa()) {
        if (bytes > 0) w.numa_nodes.insert(numa);
      }
    }
    window.pods.push_back(std::move(w));
  }
  ++windows_observed_;
  for (const PodWindow& w : window.pods) {
    if (!w.latency_critical || !w.cpi) continue;
    ReplicaCpi& replica = replica_cpi_[w.workload][w.uid];
    replica.cpi.push_back(*w.cpi);
    replica.last_seen = windows_observed_;
    while (replica.cpi.size() > options_.history_windows) replica.cpi.pop_front();
  }
  // Replicas that stopped reporting (gone, or their node went silent) for
  // about a history's worth of the fleet's windows leave the baselines.
  const size_t horizon = options_.history_windows * std::max<size_t>(1, nodes_.size());
  if (windows_observed_ % 256 == 0) {
    for (auto w = replica_cpi_.begin(); w != replica_cpi_.end();) {
      for (auto r = w->second.begin(); r != w->second.end();) {
        r = windows_observed_ - r->second.last_seen > horizon ? w->second.erase(r) : std::next(r);
      }
      w = w->second.empty() ? replica_cpi_.erase(w) : std::next(w);
    }
  }
  history.windows.push_back(std::move(window));
  while (history.windows.size() > options_.history_windows) history.windows.pop_front();
  Analyse(report.node_name(), history);
  return true;
}

void InterferenceTracker::Analyse(const std::string& node, NodeHistory& history) {
  std::vector<Victim> victims = FindVictims(node, history);
  // Streaks: a victim of this node's previous window continues; the others
  // of this node end.
  std::set<std::string> now;
  for (Victim& v : victims) {
    now.insert(v.uid);
    v.persisting_windows = ++streaks_[v.uid];
    for (const Suspect& s : v.suspects) ++antagonist_counts_[s.workload];
  }
  if (auto previous = findings_.find(node); previous != findings_.end()) {
    for (const Victim& v : previous->second) {
      if (!now.contains(v.uid)) streaks_.erase(v.uid);
    }
  }
  if (victims.empty()) {
    findings_.erase(node);
  } else {
    findings_[node] = std::move(victims);
  }
}

std::vector<Victim> InterferenceTracker::FindVictims(const std::string& node,
                                                     const NodeHistory& history) const {
  std::vector<Victim> out;
  if (history.windows.size() < options_.recent_windows) return out;
  const Window& latest = history.windows.back();
  for (const PodWindow& candidate : latest.pods) {
    if (!candidate.latency_critical || !candidate.cpi) continue;
    // Baseline: the other replicas' windows, on every node.
    std::vector<double> baseline;
    if (auto replicas = replica_cpi_.find(candidate.workload); replicas != replica_cpi_.end()) {
      for (const auto& [uid, replica] : replicas->second) {
        if (uid != candidate.uid) baseline.insert(baseline.end(), replica.cpi.begin(), replica.cpi.end());
      }
    }
    if (baseline.size() < options_.min_baseline_samples) continue;
    const double mean = Mean(baseline);
    const double spread = std::max(Stddev(baseline, mean), options_.min_relative_spread * mean);
    const double limit = mean + options_.sigma * spread;

    // The candidate's own series over the history, and its recent windows.
    std::vector<uint64_t> sequences;
    std::vector<double> cpi;
    for (const Window& w : history.windows) {
      for (const PodWindow& p : w.pods) {
        if (p.uid == candidate.uid && p.cpi) {
          sequences.push_back(w.sequence);
          cpi.push_back(*p.cpi);
        }
      }
    }
    const size_t recent = std::min(options_.recent_windows, cpi.size());
    size_t above = 0;
    double recent_sum = 0;
    for (size_t i = cpi.size() - recent; i < cpi.size(); ++i) {
      above += cpi[i] > limit ? 1 : 0;
      recent_sum += cpi[i];
    }
    if (above < options_.victim_windows) continue;

    Victim v;
    v.node = node;
    v.pod = candidate.pod;
    v.uid = candidate.uid;
    v.workload = candidate.workload;
    v.cpi = recent_sum / static_cast<double>(recent);
    v.baseline_cpi = mean;
    v.baseline_stddev = spread;
    v.windows_above = above;
    v.recent_windows = recent;

    // Co-runners: their bandwidth and occupancy over the same windows.
    struct Series {
      PodWindow last;
      std::vector<double> cpi, membw, cpi_o, occupancy;
    };
    std::map<std::string, Series> corunners;
    for (const Window& w : history.windows) {
      std::optional<double> victim_cpi;
      for (const PodWindow& p : w.pods) {
        if (p.uid == candidate.uid) victim_cpi = p.cpi;
      }
      if (!victim_cpi) continue;
      for (const PodWindow& p : w.pods) {
        if (p.uid == candidate.uid || p.workload == candidate.workload) continue;
        Series& s = corunners[p.uid];
        s.last = p;
        if (p.membw) {
          s.cpi.push_back(*victim_cpi);
          s.membw.push_back(*p.membw);
        }
        if (p.occupancy) {
          s.cpi_o.push_back(*victim_cpi);
          s.occupancy.push_back(*p.occupancy);
        }
      }
    }
    double total_membw = 0, total_occupancy = 0;
    for (const auto& [uid, s] : corunners) {
      total_membw += Mean(s.membw);
      total_occupancy += Mean(s.occupancy);
    }
    for (const auto& [uid, s] : corunners) {
      // Shares what with the victim: an L3 domain, a NUMA node, or (placement
      // unknown on either side) the node.
      std::string shares;
      const std::set<uint32_t> l3 = Intersect(candidate.l3_domains, s.last.l3_domains);
      const std::set<uint32_t> numa = Intersect(candidate.numa_nodes, s.last.numa_nodes);
      const bool unknown = candidate.numa_nodes.empty() || s.last.numa_nodes.empty();
      if (!l3.empty()) {
        shares = absl::StrCat("L3 domain ", absl::StrJoin(l3, ","));
        if (!numa.empty()) absl::StrAppend(&shares, ", NUMA node ", absl::StrJoin(numa, ","));
      } else if (!numa.empty()) {
        shares = absl::StrCat("NUMA node ", absl::StrJoin(numa, ","));
      } else if (unknown) {
        shares = "node (placement of one of them unknown)";
      } else {
        continue;  // on another socket: neither cache nor memory controller shared
      }
      Suspect suspect;
      suspect.pod = s.last.pod;
      suspect.uid = uid;
      suspect.workload = s.last.workload;
      suspect.shares = shares;
      suspect.mean_membw_bytes_per_second = Mean(s.membw);
      suspect.mean_llc_occupancy_bytes = Mean(s.occupancy);
      if (s.membw.size() >= options_.min_correlation_windows) {
        suspect.bandwidth_correlation = Correlation(s.cpi, s.membw);
      }
      if (s.occupancy.size() >= options_.min_correlation_windows) {
        suspect.occupancy_correlation = Correlation(s.cpi_o, s.occupancy);
      }
      const double bw_share = total_membw > 0 ? suspect.mean_membw_bytes_per_second / total_membw : 0;
      const double occ_share =
          total_occupancy > 0 ? suspect.mean_llc_occupancy_bytes / total_occupancy : 0;
      const double by_bw = std::max(0.0, suspect.bandwidth_correlation) * (0.5 + 0.5 * bw_share);
      const double by_occ = std::max(0.0, suspect.occupancy_correlation) * (0.5 + 0.5 * occ_share);
      suspect.score = std::min(1.0, std::max(by_bw, by_occ));
      const double r = std::max(suspect.bandwidth_correlation, suspect.occupancy_correlation);
      if (r < options_.min_correlation || suspect.score < options_.min_score) continue;
      v.suspects.push_back(std::move(suspect));
    }
    std::sort(v.suspects.begin(), v.suspects.end(), [](const Suspect& a, const Suspect& b) {
      return a.score != b.score ? a.score > b.score : a.pod < b.pod;
    });
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const Victim& a, const Victim& b) { return a.pod < b.pod; });
  return out;
}

InterferenceView InterferenceTracker::View() const {
  std::lock_guard<std::mutex> lock(mu_);
  InterferenceView view;
  view.windows_observed = windows_observed_;
  for (const auto& [node, history] : nodes_) view.per_node[node] = {0, 0};
  for (const auto& [node, victims] : findings_) {
    for (const Victim& v : victims) {
      view.victims.push_back(v);
      view.per_node[node].first += 1;
      view.per_node[node].second += static_cast<int>(v.suspects.size());
    }
  }
  view.antagonist_counts = antagonist_counts_;
  for (const auto& [workload, count] : antagonist_counts_) {
    if (count >= options_.repeat_offender_count) view.repeat_antagonists.push_back(workload);
  }
  return view;
}

std::set<std::string> InterferenceTracker::RepeatAntagonists() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [workload, count] : antagonist_counts_) {
    if (count >= options_.repeat_offender_count) out.insert(workload);
  }
  return out;
}

}  // namespace neighborly::extender
