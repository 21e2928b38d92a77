// The placement service's requests (what a hostile or broken scheduler plugin
// can send): arbitrary bytes parsed as a FilterRequest, validated by
// PodFromProto / NodeNamesFromProto, and what they accept run through every
// placement call of an ExtenderCore holding two nodes' telemetry: Filter over
// the known nodes and over the named ones, Score, Reserve on a named node,
// Unreserve. Checks one decision per node, scores 0..10, finite costs, and
// that Reserve/Unreserve leave at most the one booking they made.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/model/testing/report_builder.h"
#include "extender/src/placement/pod_from_proto.h"
#include "fuzz/fuzz_input.h"
#include "google/protobuf/stubs/logging.h"
#include "neighborly/placement/v1/placement.pb.h"

namespace {

namespace ex = ::neighborly::extender;

[[maybe_unused]] const bool kProtobufLogsDiscarded = [] {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 is refused, loudly
  return true;
}();

void CheckDecisions(const std::vector<ex::NodeDecision>& decisions, size_t nodes) {
  NEIGHBORLY_FUZZ_CHECK(decisions.size() == nodes, "one decision per node");
  for (const ex::NodeDecision& d : decisions) {
    NEIGHBORLY_FUZZ_CHECK(d.score >= 0 && d.score <= 10, "score outside 0..10");
    NEIGHBORLY_FUZZ_CHECK(std::isfinite(d.cost), "cost not finite");
    NEIGHBORLY_FUZZ_CHECK(d.feasible || !d.reason.empty(), "a refusal without a reason");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  neighborly::placement::v1::FilterRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  ex::PlacementLimits limits;
  limits.max_node_names = 64;
  ex::IncomingPod pod;
  std::vector<std::string_view> names;
  if (!ex::PodFromProto(request.pod(), limits, pod).ok()) return 0;
  NEIGHBORLY_FUZZ_CHECK(!pod.uid.empty(), "a pod without uid was accepted");
  NEIGHBORLY_FUZZ_CHECK(pod.cpu_request_millicores >= 0 && pod.memory_request_bytes >= 0,
                        "negative requests were accepted");
  if (!ex::NodeNamesFromProto(request.node_names(), "node_names", limits, names).ok()) return 0;

  neighborly::FakeClock clock;
  ex::ExtenderCore core(ex::ModelConfig(), clock, {.max_nodes = 64});
  neighborly::telemetry::v1::NodeReport busy = ex::testing::TwoSocketNode("node-1");
  ex::testing::AddPod(busy, {.uid = "r-1",
                             .name = "article",
                             .qos = neighborly::telemetry::v1::QOS_CLASS_GUARANTEED,
                             .annotations = {{"neighborly.io/class", "latency-critical"}},
                             .exclusive_cpus = "2-3"});
  NEIGHBORLY_FUZZ_CHECK(core.Ingest(busy).ok(), "fixture report refused");
  NEIGHBORLY_FUZZ_CHECK(core.Ingest(ex::testing::TwoSocketNode("node-2")).ok(),
                        "fixture report refused");

  std::vector<std::string_view> known;
  std::vector<ex::NodeDecision> decisions;
  core.FilterKnownNodes(pod, true, known, decisions);
  NEIGHBORLY_FUZZ_CHECK(known.size() == 2, "Filter did not judge the two known nodes");
  CheckDecisions(decisions, known.size());
  core.FilterNodes(pod, names, true, decisions);
  CheckDecisions(decisions, names.size());
  core.Score(pod, names, true, decisions);
  CheckDecisions(decisions, names.size());
  NEIGHBORLY_FUZZ_CHECK(core.bookings() == 0, "Filter or Score booked");
  const std::string_view node = names.empty() ? std::string_view("node-1") : names[0];
  ex::NodeDecision reserved;
  const bool booked = core.Reserve(pod, node, true, &reserved);
  NEIGHBORLY_FUZZ_CHECK(std::isfinite(reserved.cost), "Reserve: cost not finite");
  NEIGHBORLY_FUZZ_CHECK(core.bookings() == (booked ? 1u : 0u), "Reserve booked other than once");
  NEIGHBORLY_FUZZ_CHECK(booked == (node == "node-1" || node == "node-2"),
                        "Reserve booked a node without telemetry, or not a known one");
  NEIGHBORLY_FUZZ_CHECK(core.Unreserve(pod.uid, node) == booked, "Unreserve disagrees");
  NEIGHBORLY_FUZZ_CHECK(core.bookings() == 0, "a booking outlived Unreserve");
  return 0;
}
