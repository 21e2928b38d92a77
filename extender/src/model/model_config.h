// Parameters of the contention model. Defaults follow docs/scoring.md; the
// extender's YAML config (docs/configuration.md) can override every field.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_MODEL_CONFIG_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_MODEL_CONFIG_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

// "A pod whose label `key` has one of `values` is of class `contention_class`."
struct LabelRule {
  std::string key;
  std::vector<std::string> values;
  ContentionClass contention_class = ContentionClass::kBatch;
};

// Footprint assumed for a pod that has neither hints nor measurements.
struct Footprint {
  int64_t llc_bytes = 0;
  int64_t membw_bytes_per_second = 0;
};

// Workload profiles: what running replicas measured predicts the next one
// (docs/scoring.md, "Workload profiles").
struct WorkloadConfig {
  bool enabled = true;
  // Statistics halve their weight every half_life: a workload that changed
  // (a new release) is relearned within a few half-lives.
  absl::Duration half_life = absl::Hours(1);
  // The recent peak the aggressor verdict reads decays this fast.
  absl::Duration peak_half_life = absl::Minutes(10);
  // Replica-windows behind a profile for it to be trusted fully; below, the
  // prediction blends the profile with the prior in proportion.
  double confident_windows = 30;
  // The percentile a prediction takes (a placement must survive the busy phases).
  double percentile = 0.95;
  // Hysteresis: a workload stops being an aggressor only once its recent peak
  // is below this fraction of the entry thresholds, and not before min_dwell.
  double aggressor_exit_fraction = 0.6;
  absl::Duration aggressor_min_dwell = absl::Minutes(5);
  // When two or more nodes report a workload, no one node's windows weigh
  // more than this share of its statistics.
  double max_node_share = 0.5;
  // Replicas counted in "N replicas": pods seen within this long.
  absl::Duration replica_window = absl::Minutes(2);
};

// Priors for a pod with neither a profile nor hints, by its CPU size (request,
// or the limit for a Burstable pod whose limit is larger): the class default
// for its first CPU, plus these per further CPU.
struct PriorConfig {
  bool scale_with_cpus = true;
  int64_t membw_bytes_per_second_per_cpu = 1'000'000'000;
  int64_t llc_bytes_per_cpu = 1 << 20;
  double max_cpus = 64;  // no prior grows beyond this many CPUs' worth
};

// Predicted slowdown (issue 22, model/interference.h, docs/scoring.md section 4).
struct InterferenceConfig {
  // Filter on predicted slowdown: a node is refused where a latency-critical
  // pod, incoming or resident, would be slowed beyond its tolerance
  // (annotation neighborly.io/max-slowdown, else this).
  bool enabled = true;
  double max_slowdown = 1.2;
  // A resident already past its tolerance refuses only placements that add
  // at least this much to its slowdown (it is not the incoming pod's doing).
  double min_added_slowdown = 0.01;
  // Hits per second per byte of working set: what a lost line costs in misses,
  // and the hit share of a pod's L3 access rate (the seed's article service:
  // 12.2 MB lost, 5.4 GB/s more traffic -> ~440/s).
  double reuse_per_second = 400;
  // Loaded latency 1 + latency_scale x u / (1 - u), u capped at
  // max_utilisation, the factor at max_latency_factor.
  double latency_scale = 0.3;
  double max_utilisation = 0.95;
  double max_latency_factor = 4.0;
  // NUMA nodes that share a socket (AMD NPS2/NPS4, Intel SNC): the share of
  // the socket's utilisation a node's loaded latency also sees
  // (CoupleSocketUtilisation in node_profile.h). 0: sub-socket NUMA nodes are
  // as independent as sockets.
  double socket_membw_coupling = 0.3;
  // Class priors for a workload not yet fitted: cache sensitivity (slowdown
  // at the whole working set lost, minus 1) and memory-bound share.
  double latency_critical_cache_sensitivity = 0.6;
  double latency_critical_membw_sensitivity = 0.4;
  double standard_cache_sensitivity = 0.4;
  double standard_membw_sensitivity = 0.3;
  double batch_cache_sensitivity = 0.15;
  double batch_membw_sensitivity = 0.5;
  // Score: 10 - harm / score_step, harm = weighted predicted added slowdown
  // (0.03: three points of slowdown per score point).
  double score_step = 0.03;
  // Residents whose slowdown each evaluation predicts, per node (the most
  // sensitive first); the rest still count in their domain's demand.
  int max_tracked_residents = 16;
  // Cost of a node whose kubelet would admit the pod only if a guessed
  // in-flight booking there (/prioritize's) was not where kube-scheduler put
  // its pod: it passes, but ranks below one that fits either way.
  double guessed_admission_penalty = 0.15;
  // A node that admits the pod only if a guessed booking there is wrong is
  // refused softly (the least-harm fallback may pass it; false: pass it now).
  bool guessed_bookings_refuse = true;
  // /filter books the pod on the only node that passes (kube-scheduler binds
  // it there without asking /prioritize).
  bool book_single_candidate = true;
  // A pinned pod /prioritize guessed onto one node may have been bound on
  // another (kube-scheduler combines the scores): a pinned pod that fits a
  // node only if that one is not there is refused softly ("in-flight: ...").
  // Off where the guess is known to be right (a test that binds there).
  bool pinned_guesses_elsewhere = true;
};

struct ModelConfig {
  // --- classes ---
  std::vector<LabelRule> label_rules = {
      {"workload-type", {"batch", "etl"}, ContentionClass::kBatch}};
  // A running pod is an aggressor (treated as batch) when its measured memory
  // bandwidth passes this share of its NUMA node's peak, or its L3 occupancy
  // passes this share of its L3 domain's capacity.
  double aggressor_membw_share = 0.25;
  double aggressor_l3_share = 0.5;
  // The L3 criterion alone would flag every cache-hungry but cache-friendly
  // service (the article service holds 73 % of a 25 MB L3 with 1.5 MPKI). When
  // a pod's LLC misses per kilo-instruction are measured, an L3 aggressor must
  // also miss at least this often (a streaming scan misses constantly).
  double aggressor_min_mpki = 5.0;

  // --- hard filters ---
  // Strict class isolation (off by default since issue 22: predicted harm
  // decides; `model.isolation: strict` turns both on).
  bool isolate_latency_critical = false;  // no latency-critical pod beside batch/aggressors
  bool isolate_batch = false;             // no batch pod beside latency-critical pods
  // Latency-critical: predicted utilisation limit (strict mode; the harm
  // filter judges bandwidth by the slowdown it causes).
  double membw_headroom = 0.80;
  bool numa_admission = true;            // the kubelet's topology manager, emulated (issue 14)
  // Isolation of pinned pods by socket: a pod the kubelet pins to a NUMA node
  // conflicts only with pods pinned there and with shared-pool pods (memory
  // controller and L3 are per socket). false: node-wide, as before.
  bool socket_isolation = true;
  // A batch pod whose footprint (measured, else hinted) is below both floors
  // neither blocks a node nor is blocked (a 50 MB/s log-rotate job).
  int64_t isolation_floor_llc_bytes = 2 << 20;
  int64_t isolation_floor_membw_bytes_per_second = 200'000'000;
  // When isolation or bandwidth headroom refuses every candidate node (and no
  // node passes), pass the one whose predicted cost is lowest instead of
  // leaving the pod Pending (issue 22: on by default). NUMA admission is never relaxed.
  bool least_harm_fallback = true;
  // Of the nodes the fallback looks at again, those whose predicted harm is
  // within this much of the least pass (kube-scheduler chooses among them).
  double least_harm_margin = 0.05;

  // --- footprints when a pod has no hints and no measurements ---
  Footprint default_latency_critical = {8 << 20, 2'000'000'000};
  Footprint default_batch = {24 << 20, 15'000'000'000};
  Footprint default_standard = {4 << 20, 1'000'000'000};
  // Peak bandwidth assumed for a NUMA node whose report carries none.
  int64_t default_peak_membw_bytes_per_second = 50'000'000'000;

  // --- score ---
  double l3_weight = 0.45;
  double membw_weight = 0.45;
  double numa_weight = 0.10;
  // A pinned pod the kubelet would give a thread of a partly used core (its
  // sibling runs someone else) pays this, times its sensitivity (issue 14).
  double smt_weight = 0.05;
  // Bandwidth cost is u/(1-u) (waiting time of a single-server queue at
  // utilisation u) divided by this; it reaches 1 at u = q/(1+q), 90 % for 9.
  double membw_queue_scale = 9.0;

  InterferenceConfig interference;

  // --- staleness ---
  int fresh_intervals = 3;  // confidence 1 while younger than this many intervals
  absl::Duration max_age = absl::Seconds(60);  // confidence 0 (neutral score 5) from here on

  // --- prediction of pods without measurements of their own ---
  WorkloadConfig workloads;
  PriorConfig priors;
  // A Guaranteed pod with exclusive CPUs that declares no class is treated as
  // latency-critical (someone paid for whole cores).
  // A pod whose controller is a Job is batch unless declared otherwise
  // (before the QoS rule: a Guaranteed Job is still throughput work).
  bool jobs_are_batch = true;
  bool guaranteed_exclusive_is_latency_critical = true;
  // Streaming load: pods (not latency-critical) missing at least
  // aggressor_min_mpki, or of unmeasured MPKI, whose bandwidth together passes
  // aggressor_membw_share of a NUMA node's peak make that node an aggressor
  // group for isolation, though none passes it alone.
  bool aggregate_streamers = true;
  // A pod counts as a streamer in that sum from this share of the peak up.
  double streamer_min_membw_share = 0.02;
  // Latency-critical pods pay this cost per unit of residents' load the node
  // cannot measure (no MBM/CMT for them): an unmeasured node never looks
  // better than a measured one.
  double unmeasured_penalty = 0.2;

  // --- staleness of residents ---
  // Isolation keeps the last reported residents of a node whose telemetry is
  // stale until this much time after its last report.
  absl::Duration residents_max_age = absl::Minutes(10);
  // Score a latency-critical pod gets on a node without usable telemetry
  // (stale or no agent): below neutral, since nothing protects it there.
  int latency_critical_blind_score = 3;

  // --- in-flight bookings ---
  absl::Duration booking_ttl = absl::Seconds(30);
};

// Predicted harm in millionths (at most 1e12), the unit the least-harm
// fallback compares in: the calls' path, the verdict tracker and the plugin,
// which reads it from the verdict stream (issue 25), decide alike.
inline uint64_t HarmMicros(double harm) {
  if (!(harm > 0)) return 0;
  return static_cast<uint64_t>(std::llround(std::min(harm, 1e6) * 1e6));
}

// The largest harm, in millionths, the least-harm fallback passes when the
// least among the nodes it looks at again is `least`.
inline uint64_t LeastHarmBoundMicros(double least, const ModelConfig& c) {
  return HarmMicros(least) + HarmMicros(c.least_harm_margin);
}

// The model before issue 22, still selectable: strict class isolation and
// bandwidth headroom as hard filters, scores from utilisation pressure, no
// least-harm fallback (config: interference.enabled false, isolation strict).
inline ModelConfig PressureModelConfig() {
  ModelConfig c;
  c.interference.enabled = false;
  c.isolate_latency_critical = true;
  c.isolate_batch = true;
  c.least_harm_fallback = false;
  return c;
}

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_MODEL_CONFIG_H_
