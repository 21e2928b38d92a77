#include "extender/src/state/booking_ledger.h"

#include <algorithm>

#include "common/strings.h"

namespace neighborly::extender {

void BookingLedger::PublishLocked(const std::string& node) {
  ClusterState::Entry* entry = state_.GetOrCreate(node);
  if (entry == nullptr) return;
  auto it = by_node_.find(node);
  if (it == by_node_.end() || it->second.empty()) {
    if (it != by_node_.end()) by_node_.erase(it);
    if (entry->bookings.load(std::memory_order_relaxed) != nullptr) {
      state_.PublishBookings(*entry, nullptr);
    }
    return;
  }
  state_.PublishBookings(*entry, std::make_unique<const BookingList>(it->second));
}

bool BookingLedger::EraseLocked(const std::string& uid) {
  auto it = node_of_uid_.find(uid);
  if (it == node_of_uid_.end()) return false;
  auto& list = by_node_[it->second];
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const Booking& b) { return b.pod_uid == uid; }),
             list.end());
  node_of_uid_.erase(it);
  count_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

std::string BookingLedger::DropSoonestLocked() {
  while (!due_.empty()) {
    const Due due = due_.top();
    due_.pop();
    auto it = node_of_uid_.find(due.pod_uid);
    if (it == node_of_uid_.end()) continue;  // released or replaced already
    const std::vector<Booking>& list = by_node_[it->second];
    // Only the booking this entry was made for (a re-booking has its own).
    const bool live = std::any_of(list.begin(), list.end(), [&](const Booking& b) {
      return b.pod_uid == due.pod_uid && absl::ToUnixNanos(b.expires_at) == due.expiry_ns;
    });
    if (!live) continue;
    std::string node = it->second;
    EraseLocked(due.pod_uid);
    return node;
  }
  return "";
}

bool BookingLedger::Book(std::string_view node, Booking booking) {
  if (state_.GetOrCreate(node) == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string uid = booking.pod_uid;
  const std::string node_name(node);
  if (auto it = node_of_uid_.find(uid); it != node_of_uid_.end()) {
    const std::string old_node = it->second;
    EraseLocked(uid);
    if (old_node != node) PublishLocked(old_node);
  }
  std::vector<Booking>& list = by_node_[node_name];
  if (limits_.max_per_node > 0 && list.size() >= limits_.max_per_node) {
    // The node's oldest: bookings are appended, so the front.
    const std::string oldest = list.front().pod_uid;
    EraseLocked(oldest);
    dropped_node_full_.fetch_add(1, std::memory_order_relaxed);
  }
  while (limits_.max_total > 0 && count_.load(std::memory_order_relaxed) >= limits_.max_total) {
    const std::string from = DropSoonestLocked();
    if (from.empty()) break;
    dropped_full_.fetch_add(1, std::memory_order_relaxed);
    if (from != node_name) PublishLocked(from);
  }
  // Bookings dropped or replaced leave their entries until they fall due: a
  // flood of them must not grow the heap beyond a few times the bookings.
  if (due_.size() > 2 * count_.load(std::memory_order_relaxed) + 4096) CompactDueLocked();
  due_.push(Due{absl::ToUnixNanos(booking.expires_at), uid});
  NoteExpiryLocked();
  by_node_[node_name].push_back(std::move(booking));
  node_of_uid_.emplace(uid, node_name);
  const size_t count = count_.fetch_add(1, std::memory_order_relaxed) + 1;
  peak_since_shrink_ = std::max(peak_since_shrink_, count);
  PublishLocked(node_name);
  return true;
}

void BookingLedger::BookedElsewhere(std::string_view node,
                                    const std::vector<std::string_view>& pod_uids,
                                    std::vector<bool>& out) const {
  out.clear();
  if (count_.load(std::memory_order_relaxed) == 0) return;
  out.assign(pod_uids.size(), false);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < pod_uids.size(); ++i) {
    auto it = node_of_uid_.find(Av(pod_uids[i]));
    out[i] = it != node_of_uid_.end() && it->second != node;
  }
}

size_t BookingLedger::Release(std::string_view node,
                              const std::vector<std::string_view>& pod_uids) {
  if (count_.load(std::memory_order_relaxed) == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  size_t released = 0;
  for (std::string_view uid : pod_uids) {
    auto it = node_of_uid_.find(Av(uid));
    if (it == node_of_uid_.end() || it->second != node) continue;
    auto& list = by_node_[it->second];
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const Booking& b) { return b.pod_uid == uid; }),
               list.end());
    node_of_uid_.erase(it);
    ++released;
  }
  count_.fetch_sub(released, std::memory_order_relaxed);
  if (released > 0) PublishLocked(std::string(node));
  return released;
}

std::optional<Booking> BookingLedger::ReleasePod(std::string_view node, std::string_view pod_uid) {
  if (count_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_of_uid_.find(Av(pod_uid));
  if (it == node_of_uid_.end() || (!node.empty() && it->second != node)) return std::nullopt;
  const std::string booked_node = it->second;
  node_of_uid_.erase(it);
  std::vector<Booking>& list = by_node_[booked_node];
  std::optional<Booking> released;
  for (auto b = list.begin(); b != list.end(); ++b) {
    if (b->pod_uid != pod_uid) continue;
    released = std::move(*b);
    list.erase(b);
    break;
  }
  count_.fetch_sub(1, std::memory_order_relaxed);
  PublishLocked(booked_node);
  return released;
}

void BookingLedger::NoteExpiryLocked() {
  next_expiry_ns_.store(due_.empty() ? INT64_MAX : due_.top().expiry_ns, std::memory_order_relaxed);
}

size_t BookingLedger::Expire(absl::Time now) {
  const int64_t now_ns = absl::ToUnixNanos(now);
  if (now_ns < next_expiry_ns_.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  size_t expired = 0;
  std::vector<std::string> touched;
  while (!due_.empty() && due_.top().expiry_ns <= now_ns) {
    const std::string uid = due_.top().pod_uid;
    due_.pop();
    auto it = node_of_uid_.find(uid);
    if (it == node_of_uid_.end()) continue;  // released before it fell due
    auto& list = by_node_[it->second];
    const size_t before = list.size();
    // Only if this booking is the one that fell due (not a later re-booking).
    list.erase(
        std::remove_if(list.begin(), list.end(),
                       [&](const Booking& b) { return b.pod_uid == uid && b.expires_at <= now; }),
        list.end());
    if (list.size() == before) continue;
    expired += before - list.size();
    touched.push_back(it->second);
    node_of_uid_.erase(it);
  }
  NoteExpiryLocked();
  count_.fetch_sub(expired, std::memory_order_relaxed);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (const std::string& node : touched) PublishLocked(node);
  ShrinkLocked();
  return expired;
}

void BookingLedger::ShrinkLocked() {
  // After a flood the tables keep their capacity (a flat_hash_map and the
  // heap never shrink by themselves): rebuild them at their present size once
  // they hold a quarter of their peak or less, and only for a real peak.
  const size_t count = count_.load(std::memory_order_relaxed);
  if (peak_since_shrink_ < 4096 || count > peak_since_shrink_ / 4) return;
  peak_since_shrink_ = count;
  node_of_uid_.rehash(0);
  for (auto it = by_node_.begin(); it != by_node_.end();) {
    if (it->second.empty()) {
      by_node_.erase(it++);
    } else {
      it->second.shrink_to_fit();
      ++it;
    }
  }
  by_node_.rehash(0);
  CompactDueLocked();
}

void BookingLedger::CompactDueLocked() {
  // Entries of bookings already gone are dropped with the old heap.
  const size_t count = count_.load(std::memory_order_relaxed);
  std::vector<Due> live;
  live.reserve(count);
  while (!due_.empty()) {
    const Due& due = due_.top();
    if (node_of_uid_.contains(due.pod_uid)) live.push_back(due);
    due_.pop();
  }
  due_ = std::priority_queue<Due, std::vector<Due>, std::greater<Due>>(std::greater<Due>(),
                                                                       std::move(live));
}

std::vector<std::pair<std::string, Booking>> BookingLedger::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, Booking>> out;
  for (const auto& [node, list] : by_node_) {
    for (const Booking& b : list) out.emplace_back(node, b);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.pod_uid < b.second.pod_uid;
  });
  return out;
}

}  // namespace neighborly::extender
