#include "common/prometheus_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

namespace neighborly {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(PrometheusNumberTest, IntegersExactlyOthersRoundTrip) {
  EXPECT_EQ(PrometheusNumber(0), "0");
  EXPECT_EQ(PrometheusNumber(-0.0), "0");
  EXPECT_EQ(PrometheusNumber(17), "17");
  EXPECT_EQ(PrometheusNumber(34359738368.0), "34359738368");  // 32 GiB: beyond float precision
  EXPECT_EQ(PrometheusNumber(11200000000.0), "11200000000");  // not 1.12e+10
  EXPECT_EQ(PrometheusNumber(-3), "-3");
  EXPECT_EQ(PrometheusNumber(1e300), "1e+300");
  EXPECT_EQ(PrometheusNumber(0.1), "0.1");
  EXPECT_EQ(PrometheusNumber(0.00025), "0.00025");
  EXPECT_EQ(std::stod(PrometheusNumber(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(PrometheusNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(PrometheusNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PrometheusNumber(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(PrometheusNamesTest, MetricAndLabelNames) {
  EXPECT_TRUE(IsPrometheusMetricName("neighborly_node_pods"));
  EXPECT_TRUE(IsPrometheusMetricName("job:rate5m"));
  EXPECT_FALSE(IsPrometheusMetricName(""));
  EXPECT_FALSE(IsPrometheusMetricName("2xx_total"));
  EXPECT_FALSE(IsPrometheusMetricName("neighborly-pods"));
  EXPECT_TRUE(IsPrometheusLabelName("numa_node"));
  EXPECT_FALSE(IsPrometheusLabelName("__name__"));
  EXPECT_FALSE(IsPrometheusLabelName("a:b"));
  EXPECT_FALSE(IsPrometheusLabelName("0a"));
}

TEST(PrometheusWriterTest, HelpAndTypeOncePerFamilySortedWhateverTheOrderOfCalls) {
  PrometheusWriter a;
  a.Gauge("b_gauge", "B.", {{"node", "n2"}}, 2);
  a.Counter("a_total", "A.", {}, 5);
  a.Gauge("b_gauge", "B.", {{"node", "n1"}}, 1);
  PrometheusWriter b;
  b.Gauge("b_gauge", "B.", {{"node", "n1"}}, 1);
  b.Gauge("b_gauge", "B.", {{"node", "n2"}}, 2);
  b.Counter("a_total", "A.", {}, 5);
  const std::string expected =
      "# HELP a_total A.\n"
      "# TYPE a_total counter\n"
      "a_total 5\n"
      "# HELP b_gauge B.\n"
      "# TYPE b_gauge gauge\n"
      "b_gauge{node=\"n1\"} 1\n"
      "b_gauge{node=\"n2\"} 2\n";
  EXPECT_EQ(a.Render(), expected);
  EXPECT_EQ(b.Render(), expected);
  EXPECT_THAT(a.problems(), IsEmpty());
}

TEST(PrometheusWriterTest, EscapesLabelValuesAndHelp) {
  PrometheusWriter page;
  page.Gauge("x", "back\\slash and\nnewline, \"quotes\" kept", {{"node", "we\"ird\\na\nme"}}, 1);
  EXPECT_EQ(page.Render(),
            "# HELP x back\\\\slash and\\nnewline, \"quotes\" kept\n"
            "# TYPE x gauge\n"
            "x{node=\"we\\\"ird\\\\na\\nme\"} 1\n");
}

TEST(PrometheusWriterTest, LabelsKeepTheirOrderWithinASeries) {
  PrometheusWriter page;
  page.Gauge("x", "X.", {{"node", "a"}, {"class", "batch"}}, 1);
  EXPECT_THAT(page.Render(), HasSubstr("x{node=\"a\",class=\"batch\"} 1\n"));
}

TEST(PrometheusWriterTest, HistogramIsCumulativeWithInfSumAndCount) {
  PrometheusWriter page;
  const std::array<double, 3> bounds = {0.001, 0.01, 0.1};
  const std::array<uint64_t, 4> counts = {1, 0, 2, 3};  // the last above 0.1
  page.Histogram("req_seconds", "Latency.", {{"verb", "filter"}}, bounds, counts, 1.25);
  const std::array<uint64_t, 3> no_overflow = {4, 0, 0};
  page.Histogram("req_seconds", "Latency.", {{"verb", "bind"}}, bounds, no_overflow, 0.002);
  EXPECT_EQ(page.Render(),
            "# HELP req_seconds Latency.\n"
            "# TYPE req_seconds histogram\n"
            "req_seconds_bucket{verb=\"bind\",le=\"0.001\"} 4\n"
            "req_seconds_bucket{verb=\"bind\",le=\"0.01\"} 4\n"
            "req_seconds_bucket{verb=\"bind\",le=\"0.1\"} 4\n"
            "req_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 4\n"
            "req_seconds_sum{verb=\"bind\"} 0.002\n"
            "req_seconds_count{verb=\"bind\"} 4\n"
            "req_seconds_bucket{verb=\"filter\",le=\"0.001\"} 1\n"
            "req_seconds_bucket{verb=\"filter\",le=\"0.01\"} 1\n"
            "req_seconds_bucket{verb=\"filter\",le=\"0.1\"} 3\n"
            "req_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 6\n"
            "req_seconds_sum{verb=\"filter\"} 1.25\n"
            "req_seconds_count{verb=\"filter\"} 6\n");
  EXPECT_THAT(page.problems(), IsEmpty());
}

TEST(PrometheusWriterTest, HistogramWithoutLabels) {
  PrometheusWriter page;
  const std::array<double, 1> bounds = {0.5};
  const std::array<uint64_t, 2> counts = {1, 1};
  page.Histogram("cost_seconds", "Cost.", {}, bounds, counts, 0.75);
  EXPECT_THAT(page.Render(), HasSubstr("cost_seconds_bucket{le=\"0.5\"} 1\n"
                                       "cost_seconds_bucket{le=\"+Inf\"} 2\n"
                                       "cost_seconds_sum 0.75\n"
                                       "cost_seconds_count 2\n"));
}

TEST(PrometheusWriterTest, FamiliesWithoutSamplesAreLeftOut) {
  PrometheusWriter page;
  page.Declare("neighborly_node_pods", "gauge", "Pods.");
  EXPECT_EQ(page.Render(), "");
  page.Gauge("neighborly_node_pods", "Pods.", {{"node", "a"}}, 3);
  EXPECT_THAT(page.Render(), HasSubstr("# TYPE neighborly_node_pods gauge\n"));
  EXPECT_THAT(page.problems(), IsEmpty());
}

TEST(PrometheusWriterTest, MisuseIsRefusedAndListed) {
  PrometheusWriter page;
  page.Counter("ok_total", "Ok.", {}, 1);
  page.Gauge("ok_total", "Ok.", {}, 1);                      // another type
  page.Counter("ok_total", "Other help.", {{"a", "b"}}, 1);  // another HELP
  page.Counter("ok_total", "Ok.", {}, 2);                    // the same series again
  page.Gauge("bad-name", "X.", {}, 1);                       // invalid metric name
  page.Gauge("g", "G.", {{"__reserved", "x"}}, 1);           // invalid label name
  page.Gauge("g", "G.", {{"a", "x"}, {"a", "y"}}, 1);        // label twice
  const std::array<double, 2> bounds = {0.1, 0.01};
  const std::array<uint64_t, 3> counts = {0, 0, 0};
  page.Histogram("h_seconds", "H.", {}, bounds, counts, 0);                       // bounds decrease
  page.Histogram("h_seconds", "H.", {}, bounds, std::span<const uint64_t>(), 0);  // no counts
  page.Histogram("h_seconds", "H.", {{"le", "1"}}, std::span<const double>(),
                 std::span<const uint64_t>(), 0);  // le is reserved
  page.Declare("x", "summary", "X.");
  EXPECT_THAT(
      page.problems(),
      ElementsAre("ok_total is a counter, not a gauge", "ok_total has two HELP texts",
                  "ok_total given twice", "\"bad-name\" is not a valid metric name",
                  "g: \"__reserved\" is not a valid label name", "g: label a given twice",
                  "h_seconds: bucket bounds must increase",
                  "h_seconds: 0 counts for 2 bucket bounds",
                  "h_seconds: le is the histogram's own label", "x: unknown type \"summary\""));
  EXPECT_EQ(page.Render(), "# HELP ok_total Ok.\n# TYPE ok_total counter\nok_total 1\n");
}

}  // namespace
}  // namespace neighborly
