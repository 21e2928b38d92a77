// Rebalancing advice (issue 26, docs/operations.md "Rebalancing"): for each
// interference victim that persists, which pod to move and where, judged by
// the placement model. Advice only: the extender evicts nothing; the optional
// neighborly-rebalancer (scheduler/cmd/neighborly-rebalancer) acts on it
// through the Eviction API (docs/security.md, "The rebalancer").
//
// Rules: a victim qualifies after `min_persisting_windows` consecutive
// windows as a victim (hysteresis) and with a named suspect. The pod moved is
// the top suspect, unless it is the more expensive to move: Guaranteed with
// exclusive CPUs while the victim is not (cores to find again), or itself
// latency-critical (a serving replica; a batch job restarts). Targets are
// every other node with telemetry, scored by ExtenderCore::Score as the
// scheduler would score the pod (nothing is booked); the best feasible one
// wins. At most `max_moves` proposals, one per victim node, the longest
// persisting victims first.
//
//   std::vector<MoveProposal> moves = ProposeMoves(core, interference, {});
#ifndef NEIGHBORLY_EXTENDER_SRC_API_REBALANCE_H_
#define NEIGHBORLY_EXTENDER_SRC_API_REBALANCE_H_

#include <string>
#include <vector>

#include "extender/src/core/extender_core.h"
#include "extender/src/model/interference_attribution.h"

namespace neighborly::extender {

struct RebalanceOptions {
  size_t min_persisting_windows = 10;
  size_t max_moves = 5;
};

struct MoveProposal {
  std::string victim;      // "namespace/name"
  std::string victim_node;
  size_t persisting_windows = 0;
  std::string move;        // the pod to move, "namespace/name"
  std::string move_uid;
  std::string from_node;
  std::string to_node;     // empty: no node takes it
  int score = 0;           // the target's score, 0..10
  std::string why;         // why this pod, and why that node
  std::vector<std::string> refused;  // other nodes and why not
};

// `core` scores the candidates (ExtenderCore::Score books nothing; it is not
// const because the evaluation shares the request path's caches).
std::vector<MoveProposal> ProposeMoves(ExtenderCore& core,
                                       const InterferenceView& interference,
                                       const RebalanceOptions& options = {});

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_REBALANCE_H_
