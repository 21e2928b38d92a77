#include "extender/src/ingest/protobuf_log.h"

#include <gtest/gtest.h>

#include <string>

#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {
namespace {

// A NodeReport whose node_name (field 1) holds invalid UTF-8: protobuf refuses
// it and, left alone, writes one ERROR line per message to stderr.
std::string InvalidUtf8Report() {
  const std::string name = "node-\xff\xfe";
  return std::string("\x0a") + static_cast<char>(name.size()) + name;
}

TEST(ProtobufLogTest, AFloodOfMalformedReportsWritesAtMostOneLinePerInterval) {
  InstallProtobufLogLimiter(absl::Hours(1));
  const ProtobufLogStats before = GetProtobufLogStats();
  const std::string bytes = InvalidUtf8Report();
  for (int i = 0; i < 1000; ++i) {
    telemetry::v1::NodeReport report;
    EXPECT_FALSE(report.ParseFromString(bytes));  // still refused, exactly as before
  }
  const ProtobufLogStats after = GetProtobufLogStats();
  EXPECT_GE(after.seen - before.seen, 1000u) << "protobuf's messages do not reach the limiter";
  // With an hour's interval at most one of them was written.
  EXPECT_GE(after.suppressed - before.suppressed, after.seen - before.seen - 1);
}

}  // namespace
}  // namespace neighborly::extender
