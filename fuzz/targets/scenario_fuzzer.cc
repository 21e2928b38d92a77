// Scenario files for the simulated fleet (YAML with anchors/aliases/merge
// keys, or JSON): ParseScenario turns each node into a NodeReport.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/simulate/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::agent::Scenario> scenario =
      neighborly::agent::ParseScenario(neighborly::fuzz::AsText(data, size), "fuzz.yaml");
  if (!scenario.ok()) {
    NEIGHBORLY_FUZZ_CHECK(!scenario.status().message().empty(), "error without a message");
    return 0;
  }
  NEIGHBORLY_FUZZ_CHECK(scenario->nodes.size() <= neighborly::agent::kMaxScenarioNodes,
                        "more nodes than kMaxScenarioNodes");
  for (const auto& node : scenario->nodes) {
    NEIGHBORLY_FUZZ_CHECK(
        static_cast<size_t>(node.pods_size()) <= neighborly::agent::kMaxPodsPerNode,
        "more pods than kMaxPodsPerNode");
  }
  return 0;
}
