#include "bench/fleet/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/str_format.h"

namespace neighborly::fleet {
namespace {

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = (static_cast<double>(i + j)) / 2;
    i = j + 1;
  }
  return ranks;
}

// A running mean of the correlations that are defined.
struct Mean {
  double sum = 0;
  int n = 0;
  void Add(double value, bool defined) {
    if (!defined) return;
    sum += value;
    ++n;
  }
  double Value() const { return n > 0 ? sum / n : 0; }
};

bool Varies(const std::vector<double>& v) {
  return !v.empty() && std::any_of(v.begin(), v.end(), [&](double x) { return x != v[0]; });
}

}  // namespace

double RankCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 3 || !Varies(a) || !Varies(b)) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double num = 0, da = 0, db = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    num += (ra[i] - ma) * (rb[i] - mb);
    da += (ra[i] - ma) * (ra[i] - ma);
    db += (rb[i] - mb) * (rb[i] - mb);
  }
  return num / std::sqrt(da * db);
}

CalibrationSummary SummariseCalibration(const std::vector<CalibrationDecision>& decisions,
                                        WorkloadKind kind) {
  constexpr int kBins = 9;  // [1, 1.1) ... [1.8, inf)
  CalibrationSummary s;
  s.predicted_by_true_bin.assign(kBins, 0);
  s.count_by_true_bin.assign(kBins, 0);
  Mean incoming, residents, score;
  double top_share = 0;
  std::map<std::string, int> classes;
  for (const CalibrationDecision& d : decisions) {
    if (d.kind != kind || d.candidates.size() < 2) continue;
    ++s.decisions;
    ++classes[d.extender_class];
    std::vector<double> pred_in, true_in, pred_res, true_res, neg_score, true_harm;
    bool any_within = false;
    int best = 0;
    for (const CalibrationCandidate& c : d.candidates) best = std::max(best, c.score);
    int at_best = 0;
    for (const CalibrationCandidate& c : d.candidates) {
      pred_in.push_back(c.predicted_slowdown);
      true_in.push_back(c.true_slowdown);
      pred_res.push_back(c.harm_to_residents);
      true_res.push_back(c.true_resident_added);
      neg_score.push_back(-c.score);
      true_harm.push_back(c.true_added_harm);
      any_within = any_within || c.true_within;
      if (c.score == best) ++at_best;
      if (c.predicted_slowdown > 0) {
        const int bin = std::clamp(static_cast<int>((c.true_slowdown - 1) / 0.1), 0, kBins - 1);
        s.predicted_by_true_bin[static_cast<size_t>(bin)] += c.predicted_slowdown;
        ++s.count_by_true_bin[static_cast<size_t>(bin)];
      }
    }
    top_share += static_cast<double>(at_best) / static_cast<double>(d.candidates.size());
    incoming.Add(RankCorrelation(pred_in, true_in), Varies(pred_in) && Varies(true_in));
    residents.Add(RankCorrelation(pred_res, true_res), Varies(pred_res) && Varies(true_res));
    score.Add(RankCorrelation(neg_score, true_harm), Varies(neg_score) && Varies(true_harm));
    if (!any_within) {
      ++s.forced;
    } else if (d.chosen >= 0 && !d.candidates[static_cast<size_t>(d.chosen)].true_within) {
      ++s.avoidable_violations;
    }
  }
  for (int b = 0; b < kBins; ++b) {
    const auto i = static_cast<size_t>(b);
    if (s.count_by_true_bin[i] > 0) s.predicted_by_true_bin[i] /= s.count_by_true_bin[i];
  }
  s.incoming_rank_correlation = incoming.Value();
  s.resident_rank_correlation = residents.Value();
  s.score_rank_correlation = score.Value();
  s.top_score_share = s.decisions > 0 ? top_share / s.decisions : 0;
  for (const auto& [name, n] : classes) {
    if (!s.extender_classes.empty()) s.extender_classes += " ";
    s.extender_classes += absl::StrFormat("%s=%.0f%%", name.empty() ? "?" : name,
                                          100.0 * n / std::max(1, s.decisions));
  }
  return s;
}

}  // namespace neighborly::fleet
