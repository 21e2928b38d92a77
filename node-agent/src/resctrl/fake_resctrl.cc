#include "node-agent/src/resctrl/fake_resctrl.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/resctrl/resctrl.h"
#include "node-agent/src/resctrl/resctrl_allocator.h"
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

int FakeResctrl::CountCtrlGroups() const {
  int count = 1;
  absl::StatusOr<std::vector<DirEntry>> entries = base_.ListDir(root_);
  if (entries.ok()) {
    for (const DirEntry& e : *entries) {
      count += e.is_dir && e.name != "info" && e.name != "mon_data" && e.name != "mon_groups";
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
  const bool ctrl = path.substr(root_.size() + 1).find('/') == std::string_view::npos;
  if (ctrl) {
    int closids = 0;
    for (const char* res : {"info/L3/num_closids", "info/MB/num_closids"}) {
      absl::StatusOr<std::string> n = base_.ReadFile(JoinPath(root_, res));
      const int value = n.ok() ? ParseInt<int>(Trim(*n)).value_or(0) : 0;
      if (value > 0) closids = closids == 0 ? value : std::min(closids, value);
    }
    if (closids > 0 && CountCtrlGroups() >= closids) return ErrnoStatus(ENOSPC, "mkdir", path);
  }
  // Each group holds an RMID where the kernel monitors.
  absl::StatusOr<std::string> rmids = base_.ReadFile(JoinPath(root_, "info/L3_MON/num_rmids"));
  if (rmids.ok() && CountGroups() >= ParseInt<int>(Trim(*rmids)).value_or(0)) {
    return ErrnoStatus(ENOSPC, "mkdir", path);
  }
  if (absl::Status s = base_.MakeDir(path); !s.ok()) return s;
  ++groups_made_;
  const std::string host = base_.HostPath(path);
  std::ofstream(host + "/tasks");
  std::ofstream(host + "/cpus_list") << "\n";
  if (ctrl) {
    std::filesystem::create_directories(host + "/mon_groups");
    absl::StatusOr<std::string> schemata = base_.ReadFile(JoinPath(root_, "schemata"));
    if (schemata.ok()) std::ofstream(host + "/schemata") << *schemata;
  }
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
  // A CTRL_MON group's tasks go back to the default group.
  if (path.substr(root_.size() + 1).find('/') == std::string_view::npos) {
    absl::StatusOr<std::string> tasks = base_.ReadFile(JoinPath(path, "tasks"));
    if (tasks.ok() && !tasks->empty()) AppendLine(JoinPath(root_, "tasks"), *tasks);
  }
  std::error_code error;
  std::filesystem::remove_all(base_.HostPath(path), error);
  if (error) return ErrnoStatus(error.value(), "rmdir", path);
  return absl::OkStatus();
}

void FakeResctrl::AppendLine(std::string_view path, std::string_view lines) {
  absl::StatusOr<std::string> current = base_.ReadFile(path);
  const bool open_line = current.ok() && !current->empty() && !current->ends_with('\n');
  std::ofstream(base_.HostPath(path), std::ios::app) << (open_line ? "\n" : "") << lines;
}

absl::Status FakeResctrl::WriteSchemata(std::string_view path, std::string_view content) {
  if (!base_.Exists(path)) return ErrnoStatus(ENOENT, "open for writing", path);
  if (reject_schemata_) return ErrnoStatus(EINVAL, "write", path);
  absl::StatusOr<std::vector<SchemataLine>> current = ParseSchemata(*base_.ReadFile(path));
  absl::StatusOr<std::vector<SchemataLine>> update = ParseSchemata(content);
  if (!current.ok() || !update.ok()) return ErrnoStatus(EINVAL, "write", path);
  auto read_number = [&](const char* file) {
    absl::StatusOr<std::string> text = base_.ReadFile(JoinPath(root_, file));
    return text.ok() ? ParseInt<uint64_t>(Trim(*text)) : std::nullopt;
  };
  for (const SchemataLine& line : *update) {
    auto target = std::find_if(current->begin(), current->end(),
                               [&](const SchemataLine& l) { return l.resource == line.resource; });
    if (target == current->end()) return ErrnoStatus(EINVAL, "write", path);  // unknown resource
    for (const auto& [id, value] : line.values) {
      if (!target->values.contains(id)) return ErrnoStatus(EINVAL, "write", path);
      if (line.resource == "L3") {
        absl::StatusOr<std::string> full = base_.ReadFile(JoinPath(root_, "info/L3/cbm_mask"));
        uint64_t mask = 0, allowed = 0;
        if (!full.ok() || !absl::SimpleHexAtoi(Av(Trim(*full)), &allowed) ||
            !absl::SimpleHexAtoi(Av(value), &mask)) {
          return ErrnoStatus(EINVAL, "write", path);
        }
        const uint64_t low = mask & -mask;  // lowest set bit
        const bool contiguous = ((mask + low) & mask) == 0;
        const uint64_t min_bits = read_number("info/L3/min_cbm_bits").value_or(1);
        if ((mask & ~allowed) != 0 || static_cast<uint64_t>(std::popcount(mask)) < min_bits ||
            (!contiguous && read_number("info/L3/sparse_masks").value_or(0) != 1)) {
          return ErrnoStatus(EINVAL, "write", path);
        }
      } else if (line.resource == "MB") {
        std::optional<uint64_t> bw = ParseInt<uint64_t>(value);
        if (!bw || *bw < read_number("info/MB/min_bandwidth").value_or(0)) {
          return ErrnoStatus(EINVAL, "write", path);
        }
      }
      target->values[id] = value;
    }
  }
  std::string text;
  for (const SchemataLine& line : *current) absl::StrAppend(&text, FormatSchemataLine(line), "\n");
  return base_.ReplaceFile(path, text);
}

absl::Status FakeResctrl::WriteFile(std::string_view path, std::string_view content) {
  if (path.starts_with(root_ + "/") && path.ends_with("/schemata")) {
    return WriteSchemata(path, content);
  }
  if (!path.starts_with(root_ + "/") || !path.ends_with("/tasks")) {
    return base_.WriteFile(path, content);
  }
  if (!base_.Exists(path)) return ErrnoStatus(ENOENT, "open for writing", path);
  std::optional<int> tid = ParseInt<int>(Trim(content));
  if (!tid || rejected_.contains(*tid)) return ErrnoStatus(EINVAL, "write", path);
  AppendLine(path, absl::StrCat(*tid, "\n"));
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
