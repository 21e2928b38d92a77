// The one writer of the Prometheus text exposition format (version 0.0.4)
// behind every /metrics page of the extender and the agent:
// https://prometheus.io/docs/instrumenting/exposition_formats/
//
//   PrometheusWriter page;
//   page.Counter("neighborly_ingest_reports_total", "Node reports received.",
//                {{"result", "accepted"}}, 7);
//   page.Gauge("neighborly_node_contention_score", "...", {{"node", name}}, 0.4);
//   page.Histogram("neighborly_extender_http_request_duration_seconds", "...",
//                  {{"verb", "filter"}}, bounds, counts_per_bucket, sum_seconds);
//   std::string body = page.Render();
//
// What it guarantees: each family's HELP and TYPE once, before its samples;
// families in name order and series in label order, so a page renders the
// same whatever order it was filled in; label values and HELP text escaped as
// the format requires; histograms as cumulative _bucket{le} series ending at
// le="+Inf", then _sum and _count. Misuse (a bad name, a family added with two
// types, the same series twice) is not rendered and is listed in problems(),
// which the tests check is empty.
#ifndef NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_
#define NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace neighborly {

// A label value escaped as the text format requires: backslash, double quote
// and newline.
std::string PrometheusLabelValue(std::string_view value);
// A sample value: integers exactly, others shortest round-trip, NaN, +Inf, -Inf.
std::string PrometheusNumber(double value);
// Whether `name` may name a metric ([a-zA-Z_:][a-zA-Z0-9_:]*) or a label
// ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__").
bool IsPrometheusMetricName(std::string_view name);
bool IsPrometheusLabelName(std::string_view name);

class PrometheusWriter {
 public:
  // Label name and value pairs of one series, in the order they are written.
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // A counter (the name should end in _total) and a gauge sample.
  void Counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  // Declares a family without a sample yet; a family with no samples is not
  // rendered (as the client libraries do).
  void Declare(std::string_view name, std::string_view type, std::string_view help);
  // One histogram series: `counts` holds the observations per bucket, not
  // cumulative; counts[i] for upper_bounds[i] and, when counts has one more
  // element, the last for (upper_bounds.back(), +Inf). `sum` is the sum of
  // the observations.
  void Histogram(std::string_view name, std::string_view help, const Labels& labels,
                 std::span<const double> upper_bounds, std::span<const uint64_t> counts,
                 double sum);

  // The page; families by name, series by labels.
  std::string Render() const;
  // Calls that were refused, one sentence each; empty when all were valid.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Family {
    std::string type;
    std::string help;  // as given; escaped when rendered
    // Rendered label set ("" or `a="x",b="y"`) -> the lines of the series
    // without the metric name prefix where it varies (histograms).
    std::map<std::string, std::string> series;
  };
  Family* FamilyFor(std::string_view name, std::string_view type, std::string_view help);
  bool LabelSet(std::string_view name, const Labels& labels, std::string& out);
  void Sample(std::string_view name, std::string_view type, std::string_view help,
              const Labels& labels, double value);

  std::map<std::string, Family, std::less<>> families_;
  std::vector<std::string> problems_;
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_
