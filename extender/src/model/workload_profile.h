// What a workload's running replicas measured, window by window, condensed
// into decayed statistics that predict its next replica, plus an aggressor
// verdict with hysteresis decided on the workload's recent peak. Formulas and
// defaults: docs/scoring.md, "Workload profiles".
//
//   WorkloadProfile profile;
//   profile.Add(observation, NodeNameHash("node-3"), now, config);
//   WorkloadPrediction p = profile.Predict(now, config);
//   p.membw_bytes_per_second  // the workload's high percentile, e.g. 21.8e9
//
// Pure: the caller passes the time. Not thread-safe (state/workload_store
// serialises access).
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_PROFILE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_PROFILE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "extender/src/model/interference_fit.h"
#include "extender/src/model/model_config.h"

namespace neighborly::extender {

// One replica's measurement over one report window. Absent: not measured.
struct WorkloadObservation {
  std::optional<double> llc_bytes;
  std::optional<double> membw_bytes_per_second;  // measured (MBM), or estimated from LLC misses
  bool membw_estimated = false;                  // the latter
  std::optional<double> membw_local_bytes_per_second;
  std::optional<double> mpki;
  std::optional<double> ipc;
  std::optional<double> cpu_millicores;
  // Shares of the pod's home NUMA node's peak and home L3 domain, for the
  // aggressor verdict (the same quantities the per-window rule compares).
  std::optional<double> membw_share;
  std::optional<double> l3_share;
  uint64_t pod_uid_hash = 0;  // counts distinct replicas
  // Issue 22: the window's context, for the interference fit. Its IPC fell
  // while its misses rose (its bandwidth shares are then left out of the
  // aggressor verdict); the fraction of its workload's working set it did not
  // hold; its NUMA node's loaded latency.
  bool victim = false;
  std::optional<double> cache_loss;
  std::optional<double> latency_factor;
  bool operator==(const WorkloadObservation&) const = default;
};

// A value's decayed distribution: log-spaced buckets (three per octave from
// `base`), so that a mean and any percentile come from 2 x 48 floats. Weights grow
// with time instead of old data decaying (w = 2^((t - origin) / half_life)),
// so an update touches one bucket; the owner rescales when weights grow large.
class DecayedStat {
 public:
  static constexpr int kBuckets = 48;
  static constexpr int kPerOctave = 3;

  void Add(double value, double weight, double base);
  void Scale(double factor);
  double weight() const { return weight_; }
  double Mean() const { return weight_ > 0 ? sum_ / weight_ : 0; }
  // The q-quantile (0..1): the mean of the values in the bucket where it
  // falls (exact for a steady value, within a bucket's 26 % otherwise).
  double Quantile(double q) const;
  const std::array<float, kBuckets>& buckets() const { return buckets_; }
  const std::array<float, kBuckets>& sums() const { return sums_; }
  // Rebuilt from what buckets(), sums() and Mean() returned (the state file).
  static DecayedStat Restore(const std::array<float, kBuckets>& buckets,
                             const std::array<float, kBuckets>& sums, double mean);

 private:
  std::array<float, kBuckets> buckets_{};
  std::array<float, kBuckets> sums_{};  // weighted values per bucket
  double weight_ = 0;
  double sum_ = 0;
};

enum class WorkloadMetric { kLlc, kMembw, kMembwLocal, kMpki, kIpc, kCpu, kCount };
inline constexpr int kWorkloadMetrics = static_cast<int>(WorkloadMetric::kCount);
std::string_view WorkloadMetricName(WorkloadMetric m);  // "llc_bytes", ...
// The smallest value each metric's buckets tell apart (bucket 0 holds 0..base).
double WorkloadMetricBase(WorkloadMetric m);

// What a profile predicts for the workload's next replica.
struct WorkloadPrediction {
  double windows = 0;               // replica-windows behind it (decayed)
  double confidence = 0;            // windows / confident_windows, capped at 1
  int replicas = 0;                 // distinct pods seen in the last replica_window
  int nodes = 0;                    // distinct nodes that contributed
  std::optional<double> llc_bytes;  // the configured high percentile of each, when measured
  std::optional<double> membw_bytes_per_second;
  bool membw_estimated = false;  // bandwidth came (partly) from LLC misses, not MBM
  bool aggressor = false;
  std::string aggressor_why;  // "recent peak membw 44% of its NUMA node's peak"
  // Issue 22: what the workload needs and how it suffers, fitted from its
  // replica-windows (absent: not enough evidence; the class prior applies).
  std::optional<double> llc_demand_bytes;             // working set when it had room
  std::optional<double> solo_membw_bytes_per_second;  // traffic with its whole working set
  std::optional<double> cache_sensitivity;            // CPI slope over working set lost
  std::optional<double> membw_sensitivity;            // CPI slope over loaded latency
  double fit_confidence = 0;                          // 0..1
  std::optional<double> baseline_ipc;   // its IPC uncontended (the high percentile)
  std::optional<double> baseline_mpki;  // its MPKI uncontended (the low percentile)
};

// The per-metric summary the operator API shows.
struct WorkloadMetricSummary {
  double mean = 0;
  double high = 0;  // the configured percentile
  double weight = 0;
};

class WorkloadProfile {
 public:
  // Adds one replica-window reported by the node whose name hashes to `node`.
  void Add(const WorkloadObservation& observation, uint64_t node, absl::Time now,
           const ModelConfig& config);
  WorkloadPrediction Predict(absl::Time now, const ModelConfig& config) const;
  std::optional<WorkloadMetricSummary> Summary(WorkloadMetric m, const ModelConfig& config) const;

  bool aggressor() const { return aggressor_; }
  // Issue 26: interference attribution named this workload as an antagonist
  // repeatedly; it is an aggressor from now on (not persisted: a restarted
  // extender learns it again from the windows it sees).
  void MarkAntagonist(std::string why, absl::Time now);
  const InterferenceFit& fit() const { return fit_; }
  const std::string& aggressor_why() const { return aggressor_why_; }
  absl::Time aggressor_since() const { return aggressor_since_; }
  absl::Time last_update() const { return last_update_; }
  // Recent peaks (decayed maxima) of the shares the verdict reads.
  double recent_membw_share(absl::Time now, const ModelConfig& config) const;
  double recent_l3_share(absl::Time now, const ModelConfig& config) const;

  // Persistence (state file): the profile as plain numbers and back.
  struct Saved {
    absl::Time origin;
    absl::Time last_update;
    double windows_weight = 0;
    std::array<DecayedStat, kWorkloadMetrics> stats;
    double membw_estimated_weight = 0;
    double peak_membw_share = 0, peak_l3_share = 0;
    absl::Time peak_membw_at, peak_l3_at;
    bool aggressor = false;
    std::string aggressor_why;
    absl::Time aggressor_since;
    absl::Time last_above;
    std::array<std::pair<uint64_t, double>, 16> nodes{};
    std::array<double, InterferenceFit::kSums> fit{};
  };
  Saved Save() const;
  static WorkloadProfile Restore(const Saved& saved);

  static constexpr size_t kMaxNodes = 16;
  static constexpr size_t kMaxRecentPods = 32;

 private:
  double NodeFactor(uint64_t node, double growth, const ModelConfig& config) const;
  void CountNode(uint64_t node, double weight);
  void UpdateVerdict(absl::Time now, const ModelConfig& config);

  absl::Time origin_ = absl::InfinitePast();  // weights are 2^((t - origin) / half_life)
  absl::Time last_update_ = absl::InfinitePast();
  double windows_weight_ = 0;  // sum of update weights (replica-windows, scaled)
  std::array<DecayedStat, kWorkloadMetrics> stats_;
  InterferenceFit fit_;
  double membw_estimated_weight_ = 0;
  double peak_membw_share_ = 0;
  double peak_l3_share_ = 0;
  absl::Time peak_membw_at_ = absl::InfinitePast();
  absl::Time peak_l3_at_ = absl::InfinitePast();
  bool aggressor_ = false;
  std::string aggressor_why_;
  std::string antagonist_why_;  // non-empty: marked by MarkAntagonist
  absl::Time aggressor_since_ = absl::InfinitePast();
  // The last window whose own measurement crossed an entry threshold: the
  // minimum dwell counts from here.
  absl::Time last_above_ = absl::InfinitePast();
  // Effective (post-cap) weight each contributing node has had, scaled like
  // the statistics; the least weighty is replaced when a 17th node arrives.
  std::array<std::pair<uint64_t, double>, kMaxNodes> nodes_{};
  // Distinct replicas: hashes of pod UIDs and when each was last seen.
  std::array<std::pair<uint64_t, absl::Time>, kMaxRecentPods> recent_pods_{};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_PROFILE_H_
