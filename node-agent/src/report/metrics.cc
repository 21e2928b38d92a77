#include "node-agent/src/report/metrics.h"

#include <functional>

#include "common/prometheus_text.h"

namespace neighborly::agent {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::function<uint64_t(const ReportStream::Stats&)> value;
};

}  // namespace

std::string RenderStreamMetrics(const std::vector<const ReportStream*>& streams) {
  PrometheusWriter page;
  AppendStreamMetrics(streams, page);
  return page.Render();
}

void AppendStreamMetrics(const std::vector<const ReportStream*>& streams, PrometheusWriter& page) {
  // neighborly_agent_build_info is appended by the page's owner (main.cc,
  // common/process_metrics.h) with the process_* metrics.
  const Family families[] = {
      {"neighborly_agent_stream_connected", "gauge",
       "1 while the stream to the extender is acknowledged, else 0.",
       [](const ReportStream::Stats& s) -> uint64_t {
         return s.state == ReportStream::State::kConnected ? 1 : 0;
       }},
      {"neighborly_agent_reports_offered_total", "counter", "Reports produced for the stream.",
       [](const ReportStream::Stats& s) { return s.reports_offered; }},
      {"neighborly_agent_reports_written_total", "counter", "Reports written to a stream.",
       [](const ReportStream::Stats& s) { return s.reports_written; }},
      {"neighborly_agent_reports_superseded_total", "counter",
       "Reports dropped because a newer one replaced them before they could be sent.",
       [](const ReportStream::Stats& s) { return s.reports_superseded; }},
      {"neighborly_agent_reports_refused_total", "counter",
       "Reports the extender refused with INVALID_ARGUMENT.",
       [](const ReportStream::Stats& s) { return s.reports_refused; }},
      {"neighborly_agent_stream_auth_refusals_total", "counter",
       "Streams the extender refused with UNAUTHENTICATED or PERMISSION_DENIED (identity "
       "token missing, invalid or for another node).",
       [](const ReportStream::Stats& s) { return s.auth_refusals; }},
      {"neighborly_agent_acks_total", "counter", "Acks received from the extender.",
       [](const ReportStream::Stats& s) { return s.acks; }},
      {"neighborly_agent_stream_connects_total", "counter", "Streams that received an ack.",
       [](const ReportStream::Stats& s) { return s.connects; }},
      {"neighborly_agent_stream_failures_total", "counter",
       "Streams that ended or could not be opened.",
       [](const ReportStream::Stats& s) { return s.failures; }},
  };
  std::vector<ReportStream::Stats> stats;
  for (const ReportStream* stream : streams) stats.push_back(stream->stats());
  for (const Family& family : families) {
    for (size_t i = 0; i < streams.size(); ++i) {
      const PrometheusWriter::Labels labels = {{"node", streams[i]->options().node_name},
                                               {"extender", streams[i]->options().target}};
      const double value = static_cast<double>(family.value(stats[i]));
      if (std::string_view(family.type) == "counter") {
        page.Counter(family.name, family.help, labels, value);
      } else {
        page.Gauge(family.name, family.help, labels, value);
      }
    }
  }
}

}  // namespace neighborly::agent
