// The operator API's isolation views (issue 26, docs/operations.md): a node's
// memory pressure and eviction order, GET /v1/nodes/{name}/memory, and who is
// hurting whom, GET /v1/interference, with their /metrics families.
//
//   RegisterIsolationApi(routes, source);          // from RegisterOperatorApi
//   AppendIsolationMetrics(source, true, page);    // from AppendOperatorMetrics
#ifndef NEIGHBORLY_EXTENDER_SRC_API_ISOLATION_API_H_
#define NEIGHBORLY_EXTENDER_SRC_API_ISOLATION_API_H_

#include <nlohmann/json.hpp>

#include "common/prometheus_text.h"
#include "extender/src/api/operator_api.h"
#include "extender/src/http/http_server.h"
#include "extender/src/model/interference_attribution.h"
#include "extender/src/model/memory_pressure.h"

namespace neighborly::extender {

void RegisterIsolationApi(HttpRoutes& server, const OperatorSource& source);

// neighborly_fleet_* aggregates always; neighborly_node_* per node when
// `per_node_series`.
void AppendIsolationMetrics(const OperatorSource& source, bool per_node_series,
                            PrometheusWriter& page);

// The JSON documents (docs/http.md), for tests and neighborlyctl.
nlohmann::json NodeMemoryJson(const NodeMemoryView& view);
nlohmann::json InterferenceJson(const InterferenceView& view);
nlohmann::json WorkloadAdviceJson(const WorkloadAdvice& advice);
nlohmann::json MoveProposalsJson(const std::vector<MoveProposal>& moves);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_ISOLATION_API_H_
