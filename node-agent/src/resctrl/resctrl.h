// Per-pod L3 occupancy and memory bandwidth through the kernel's resctrl file
// system: one MON group per pod (`mon_groups/neighborly-<uid>`) holding every
// thread of the pod, counters read per L3 domain (`mon_data/mon_L3_<id>`).
//
//   ResctrlInfo info = DetectResctrl(fs, mount_table);
//   ResctrlMonitor monitor(fs, info);
//   monitor.Start(running_uids);                   // adopt ours, collect stale groups
//   unmonitored = monitor.Sync(pods);               // each window: groups + TIDs
//   auto before = monitor.Read(); ... auto after = monitor.Read();
//   ResctrlRates rates = ComputeRates(before[uid], after[uid], seconds);
//
// Concurrency with other resctrl users follows the kernel documentation:
// flock(LOCK_EX) on the resctrl root around changes, LOCK_SH around reads.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_H_
#define NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "node-agent/src/pods/cgroup_mounts.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

// "123\n" -> 123. The kernel's "Unavailable", "Error" and "Unassigned" (and any
// other non-number) are "no sample": an Unavailable status naming the token.
absl::StatusOr<uint64_t> ParseMonValue(std::string_view text);
// "mon_L3_05" -> 5, "mon_L3_100" -> 100; nullopt for anything else.
std::optional<uint32_t> ParseMonDomainName(std::string_view name,
                                           std::string_view prefix = "mon_L3_");

struct ResctrlInfo {
  bool usable = false;
  std::string reason;  // why not usable
  std::string root = "/sys/fs/resctrl";
  uint32_t num_rmids = 0;
  bool occupancy = false;
  bool mbm_total = false;
  bool mbm_local = false;
};

// From the host's mount table and info/L3_MON.
ResctrlInfo DetectResctrl(const Filesystem& fs, const std::vector<MountEntry>& mounts);

struct DomainCounters {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes;  // cumulative
  std::optional<uint64_t> mbm_local_bytes;  // cumulative
  std::string problem;                      // why a supported counter is missing
};
using GroupCounters = std::map<uint32_t, DomainCounters>;  // L3 cache id -> counters

// Reads mon_data/mon_L3_*/ of one group. With SNC, a domain whose top-level
// files are missing is the sum of its mon_sub_L3_* directories.
absl::StatusOr<GroupCounters> ReadGroupCounters(const Filesystem& fs, std::string_view group_dir,
                                                const ResctrlInfo& info);

struct DomainRates {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes_per_second;
  std::optional<uint64_t> mbm_local_bytes_per_second;
};

struct ResctrlRates {
  std::map<uint32_t, DomainRates> domains;
  // Sums over the domains; absent with a reason when any domain lacked a sample.
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes_per_second;
  std::optional<uint64_t> mbm_local_bytes_per_second;
  std::map<std::string, std::string> unavailable;  // proto metric name -> reason
};

// Occupancy from `end` (a snapshot); bandwidth from the cumulative counters
// over `seconds`. A counter that went backwards (group recreated, counter
// reassigned) drops that interval.
ResctrlRates ComputeRates(const GroupCounters& start, const GroupCounters& end, double seconds,
                          const ResctrlInfo& info);

struct ResctrlPod {
  std::string uid;
  int priority = 0;  // higher gets an RMID first (latency-critical, Guaranteed)
  std::vector<int> tids;
};

class ResctrlMonitor {
 public:
  ResctrlMonitor(Filesystem& fs, ResctrlInfo info, std::string prefix = "neighborly-");
  ResctrlMonitor(const ResctrlMonitor&) = delete;
  ResctrlMonitor& operator=(const ResctrlMonitor&) = delete;

  const ResctrlInfo& info() const { return info_; }

  // Adopts our groups of pods in `running` and removes our other groups
  // (left over by a previous agent).
  absl::Status Start(const std::set<std::string>& running);

  // Creates groups for new pods (highest priority first, within the RMID
  // budget), removes those of gone pods and writes every TID not yet in its
  // group. Returns the pods left unmonitored, uid -> reason.
  std::map<std::string, std::string> Sync(const std::vector<ResctrlPod>& pods);

  // Counters of every monitored pod; a pod whose group cannot be read is left out.
  std::map<std::string, GroupCounters> ReadPods() const;
  // Whole-node counters per L3 domain (the default group plus every CTRL_MON group).
  absl::StatusOr<GroupCounters> ReadNode() const;

  // RMIDs still free for new groups, by our accounting.
  uint32_t rmids_free() const { return rmids_free_; }
  const std::set<std::string>& monitored() const { return groups_; }

  std::string GroupDir(std::string_view uid) const;

 private:
  // RMIDs that groups other than ours hold (CTRL_MON and MON groups).
  uint32_t ForeignGroups() const;

  Filesystem& fs_;
  ResctrlInfo info_;
  std::string prefix_;
  std::set<std::string> groups_;  // uids with a group
  uint32_t rmids_free_ = 0;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_H_
