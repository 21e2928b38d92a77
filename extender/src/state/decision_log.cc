#include "extender/src/state/decision_log.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

namespace neighborly::extender {

void LoggedDecision::Clear() {
  at = absl::Time();
  verb.clear();
  pod_uid.clear();
  pod_namespace.clear();
  pod_name.clear();
  contention_class = ContentionClass::kStandard;
  class_source = ClassSource::kDefault;
  booked_node.clear();
  released_node.clear();
  workload.clear();
  prediction.clear();
  candidates = 0;
  names_.clear();
  reasons_.clear();
  per_node_.clear();
}

LoggedDecision::PerNode LoggedDecision::Pack(uint32_t name_end, uint32_t reason_end,
                                             const NodeDecision& d) {
  auto narrow = [](int32_t v) {
    return static_cast<int16_t>(std::clamp<int32_t>(v, INT16_MIN, INT16_MAX));
  };
  return PerNode{
      name_end,
      reason_end,
      static_cast<float>(d.cost),
      static_cast<float>(d.confidence),
      static_cast<float>(d.l3_pressure),
      static_cast<float>(d.membw_utilisation),
      static_cast<float>(d.harm_to_incoming),
      static_cast<float>(d.harm_to_residents),
      static_cast<float>(d.numa_penalty),
      static_cast<float>(d.unmeasured_penalty),
      static_cast<float>(d.predicted_slowdown),
      static_cast<float>(d.worst_resident_slowdown),
      narrow(d.numa_node),
      narrow(d.l3_domain),
      static_cast<int8_t>(d.score),
      static_cast<uint8_t>((d.feasible ? kFeasible : 0) | (d.has_telemetry ? kHasTelemetry : 0)),
      narrow(d.exclusive_cpus),
      narrow(d.first_cpu),
      static_cast<uint8_t>((d.full_cores ? 1 : 0) | (d.spans_numa ? 2 : 0) |
                           ((d.topology_policy & 3) << 2) | (d.least_harm ? 16 : 0))};
}

void LoggedDecision::AddNodes(std::span<const std::string_view> nodes,
                              std::span<const NodeDecision> decisions) {
  const size_t n = std::min(nodes.size(), decisions.size());
  candidates += n;
  // The kTopFeasible best feasible nodes: a small sorted array, worst last,
  // that a node enters only when it beats the worst kept.
  auto better = [&](size_t a, size_t b) {
    const NodeDecision& x = decisions[a];
    const NodeDecision& y = decisions[b];
    return x.score != y.score ? x.score > y.score : x.cost < y.cost;
  };
  std::array<size_t, kTopFeasible> top;
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!decisions[i].feasible) continue;
    if (kept == kTopFeasible && !better(i, top[kept - 1])) continue;
    size_t slot = kept < kTopFeasible ? kept++ : kept - 1;
    while (slot > 0 && better(i, top[slot - 1])) {
      top[slot] = top[slot - 1];
      --slot;
    }
    top[slot] = i;
  }
  std::sort(top.begin(), top.begin() + kept);  // back to input order
  // Records are recycled with their buffers (DecisionLog::NewRecord), so the
  // appends below reuse the capacity an earlier request grew.
  size_t next_top = 0;
  for (size_t i = 0; i < n; ++i) {
    if (decisions[i].feasible) {
      if (next_top == kept || top[next_top] != i) continue;
      ++next_top;
    }
    Append(nodes[i], decisions[i]);
  }
}

void LoggedDecision::AddNode(std::string_view node, const NodeDecision& d) {
  ++candidates;
  Append(node, d);
}

void LoggedDecision::Append(std::string_view node, const NodeDecision& d) {
  names_.append(node);
  if (!d.feasible) reasons_.append(d.reason);
  per_node_.push_back(
      Pack(static_cast<uint32_t>(names_.size()), static_cast<uint32_t>(reasons_.size()), d));
}

std::string_view LoggedDecision::node(size_t i) const {
  const uint32_t begin = i == 0 ? 0 : per_node_[i - 1].name_end;
  return std::string_view(names_).substr(begin, per_node_[i].name_end - begin);
}

NodeDecision LoggedDecision::decision(size_t i) const {
  const PerNode& p = per_node_[i];
  const uint32_t reason_begin = i == 0 ? 0 : per_node_[i - 1].reason_end;
  NodeDecision d;
  d.feasible = (p.flags & kFeasible) != 0;
  d.reason = reasons_.substr(reason_begin, p.reason_end - reason_begin);
  d.score = p.score;
  d.cost = p.cost;
  d.confidence = p.confidence;
  d.has_telemetry = (p.flags & kHasTelemetry) != 0;
  d.l3_pressure = p.l3_pressure;
  d.membw_utilisation = p.membw_utilisation;
  d.harm_to_incoming = p.harm_to_incoming;
  d.harm_to_residents = p.harm_to_residents;
  d.numa_penalty = p.numa_penalty;
  d.unmeasured_penalty = p.unmeasured_penalty;
  d.predicted_slowdown = p.predicted_slowdown;
  d.worst_resident_slowdown = p.worst_resident_slowdown;
  d.numa_node = p.numa_node;
  d.l3_domain = p.l3_domain;
  d.exclusive_cpus = p.exclusive_cpus;
  d.first_cpu = p.first_cpu;
  d.full_cores = (p.placement & 1) != 0;
  d.spans_numa = (p.placement & 2) != 0;
  d.topology_policy = static_cast<uint8_t>((p.placement >> 2) & 3);
  d.least_harm = (p.placement & 16) != 0;
  return d;
}

DecisionLog::DecisionLog(size_t max_records, size_t max_node_entries)
    : max_records_(max_records == 0 ? 1 : max_records), max_node_entries_(max_node_entries) {}

std::shared_ptr<LoggedDecision> DecisionLog::NewRecord() {
  std::shared_ptr<LoggedDecision> record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_.empty()) {
      record = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  if (record == nullptr) return std::make_shared<LoggedDecision>();
  record->Clear();
  return record;
}

void DecisionLog::Record(std::shared_ptr<const LoggedDecision> decision) {
  if (decision == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  node_entries_ += decision->node_count();
  records_.push_back(std::move(decision));
  // Always keep the newest record, even when it alone exceeds the entry budget.
  while (records_.size() > 1 &&
         (records_.size() > max_records_ || node_entries_ > max_node_entries_)) {
    node_entries_ -= records_.front()->node_count();
    // Reusable when only the log holds it (no Find() result still refers to it).
    if (records_.front().use_count() == 1 && spare_.size() < kMaxSpare) {
      spare_.push_back(std::const_pointer_cast<LoggedDecision>(std::move(records_.front())));
    }
    records_.pop_front();
  }
}

std::vector<std::shared_ptr<const LoggedDecision>> DecisionLog::Find(std::string_view pod,
                                                                     size_t limit) const {
  std::vector<std::shared_ptr<const LoggedDecision>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = records_.rbegin(); it != records_.rend() && out.size() < limit; ++it) {
    const LoggedDecision& d = **it;
    const bool match = pod.empty() || pod == d.pod_uid || pod == d.pod_name ||
                       (pod.size() == d.pod_namespace.size() + 1 + d.pod_name.size() &&
                        pod.substr(0, d.pod_namespace.size()) == d.pod_namespace &&
                        pod[d.pod_namespace.size()] == '/' &&
                        pod.substr(d.pod_namespace.size() + 1) == d.pod_name);
    if (match) out.push_back(*it);
  }
  return out;
}

size_t DecisionLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

}  // namespace neighborly::extender
