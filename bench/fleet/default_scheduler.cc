#include "bench/fleet/default_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

namespace neighborly::fleet {
namespace {

// The default system constraints (PodTopologySpread's defaultingType: System).
constexpr int64_t kHostnameMaxSkew = 3;
constexpr int64_t kZoneMaxSkew = 5;

// (capacity - requested) * 100 / capacity in integers, 0 when it does not fit:
// noderesources/least_allocated.go.
int64_t LeastRequested(int64_t requested, int64_t capacity) {
  if (capacity <= 0 || requested > capacity) return 0;
  return (capacity - requested) * kMaxNodeScore / capacity;
}

// scoreForCount in podtopologyspread/scoring.go.
double CountScore(int64_t count, int64_t max_skew, double weight) {
  return static_cast<double>(count) * weight + static_cast<double>(max_skew - 1);
}

}  // namespace

std::vector<size_t> FeasibleNodes(const std::vector<NodeLoad>& nodes, const PodRequest& pod) {
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeLoad& n = nodes[i];
    if (n.requested_millicores + pod.millicores <= n.allocatable_millicores &&
        n.requested_memory_bytes + pod.memory_bytes <= n.allocatable_memory_bytes) {
      out.push_back(i);
    }
  }
  return out;
}

int64_t LeastAllocatedScore(const NodeLoad& node, const PodRequest& pod) {
  const int64_t cpu =
      LeastRequested(node.requested_millicores + pod.millicores, node.allocatable_millicores);
  const int64_t memory =
      LeastRequested(node.requested_memory_bytes + pod.memory_bytes, node.allocatable_memory_bytes);
  return (cpu + memory) / 2;  // resources cpu and memory, weight 1 each
}

int64_t BalancedAllocationScore(const NodeLoad& node, const PodRequest& pod) {
  auto fraction = [](int64_t requested, int64_t capacity) {
    if (capacity <= 0) return 1.0;
    return std::min(1.0, static_cast<double>(requested) / static_cast<double>(capacity));
  };
  const double cpu =
      fraction(node.requested_millicores + pod.millicores, node.allocatable_millicores);
  const double memory =
      fraction(node.requested_memory_bytes + pod.memory_bytes, node.allocatable_memory_bytes);
  // The standard deviation of the fractions; for two resources |a - b| / 2
  // (noderesources/balanced_allocation.go).
  const double std_dev = std::abs(cpu - memory) / 2;
  return static_cast<int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

std::vector<int64_t> TopologySpreadScores(const std::vector<NodeLoad>& nodes,
                                          const std::vector<size_t>& feasible) {
  std::vector<int64_t> out(feasible.size(), 0);
  if (feasible.empty()) return out;
  // Pods matching per zone, over every node of a zone some feasible node is in.
  std::map<int, int64_t> zone_pods;
  for (size_t i : feasible) zone_pods[nodes[i].zone] = 0;
  for (const NodeLoad& n : nodes) {
    auto it = zone_pods.find(n.zone);
    if (it != zone_pods.end()) it->second += n.matching_pods;
  }
  // Each constraint weighs log(number of topology values + 2).
  const double hostname_weight = std::log(static_cast<double>(feasible.size()) + 2);
  const double zone_weight = std::log(static_cast<double>(zone_pods.size()) + 2);
  int64_t min_score = INT64_MAX, max_score = 0;
  for (size_t k = 0; k < feasible.size(); ++k) {
    const NodeLoad& n = nodes[feasible[k]];
    const double raw = CountScore(n.matching_pods, kHostnameMaxSkew, hostname_weight) +
                       CountScore(zone_pods[n.zone], kZoneMaxSkew, zone_weight);
    out[k] = static_cast<int64_t>(std::round(raw));
    min_score = std::min(min_score, out[k]);
    max_score = std::max(max_score, out[k]);
  }
  // NormalizeScore: fewer matching pods is better.
  for (int64_t& s : out) {
    s = max_score == 0 ? kMaxNodeScore : kMaxNodeScore * (max_score + min_score - s) / max_score;
  }
  return out;
}

std::vector<int64_t> ScoreNodes(const std::vector<NodeLoad>& nodes,
                                const std::vector<size_t>& feasible, const PodRequest& pod,
                                const PluginWeights& weights) {
  std::vector<int64_t> out(feasible.size(), 0);
  std::vector<int64_t> spread;
  if (pod.default_spread) spread = TopologySpreadScores(nodes, feasible);
  for (size_t k = 0; k < feasible.size(); ++k) {
    const NodeLoad& n = nodes[feasible[k]];
    out[k] = weights.least_allocated * LeastAllocatedScore(n, pod) +
             weights.balanced_allocation * BalancedAllocationScore(n, pod);
    if (!spread.empty()) out[k] += weights.topology_spread * spread[k];
  }
  return out;
}

size_t SelectHost(const std::vector<int64_t>& scores, std::mt19937_64& rng) {
  size_t chosen = 0;
  uint64_t tied = 0;
  int64_t best = INT64_MIN;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] > best) {
      best = scores[i];
      chosen = i;
      tied = 1;
    } else if (scores[i] == best) {
      ++tied;
      if (rng() % tied == 0) chosen = i;
    }
  }
  return chosen;
}

}  // namespace neighborly::fleet
