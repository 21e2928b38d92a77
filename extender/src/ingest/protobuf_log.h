// Protobuf's own log, bounded. Protobuf writes one ERROR line to stderr for
// every string field with invalid UTF-8 it parses or serialises, so an agent
// (or anything that can reach the telemetry port) could flood the extender's
// log with malformed reports. Once installed, protobuf's messages go through
// spdlog as warnings, at most one per `interval`, the line saying how many
// were suppressed since the last one.
//
//   InstallProtobufLogLimiter();   // once, before serving (TelemetryService does it)
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_PROTOBUF_LOG_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_PROTOBUF_LOG_H_

#include <cstdint>

#include "absl/time/time.h"

namespace neighborly::extender {

// Process-wide; later calls only change the interval.
void InstallProtobufLogLimiter(absl::Duration interval = absl::Seconds(10));

struct ProtobufLogStats {
  uint64_t seen = 0;        // messages protobuf produced since installation
  uint64_t suppressed = 0;  // of which not written
};
ProtobufLogStats GetProtobufLogStats();

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_PROTOBUF_LOG_H_
