// Cluster state the scheduler's path reads without ever waiting for ingest.
//
// Each node has an Entry that lives as long as the state does; its current
// snapshot (profile + report) and its in-flight bookings are immutable objects
// published through plain atomic pointers. A reader holds a View for the
// duration of one request: while it is held, nothing it can reach is freed.
// Writers replace a pointer and *retire* the old object, which is deleted once
// every View that could have seen it is gone (epoch-based reclamation). Readers
// never take a lock nor touch a reference count: per request they publish the
// current epoch in one slot and clear it at the end; per node they do one hash
// probe and plain loads. Writers never wait for readers either; they only
// defer frees.
//
// The name -> Entry index is itself immutable and replaced (copy-on-write) only
// when a node appears for the first time.
//
//   ClusterState state;
//   ClusterState::Entry* e = state.GetOrCreate("node-1");
//   state.PublishSnapshot(*e, std::make_unique<const NodeSnapshot>(...));   // ingest
//   ClusterState::View view = state.view();                              // per request
//   if (const ClusterState::Entry* e = view.Find("node-1")) {
//     const NodeSnapshot* snap = e->snapshot.load();   // valid while `view` lives
//   }
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extender/src/model/booking_fold.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

// A number no other snapshot or booking list of this process has had (never
// 0): what a decision made from one is recognised by (core/decision_reuse.h).
uint64_t NextStateGeneration();

// One accepted report and what the model derived from it. Immutable. Aligned
// to a cache line so that the profile's hot fields span as few lines as they can.
struct alignas(64) NodeSnapshot {
  NodeSnapshot() = default;
  NodeSnapshot(const NodeSnapshot&) = delete;
  NodeSnapshot& operator=(const NodeSnapshot&) = delete;
  const uint64_t generation = NextStateGeneration();
  NodeProfile profile;
  telemetry::v1::NodeReport report;
};

// A node's bookings as published: the list, and the same folded by where
// they will run (model/booking_fold.h), built once here rather than by every
// request that evaluates the node. A vector with one more member (rather than
// a struct holding one) so that every reader of the list reads it as before.
struct BookingList : std::vector<Booking> {
  BookingList() = default;
  explicit BookingList(std::vector<Booking> list)
      : std::vector<Booking>(std::move(list)), fold(FoldBookings(*this)) {}
  BookingList(const BookingList&) = delete;
  BookingList& operator=(const BookingList&) = delete;
  const uint64_t generation = NextStateGeneration();  // in the vector's line
  BookingFold fold;
};

// Hash of a node name, computed once per name per request: whole 8-byte words
// multiplied and mixed (names are short, so two overlapping loads usually).
inline uint64_t NodeNameHash(std::string_view name) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const char* p = name.data();
  const size_t n = name.size();
  uint64_t h = (n + 1) * kMul;
  auto word = [](const char* q) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    return w;
  };
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) h = ((h ^ word(p + i)) * kMul) ^ (h >> 29);
    h = (h ^ word(p + n - 8)) * kMul;  // the last 8 bytes (overlapping)
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    h = (h ^ (uint64_t{a} << 32 | b)) * kMul;
  } else if (n > 0) {
    const uint64_t w = uint64_t{static_cast<unsigned char>(p[0])} << 16 |
                       uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
                       static_cast<unsigned char>(p[n - 1]);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

class ClusterState {
 public:
  // One cache line holds what a lookup reads (the name, the ordinal, the two
  // pointers); the writers' mutex is on the next.
  struct alignas(64) Entry {
    Entry(std::string node_name, uint64_t creation)
        : name(std::move(node_name)), ordinal(creation) {}
    const std::string name;
    const uint64_t ordinal;  // creation order: 0, 1, ...
    // Owned by the state; read them only under a View. Null until the first
    // report / when nothing is booked.
    std::atomic<const NodeSnapshot*> snapshot{nullptr};
    std::atomic<const BookingList*> bookings{nullptr};
    std::mutex ingest_mu;  // serialises writers of `snapshot` (two streams for one node)
  };

  // What one request reads: the entries that existed when it began, and every
  // snapshot or booking list loaded through them stays alive until the View
  // is destroyed.
  class View {
   public:
    View(View&& other) noexcept
        : state_(other.state_), slot_(other.slot_), entry_count_(other.entry_count_) {
      other.slot_ = nullptr;
    }
    View& operator=(View&&) = delete;
    ~View() {
      if (slot_ != nullptr) slot_->store(0, std::memory_order_release);
    }
    Entry* Find(std::string_view name) const { return Find(name, NodeNameHash(name)); }
    Entry* Find(std::string_view name, uint64_t hash) const {
      Entry* e = state_->FindEntry(name, hash);
      return e != nullptr && e->ordinal < entry_count_ ? e : nullptr;
    }
    // Every entry, in creation order.
    std::span<Entry* const> entries() const;

    // Prefetch hints for looking up many names: the index slot a hash starts
    // at, then (once that slot is cached) the entry it holds.
    void PrefetchSlot(uint64_t hash) const {
      __builtin_prefetch(&state_->index_[hash & state_->index_mask_]);
    }
    void PrefetchEntry(uint64_t hash) const {
      const Entry* e =
          state_->index_[hash & state_->index_mask_].entry.load(std::memory_order_relaxed);
      if (e != nullptr) __builtin_prefetch(e);
    }

   private:
    friend class ClusterState;
    View(const ClusterState* state, std::atomic<uint64_t>* slot, uint64_t entry_count)
        : state_(state), slot_(slot), entry_count_(entry_count) {}
    const ClusterState* state_;
    std::atomic<uint64_t>* slot_;
    uint64_t entry_count_;
  };

  explicit ClusterState(size_t max_nodes = 50'000);
  ~ClusterState();
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Never blocks on writers. (With more than kReaderSlots Views alive at once
  // a new View spins until one ends; the HTTP server's workers are far fewer.)
  View view() const;

  // The entry for `name`, created (and the index republished) when new;
  // nullptr when max_nodes entries already exist.
  Entry* GetOrCreate(std::string_view name);

  // Replace an entry's snapshot / booking list; the old one is freed once no
  // View can reach it. Callers serialise writers of one entry's field. A
  // snapshot published with `journal` false is left out of the change journal
  // until the caller journals it (JournalChange), if it does: ExtenderCore's
  // ingest does not for a report that decides as the one it replaces.
  void PublishSnapshot(Entry& entry, std::unique_ptr<const NodeSnapshot> snapshot,
                       bool journal = true);
  void PublishBookings(Entry& entry, std::unique_ptr<const BookingList> bookings);

  size_t max_nodes() const { return max_nodes_; }

  // The change journal (issue 25): the ordinal of each entry whose snapshot
  // or booking list was replaced, in the order of the replacements, the last
  // kJournal of them. A reader that keeps a cursor visits only the entries
  // that changed since it last looked instead of all of them (a verdict
  // stream's refresh). Appended after the pointer is replaced, so a reader
  // that finds an entry here and then loads it sees that change or a later one.
  //
  //   uint64_t cursor = state.journal_end();   // ... evaluate everything
  //   std::optional<uint64_t> next = state.ChangedSince(cursor, changed);
  //   if (!next) { /* overrun: evaluate everything again */ }
  static constexpr size_t kJournal = size_t{1} << 16;
  // The cursor just past the newest change.
  uint64_t journal_end() const;
  // Journals `entry` as changed (the publishers do; ingest calls it itself
  // for a snapshot it published with `journal` false that needs an entry
  // after all).
  void JournalChange(const Entry& entry);
  // Appends the ordinals changed from `cursor` on to `ordinals` (one per
  // change: an entry changed twice comes twice) and returns the cursor past
  // them; nullopt when the journal no longer holds every change since
  // `cursor` (more than kJournal since) or `cursor` is beyond its end.
  std::optional<uint64_t> ChangedSince(uint64_t cursor, std::vector<uint64_t>& ordinals) const;

  // Retired objects not yet freed (for tests).
  size_t retired() const;

  static constexpr size_t kReaderSlots = 128;

 private:
  struct Retired {
    uint64_t epoch;
    const void* object;
    void (*destroy)(const void*);
    size_t bytes;  // about what freeing it returns
  };
  template <typename T>
  void Retire(const T* object, bool reclaim, size_t bytes = 0);
  std::vector<Retired> TakeReclaimableLocked();
  static constexpr size_t kReclaimEvery = 64;     // a publishing ingest thread frees
  static constexpr size_t kReclaimAlways = 4096;  // anyone frees (no ingest for a while)
  // ... or once the retired objects hold this much (a flood of bookings on one
  // node retires a list of up to state.maxBookingsPerNode at each booking:
  // 4,096 of them were 1.5 GB, issue 24).
  static constexpr size_t kReclaimBytes = size_t{8} << 20;

  const size_t max_nodes_;
  // Reader slots: 0 = free, else the epoch the reader entered at. One cache
  // line each so readers on different cores do not share lines.
  struct alignas(64) ReaderSlot {
    std::atomic<uint64_t> epoch{0};
  };
  mutable std::array<ReaderSlot, kReaderSlots> readers_;
  std::atomic<uint64_t> epoch_{1};

  mutable std::mutex retire_mu_;
  std::vector<Retired> retired_;
  size_t retired_bytes_ = 0;  // guarded by retire_mu_

  // The name index: open addressing over (hash, Entry*), sized once for
  // max_nodes at load factor <= 1/2, filled in place (a slot's hash is written
  // before its entry is published) and never moved, so readers probe it
  // without synchronisation beyond one acquire load per slot.
  struct IndexSlot {
    std::atomic<uint64_t> hash{0};
    std::atomic<Entry*> entry{nullptr};
  };
  Entry* FindEntry(std::string_view name, uint64_t hash) const {
    for (size_t i = hash & index_mask_;; i = (i + 1) & index_mask_) {
      const IndexSlot& slot = index_[i];
      Entry* e = slot.entry.load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (slot.hash.load(std::memory_order_relaxed) == hash && SameName(e->name, name)) return e;
    }
  }
  // Node names are mostly 8..16 bytes: two overlapping word compares instead
  // of a call to memcmp.
  static bool SameName(const std::string& a, std::string_view b) {
    const size_t n = b.size();
    if (a.size() != n) return false;
    if (n < 8 || n > 16) return std::memcmp(a.data(), b.data(), n) == 0;
    uint64_t x0, x1, y0, y1;
    std::memcpy(&x0, a.data(), 8);
    std::memcpy(&y0, b.data(), 8);
    std::memcpy(&x1, a.data() + n - 8, 8);
    std::memcpy(&y1, b.data() + n - 8, 8);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }

  mutable std::mutex journal_mu_;
  std::unique_ptr<uint32_t[]> journal_;  // kJournal ordinals, a ring
  uint64_t journal_end_ = 0;             // guarded by journal_mu_

  std::mutex create_mu_;
  std::vector<std::unique_ptr<Entry>> owned_;  // reserved for max_nodes: never reallocates
  std::unique_ptr<Entry*[]> by_ordinal_;       // max_nodes pointers, filled in creation order
  std::atomic<uint64_t> entry_count_{0};
  std::unique_ptr<IndexSlot[]> index_;
  size_t index_mask_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_
