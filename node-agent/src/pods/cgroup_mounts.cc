#include "node-agent/src/pods/cgroup_mounts.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {
namespace {

constexpr std::string_view kV1Controllers[] = {
    "blkio", "cpu",     "cpuacct",  "cpuset",     "devices", "freezer", "hugetlb",     "memory",
    "misc",  "net_cls", "net_prio", "perf_event", "pids",    "rdma",    "name=systemd"};

bool IsV1Controller(std::string_view option) {
  return std::find(std::begin(kV1Controllers), std::end(kV1Controllers), option) !=
         std::end(kV1Controllers);
}

// Mount points carry octal escapes ("\040" for a space).
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string_view oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && oct[0] >= '0' && oct[0] <= '3' && oct[1] >= '0' && oct[1] <= '7' &&
          oct[2] >= '0' && oct[2] <= '7') {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string ToHostPath(std::string mount_point, std::string_view host_root) {
  std::string_view root = host_root;
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || root == "/") return mount_point;
  if (mount_point == root) return "/";
  if (mount_point.size() > root.size() && mount_point.starts_with(root) &&
      mount_point[root.size()] == '/') {
    return mount_point.substr(root.size());
  }
  return mount_point;
}

absl::StatusOr<CgroupMounts> FromEntries(const std::vector<MountEntry>& entries) {
  CgroupMounts mounts;
  bool any = false;
  for (const MountEntry& entry : entries) {
    if (entry.fstype == "cgroup2") {
      // Prefer the canonical place if cgroup2 is mounted twice.
      if (mounts.unified.empty() || entry.mount_point == "/sys/fs/cgroup") {
        mounts.unified = entry.mount_point;
      }
      any = true;
    } else if (entry.fstype == "cgroup") {
      std::string_view options = entry.options;
      while (!options.empty()) {
        const size_t comma = options.find(',');
        const std::string_view option = options.substr(0, comma);
        if (IsV1Controller(option)) mounts.v1.emplace(std::string(option), entry.mount_point);
        if (comma == std::string_view::npos) break;
        options.remove_prefix(comma + 1);
      }
      any = true;
    }
  }
  if (!any) return absl::NotFoundError("no cgroup or cgroup2 file system in the mount table");
  const bool has_v1 = !mounts.v1.empty();
  if (!has_v1) {
    mounts.mode = CgroupMode::kV2;
  } else if (mounts.unified.empty()) {
    mounts.mode = CgroupMode::kV1;
  } else {
    mounts.mode = CgroupMode::kHybrid;
  }
  return mounts;
}

}  // namespace

std::string_view CgroupModeName(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::kV1:
      return "v1";
    case CgroupMode::kV2:
      return "v2";
    case CgroupMode::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

std::string CgroupMounts::V1Dir(std::string_view controller) const {
  auto it = v1.find(std::string(controller));
  return it == v1.end() ? std::string() : it->second;
}

namespace {

std::vector<MountEntry> ParseMountsEntries(std::string_view text, std::string_view host_root) {
  std::vector<MountEntry> entries;
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> f = SplitFields(line);
    if (f.size() < 4) continue;
    entries.push_back(
        {ToHostPath(Unescape(f[1]), host_root), std::string(f[2]), std::string(f[3])});
  }
  return entries;
}

std::vector<MountEntry> ParseMountinfoEntries(std::string_view text, std::string_view host_root) {
  std::vector<MountEntry> entries;
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> f = SplitFields(line);
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash < 5 || dash + 1 >= f.size()) continue;
    const std::string_view super_options = dash + 3 < f.size() ? f[dash + 3] : std::string_view();
    entries.push_back({ToHostPath(Unescape(f[4]), host_root), std::string(f[dash + 1]),
                       std::string(super_options)});
  }
  return entries;
}

}  // namespace

absl::StatusOr<CgroupMounts> ParseProcMounts(std::string_view text, std::string_view host_root) {
  return FromEntries(ParseMountsEntries(text, host_root));
}

absl::StatusOr<CgroupMounts> ParseMountinfo(std::string_view text, std::string_view host_root) {
  return FromEntries(ParseMountinfoEntries(text, host_root));
}

absl::StatusOr<std::vector<MountEntry>> ReadMountTable(const Filesystem& fs,
                                                       std::string_view host_root) {
  absl::StatusOr<std::string> mountinfo = fs.ReadFile("/proc/self/mountinfo");
  if (mountinfo.ok()) return ParseMountinfoEntries(*mountinfo, host_root);
  absl::StatusOr<std::string> mounts = fs.ReadFile("/proc/mounts");
  if (mounts.ok()) return ParseMountsEntries(*mounts, host_root);
  return absl::NotFoundError(absl::StrCat("no mount table: ", Av(Sv(mountinfo.status().message())),
                                          "; ", Av(Sv(mounts.status().message()))));
}

absl::StatusOr<CgroupMounts> DetectCgroupMounts(const Filesystem& fs, std::string_view host_root) {
  absl::StatusOr<std::vector<MountEntry>> entries = ReadMountTable(fs, host_root);
  if (!entries.ok()) return entries.status();
  return FromEntries(*entries);
}

}  // namespace neighborly::agent
