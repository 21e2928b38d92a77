// A bounded log of recent filter/prioritize decisions, for explanations
// ("why did pod X not go to node Y?"). Bounded by records and by the total
// number of per-node entries, whichever is reached first; oldest go first.
//
// Records are compact, because one is written on every scheduler request
// (500-5,000 nodes): node names and rejection reasons are packed into one
// string each, the per-node numbers into one flat array; nothing per node
// allocates. They are expanded into NodeDecisions only when someone asks.
//
//   std::shared_ptr<LoggedDecision> d = log.NewRecord();
//   d->AddNode("node-1", decision);  ...
//   log.Record(std::move(d));
//   std::vector<std::shared_ptr<const LoggedDecision>> d = log.Find("content/article", 5);
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
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
  std::string booked_node;  // prioritize: where the footprint was booked

  // Empties the record, keeping its buffers' capacity.
  void Clear();

  // Appends the decisions for `nodes` (parallel spans), in input order.
  void AddNodes(std::span<const std::string_view> nodes, std::span<const NodeDecision> decisions);
  void AddNode(std::string_view node, const NodeDecision& decision);

  size_t node_count() const { return per_node_.size(); }
  std::string_view node(size_t i) const;
  NodeDecision decision(size_t i) const;  // as the model returned it

 private:
  struct PerNode {
    uint32_t name_end;    // into names_
    uint32_t reason_end;  // into reasons_
    double cost, confidence, l3_pressure, membw_utilisation, harm_to_incoming, harm_to_residents,
        numa_penalty;
    int32_t numa_node, l3_domain;
    int8_t score;
    bool feasible, has_telemetry;
  };
  std::string names_;
  std::string reasons_;
  std::vector<PerNode> per_node_;
};

class DecisionLog {
 public:
  explicit DecisionLog(size_t max_records = 1000, size_t max_node_entries = 200'000);

  // A record to fill and pass to Record(): an evicted one whose buffers are
  // reused when no reader holds it any more (so that a steady stream of
  // requests allocates nothing), else a new one.
  std::shared_ptr<LoggedDecision> NewRecord();

  void Record(std::shared_ptr<const LoggedDecision> decision);

  // Newest first; `pod` matches the uid, "namespace/name" or the bare name.
  // An empty `pod` matches everything.
  std::vector<std::shared_ptr<const LoggedDecision>> Find(std::string_view pod, size_t limit) const;

  size_t size() const;

 private:
  const size_t max_records_;
  const size_t max_node_entries_;
  static constexpr size_t kMaxSpare = 4;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const LoggedDecision>> records_;  // back: newest
  std::vector<std::shared_ptr<LoggedDecision>> spare_;         // evicted, reusable
  size_t node_entries_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_DECISION_LOG_H_
