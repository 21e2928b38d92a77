// ParseCpuList (sysfs cpulist/online files, cpuset.cpus.effective, the
// kubelet's CPU sets, NodeReport CPU lists). A parsed set must be sorted,
// duplicate-free, bounded by kMaxCpuId, and survive FormatCpuList unchanged.
#include <cstddef>
#include <cstdint>

#include "common/cpu_list.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::CpuSet> cpus =
      neighborly::ParseCpuList(neighborly::fuzz::AsText(data, size));
  if (!cpus.ok()) {
    NEIGHBORLY_FUZZ_CHECK(!cpus.status().message().empty(), "error without a message");
    return 0;
  }
  for (size_t i = 0; i < cpus->size(); ++i) {
    NEIGHBORLY_FUZZ_CHECK((*cpus)[i] <= neighborly::kMaxCpuId, "CPU id above kMaxCpuId");
    NEIGHBORLY_FUZZ_CHECK(i == 0 || (*cpus)[i - 1] < (*cpus)[i], "set not sorted and unique");
  }
  absl::StatusOr<neighborly::CpuSet> again =
      neighborly::ParseCpuList(neighborly::FormatCpuList(*cpus));
  NEIGHBORLY_FUZZ_CHECK(again.ok() && *again == *cpus, "FormatCpuList does not round-trip");
  NEIGHBORLY_FUZZ_CHECK(neighborly::IntersectionSize(*cpus, *cpus) == cpus->size(),
                        "IntersectionSize(a, a) != |a|");
  return 0;
}
