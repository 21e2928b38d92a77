// From a scenario node to the NodeReports a real agent on that node would send.
//
// DeriveNodeMeasurements completes a node template the way the real collectors
// would: the shared CPU pool, per-L3-domain occupancy and bandwidth and per-NUMA
// bandwidth as sums over the pods (unless the scenario gives them), and the
// `unavailable` reason of every pod measurement that is absent. SimulatedNode
// then stamps identity, sequence and window on each report:
//
//   SimulatedNode node(scenario.nodes[0], NewBootId());
//   telemetry::v1::NodeReport r = node.NextReport(window_start, absl::Seconds(1));  // sequence 1
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_NODE_REPORT_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_NODE_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::agent {

// Expects a template whose cpu lists are canonical (as the parser writes them).
// Attribution of a pod's L3 occupancy and bandwidth to L3 domains:
//   - a pod with exclusive cpus: in proportion to its cpus in each domain;
//   - else a pod with memoryBytesByNuma: in proportion to its memory on each NUMA
//     node (Linux's NUMA balancing runs tasks near their memory), split over that
//     NUMA node's domains by their shared-pool cpus;
//   - else: in proportion to the shared-pool cpus in each domain.
// A sum is present when its capability is available and at least one pod gives
// the measurement (or the node has no pods: an idle node measures zero).
void DeriveNodeMeasurements(telemetry::v1::NodeReport* node);

// A random RFC 4122 version-4 UUID, the shape of /proc/sys/kernel/random/boot_id.
// Each simulator run gets a new one so the extender sees a fresh sequence space.
std::string NewBootId();

class SimulatedNode {
 public:
  // `timeline` (issue 26): the node's per-window series, if it has any.
  SimulatedNode(telemetry::v1::NodeReport report_template, std::string boot_id,
                NodeTimeline timeline = {});

  const std::string& name() const { return template_.node_name(); }

  // The report for the window [window_start, window_start + window_duration);
  // sequence numbers start at 1 and increase by one per call.
  telemetry::v1::NodeReport NextReport(absl::Time window_start, absl::Duration window_duration);

 private:
  telemetry::v1::NodeReport template_;
  NodeTimeline timeline_;
  uint64_t sequence_ = 0;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_NODE_REPORT_H_
