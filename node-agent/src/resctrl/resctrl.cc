#include "node-agent/src/resctrl/resctrl.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {
namespace {

constexpr char kOccupancy[] = "llc_occupancy";
constexpr char kMbmTotal[] = "mbm_total_bytes";
constexpr char kMbmLocal[] = "mbm_local_bytes";

// flock(2) on the resctrl root for the lifetime of the object; a failure to
// lock (a plain directory in tests has flock too) is logged by the caller's
// results, never fatal.
class RootLock {
 public:
  RootLock(const Filesystem& fs, const std::string& root, int operation) {
    fd_ = open(fs.HostPath(root).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ >= 0 && flock(fd_, operation) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RootLock() {
    if (fd_ >= 0) {
      flock(fd_, LOCK_UN);
      close(fd_);
    }
  }
  RootLock(const RootLock&) = delete;
  RootLock& operator=(const RootLock&) = delete;

 private:
  int fd_ = -1;
};

bool IsGroupDir(const DirEntry& entry) {
  return entry.is_dir && entry.name != "info" && entry.name != "mon_data" &&
         entry.name != "mon_groups";
}

void AddSample(std::optional<uint64_t>& sum, const std::optional<uint64_t>& value) {
  if (value) sum = sum.value_or(0) + *value;
}

// Reads the three counters in `dir` (a mon_L3_XX or mon_sub_L3_YY directory).
DomainCounters ReadCounterDir(const Filesystem& fs, const std::string& dir,
                              const ResctrlInfo& info) {
  DomainCounters counters;
  auto read = [&](bool supported, const char* file, std::optional<uint64_t>& out) {
    if (!supported) return;
    absl::StatusOr<std::string> text = fs.ReadFile(JoinPath(dir, file));
    absl::StatusOr<uint64_t> value =
        text.ok() ? ParseMonValue(*text) : absl::StatusOr<uint64_t>(text.status());
    if (value.ok()) {
      out = *value;
    } else {
      absl::StrAppend(&counters.problem, counters.problem.empty() ? "" : "; ", file, ": ",
                      Av(Sv(value.status().message())));
    }
  };
  read(info.occupancy, kOccupancy, counters.occupancy_bytes);
  read(info.mbm_total, kMbmTotal, counters.mbm_total_bytes);
  read(info.mbm_local, kMbmLocal, counters.mbm_local_bytes);
  return counters;
}

}  // namespace

absl::StatusOr<uint64_t> ParseMonValue(std::string_view text) {
  const std::string_view token = Trim(text);
  std::optional<uint64_t> value = ParseInt<uint64_t>(token);
  if (value) return *value;
  return absl::UnavailableError(absl::StrCat("counter reads \"", Av(token.substr(0, 32)), "\""));
}

std::optional<uint32_t> ParseMonDomainName(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  return ParseInt<uint32_t>(name.substr(prefix.size()));
}

ResctrlInfo DetectResctrl(const Filesystem& fs, const std::vector<MountEntry>& mounts) {
  ResctrlInfo info;
  auto it = std::find_if(mounts.begin(), mounts.end(),
                         [](const MountEntry& m) { return m.fstype == "resctrl"; });
  if (it == mounts.end()) {
    absl::StatusOr<std::string> filesystems = fs.ReadFile("/proc/filesystems");
    const bool supported = filesystems.ok() && filesystems->find("resctrl") != std::string::npos;
    info.reason = supported ? "resctrl is supported but not mounted at /sys/fs/resctrl"
                            : "no resctrl in the mount table or /proc/filesystems (no Intel "
                              "RDT / AMD PQoS, or a kernel without CONFIG_X86_CPU_RESCTRL)";
    return info;
  }
  info.root = it->mount_point;
  const std::string mon = JoinPath(info.root, "info/L3_MON");
  if (!fs.IsDirectory(mon)) {
    info.reason = absl::StrCat("resctrl is mounted but ", mon,
                               " is missing: no L3 monitoring (CMT/MBM) on this CPU");
    return info;
  }
  absl::StatusOr<std::string> rmids = fs.ReadFile(JoinPath(mon, "num_rmids"));
  std::optional<uint32_t> num = rmids.ok() ? ParseInt<uint32_t>(Trim(*rmids)) : std::nullopt;
  if (!num || *num == 0) {
    info.reason = absl::StrCat(mon, "/num_rmids unreadable or zero");
    return info;
  }
  info.num_rmids = *num;
  absl::StatusOr<std::string> features = fs.ReadFile(JoinPath(mon, "mon_features"));
  if (!features.ok()) {
    info.reason = std::string(features.status().message());
    return info;
  }
  for (std::string_view line : SplitLines(*features)) {
    const std::string_view feature = Trim(line);
    if (feature == kOccupancy) info.occupancy = true;
    if (feature == kMbmTotal) info.mbm_total = true;
    if (feature == kMbmLocal) info.mbm_local = true;
  }
  if (!info.occupancy && !info.mbm_total && !info.mbm_local) {
    info.reason = absl::StrCat(mon, "/mon_features lists no L3 event");
    return info;
  }
  info.usable = true;
  return info;
}

absl::StatusOr<GroupCounters> ReadGroupCounters(const Filesystem& fs, std::string_view group_dir,
                                                const ResctrlInfo& info) {
  const std::string mon_data = JoinPath(group_dir, "mon_data");
  absl::StatusOr<std::vector<DirEntry>> domains = fs.ListDir(mon_data);
  if (!domains.ok()) return domains.status();
  GroupCounters counters;
  for (const DirEntry& entry : *domains) {
    std::optional<uint32_t> id = ParseMonDomainName(entry.name);
    if (!id || !entry.is_dir) continue;
    const std::string dir = JoinPath(mon_data, entry.name);
    DomainCounters domain = ReadCounterDir(fs, dir, info);
    // SNC: one part per NUMA node (mon_sub_L3_<node>), kept for per-node
    // bandwidth; a part with a missing counter leaves that counter out.
    if (absl::StatusOr<std::vector<DirEntry>> subs = fs.ListDir(dir); subs.ok()) {
      for (const DirEntry& sub : *subs) {
        std::optional<uint32_t> node = ParseMonDomainName(sub.name, "mon_sub_L3_");
        if (!sub.is_dir || !node) continue;
        DomainCounters part = ReadCounterDir(fs, JoinPath(dir, sub.name), info);
        domain.parts[*node] = {part.occupancy_bytes, part.mbm_total_bytes, part.mbm_local_bytes};
      }
    }
    // SNC trees may lack the top-level files; only then sum the parts.
    const bool top_missing = !domain.problem.empty() && !domain.occupancy_bytes &&
                             !domain.mbm_total_bytes && !domain.mbm_local_bytes &&
                             !fs.Exists(JoinPath(dir, info.occupancy ? kOccupancy : kMbmTotal));
    if (top_missing) {
      // SNC without top-level sums: add the sub-NUMA domains up.
      absl::StatusOr<std::vector<DirEntry>> subs = fs.ListDir(dir);
      DomainCounters sum;
      bool any = false;
      if (subs.ok()) {
        for (const DirEntry& sub : *subs) {
          if (!sub.is_dir || !ParseMonDomainName(sub.name, "mon_sub_L3_")) continue;
          any = true;
          DomainCounters part = ReadCounterDir(fs, JoinPath(dir, sub.name), info);
          AddSample(sum.occupancy_bytes, part.occupancy_bytes);
          AddSample(sum.mbm_total_bytes, part.mbm_total_bytes);
          AddSample(sum.mbm_local_bytes, part.mbm_local_bytes);
          if (!part.problem.empty()) {
            // One missing part makes the sum wrong: drop the affected counters.
            if (info.occupancy && !part.occupancy_bytes) sum.occupancy_bytes.reset();
            if (info.mbm_total && !part.mbm_total_bytes) sum.mbm_total_bytes.reset();
            if (info.mbm_local && !part.mbm_local_bytes) sum.mbm_local_bytes.reset();
            absl::StrAppend(&sum.problem, sub.name, ": ", part.problem);
          }
        }
      }
      if (any) {
        sum.parts = std::move(domain.parts);
        domain = std::move(sum);
      }
    }
    counters[*id] = std::move(domain);
  }
  if (counters.empty()) {
    return absl::NotFoundError(absl::StrCat(mon_data, ": no mon_L3_* domain"));
  }
  return counters;
}

ResctrlRates ComputeRates(const GroupCounters& start, const GroupCounters& end, double seconds,
                          const ResctrlInfo& info) {
  ResctrlRates rates;
  std::string occupancy_problem, total_problem, local_problem;
  auto note = [](std::string& problem, uint32_t id, std::string_view what) {
    if (problem.empty()) problem = absl::StrCat("L3 domain ", id, ": ", Av(what));
  };
  auto rate = [&](const std::optional<uint64_t>& a, const std::optional<uint64_t>& b, uint32_t id,
                  std::string_view problem_text, std::string& problem) -> std::optional<uint64_t> {
    if (!a || !b) {
      note(problem, id, problem_text.empty() ? "no sample" : problem_text);
      return std::nullopt;
    }
    if (*b < *a) {
      note(problem, id, "counter went backwards (reset): interval dropped");
      return std::nullopt;
    }
    if (seconds <= 0) {
      note(problem, id, "empty window");
      return std::nullopt;
    }
    return static_cast<uint64_t>(static_cast<double>(*b - *a) / seconds);
  };
  for (const auto& [id, after] : end) {
    auto before_it = start.find(id);
    const DomainCounters empty;
    const DomainCounters& before = before_it == start.end() ? empty : before_it->second;
    const std::string problem = !after.problem.empty() ? after.problem : before.problem;
    DomainRates& domain = rates.domains[id];
    if (info.occupancy) {
      domain.occupancy_bytes = after.occupancy_bytes;
      if (!after.occupancy_bytes) note(occupancy_problem, id, problem);
    }
    if (info.mbm_total) {
      domain.mbm_total_bytes_per_second =
          rate(before.mbm_total_bytes, after.mbm_total_bytes, id, problem, total_problem);
    }
    if (info.mbm_local) {
      domain.mbm_local_bytes_per_second =
          rate(before.mbm_local_bytes, after.mbm_local_bytes, id, problem, local_problem);
    }
    // Parts: a missing or backwards counter leaves that part's rate absent
    // (the domain's own problem notes already say why).
    auto part_rate = [&](const std::optional<uint64_t>& a,
                         const std::optional<uint64_t>& b) -> std::optional<uint64_t> {
      if (!a || !b || *b < *a || seconds <= 0) return std::nullopt;
      return static_cast<uint64_t>(static_cast<double>(*b - *a) / seconds);
    };
    for (const auto& [node, part_after] : after.parts) {
      auto part_before = before.parts.find(node);
      const PartCounters none;
      const PartCounters& pb = part_before == before.parts.end() ? none : part_before->second;
      PartRates& part = domain.parts[node];
      if (info.occupancy) part.occupancy_bytes = part_after.occupancy_bytes;
      if (info.mbm_total) {
        part.mbm_total_bytes_per_second = part_rate(pb.mbm_total_bytes, part_after.mbm_total_bytes);
      }
      if (info.mbm_local) {
        part.mbm_local_bytes_per_second = part_rate(pb.mbm_local_bytes, part_after.mbm_local_bytes);
      }
    }
  }
  auto sum = [&](auto member, bool supported, const std::string& problem, const char* metric,
                 const char* unsupported) -> std::optional<uint64_t> {
    if (!supported) {
      rates.unavailable[metric] = unsupported;
      return std::nullopt;
    }
    if (!problem.empty() || rates.domains.empty()) {
      rates.unavailable[metric] = problem.empty() ? "no L3 domain" : problem;
      return std::nullopt;
    }
    uint64_t total = 0;
    for (const auto& [id, d] : rates.domains) total += *(d.*member);
    return total;
  };
  rates.occupancy_bytes = sum(&DomainRates::occupancy_bytes, info.occupancy, occupancy_problem,
                              "llc_occupancy_bytes", "CMT occupancy not in mon_features");
  rates.mbm_total_bytes_per_second =
      sum(&DomainRates::mbm_total_bytes_per_second, info.mbm_total, total_problem,
          "membw_total_bytes_per_second", "MBM total not in mon_features (CMT-only CPU)");
  rates.mbm_local_bytes_per_second =
      sum(&DomainRates::mbm_local_bytes_per_second, info.mbm_local, local_problem,
          "membw_local_bytes_per_second", "MBM local not in mon_features (CMT-only CPU)");
  return rates;
}

ResctrlMonitor::ResctrlMonitor(Filesystem& fs, ResctrlInfo info, std::string prefix)
    : fs_(fs), info_(std::move(info)), prefix_(std::move(prefix)) {}

std::string ResctrlMonitor::GroupDir(std::string_view uid) const {
  auto parent = parents_.find(std::string(uid));
  const std::string ctrl = parent == parents_.end() || parent->second.empty()
                               ? info_.root
                               : JoinPath(info_.root, parent->second);
  return JoinPath(JoinPath(ctrl, "mon_groups"), absl::StrCat(prefix_, Av(uid)));
}

uint32_t ResctrlMonitor::ForeignGroups() const {
  uint32_t count = 0;
  auto count_mon_groups = [&](const std::string& ctrl) {
    absl::StatusOr<std::vector<DirEntry>> groups = fs_.ListDir(JoinPath(ctrl, "mon_groups"));
    if (!groups.ok()) return;
    for (const DirEntry& g : *groups) {
      if (g.is_dir && !g.name.starts_with(prefix_)) ++count;
    }
  };
  count_mon_groups(info_.root);
  absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(info_.root);
  if (entries.ok()) {
    for (const DirEntry& entry : *entries) {
      if (!IsGroupDir(entry)) continue;
      ++count;  // a CTRL_MON group holds an RMID too
      count_mon_groups(JoinPath(info_.root, entry.name));
    }
  }
  return count;
}

absl::Status ResctrlMonitor::Start(const std::set<std::string>& running) {
  RootLock lock(fs_, info_.root, LOCK_EX);
  absl::StatusOr<std::vector<DirEntry>> groups = fs_.ListDir(JoinPath(info_.root, "mon_groups"));
  if (!groups.ok()) return groups.status();
  absl::Status result;
  for (const DirEntry& group : *groups) {
    if (!group.is_dir || !group.name.starts_with(prefix_)) continue;
    const std::string uid = group.name.substr(prefix_.size());
    if (running.contains(uid)) {
      groups_.insert(uid);
      continue;
    }
    if (absl::Status s = fs_.RemoveDir(GroupDir(uid)); !s.ok() && result.ok()) result = s;
  }
  const uint32_t used = 1 + ForeignGroups() + static_cast<uint32_t>(groups_.size());
  rmids_free_ = used >= info_.num_rmids ? 0 : info_.num_rmids - used;
  return result;
}

std::string ResctrlMonitor::SharedGroupDir(std::string_view qos_class) const {
  return JoinPath(JoinPath(info_.root, "mon_groups"), absl::StrCat(prefix_, "qos-", Av(qos_class)));
}

std::string ResctrlMonitor::WriteTids(const std::string& group_dir, const std::vector<int>& tids,
                                      bool& gone) {
  gone = false;
  const std::string tasks_path = JoinPath(group_dir, "tasks");
  absl::StatusOr<std::string> current = fs_.ReadFile(tasks_path);
  if (!current.ok()) {
    gone = true;
    return std::string(current.status().message());
  }
  std::set<int> present;
  for (std::string_view line : SplitLines(*current)) {
    if (std::optional<int> tid = ParseInt<int>(Trim(line))) present.insert(*tid);
  }
  int refused = 0;
  std::string refusal;
  for (int tid : tids) {
    if (present.contains(tid)) continue;
    absl::Status written = fs_.WriteFile(tasks_path, absl::StrCat(tid));
    if (written.ok()) continue;
    const int err = ErrnoOf(written);
    if (err == ESRCH) continue;  // the thread exited meanwhile
    if (err == ENOENT) {         // the group was removed under us
      gone = true;
      return "its MON group was removed by someone else";
    }
    ++refused;
    if (refusal.empty()) {
      refusal = err == EINVAL ? "a thread belongs to another CTRL_MON group (EINVAL)"
                              : std::string(written.message());
    }
  }
  if (refused == 0) return "";
  return absl::StrCat(refused, " of ", tids.size(), " threads not monitored: ", refusal);
}

std::map<std::string, std::string> ResctrlMonitor::Sync(const std::vector<ResctrlPod>& pods) {
  std::map<std::string, std::string> unmonitored;
  RootLock lock(fs_, info_.root, LOCK_EX);
  std::set<std::string> wanted;
  for (const ResctrlPod& pod : pods) wanted.insert(pod.uid);
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (wanted.contains(*it)) {
      ++it;
      continue;
    }
    (void)fs_.RemoveDir(GroupDir(*it));  // already gone is fine
    parents_.erase(*it);
    it = groups_.erase(it);
  }
  // A pod that moved to another CTRL_MON group (the allocator capped it or
  // let it go) gets its MON group anew under that parent: the old one lost
  // its threads with the move (or went with its parent's rmdir).
  for (const ResctrlPod& pod : pods) {
    auto parent = parents_.find(pod.uid);
    const std::string old_parent = parent == parents_.end() ? "" : parent->second;
    if (old_parent == pod.ctrl_group) continue;
    if (groups_.contains(pod.uid)) {
      (void)fs_.RemoveDir(GroupDir(pod.uid));
      groups_.erase(pod.uid);
    }
    if (pod.ctrl_group.empty()) {
      parents_.erase(pod.uid);
    } else {
      parents_[pod.uid] = pod.ctrl_group;
    }
  }
  const uint32_t foreign = ForeignGroups();
  const uint32_t budget = info_.num_rmids > 1 + foreign ? info_.num_rmids - 1 - foreign : 0;

  // Shared mode ends once the RMIDs outside per-pod groups (the shared groups'
  // included) would hold every pod that has none.
  size_t without_group = 0;
  for (const ResctrlPod& pod : pods) {
    if (!groups_.contains(pod.uid)) ++without_group;
  }
  if (shared_mode_ && budget >= groups_.size() + without_group) {
    shared_mode_ = false;
    short_windows_ = 0;
    for (const std::string& qos : shared_groups_) (void)fs_.RemoveDir(SharedGroupDir(qos));
    shared_groups_.clear();
  }

  std::vector<const ResctrlPod*> order;
  for (const ResctrlPod& pod : pods) order.push_back(&pod);
  std::stable_sort(order.begin(), order.end(), [](const ResctrlPod* a, const ResctrlPod* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->uid < b->uid;
  });
  std::string exhausted;  // set once mkdir says no RMID is left
  bool short_of_rmids = false;
  std::map<std::string, std::vector<int>> shared_tids;  // QoS class -> threads
  std::map<std::string, std::vector<std::string>> shared_pods;
  for (const ResctrlPod* pod : order) {
    if (!groups_.contains(pod->uid)) {
      std::string no_rmid;
      if (shared_mode_) {
        no_rmid = "no RMID for new per-pod groups";
      } else if (!exhausted.empty()) {
        no_rmid = exhausted;
      } else if (groups_.size() + shared_groups_.size() >= budget) {
        no_rmid =
            absl::StrCat("RMID budget exhausted (num_rmids ", info_.num_rmids, ", ", foreign,
                         " held by other groups, ", groups_.size(), " by higher-priority pods)");
      } else {
        absl::Status made = fs_.MakeDir(GroupDir(pod->uid));
        if (!made.ok() && ErrnoOf(made) != EEXIST) {
          const int err = ErrnoOf(made);
          if (err == ENOSPC) {
            exhausted = no_rmid = "no RMID left (ENOSPC)";
          } else if (err == EBUSY) {
            exhausted = no_rmid = "free RMIDs still in limbo (EBUSY); retried next window";
          } else {
            unmonitored[pod->uid] = std::string(made.message());
            continue;
          }
        }
      }
      if (!no_rmid.empty()) {
        if (no_rmid.find("EBUSY") == std::string::npos) short_of_rmids = true;
        if (shared_mode_ && !pod->qos_class.empty()) {
          shared_tids[pod->qos_class].insert(shared_tids[pod->qos_class].end(), pod->tids.begin(),
                                             pod->tids.end());
          shared_pods[pod->qos_class].push_back(pod->uid);
        }
        unmonitored[pod->uid] = no_rmid;
        continue;
      }
      groups_.insert(pod->uid);
    }
    bool gone = false;
    const std::string refusal = WriteTids(GroupDir(pod->uid), pod->tids, gone);
    if (gone) groups_.erase(pod->uid);
    if (!refusal.empty()) unmonitored[pod->uid] = refusal;
  }

  // Pods without an RMID of their own share one group per QoS class.
  for (auto it = shared_groups_.begin(); it != shared_groups_.end();) {
    if (shared_pods.contains(*it)) {
      ++it;
      continue;
    }
    (void)fs_.RemoveDir(SharedGroupDir(*it));
    it = shared_groups_.erase(it);
  }
  for (const auto& [qos, uids] : shared_pods) {
    const std::string dir = SharedGroupDir(qos);
    std::string problem;
    if (!shared_groups_.contains(qos)) {
      absl::Status made = fs_.MakeDir(dir);
      if (made.ok() || ErrnoOf(made) == EEXIST) {
        shared_groups_.insert(qos);
      } else {
        problem = absl::StrCat("and no RMID for the shared ", qos, " group either (",
                               made.message(), ")");
      }
    }
    if (problem.empty()) {
      bool gone = false;
      const std::string refusal = WriteTids(dir, shared_tids[qos], gone);
      if (gone) shared_groups_.erase(qos);
      problem = absl::StrCat("its threads are counted in the shared ", qos, " group ",
                             dir.substr(dir.rfind('/') + 1),
                             ", so its own LLC occupancy and bandwidth are not measured",
                             refusal.empty() ? "" : "; ", refusal);
    }
    for (const std::string& uid : uids) {
      unmonitored[uid] = absl::StrCat(unmonitored[uid], ": ", problem);
    }
  }

  if (short_of_rmids && !shared_mode_ && ++short_windows_ >= kSharedGroupsAfterWindows) {
    shared_mode_ = true;  // from the next window on
  } else if (!short_of_rmids) {
    short_windows_ = 0;
  }
  const size_t used = groups_.size() + shared_groups_.size();
  rmids_free_ = budget > used ? budget - static_cast<uint32_t>(used) : 0;
  return unmonitored;
}

std::map<std::string, GroupCounters> ResctrlMonitor::ReadPods() {
  RootLock lock(fs_, info_.root, LOCK_SH);
  std::map<std::string, GroupCounters> counters;
  for (const std::string& uid : groups_) {
    absl::StatusOr<GroupCounters> group = ReadGroupCounters(fs_, GroupDir(uid), info_);
    if (group.ok()) counters[uid] = std::move(*group);
  }
  return counters;
}

absl::StatusOr<GroupCounters> ResctrlMonitor::ReadNode() {
  RootLock lock(fs_, info_.root, LOCK_SH);
  absl::StatusOr<GroupCounters> total = ReadGroupCounters(fs_, info_.root, info_);
  if (!total.ok()) return total;
  absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(info_.root);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& entry : *entries) {
    if (!IsGroupDir(entry)) continue;
    absl::StatusOr<GroupCounters> group =
        ReadGroupCounters(fs_, JoinPath(info_.root, entry.name), info_);
    if (!group.ok()) continue;
    for (const auto& [id, c] : *group) {
      DomainCounters& t = (*total)[id];
      auto add = [](std::optional<uint64_t>& sum, const std::optional<uint64_t>& v) {
        sum = (sum && v) ? std::optional<uint64_t>(*sum + *v) : std::nullopt;
      };
      add(t.occupancy_bytes, c.occupancy_bytes);
      add(t.mbm_total_bytes, c.mbm_total_bytes);
      add(t.mbm_local_bytes, c.mbm_local_bytes);
      if (!c.problem.empty()) t.problem = c.problem;
      for (auto& [node, part] : t.parts) {
        auto other = c.parts.find(node);
        const PartCounters none;
        const PartCounters& o = other == c.parts.end() ? none : other->second;
        add(part.occupancy_bytes, o.occupancy_bytes);
        add(part.mbm_total_bytes, o.mbm_total_bytes);
        add(part.mbm_local_bytes, o.mbm_local_bytes);
      }
    }
  }
  return total;
}

}  // namespace neighborly::agent
