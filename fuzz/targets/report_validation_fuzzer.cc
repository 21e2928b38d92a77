// NodeReport validation on the extender's ingest path: arbitrary bytes parsed
// as a protobuf NodeReport (what a hostile or broken agent can send), then
// the checks of report_check.h (validation, and ingest + decisions for what
// it accepts).
#include <cstddef>
#include <cstdint>

#include "fuzz/report_check.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  neighborly::telemetry::v1::NodeReport report;
  if (!report.ParseFromArray(data, static_cast<int>(size))) return 0;
  neighborly::fuzz::CheckReport(report);
  return 0;
}
