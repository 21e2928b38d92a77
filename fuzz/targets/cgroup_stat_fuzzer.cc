// Pod cgroup files: cpu.stat (usage_usec), memory.numa_stat (v2 bytes and v1
// pages), cpu/memory.pressure (PSI), cgroup.threads / tasks. The same bytes
// go to each parser.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/pods/pod_cgroups.h"

namespace {

template <typename T>
void CheckError(const absl::StatusOr<T>& result) {
  NEIGHBORLY_FUZZ_CHECK(result.ok() || !result.status().message().empty(),
                        "error without a message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = neighborly::agent;
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  CheckError(agent::ParseCpuStatUsageUsec(text));
  CheckError(agent::ParseNumaStatV2(text));
  CheckError(agent::ParseNumaStatV1(text, 4096));
  CheckError(agent::ParseNumaStatV1(text, 65536));  // arm64 and ppc64le pages
  absl::StatusOr<agent::Pressure> pressure = agent::ParsePressure(text);
  CheckError(pressure);
  CheckError(agent::ParseTids(text));
  return 0;
}
