// Validation of a NodeReport before it may touch any state: identity, sizes,
// CPU lists, topology ids and their consistency, numbers. Every problem is an
// INVALID_ARGUMENT that names the field, e.g.
//   "NodeReport.pods[3].exclusive_cpus: ..."
//
//   absl::Status s = ValidateReport(report);
#ifndef NEIGHBORLY_EXTENDER_SRC_CORE_REPORT_VALIDATION_H_
#define NEIGHBORLY_EXTENDER_SRC_CORE_REPORT_VALIDATION_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

struct ReportLimits {
  size_t max_pods = 1000;
  size_t max_numa_nodes = 64;    // == kMaxNumaNodes of the model
  size_t max_l3_domains = 256;   // == kMaxL3Domains of the model
  size_t max_labels = 256;       // per pod
  size_t max_annotations = 256;  // per pod
  size_t max_key_bytes = 317;    // Kubernetes: 253-byte prefix + "/" + 63-byte name
  size_t max_label_value_bytes = 1024;
  size_t max_annotation_value_bytes = 64 * 1024;
  size_t max_annotations_total_bytes = 256 * 1024;  // Kubernetes' own limit per object
  size_t max_string_bytes = 1024;                   // versions, reasons, notes, policy names
  size_t max_map_entries = 1024;                    // unavailable metrics, unmonitored pods
  // Every byte and byte-per-second quantity (memory, cache, occupancy,
  // bandwidth): 1 PiB, far above any host, and low enough that the model's sums
  // over max_pods pods stay exact in int64 and convert back from double.
  uint64_t max_bytes = uint64_t{1} << 50;
  int64_t max_millicores = int64_t{1} << 40;  // CPU requests and usage
};

// True for a DNS-1123 subdomain (what Kubernetes accepts as a node name).
bool IsDns1123Subdomain(std::string_view name);

absl::Status ValidateReport(const telemetry::v1::NodeReport& report,
                            const ReportLimits& limits = ReportLimits());

// A pod record that failed validation: its position, its UID as sent (clipped
// to 128 bytes) and the problem ("NodeReport.pods[2].namespace: empty").
struct InvalidPod {
  int index = 0;
  std::string uid;
  std::string reason;
};

// The same checks, except that a pod record that fails them (or repeats an
// earlier record's UID) does not fail the report: it is appended to
// `*invalid_pods`, in index order, and the report's other records stand. A
// problem outside `pods` (identity, topology, ...) still fails the report.
absl::Status ValidateReport(const telemetry::v1::NodeReport& report, const ReportLimits& limits,
                            std::vector<InvalidPod>* invalid_pods);

// Removes the records listed in `invalid` (index order, as ValidateReport
// fills it) from `report.pods`, keeping the order of the rest.
void RemoveInvalidPods(const std::vector<InvalidPod>& invalid, telemetry::v1::NodeReport& report);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CORE_REPORT_VALIDATION_H_
