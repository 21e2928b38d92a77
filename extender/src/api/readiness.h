// When a replica may answer the scheduler: /readyz says 200 only once it has
// heard from the agents, so that a restarted replica is not routed requests
// while it knows no node (unknown nodes score neutrally: it would silently
// decide nothing). The rule (docs/operations.md, "When a replica is ready"):
//
//  - its state file knew N > 0 nodes: ready once ceil(known_node_share * N)
//    nodes have reported since start, or once max_wait has passed (the fleet
//    shrank while it was down);
//  - no state file (or one that knew none): ready once report_interval +
//    grace have passed since start, the time in which every live agent has
//    reconnected (backoff capped at 5 s) and sent a report.
//
// Once ready it stays ready (nodes aging out later do not flap the Service).
//
//   Readiness readiness({.known_node_share = 0.9}, core.nodes_in_loaded_state(), clock);
//   std::string why_not = readiness.Check(core.node_count());   // "" when ready
#ifndef NEIGHBORLY_EXTENDER_SRC_API_READINESS_H_
#define NEIGHBORLY_EXTENDER_SRC_API_READINESS_H_

#include <atomic>
#include <cstddef>
#include <string>

#include "absl/time/time.h"
#include "common/clock.h"

namespace neighborly::extender {

struct ReadinessRule {
  absl::Duration report_interval = absl::Seconds(1);
  absl::Duration grace = absl::Seconds(6);
  double known_node_share = 0.9;
  absl::Duration max_wait = absl::Seconds(60);
};

class Readiness {
 public:
  // Starts the clock now. `nodes_in_state`: nodes with telemetry when the
  // loaded state file was saved (0: none).
  Readiness(ReadinessRule rule, size_t nodes_in_state, const Clock& clock);

  // "" when ready, else why not (the /readyz body). `nodes_reported`: nodes
  // with telemetry now, all heard since start (telemetry is not persisted).
  std::string Check(size_t nodes_reported) const;

  // The nodes that must report before the state-file rule is met (0: the time rule applies).
  size_t nodes_needed() const { return nodes_needed_; }

 private:
  const ReadinessRule rule_;
  const size_t nodes_in_state_;
  const size_t nodes_needed_;
  const Clock& clock_;
  const absl::Duration start_;
  mutable std::atomic<bool> ready_{false};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_READINESS_H_
