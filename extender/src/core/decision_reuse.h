// A node's decision reused for the next pod of the same shape while nothing
// it was made from has changed (issue 15, finding 7).
//
// kube-scheduler places the replicas of a Deployment or a Job one after
// another, and every one is evaluated on every candidate; between two of
// them only the nodes that reported or were booked in the meantime changed
// (a 5,000-node fleet at 1 Hz changes ~50 nodes in the 10 ms between two
// pods). Evaluation is a pure function of the pod's shape (what EvaluateNode
// reads of the PodRequest), the node's snapshot, its bookings and the core's
// configuration, as long as the snapshot is fresh (confidence 1) and the
// bookings' fold holds: `now` enters nowhere else. So a decision is kept per
// node and shape with the generations of the snapshot and booking list it
// came from, and returned as it was while both generations match and both
// conditions still hold at the new `now`.
//
// A DecisionReuse is used by one request at a time (the core keeps a few and
// a request takes a free one, core/extender_core.cc); it keeps the last
// `shapes` shapes it evaluated (kShapes for a request's set; a verdict
// stream keeps one per subscribed shape, issue 25), least recently used
// replaced, with one slot per node ordinal: at most shapes x nodes x ~350
// bytes (7 MB for 4 shapes and 5,000 nodes).
//
//   DecisionReuse::Table& table = reuse.For(req);
//   if (const NodeDecision* kept = table.Find(ordinal, snapshot, bookings, now)) {
//     out = *kept;  // or only what the caller reads
//   } else {
//     EvaluateNode(...);
//     table.Keep(ordinal, snapshot, bookings, now, out);
//   }
#ifndef NEIGHBORLY_EXTENDER_SRC_CORE_DECISION_REUSE_H_
#define NEIGHBORLY_EXTENDER_SRC_CORE_DECISION_REUSE_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "extender/src/model/classify.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/types.h"
#include "extender/src/state/cluster_state.h"

namespace neighborly::extender {

// Whether two requests evaluate alike on any node: every field EvaluateNode
// and the kubelet emulation read (not the pod's name, its class source or
// the prediction's text, which only explanations show).
bool SameShape(const PodRequest& a, const PodRequest& b);

// Whether a decision made at `now` from this snapshot and booking list can be
// reused at a later time up to ReusableUntil: the profile has a topology and
// the bookings are read from their fold.
inline bool Reusable(const NodeSnapshot& snapshot, const BookingList* bookings, absl::Time now) {
  return !snapshot.profile.numa.empty() && (bookings == nullptr || bookings->fold.Valid(now));
}

// The last instant a Reusable decision made at `now` holds: the profile's
// (DecisionHeldUntil: its confidence step, its residents' age) and the
// fold's (an expiry of a booking in it), whichever comes first.
inline absl::Time ReusableUntil(const NodeSnapshot& snapshot, const BookingList* bookings,
                                absl::Time now) {
  const absl::Time held = DecisionHeldUntil(snapshot.profile, now);
  return bookings != nullptr ? std::min(held, bookings->fold.valid_until - absl::Nanoseconds(1))
                             : held;
}

class DecisionReuse {
 public:
  static constexpr size_t kShapes = 4;

  // `shapes` >= 1: how many shapes' tables are kept (a bounded LRU).
  explicit DecisionReuse(size_t shapes = kShapes) : tables_(shapes < 1 ? 1 : shapes) {}

  class Table {
   public:
    // The kept decision for node `ordinal` when it was made from the snapshot
    // and booking list of these generations (bookings 0: none) and both still
    // allow reuse at `now` (what Reusable checked when it was kept, at `now`:
    // read from the slot, not from them); else null. It stays valid until the
    // table's next Keep or the set's next For. Nothing is copied: a caller
    // copies what it reads (the HTTP path the whole decision into its reply,
    // the least-harm fallback only the looks that pass; issue 25).
    const NodeDecision* Find(uint64_t ordinal, uint64_t snapshot_generation,
                             uint64_t bookings_generation, absl::Time now) const;
    // Fetches node `ordinal`'s slot toward the cache ahead of Find: every line
    // of it, since a reused decision is read whole (two lines of a slot's
    // four were fetched before, and the copy waited on the rest).
    void Prefetch(uint64_t ordinal) const {
      if (ordinal < slots_.size()) {
        const char* slot = reinterpret_cast<const char*>(&slots_[ordinal]);
        for (size_t at = 0; at < sizeof(Slot); at += 64) __builtin_prefetch(slot + at);
        __builtin_prefetch(slot + sizeof(Slot) - 1);
      }
    }
    // Keeps `decision`, made at `now` from them, when reusable.
    void Keep(uint64_t ordinal, const NodeSnapshot& snapshot, const BookingList* bookings,
              absl::Time now, const NodeDecision& decision);

   private:
    friend class DecisionReuse;
    struct Slot {
      uint64_t epoch = 0;      // the table's epoch when kept (a slot of an older shape: stale)
      uint64_t snapshot = 0;   // NodeSnapshot::generation
      uint64_t bookings = 0;   // BookingList::generation; 0: none booked
      absl::Time held_until;  // ReusableUntil when kept
      NodeDecision decision;
    };
    PodRequest shape_;
    uint64_t epoch_ = 0;  // changes whenever the table takes a new shape; 0: unused
    uint64_t last_used_ = 0;
    // Decisions are kept from the shape's second request on: a stream of
    // pods that are all different pays for the comparison only.
    bool keeping_ = false;
    std::vector<Slot> slots_;  // by node ordinal
  };

  // The table of `req`'s shape (once per request): its own, or the least
  // recently used one emptied for it.
  Table& For(const PodRequest& req);
  // The same, keeping decisions from the shape's first request on (a verdict
  // stream evaluates a shape again and again by design).
  Table& ForKeeping(const PodRequest& req) {
    Table& t = For(req);
    t.keeping_ = true;
    return t;
  }

  size_t shapes() const { return tables_.size(); }

  // Slots held by this thread's tables (for tests).
  size_t slots() const;

 private:
  std::vector<Table> tables_;
  uint64_t clock_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CORE_DECISION_REUSE_H_
