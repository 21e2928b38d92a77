// A bounded log of recent filter/prioritize decisions, for explanations
// ("why did pod X not go to node Y?"). Bounded by records and by the total
// number of per-node entries, whichever is reached first; oldest go first.
//
// Records are compact, because one is written on every scheduler request
// (500-5,000 nodes): a record keeps every rejected node (with its reason) and
// the kTopFeasible best-scored feasible nodes, and counts the rest; node names
// and reasons are packed into one string each, the per-node numbers into one
// flat array; nothing per node allocates. They are expanded into
// NodeDecisions only when someone asks. (Keeping all 5,000 nodes of every
// request would hold only the last ~40 requests, a few hundredths of a
// second of scheduling at 700 pods/s, and cost a request ~15 % of its time.)
//
//   std::shared_ptr<LoggedDecision> d = log.NewRecord();
//   d->AddNodes(names, decisions);
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
  std::string verb;  // "filter" | "prioritize" | "placement.filter" | ... (DecisionRecord::verb)
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource class_source = ClassSource::kDefault;
  std::string booked_node;    // prioritize / placement.reserve: where the footprint was booked
  std::string released_node;  // placement.unreserve: where a booking was released
  std::string workload;       // the pod's workload key, "namespace/Kind/name"
  std::string prediction;     // where its footprint came from (PodRequest::prediction)
  size_t candidates = 0;      // nodes in the request; candidates - node_count() were not kept

  // Feasible nodes kept per AddNodes call: the best by score, then by cost.
  static constexpr size_t kTopFeasible = 16;

  // Empties the record, keeping its buffers' capacity.
  void Clear();

  // Keeps, in input order, every infeasible node of `nodes` and the
  // kTopFeasible best feasible ones (parallel spans); counts all as candidates.
  void AddNodes(std::span<const std::string_view> nodes, std::span<const NodeDecision> decisions);
  // Keeps one node (a candidate).
  void AddNode(std::string_view node, const NodeDecision& decision);

  size_t node_count() const { return per_node_.size(); }
  std::string_view node(size_t i) const;
  NodeDecision decision(size_t i) const;  // as the model returned it

 private:
  // 48 bytes per node: the terms are kept at float precision (7 digits, ample
  // for an explanation), which halves what a 5,000-name request writes here.
  struct PerNode {
    uint32_t name_end;    // into names_
    uint32_t reason_end;  // into reasons_
    float cost, confidence, l3_pressure, membw_utilisation, harm_to_incoming, harm_to_residents,
        numa_penalty, unmeasured_penalty, predicted_slowdown, worst_resident_slowdown;
    int16_t numa_node, l3_domain;
    int8_t score;
    uint8_t flags;  // kFeasible | kHasTelemetry
    // The kubelet's predicted pinning (issue 14), for the explanation.
    int16_t exclusive_cpus, first_cpu;
    // bit 0 full cores, bit 1 spans NUMA nodes, bits 2-3 topology policy, bit 4 least harm
    uint8_t placement;
  };
  static constexpr uint8_t kFeasible = 1;
  static constexpr uint8_t kHasTelemetry = 2;
  static PerNode Pack(uint32_t name_end, uint32_t reason_end, const NodeDecision& d);
  void Append(std::string_view node, const NodeDecision& d);  // one kept node
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
