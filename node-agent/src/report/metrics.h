// Prometheus text exposition of the agent's streams and of the replicas it
// resolved, for --metrics-address.
//
//   std::vector<StreamView> views;
//   publisher.AppendViews(views);
//   AppendStreamMetrics(views, page);
//   AppendReplicaMetrics(directory, page);
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/prometheus_text.h"
#include "node-agent/src/report/report_stream.h"

namespace neighborly::agent {

class ReplicaDirectory;

// One stream's identity and counters, copied (streams come and go with the
// replicas, so /metrics never holds a pointer to one).
struct StreamView {
  std::string node;
  std::string target;   // the --extender value
  std::string address;  // the replica's address
  ReportStream::Stats stats;
};
StreamView ViewOf(const ReportStream& stream);

// Counters and gauges per (node, replica) stream, labelled node, extender (the
// replica's address) and target; the age of the newest ack against `now`.
void AppendStreamMetrics(const std::vector<StreamView>& streams, PrometheusWriter& page,
                         absl::Time now = absl::Now());
void AppendStreamMetrics(const std::vector<const ReportStream*>& streams, PrometheusWriter& page);
// The same alone, rendered (tests).
std::string RenderStreamMetrics(const std::vector<const ReportStream*>& streams);

// Per --extender target: the replicas it resolves to now, and resolutions by result.
void AppendReplicaMetrics(const ReplicaDirectory& directory, PrometheusWriter& page);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_METRICS_H_
