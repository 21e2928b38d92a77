// The kube-scheduler extender request decoder (ExtenderArgs over HTTP, the
// bytes come straight from the network) and the encoders that echo parts of
// the request back: whatever decodes must encode into JSON that parses.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "extender/src/http/extender_codec.h"
#include "fuzz/fuzz_input.h"

namespace {

using neighborly::extender::ExtenderArgs;
using neighborly::extender::NodeDecision;

void CheckJson(simdjson::dom::parser& parser, const std::string& json, const char* what) {
  simdjson::dom::element root;
  NEIGHBORLY_FUZZ_CHECK(parser.parse(json).get(root) == simdjson::SUCCESS, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Reused across inputs, as the server reuses one per worker thread.
  static neighborly::extender::ExtenderCodec* codec = new neighborly::extender::ExtenderCodec();
  static neighborly::extender::RequestBody* body = new neighborly::extender::RequestBody();
  static simdjson::dom::parser* checker = new simdjson::dom::parser();

  body->Clear();
  body->Assign(neighborly::fuzz::AsText(data, size));
  body->Seal();
  ExtenderArgs args;
  absl::Status status = codec->Decode(*body, args);
  if (!status.ok()) {
    NEIGHBORLY_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument,
                          "decode error other than INVALID_ARGUMENT");
    NEIGHBORLY_FUZZ_CHECK(!status.message().empty(), "error without a message");
    return 0;
  }
  NEIGHBORLY_FUZZ_CHECK(!args.has_nodes || args.raw_nodes.size() == args.node_names.size(),
                        "raw_nodes and node_names differ in length");

  // Every other node fails, with its own name in the reason.
  std::vector<NodeDecision> decisions(args.node_names.size());
  for (size_t i = 0; i < decisions.size(); ++i) {
    decisions[i].score = static_cast<int>(i % 13) - 1;
    if (i % 2 == 1) {
      decisions[i].feasible = false;
      decisions[i].reason = std::string(args.node_names[i]) + " \"full\"";
    }
  }
  std::string out;  // the encoders append
  neighborly::extender::EncodeFilterResult(args, decisions, out);
  CheckJson(*checker, out, "EncodeFilterResult wrote invalid JSON");
  out.clear();
  neighborly::extender::EncodePrioritizeResult(args.node_names, decisions, out);
  CheckJson(*checker, out, "EncodePrioritizeResult wrote invalid JSON");
  out.clear();
  neighborly::extender::EncodeError(args.pod.name, out);
  CheckJson(*checker, out, "EncodeError wrote invalid JSON");
  return 0;
}
