// Measuring the real host (or a --host-root fixture tree): the collectors of
// topology, pods, kubelet state, resctrl and perf, combined into NodeReports.
//
//   HostAgentOptions options{.host_root = "/", .node_name = "worker-1"};
//   absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options);
//   absl::StatusOr<telemetry::v1::NodeReport> report = (*agent)->MeasureWindow(absl::Seconds(1));
//
// Capabilities are probed once in Create (resctrl, the PMU); a missing source
// is reported with its reason in every report and never retried per sample.
// MeasureWindow is not thread-safe: one caller at a time.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_
#define NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"
#include "node-agent/src/membw/peak_membw.h"

namespace neighborly::agent {

class Filesystem;
class PerfSyscalls;
class PodMetadataSource;
class PodResourcesSource;
class PqosLibrary;

struct HostAgentOptions {
  std::string host_root = "/";
  std::string node_name;                // empty: from the host's hostname
  std::string rdt_backend = "resctrl";  // "resctrl" | "pqos" | "none"
  // CRI sockets to try, as host paths under host_root (empty: containerd's and
  // CRI-O's default places, see cri/pod_metadata.h).
  std::vector<std::string> cri_sockets;
  // Pod labels kept in reports (annotations: every `neighborly.io/` key).
  std::vector<std::string> pod_label_keys = {"workload-type", "app"};
  // Peak memory bandwidth per NUMA node, decided once in Create (membw/peak_membw.h).
  PeakMembwOptions peak_membw;
  // --resctrl-allocation: cap batch pods' L3 ways and bandwidth where the
  // extender's policy asks for it (resctrl/resctrl_allocator.h). Off, groups
  // an earlier agent made are still removed.
  bool resctrl_allocation = false;
};

// The system doors HostAgent goes through; every null member means the real
// thing. Tests pass fakes (a fixture tree with a fake resctrl, a fake PMU, a
// fake clock and a wait that changes counters mid-window).
struct HostAgentEnvironment {
  std::shared_ptr<Filesystem> filesystem;  // rooted at host_root
  std::shared_ptr<PerfSyscalls> perf;
  std::shared_ptr<const Clock> clock;
  std::function<void(absl::Duration)> wait;  // waits out the window
  uint64_t page_size_bytes = 0;              // 0: this machine's page size
  std::string resctrl_group_prefix = "neighborly-";
  // Null: the CRI client on the first socket found (none: pods carry no
  // labels/annotations) and the PodResources client when its socket exists.
  std::shared_ptr<PodMetadataSource> pod_metadata;
  std::shared_ptr<PodResourcesSource> pod_resources;
  // Null: the real libpqos (only with --rdt-backend pqos and host_root "/").
  std::shared_ptr<PqosLibrary> pqos;
  // Null: the real STREAM-triad meter (membw/stream_triad.h).
  std::shared_ptr<BandwidthMeter> bandwidth_meter;
};

class HostAgent {
 public:
  virtual ~HostAgent() = default;
  static absl::StatusOr<std::unique_ptr<HostAgent>> Create(const HostAgentOptions& options);
  static absl::StatusOr<std::unique_ptr<HostAgent>> Create(const HostAgentOptions& options,
                                                           HostAgentEnvironment environment);

  // Samples, waits `window`, samples again and returns the report for that
  // window (rates computed over the exact elapsed time). Never fails because a
  // source is missing: the capability says why instead.
  virtual absl::StatusOr<telemetry::v1::NodeReport> MeasureWindow(absl::Duration window) = 0;

  // Wall time the last MeasureWindow spent working (the wait excluded),
  // measured with the real clock: it is the agent's own cost.
  virtual absl::Duration last_sample_cost() const = 0;

  // Each NUMA node's peak memory bandwidth as decided in Create.
  virtual const PeakMembwReport& peak_membw() const = 0;

  // The allocation policy of the extender's latest ack (nullopt: none, or the
  // ack had none); applied from the next MeasureWindow on.
  virtual void SetAllocationPolicy(
      const std::optional<telemetry::v1::AllocationPolicy>& policy) = 0;
};

// Only the peak memory bandwidth step of Create (topology, boot id, cache,
// measurement, SMBIOS), for `neighborly-agent --calibrate` in an init
// container: no resctrl, perf or kubelet access.
absl::StatusOr<PeakMembwReport> CalibratePeakMembw(const HostAgentOptions& options,
                                                   HostAgentEnvironment environment = {});

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_HOST_HOST_AGENT_H_
