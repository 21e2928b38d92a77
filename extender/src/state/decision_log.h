// A bounded log of recent filter/prioritize decisions, for explanations
// ("why did pod X not go to node Y?"). Bounded by records and by the total
// number of per-node entries, whichever is reached first; oldest go first.
//
//   log.Record(std::move(entry));
//   std::vector<std::shared_ptr<const LoggedDecision>> d = log.Find("content/article", 5);
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

struct LoggedDecision {
  absl::Time at;
  std::string verb;  // "filter" | "prioritize"
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource class_source = ClassSource::kDefault;
  std::vector<std::string> nodes;       // input order
  std::vector<NodeDecision> decisions;  // parallel to nodes
  std::string booked_node;              // prioritize: where the footprint was booked
};

class DecisionLog {
 public:
  explicit DecisionLog(size_t max_records = 1000, size_t max_node_entries = 200'000);

  void Record(std::shared_ptr<const LoggedDecision> decision);

  // Newest first; `pod` matches the uid, "namespace/name" or the bare name.
  // An empty `pod` matches everything.
  std::vector<std::shared_ptr<const LoggedDecision>> Find(std::string_view pod, size_t limit) const;

  size_t size() const;

 private:
  const size_t max_records_;
  const size_t max_node_entries_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const LoggedDecision>> records_;  // back: newest
  size_t node_entries_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_
