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
#include <utility>
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

// The counters of one sub-NUMA part of an L3 domain (SNC: mon_sub_L3_<node>).
struct PartCounters {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes;  // cumulative
  std::optional<uint64_t> mbm_local_bytes;  // cumulative
};

struct DomainCounters {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes;  // cumulative
  std::optional<uint64_t> mbm_local_bytes;  // cumulative
  std::string problem;                      // why a supported counter is missing
  // NUMA node -> its part, where the kernel splits the domain (SNC); empty otherwise.
  std::map<uint32_t, PartCounters> parts;
};
using GroupCounters = std::map<uint32_t, DomainCounters>;  // L3 cache id -> counters

// Reads mon_data/mon_L3_*/ of one group. With SNC each mon_sub_L3_<node> is
// kept as a part; a domain whose top-level files are missing is their sum.
absl::StatusOr<GroupCounters> ReadGroupCounters(const Filesystem& fs, std::string_view group_dir,
                                                const ResctrlInfo& info);

struct PartRates {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes_per_second;
  std::optional<uint64_t> mbm_local_bytes_per_second;
};

struct DomainRates {
  std::optional<uint64_t> occupancy_bytes;
  std::optional<uint64_t> mbm_total_bytes_per_second;
  std::optional<uint64_t> mbm_local_bytes_per_second;
  std::map<uint32_t, PartRates> parts;  // NUMA node -> rates of its part (SNC)
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
  ResctrlPod(std::string uid_in, int priority_in, std::vector<int> tids_in,
             std::string qos_class_in = "")
      : uid(std::move(uid_in)),
        priority(priority_in),
        tids(std::move(tids_in)),
        qos_class(std::move(qos_class_in)) {}
  std::string uid;
  int priority = 0;  // higher gets an RMID first (latency-critical, Guaranteed)
  std::vector<int> tids;
  // "guaranteed" | "burstable" | "besteffort": the shared group the pod joins
  // when RMIDs run out (empty: none, the pod stays unmonitored).
  std::string qos_class;
  // The CTRL_MON group the pod's threads are in (ResctrlAllocator::GroupOf):
  // its MON group is then `<root>/<ctrl_group>/mon_groups/<prefix><uid>` (a
  // MON group only takes its parent's tasks). Empty: the default group.
  std::string ctrl_group;
};

// What the agent needs from an RDT backend (the resctrl file system or
// libpqos): per-pod monitoring groups kept in step with the pods' threads, and
// cumulative counters per L3 domain. Tests drive the agent with fakes of the
// system doors behind each backend.
class RdtMonitor {
 public:
  virtual ~RdtMonitor() = default;

  // usable, num_rmids and the supported events.
  virtual const ResctrlInfo& info() const = 0;

  // Adopts our groups of pods in `running` and removes our other groups
  // (left over by a previous agent).
  virtual absl::Status Start(const std::set<std::string>& running) = 0;

  // Creates groups for new pods (highest priority first, within the RMID
  // budget), removes those of gone pods and adds every TID not yet in its
  // group. Returns the pods left unmonitored (or monitored only partly, or
  // only as part of a shared group), uid -> reason.
  virtual std::map<std::string, std::string> Sync(const std::vector<ResctrlPod>& pods) = 0;

  // Counters of every pod with a group of its own; a pod whose group cannot be
  // read is left out.
  virtual std::map<std::string, GroupCounters> ReadPods() = 0;
  // Whole-node counters per L3 domain.
  virtual absl::StatusOr<GroupCounters> ReadNode() = 0;

  // RMIDs still free for new groups, by our accounting.
  virtual uint32_t rmids_free() const = 0;
  // Pods with a group of their own.
  virtual const std::set<std::string>& monitored() const = 0;
};

// When pods go without an RMID for kSharedGroupsAfterWindows windows in a row,
// ResctrlMonitor stops making per-pod groups for newcomers and puts every pod
// without one into a shared group per QoS class (`<prefix>qos-<class>`), as
// Koordinator does: their threads are then at least counted per class, and
// their per-pod occupancy is reported unavailable with that reason. It goes
// back to per-pod groups once the free RMIDs would hold every such pod.
inline constexpr int kSharedGroupsAfterWindows = 3;

class ResctrlMonitor final : public RdtMonitor {
 public:
  ResctrlMonitor(Filesystem& fs, ResctrlInfo info, std::string prefix = "neighborly-");
  ResctrlMonitor(const ResctrlMonitor&) = delete;
  ResctrlMonitor& operator=(const ResctrlMonitor&) = delete;

  const ResctrlInfo& info() const override { return info_; }
  absl::Status Start(const std::set<std::string>& running) override;
  std::map<std::string, std::string> Sync(const std::vector<ResctrlPod>& pods) override;
  std::map<std::string, GroupCounters> ReadPods() override;
  // The default group plus every CTRL_MON group.
  absl::StatusOr<GroupCounters> ReadNode() override;
  uint32_t rmids_free() const override { return rmids_free_; }
  const std::set<std::string>& monitored() const override { return groups_; }

  std::string GroupDir(std::string_view uid) const;
  // The shared group of a QoS class ("burstable").
  std::string SharedGroupDir(std::string_view qos_class) const;
  // Whether pods without an RMID now go to shared per-class groups.
  bool shared_mode() const { return shared_mode_; }
  const std::set<std::string>& shared_groups() const { return shared_groups_; }

 private:
  // Writes every TID not yet in `group_dir`/tasks; returns why some could not
  // be written (empty when all were). `gone` is set when the group vanished.
  std::string WriteTids(const std::string& group_dir, const std::vector<int>& tids, bool& gone);

  // RMIDs that groups other than ours hold (CTRL_MON and MON groups).
  uint32_t ForeignGroups() const;

  Filesystem& fs_;
  ResctrlInfo info_;
  std::string prefix_;
  std::set<std::string> groups_;  // uids with a group
  std::map<std::string, std::string> parents_;  // uid -> its CTRL_MON group ("" or absent: root)
  uint32_t rmids_free_ = 0;
  int short_windows_ = 0;  // consecutive Syncs that left a pod without an RMID
  bool shared_mode_ = false;
  std::set<std::string> shared_groups_;  // QoS classes with a shared group
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_H_
