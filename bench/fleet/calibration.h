// How well the extender's per-candidate predictions rank what the ground
// truth says (placement_bench --calibrate, docs/placement-benchmark.md): for
// every scheduling cycle of the Neighborly mode with more than one candidate,
// the extender's view of each candidate (its /prioritize decision) beside the
// ground truth's (the pod's slowdown there, the worst latency-critical
// resident's added slowdown, the oracle's added harm and whether every
// latency-critical pod stays within 1.2x).
//
//   CalibrationSummary s = SummariseCalibration(result.calibration, WorkloadKind::kBatch);
//   s.incoming_rank_correlation;   // mean over decisions, Spearman
//
// Ranks within one decision are what kube-scheduler acts on, so correlations
// are computed per decision and averaged.
#ifndef NEIGHBORLY_BENCH_FLEET_CALIBRATION_H_
#define NEIGHBORLY_BENCH_FLEET_CALIBRATION_H_

#include <string>
#include <vector>

#include "bench/fleet/workload_mix.h"

namespace neighborly::fleet {

struct CalibrationCandidate {
  // The extender's view (its /prioritize decision for this node).
  double predicted_slowdown = 0;  // the incoming pod's (0: not predicted)
  double harm_to_incoming = 0;
  double harm_to_residents = 0;
  int score = 0;  // 0..10
  // The ground truth's.
  double true_slowdown = 1;            // the incoming pod's, placed here
  double true_resident_added = 0;      // worst latency-critical resident's slowdown added
  double true_added_harm = 0;          // the oracle's added harm (fleet_sim.cc Harm)
  bool true_within = true;             // every latency-critical pod here within 1.2x after
};

struct CalibrationDecision {
  WorkloadKind kind = WorkloadKind::kStandard;  // the pod's true kind
  std::string extender_class;                   // the class the extender gave it
  int chosen = -1;                              // index into candidates
  std::vector<CalibrationCandidate> candidates;
};

struct CalibrationSummary {
  int decisions = 0;
  // Per-decision Spearman correlations, averaged over the decisions where both
  // sides vary: predicted vs true incoming slowdown; harm to residents vs the
  // worst resident's true added slowdown; -score vs the true added harm.
  double incoming_rank_correlation = 0;
  double resident_rank_correlation = 0;
  double score_rank_correlation = 0;
  double top_score_share = 0;  // candidates tied at the best extender score, mean share
  // Decisions where no candidate keeps every latency-critical pod within 1.2x
  // ("forced"), and of the others those where the chosen node does not.
  int forced = 0;
  int avoidable_violations = 0;
  // Predicted incoming slowdown, mean, by true slowdown bin [1, 1.1), [1.1,
  // 1.2), ... [1.8, inf): does the model compress large slowdowns?
  std::vector<double> predicted_by_true_bin;
  std::vector<int> count_by_true_bin;
  // Share of decisions by the class the extender gave the pod, "class=share".
  std::string extender_classes;
};

CalibrationSummary SummariseCalibration(const std::vector<CalibrationDecision>& decisions,
                                        WorkloadKind kind);

// Spearman's rank correlation (ties get their mean rank); 0 when either side
// is constant or there are fewer than 3 pairs.
double RankCorrelation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_CALIBRATION_H_
