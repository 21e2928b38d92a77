// Prometheus text exposition of the agent's streams, for --metrics-address.
//
//   std::string body = RenderStreamMetrics(publisher.streams());
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_

#include <string>
#include <vector>

#include "node-agent/src/report/report_stream.h"

namespace neighborly::agent {

// Counters and gauges per (node, extender) stream, plus build info; valid text
// format 0.0.4 (each family's HELP and TYPE once, label values escaped).
std::string RenderStreamMetrics(const std::vector<const ReportStream*>& streams);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
