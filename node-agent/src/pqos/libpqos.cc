// PqosLibrary over the real libpqos 4.5 (see ../shared/reference §2 for the API).
#include <pqos.h>

#include <cstring>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/pqos/pqos_library.h"

namespace neighborly::agent {
namespace {

const char* RetvalName(int retval) {
  switch (retval) {
    case PQOS_RETVAL_OK:
      return "PQOS_RETVAL_OK";
    case PQOS_RETVAL_ERROR:
      return "PQOS_RETVAL_ERROR";
    case PQOS_RETVAL_PARAM:
      return "PQOS_RETVAL_PARAM";
    case PQOS_RETVAL_RESOURCE:
      return "PQOS_RETVAL_RESOURCE";
    case PQOS_RETVAL_INIT:
      return "PQOS_RETVAL_INIT";
    case PQOS_RETVAL_TRANSPORT:
      return "PQOS_RETVAL_TRANSPORT";
    case PQOS_RETVAL_PERF_CTR:
      return "PQOS_RETVAL_PERF_CTR";
    case PQOS_RETVAL_BUSY:
      return "PQOS_RETVAL_BUSY";
    case PQOS_RETVAL_INTER:
      return "PQOS_RETVAL_INTER";
    case PQOS_RETVAL_OVERFLOW:
      return "PQOS_RETVAL_OVERFLOW";
    default:
      return "unknown pqos return code";
  }
}

// Log lines pqos wrote are the only place it says *why* (no CPUID leaf, no
// resctrl, lock file...). Keep the tail, bounded.
constexpr size_t kMaxLogBytes = 4096;

class Libpqos final : public PqosLibrary {
 public:
  ~Libpqos() override {
    for (auto& [handle, group] : groups_) pqos_mon_stop(group.get());
    if (initialised_) pqos_fini();
  }

  absl::StatusOr<PqosCapabilities> Init() override {
    pqos_config config;
    std::memset(&config, 0, sizeof config);
    config.fd_log = -1;
    config.callback_log = &Libpqos::Log;
    config.context_log = this;
    config.verbose = 0;
    config.interface = PQOS_INTER_OS;
    log_.clear();
    const int retval = pqos_init(&config);
    if (retval != PQOS_RETVAL_OK) return Failure("pqos_init", retval);
    initialised_ = true;
    const pqos_cap* cap = nullptr;
    const pqos_cpuinfo* cpu = nullptr;
    if (int r = pqos_cap_get(&cap, &cpu); r != PQOS_RETVAL_OK) return Failure("pqos_cap_get", r);
    const pqos_capability* mon = nullptr;
    if (int r = pqos_cap_get_type(cap, PQOS_CAP_TYPE_MON, &mon);
        r != PQOS_RETVAL_OK || mon == nullptr) {
      return Failure("pqos_cap_get_type(PQOS_CAP_TYPE_MON)", r);
    }
    PqosCapabilities out;
    out.max_rmid = mon->u.mon->max_rmid;
    for (unsigned i = 0; i < mon->u.mon->num_events; ++i) {
      switch (mon->u.mon->events[i].type) {
        case PQOS_MON_EVENT_L3_OCCUP:
          out.occupancy = true;
          out.events |= PQOS_MON_EVENT_L3_OCCUP;
          break;
        case PQOS_MON_EVENT_TMEM_BW:
          out.mbm_total = true;
          out.events |= PQOS_MON_EVENT_TMEM_BW;
          break;
        case PQOS_MON_EVENT_LMEM_BW:
          out.mbm_local = true;
          out.events |= PQOS_MON_EVENT_LMEM_BW;
          break;
        default:
          break;  // perf events come from the agent's own cgroup-mode counters
      }
    }
    if (out.events == 0) {
      return absl::FailedPreconditionError(
          "libpqos reports no L3 occupancy or memory bandwidth monitoring event");
    }
    return out;
  }

  absl::StatusOr<int> StartPids(const std::vector<pid_t>& pids, unsigned events) override {
    auto group = std::make_unique<pqos_mon_data>();
    std::memset(group.get(), 0, sizeof(pqos_mon_data));
    const int retval =
        pqos_mon_start_pids(static_cast<unsigned>(pids.size()), pids.data(),
                            static_cast<pqos_mon_event>(events), nullptr, group.get());
    if (retval != PQOS_RETVAL_OK) return Failure("pqos_mon_start_pids", retval);
    const int handle = next_handle_++;
    groups_[handle] = std::move(group);
    return handle;
  }

  absl::Status AddPids(int handle, const std::vector<pid_t>& pids) override {
    pqos_mon_data* group = Find(handle);
    if (group == nullptr) return absl::NotFoundError(absl::StrCat("no pqos group ", handle));
    const int retval = pqos_mon_add_pids(static_cast<unsigned>(pids.size()), pids.data(), group);
    return retval == PQOS_RETVAL_OK ? absl::OkStatus() : Failure("pqos_mon_add_pids", retval);
  }

  absl::Status RemovePids(int handle, const std::vector<pid_t>& pids) override {
    pqos_mon_data* group = Find(handle);
    if (group == nullptr) return absl::NotFoundError(absl::StrCat("no pqos group ", handle));
    const int retval = pqos_mon_remove_pids(static_cast<unsigned>(pids.size()), pids.data(), group);
    return retval == PQOS_RETVAL_OK ? absl::OkStatus() : Failure("pqos_mon_remove_pids", retval);
  }

  absl::Status Poll(const std::vector<int>& handles) override {
    std::vector<pqos_mon_data*> groups;
    for (int handle : handles) {
      if (pqos_mon_data* group = Find(handle)) groups.push_back(group);
    }
    if (groups.empty()) return absl::OkStatus();
    const int retval = pqos_mon_poll(groups.data(), static_cast<unsigned>(groups.size()));
    // OVERFLOW: a counter wrapped; the cumulative values are still updated and
    // the window code drops an interval that went backwards.
    if (retval == PQOS_RETVAL_OK || retval == PQOS_RETVAL_OVERFLOW) return absl::OkStatus();
    return Failure("pqos_mon_poll", retval);
  }

  absl::StatusOr<PqosValues> Values(int handle) const override {
    auto it = groups_.find(handle);
    if (it == groups_.end()) return absl::NotFoundError(absl::StrCat("no pqos group ", handle));
    const pqos_event_values& v = it->second->values;
    return PqosValues{v.llc, v.mbm_total, v.mbm_local};
  }

  void Stop(int handle) override {
    auto it = groups_.find(handle);
    if (it == groups_.end()) return;
    pqos_mon_stop(it->second.get());
    groups_.erase(it);
  }

 private:
  static void Log(void* context, const size_t size, const char* message) {
    auto* self = static_cast<Libpqos*>(context);
    self->log_.append(message, strnlen(message, size));
    if (self->log_.size() > kMaxLogBytes) self->log_.erase(0, self->log_.size() - kMaxLogBytes);
  }

  pqos_mon_data* Find(int handle) {
    auto it = groups_.find(handle);
    return it == groups_.end() ? nullptr : it->second.get();
  }

  absl::Status Failure(const char* call, int retval) {
    std::string log(Trim(log_));
    for (char& c : log) {
      if (c == '\n') c = ';';
    }
    log_.clear();
    const std::string message = absl::StrCat("libpqos ", call, " failed (", RetvalName(retval), ")",
                                             log.empty() ? "" : ": ", log);
    return retval == PQOS_RETVAL_RESOURCE ? absl::ResourceExhaustedError(message)
                                          : absl::FailedPreconditionError(message);
  }

  bool initialised_ = false;
  std::string log_;
  int next_handle_ = 1;
  std::map<int, std::unique_ptr<pqos_mon_data>> groups_;
};

}  // namespace

std::unique_ptr<PqosLibrary> NewLibpqos() { return std::make_unique<Libpqos>(); }

}  // namespace neighborly::agent
