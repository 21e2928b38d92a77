// The operator API on the extender's HTTP port (docs/http.md): /healthz,
// /readyz, /metrics (Prometheus text), /v1/nodes, /v1/nodes/{name},
// /v1/decisions, /v1/workloads, /v1/workloads/{namespace}/{kind}/{name}. Cold paths, rendered with
// nlohmann::json.
//
//   CoreOperatorSource source(core, [&] { return ingest.Stats(); });
//   RegisterOperatorApi(http.routes(), source, metrics, [&] { return ready_reason(); });
#ifndef NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_API_H_
#define NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_API_H_

#include <httplib.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extender/src/core/extender_core.h"
#include "extender/src/http/extender_metrics.h"
#include "extender/src/http/http_server.h"
#include "extender/src/model/interference_attribution.h"
#include "extender/src/model/memory_pressure.h"
#include "extender/src/model/workload_advice.h"
#include "extender/src/api/rebalance.h"

namespace neighborly::extender {

// What the operator API reads. Production: ExtenderCore plus the ingest
// server's counters (CoreOperatorSource, core_operator_source.h); tests: a fake.
class OperatorSource {
 public:
  virtual ~OperatorSource() = default;
  virtual std::vector<NodeSummary> Nodes() const = 0;
  virtual std::optional<NodeSummary> Node(std::string_view name) const = 0;
  virtual std::vector<DecisionRecord> Decisions(std::string_view pod, size_t limit) const = 0;
  virtual IngestStats Ingest() const = 0;
  // Workload profiles (/v1/workloads); a source without them has none.
  virtual std::vector<WorkloadView> Workloads() const { return {}; }
  virtual std::optional<WorkloadView> Workload(std::string_view /*key*/) const {
    return std::nullopt;
  }
  struct WorkloadCounts {
    size_t held = 0;
    size_t capacity = 0;
    uint64_t predictions_used = 0;
  };
  virtual WorkloadCounts WorkloadCountsNow() const { return {}; }
  // Issue 26 (isolation_api.h): a node's memory pressure and eviction view,
  // every node's (for /metrics), and who is hurting whom.
  virtual std::optional<NodeMemoryView> NodeMemory(std::string_view /*name*/) const {
    return std::nullopt;
  }
  virtual std::vector<NodeMemoryView> Memory() const { return {}; }
  virtual InterferenceView Interference() const { return {}; }
  virtual std::optional<WorkloadAdvice> Advice(std::string_view /*workload*/) const {
    return std::nullopt;
  }
  virtual std::vector<MoveProposal> Rebalance() const { return {}; }
};

// Returns "" when ready to answer the scheduler, else why not.
using ReadinessCheck = std::function<std::string()>;

// What /metrics shows beyond the request counters and the fleet aggregates
// (docs/metrics.md).
struct MetricsPage {
  // metrics.perNodeSeries: the neighborly_node_* gauges, about 11 series per
  // node on every replica. Off: only the neighborly_fleet_* aggregates.
  bool per_node_series = true;
  // Families the binary adds: ingest refusals, state, build info, process_*.
  std::function<void(PrometheusWriter&)> append;
};

// Registers the GET routes. `source`, `metrics` and `ready` must outlive the server.
void RegisterOperatorApi(HttpRoutes& server, const OperatorSource& source,
                         const ExtenderMetrics& metrics, ReadinessCheck ready,
                         MetricsPage metrics_page = {});

// The JSON documents of /v1 (docs/http.md), exposed for tests and neighborlyctl.
nlohmann::json NodeSummaryJson(const NodeSummary& node, bool with_pods);
nlohmann::json DecisionRecordJson(const DecisionRecord& record);
nlohmann::json WorkloadViewJson(const WorkloadView& workload);
// The ingest, workload, fleet and (with per_node_series) per-node families.
void AppendOperatorMetrics(const OperatorSource& source, const MetricsPage& options,
                           PrometheusWriter& page);
// The whole /metrics page: `metrics`' families, AppendOperatorMetrics and
// options.append's.
std::string RenderMetrics(const OperatorSource& source, const ExtenderMetrics& metrics,
                          const MetricsPage& options = {});

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_API_H_
