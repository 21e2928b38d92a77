// What a NodeReport would cost before it is parsed. Parsing turns wire bytes
// into objects, and an empty pod record is 2 bytes on the wire but a
// PodReport of several hundred bytes in memory: one 8 MiB report of 4.19 M
// empty records peaked at 2.86 GB before validation refused it (issue 24).
// The prescan walks the wire format once, allocating nothing: it reads the
// report's node_name (so the stream's identity is checked before anything is
// parsed), counts every repeated field per message (pods per report, labels
// and annotations per pod, any other list) against the validation limits, and
// estimates the bytes the parsed message would take. A report over a count is
// refused as invalid, one whose estimate passes `memory_factor` x its wire
// size (plus `memory_slack_bytes`) as too large to parse.
//
//   ReportPrescanner prescanner(PrescanLimits{});
//   grpc::ProtoBufferReader reader(&buffer);
//   absl::StatusOr<Prescan> scan = prescanner.Scan(&reader, buffer.Length());
//   if (scan.ok() && scan->node_name != identity.node_name) ...  // refuse, unparsed
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_REPORT_PRESCAN_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_REPORT_PRESCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/zero_copy_stream.h"

namespace neighborly::extender {

struct PrescanLimits {
  size_t max_pods = 1000;  // NodeReport.pods (ReportLimits::max_pods: the whole report)
  // Per pod. Validation drops a record of more than 256 (ReportLimits) and
  // keeps the rest of the report; beyond four times that the report is not
  // parsed at all.
  size_t max_labels = 1024;
  size_t max_annotations = 1024;
  // Any other repeated or map field, per message: NUMA nodes, L3 domains, CPU
  // cores, distances, unavailable metrics, unmonitored pods, policy options.
  size_t max_elements = 4096;
  // The parsed report may take at most memory_factor x wire bytes + slack.
  // A real report's estimate is 1.5-3x its wire size (docs/security.md); a
  // sparse one (few measurements per pod) up to about 9x since issue 26's pod
  // fields (working set, limit, oom_score_adj, priority, container requests)
  // take room in every parsed pod record, present or not.
  double memory_factor = 10;
  size_t memory_slack_bytes = size_t{1} << 20;
};

struct Prescan {
  std::string node_name;       // the last node_name on the wire ("" when absent), as parsed
  size_t pods = 0;             // pod records
  size_t estimated_bytes = 0;  // what the parsed NodeReport would hold
  // Why the report must not be parsed: INVALID_ARGUMENT naming a field over
  // its count, or RESOURCE_EXHAUSTED for the memory bound; OK otherwise.
  absl::Status refusal;
};

// Built once per server: it keeps the in-memory size of each message type of
// the report (from its default instance), so a scan does no lookups by name.
class ReportPrescanner {
 public:
  explicit ReportPrescanner(PrescanLimits limits = {});

  // INVALID_ARGUMENT for malformed wire data; otherwise the scan, whose
  // `refusal` says whether the report may be parsed (node_name is read even
  // then, so that the caller checks the identity first).
  absl::StatusOr<Prescan> Scan(google::protobuf::io::ZeroCopyInputStream* input,
                               size_t wire_bytes) const;

  const PrescanLimits& limits() const { return limits_; }

 private:
  struct Walk;
  PrescanLimits limits_;
  const google::protobuf::FieldDescriptor* pods_field_;
  absl::flat_hash_map<const google::protobuf::Descriptor*, size_t> message_bytes_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_REPORT_PRESCAN_H_
