// The libpqos RDT backend (`--rdt-backend pqos`): one pqos monitoring group
// per pod, started on the pod's thread ids and re-synced every window with
// pqos_mon_add_pids / pqos_mon_remove_pids (libpqos knows nothing of cgroups).
// Same RdtMonitor contract, and so the same report, as the resctrl backend.
//
//   absl::StatusOr<std::unique_ptr<PqosMonitor>> rdt = PqosMonitor::Create(NewLibpqos(), 0,
//   nullptr); if (!rdt.ok()) ... rdt.status().message() says why (no RDT, pqos's own words)
//
// libpqos aggregates a group's counters over every socket, so a pod's values
// are filed under one L3 domain (`pod_domain`); totals are what the report
// carries per pod. Node-level per-domain values come from `node_reader` (the
// resctrl file system libpqos drives in OS mode) when there is one.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_MONITOR_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_MONITOR_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "node-agent/src/pqos/pqos_library.h"
#include "node-agent/src/resctrl/resctrl.h"

namespace neighborly::agent {

class PqosMonitor final : public RdtMonitor {
 public:
  using NodeReader = std::function<absl::StatusOr<GroupCounters>()>;

  // Initialises the library; fails (with libpqos's reason) where it cannot
  // monitor. `node_reader` may be null.
  static absl::StatusOr<std::unique_ptr<PqosMonitor>> Create(std::shared_ptr<PqosLibrary> library,
                                                             uint32_t pod_domain,
                                                             NodeReader node_reader);

  const ResctrlInfo& info() const override { return info_; }
  // libpqos groups end with the process that made them: nothing to collect.
  absl::Status Start(const std::set<std::string>& running) override;
  std::map<std::string, std::string> Sync(const std::vector<ResctrlPod>& pods) override;
  std::map<std::string, GroupCounters> ReadPods() override;
  absl::StatusOr<GroupCounters> ReadNode() override;
  uint32_t rmids_free() const override;
  const std::set<std::string>& monitored() const override { return monitored_; }

 private:
  PqosMonitor(std::shared_ptr<PqosLibrary> library, PqosCapabilities caps, uint32_t pod_domain,
              NodeReader node_reader);

  struct Group {
    int handle = 0;
    std::set<pid_t> tids;
  };

  std::shared_ptr<PqosLibrary> library_;
  PqosCapabilities caps_;
  ResctrlInfo info_;
  uint32_t pod_domain_;
  NodeReader node_reader_;
  std::map<std::string, Group> groups_;  // uid -> group
  std::set<std::string> monitored_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_MONITOR_H_
