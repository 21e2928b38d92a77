// Scenario files: a simulated fleet described in YAML (anchors, aliases and merge
// keys allowed) or JSON, in the format fixed by the design ("Scenario files") and
// documented key by key in docs/simulation.md.
//
// Parsing turns every node into the NodeReport a real agent on that node would
// send, minus what changes per window (identity stamps, sequence, window): the
// topology, kubelet policies, capabilities and pods, with per-L3-domain and
// per-NUMA-node measurements derived from the pods when the file does not give
// them. A measurement the file does not give is absent, never zero.
//
//   absl::StatusOr<Scenario> s = LoadScenarioFile("deploy/examples/content-platform.yaml");
//   // or ParseScenario(text, "inline.yaml"); errors read
//   //   "content-platform.yaml:42: unknown key \"cpuRequestMilicores\" in pod"
//   for (const telemetry::v1::NodeReport& node : s->nodes) ...
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_SCENARIO_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_SCENARIO_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::agent {

inline constexpr std::string_view kScenarioApiVersion = "neighborly.io/v1alpha1";
inline constexpr std::string_view kScenarioKind = "Scenario";

// Bounds that keep a hostile or mistaken file from exhausting memory.
inline constexpr size_t kMaxScenarioBytes = 64 << 20;
inline constexpr size_t kMaxScenarioNodes = 10000;
inline constexpr size_t kMaxPodsPerNode = 1024;

// Reason given for a measurement the scenario leaves out.
inline constexpr std::string_view kNotInScenario = "not in scenario";

// Per-window values of one pod (scenario key `series`, issue 26): metric key
// as the scenario spells it ("ipc", "membwTotalBytesPerSecond", ...) -> values,
// window k taking value k mod size.
struct PodSeries {
  int pod_index = 0;  // in NodeReport.pods
  std::vector<std::pair<std::string, std::vector<double>>> metrics;
};

// A node whose pods have series: the template before derivation (so per-domain
// sums follow the series) and the series. Empty `pods`: a static node.
struct NodeTimeline {
  telemetry::v1::NodeReport underived;
  std::vector<PodSeries> pods;
};

struct Scenario {
  // One report template per node, in file order: everything but agent_version,
  // boot_id, sequence, window_start and window_duration.
  std::vector<telemetry::v1::NodeReport> nodes;
  // Index-aligned with `nodes`.
  std::vector<NodeTimeline> timelines;
};

// `source_name` is the file name used in error messages.
absl::StatusOr<Scenario> ParseScenario(std::string_view text, std::string_view source_name);

// Reads and parses `path`; messages name the file as `path` spells it.
absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_SCENARIO_H_
