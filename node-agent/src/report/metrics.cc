#include "node-agent/src/report/metrics.h"

#include <algorithm>
#include <functional>

#include "common/prometheus_text.h"
#include "node-agent/src/report/replica_directory.h"

namespace neighborly::agent {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::function<uint64_t(const ReportStream::Stats&)> value;
};

}  // namespace

StreamView ViewOf(const ReportStream& stream) {
  return {.node = stream.options().node_name,
          .target = stream.target_name(),
          .address = stream.options().target,
          .stats = stream.stats()};
}

std::string RenderStreamMetrics(const std::vector<const ReportStream*>& streams) {
  PrometheusWriter page;
  AppendStreamMetrics(streams, page);
  return page.Render();
}

void AppendStreamMetrics(const std::vector<const ReportStream*>& streams, PrometheusWriter& page) {
  std::vector<StreamView> views;
  for (const ReportStream* stream : streams) views.push_back(ViewOf(*stream));
  AppendStreamMetrics(views, page);
}

void AppendReplicaMetrics(const ReplicaDirectory& directory, PrometheusWriter& page) {
  for (const ReplicaDirectory::TargetStats& t : directory.target_stats()) {
    page.Gauge("neighborly_agent_extender_replicas",
               "Extender replicas (addresses) the --extender target resolves to now; the agent "
               "streams to each.",
               {{"target", t.target}}, static_cast<double>(t.replicas));
    constexpr std::string_view kHelp =
        "Resolutions of the --extender target, by result (a failure keeps its last replicas).";
    page.Counter("neighborly_agent_extender_resolves_total", kHelp,
                 {{"target", t.target}, {"result", "ok"}},
                 static_cast<double>(t.resolves - t.resolve_failures));
    page.Counter("neighborly_agent_extender_resolves_total", kHelp,
                 {{"target", t.target}, {"result", "failed"}},
                 static_cast<double>(t.resolve_failures));
  }
}

void AppendStreamMetrics(const std::vector<StreamView>& streams, PrometheusWriter& page,
                         absl::Time now) {
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
  for (const Family& family : families) {
    for (const StreamView& stream : streams) {
      const PrometheusWriter::Labels labels = {
          {"node", stream.node}, {"extender", stream.address}, {"target", stream.target}};
      const double value = static_cast<double>(family.value(stream.stats));
      if (std::string_view(family.type) == "counter") {
        page.Counter(family.name, family.help, labels, value);
      } else {
        page.Gauge(family.name, family.help, labels, value);
      }
    }
  }
  for (const StreamView& stream : streams) {
    if (stream.stats.last_ack == absl::InfinitePast()) continue;
    page.Gauge("neighborly_agent_stream_last_ack_age_seconds",
               "Seconds since the replica last acknowledged a report (absent before the first "
               "ack); growing while the stream is up means the replica is not keeping up.",
               {{"node", stream.node}, {"extender", stream.address}, {"target", stream.target}},
               std::max(0.0, absl::ToDoubleSeconds(now - stream.stats.last_ack)));
  }
}

}  // namespace neighborly::agent
