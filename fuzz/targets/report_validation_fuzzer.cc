// NodeReport validation on the extender's ingest path: arbitrary bytes parsed
// as a protobuf NodeReport (what a hostile or broken agent can send), then
// the checks of report_check.h (validation, and ingest + decisions for what
// it accepts).
#include <cstddef>
#include <cstdint>

#include "fuzz/report_check.h"
#include "google/protobuf/stubs/logging.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace {

// protobuf logs an ERROR line to stderr for every string field with invalid
// UTF-8 it refuses to parse: one input in five here, 56 MB of log in the
// first two minutes of a run. The parse still fails, which is what the
// target checks; the lines only cost time and disk.
[[maybe_unused]] const bool kProtobufLogsDiscarded = [] {
  google::protobuf::SetLogHandler(nullptr);
  return true;
}();

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  neighborly::telemetry::v1::NodeReport report;
  if (!report.ParseFromArray(data, static_cast<int>(size))) return 0;
  neighborly::fuzz::CheckReport(report);
  return 0;
}
