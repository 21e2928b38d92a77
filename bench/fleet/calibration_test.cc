#include "bench/fleet/calibration.h"

#include <gtest/gtest.h>

namespace neighborly::fleet {
namespace {

TEST(RankCorrelation, OrderNotValues) {
  EXPECT_DOUBLE_EQ(RankCorrelation({1, 2, 3, 4}, {10, 20, 30, 1000}), 1);
  EXPECT_DOUBLE_EQ(RankCorrelation({1, 2, 3, 4}, {4, 3, 2, 1}), -1);
  // Ties take their mean rank: (1.5, 1.5, 3) against (1, 2, 3).
  EXPECT_NEAR(RankCorrelation({5, 5, 9}, {1, 2, 3}), 0.8660254, 1e-6);
  // Undefined: constant sides, too few pairs, mismatched lengths.
  EXPECT_EQ(RankCorrelation({1, 1, 1}, {1, 2, 3}), 0);
  EXPECT_EQ(RankCorrelation({1, 2}, {1, 2}), 0);
  EXPECT_EQ(RankCorrelation({1, 2, 3}, {1, 2}), 0);
}

CalibrationCandidate Candidate(double predicted, double truth, int score, bool within) {
  CalibrationCandidate c;
  c.predicted_slowdown = predicted;
  c.true_slowdown = truth;
  c.score = score;
  c.true_added_harm = truth - 1;
  c.harm_to_residents = 0;
  c.true_within = within;
  return c;
}

TEST(SummariseCalibration, CountsForcedAndAvoidableAndRanks) {
  CalibrationDecision good;  // the model ranks the three nodes as the truth does
  good.kind = WorkloadKind::kLatencyCritical;
  good.extender_class = "latency-critical";
  good.candidates = {Candidate(1.05, 1.02, 9, true), Candidate(1.2, 1.3, 5, false),
                     Candidate(1.1, 1.1, 7, true)};
  good.chosen = 0;
  CalibrationDecision bad = good;  // reversed, and it chose a node past 1.2x
  bad.extender_class = "standard";
  bad.candidates = {Candidate(1.2, 1.02, 5, true), Candidate(1.05, 1.3, 9, false),
                    Candidate(1.1, 1.1, 7, true)};
  bad.chosen = 1;
  CalibrationDecision forced = good;
  for (CalibrationCandidate& c : forced.candidates) c.true_within = false;
  CalibrationDecision batch = good;  // another kind: not counted
  batch.kind = WorkloadKind::kBatch;
  const CalibrationSummary s =
      SummariseCalibration({good, bad, forced, batch}, WorkloadKind::kLatencyCritical);
  EXPECT_EQ(s.decisions, 3);
  EXPECT_EQ(s.forced, 1);
  EXPECT_EQ(s.avoidable_violations, 1);
  EXPECT_NEAR(s.incoming_rank_correlation, (1.0 - 1.0 + 1.0) / 3, 1e-9);
  EXPECT_NEAR(s.score_rank_correlation, (1.0 - 1.0 + 1.0) / 3, 1e-9);
  EXPECT_EQ(s.resident_rank_correlation, 0);  // never varies: undefined everywhere
  EXPECT_NEAR(s.top_score_share, 1.0 / 3, 1e-9);
  EXPECT_EQ(s.extender_classes, "latency-critical=67% standard=33%");
  // Truth bins: 1.02 -> [1, 1.1), 1.1 -> [1.1, 1.2), 1.3 -> [1.3, 1.4).
  EXPECT_EQ(s.count_by_true_bin[0], 3);
  EXPECT_EQ(s.count_by_true_bin[1], 3);
  EXPECT_EQ(s.count_by_true_bin[3], 3);
  EXPECT_NEAR(s.predicted_by_true_bin[0], (1.05 + 1.2 + 1.05) / 3, 1e-9);
}

}  // namespace
}  // namespace neighborly::fleet
