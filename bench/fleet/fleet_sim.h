// The placement benchmark's discrete-event fleet simulator: pods of a seeded
// FleetSpec arrive, kube-scheduler's default scoring places them (alone, or
// combined with the real extender through its HTTP handler, in memory), the
// kubelet admits them (static CPU manager, single-numa-node), they start after
// a start-up delay, Jobs finish, and the ground truth (ground_truth.h) says
// how much each running pod is slowed. Every node's agent reports every
// `report_interval_s` (jittered) what the ground truth makes it measure, as a
// one-node scenario the real simulator (node-agent/src/simulate) turns into
// its NodeReport; the extender ingests it. Time is simulated: the extender's
// clock is a FakeClock moved to each event, so bookings expire and telemetry
// ages in simulated seconds.
//
//   FleetSpec fleet = GenerateFleet(1, {});
//   SimOptions options;
//   options.scorer = Scorer::kNeighborly;
//   FleetResult r = SimulateFleet(fleet, options);
//   FleetSummary s = Summarise(r);   // s.lc_over_1_2, s.pending_at_end, ...
#ifndef NEIGHBORLY_BENCH_FLEET_FLEET_SIM_H_
#define NEIGHBORLY_BENCH_FLEET_FLEET_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/fleet/calibration.h"
#include "bench/fleet/ground_truth.h"
#include "bench/fleet/workload_mix.h"

namespace neighborly::fleet {

// Who joins kube-scheduler's default plugins.
enum class Scorer {
  kDefault,     // nobody: the default plugins alone
  kNeighborly,  // the real extender, as an HTTP extender
  // The ground truth itself as an extender, with the same integration
  // (filter, 0..10 scores at weight 2): what perfect knowledge of the
  // interference would reach. A yardstick, not a product.
  kOracle,
};

// Which latency-critical pods the ground truth's filter protects in
// WhatIf::oracle_filter.
enum class OracleFilter {
  kNone,        // the extender's own filter
  kAll,         // every latency-critical pod, incoming and resident (the oracle's)
  kAnnotated,   // only those annotated latency-critical (what a class rule sees)
  kResidents,   // only the residents: the incoming pod's own slowdown is not checked
  kIncoming,    // only the incoming pod: residents are not protected
};

// What-if levers for the Neighborly mode (placement_bench --what-if,
// docs/placement-benchmark.md "Where the gap is"): each replaces one part of
// what the extender knows or decides with the ground truth's, so that a run
// measures how many victims that part alone costs. None is a product.
struct WhatIf {
  OracleFilter oracle_filter = OracleFilter::kNone;
  // The ground truth's scores (least added harm 10 .. most 0, relative to
  // the candidates) in place of /prioritize's; the extender's filter stays.
  bool oracle_scores = false;
  // After each bind, the extender is told where the pod went (Reserve, as
  // the framework plugin does), instead of /prioritize's guess.
  bool exact_bookings = false;
  // A pod runs as soon as it is bound, and its node reports at once: no
  // startup delay and no telemetry lag.
  bool instant_telemetry = false;
  // Every pod carries its true footprint as its cache hint
  // (AnnotateTrueFootprint): the extender's inputs corrected, its forms kept.
  bool true_footprints = false;
  // With oracle_filter / oracle_scores: the truth does not know the incoming
  // pod's own memory behaviour, as the extender cannot before its replicas
  // have run (a Deployment's replicas arrive within a second or two). Each
  // candidate's truth is averaged over up to kBlindSamples other workloads
  // of the pod's kind (their behaviour on the pod's requests and placement):
  // the added harm their mean, the candidate within where at least half are.
  // What perfect knowledge of everything else reaches.
  bool blind_incoming = false;
  static constexpr size_t kBlindSamples = 6;
  bool any() const {
    return oracle_filter != OracleFilter::kNone || oracle_scores || exact_bookings ||
           instant_telemetry || true_footprints || blind_incoming;
  }
};

struct SimOptions {
  Scorer scorer = Scorer::kDefault;
  WhatIf what_if;  // Neighborly mode only
  int64_t extender_weight = 2;
  // The extender's YAML config (docs/configuration.md); empty: the defaults,
  // as neighborly-extender without --config.
  std::string extender_config_file;
  double report_interval_s = 5;
  double report_jitter = 0.1;  // each report +-10 % of the interval
  // A window's counters vary around the steady state: each measurement of a
  // report is off by up to this share (uniform), independently.
  double measurement_noise = 0.05;
  // Between binding and the containers running (image pull, start): a pod is
  // in the agent's reports (and on the node's resources) only from then on.
  double min_startup_s = 3, max_startup_s = 10;
  // kube-scheduler retries unschedulable pods; here every this often.
  double retry_interval_s = 10;
  double tail_s = 60;  // the run ends this long after the last arrival
  // Neighborly mode: record each scheduling cycle's candidates as the
  // extender and the ground truth see them (FleetResult::calibration).
  bool calibrate = false;
  GroundTruthParams truth;
};

enum class PodPhase { kPending, kStarting, kRunning, kSucceeded, kFailed };

struct PodResult {
  std::string name;
  int workload = 0;
  WorkloadKind kind = WorkloadKind::kStandard;
  PodPhase phase = PodPhase::kPending;   // at the end of the run
  std::string node;                      // where it was bound (empty: never)
  bool pinned = false;                   // exclusive CPUs from the kubelet
  bool was_pending = false;              // refused everywhere at least once
  bool topology_affinity_error = false;  // the kubelet refused it (not retried)
  double slowdown_end = 0;               // running at the end: its slowdown then
  double slowdown_mean = 0;              // time-average over the time it ran
  double running_s = 0;
};

// Where the latency-critical pods slowed past 1.2x at the end come from
// (placement_bench --diagnose).
struct VictimAttribution {
  int already_at_start = 0;  // past 1.2x from the moment they started
  int made_later = 0;        // within 1.2x when they started, pushed past by later pods
  // At the end, with the node's batch pods taken away: still past 1.2x
  // (crowded by latency-critical and standard pods), or back within it.
  int without_batch_still = 0;
  int batch_caused = 0;
};

struct FleetResult {
  std::vector<PodResult> pods;  // in arrival order
  int nodes = 0;
  double cpu_requested_fraction_end = 0;  // bound pods' CPU requests / allocatable
  uint64_t reports = 0;                   // reports the extender ingested
  uint64_t extender_filtered_out = 0;     // candidates the extender's /filter removed
  uint64_t extender_refused_all = 0;      // scheduling attempts where it removed every one
  std::vector<CalibrationDecision> calibration;  // SimOptions::calibrate
  VictimAttribution victims;
};

FleetResult SimulateFleet(const FleetSpec& fleet, const SimOptions& options);

// Whether SimOptions::extender_config_file loads as neighborly-extender's
// --config does (empty: the defaults, fine); the error names the file, line
// and key. placement_bench checks it before the first fleet.
absl::Status CheckExtenderConfig(const std::string& file);

struct FleetSummary {
  int lc_pods = 0;
  int lc_running_end = 0;
  int lc_over_1_2 = 0;  // at the end of the run
  int lc_over_1_5 = 0;
  double lc_p99 = 0, lc_worst = 0;
  double lc_mean_time_average = 0;  // mean over LC pods of their time-averaged slowdown
  int lc_time_average_over_1_2 = 0;
  double batch_mean_slowdown = 0;  // mean over batch pods that ran, time-averaged
  int pending_end = 0;             // never placed by the end
  int ever_pending = 0;
  int topology_affinity_errors = 0;
  double cpu_requested_fraction_end = 0;
};

FleetSummary Summarise(const FleetResult& result);

// Pods `candidate` left Pending at the end that `reference` placed and ran.
int PendingThatReferenceRan(const FleetResult& candidate, const FleetResult& reference);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_FLEET_SIM_H_
