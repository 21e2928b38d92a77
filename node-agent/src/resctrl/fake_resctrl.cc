#include "node-agent/src/resctrl/fake_resctrl.h"

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/resctrl/resctrl.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {

FakeResctrl::FakeResctrl(Filesystem& base, std::string root)
    : base_(base), root_(std::move(root)) {}

bool FakeResctrl::IsGroupPath(std::string_view path) const {
  if (!path.starts_with(root_ + "/")) return false;
  std::vector<std::string_view> parts;
  std::string_view rest = path.substr(root_.size() + 1);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() == 1)
    return parts[0] != "info" && parts[0] != "mon_data" && parts[0] != "mon_groups";
  if (parts.size() == 2) return parts[0] == "mon_groups";
  return parts.size() == 3 && parts[1] == "mon_groups";
}

int FakeResctrl::CountGroups() const {
  int count = 1;  // the default group
  auto mon_groups = [&](const std::string& ctrl) {
    absl::StatusOr<std::vector<DirEntry>> groups = base_.ListDir(JoinPath(ctrl, "mon_groups"));
    if (groups.ok()) {
      for (const DirEntry& g : *groups) count += g.is_dir ? 1 : 0;
    }
  };
  mon_groups(root_);
  absl::StatusOr<std::vector<DirEntry>> entries = base_.ListDir(root_);
  if (entries.ok()) {
    for (const DirEntry& e : *entries) {
      if (!e.is_dir || e.name == "info" || e.name == "mon_data" || e.name == "mon_groups") continue;
      ++count;
      mon_groups(JoinPath(root_, e.name));
    }
  }
  return count;
}

absl::Status FakeResctrl::MakeDir(std::string_view path) {
  if (!IsGroupPath(path)) return base_.MakeDir(path);
  if (base_.Exists(path)) return ErrnoStatus(EEXIST, "mkdir", path);
  if (busy_) {
    busy_ = false;
    return ErrnoStatus(EBUSY, "mkdir", path);
  }
  absl::StatusOr<std::string> rmids = base_.ReadFile(JoinPath(root_, "info/L3_MON/num_rmids"));
  const int limit = rmids.ok() ? ParseInt<int>(Trim(*rmids)).value_or(0) : 0;
  if (CountGroups() >= limit) return ErrnoStatus(ENOSPC, "mkdir", path);
  if (absl::Status s = base_.MakeDir(path); !s.ok()) return s;
  ++groups_made_;
  const std::string host = base_.HostPath(path);
  std::ofstream(host + "/tasks");
  std::ofstream(host + "/cpus_list") << "\n";
  absl::StatusOr<std::string> features =
      base_.ReadFile(JoinPath(root_, "info/L3_MON/mon_features"));
  std::vector<std::string> events;
  if (features.ok()) {
    for (std::string_view line : SplitLines(*features)) {
      const std::string_view event = Trim(line);
      if (event == "llc_occupancy" || event == "mbm_total_bytes" || event == "mbm_local_bytes") {
        events.emplace_back(event);
      }
    }
  }
  // Same domains (and sub-NUMA parts) as the root group.
  absl::StatusOr<std::vector<DirEntry>> domains = base_.ListDir(JoinPath(root_, "mon_data"));
  if (!domains.ok()) return absl::OkStatus();
  for (const DirEntry& domain : *domains) {
    if (!domain.is_dir) continue;
    const std::string dir = absl::StrCat(host, "/mon_data/", domain.name);
    std::filesystem::create_directories(dir);
    bool has_top = false;
    absl::StatusOr<std::vector<DirEntry>> subs =
        base_.ListDir(JoinPath(JoinPath(root_, "mon_data"), domain.name));
    if (subs.ok()) {
      for (const DirEntry& sub : *subs) {
        if (!sub.is_dir) {
          has_top = true;
          continue;
        }
        std::filesystem::create_directories(dir + "/" + sub.name);
        for (const std::string& event : events)
          std::ofstream(dir + "/" + sub.name + "/" + event) << "0\n";
      }
    }
    if (has_top || !subs.ok()) {
      for (const std::string& event : events) std::ofstream(dir + "/" + event) << "0\n";
    }
  }
  return absl::OkStatus();
}

absl::Status FakeResctrl::RemoveDir(std::string_view path) {
  if (!IsGroupPath(path)) return base_.RemoveDir(path);
  if (!base_.IsDirectory(path)) return ErrnoStatus(ENOENT, "rmdir", path);
  std::error_code error;
  std::filesystem::remove_all(base_.HostPath(path), error);
  if (error) return ErrnoStatus(error.value(), "rmdir", path);
  return absl::OkStatus();
}

absl::Status FakeResctrl::WriteFile(std::string_view path, std::string_view content) {
  if (!path.starts_with(root_ + "/") || !path.ends_with("/tasks")) {
    return base_.WriteFile(path, content);
  }
  if (!base_.Exists(path)) return ErrnoStatus(ENOENT, "open for writing", path);
  std::optional<int> tid = ParseInt<int>(Trim(content));
  if (!tid || rejected_.contains(*tid)) return ErrnoStatus(EINVAL, "write", path);
  std::ofstream(base_.HostPath(path), std::ios::app) << *tid << "\n";
  return absl::OkStatus();
}

void FakeResctrl::SetCounter(std::string_view group_dir, uint32_t domain, std::string_view event,
                             std::string_view value) {
  const std::string dir =
      absl::StrCat(base_.HostPath(group_dir), "/mon_data/mon_L3_", domain < 10 ? "0" : "", domain);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) {
      std::ofstream(entry.path() / std::string(event)) << value << "\n";
    } else if (entry.path().filename() == event) {
      std::ofstream(entry.path()) << value << "\n";
    }
  }
}

}  // namespace neighborly::agent
