// The operator API's view of the running extender: ExtenderCore for nodes and
// decisions, the ingest server for its counters. Header-only; main links
// neighborly_core.
#ifndef NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_
#define NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_

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

 private:
  const ExtenderCore& core_;
  std::function<IngestStats()> ingest_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_CORE_OPERATOR_SOURCE_H_
