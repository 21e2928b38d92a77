#include "common/cpu_list.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly {
namespace {

absl::StatusOr<uint32_t> ParseCpuId(std::string_view token, std::string_view whole) {
  const std::optional<uint32_t> id = ParseInt<uint32_t>(token);
  if (!id) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu list \"", Av(whole), "\": \"", Av(token), "\" is not a cpu number"));
  }
  if (*id > kMaxCpuId) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu list \"", Av(whole), "\": cpu ", *id, " is above the limit ", kMaxCpuId));
  }
  return *id;
}

}  // namespace

absl::StatusOr<CpuSet> ParseCpuList(std::string_view text) {
  const std::string_view list = Trim(text);
  CpuSet cpus;
  if (list.empty()) return cpus;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view part = Trim(list.substr(start, comma - start));
    start = comma + 1;
    const size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      absl::StatusOr<uint32_t> id = ParseCpuId(part, list);
      if (!id.ok()) return id.status();
      cpus.push_back(*id);
      continue;
    }
    absl::StatusOr<uint32_t> first = ParseCpuId(part.substr(0, dash), list);
    if (!first.ok()) return first.status();
    absl::StatusOr<uint32_t> last = ParseCpuId(part.substr(dash + 1), list);
    if (!last.ok()) return last.status();
    if (*last < *first) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu list \"", Av(list), "\": range \"", Av(part), "\" runs backwards"));
    }
    for (uint32_t id = *first; id <= *last; ++id) cpus.push_back(id);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const CpuSet& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

size_t IntersectionSize(const CpuSet& a, const CpuSet& b) {
  size_t n = 0;
  auto ia = a.begin();
  auto ib = b.begin();
  while (ia != a.end() && ib != b.end()) {
    if (*ia < *ib) {
      ++ia;
    } else if (*ib < *ia) {
      ++ib;
    } else {
      ++n;
      ++ia;
      ++ib;
    }
  }
  return n;
}

}  // namespace neighborly
