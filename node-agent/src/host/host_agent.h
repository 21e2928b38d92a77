// Measuring the real host (or a --host-root fixture tree): the collectors of
// topology, pods, kubelet state, resctrl and perf, combined into NodeReports.
//
//   HostAgentOptions options{.host_root = "/", .node_name = "worker-1"};
//   absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options);
//   absl::StatusOr<telemetry::v1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
#ifndef NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_
#define NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::agent {

struct HostAgentOptions {
  std::string host_root = "/";
  std::string node_name;           // empty: from the host's hostname
  std::string rdt_backend = "resctrl";  // "resctrl" | "pqos" | "none"
};

class HostAgent {
 public:
  virtual ~HostAgent() = default;
  static absl::StatusOr<std::unique_ptr<HostAgent>> Create(const HostAgentOptions& options);

  // Samples, waits `window`, samples again and returns the report for that
  // window (rates computed over the exact elapsed time). Never fails because a
  // source is missing: the capability says why instead.
  virtual absl::StatusOr<telemetry::v1::NodeReport> MeasureWindow(absl::Duration window) = 0;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_
