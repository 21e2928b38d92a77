#include "extender/src/state/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <functional>
#include <thread>

namespace neighborly::extender {

uint64_t NextStateGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

ClusterState::ClusterState(size_t max_nodes)
    : max_nodes_(max_nodes),
      journal_(new uint32_t[kJournal]),
      by_ordinal_(new Entry*[std::max<size_t>(max_nodes, 1)]) {
  owned_.reserve(max_nodes);
  const size_t capacity = std::bit_ceil(std::max<size_t>(2 * max_nodes, 16));
  index_.reset(new IndexSlot[capacity]);
  index_mask_ = capacity - 1;
}

ClusterState::~ClusterState() {
  // No View may outlive the state, so everything can go now.
  for (const Retired& r : retired_) r.destroy(r.object);
  for (const std::unique_ptr<Entry>& e : owned_) {
    delete e->snapshot.load();
    delete e->bookings.load();
  }
}

std::span<ClusterState::Entry* const> ClusterState::View::entries() const {
  return std::span<Entry* const>(state_->by_ordinal_.get(), entry_count_);
}

ClusterState::View ClusterState::view() const {
  // Start where this thread usually finds a free slot, so concurrent readers
  // rarely race for the same one.
  size_t i = std::hash<std::thread::id>()(std::this_thread::get_id()) % kReaderSlots;
  for (size_t tries = 0;; ++tries, i = (i + 1) % kReaderSlots) {
    if (tries > 0 && tries % kReaderSlots == 0) std::this_thread::yield();
    std::atomic<uint64_t>& slot = readers_[i].epoch;
    if (slot.load(std::memory_order_relaxed) != 0) continue;
    uint64_t expected = 0;
    // seq_cst: the slot is published before any pointer is read, and a writer
    // that scans after its own seq_cst pointer swap sees either this slot or a
    // reader that will read the new pointer.
    if (slot.compare_exchange_strong(expected, epoch_.load(std::memory_order_seq_cst),
                                     std::memory_order_seq_cst)) {
      return View(this, &slot, entry_count_.load(std::memory_order_seq_cst));
    }
  }
}

template <typename T>
void ClusterState::Retire(const T* object, bool reclaim, size_t bytes) {
  if (object == nullptr) return;
  std::vector<Retired> free_now;
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    // Readers that entered at an epoch <= this one may still hold `object`.
    const uint64_t epoch = epoch_.fetch_add(1, std::memory_order_seq_cst);
    retired_.push_back(
        {epoch, object, [](const void* p) { delete static_cast<const T*>(p); }, bytes});
    retired_bytes_ += bytes;
    // Amortised: scanning the reader slots costs ~kReaderSlots loads. Callers
    // on the scheduling path leave it to ingest unless the list grows large.
    if ((reclaim && retired_.size() >= kReclaimEvery) || retired_.size() >= kReclaimAlways ||
        retired_bytes_ >= kReclaimBytes) {
      free_now = TakeReclaimableLocked();
    }
  }
  // Freed outside the lock: a batch of 50-pod snapshots takes a while, and
  // another thread retiring meanwhile (a scheduler request's booking) must
  // not wait for it.
  for (const Retired& r : free_now) r.destroy(r.object);
}

std::vector<ClusterState::Retired> ClusterState::TakeReclaimableLocked() {
  uint64_t oldest_reader = UINT64_MAX;
  for (const ReaderSlot& r : readers_) {
    const uint64_t e = r.epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < oldest_reader) oldest_reader = e;
  }
  std::vector<Retired> reclaimable;
  size_t kept = 0;
  for (const Retired& r : retired_) {
    if (r.epoch < oldest_reader) {
      reclaimable.push_back(r);
      retired_bytes_ -= r.bytes;
    } else {
      retired_[kept++] = r;
    }
  }
  retired_.resize(kept);
  return reclaimable;
}

size_t ClusterState::retired() const {
  std::lock_guard<std::mutex> lock(retire_mu_);
  return retired_.size();
}

void ClusterState::PublishSnapshot(Entry& entry, std::unique_ptr<const NodeSnapshot> snapshot,
                                   bool journal) {
  const NodeSnapshot* old = entry.snapshot.exchange(snapshot.release(), std::memory_order_seq_cst);
  if (journal) JournalChange(entry);
  Retire(old, /*reclaim=*/true);
}

void ClusterState::JournalChange(const Entry& entry) {
  std::lock_guard<std::mutex> lock(journal_mu_);
  journal_[journal_end_ % kJournal] = static_cast<uint32_t>(entry.ordinal);
  ++journal_end_;
}

uint64_t ClusterState::journal_end() const {
  std::lock_guard<std::mutex> lock(journal_mu_);
  return journal_end_;
}

std::optional<uint64_t> ClusterState::ChangedSince(uint64_t cursor,
                                                   std::vector<uint64_t>& ordinals) const {
  std::lock_guard<std::mutex> lock(journal_mu_);
  if (cursor > journal_end_ || journal_end_ - cursor > kJournal) return std::nullopt;
  for (uint64_t at = cursor; at < journal_end_; ++at) ordinals.push_back(journal_[at % kJournal]);
  return journal_end_;
}

void ClusterState::PublishBookings(Entry& entry, std::unique_ptr<const BookingList> bookings) {
  // Bookings are published by /prioritize: leave the freeing to ingest, unless
  // the lists retired add up.
  const BookingList* old = entry.bookings.exchange(bookings.release(), std::memory_order_seq_cst);
  JournalChange(entry);
  size_t bytes = 0;
  if (old != nullptr) {
    bytes = old->capacity() * sizeof(Booking);
    for (const Booking& b : *old) bytes += b.pod_uid.capacity() + b.pod.capacity();
  }
  Retire(old, /*reclaim=*/false, bytes);
}

ClusterState::Entry* ClusterState::GetOrCreate(std::string_view name) {
  const uint64_t hash = NodeNameHash(name);
  if (Entry* e = FindEntry(name, hash)) return e;
  std::lock_guard<std::mutex> lock(create_mu_);
  if (Entry* e = FindEntry(name, hash)) return e;
  if (owned_.size() >= max_nodes_) return nullptr;
  const uint64_t ordinal = owned_.size();
  owned_.push_back(std::make_unique<Entry>(std::string(name), ordinal));
  Entry* entry = owned_.back().get();
  size_t i = hash & index_mask_;
  while (index_[i].entry.load(std::memory_order_relaxed) != nullptr) i = (i + 1) & index_mask_;
  index_[i].hash.store(hash, std::memory_order_relaxed);
  index_[i].entry.store(entry, std::memory_order_release);
  by_ordinal_[ordinal] = entry;
  entry_count_.store(ordinal + 1, std::memory_order_release);
  return entry;
}

}  // namespace neighborly::extender
