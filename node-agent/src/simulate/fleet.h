// Streams a simulated fleet: every node's report goes to its publisher once per
// interval (or the interval an extender asked for in its acks) until stopped.
//
//   std::vector<SimulatedNode> nodes = ...;            // from a Scenario
//   std::vector<std::unique_ptr<ReportPublisher>> publishers = ...;  // one per node
//   absl::Notification stop;                           // notified on SIGTERM
//   RunFleet(nodes, publishers, absl::Seconds(1), stop);
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_FLEET_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_FLEET_H_

#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "node-agent/src/report/publisher.h"
#include "node-agent/src/simulate/node_report.h"

namespace neighborly::agent {

// `publishers[i]` carries `nodes[i]`. The first report of each node goes out at
// once (covering the interval before start); each later one covers the real time
// since the previous. Returns when `stop` is notified.
void RunFleet(std::vector<SimulatedNode>& nodes,
              const std::vector<std::unique_ptr<ReportPublisher>>& publishers,
              absl::Duration interval, absl::Notification& stop);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_FLEET_H_
