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

struct Scenario {
  // One report template per node, in file order: everything but agent_version,
  // boot_id, sequence, window_start and window_duration.
  std::vector<telemetry::v1::NodeReport> nodes;
};

// `source_name` is the file name used in error messages.
absl::StatusOr<Scenario> ParseScenario(std::string_view text, std::string_view source_name);

// Reads and parses `path`; messages name the file as `path` spells it.
absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_SCENARIO_H_
