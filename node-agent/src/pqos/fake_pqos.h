// A libpqos stand-in for tests: groups hold thread ids, counters are set by
// the test, StartPids fails with ResourceExhausted beyond `max_groups`.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PQOS_FAKE_PQOS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PQOS_FAKE_PQOS_H_

#include <map>
#include <set>
#include <string>

#include "node-agent/src/pqos/pqos_library.h"

namespace neighborly::agent {

class FakePqos final : public PqosLibrary {
 public:
  absl::StatusOr<PqosCapabilities> Init() override { return init; }
  absl::StatusOr<int> StartPids(const std::vector<pid_t>& pids, unsigned) override {
    if (static_cast<int>(groups.size()) >= max_groups) {
      return absl::ResourceExhaustedError(
          "libpqos pqos_mon_start_pids failed (PQOS_RETVAL_RESOURCE)");
    }
    const int handle = next_++;
    groups[handle].insert(pids.begin(), pids.end());
    return handle;
  }
  absl::Status AddPids(int group, const std::vector<pid_t>& pids) override {
    for (pid_t pid : pids) {
      if (rejected.contains(pid)) {
        return absl::FailedPreconditionError(
            "libpqos pqos_mon_add_pids failed (PQOS_RETVAL_ERROR)");
      }
    }
    groups.at(group).insert(pids.begin(), pids.end());
    return absl::OkStatus();
  }
  absl::Status RemovePids(int group, const std::vector<pid_t>& pids) override {
    for (pid_t pid : pids) groups.at(group).erase(pid);
    return absl::OkStatus();
  }
  absl::Status Poll(const std::vector<int>& handles) override {
    ++polls;
    return absl::OkStatus();
  }
  absl::StatusOr<PqosValues> Values(int group) const override {
    auto it = values.find(group);
    return it == values.end() ? PqosValues{} : it->second;
  }
  void Stop(int group) override {
    groups.erase(group);
    values.erase(group);
  }
  // The group holding `tid`, or 0.
  int GroupOf(pid_t tid) const {
    for (const auto& [handle, tids] : groups) {
      if (tids.contains(tid)) return handle;
    }
    return 0;
  }

  absl::StatusOr<PqosCapabilities> init =
      PqosCapabilities{true, true, true, 8, 1 | 2 | 4};  // L3_OCCUP | LMEM_BW | TMEM_BW
  int max_groups = 1000;
  std::set<pid_t> rejected;
  std::map<int, std::set<pid_t>> groups;
  std::map<int, PqosValues> values;
  int polls = 0;

 private:
  int next_ = 1;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PQOS_FAKE_PQOS_H_
