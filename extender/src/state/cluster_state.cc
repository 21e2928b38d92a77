#include "extender/src/state/cluster_state.h"

#include "common/strings.h"

namespace neighborly::extender {

ClusterState::ClusterState(size_t max_nodes)
    : max_nodes_(max_nodes), index_(std::make_shared<const Index>()) {}

ClusterState::Entry* ClusterState::View::Find(std::string_view name) const {
  auto it = index_->find(Av(name));
  return it == index_->end() ? nullptr : it->second;
}

ClusterState::Entry* ClusterState::GetOrCreate(std::string_view name) {
  if (Entry* e = view().Find(name)) return e;
  std::lock_guard<std::mutex> lock(create_mu_);
  std::shared_ptr<const Index> current = index_.load(std::memory_order_acquire);
  if (auto it = current->find(Av(name)); it != current->end()) return it->second;
  if (entries_.size() >= max_nodes_) return nullptr;
  entries_.push_back(std::make_unique<Entry>(std::string(name)));
  Entry* entry = entries_.back().get();
  auto next = std::make_shared<Index>(*current);
  next->emplace(absl::string_view(entry->name), entry);
  index_.store(std::move(next), std::memory_order_release);
  return entry;
}

}  // namespace neighborly::extender
