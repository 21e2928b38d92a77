// What every report fuzzer checks once it holds a NodeReport: ValidateReport
// refuses it with INVALID_ARGUMENT and a message, or accepts it; and a report
// it accepts is safe for the rest of the extender: ExtenderCore ingests it,
// filters and prioritizes incoming pods of every class against the node with
// scores in 0..10 and finite costs, and the operator views render it.
//
//   neighborly::fuzz::CheckReport(report);
#ifndef NEIGHBORLY_FUZZ_REPORT_CHECK_H_
#define NEIGHBORLY_FUZZ_REPORT_CHECK_H_

#include <cmath>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/core/report_validation.h"
#include "fuzz/fuzz_input.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::fuzz {

inline std::vector<extender::IncomingPod> IncomingPods() {
  std::vector<extender::IncomingPod> pods(3);
  pods[0].uid = "in-lc";
  pods[0].name = "article";
  pods[0].qos = extender::QosClass::kGuaranteed;
  pods[0].annotations = {{"neighborly.io/class", "latency-critical"},
                         {"neighborly.io/llc-bytes", "19188940"}};
  pods[0].cpu_request_millicores = 2000;
  pods[0].memory_request_bytes = 4LL << 30;
  pods[0].wants_exclusive_cpus = true;
  pods[1].uid = "in-batch";
  pods[1].name = "scan";
  pods[1].qos = extender::QosClass::kBestEffort;
  pods[1].labels = {{"workload-type", "batch"}};
  pods[2].uid = "in-standard";
  pods[2].name = "web";
  pods[2].qos = extender::QosClass::kBurstable;
  pods[2].cpu_request_millicores = 500;
  return pods;
}

inline void CheckDecisions(const std::vector<extender::NodeDecision>& decisions) {
  NEIGHBORLY_FUZZ_CHECK(decisions.size() == 1, "one decision per candidate node");
  const extender::NodeDecision& d = decisions[0];
  NEIGHBORLY_FUZZ_CHECK(d.score >= 0 && d.score <= 10, "score outside 0..10");
  NEIGHBORLY_FUZZ_CHECK(std::isfinite(d.cost), "cost not finite");
  NEIGHBORLY_FUZZ_CHECK(d.confidence >= 0 && d.confidence <= 1, "confidence outside 0..1");
}

inline void CheckReport(const telemetry::v1::NodeReport& report) {
  const absl::Status valid = extender::ValidateReport(report);
  if (!valid.ok()) {
    NEIGHBORLY_FUZZ_CHECK(valid.code() == absl::StatusCode::kInvalidArgument,
                          "validation error other than INVALID_ARGUMENT");
    NEIGHBORLY_FUZZ_CHECK(!valid.message().empty(), "error without a message");
    return;
  }
  FakeClock clock;
  // Sized for the one node: a fresh 50,000-node core per input was a third
  // of the fuzzer's time (docs/fuzzing.md).
  extender::ExtenderCore core(extender::ModelConfig(), clock,
                              {.max_remembered_pods = 1000, .max_nodes = 1});
  NEIGHBORLY_FUZZ_CHECK(core.Ingest(report).ok(),
                        "Ingest refused a report ValidateReport accepted");
  const std::vector<std::string_view> names = {report.node_name()};
  std::vector<extender::NodeDecision> decisions;
  for (const extender::IncomingPod& pod : IncomingPods()) {
    decisions.clear();
    core.Filter(pod, names, decisions);
    CheckDecisions(decisions);
    decisions.clear();
    core.Prioritize(pod, names, decisions);
    CheckDecisions(decisions);
  }
  NEIGHBORLY_FUZZ_CHECK(core.Nodes().size() == 1, "ingested node missing from Nodes()");
  NEIGHBORLY_FUZZ_CHECK(core.Node(report.node_name()).has_value(), "ingested node missing");
}

}  // namespace neighborly::fuzz

#endif  // NEIGHBORLY_FUZZ_REPORT_CHECK_H_
