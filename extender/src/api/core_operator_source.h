// The operator API's view of the running extender: ExtenderCore for nodes and
// decisions, the ingest server for its counters. Header-only; main links
// neighborly_core.
#ifndef NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_
#define NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_

#include <algorithm>
#include <functional>
#include <utility>

#include "extender/src/api/operator_api.h"
#include "extender/src/core/extender_core.h"

namespace neighborly::extender {

class CoreOperatorSource final : public OperatorSource {
 public:
  CoreOperatorSource(const ExtenderCore& core, std::function<IngestStats()> ingest)
      : core_(core), ingest_(std::move(ingest)) {}
  std::vector<NodeSummary> Nodes() const override { return core_.Nodes(); }
  std::optional<NodeSummary> Node(std::string_view name) const override { return core_.Node(name); }
  std::vector<DecisionRecord> Decisions(std::string_view pod, size_t limit) const override {
    return core_.Decisions(pod, limit);
  }
  IngestStats Ingest() const override { return ingest_ ? ingest_() : IngestStats{}; }
  std::vector<WorkloadView> Workloads() const override { return core_.Workloads(); }
  std::optional<WorkloadView> Workload(std::string_view key) const override {
    return core_.Workload(key);
  }
  WorkloadCounts WorkloadCountsNow() const override {
    return {core_.workload_profiles(), core_.workload_capacity(),
            core_.workload_predictions_used()};
  }
  std::optional<NodeMemoryView> NodeMemory(std::string_view name) const override {
    std::optional<telemetry::v1::NodeReport> report = core_.Report(name);
    if (!report.has_value()) return std::nullopt;
    return BuildNodeMemoryView(*report);
  }
  std::vector<NodeMemoryView> Memory() const override {
    std::vector<NodeMemoryView> out;
    core_.ForEachReport(
        [&out](const telemetry::v1::NodeReport& r) { out.push_back(BuildNodeMemoryView(r)); });
    std::sort(out.begin(), out.end(),
              [](const NodeMemoryView& a, const NodeMemoryView& b) { return a.node < b.node; });
    return out;
  }
  // The tracker fed by the extender's interference observer (main.cc); none:
  // /v1/interference reports no windows observed.
  // `scorer` (the same core, writable) scores the rebalancing advice's targets.
  // `rebalance`: the advice's hysteresis and size (config keys rebalance.*).
  void set_interference(const InterferenceTracker* tracker, ExtenderCore* scorer = nullptr,
                        RebalanceOptions rebalance = {}) {
    interference_ = tracker;
    scorer_ = scorer;
    rebalance_ = rebalance;
  }
  std::vector<MoveProposal> Rebalance() const override {
    return scorer_ != nullptr ? ProposeMoves(*scorer_, Interference(), rebalance_)
                              : std::vector<MoveProposal>{};
  }
  InterferenceView Interference() const override {
    return interference_ != nullptr ? interference_->View() : InterferenceView{};
  }
  // A cold path: copies every node's newest report once.
  std::optional<WorkloadAdvice> Advice(std::string_view workload) const override {
    std::vector<telemetry::v1::NodeReport> reports;
    core_.ForEachReport([&reports](const telemetry::v1::NodeReport& r) { reports.push_back(r); });
    std::vector<const telemetry::v1::NodeReport*> pointers;
    for (const telemetry::v1::NodeReport& r : reports) pointers.push_back(&r);
    return AdviseWorkload(std::string(workload), pointers, Interference());
  }

 private:
  const ExtenderCore& core_;
  const InterferenceTracker* interference_ = nullptr;
  ExtenderCore* scorer_ = nullptr;
  RebalanceOptions rebalance_;
  std::function<IngestStats()> ingest_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_
