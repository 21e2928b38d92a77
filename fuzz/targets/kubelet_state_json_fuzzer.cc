// The kubelet's checkpoint files under /var/lib/kubelet: cpu_manager_state and
// memory_manager_state (JSON, internal formats). The same bytes go to each.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/kubelet/kubelet_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = neighborly::agent;
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  absl::StatusOr<agent::CpuManagerState> cpu = agent::ParseCpuManagerState(text);
  if (cpu.ok()) {
    for (const auto& [uid, containers] : cpu->entries) {
      neighborly::CpuSet exclusive = cpu->ExclusiveCpus(uid);
      for (size_t i = 1; i < exclusive.size(); ++i) {
        NEIGHBORLY_FUZZ_CHECK(exclusive[i - 1] < exclusive[i], "ExclusiveCpus not a sorted set");
      }
    }
  } else {
    NEIGHBORLY_FUZZ_CHECK(!cpu.status().message().empty(), "error without a message");
  }
  absl::StatusOr<agent::MemoryManagerState> memory = agent::ParseMemoryManagerState(text);
  NEIGHBORLY_FUZZ_CHECK(memory.ok() || !memory.status().message().empty(),
                        "error without a message");
  return 0;
}
