#include "extender/src/model/workload_profile.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace neighborly::extender {
namespace {

// Weights are rebased (divided down, origin moved to now) past this, far
// below float's range: buckets are floats.
constexpr double kRebaseAbove = 0x1p40;

// The working set is what replicas held in their roomiest windows (a squeezed
// replica holds less than it needs; issue 22).
constexpr double kDemandQuantile = 0.99;
// Windows of IPC and MPKI before their uncontended baselines are trusted.
constexpr double kBaselineWindows = 10;

// 2^(-elapsed / half_life): what a decayed maximum keeps of itself.
double DecayFactor(absl::Time then, absl::Time now, absl::Duration half_life) {
  if (then == absl::InfinitePast()) return 0;
  if (now <= then || half_life <= absl::ZeroDuration()) return 1;
  return std::exp2(-absl::FDivDuration(now - then, half_life));
}

double DecayedPeak(double peak, absl::Time at, absl::Time now, absl::Duration half_life) {
  return peak * DecayFactor(at, now, half_life);
}

}  // namespace

std::string_view WorkloadMetricName(WorkloadMetric m) {
  switch (m) {
    case WorkloadMetric::kLlc:
      return "llc_occupancy_bytes";
    case WorkloadMetric::kMembw:
      return "membw_total_bytes_per_second";
    case WorkloadMetric::kMembwLocal:
      return "membw_local_bytes_per_second";
    case WorkloadMetric::kMpki:
      return "llc_misses_per_kilo_instructions";
    case WorkloadMetric::kIpc:
      return "ipc";
    case WorkloadMetric::kCpu:
    case WorkloadMetric::kCount:
      break;
  }
  return "cpu_usage_millicores";
}

double WorkloadMetricBase(WorkloadMetric m) {
  switch (m) {
    case WorkloadMetric::kLlc:
      return 64.0 * 1024;  // 64 KiB .. 4 TiB over 16 octaves
    case WorkloadMetric::kMembw:
    case WorkloadMetric::kMembwLocal:
      return 1e6;  // 1 MB/s .. 65 TB/s
    case WorkloadMetric::kMpki:
    case WorkloadMetric::kIpc:
      return 0.01;  // .. 655
    case WorkloadMetric::kCpu:
    case WorkloadMetric::kCount:
      break;
  }
  return 1;  // millicores .. 65,536
}

void DecayedStat::Add(double value, double weight, double base) {
  if (!(value >= 0) || !(weight > 0)) return;  // NaN and negatives are not measurements
  int bucket = 0;
  if (value > base) {
    bucket = 1 + static_cast<int>(std::floor(std::log2(value / base) * kPerOctave));
    bucket = std::clamp(bucket, 1, kBuckets - 1);
  }
  buckets_[bucket] += static_cast<float>(weight);
  sums_[bucket] += static_cast<float>(value * weight);
  weight_ += weight;
  sum_ += value * weight;
}

DecayedStat DecayedStat::Restore(const std::array<float, kBuckets>& buckets,
                                 const std::array<float, kBuckets>& sums, double mean) {
  DecayedStat s;
  s.buckets_ = buckets;
  s.sums_ = sums;
  for (float b : buckets) s.weight_ += b;
  s.sum_ = mean * s.weight_;
  return s;
}

void DecayedStat::Scale(double factor) {
  for (float& b : buckets_) b = static_cast<float>(b * factor);
  for (float& b : sums_) b = static_cast<float>(b * factor);
  weight_ *= factor;
  sum_ *= factor;
}

double DecayedStat::Quantile(double q) const {
  if (weight_ <= 0) return 0;
  const double target = std::clamp(q, 0.0, 1.0) * weight_;
  double seen = 0;
  int last = -1;
  for (int i = 0; i < kBuckets; ++i) {
    if (buckets_[i] <= 0) continue;
    last = i;
    seen += buckets_[i];
    if (seen >= target) break;
  }
  return last >= 0 ? sums_[last] / buckets_[last] : 0;
}

double WorkloadProfile::NodeFactor(uint64_t node, double growth, const ModelConfig& config) const {
  double own = 0, total = 0;
  int contributors = 0;
  for (const auto& [hash, weight] : nodes_) {
    if (weight <= 0) continue;
    ++contributors;
    total += weight;
    if (hash == node) own = weight;
  }
  const bool other = contributors > (own > 0 ? 1 : 0);
  const double cap = config.workloads.max_node_share;
  if (!other || cap >= 1) return 1.0;
  // A node may weigh at most cap / (1 - cap) times all the others together,
  // plus one window of slack (so that nodes reporting at the same pace both
  // count fully). Past that its windows still add a sliver, so that its data
  // is not ignored; `growth` is the weight of one window now.
  const double others = total - own;
  const double allowed = cap / (1.0 - cap) * others + growth - own;
  return std::clamp(allowed / growth, 0.01, 1.0);
}

void WorkloadProfile::CountNode(uint64_t node, double weight) {
  auto* slot = &nodes_[0];
  for (auto& entry : nodes_) {
    if (entry.first == node && entry.second > 0) {
      entry.second += weight;
      return;
    }
    if (entry.second < slot->second) slot = &entry;
  }
  *slot = {node, weight};
}

void WorkloadProfile::Add(const WorkloadObservation& o, uint64_t node, absl::Time now,
                          const ModelConfig& config) {
  const absl::Duration half_life = config.workloads.half_life;
  if (origin_ == absl::InfinitePast()) origin_ = now;
  if (now < origin_) now = origin_;  // a clock step back: count it as now
  double growth = std::exp2(absl::FDivDuration(now - origin_, half_life));
  if (!(growth < kRebaseAbove)) {
    const double down = 1.0 / growth;
    for (DecayedStat& s : stats_) s.Scale(down);
    fit_.Scale(down);
    windows_weight_ *= down;
    membw_estimated_weight_ *= down;
    for (auto& entry : nodes_) entry.second *= down;
    origin_ = now;
    growth = 1;
  }
  const double w = growth * NodeFactor(node, growth, config);
  last_update_ = now;
  windows_weight_ += w;
  CountNode(node, w);
  auto add = [&](WorkloadMetric m, const std::optional<double>& v) {
    if (v) stats_[static_cast<int>(m)].Add(*v, w, WorkloadMetricBase(m));
  };
  add(WorkloadMetric::kLlc, o.llc_bytes);
  add(WorkloadMetric::kMembw, o.membw_bytes_per_second);
  add(WorkloadMetric::kMembwLocal, o.membw_local_bytes_per_second);
  add(WorkloadMetric::kMpki, o.mpki);
  add(WorkloadMetric::kIpc, o.ipc);
  add(WorkloadMetric::kCpu, o.cpu_millicores);
  if (o.membw_bytes_per_second && o.membw_estimated) membw_estimated_weight_ += w;
  if (o.ipc && *o.ipc > 0 && o.cache_loss && o.latency_factor) {
    fit_.Add({.cache_loss = *o.cache_loss,
              .latency_factor = *o.latency_factor,
              .cpi = 1.0 / *o.ipc,
              .membw = o.membw_estimated ? std::nullopt : o.membw_bytes_per_second},
             w);
  }

  const absl::Duration peak_half_life = config.workloads.peak_half_life;
  // An estimated bandwidth (from LLC misses, a lower bound) still counts for
  // the verdict: it can only understate.
  if (o.membw_share) {
    const double kept = DecayedPeak(peak_membw_share_, peak_membw_at_, now, peak_half_life);
    if (*o.membw_share >= kept) {
      peak_membw_share_ = *o.membw_share;
      peak_membw_at_ = now;
    }
  }
  const bool mpki_ok = !o.mpki || *o.mpki >= config.aggressor_min_mpki;
  if ((o.membw_share && *o.membw_share >= config.aggressor_membw_share) ||
      (o.l3_share && mpki_ok && *o.l3_share >= config.aggressor_l3_share)) {
    last_above_ = now;
  }
  if (o.l3_share && mpki_ok) {
    const double kept = DecayedPeak(peak_l3_share_, peak_l3_at_, now, peak_half_life);
    if (*o.l3_share >= kept) {
      peak_l3_share_ = *o.l3_share;
      peak_l3_at_ = now;
    }
  }
  if (o.pod_uid_hash != 0) {
    auto* oldest = &recent_pods_[0];
    bool found = false;
    for (auto& entry : recent_pods_) {
      if (entry.first == o.pod_uid_hash) {
        entry.second = now;
        found = true;
        break;
      }
      if (entry.second < oldest->second) oldest = &entry;
    }
    if (!found) *oldest = {o.pod_uid_hash, now};
  }
  UpdateVerdict(now, config);
}

double WorkloadProfile::recent_membw_share(absl::Time now, const ModelConfig& config) const {
  return DecayedPeak(peak_membw_share_, peak_membw_at_, now, config.workloads.peak_half_life);
}

double WorkloadProfile::recent_l3_share(absl::Time now, const ModelConfig& config) const {
  return DecayedPeak(peak_l3_share_, peak_l3_at_, now, config.workloads.peak_half_life);
}

void WorkloadProfile::MarkAntagonist(std::string why, absl::Time now) {
  if (!aggressor_) aggressor_since_ = now;
  aggressor_ = true;
  antagonist_why_ = std::move(why);
  aggressor_why_ = antagonist_why_;
}

void WorkloadProfile::UpdateVerdict(absl::Time now, const ModelConfig& config) {
  if (!antagonist_why_.empty()) return;  // MarkAntagonist's verdict holds
  const double bw = recent_membw_share(now, config);
  const double l3 = recent_l3_share(now, config);
  const bool enter = bw >= config.aggressor_membw_share || l3 >= config.aggressor_l3_share;
  if (enter) {
    if (!aggressor_) aggressor_since_ = now;
    aggressor_ = true;
    aggressor_why_ =
        bw >= config.aggressor_membw_share
            ? absl::StrFormat("recent peak membw %.0f%% of its NUMA node's peak", bw * 100)
            : absl::StrFormat("recent peak L3 occupancy %.0f%% of its L3 domain", l3 * 100);
    return;
  }
  if (!aggressor_) return;
  const double exit = config.workloads.aggressor_exit_fraction;
  const bool quiet =
      bw < exit * config.aggressor_membw_share && l3 < exit * config.aggressor_l3_share;
  if (quiet &&
      now - std::max(aggressor_since_, last_above_) >= config.workloads.aggressor_min_dwell) {
    aggressor_ = false;
    aggressor_why_.clear();
  }
}

std::optional<WorkloadMetricSummary> WorkloadProfile::Summary(WorkloadMetric m,
                                                              const ModelConfig& config) const {
  const DecayedStat& s = stats_[static_cast<int>(m)];
  if (s.weight() <= 0) return std::nullopt;
  WorkloadMetricSummary out;
  out.mean = s.Mean();
  out.high = s.Quantile(config.workloads.percentile);
  out.weight = s.weight();
  return out;
}

WorkloadPrediction WorkloadProfile::Predict(absl::Time now, const ModelConfig& config) const {
  WorkloadPrediction p;
  if (origin_ == absl::InfinitePast()) return p;
  const double growth =
      std::exp2(absl::FDivDuration(std::max(now, origin_) - origin_, config.workloads.half_life));
  p.windows = windows_weight_ / growth;
  p.confidence = config.workloads.confident_windows > 0
                     ? std::min(1.0, p.windows / config.workloads.confident_windows)
                     : 1.0;
  for (const auto& [hash, weight] : nodes_) p.nodes += weight > 0 ? 1 : 0;
  for (const auto& [hash, seen] : recent_pods_) {
    p.replicas += hash != 0 && now - seen <= config.workloads.replica_window ? 1 : 0;
  }
  if (auto s = Summary(WorkloadMetric::kLlc, config)) p.llc_bytes = s->high;
  if (auto s = Summary(WorkloadMetric::kMembw, config)) {
    p.membw_bytes_per_second = s->high;
    p.membw_estimated = membw_estimated_weight_ > 0.5 * s->weight;
  }
  p.aggressor = aggressor_;
  p.aggressor_why = aggressor_why_;
  // Issue 22: working set, baselines and the interference fit.
  const DecayedStat& llc = stats_[static_cast<int>(WorkloadMetric::kLlc)];
  if (llc.weight() > 0) p.llc_demand_bytes = llc.Quantile(kDemandQuantile);
  const DecayedStat& ipc = stats_[static_cast<int>(WorkloadMetric::kIpc)];
  const DecayedStat& mpki = stats_[static_cast<int>(WorkloadMetric::kMpki)];
  if (ipc.weight() / growth >= kBaselineWindows && mpki.weight() / growth >= kBaselineWindows) {
    p.baseline_ipc = ipc.Quantile(0.9);
    p.baseline_mpki = mpki.Quantile(0.1);
  }
  const InterferenceConfig& ic = config.interference;
  InterferenceFit::Prior prior{.cache_sensitivity = ic.standard_cache_sensitivity,
                               .membw_sensitivity = ic.standard_membw_sensitivity,
                               .traffic_slope = ic.reuse_per_second * p.llc_demand_bytes.value_or(0),
                               .strength = 1.0};
  if (std::optional<InterferenceFit::Result> r = fit_.Solve(prior, growth)) {
    // How much the data, not the prior, decided the slope: the windows'
    // information on it (windows x variance of the loss) against the prior's.
    const double info = r->windows * r->cache_loss_spread * r->cache_loss_spread;
    p.fit_confidence = info / (info + prior.strength);
    p.cache_sensitivity = r->cache_sensitivity;
    p.membw_sensitivity = r->membw_sensitivity;
    if (r->solo_membw) p.solo_membw_bytes_per_second = *r->solo_membw;
  }
  return p;
}

WorkloadProfile::Saved WorkloadProfile::Save() const {
  Saved s;
  s.origin = origin_;
  s.last_update = last_update_;
  s.windows_weight = windows_weight_;
  s.stats = stats_;
  s.membw_estimated_weight = membw_estimated_weight_;
  s.peak_membw_share = peak_membw_share_;
  s.peak_l3_share = peak_l3_share_;
  s.peak_membw_at = peak_membw_at_;
  s.peak_l3_at = peak_l3_at_;
  s.aggressor = aggressor_;
  s.aggressor_why = aggressor_why_;
  s.aggressor_since = aggressor_since_;
  s.last_above = last_above_;
  s.nodes = nodes_;
  s.fit = fit_.sums();
  return s;
}

WorkloadProfile WorkloadProfile::Restore(const Saved& s) {
  WorkloadProfile p;
  p.origin_ = s.origin;
  p.last_update_ = s.last_update;
  p.windows_weight_ = s.windows_weight;
  p.stats_ = s.stats;
  p.membw_estimated_weight_ = s.membw_estimated_weight;
  p.peak_membw_share_ = s.peak_membw_share;
  p.peak_l3_share_ = s.peak_l3_share;
  p.peak_membw_at_ = s.peak_membw_at;
  p.peak_l3_at_ = s.peak_l3_at;
  p.aggressor_ = s.aggressor;
  p.aggressor_why_ = s.aggressor_why;
  p.aggressor_since_ = s.aggressor_since;
  p.last_above_ = s.last_above;
  p.nodes_ = s.nodes;
  p.fit_ = InterferenceFit::Restore(s.fit);
  return p;
}

}  // namespace neighborly::extender
