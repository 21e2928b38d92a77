#include "extender/src/model/evaluate.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"
#include "extender/src/model/booking_fold.h"
#include "extender/src/model/interference.h"

namespace neighborly::extender {
namespace {

// Cost of L3 pressure p = predicted occupancy / capacity: negligible while the
// working sets fit comfortably, 1 once they exceed the cache.
double L3Cost(double pressure) { return std::min(1.0, pressure * pressure); }

// Cost of bandwidth utilisation u: the waiting time of a single-server queue,
// u / (1 - u), normalised so that it reaches 1 near saturation.
double MembwCost(double utilisation, double queue_scale) {
  if (utilisation >= 1.0) return 1.0;
  return std::min(1.0, utilisation / (1.0 - utilisation) / queue_scale);
}

struct Harm {
  double to_incoming = 0;
  double to_residents = 0;
};

// Adds one shared resource's contribution: `resident` load already there,
// `incoming` load the pod adds, of `capacity`; `cost` turns the predicted
// utilisation into harm, split between the parties by their share of the load.
template <typename CostFn>
[[gnu::always_inline]] inline double AddResource(double resident, double incoming, double capacity,
                                                 double resident_sensitivity,
                                                 double incoming_sensitivity, double weight,
                                                 CostFn cost, Harm& harm) {
  const double total = resident + incoming;
  const double utilisation = capacity > 0 ? total / capacity : 0;
  if (total <= 0) return utilisation;
  const double c = cost(utilisation);
  const double incoming_share = incoming / total;
  harm.to_incoming += incoming_sensitivity * weight * c * (1.0 - incoming_share);
  harm.to_residents += resident_sensitivity * weight * c * incoming_share;
  return utilisation;
}

// Bookings folded onto one node's profile. Filled only when a node has live
// bookings; the accessors answer 0 otherwise, so the common path touches no arrays.
class InFlight {
 public:
  // Folds each live booking in turn.
  InFlight(const NodeProfile& p, std::span<const Booking> bookings, absl::Time now,
           const ModelConfig& config)
      : config_(&config), bookings_(bookings), now_(now) {
    for (const Booking& b : bookings) {
      if (b.expires_at <= now) continue;
      if (!any_) Init(p);
      Add(p, b);
    }
  }
  // The same from the bookings' fold (booking_fold.h), valid at `now`: the
  // same sums, in another order.
  InFlight(const NodeProfile& p, std::span<const Booking> bookings, const BookingFold& fold,
           absl::Time now, const ModelConfig& config)
      : config_(&config), bookings_(bookings), now_(now), fold_(&fold) {
    if (!fold.any) return;
    Init(p);
    for (const BookingFold::Pinned& g : fold.pinned) {
      const bool batch = g.batch.Blocks(config);
      has_latency_critical_ = has_latency_critical_ || g.latency_critical;
      has_batch_ = has_batch_ || batch;
      int numa = -1;
      for (size_t n = 0; n < p.numa.size(); ++n) {
        if (p.numa[n].id == static_cast<uint32_t>(g.numa_id)) numa = static_cast<int>(n);
      }
      if (numa < 0) {  // no such NUMA node here: the shared pool's, as each booking would be
        double llc = 0;
        for (const BookingFold::L3Share& share : g.l3) llc += share.llc_bytes;
        AddShared(p, g.latency_critical, batch, g.membw_bytes_per_second,
                  static_cast<double>(g.memory_bytes), llc, g.sensitivity);
        continue;
      }
      numa_lc_[numa] = numa_lc_[numa] || g.latency_critical;
      numa_batch_[numa] = numa_batch_[numa] || batch;
      numa_membw_[numa] += g.membw_bytes_per_second;
      numa_cpus_[numa] += g.exclusive_cpus;
      numa_memory_[numa] += g.memory_bytes;
      numa_exact_cpus_[numa] += g.exact_cpus;
      numa_exact_memory_[numa] += g.exact_memory_bytes;
      numa_sensitivity_[numa] = std::max(numa_sensitivity_[numa], g.sensitivity);
      for (const BookingFold::L3Share& share : g.l3) {
        AddPinnedLlc(p, p.numa[numa], share.l3_id, share.llc_bytes, share.sensitivity);
      }
    }
    if (fold.shared.any) {
      const BookingFold::Shared& s = fold.shared;
      const bool batch = s.batch.Blocks(config);
      has_latency_critical_ = has_latency_critical_ || s.latency_critical;
      has_batch_ = has_batch_ || batch;
      AddShared(p, s.latency_critical, batch, s.membw_bytes_per_second, s.memory_bytes, s.llc_bytes,
                s.sensitivity);
    }
  }
  // Socket-level isolation: a booked pod of the class on NUMA index n, or in the shared pool.
  bool latency_critical_on(size_t n) const { return any_ && numa_lc_[n]; }
  bool batch_on(size_t n) const { return any_ && numa_batch_[n]; }
  bool shared_latency_critical() const { return shared_lc_; }
  bool shared_batch() const { return shared_batch_; }
  bool any() const { return any_; }
  double membw(size_t n) const { return any_ ? numa_membw_[n] : 0; }
  int32_t cpus(size_t n) const { return any_ ? numa_cpus_[n] : 0; }
  int64_t memory(size_t n) const { return any_ ? numa_memory_[n] : 0; }
  int32_t exact_cpus(size_t n) const { return any_ ? numa_exact_cpus_[n] : 0; }
  int64_t exact_memory(size_t n) const { return any_ ? numa_exact_memory_[n] : 0; }
  double numa_sensitivity(size_t n) const { return any_ ? numa_sensitivity_[n] : 0; }
  double llc(size_t d) const { return any_ ? l3_llc_[d] : 0; }
  double l3_sensitivity(size_t d) const { return any_ ? l3_sensitivity_[d] : 0; }
  bool has_latency_critical() const { return has_latency_critical_; }
  bool has_batch() const { return has_batch_; }
  // The first live booking of each kind, for a rejection's reason.
  const Booking* latency_critical() const {
    if (!has_latency_critical_) return nullptr;
    // From the fold, every booking is live: its first of the class is the one.
    if (fold_ != nullptr && fold_->first_latency_critical >= 0 &&
        static_cast<size_t>(fold_->first_latency_critical) < bookings_.size()) {
      return &bookings_[static_cast<size_t>(fold_->first_latency_critical)];
    }
    for (const Booking& b : bookings_) {
      if (b.expires_at > now_ && b.contention_class == ContentionClass::kLatencyCritical) return &b;
    }
    return nullptr;
  }
  const Booking* batch() const {
    if (!has_batch_) return nullptr;
    // From the fold: its first batch booking, unless that one is below the
    // isolation floors (then the first that is not, as below).
    if (fold_ != nullptr && fold_->first_batch >= 0 &&
        static_cast<size_t>(fold_->first_batch) < bookings_.size() &&
        BlocksAsBatch(bookings_[static_cast<size_t>(fold_->first_batch)])) {
      return &bookings_[static_cast<size_t>(fold_->first_batch)];
    }
    for (const Booking& b : bookings_) {
      if (b.expires_at > now_ && BlocksAsBatch(b)) return &b;
    }
    return nullptr;
  }

 private:
  void Init(const NodeProfile& p) {
    any_ = true;
    std::fill_n(numa_membw_.begin(), p.numa.size(), 0.0);
    std::fill_n(numa_cpus_.begin(), p.numa.size(), 0);
    std::fill_n(numa_memory_.begin(), p.numa.size(), 0);
    std::fill_n(numa_exact_cpus_.begin(), p.numa.size(), 0);
    std::fill_n(numa_exact_memory_.begin(), p.numa.size(), 0);
    std::fill_n(numa_sensitivity_.begin(), p.numa.size(), 0.0);
    std::fill_n(l3_llc_.begin(), p.l3.size(), 0.0);
    std::fill_n(l3_sensitivity_.begin(), p.l3.size(), 0.0);
    std::fill_n(numa_lc_.begin(), p.numa.size(), false);
    std::fill_n(numa_batch_.begin(), p.numa.size(), false);
  }

  // A batch pod below the isolation floors blocks nothing (issue 14).
  bool BlocksAsBatch(const Booking& b) const {
    return b.contention_class == ContentionClass::kBatch &&
           !(b.llc_bytes < static_cast<double>(config_->isolation_floor_llc_bytes) &&
             b.membw_bytes_per_second <
                 static_cast<double>(config_->isolation_floor_membw_bytes_per_second));
  }

  // Cache bytes of a booking pinned to NUMA node `np`: on its L3 domain id,
  // or spread over the node's domains when it names none (or one not there).
  void AddPinnedLlc(const NodeProfile& p, const NumaProfile& np, int32_t l3_id, double llc_bytes,
                    double sensitivity) {
    int l3 = -1;
    for (size_t d = np.l3_begin; d < np.l3_end; ++d) {
      if (l3_id >= 0 && p.l3[d].id == static_cast<uint32_t>(l3_id)) l3 = static_cast<int>(d);
    }
    const size_t domains = np.l3_end - np.l3_begin;
    for (size_t d = np.l3_begin; d < np.l3_end; ++d) {
      const double share =
          l3 >= 0 ? (static_cast<int>(d) == l3 ? 1.0 : 0.0) : 1.0 / static_cast<double>(domains);
      if (share <= 0) continue;
      l3_llc_[d] += llc_bytes * share;
      l3_sensitivity_[d] = std::max(l3_sensitivity_[d], sensitivity);
    }
  }

  // Load in the shared pool, spread by the profile's shared weights.
  void AddShared(const NodeProfile& p, bool lc, bool batch, double membw_bytes_per_second,
                 double memory_bytes, double llc_bytes, double sensitivity) {
    shared_lc_ = shared_lc_ || lc;
    shared_batch_ = shared_batch_ || batch;
    for (size_t n = 0; n < p.numa.size(); ++n) {
      const double w = p.numa[n].shared_weight;
      if (w <= 0) continue;
      numa_membw_[n] += membw_bytes_per_second * w;
      numa_memory_[n] += static_cast<int64_t>(memory_bytes * w);
      numa_sensitivity_[n] = std::max(numa_sensitivity_[n], sensitivity);
    }
    // The harm model keeps a shared-pool pod's whole working set in each L3
    // domain it runs on (PredictPlacement); the pressure model spreads it.
    const bool whole = config_->interference.enabled;
    for (size_t d = 0; d < p.l3.size(); ++d) {
      const double w = p.l3[d].shared_weight;
      if (w <= 0) continue;
      l3_llc_[d] += whole ? llc_bytes : llc_bytes * w;
      l3_sensitivity_[d] = std::max(l3_sensitivity_[d], sensitivity);
    }
  }

  void Add(const NodeProfile& p, const Booking& b) {
    const bool lc = b.contention_class == ContentionClass::kLatencyCritical;
    const bool batch = BlocksAsBatch(b);
    has_latency_critical_ = has_latency_critical_ || lc;
    has_batch_ = has_batch_ || batch;
    const double sensitivity = Sensitivity(b.contention_class);
    int numa = -1;
    for (size_t n = 0; n < p.numa.size(); ++n) {
      if (b.numa_node >= 0 && p.numa[n].id == static_cast<uint32_t>(b.numa_node)) {
        numa = static_cast<int>(n);
      }
    }
    if (numa >= 0) {
      numa_lc_[numa] = numa_lc_[numa] || lc;
      numa_batch_[numa] = numa_batch_[numa] || batch;
      numa_membw_[numa] += b.membw_bytes_per_second;
      numa_cpus_[numa] += b.exclusive_cpus;
      numa_memory_[numa] += b.memory_bytes;
      if (b.exact) {
        numa_exact_cpus_[numa] += b.exclusive_cpus;
        numa_exact_memory_[numa] += b.memory_bytes;
      }
      numa_sensitivity_[numa] = std::max(numa_sensitivity_[numa], sensitivity);
      AddPinnedLlc(p, p.numa[numa], b.l3_domain, b.llc_bytes, sensitivity);
      return;
    }
    AddShared(p, lc, batch, b.membw_bytes_per_second, static_cast<double>(b.memory_bytes),
              b.llc_bytes, sensitivity);
  }

  bool any_ = false;
  const ModelConfig* config_;
  std::span<const Booking> bookings_;
  absl::Time now_;
  const BookingFold* fold_ = nullptr;  // built from the fold (all its bookings live)
  bool has_latency_critical_ = false;
  bool has_batch_ = false;
  bool shared_lc_ = false;
  bool shared_batch_ = false;
  std::array<bool, kMaxNumaNodes> numa_lc_;
  std::array<bool, kMaxNumaNodes> numa_batch_;
  std::array<double, kMaxNumaNodes> numa_membw_;
  std::array<int32_t, kMaxNumaNodes> numa_cpus_;
  std::array<int64_t, kMaxNumaNodes> numa_memory_;
  std::array<int32_t, kMaxNumaNodes> numa_exact_cpus_;
  std::array<int64_t, kMaxNumaNodes> numa_exact_memory_;
  std::array<double, kMaxNumaNodes> numa_sensitivity_;
  std::array<double, kMaxL3Domains> l3_llc_;
  std::array<double, kMaxL3Domains> l3_sensitivity_;
};

// From the fold while it holds (every booking in it live), else from the list.
InFlight MakeInFlight(const NodeProfile& p, std::span<const Booking> bookings,
                      const BookingFold* fold, absl::Time now, const ModelConfig& config) {
  if (fold != nullptr && fold->Valid(now)) return InFlight(p, bookings, *fold, now, config);
  return InFlight(p, bookings, now, config);
}

// No bookings: what an empty InFlight answers, as constants.
struct NoInFlight {
  static constexpr double membw(size_t) { return 0; }
  static constexpr int32_t cpus(size_t) { return 0; }
  static constexpr int64_t memory(size_t) { return 0; }
  static constexpr int32_t exact_cpus(size_t) { return 0; }
  static constexpr int64_t exact_memory(size_t) { return 0; }
  static constexpr double numa_sensitivity(size_t) { return 0; }
  static constexpr double llc(size_t) { return 0; }
  static constexpr double l3_sensitivity(size_t) { return 0; }
  static constexpr bool has_latency_critical() { return false; }
  static constexpr bool has_batch() { return false; }
  static constexpr const Booking* latency_critical() { return nullptr; }
  static constexpr const Booking* batch() { return nullptr; }
  static constexpr bool latency_critical_on(size_t) { return false; }
  static constexpr bool batch_on(size_t) { return false; }
  static constexpr bool shared_latency_critical() { return false; }
  static constexpr bool shared_batch() { return false; }
};

// What a placement is predicted to do (issue 22, model/interference.h): the
// incoming pod's slowdown and the slowdown it adds to each tracked resident,
// from demand (working sets, solo traffic), LRU sharing by coldness and
// loaded latency; bookings count as demand of middling coldness.
struct PlacementPrediction {
  double incoming = 1;     // the incoming pod's predicted slowdown
  double cache_loss = 0;   // the share of its working set it would not hold (worst domain)
  double harm_in = 0;      // its harm weight x (incoming - 1)
  double harm_res = 0;     // residents' harm weights x the slowdown it adds them
  double l3_ratio = 0;     // predicted demand / size on its L3 domain(s), highest
  double utilisation = 0;  // predicted bandwidth / peak on its NUMA node(s), highest
  int refused_by = -1;     // a tracked resident it would push past its tolerance
  double refused_slowdown = 0;
  double refused_tolerance = 0;
};

inline constexpr size_t kMaxTracked = 64;

template <typename InFlightT>
void PredictPlacement(const PodRequest& pod, const NodeProfile& p, const InFlightT& in_flight,
                      int pinned_numa, int pinned_l3, const ModelConfig& config,
                      PlacementPrediction& out) {
  const InterferenceConfig& ic = config.interference;
  const Demand& in = pod.demand;
  const double in_cold = in.Coldness(ic);
  const double booking_cold = 0.5 / std::max(1.0, ic.reuse_per_second);
  const size_t l3_count = std::min(p.l3.size(), kMaxL3Domains);
  const size_t numa_count = std::min(p.numa.size(), kMaxNumaNodes);
  const bool pinned = pinned_numa >= 0;
  std::array<double, kMaxL3Domains> db, kb, da, ka, x_in;
  std::array<double, kMaxNumaNodes> ub, extra, la, lb;
  for (size_t n = 0; n < numa_count; ++n) {
    const NumaProfile& numa = p.numa[n];
    const double peak = numa.peak_membw > 0 ? numa.peak_membw : 1;
    ub[n] = (numa.membw + in_flight.membw(n)) / peak;
    const double w = pinned ? (static_cast<int>(n) == pinned_numa ? 1.0 : 0.0) : numa.shared_weight;
    extra[n] = w * in.membw_bytes_per_second;
  }
  double in_weight = 0, cache_loss = 0;
  for (size_t d = 0; d < l3_count; ++d) {
    const L3Profile& l3 = p.l3[d];
    const double booked = in_flight.llc(d);
    db[d] = l3.demand_bytes + booked;
    kb[d] = l3.cold_demand + booked * booking_cold;
    const double w = pinned ? (static_cast<int>(d) == pinned_l3 ? 1.0 : 0.0) : l3.shared_weight;
    // The whole working set in each domain it runs on, colder where it runs less.
    da[d] = db[d] + (w > 0 ? in.llc_bytes : 0);
    ka[d] = kb[d] + (w > 0 ? in.llc_bytes * in_cold / w : 0);
    x_in[d] = 0;
    if (w > 0) {
      x_in[d] = CacheLoss(in_cold / w, da[d], ka[d], l3.size_bytes);
      extra[l3.numa_index] += ic.reuse_per_second * w * in.llc_bytes * x_in[d];
      in_weight += w;
      cache_loss = std::max(cache_loss, x_in[d]);
      if (l3.size_bytes > 0) out.l3_ratio = std::max(out.l3_ratio, da[d] / l3.size_bytes);
    }
  }
  const size_t tracked = std::min(p.tracked.size(), kMaxTracked);
  std::array<double, kMaxTracked> xb, xa;
  for (size_t i = 0; i < tracked; ++i) {
    const TrackedResident& t = p.tracked[i];
    const L3Profile& l3 = p.l3[t.l3_index];
    xb[i] = CacheLoss(t.coldness, db[t.l3_index], kb[t.l3_index], l3.size_bytes);
    xa[i] = CacheLoss(t.coldness, da[t.l3_index], ka[t.l3_index], l3.size_bytes);
    extra[t.numa_index] += ic.reuse_per_second * t.share * t.llc_bytes * (xa[i] - xb[i]);
  }
  std::array<double, kMaxNumaNodes> ua;
  for (size_t n = 0; n < numa_count; ++n) {
    const NumaProfile& numa = p.numa[n];
    const double peak = numa.peak_membw > 0 ? numa.peak_membw : 1;
    ua[n] = ub[n] + extra[n] / peak;
  }
  // NUMA nodes inside one socket see some of its load (NPS4, SNC).
  CoupleSocketUtilisation(p, ic.socket_membw_coupling, ub);
  CoupleSocketUtilisation(p, ic.socket_membw_coupling, ua);
  for (size_t n = 0; n < numa_count; ++n) {
    const double w =
        pinned ? (static_cast<int>(n) == pinned_numa ? 1.0 : 0.0) : p.numa[n].shared_weight;
    if (w > 0) out.utilisation = std::max(out.utilisation, ua[n]);
    lb[n] = LoadedLatency(ub[n], ic);
    la[n] = LoadedLatency(ua[n], ic);
  }
  // The incoming pod, over the domains it runs on.
  double slowdown = 0;
  if (in_weight > 0) {
    for (size_t d = 0; d < l3_count; ++d) {
      const double w =
          pinned ? (static_cast<int>(d) == pinned_l3 ? 1.0 : 0.0) : p.l3[d].shared_weight;
      if (w <= 0) continue;
      slowdown += w * Slowdown(in.cache_sensitivity, in.membw_sensitivity, x_in[d],
                               la[p.l3[d].numa_index]);
    }
    slowdown /= in_weight;
  } else {
    double latency = 1;
    for (size_t n = 0; n < numa_count; ++n) {
      const double w =
          pinned ? (static_cast<int>(n) == pinned_numa ? 1.0 : 0.0) : p.numa[n].shared_weight;
      if (w > 0) latency = std::max(latency, la[n]);
    }
    slowdown = Slowdown(in.cache_sensitivity, in.membw_sensitivity, 0, latency);
  }
  out.incoming = slowdown;
  out.cache_loss = cache_loss;
  out.harm_in = in.harm_weight * (slowdown - 1.0);
  // Residents, one pod's entries at a time.
  double delta = 0, after = 0;
  for (size_t i = 0; i < tracked; ++i) {
    const TrackedResident& t = p.tracked[i];
    const double sa = Slowdown(t.cache_sensitivity, t.membw_sensitivity, xa[i], la[t.numa_index]);
    const double sb = Slowdown(t.cache_sensitivity, t.membw_sensitivity, xb[i], lb[t.numa_index]);
    delta += t.share * (sa - sb);
    after += t.share * (sa - t.domain_slowdown);
    if (i + 1 < tracked && p.tracked[i + 1].pod_index == t.pod_index) continue;
    const double added = std::max(0.0, delta);
    const double total = t.slowdown + after;
    out.harm_res += t.harm_weight * added;
    if (t.tolerance > 0 && total > t.tolerance && added >= ic.min_added_slowdown &&
        (out.refused_by < 0 || total > out.refused_slowdown)) {
      out.refused_by = static_cast<int>(i);
      out.refused_slowdown = total;
      out.refused_tolerance = t.tolerance;
    }
    delta = after = 0;
  }
}

// A refusal, its reason written into `out.reason`'s own storage: decisions
// are reused from request to request, so once a reason has grown this costs
// no allocation (a request that meets in-flight bookings of the other class
// rejects most of its candidates; a fresh string each was a third of such a
// request's evaluation, bench/model_bench BM_EvaluateBookedNodes). Measured
// numbers go in piece by piece, each as printf's "%.Nf" writes it
// (AppendFixed): absl::StrAppendFormat parsed its format string again for
// every refused node, 11 % of a verdict stream's refresh (issue 25, perf on
// bench/verdict_stream_bench).
class Refusal {
 public:
  explicit Refusal(NodeDecision& out) : text_(out.reason) {
    out.feasible = false;
    out.score = 0;
    text_.clear();
  }
  Refusal& Text(std::string_view s) {
    text_.append(s);
    return *this;
  }
  Refusal& Fixed(double value, int precision) {
    AppendFixed(&text_, value, precision);
    return *this;
  }
  Refusal& Id(uint32_t id) {
    absl::StrAppend(&text_, id);
    return *this;
  }
  template <typename... Parts>
  Refusal& Cat(const Parts&... parts) {
    absl::StrAppend(&text_, parts...);
    return *this;
  }

 private:
  std::string& text_;
};

template <typename... Parts>
void Reject(NodeDecision& out, const Parts&... parts) {
  Refusal(out).Cat(parts...);
}

// "membw 84% > 80% on NUMA node 1": the strict mode's bandwidth headroom.
Refusal RejectHeadroom(NodeDecision& out, double utilisation, double headroom, uint32_t numa_id) {
  Refusal r(out);
  r.Text("membw ").Fixed(utilisation * 100, 0).Text("% > ").Fixed(headroom * 100, 0);
  r.Text("% on NUMA node ").Id(numa_id);
  return r;
}

// Copies a reason the profile precomputed (reusing `out.reason`'s storage);
// formats it only for a profile built by hand without it.
void RejectCopy(NodeDecision& out, const std::string& precomputed, ContentionClass incoming,
                std::string_view example, int count) {
  if (!precomputed.empty()) {
    Refusal(out).Text(precomputed);
  } else {
    Refusal(out).Text(IsolationReason(incoming, example, count));
  }
}

// The score a node without usable telemetry gets: neutral, but below it for
// a latency-critical pod, which nothing protects there.
inline double BlindScore(const PodRequest& pod, const ModelConfig& config) {
  return pod.contention_class == ContentionClass::kLatencyCritical
             ? static_cast<double>(config.latency_critical_blind_score)
             : 5.0;
}

// Judges a placement by its predicted slowdowns (issue 22): refuses it where
// a latency-critical pod, incoming or resident, would pass its tolerance;
// else adds its harm. `numa`, `l3`: indexes where the kubelet pins it (-1:
// the shared pool). False when refused.
template <typename InFlightT>
bool JudgeSlowdown(const PodRequest& pod, const NodeProfile& p, const InFlightT& in_flight,
                   int numa, int l3, const ModelConfig& config, NodeDecision& out, Harm& harm) {
  PlacementPrediction pr;
  PredictPlacement(pod, p, in_flight, numa, l3, config, pr);
  out.l3_pressure = pr.l3_ratio;
  out.membw_utilisation = pr.utilisation;
  out.predicted_slowdown = pr.incoming;
  out.worst_resident_slowdown = pr.refused_by >= 0 ? pr.refused_slowdown : 0;
  // Only a refusal writes text: a feasible node allocates nothing. Short:
  // kube-scheduler's reply and the decision log carry one per refused node.
  // The least-harm fallback's second look refuses nothing (min_added_slowdown infinite).
  const bool refuse = std::isfinite(config.interference.min_added_slowdown);
  if (refuse && pod.demand.tolerance > 0 && pr.incoming > pod.demand.tolerance) {
    // "interference: predicted slowdown 1.31x > 1.20x (L3 domain 3: 12% lost,
    // demand 80%; membw 64% on NUMA node 1)", "L3 domains" and "NUMA nodes"
    // for a pod in the shared pool.
    Refusal r(out);
    r.Text("interference: predicted slowdown ").Fixed(pr.incoming, 2).Text("x > ");
    r.Fixed(pod.demand.tolerance, 2).Text("x (L3 ");
    if (l3 >= 0) {
      r.Text("domain ").Id(p.l3[l3].id);
    } else {
      r.Text("domains");
    }
    r.Text(": ").Fixed(pr.cache_loss * 100, 0).Text("% lost, demand ");
    r.Fixed(pr.l3_ratio * 100, 0).Text("%; membw ").Fixed(pr.utilisation * 100, 0).Text("% on ");
    if (numa >= 0) {
      r.Text("NUMA node ").Id(p.numa[numa].id);
    } else {
      r.Text("NUMA nodes");
    }
    r.Text(")");
    return false;
  }
  if (refuse && pr.refused_by >= 0) {
    const TrackedResident& t = p.tracked[static_cast<size_t>(pr.refused_by)];
    const std::string& who = static_cast<size_t>(t.name_index) < p.tracked_names.size()
                                 ? p.tracked_names[static_cast<size_t>(t.name_index)]
                                 : std::string();
    // "interference: would slow latency-critical pod team/api-1 to 1.31x > 1.20x (L3 domain 3)"
    Refusal(out)
        .Text("interference: would slow latency-critical pod ")
        .Text(who)
        .Text(" to ")
        .Fixed(pr.refused_slowdown, 2)
        .Text("x > ")
        .Fixed(pr.refused_tolerance, 2)
        .Text("x (L3 domain ")
        .Id(p.l3[t.l3_index].id)
        .Text(")");
    return false;
  }
  harm.to_incoming += pr.harm_in;
  harm.to_residents += pr.harm_res;
  return true;
}

[[gnu::always_inline]] inline void Finish(NodeDecision& out, const Harm& harm, double numa_penalty,
                                          const PodRequest& pod, const NodeProfile& p,
                                          const ModelConfig& config) {
  out.harm_to_incoming = harm.to_incoming;
  out.harm_to_residents = harm.to_residents;
  out.numa_penalty = numa_penalty;
  // A latency-critical pod pays for what the node cannot measure of its residents.
  out.unmeasured_penalty = pod.contention_class == ContentionClass::kLatencyCritical
                               ? config.unmeasured_penalty * p.unmeasured_share
                               : 0.0;
  double raw;
  if (config.interference.enabled) {
    // Predicted harm in slowdown units, score_step per point (issue 22).
    out.cost =
        std::clamp(harm.to_incoming + harm.to_residents +
                       config.numa_weight * pod.sensitivity * numa_penalty + out.unmeasured_penalty,
                   0.0, 10.0);
    raw = std::clamp(10.0 - out.cost / std::max(1e-6, config.interference.score_step), 0.0, 10.0);
  } else {
    out.cost =
        std::clamp(harm.to_incoming + harm.to_residents +
                       config.numa_weight * pod.sensitivity * numa_penalty + out.unmeasured_penalty,
                   0.0, 1.0);
    raw = 10.0 * (1.0 - out.cost);
  }
  const double target = BlindScore(pod, config);
  const double blended = target + out.confidence * (raw - target);
  out.score = static_cast<int>(std::clamp(RoundHalfAwayFromZero(blended), 0L, 10L));
}

// The bandwidth headroom filter is the strict mode's (or the pressure
// model's, with interference off); the harm filter judges bandwidth by the
// slowdown it causes.
inline bool StrictHeadroom(const ModelConfig& config) {
  return !config.interference.enabled || config.isolate_latency_critical;
}

// Which isolation conflict the pod meets on this node, node-wide (residents
// and in-flight bookings); a tiny batch pod blocks nothing. Fresh and stale
// nodes alike (a stale node's residents have not gone anywhere).
struct IsolationConflict {
  bool latency_critical = false;  // a latency-critical pod beside batch / aggressors
  bool batch = false;             // a batch pod beside latency-critical pods
  bool any() const { return latency_critical || batch; }
};

template <typename InFlightT>
IsolationConflict FindIsolationConflict(const PodRequest& pod, const NodeProfile& p,
                                        const InFlightT& in_flight, const ModelConfig& config) {
  IsolationConflict c;
  if (pod.contention_class == ContentionClass::kLatencyCritical) {
    c.latency_critical =
        config.isolate_latency_critical && (p.batch_pods > 0 || in_flight.has_batch());
  } else if (pod.contention_class == ContentionClass::kBatch) {
    const bool tiny = pod.llc_bytes < static_cast<double>(config.isolation_floor_llc_bytes) &&
                      pod.membw_bytes_per_second <
                          static_cast<double>(config.isolation_floor_membw_bytes_per_second);
    c.batch = !tiny && config.isolate_batch &&
              (p.latency_critical_pods > 0 || in_flight.has_latency_critical());
  }
  return c;
}

// The node-wide isolation rejection (the resident or in-flight pod that conflicts).
template <typename InFlightT>
void RejectNodeWide(const NodeProfile& p, const InFlightT& in_flight, bool latency_critical,
                    NodeDecision& out) {
  if (latency_critical) {
    if (p.batch_pods > 0) {
      return RejectCopy(out, p.isolation_reason_latency_critical, ContentionClass::kLatencyCritical,
                        p.batch_example, p.batch_pods);
    }
    const Booking* b = in_flight.batch();
    return Reject(out, "isolation: latency-critical pod would run beside in-flight batch pod ",
                  b != nullptr ? Av(b->pod) : absl::string_view());
  }
  if (p.latency_critical_pods > 0) {
    return RejectCopy(out, p.isolation_reason_batch, ContentionClass::kBatch,
                      p.latency_critical_example, p.latency_critical_pods);
  }
  const Booking* b = in_flight.latency_critical();
  return Reject(out, "isolation: batch pod would run beside in-flight latency-critical pod ",
                b != nullptr ? Av(b->pod) : absl::string_view());
}

// The filters and the score for a node with usable telemetry. A template over
// the bookings' view so that the common case, nothing booked, compiles to code
// without the in-flight terms (NoInFlight answers 0 everywhere, as an empty
// InFlight does).
template <typename InFlightT>
void EvaluateLoaded(const PodRequest& pod, const NodeProfile& p, const InFlightT& in_flight,
                    const ModelConfig& config, NodeDecision& out) {
  // Plain pointers: InlinedVector's accessors check where the elements live on
  // every use, and the compiler cannot hoist that past the writes to `out`.
  const NumaProfile* const numa_nodes = p.numa.data();
  const size_t numa_count = p.numa.size();
  const L3Profile* const l3_domains = p.l3.data();
  const size_t l3_count = p.l3.size();
  const bool latency_critical = pod.contention_class == ContentionClass::kLatencyCritical;

  // 1. Isolation, node-wide. A pinned pod's conflict may be lifted by
  // socket-level isolation once we know where the kubelet pins it (below).
  const IsolationConflict conflict = FindIsolationConflict(pod, p, in_flight, config);
  const bool lc_conflict = conflict.latency_critical;
  const bool batch_conflict = conflict.batch;
  const bool may_lift = config.socket_isolation && pod.exclusive_cpus;
  if (conflict.any() && !may_lift) return RejectNodeWide(p, in_flight, lc_conflict, out);

  const double queue_scale = config.membw_queue_scale;
  auto membw_cost = [queue_scale](double u) { return MembwCost(u, queue_scale); };

  // NUMA admission and placement as the kubelet decides them (issue 14,
  // topology_admission.h): only Guaranteed pods give hints; a refusal names
  // the NUMA nodes and the shortfall.
  AdmissionResult placed;
  bool guessed_admission = false;  // admitted only if guessed bookings are wrong
  if (pod.admission.any_hint) {
    const AdmissionProfile& node = p.admission;
    AdmissionBooked booked;
    std::array<int32_t, kMaxAdmissionNumaNodes> booked_cpus;
    std::array<int64_t, kMaxAdmissionNumaNodes> booked_memory;
    if constexpr (!std::is_same_v<InFlightT, NoInFlight>) {
      for (size_t i = 0; i < node.numa.size(); ++i) {
        booked_cpus[i] = in_flight.cpus(node.numa[i].report_index);
        booked_memory[i] = in_flight.memory(node.numa[i].report_index);
      }
      booked = {std::span<const int32_t>(booked_cpus.data(), node.numa.size()),
                std::span<const int64_t>(booked_memory.data(), node.numa.size())};
    }
    if (!Admit(node, pod.admission, booked, placed,
               config.numa_admission ? &out.reason : nullptr) &&
        config.numa_admission) {
      // Refused with every booking counted. Guessed bookings (/prioritize's,
      // on the node Neighborly liked best, which kube-scheduler may not have
      // chosen) must not strand pods: if the exact ones alone (Reserve's, or
      // none) admit, the refusal is soft ("in-flight: ..."), and the
      // least-harm fallback passes the node, at a cost, when every candidate
      // refuses (issue 22).
      bool exact_admits = false;
      if constexpr (!std::is_same_v<InFlightT, NoInFlight>) {
        std::array<int32_t, kMaxAdmissionNumaNodes> exact_cpus;
        std::array<int64_t, kMaxAdmissionNumaNodes> exact_memory;
        bool differs = false;
        for (size_t i = 0; i < node.numa.size(); ++i) {
          exact_cpus[i] = in_flight.exact_cpus(node.numa[i].report_index);
          exact_memory[i] = in_flight.exact_memory(node.numa[i].report_index);
          differs = differs || exact_cpus[i] != booked_cpus[i] || exact_memory[i] != booked_memory[i];
        }
        if (differs && config.interference.enabled) {
          const AdmissionBooked exact = {
              std::span<const int32_t>(exact_cpus.data(), node.numa.size()),
              std::span<const int64_t>(exact_memory.data(), node.numa.size())};
          placed = AdmissionResult();
          exact_admits = Admit(node, pod.admission, exact, placed, nullptr);
        }
      }
      if (!exact_admits) {
        out.feasible = false;
        out.score = 0;
        return;
      }
      if (config.interference.guessed_bookings_refuse) {
        out.reason.insert(0, "in-flight: ");
        out.feasible = false;
        out.score = 0;
        return;
      }
      out.reason.clear();
      guessed_admission = true;
    }
  }

  if (lc_conflict || batch_conflict) {
    if (!placed.pinned || placed.home < 0) {
      return RejectNodeWide(p, in_flight, lc_conflict, out);
    }
    // Socket-level isolation (issue 14): only pods pinned to the same NUMA node
    // and shared-pool pods share its memory controller and L3.
    const size_t n = p.admission.numa[placed.home].report_index;
    const NumaProfile& numa = numa_nodes[n];
    const int shared = lc_conflict ? p.batch_pods - p.pinned_batch_pods
                                   : p.latency_critical_pods - p.pinned_latency_critical_pods;
    const int here = lc_conflict ? numa.pinned_batch : numa.pinned_latency_critical;
    const bool booked_here = lc_conflict ? in_flight.batch_on(n) : in_flight.latency_critical_on(n);
    const bool booked_shared =
        lc_conflict ? in_flight.shared_batch() : in_flight.shared_latency_critical();
    const char* other = lc_conflict ? "batch" : "latency-critical";
    if (here > 0 || booked_here) {
      Reject(out, "isolation (socket): ", lc_conflict ? "latency-critical" : "batch",
             " pod the kubelet will pin to NUMA node ", numa.id, " would share it with ");
      if (here > 0) {
        absl::StrAppend(&out.reason, here, " ", other, " pod(s) pinned there");
      } else {
        absl::StrAppend(&out.reason, "an in-flight ", other, " pod pinned there");
      }
      return;
    }
    // Shared-pool pods run on every socket: the node-wide reason, naming one.
    if (shared > 0) return RejectNodeWide(p, in_flight, lc_conflict, out);
    if (booked_shared) {
      const Booking* b = lc_conflict ? in_flight.batch() : in_flight.latency_critical();
      return Reject(out, "isolation: ", lc_conflict ? "latency-critical" : "batch",
                    " pod would run beside in-flight ", other, " pod ",
                    b != nullptr ? Av(b->pod) : absl::string_view(), " (in the shared pool)");
    }
  }

  if (placed.pinned && placed.home >= 0) {
    // Pinned: evaluate the NUMA node and L3 domain the kubelet will use.
    const AdmissionNuma& home = p.admission.numa[placed.home];
    const size_t n = home.report_index;
    const NumaProfile& numa = numa_nodes[n];
    out.numa_node = static_cast<int32_t>(numa.id);
    out.exclusive_cpus = placed.total_cpus;
    out.first_cpu = home.first_free_cpu;
    out.full_cores = placed.full_cores;
    const int32_t predicted_l3 = home.L3For(placed.total_cpus);  // exact on CCD nodes (issue 27)
    NoteL3Plan(p.admission, home, placed.total_cpus, out);
    out.spans_numa = std::popcount(placed.numa_mask) > 1;
    out.topology_policy = static_cast<uint8_t>(p.admission.policy);
    const double resident_membw = numa.membw + in_flight.membw(n);
    const double utilisation = (resident_membw + pod.membw_bytes_per_second) / numa.peak_membw;
    out.membw_utilisation = utilisation;
    if (latency_critical && StrictHeadroom(config) && utilisation > config.membw_headroom) {
      RejectHeadroom(out, utilisation, config.membw_headroom, numa.id)
          .Text(" (where the kubelet will pin it)");
      return;
    }
    Harm harm;
    // The L3 domain of the lowest free core (the static policy packs from there).
    int domain = -1;
    for (size_t d = numa.l3_begin; d < numa.l3_end; ++d) {
      if (predicted_l3 >= 0 && l3_domains[d].id == static_cast<uint32_t>(predicted_l3)) {
        domain = static_cast<int>(d);
      }
    }
    if (domain < 0 && numa.l3_begin < numa.l3_end) domain = numa.l3_begin;
    if (config.interference.enabled) {
      if (domain >= 0) out.l3_domain = static_cast<int32_t>(l3_domains[domain].id);
      if (!JudgeSlowdown(pod, p, in_flight, static_cast<int>(n), domain, config, out, harm)) return;
    } else {
      // The pressure model (interference off): cost of utilisation by resource.
      AddResource(resident_membw, pod.membw_bytes_per_second, numa.peak_membw,
                  std::max(numa.resident_sensitivity, in_flight.numa_sensitivity(n)),
                  pod.sensitivity, config.membw_weight, membw_cost, harm);
      if (domain >= 0 && l3_domains[domain].size_bytes > 0) {
      const L3Profile& l3 = l3_domains[domain];
      out.l3_domain = static_cast<int32_t>(l3.id);
      out.l3_pressure =
          AddResource(l3.occupancy_bytes + in_flight.llc(domain), pod.llc_bytes, l3.size_bytes,
                      std::max(l3.resident_sensitivity, in_flight.l3_sensitivity(domain)),
                      pod.sensitivity, config.l3_weight, L3Cost, harm);
      } else if (domain >= 0) {
        out.l3_domain = static_cast<int32_t>(l3_domains[domain].id);
      }
    }
    // SMT: a sensitive pod that would share a core with a sibling thread pays
    // for it (docs/scoring.md section 4).
    if (!placed.full_cores) harm.to_incoming += config.smt_weight * pod.sensitivity;
    if (guessed_admission) harm.to_incoming += config.interference.guessed_admission_penalty;
    return Finish(out, harm, out.spans_numa ? 1.0 : 0.0, pod, p, config);
  }

  // Shared pool: the pod's threads and memory spread over the NUMA nodes by
  // their share of shared-pool CPUs, and its load with them.
  Harm harm;
  double max_weight = 0;
  double worst_utilisation = 0;
  int worst = -1;
  for (size_t n = 0; n < numa_count; ++n) {
    const NumaProfile& numa = numa_nodes[n];
    const double w = numa.shared_weight;
    if (w <= 0) continue;
    max_weight = std::max(max_weight, w);
    Harm part;
    const double utilisation = AddResource(
        numa.membw + in_flight.membw(n), pod.membw_bytes_per_second * w, numa.peak_membw,
        std::max(numa.resident_sensitivity, in_flight.numa_sensitivity(n)), pod.sensitivity,
        config.membw_weight, membw_cost, part);
    harm.to_incoming += w * part.to_incoming;
    harm.to_residents += w * part.to_residents;
    if (utilisation > worst_utilisation || worst < 0) {
      worst_utilisation = utilisation;
      worst = static_cast<int>(n);
    }
  }
  if (latency_critical && StrictHeadroom(config) && worst >= 0 &&
      worst_utilisation > config.membw_headroom) {
    RejectHeadroom(out, worst_utilisation, config.membw_headroom, numa_nodes[worst].id);
    return;
  }
  double max_pressure = 0;
  for (size_t d = 0; d < l3_count; ++d) {
    const L3Profile& l3 = l3_domains[d];
    const double w = l3.shared_weight;
    if (w <= 0 || l3.size_bytes <= 0) continue;
    Harm part;
    const double pressure =
        AddResource(l3.occupancy_bytes + in_flight.llc(d), pod.llc_bytes * w, l3.size_bytes,
                    std::max(l3.resident_sensitivity, in_flight.l3_sensitivity(d)), pod.sensitivity,
                    config.l3_weight, L3Cost, part);
    harm.to_incoming += w * part.to_incoming;
    harm.to_residents += w * part.to_residents;
    max_pressure = std::max(max_pressure, pressure);
  }
  out.l3_pressure = max_pressure;
  out.membw_utilisation = worst_utilisation;
  if (numa_count == 1) out.numa_node = static_cast<int32_t>(numa_nodes[0].id);
  if (config.interference.enabled) {
    harm = Harm();
    if (!JudgeSlowdown(pod, p, in_flight, -1, -1, config, out, harm)) return;
  }
  // Spread threads reach remote memory; on one NUMA node they cannot.
  const double numa_penalty = max_weight > 0 ? 1.0 - max_weight : 0.0;
  Finish(out, harm, numa_penalty, pod, p, config);
}

}  // namespace

std::string FormatBytes(double bytes) {
  constexpr double kKi = 1024.0, kMi = kKi * 1024, kGi = kMi * 1024;
  if (bytes >= kGi) return absl::StrFormat("%.1f GiB", bytes / kGi);
  if (bytes >= kMi) return absl::StrFormat("%.1f MiB", bytes / kMi);
  if (bytes >= kKi) return absl::StrFormat("%.1f KiB", bytes / kKi);
  return absl::StrFormat("%.0f B", bytes);
}

long RoundHalfAwayFromZero(double x) {
  if (!(std::fabs(x) < 0x1p52)) return std::lround(x);  // NaN, huge: the library decides
  const long t = static_cast<long>(x);
  const double fraction = x - static_cast<double>(t);
  return t + (fraction >= 0.5 ? 1 : 0) - (fraction <= -0.5 ? 1 : 0);
}

Booking MakeBooking(std::string_view pod_uid, const PodRequest& req, const NodeDecision& decision,
                    absl::Time expires_at) {
  Booking b;
  b.pod_uid = std::string(pod_uid);
  b.pod = req.pod;
  b.contention_class = req.contention_class;
  const bool pinned = decision.exclusive_cpus > 0;
  b.numa_node = pinned ? decision.numa_node : -1;
  b.l3_domain = pinned ? decision.l3_domain : -1;
  b.llc_bytes = req.llc_bytes;
  b.membw_bytes_per_second = req.membw_bytes_per_second;
  b.exclusive_cpus = pinned && decision.numa_node >= 0 ? decision.exclusive_cpus : 0;
  b.memory_bytes = req.memory_bytes;
  b.expires_at = expires_at;
  return b;
}

void EvaluateNode(const PodRequest& pod, const NodeProfile* profile,
                  std::span<const Booking> bookings, absl::Time now, const ModelConfig& config,
                  NodeDecision& out, const BookingFold* fold) {
  out.feasible = true;
  out.reason.clear();
  out.score = static_cast<int>(BlindScore(pod, config));
  out.cost = 0;
  out.confidence = 0;
  out.has_telemetry = profile != nullptr;
  out.l3_pressure = out.membw_utilisation = out.harm_to_incoming = out.harm_to_residents = 0;
  out.numa_penalty = out.unmeasured_penalty = 0;
  out.numa_node = out.l3_domain = -1;
  out.exclusive_cpus = 0;
  out.first_cpu = -1;
  out.full_cores = true;
  out.spans_numa = false;
  out.topology_policy = 0;
  out.least_harm = false;
  out.predicted_slowdown = 0;
  out.worst_resident_slowdown = 0;
  out.requested_share = 0;
  if (profile == nullptr) return;  // no telemetry: fail open, blind score
  const NodeProfile& p = *profile;
  out.requested_share = p.cpu_requested_share + 0.05 * static_cast<double>(bookings.size());
  out.confidence = Confidence(p, now, config);
  if (out.confidence <= 0 || p.numa.empty()) {
    // Stale: load is unknown (fail open, blind score), but the residents it
    // last reported have not gone anywhere: isolation still holds for a while.
    if (now < p.residents_until) {
      auto isolate = [&](const auto& in_flight) {
        const IsolationConflict c = FindIsolationConflict(pod, p, in_flight, config);
        if (c.any()) RejectNodeWide(p, in_flight, c.latency_critical, out);
      };
      if (bookings.empty()) {
        isolate(NoInFlight());
      } else {
        isolate(MakeInFlight(p, bookings, fold, now, config));
      }
    }
    return;
  }

  if (bookings.empty()) return EvaluateLoaded(pod, p, NoInFlight(), config, out);
  const InFlight in_flight = MakeInFlight(p, bookings, fold, now, config);
  if (!in_flight.any()) return EvaluateLoaded(pod, p, NoInFlight(), config, out);
  EvaluateLoaded(pod, p, in_flight, config, out);
}

ModelConfig LeastHarmConfig(const ModelConfig& config) {
  ModelConfig relaxed = config;
  relaxed.isolate_latency_critical = false;
  relaxed.isolate_batch = false;
  relaxed.membw_headroom = std::numeric_limits<double>::infinity();
  relaxed.interference.max_slowdown = std::numeric_limits<double>::infinity();
  relaxed.interference.min_added_slowdown = std::numeric_limits<double>::infinity();
  relaxed.interference.guessed_bookings_refuse = false;
  return relaxed;
}

void EvaluateNodeLeastHarmWith(const PodRequest& pod, const NodeProfile* profile,
                               std::span<const Booking> bookings, absl::Time now,
                               const ModelConfig& least_harm_config, NodeDecision& out,
                               const BookingFold* fold) {
  EvaluateNode(pod, profile, bookings, now, least_harm_config, out, fold);
  out.least_harm = out.feasible;
}

void EvaluateNodeLeastHarm(const PodRequest& pod, const NodeProfile* profile,
                           std::span<const Booking> bookings, absl::Time now,
                           const ModelConfig& config, NodeDecision& out, const BookingFold* fold) {
  EvaluateNodeLeastHarmWith(pod, profile, bookings, now, LeastHarmConfig(config), out, fold);
}

bool IsSoftRejection(const NodeDecision& d) {
  return !d.feasible && d.has_telemetry &&
         (d.reason.starts_with("isolation") || d.reason.starts_with("membw") ||
          d.reason.starts_with("interference") || d.reason.starts_with("in-flight"));
}

}  // namespace neighborly::extender
