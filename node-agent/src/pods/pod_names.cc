#include "node-agent/src/pods/pod_names.h"

namespace neighborly::agent {

std::optional<PodName> ParsePodLogDirName(std::string_view dir_name) {
  const size_t first = dir_name.find('_');
  const size_t last = dir_name.rfind('_');
  if (first == std::string_view::npos || first == last || first == 0 ||
      last == dir_name.size() - 1 || last == first + 1) {
    return std::nullopt;
  }
  const std::string_view uid = dir_name.substr(last + 1);
  if (uid.size() != 36) return std::nullopt;
  return PodName{std::string(dir_name.substr(0, first)),
                 std::string(dir_name.substr(first + 1, last - first - 1)), std::string(uid)};
}

absl::StatusOr<std::map<std::string, PodName>> ReadPodNames(const Filesystem& fs,
                                                            std::string_view dir) {
  absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir(dir);
  if (!entries.ok()) return entries.status();
  std::map<std::string, PodName> names;
  for (const DirEntry& entry : *entries) {
    if (!entry.is_dir) continue;
    std::optional<PodName> name = ParsePodLogDirName(entry.name);
    if (name) names[name->uid] = std::move(*name);
  }
  return names;
}

}  // namespace neighborly::agent
