// Prometheus text exposition of the agent's streams, for --metrics-address.
//
//   AppendStreamMetrics(publisher.streams(), page);
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_

#include <string>
#include <vector>

#include "common/prometheus_text.h"
#include "node-agent/src/report/report_stream.h"

namespace neighborly::agent {

// Counters and gauges per (node, extender) stream.
void AppendStreamMetrics(const std::vector<const ReportStream*>& streams, PrometheusWriter& page);
// The same alone, rendered (tests).
std::string RenderStreamMetrics(const std::vector<const ReportStream*>& streams);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
