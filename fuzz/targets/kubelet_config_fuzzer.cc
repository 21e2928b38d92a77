// The kubelet's config file (/var/lib/kubelet/config.yaml): CPU, topology and
// memory manager policies and options, reserved CPUs and memory, cgroup
// driver; and the same bytes as the arguments of a kubelet command line
// (/proc/PID/cmdline) whose flags are applied over the parsed config.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/kubelet/kubelet_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::agent::KubeletConfig> config =
      neighborly::agent::ParseKubeletConfig(neighborly::fuzz::AsText(data, size));
  NEIGHBORLY_FUZZ_CHECK(config.ok() || !config.status().message().empty(),
                        "error without a message");
  std::string cmdline("kubelet");
  cmdline.push_back('\0');
  cmdline.append(neighborly::fuzz::AsText(data, size));
  absl::StatusOr<neighborly::agent::KubeletCommandLine> parsed =
      neighborly::agent::ParseKubeletCmdline(cmdline);
  NEIGHBORLY_FUZZ_CHECK(parsed.ok() || !parsed.status().message().empty(),
                        "cmdline error without a message");
  if (parsed.ok()) {
    neighborly::agent::KubeletConfig applied =
        config.ok() ? *config : neighborly::agent::KubeletConfig();
    const absl::Status s = neighborly::agent::ApplyKubeletFlags(*parsed, applied);
    NEIGHBORLY_FUZZ_CHECK(s.ok() || !s.message().empty(), "flag error without a message");
  }
  return 0;
}
