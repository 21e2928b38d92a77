// Linux CPU list format ("0-3,8,10-11"), as used by sysfs, cgroups and the kubelet.
//
//   absl::StatusOr<CpuSet> cpus = ParseCpuList("0-3,8");   // {0,1,2,3,8}
//   FormatCpuList(*cpus) == "0-3,8"
#ifndef NEIGHBORLY_COMMON_CPU_LIST_H_
#define NEIGHBORLY_COMMON_CPU_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace neighborly {

// Sorted, duplicate-free CPU ids.
using CpuSet = std::vector<uint32_t>;

// Highest CPU id accepted; guards against "0-4294967295" allocating gigabytes.
inline constexpr uint32_t kMaxCpuId = 65535;

// Parses a CPU list. Surrounding whitespace (the trailing "\n" of sysfs files)
// is ignored; an empty list is the empty set.
absl::StatusOr<CpuSet> ParseCpuList(std::string_view text);

// Formats a set in the canonical compact form ("0-3,8").
std::string FormatCpuList(const CpuSet& cpus);

// Number of elements present in both sorted sets.
size_t IntersectionSize(const CpuSet& a, const CpuSet& b);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_CPU_LIST_H_
