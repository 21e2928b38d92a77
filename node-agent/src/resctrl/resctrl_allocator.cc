#include "node-agent/src/resctrl/resctrl_allocator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

constexpr std::string_view kLatencyCritical = "latency-critical";

bool IsGroupDir(const DirEntry& entry) {
  return entry.is_dir && entry.name != "info" && entry.name != "mon_data" &&
         entry.name != "mon_groups";
}

bool Intersects(const std::set<uint32_t>& a, const std::set<uint32_t>& b) {
  for (uint32_t x : a) {
    if (b.contains(x)) return true;
  }
  return false;
}

// The kernel counts 1 GB/s as 8 AMD units; the software controller's MB is MiB.
constexpr uint64_t kAmdUnitBytesPerSecond = 125'000'000;
constexpr uint64_t kMiB = 1 << 20;

}  // namespace

absl::StatusOr<std::vector<SchemataLine>> ParseSchemata(std::string_view text) {
  std::vector<SchemataLine> lines;
  for (std::string_view raw : SplitLines(text)) {
    const std::string_view line = Trim(raw);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("schemata line \"", Av(line.substr(0, 64)), "\": no RESOURCE:"));
    }
    SchemataLine parsed{.resource = std::string(Trim(line.substr(0, colon)))};
    std::string_view rest = line.substr(colon + 1);
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const std::string_view item = Trim(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      const size_t eq = item.find('=');
      std::optional<uint32_t> id;
      if (eq != std::string_view::npos) id = ParseInt<uint32_t>(Trim(item.substr(0, eq)));
      const std::string_view value = eq == std::string_view::npos ? "" : Trim(item.substr(eq + 1));
      if (!id || value.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("schemata line \"", Av(line.substr(0, 64)),
                                                       "\": item \"", Av(item.substr(0, 32)),
                                                       "\" is not ID=VALUE"));
      }
      parsed.values[*id] = std::string(value);
    }
    lines.push_back(std::move(parsed));
  }
  return lines;
}

std::string FormatSchemataLine(const SchemataLine& line) {
  std::string out = absl::StrCat(line.resource, ":");
  bool first = true;
  for (const auto& [id, value] : line.values) {
    absl::StrAppend(&out, first ? "" : ";", id, "=", value);
    first = false;
  }
  return out;
}

std::string ContiguousMask(uint32_t width) {
  if (width == 0) return "0";
  const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  return absl::StrCat(absl::Hex(mask));
}

std::optional<uint32_t> MbaValue(const ResctrlAllocInfo& info, const ClassCapPolicy& policy,
                                 std::string* why) {
  if (!info.mba) {
    *why = info.mba_reason;
    return std::nullopt;
  }
  switch (info.mba_unit) {
    case MbaUnit::kMBps:
      if (policy.mba_mbps == 0) {
        *why =
            "the node runs the MBA Software Controller (mba_MBps) and the policy gives no mbaMBps";
        return std::nullopt;
      }
      return std::max(policy.mba_mbps, info.mba_min);
    case MbaUnit::kPercent: {
      if (policy.mba_percent == 0 || policy.mba_percent >= 100) {
        *why = "no mbaPercent below 100 in the policy";
        return std::nullopt;
      }
      // Down to the granularity (the kernel would round up), at least the minimum.
      const uint32_t gran = std::max<uint32_t>(info.mba_granularity, 1);
      return std::max(policy.mba_percent / gran * gran, info.mba_min);
    }
    case MbaUnit::kAmdEighthGBps: {
      if (policy.mba_percent == 0 || policy.mba_percent >= 100) {
        *why = "no mbaPercent below 100 in the policy";
        return std::nullopt;
      }
      const uint32_t value =
          static_cast<uint32_t>(uint64_t{info.mba_max} * policy.mba_percent / 100);
      return std::max({value, info.mba_min, 1u});
    }
    case MbaUnit::kNone:
      break;
  }
  *why = "no MBA unit";
  return std::nullopt;
}

ResctrlAllocator::ResctrlAllocator(Filesystem& fs, ResctrlAllocInfo info, bool enabled,
                                   std::string prefix)
    : fs_(fs), info_(std::move(info)), enabled_(enabled), prefix_(std::move(prefix)) {}

std::string ResctrlAllocator::GroupDir(std::string_view workload_class) const {
  return JoinPath(info_.root, absl::StrCat(prefix_, Av(workload_class)));
}

std::string ResctrlAllocator::GroupOf(std::string_view uid) const {
  auto it = caps_.find(std::string(uid));
  return it == caps_.end() ? "" : it->second.group;
}

absl::Status ResctrlAllocator::Start() {
  absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(info_.root);
  if (!entries.ok()) return entries.status();
  absl::Status result;
  for (const DirEntry& entry : *entries) {
    if (!IsGroupDir(entry) || !entry.name.starts_with(prefix_)) continue;
    absl::Status removed = fs_.RemoveDir(JoinPath(info_.root, entry.name));
    if (removed.ok()) {
      ++status_.changes_total;
      spdlog::info("resctrl allocation: removed stale group {} (left by an earlier agent)",
                   entry.name);
    } else if (result.ok()) {
      result = removed;
    }
  }
  return result;
}

uint32_t ResctrlAllocator::ForeignGroups() const {
  uint32_t count = 0;
  absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(info_.root);
  if (!entries.ok()) return 0;
  for (const DirEntry& entry : *entries) {
    if (IsGroupDir(entry) && !entry.name.starts_with(prefix_)) ++count;
  }
  return count;
}

void ResctrlAllocator::RecordWriteError(const absl::Status& status) {
  ++status_.write_errors_total;
  status_.last_write_error = std::string(status.message());
  spdlog::warn("resctrl allocation: the kernel refused: {}", status_.last_write_error);
}

void ResctrlAllocator::RemoveGroup(const std::string& workload_class) {
  // rmdir moves the group's tasks back to the default group (and removes its
  // MON groups); already gone is fine.
  absl::Status removed = fs_.RemoveDir(GroupDir(workload_class));
  if (!removed.ok() && ErrnoOf(removed) != ENOENT) {
    RecordWriteError(removed);
    return;
  }
  ++status_.changes_total;
  spdlog::info("resctrl allocation: removed group {}{}", prefix_, workload_class);
  groups_.erase(workload_class);
}

void ResctrlAllocator::RemoveAll() {
  std::vector<std::string> classes;
  for (const auto& [c, g] : groups_) classes.push_back(c);
  for (const std::string& c : classes) RemoveGroup(c);
  // A group whose rmdir failed is forgotten too: Start removes it next time.
  groups_.clear();
  caps_.clear();
}

void ResctrlAllocator::Idle(std::string reason) {
  RemoveAll();
  status_.allocating = false;
  if (reason != logged_reason_) {
    spdlog::info("resctrl allocation: {}", reason);
    logged_reason_ = reason;
  }
  status_.reason = std::move(reason);
  status_.groups.clear();
}

void ResctrlAllocator::Stop() {
  const bool had_groups = !groups_.empty();
  RemoveAll();
  status_.allocating = false;
  status_.reason = "stopped";
  status_.groups.clear();
  if (had_groups) spdlog::info("resctrl allocation: stopped, every group we made removed");
}

int ResctrlAllocator::MoveTids(const std::string& tasks, const std::vector<int>& tids) {
  std::set<int> present;
  if (absl::StatusOr<std::string> current = fs_.ReadFile(tasks); current.ok()) {
    for (std::string_view line : SplitLines(*current)) {
      if (std::optional<int> tid = ParseInt<int>(Trim(line))) present.insert(*tid);
    }
  }
  int refused = 0;
  for (int tid : tids) {
    if (present.contains(tid)) continue;
    absl::Status written = fs_.WriteFile(tasks, absl::StrCat(tid));
    if (written.ok() || ErrnoOf(written) == ESRCH) continue;  // ESRCH: the thread exited
    ++refused;
    RecordWriteError(written);
  }
  return refused;
}

void ResctrlAllocator::Sync(const std::optional<AllocationPolicyView>& policy,
                            const std::vector<AllocPod>& pods,
                            const std::map<uint32_t, std::set<uint32_t>>& l3_numa) {
  if (!enabled_) return Idle("off (the agent runs without --resctrl-allocation)");
  if (!info_.l3_cat && !info_.mba) {
    return Idle(absl::StrCat("unavailable: ", info_.l3_reason, "; ", info_.mba_reason));
  }
  if (!policy || policy->classes.empty()) {
    return Idle("off (the extender sends no allocation policy)");
  }
  absl::StatusOr<std::string> root_text = fs_.ReadFile(JoinPath(info_.root, "schemata"));
  absl::StatusOr<std::vector<SchemataLine>> root =
      root_text.ok() ? ParseSchemata(*root_text)
                     : absl::StatusOr<std::vector<SchemataLine>>(root_text.status());
  if (!root.ok()) {
    return Idle(absl::StrCat("unavailable: the root schemata: ", root.status().message()));
  }
  std::set<uint32_t> l3_ids, mb_ids;
  for (const SchemataLine& line : *root) {
    std::set<uint32_t>& ids = line.resource == "L3" ? l3_ids : mb_ids;
    if (line.resource != "L3" && line.resource != "MB") continue;
    for (const auto& [id, v] : line.values) ids.insert(id);
  }

  // Each pod's class: the extender's model where it names one, else the annotation.
  auto class_of = [&](const AllocPod& pod) -> std::string_view {
    auto it = policy->pod_classes.find(pod.uid);
    return it != policy->pod_classes.end() ? std::string_view(it->second)
                                           : std::string_view(pod.workload_class);
  };
  // Where the latency-critical pods are: their L3 domains, and those domains' NUMA nodes.
  std::set<uint32_t> lc_l3, lc_numa;
  for (const AllocPod& pod : pods) {
    if (class_of(pod) != kLatencyCritical) continue;
    lc_l3.insert(pod.l3_domains.begin(), pod.l3_domains.end());
    for (uint32_t d : pod.l3_domains) {
      if (auto it = l3_numa.find(d); it != l3_numa.end()) {
        lc_numa.insert(it->second.begin(), it->second.end());
      }
    }
  }
  auto domain_numa = [&](uint32_t d) {
    auto it = l3_numa.find(d);
    return it == l3_numa.end() ? std::set<uint32_t>{} : it->second;
  };

  std::map<std::string, PodCap> caps;
  std::vector<std::string> held_back;
  std::set<std::string> wanted;
  for (const ClassCapPolicy& cls : policy->classes) {
    if (cls.workload_class.empty() || cls.workload_class == kLatencyCritical) continue;
    // The pods of this class beside a latency-critical one.
    std::vector<const AllocPod*> members;
    for (const AllocPod& pod : pods) {
      if (class_of(pod) != cls.workload_class) continue;
      std::set<uint32_t> numa;
      for (uint32_t d : pod.l3_domains) {
        const std::set<uint32_t> n = domain_numa(d);
        numa.insert(n.begin(), n.end());
      }
      if (Intersects(pod.l3_domains, lc_l3) || Intersects(numa, lc_numa)) members.push_back(&pod);
    }
    if (members.empty()) continue;

    // The group's schemata: capped ways where latency-critical pods share the
    // L3, a capped bandwidth where they share the NUMA node, the rest full.
    // Every line is written in full (uncapped values included), so that a cap
    // the policy drops is lifted in the kernel too.
    std::string text, mba_why;
    std::optional<uint32_t> width;
    if (info_.l3_cat && cls.l3_ways_fraction > 0 && cls.l3_ways_fraction < 1) {
      width = std::clamp(static_cast<uint32_t>(std::lround(cls.l3_ways_fraction * info_.cbm_bits)),
                         std::max<uint32_t>(info_.min_cbm_bits, 1), info_.cbm_bits);
    }
    if (info_.l3_cat && !l3_ids.empty()) {
      SchemataLine l3{.resource = "L3"};
      for (uint32_t id : l3_ids) {
        l3.values[id] = width && lc_l3.contains(id) ? ContiguousMask(*width) : info_.cbm_mask;
      }
      absl::StrAppend(&text, FormatSchemataLine(l3), "\n");
    }
    // A value and a flag, not an optional: GCC 12 warns (wrongly) that the
    // optional may be read uninitialised further down.
    uint32_t mba_value = 0;
    bool mba = false;
    if (!mb_ids.empty()) {
      if (std::optional<uint32_t> v = MbaValue(info_, cls, &mba_why)) {
        mba = true;
        mba_value = *v;
      }
    }
    std::set<uint32_t> mb_capped;
    if (info_.mba && !mb_ids.empty()) {
      SchemataLine mb{.resource = "MB"};
      for (uint32_t id : mb_ids) {
        const bool capped = mba && (Intersects(domain_numa(id), lc_numa) || lc_l3.contains(id));
        if (capped) mb_capped.insert(id);
        mb.values[id] = absl::StrCat(capped ? mba_value : info_.mba_max);
      }
      absl::StrAppend(&text, FormatSchemataLine(mb), "\n");
    }
    if (!width && !mba) {
      held_back.push_back(absl::StrCat(cls.workload_class, ": nothing to cap on this node (",
                                       info_.l3_cat ? "no l3WaysFraction below 1" : info_.l3_reason,
                                       "; ", mba_why, ")"));
      continue;
    }

    const std::string dir = GroupDir(cls.workload_class);
    if (!groups_.contains(cls.workload_class)) {
      const uint32_t foreign = ForeignGroups();
      const uint32_t ours = static_cast<uint32_t>(groups_.size());
      std::string exhausted;
      if (1 + foreign + ours >= info_.num_closids) {
        exhausted = absl::StrCat("no CLOSID left for ", prefix_, cls.workload_class,
                                 " (num_closids ", info_.num_closids, ": the root, ", foreign,
                                 " other groups and ", ours, " of ours)");
      } else if (absl::Status made = fs_.MakeDir(dir); !made.ok() && ErrnoOf(made) != EEXIST) {
        if (ErrnoOf(made) == ENOSPC) {
          exhausted = absl::StrCat("no CLOSID left for ", prefix_, cls.workload_class,
                                   " (mkdir: ENOSPC)");
        } else {
          RecordWriteError(made);
          held_back.push_back(absl::StrCat(cls.workload_class, ": ", made.message()));
          continue;
        }
      }
      if (!exhausted.empty()) {
        ++status_.closid_exhausted_total;
        held_back.push_back(absl::StrCat(exhausted, ": not capped, still monitored"));
        continue;
      }
      ++status_.changes_total;
      spdlog::info("resctrl allocation: made group {}", dir);
      groups_[cls.workload_class];
    }
    Group& group = groups_[cls.workload_class];
    wanted.insert(cls.workload_class);
    if (text != group.schemata) {
      if (text == group.refused) {
        held_back.push_back(absl::StrCat(cls.workload_class, ": schemata refused: ",
                                         status_.last_write_error));
        continue;
      }
      absl::Status written = fs_.WriteFile(JoinPath(dir, "schemata"), text);
      if (!written.ok()) {
        RecordWriteError(written);
        group.refused = text;
        held_back.push_back(
            absl::StrCat(cls.workload_class, ": schemata refused: ", written.message()));
        continue;  // its pods stay where they are, uncapped
      }
      ++status_.changes_total;
      spdlog::info("resctrl allocation: {}/schemata: {}", dir, std::string(Trim(text)));
      group.schemata = text;
      group.refused.clear();
    }

    std::set<std::string> now;
    for (const AllocPod* pod : members) {
      if (MoveTids(JoinPath(dir, "tasks"), pod->tids) == static_cast<int>(pod->tids.size()) &&
          !pod->tids.empty()) {
        continue;  // none of its threads moved: not capped
      }
      if (!group.members.contains(pod->uid)) {
        ++status_.changes_total;
        spdlog::info("resctrl allocation: pod {} joins {}", pod->uid, dir);
      }
      now.insert(pod->uid);
      PodCap cap{.group = absl::StrCat(prefix_, cls.workload_class)};
      for (uint32_t d : pod->l3_domains) {
        if (width && lc_l3.contains(d)) cap.l3_domains.push_back(d);
      }
      if (!cap.l3_domains.empty()) {
        cap.l3_fraction = static_cast<double>(*width) / info_.cbm_bits;
      }
      bool mb_on_pod = false;
      for (uint32_t d : pod->l3_domains) mb_on_pod = mb_on_pod || mb_capped.contains(d);
      if (mba && mb_on_pod) {
        switch (info_.mba_unit) {
          case MbaUnit::kPercent:
            cap.mba_fraction = mba_value / 100.0;
            break;
          case MbaUnit::kAmdEighthGBps:
            cap.mba_fraction = static_cast<double>(mba_value) / info_.mba_max;
            cap.mba_bytes_per_second = uint64_t{mba_value} * kAmdUnitBytesPerSecond;
            break;
          case MbaUnit::kMBps:
            cap.mba_bytes_per_second = uint64_t{mba_value} * kMiB;
            break;
          case MbaUnit::kNone:
            break;
        }
      }
      caps[pod->uid] = std::move(cap);
    }
    // Pods that no longer qualify go back to the default group.
    for (const std::string& uid : group.members) {
      if (now.contains(uid)) continue;
      ++status_.changes_total;
      spdlog::info("resctrl allocation: pod {} leaves {}", uid, dir);
      for (const AllocPod& pod : pods) {
        if (pod.uid == uid) MoveTids(JoinPath(info_.root, "tasks"), pod.tids);
      }
    }
    group.members = std::move(now);
  }
  // Groups no class needs now.
  std::vector<std::string> idle;
  for (const auto& [c, g] : groups_) {
    if (!wanted.contains(c)) idle.push_back(c);
  }
  for (const std::string& c : idle) RemoveGroup(c);

  caps_ = std::move(caps);
  status_.allocating = true;
  std::string reason;
  for (const std::string& h : held_back) absl::StrAppend(&reason, reason.empty() ? "" : "; ", h);
  if (reason != logged_reason_ && !reason.empty()) {
    spdlog::warn("resctrl allocation: {}", reason);
  }
  logged_reason_ = reason;
  status_.reason = std::move(reason);
  status_.groups.clear();
  for (const auto& [c, g] : groups_) status_.groups.push_back(absl::StrCat(prefix_, c));
}

}  // namespace neighborly::agent
