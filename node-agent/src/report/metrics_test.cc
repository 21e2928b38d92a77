#include "node-agent/src/report/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, OneSeriesPerStreamWithEscapedLabels) {
  ReportStreamOptions options_a;
  options_a.target = "127.0.0.1:9090";
  options_a.node_name = "node-1";
  ReportStreamOptions options_b;
  options_b.target = "127.0.0.1:9091";
  options_b.node_name = "we\"ird";
  ReportStream a(options_a);
  ReportStream b(options_b);
  a.Offer(telemetry::v1::NodeReport());
  a.Offer(telemetry::v1::NodeReport());
  const std::string text = RenderStreamMetrics({&a, &b});
  // build_info comes with the process metrics (main.cc), once per page.
  EXPECT_THAT(text, Not(HasSubstr("neighborly_agent_build_info")));
  EXPECT_THAT(text, HasSubstr("# TYPE neighborly_agent_reports_superseded_total counter\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_agent_reports_offered_total{node=\"node-1\","
                              "extender=\"127.0.0.1:9090\",target=\"127.0.0.1:9090\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_agent_reports_superseded_total{node=\"node-1\","
                              "extender=\"127.0.0.1:9090\",target=\"127.0.0.1:9090\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_agent_stream_connected{node=\"we\\\"ird\","
                              "extender=\"127.0.0.1:9091\",target=\"127.0.0.1:9091\"} 0\n"));
  // Each family is declared once.
  const std::string type = "# TYPE neighborly_agent_acks_total";
  EXPECT_EQ(text.find(type), text.rfind(type));
  EXPECT_THAT(text, Not(HasSubstr("\n\n")));
}

}  // namespace
}  // namespace neighborly::agent
