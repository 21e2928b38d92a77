#include "node-agent/src/pqos/pqos_monitor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace neighborly::agent {

absl::StatusOr<std::unique_ptr<PqosMonitor>> PqosMonitor::Create(
    std::shared_ptr<PqosLibrary> library, uint32_t pod_domain, NodeReader node_reader) {
  absl::StatusOr<PqosCapabilities> caps = library->Init();
  if (!caps.ok()) return caps.status();
  return std::unique_ptr<PqosMonitor>(
      new PqosMonitor(std::move(library), *caps, pod_domain, std::move(node_reader)));
}

PqosMonitor::PqosMonitor(std::shared_ptr<PqosLibrary> library, PqosCapabilities caps,
                         uint32_t pod_domain, NodeReader node_reader)
    : library_(std::move(library)),
      caps_(caps),
      pod_domain_(pod_domain),
      node_reader_(std::move(node_reader)) {
  info_.usable = true;
  info_.root = "libpqos";
  info_.num_rmids = caps_.max_rmid;
  info_.occupancy = caps_.occupancy;
  info_.mbm_total = caps_.mbm_total;
  info_.mbm_local = caps_.mbm_local;
}

absl::Status PqosMonitor::Start(const std::set<std::string>&) { return absl::OkStatus(); }

uint32_t PqosMonitor::rmids_free() const {
  // RMID 0 is the default group's; other users of RDT are invisible to pqos's
  // group accounting, so this is an upper bound.
  const uint32_t budget = caps_.max_rmid > 0 ? caps_.max_rmid - 1 : 0;
  return budget > groups_.size() ? budget - static_cast<uint32_t>(groups_.size()) : 0;
}

std::map<std::string, std::string> PqosMonitor::Sync(const std::vector<ResctrlPod>& pods) {
  std::map<std::string, std::string> unmonitored;
  std::set<std::string> wanted;
  for (const ResctrlPod& pod : pods) wanted.insert(pod.uid);
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    library_->Stop(it->second.handle);
    monitored_.erase(it->first);
    it = groups_.erase(it);
  }

  std::vector<const ResctrlPod*> order;
  for (const ResctrlPod& pod : pods) order.push_back(&pod);
  std::stable_sort(order.begin(), order.end(), [](const ResctrlPod* a, const ResctrlPod* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->uid < b->uid;
  });
  std::string exhausted;
  for (const ResctrlPod* pod : order) {
    std::set<pid_t> tids(pod->tids.begin(), pod->tids.end());
    auto existing = groups_.find(pod->uid);
    if (existing == groups_.end()) {
      if (!exhausted.empty()) {
        unmonitored[pod->uid] = exhausted;
        continue;
      }
      if (tids.empty()) {
        unmonitored[pod->uid] = "the pod has no threads to monitor";
        continue;
      }
      if (rmids_free() == 0) {
        exhausted = absl::StrCat("RMID budget exhausted (libpqos max_rmid ", caps_.max_rmid, ", ",
                                 groups_.size(), " held by higher-priority pods)");
        unmonitored[pod->uid] = exhausted;
        continue;
      }
      absl::StatusOr<int> handle =
          library_->StartPids(std::vector<pid_t>(tids.begin(), tids.end()), caps_.events);
      if (!handle.ok()) {
        if (handle.status().code() == absl::StatusCode::kResourceExhausted) {
          exhausted = absl::StrCat("no RMID left: ", handle.status().message());
        }
        unmonitored[pod->uid] = std::string(handle.status().message());
        continue;
      }
      groups_[pod->uid] = Group{*handle, std::move(tids)};
      monitored_.insert(pod->uid);
      continue;
    }
    // Re-sync: threads that appeared are added, threads that ended removed.
    Group& group = existing->second;
    std::vector<pid_t> added, removed;
    std::set_difference(tids.begin(), tids.end(), group.tids.begin(), group.tids.end(),
                        std::back_inserter(added));
    std::set_difference(group.tids.begin(), group.tids.end(), tids.begin(), tids.end(),
                        std::back_inserter(removed));
    // A thread that already exited cannot be removed by pqos; that is fine.
    if (!removed.empty()) (void)library_->RemovePids(group.handle, removed);
    if (!added.empty()) {
      if (absl::Status s = library_->AddPids(group.handle, added); !s.ok()) {
        unmonitored[pod->uid] = absl::StrCat(added.size(), " of ", tids.size(),
                                             " threads not monitored: ", s.message());
        for (pid_t tid : added) tids.erase(tid);
      }
    }
    group.tids = std::move(tids);
  }
  return unmonitored;
}

std::map<std::string, GroupCounters> PqosMonitor::ReadPods() {
  std::map<std::string, GroupCounters> out;
  std::vector<int> handles;
  for (const auto& [uid, group] : groups_) handles.push_back(group.handle);
  if (!library_->Poll(handles).ok()) return out;  // every pod: "group could not be read"
  for (const auto& [uid, group] : groups_) {
    absl::StatusOr<PqosValues> values = library_->Values(group.handle);
    if (!values.ok()) continue;
    DomainCounters& d = out[uid][pod_domain_];
    if (caps_.occupancy) d.occupancy_bytes = values->llc_bytes;
    if (caps_.mbm_total) d.mbm_total_bytes = values->mbm_total_bytes;
    if (caps_.mbm_local) d.mbm_local_bytes = values->mbm_local_bytes;
  }
  return out;
}

absl::StatusOr<GroupCounters> PqosMonitor::ReadNode() {
  if (!node_reader_) {
    return absl::UnavailableError(
        "the pqos backend monitors pods only; per-L3-domain totals need resctrl mounted");
  }
  return node_reader_();
}

}  // namespace neighborly::agent
