// The door to Intel's libpqos (intel-cmt-cat 4.5, Debian 12): the few calls
// the pqos RDT backend makes, behind an interface so that tests run the
// backend against a fake library.
//
//   std::unique_ptr<PqosLibrary> pqos = NewLibpqos();
//   absl::StatusOr<PqosCapabilities> caps = pqos->Init();   // fails on hosts without RDT
//   absl::StatusOr<int> group = pqos->StartPids({1234, 1235}, caps->events);
//   pqos->Poll({*group}); pqos->Values(*group)->llc_bytes;
//
// libpqos is a per-process singleton that serialises every call with a lock
// file (/var/lock/libpqos): create at most one real library per process.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_LIBRARY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_LIBRARY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace neighborly::agent {

struct PqosCapabilities {
  bool occupancy = false;
  bool mbm_total = false;
  bool mbm_local = false;
  uint32_t max_rmid = 0;
  unsigned events = 0;  // the pqos_mon_event bitmask to monitor with
};

struct PqosValues {
  uint64_t llc_bytes = 0;        // occupancy now
  uint64_t mbm_total_bytes = 0;  // cumulative since the group started
  uint64_t mbm_local_bytes = 0;  // cumulative since the group started
};

class PqosLibrary {
 public:
  virtual ~PqosLibrary() = default;
  // pqos_init on the OS (resctrl) interface and the monitoring capability. The
  // error carries pqos's return code and its own log lines.
  virtual absl::StatusOr<PqosCapabilities> Init() = 0;
  // A monitoring group over the threads of `pids`; returns its handle.
  // ResourceExhausted when no RMID is left.
  virtual absl::StatusOr<int> StartPids(const std::vector<pid_t>& pids, unsigned events) = 0;
  virtual absl::Status AddPids(int group, const std::vector<pid_t>& pids) = 0;
  virtual absl::Status RemovePids(int group, const std::vector<pid_t>& pids) = 0;
  // Refreshes the values of `groups`.
  virtual absl::Status Poll(const std::vector<int>& groups) = 0;
  virtual absl::StatusOr<PqosValues> Values(int group) const = 0;
  virtual void Stop(int group) = 0;
};

// The real libpqos. Its destructor stops every group and calls pqos_fini.
std::unique_ptr<PqosLibrary> NewLibpqos();

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PQOS_PQOS_LIBRARY_H_
