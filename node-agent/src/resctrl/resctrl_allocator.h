// Opt-in cache and bandwidth allocation for batch pods through resctrl: one
// CTRL_MON group per capped class (`<prefix><class>`, e.g. neighborly-batch)
// whose schemata caps the L3 ways (CAT) of the domains latency-critical pods
// use and the memory bandwidth (MBA) of the domains on their NUMA nodes. Only
// pods of that class that share an L3 domain or NUMA node with a
// latency-critical pod join it; latency-critical pods stay in the default
// group and keep every way.
//
//   ResctrlAllocator allocator(fs, DetectResctrlAllocation(...), /*enabled=*/flag);
//   allocator.Start();                        // removes our groups a crashed agent left
//   allocator.Sync(policy, pods, l3_numa);     // each window, before the monitor's Sync
//   ResctrlPod::ctrl_group = allocator.GroupOf(uid)   // the pod's MON group goes under it
//   allocator.Stop();                         // SIGTERM: every group we made is removed
//
// Never more CTRL_MON groups than num_closids allows (the root and other
// users' groups counted): without a CLOSID the class is not capped, which is
// logged once and counted, and monitoring goes on. A write the kernel refuses
// (schemata, tasks, mkdir) is counted and reported, never fatal.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOCATOR_H_
#define NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "node-agent/src/resctrl/resctrl_alloc.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

// The caps of one class (from the extender's ack, telemetry ReportAck.allocation_policy).
struct ClassCapPolicy {
  std::string workload_class = {};  // "batch"
  double l3_ways_fraction = 0;   // (0, 1]; 0: no cache cap
  uint32_t mba_percent = 0;      // (0, 100]; 0: no bandwidth cap (percent and AMD units)
  uint32_t mba_mbps = 0;         // the cap under the MBA Software Controller; 0: none
};

struct AllocationPolicyView {
  std::vector<ClassCapPolicy> classes = {};
  // uid -> the class the extender's model resolved for the pod (the ack's
  // AllocationPolicy.pods): it wins over the pod's annotation, so a pod the
  // model calls batch from its measurements is capped though unlabelled.
  std::map<std::string, std::string, std::less<>> pod_classes = {};
};

// A pod as the allocator needs it.
struct AllocPod {
  std::string uid = {};
  // neighborly.io/class: "batch", "latency-critical"; used where the policy
  // names no class for the pod (AllocationPolicyView::pod_classes).
  std::string workload_class = {};
  std::set<uint32_t> l3_domains = {};  // where its CPUs are (every domain for the shared pool)
  std::vector<int> tids = {};
};

// The cap a pod runs under.
struct PodCap {
  std::string group = {};  // "neighborly-batch"
  std::optional<double> l3_fraction = {};
  std::optional<double> mba_fraction = {};
  std::optional<uint64_t> mba_bytes_per_second = {};
  std::vector<uint32_t> l3_domains = {};  // the capped L3 domains among the pod's
};

struct AllocatorStatus {
  bool allocating = false;
  std::string reason;  // why not allocating (or what is held back), empty when all is applied
  std::vector<std::string> groups;  // our CTRL_MON groups now
  uint64_t changes_total = 0;
  uint64_t closid_exhausted_total = 0;
  uint64_t write_errors_total = 0;
  std::string last_write_error;
};

// One schemata line: "L3:0=7ff;1=7ff" -> {"L3", {{0, "7ff"}, {1, "7ff"}}}.
struct SchemataLine {
  std::string resource = {};
  std::map<uint32_t, std::string> values = {};  // domain id -> hex mask or bandwidth
};
// Parses a schemata file (the kernel's indentation and trailing newline
// allowed); a malformed line is an InvalidArgument naming it.
absl::StatusOr<std::vector<SchemataLine>> ParseSchemata(std::string_view text);
std::string FormatSchemataLine(const SchemataLine& line);

// The low `width` bits as the kernel prints a mask: 4 -> "f", 11 -> "7ff".
std::string ContiguousMask(uint32_t width);

// The MBA value for a policy in the node's unit; nullopt (with `why`) where
// the policy gives no cap for this unit.
std::optional<uint32_t> MbaValue(const ResctrlAllocInfo& info, const ClassCapPolicy& policy,
                                 std::string* why);

class ResctrlAllocator {
 public:
  // `enabled`: the agent's --resctrl-allocation flag. Off, the allocator only
  // removes groups with our prefix (Start and every Sync).
  ResctrlAllocator(Filesystem& fs, ResctrlAllocInfo info, bool enabled,
                   std::string prefix = "neighborly-");
  ResctrlAllocator(const ResctrlAllocator&) = delete;
  ResctrlAllocator& operator=(const ResctrlAllocator&) = delete;

  // Removes every CTRL_MON group with our prefix (an earlier agent's, after a
  // crash); their tasks fall back to the default group.
  absl::Status Start();
  // Brings our groups in step with `policy` (nullopt: the extender sent none)
  // and the pods. `l3_numa`: L3 domain id -> the NUMA nodes of its CPUs.
  void Sync(const std::optional<AllocationPolicyView>& policy, const std::vector<AllocPod>& pods,
            const std::map<uint32_t, std::set<uint32_t>>& l3_numa);
  // Removes every group we made (SIGTERM, shutdown).
  void Stop();

  // The CTRL_MON group (directory name under the root) a pod is in; "" for the default group.
  std::string GroupOf(std::string_view uid) const;
  const std::map<std::string, PodCap>& caps() const { return caps_; }
  const AllocatorStatus& status() const { return status_; }
  const ResctrlAllocInfo& info() const { return info_; }
  std::string GroupDir(std::string_view workload_class) const;

 private:
  struct Group {
    std::string schemata;  // as last written (accepted)
    std::string refused;   // the text the kernel last refused (not retried until it changes)
    std::set<std::string> members;
  };

  void RemoveGroup(const std::string& workload_class);
  void RemoveAll();
  // Where the allocator stops allocating: every group removed, `reason` kept.
  void Idle(std::string reason);
  void RecordWriteError(const absl::Status& status);
  // CTRL_MON groups that are not ours (other resctrl users).
  uint32_t ForeignGroups() const;
  // Writes each TID to `tasks`; returns how many the kernel refused.
  int MoveTids(const std::string& tasks, const std::vector<int>& tids);

  Filesystem& fs_;
  ResctrlAllocInfo info_;
  bool enabled_;
  std::string prefix_;
  std::map<std::string, Group> groups_;  // class -> our group
  std::map<std::string, PodCap> caps_;   // uid -> cap
  AllocatorStatus status_;
  std::string logged_reason_;  // the reason last logged (each change logged once)
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOCATOR_H_
