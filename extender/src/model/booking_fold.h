// A node's in-flight bookings folded by where they will run, independent of
// the node's profile: what evaluation needs from them in O(NUMA nodes + L3
// domains) instead of O(bookings) for every candidate of every request.
//
// Under a burst of pods each node can hold tens of bookings (375 pods/s with
// the 30 s booking TTL leaves ~22 per node on 500 nodes), and evaluation
// folded every one of them onto the node's profile for each of the 500
// candidates of each request: 15 % of a request's time (issue 15, finding 7;
// docs/performance.md). The fold is built once when a node's bookings change
// (state/booking_ledger.cc) and read by EvaluateNode while every booking in
// it is live (now < valid_until); after that evaluation folds the list as
// before, skipping the expired ones, until the ledger republishes it.
//
//   BookingFold fold = FoldBookings(bookings);
//   EvaluateNode(req, &profile, bookings, now, config, decision, &fold);
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_BOOKING_FOLD_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_BOOKING_FOLD_H_

#include <cstdint>
#include <span>

#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/model_config.h"

namespace neighborly::extender {

struct BookingFold {
  // Batch bookings of a group: whether any counts for isolation depends on
  // the configured floors (a batch pod below both blocks nothing), so the
  // group keeps the largest footprint of each kind.
  struct Batch {
    bool any = false;
    double max_llc_bytes = 0;
    double max_membw_bytes_per_second = 0;
    bool Blocks(const ModelConfig& config) const {
      return any && (max_llc_bytes >= static_cast<double>(config.isolation_floor_llc_bytes) ||
                     max_membw_bytes_per_second >=
                         static_cast<double>(config.isolation_floor_membw_bytes_per_second));
    }
  };
  // Cache bytes booked on one L3 domain id of a pinned group; id -1: spread
  // evenly over the NUMA node's domains (as is one whose id the profile lacks).
  struct L3Share {
    int32_t l3_id = -1;
    double llc_bytes = 0;
    double sensitivity = 0;
  };
  // Bookings pinned to one NUMA node id. Where the profile has no NUMA node
  // of that id, they count as the shared pool's, as each booking would.
  struct Pinned {
    int32_t numa_id = -1;
    double membw_bytes_per_second = 0;
    int32_t exclusive_cpus = 0;
    int64_t memory_bytes = 0;
    int32_t exact_cpus = 0;  // of exact bookings only (Booking::exact)
    int64_t exact_memory_bytes = 0;
    double sensitivity = 0;
    bool latency_critical = false;
    Batch batch;
    absl::InlinedVector<L3Share, 2> l3;
  };
  // Bookings in the shared pool (numa_node -1), spread by the profile's
  // shared weights.
  struct Shared {
    bool any = false;
    double membw_bytes_per_second = 0;
    double memory_bytes = 0;
    double llc_bytes = 0;
    double sensitivity = 0;
    bool latency_critical = false;
    Batch batch;
  };

  bool any = false;  // any booking at all
  // The list's first latency-critical booking and its first batch one (-1:
  // none), so that a refusal names one without scanning the list.
  int32_t first_latency_critical = -1;
  int32_t first_batch = -1;
  absl::InlinedVector<Pinned, 2> pinned;
  Shared shared;
  // The earliest expiry: the fold holds while now is before it.
  absl::Time valid_until = absl::InfiniteFuture();

  bool Valid(absl::Time now) const { return now < valid_until; }
};

// Folds `bookings` (all of them; expiry is the caller's, through valid_until).
BookingFold FoldBookings(std::span<const Booking> bookings);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_BOOKING_FOLD_H_
