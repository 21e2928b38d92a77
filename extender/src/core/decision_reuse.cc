#include "extender/src/core/decision_reuse.h"

#include <algorithm>

namespace neighborly::extender {

bool SameShape(const PodRequest& a, const PodRequest& b) {
  if (a.contention_class != b.contention_class || a.sensitivity != b.sensitivity ||
      a.llc_bytes != b.llc_bytes || a.membw_bytes_per_second != b.membw_bytes_per_second ||
      a.exclusive_cpus != b.exclusive_cpus || a.cpus != b.cpus ||
      a.memory_bytes != b.memory_bytes) {
    return false;
  }
  // What the interference model reads (issue 22): a workload profile's
  // prediction moves it without moving the footprint above.
  const Demand& p = a.demand;
  const Demand& q = b.demand;
  if (p.llc_bytes != q.llc_bytes || p.membw_bytes_per_second != q.membw_bytes_per_second ||
      p.cache_sensitivity != q.cache_sensitivity || p.membw_sensitivity != q.membw_sensitivity ||
      p.tolerance != q.tolerance || p.harm_weight != q.harm_weight) {
    return false;
  }
  const AdmissionRequest& x = a.admission;
  const AdmissionRequest& y = b.admission;
  if (x.guaranteed != y.guaranteed || x.pod_exclusive_cpus != y.pod_exclusive_cpus ||
      x.pod_memory_bytes != y.pod_memory_bytes || x.any_hint != y.any_hint ||
      x.containers.size() != y.containers.size()) {
    return false;
  }
  for (size_t i = 0; i < x.containers.size(); ++i) {
    const AdmissionContainer& c = x.containers[i];
    const AdmissionContainer& d = y.containers[i];
    if (c.exclusive_cpus != d.exclusive_cpus || c.memory_bytes != d.memory_bytes ||
        c.init != d.init) {
      return false;
    }
  }
  return true;
}

const NodeDecision* DecisionReuse::Table::Find(uint64_t ordinal, uint64_t snapshot_generation,
                                               uint64_t bookings_generation,
                                               absl::Time now) const {
  if (ordinal >= slots_.size()) return nullptr;
  const Slot& slot = slots_[ordinal];
  // The same snapshot and list as when kept, so what the decision rests on
  // changes with time only at ReusableUntil, copied into the slot.
  if (slot.epoch != epoch_ || slot.snapshot != snapshot_generation ||
      slot.bookings != bookings_generation || now > slot.held_until) {
    return nullptr;
  }
  return &slot.decision;
}

void DecisionReuse::Table::Keep(uint64_t ordinal, const NodeSnapshot& snapshot,
                                const BookingList* bookings, absl::Time now,
                                const NodeDecision& decision) {
  if (!keeping_ || !Reusable(snapshot, bookings, now)) return;
  if (ordinal >= slots_.size()) slots_.resize(ordinal + 1);
  Slot& slot = slots_[ordinal];
  slot.epoch = epoch_;
  slot.snapshot = snapshot.generation;
  slot.bookings = bookings != nullptr ? bookings->generation : 0;
  slot.held_until = ReusableUntil(snapshot, bookings, now);
  slot.decision = decision;
}

DecisionReuse::Table& DecisionReuse::For(const PodRequest& req) {
  ++clock_;
  Table* oldest = &tables_[0];
  for (Table& t : tables_) {
    if (t.epoch_ != 0 && SameShape(t.shape_, req)) {
      t.last_used_ = clock_;
      t.keeping_ = true;  // the shape's second request or later
      return t;
    }
    if (t.last_used_ < oldest->last_used_) oldest = &t;
  }
  // A new shape: the least recently used table's slots become stale by its
  // new epoch (their memory is kept).
  oldest->shape_ = req;
  oldest->epoch_ = clock_;
  oldest->last_used_ = clock_;
  oldest->keeping_ = false;
  return *oldest;
}

size_t DecisionReuse::slots() const {
  size_t n = 0;
  for (const Table& t : tables_) n += t.slots_.size();
  return n;
}

}  // namespace neighborly::extender
