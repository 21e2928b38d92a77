// The seam between the HTTP transport and the decision core: the transport
// decodes a request, asks a Decider, encodes the answer. Tests give the HTTP
// layer a fake Decider; production wires in the core backed by cluster state.
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_DECIDER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_DECIDER_H_

#include <span>
#include <string_view>
#include <vector>

#include "extender/src/model/types.h"

namespace neighborly::extender {

class Decider {
 public:
  virtual ~Decider() = default;

  // Fills `out` with one decision per node, in input order (out is resized;
  // reusing it across calls avoids allocations).
  virtual void Filter(const IncomingPod& pod, std::span<const std::string_view> nodes,
                      std::vector<NodeDecision>& out) = 0;

  // As Filter, for scoring. Also books the pod's footprint on the best node
  // (in-flight accounting), so the next request sees it.
  virtual void Prioritize(const IncomingPod& pod, std::span<const std::string_view> nodes,
                          std::vector<NodeDecision>& out) = 0;

  // A hint, before the body is decoded, that a large request (many
  // candidates) is coming: a Decider that evaluates those on several threads
  // can wake its helpers now, while the body is parsed.
  virtual void ExpectLargeRequest() {}
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_DECIDER_H_
