// In-flight bookings: after prioritize, the incoming pod's footprint is booked
// on its best node until that node's agent reports the pod running or the
// booking expires, so a burst of pods does not herd onto one node. Another
// node's report never releases it (docs/security.md, scoped learning).
//
// Bookings are published per node into ClusterState::Entry::bookings as an
// immutable list, so evaluation reads them without locks.
//
// Bounded (issue 24: 5,000 bookings of made-up UIDs onto one node took 1.7 GB):
// at most max_per_node bookings on one node and max_total in all; a booking
// beyond either cap drops the oldest (the node's, or the soonest to expire of
// all) and counts it. Lists replaced by a booking are freed once their bytes
// add up (ClusterState::PublishBookings), and the ledger's own tables shrink
// when most of their bookings have gone.
//
//   BookingLedger ledger(state, {.max_per_node = 1024, .max_total = 65536});
//   ledger.Book("node-3", MakeBooking(uid, request, decision, now + ttl));
//   ledger.Release("node-3", uids_in_report);   // from node-3's report
//   ledger.Expire(now);                  // now and then
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_BOOKING_LEDGER_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_BOOKING_LEDGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/state/cluster_state.h"

namespace neighborly::extender {

struct BookingLimits {
  // state.maxBookingsPerNode: more than a node can run within a booking's TTL
  // (kubelet's maxPods is 110 by default, 250 on large nodes).
  size_t max_per_node = 1024;
  // state.maxBookings: kube-scheduler's ~700 pods/s at 5,000 nodes for the 30 s
  // TTL is 21,000; three times that.
  size_t max_total = 65'536;
};

class BookingLedger {
 public:
  explicit BookingLedger(ClusterState& state, BookingLimits limits = {})
      : state_(state), limits_(limits) {}

  // Books `booking` (keyed by its pod_uid) on `node`, replacing an earlier
  // booking of the same pod. Returns false when the node cannot be tracked
  // (the state is full).
  bool Book(std::string_view node, Booking booking);

  // Releases the bookings of these pod UIDs that are booked on `node` (the
  // node whose report shows them); bookings on other nodes stay. Returns how
  // many were released.
  size_t Release(std::string_view node, const std::vector<std::string_view>& pod_uids);

  // Releases the booking of one pod: on `node`, or wherever it is when `node`
  // is empty (the placement service's Unreserve and Reserve). Returns it, or
  // nothing when there was none there.
  std::optional<Booking> ReleasePod(std::string_view node, std::string_view pod_uid);

  // For each UID (out[i] answers pod_uids[i]): whether it is booked on a node
  // other than `node`. Empty `out` when nothing is booked at all.
  void BookedElsewhere(std::string_view node, const std::vector<std::string_view>& pod_uids,
                       std::vector<bool>& out) const;

  // Drops bookings whose expiry has passed; cheap when none is due, and
  // proportional to the bookings that expire (not to all bookings) when some are.
  size_t Expire(absl::Time now);

  size_t size() const { return count_.load(std::memory_order_relaxed); }
  // Bookings dropped to stay within the caps: the node's (max_per_node) or
  // all of them (max_total).
  uint64_t dropped_node_full() const { return dropped_node_full_.load(std::memory_order_relaxed); }
  uint64_t dropped_full() const { return dropped_full_.load(std::memory_order_relaxed); }

  // (node, booking) pairs, for operators and tests.
  std::vector<std::pair<std::string, Booking>> List() const;

 private:
  void PublishLocked(const std::string& node);
  void NoteExpiryLocked();
  // Removes `uid`'s booking from the tables (not published); false if none.
  bool EraseLocked(const std::string& uid);
  // Drops the live booking due soonest (the oldest: every booking has the
  // same TTL); returns its node, or "" when there is none.
  std::string DropSoonestLocked();
  // Gives the tables' memory back once most bookings have gone.
  void ShrinkLocked();
  // Rebuilds due_ with the entries of live bookings only.
  void CompactDueLocked();

  // When bookings fall due, soonest first. Entries of bookings released or
  // replaced before their expiry stay until then and are skipped.
  struct Due {
    int64_t expiry_ns;
    std::string pod_uid;
    bool operator>(const Due& other) const { return expiry_ns > other.expiry_ns; }
  };

  ClusterState& state_;
  const BookingLimits limits_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::string> node_of_uid_;
  absl::flat_hash_map<std::string, std::vector<Booking>> by_node_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  std::atomic<size_t> count_{0};
  std::atomic<int64_t> next_expiry_ns_{INT64_MAX};
  std::atomic<uint64_t> dropped_node_full_{0};
  std::atomic<uint64_t> dropped_full_{0};
  size_t peak_since_shrink_ = 0;  // guarded by mu_
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_BOOKING_LEDGER_H_
