// Evaluation of one candidate node for one incoming pod: the three hard
// filters (isolation, bandwidth headroom, NUMA admission), the 0..10 score
// from the predicted interference cost, and graded staleness. Formulas and
// defaults: docs/scoring.md.
//
//   PodRequest req = MakePodRequest(pod, remembered, config);      // once per request
//   for (...) EvaluateNode(req, profile, bookings, now, config, decisions[i]);
//
// Pure and allocation-free for feasible nodes (only a rejection's reason
// string allocates).
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_EVALUATE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_EVALUATE_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "absl/time/time.h"
#include "extender/src/model/classify.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/node_profile.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

struct BookingFold;  // booking_fold.h

// A pod booked on a node after prioritize, until its agent reports it running
// (in-flight accounting). Its footprint counts as load on that node.
struct Booking {
  std::string pod_uid;
  std::string pod;  // "namespace/name", for reasons
  ContentionClass contention_class = ContentionClass::kStandard;
  int32_t numa_node = -1;  // NUMA node id it was expected to use; -1: the shared pool
  int32_t l3_domain = -1;  // L3 domain id; -1: spread
  double llc_bytes = 0;
  double membw_bytes_per_second = 0;
  int32_t exclusive_cpus = 0;  // pinned CPUs it will take on numa_node
  int64_t memory_bytes = 0;
  absl::Time expires_at = absl::InfiniteFuture();
  // Made by Reserve on the node the scheduler chose (the placement plugin),
  // not guessed by /prioritize: only exact bookings' CPUs can make the
  // kubelet's admission refuse a node (issue 22); a guess only lowers its score.
  bool exact = false;
};

// Booking describing `req` placed as `decision` says.
Booking MakeBooking(std::string_view pod_uid, const PodRequest& req, const NodeDecision& decision,
                    absl::Time expires_at);

// Confidence falls from 1 to 0 between fresh_until and stale_at in this
// many steps, each held for its whole step (issue 25): a decision on an
// aging node then holds for a step, not for an instant, so it can be reused
// and a verdict table need not evaluate every aging node at every refresh.
// 32 steps of (max_age - fresh_intervals x window): 1.8 s with the defaults.
inline constexpr int64_t kConfidenceSteps = 32;

// 1 while the report is younger than fresh_intervals x its window, falling
// in kConfidenceSteps held steps to 0 at max_age (both taken from the config
// the profile was built with): 1 - k / kConfidenceSteps in step k, so the
// value at each step's start of the line from 1 to 0.
// Inline: evaluation asks it for every candidate node.
inline double Confidence(const NodeProfile& profile, absl::Time now, const ModelConfig&) {
  // fresh_until = received_at + fresh_intervals x window; stale_at = received_at + max_age
  // (precomputed from the config by BuildNodeProfile).
  if (now <= profile.fresh_until) return 1.0;
  if (now >= profile.stale_at) return 0.0;
  const absl::Duration step = (profile.stale_at - profile.fresh_until) / kConfidenceSteps;
  if (step <= absl::ZeroDuration()) {
    return absl::FDivDuration(profile.stale_at - now, profile.stale_at - profile.fresh_until);
  }
  absl::Duration rest;
  const int64_t k = absl::IDivDuration(now - profile.fresh_until, step, &rest);
  return k >= kConfidenceSteps ? 0.0 : 1.0 - static_cast<double>(k) / kConfidenceSteps;
}

// The last instant at which EvaluateNode's decision on this profile, made at
// `now`, is still the same as at `now` as far as time goes (the bookings'
// expiries aside: their fold says when they change): the end of the
// confidence step `now` is in, or, once stale, when the last reported
// residents stop counting for isolation. InfiniteFuture: never changes.
inline absl::Time DecisionHeldUntil(const NodeProfile& profile, absl::Time now) {
  constexpr absl::Duration kTick = absl::Nanoseconds(1);
  if (now <= profile.fresh_until) return profile.fresh_until;
  if (now >= profile.stale_at) {
    return now < profile.residents_until ? profile.residents_until - kTick
                                         : absl::InfiniteFuture();
  }
  const absl::Duration step = (profile.stale_at - profile.fresh_until) / kConfidenceSteps;
  if (step <= absl::ZeroDuration()) return now;  // continuous: holds for an instant
  absl::Duration rest;
  const int64_t k = absl::IDivDuration(now - profile.fresh_until, step, &rest);
  return std::min(profile.fresh_until + (k + 1) * step, profile.stale_at) - kTick;
}

// Fills `out` (reusing its reason's storage). `profile` == nullptr: no telemetry.
// Bookings whose expires_at has passed are ignored.
// With `fold` (booking_fold.h: `bookings` folded when they were published),
// the bookings are read from it while it is valid at `now`.
void EvaluateNode(const PodRequest& pod, const NodeProfile* profile,
                  std::span<const Booking> bookings, absl::Time now, const ModelConfig& config,
                  NodeDecision& out, const BookingFold* fold = nullptr);

// EvaluateNode with isolation and bandwidth headroom switched off (NUMA
// admission stays): the least-harm fallback's second look at a node those
// filters refused. Sets `out.least_harm` when the node passes. It copies the
// config; a caller that looks at many nodes takes LeastHarmConfig once and
// calls EvaluateNodeLeastHarmWith (issue 25: the copy's allocations were a
// fifth of a request whose every candidate the fallback looked at again).
void EvaluateNodeLeastHarm(const PodRequest& pod, const NodeProfile* profile,
                           std::span<const Booking> bookings, absl::Time now,
                           const ModelConfig& config, NodeDecision& out,
                           const BookingFold* fold = nullptr);
// The configuration of that second look: `config` with its soft filters off.
ModelConfig LeastHarmConfig(const ModelConfig& config);
// EvaluateNodeLeastHarm with `least_harm_config` = LeastHarmConfig(config).
void EvaluateNodeLeastHarmWith(const PodRequest& pod, const NodeProfile* profile,
                               std::span<const Booking> bookings, absl::Time now,
                               const ModelConfig& least_harm_config, NodeDecision& out,
                               const BookingFold* fold = nullptr);

// True for a rejection the least-harm fallback may override (isolation or
// bandwidth headroom, not NUMA admission).
bool IsSoftRejection(const NodeDecision& d);

// std::lround without the library call (it was a tenth of a node's
// evaluation): truncate, then look at the fraction, which is exact for
// |x| < 2^52; beyond that (and for NaN) std::lround itself answers.
long RoundHalfAwayFromZero(double x);

// "4.0 GiB", "18.3 MB"-style byte formatting for reasons.
std::string FormatBytes(double bytes);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_EVALUATE_H_
