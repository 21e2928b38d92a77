#include "extender/src/state/decision_log.h"

namespace neighborly::extender {

DecisionLog::DecisionLog(size_t max_records, size_t max_node_entries)
    : max_records_(max_records == 0 ? 1 : max_records), max_node_entries_(max_node_entries) {}

void DecisionLog::Record(std::shared_ptr<const LoggedDecision> decision) {
  if (decision == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  node_entries_ += decision->nodes.size();
  records_.push_back(std::move(decision));
  // Always keep the newest record, even when it alone exceeds the entry budget.
  while (records_.size() > 1 &&
         (records_.size() > max_records_ || node_entries_ > max_node_entries_)) {
    node_entries_ -= records_.front()->nodes.size();
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
