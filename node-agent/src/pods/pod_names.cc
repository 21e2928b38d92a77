#include "node-agent/src/pods/pod_names.h"

#include <vector>

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

namespace {

// A DNS-1123 label or subdomain, as namespaces and pod names are.
bool IsObjectName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

// Leading and trailing blanks removed.
std::string_view Strip(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

absl::StatusOr<PodName> ReadKubeletPodDirName(const Filesystem& fs, std::string_view uid,
                                              std::string_view dir) {
  if (uid.empty() || uid.find('/') != std::string_view::npos || uid == "." || uid == "..") {
    return absl::InvalidArgumentError("\"" + std::string(uid) + "\" is not a pod UID");
  }
  const std::string pod_dir = std::string(dir) + "/" + std::string(uid);
  std::string namespace_name;
  for (const char* plugin : {"kubernetes.io~projected", "kubernetes.io~secret"}) {
    const std::string volumes = pod_dir + "/volumes/" + plugin;
    absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir(volumes);
    if (!entries.ok()) continue;
    for (const DirEntry& e : *entries) {
      if (!e.is_dir) continue;
      absl::StatusOr<std::string> ns = fs.ReadFile(volumes + "/" + e.name + "/namespace");
      if (ns.ok() && IsObjectName(Strip(*ns))) {
        namespace_name = std::string(Strip(*ns));
        break;
      }
    }
    if (!namespace_name.empty()) break;
  }
  if (namespace_name.empty()) {
    return absl::NotFoundError("no namespace file in a service account volume under " + pod_dir);
  }
  absl::StatusOr<std::string> hosts = fs.ReadFile(pod_dir + "/etc-hosts");
  if (!hosts.ok()) return absl::NotFoundError("no " + pod_dir + "/etc-hosts");
  // "<pod IP>\t<hostname>[.<subdomain>...]\t<hostname>": the last field of the
  // last line that is not a comment or localhost is the pod's hostname.
  std::string name;
  std::string_view rest = *hosts;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    std::string_view line = Strip(rest.substr(0, eol));
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> fields;
    while (!line.empty()) {
      const size_t end = line.find_first_of(" \t");
      fields.push_back(line.substr(0, end));
      line = end == std::string_view::npos ? std::string_view() : Strip(line.substr(end));
    }
    if (fields.size() < 2 || fields[1] == "localhost") continue;
    name = std::string(fields.back());
  }
  if (!IsObjectName(name)) {
    return absl::NotFoundError("no pod hostname in " + pod_dir + "/etc-hosts");
  }
  return PodName{std::move(namespace_name), std::move(name), std::string(uid)};
}

}  // namespace neighborly::agent
