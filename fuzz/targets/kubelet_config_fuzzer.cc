// The kubelet's config file (/var/lib/kubelet/config.yaml): CPU, topology and
// memory manager policies, reserved CPUs, cgroup driver.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/kubelet/kubelet_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::agent::KubeletConfig> config =
      neighborly::agent::ParseKubeletConfig(neighborly::fuzz::AsText(data, size));
  NEIGHBORLY_FUZZ_CHECK(config.ok() || !config.status().message().empty(),
                        "error without a message");
  return 0;
}
