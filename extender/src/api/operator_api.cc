#include "extender/src/api/operator_api.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/prometheus_text.h"
#include "common/strings.h"
#include "extender/src/api/isolation_api.h"
#include "extender/src/api/json_reply.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

constexpr size_t kDefaultDecisionLimit = 20;
constexpr size_t kMaxDecisionLimit = 1000;

using api_json::Dump;
using api_json::Finite;
using api_json::Optional;
using api_json::Reply;
using api_json::ReplyError;

nlohmann::json PodJson(const PodSummary& p) {
  return {{"uid", p.uid},
          {"namespace", p.namespace_name},
          {"name", p.name},
          {"qosClass", p.qos_class},
          {"contentionClass", p.contention_class},
          {"classSource", p.class_source},
          {"aggressor", p.aggressor},
          {"exclusiveCpus", p.exclusive_cpus},
          {"cpuUsageMillicores", Optional(p.cpu_usage_millicores)},
          {"llcOccupancyBytes", Optional(p.llc_occupancy_bytes)},
          {"membwTotalBytesPerSecond", Optional(p.membw_total_bytes_per_second)},
          {"membwLocalBytesPerSecond", Optional(p.membw_local_bytes_per_second)},
          {"ipc", Optional(p.ipc)},
          {"llcMissesPerKiloInstructions", Optional(p.llc_misses_per_kilo_instructions)},
          {"unavailable", p.unavailable}};
}

}  // namespace

nlohmann::json NodeSummaryJson(const NodeSummary& n, bool with_pods) {
  nlohmann::json l3 = nlohmann::json::array();
  for (const L3DomainSummary& d : n.l3_domains) {
    l3.push_back({{"id", d.id},
                  {"numaNode", d.numa_node},
                  {"sizeBytes", d.size_bytes},
                  {"occupancyBytes", Optional(d.occupancy_bytes)},
                  {"pressure", Finite(d.pressure)}});
  }
  nlohmann::json numa = nlohmann::json::array();
  for (const NumaNodeSummary& m : n.numa_nodes) {
    numa.push_back({{"id", m.id},
                    {"cpus", m.cpus},
                    {"memoryBytes", m.memory_bytes},
                    {"peakMembwBytesPerSecond", m.peak_membw_bytes_per_second},
                    {"peakMembwSource", m.peak_membw_source},
                    {"membwBytesPerSecond", Optional(m.membw_bytes_per_second)},
                    {"membwUtilisation", Finite(m.membw_utilisation)},
                    {"freeExclusiveCpus", m.free_exclusive_cpus},
                    {"freeMemoryBytes", m.free_memory_bytes}});
  }
  nlohmann::json j = {
      {"name", n.name},
      {"telemetryAgeSeconds", n.telemetry_age == absl::InfiniteDuration()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(absl::ToDoubleSeconds(n.telemetry_age))},
      {"confidence", Finite(n.confidence)},
      {"contentionScore", Finite(n.contention_score)},
      {"sequence", n.sequence},
      {"agentVersion", n.agent_version},
      {"capabilities", n.capabilities},
      {"cpuManagerPolicy", n.cpu_manager_policy},
      {"topologyManagerPolicy", n.topology_manager_policy},
      {"l3Domains", std::move(l3)},
      {"numaNodes", std::move(numa)},
      {"podsByClass", n.pods_by_class},
      {"aggressors", n.aggressors},
      {"bookings", n.bookings},
  };
  if (with_pods) {
    nlohmann::json pods = nlohmann::json::array();
    for (const PodSummary& p : n.pods) pods.push_back(PodJson(p));
    j["pods"] = std::move(pods);
  }
  return j;
}

nlohmann::json DecisionRecordJson(const DecisionRecord& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const DecisionRecord::PerNode& per : r.nodes) {
    const NodeDecision& d = per.decision;
    nlohmann::json terms = nlohmann::json::array();
    for (const Term& t : ExplainTerms(d)) {
      terms.push_back({{"name", t.name}, {"value", Finite(t.value)}, {"detail", t.detail}});
    }
    nodes.push_back({{"node", per.node},
                     {"feasible", d.feasible},
                     {"reason", d.reason},
                     {"score", d.score},
                     {"cost", Finite(d.cost)},
                     {"confidence", Finite(d.confidence)},
                     {"hasTelemetry", d.has_telemetry},
                     {"numaNode", d.numa_node},
                     {"l3Domain", d.l3_domain},
                     {"terms", std::move(terms)}});
  }
  return {{"at", absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", r.at, absl::UTCTimeZone())},
          {"verb", r.verb},
          {"podUid", r.pod_uid},
          {"pod", r.pod},
          {"contentionClass", r.contention_class},
          {"classSource", r.class_source},
          {"bookedNode", r.booked_node},
          {"releasedNode", r.released_node},
          {"workload", r.workload},
          {"prediction", r.prediction},
          {"candidates", r.candidates},
          {"omittedNodes", r.candidates - std::min(r.candidates, r.nodes.size())},
          {"nodes", std::move(nodes)}};
}

nlohmann::json WorkloadViewJson(const WorkloadView& w) {
  const WorkloadPrediction& p = w.prediction;
  nlohmann::json metrics = nlohmann::json::object();
  for (int m = 0; m < kWorkloadMetrics; ++m) {
    if (!w.metrics[m]) continue;
    metrics[std::string(WorkloadMetricName(static_cast<WorkloadMetric>(m)))] = {
        {"mean", Finite(w.metrics[m]->mean)}, {"p95", Finite(w.metrics[m]->high)}};
  }
  nlohmann::json out = {{"workload", w.key},
                        {"windows", Finite(p.windows)},
                        {"confidence", Finite(p.confidence)},
                        {"replicas", p.replicas},
                        {"nodes", p.nodes},
                        {"aggressor", p.aggressor},
                        {"aggressorWhy", p.aggressor_why},
                        {"membwEstimated", p.membw_estimated},
                        {"metrics", std::move(metrics)}};
  // Issue 22: what it needs and how it suffers, with the evidence behind it.
  {
    nlohmann::json fit = {{"fitConfidence", Finite(p.fit_confidence)}};
    auto put = [&fit](const char* key, const std::optional<double>& v) {
      if (v) fit[key] = Finite(*v);
    };
    put("llcDemandBytes", p.llc_demand_bytes);
    put("soloMembwBytesPerSecond", p.solo_membw_bytes_per_second);
    put("cacheSensitivity", p.cache_sensitivity);
    put("membwSensitivity", p.membw_sensitivity);
    put("baselineIpc", p.baseline_ipc);
    put("baselineMpki", p.baseline_mpki);
    out["interference"] = std::move(fit);
  }
  if (p.llc_bytes) out["predictedLlcBytes"] = Finite(*p.llc_bytes);
  if (p.membw_bytes_per_second)
    out["predictedMembwBytesPerSecond"] = Finite(*p.membw_bytes_per_second);
  if (w.last_update != absl::InfinitePast()) {
    out["lastUpdate"] =
        absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", w.last_update, absl::UTCTimeZone());
  }
  if (w.aggressor_since != absl::InfinitePast()) {
    out["aggressorSince"] =
        absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", w.aggressor_since, absl::UTCTimeZone());
  }
  return out;
}

void AppendOperatorMetrics(const OperatorSource& source, const MetricsPage& options,
                           PrometheusWriter& page) {
  const IngestStats ingest = source.Ingest();
  constexpr std::string_view kReportsHelp = "Node reports received over gRPC, by result.";
  page.Counter("neighborly_ingest_reports_total", kReportsHelp, {{"result", "accepted"}},
               static_cast<double>(ingest.reports_accepted));
  page.Counter("neighborly_ingest_reports_total", kReportsHelp, {{"result", "rejected"}},
               static_cast<double>(ingest.reports_rejected));
  page.Gauge("neighborly_ingest_streams_open", "Agent report streams now open.", {},
             static_cast<double>(ingest.streams_open));

  const OperatorSource::WorkloadCounts workloads = source.WorkloadCountsNow();
  page.Gauge("neighborly_workload_profiles",
             "Workload profiles held (learned from running replicas).", {},
             static_cast<double>(workloads.held));
  page.Gauge("neighborly_workload_profiles_capacity",
             "Workload profiles kept at most (state.maxWorkloads).", {},
             static_cast<double>(workloads.capacity));
  page.Counter("neighborly_workload_predictions_total",
               "Scheduling requests whose pod was predicted from its workload's profile.", {},
               static_cast<double>(workloads.predictions_used));

  // Fleet aggregates, always: a handful of series whatever the fleet's size.
  const std::vector<NodeSummary> nodes = source.Nodes();
  uint64_t fresh = 0, aging = 0, stale = 0;
  double max_score = 0, max_l3 = 0, max_membw = 0, max_age_seconds = 0;
  int64_t bookings = 0;
  std::map<std::string, int64_t> pods_by_class;
  for (const NodeSummary& n : nodes) {
    ++(n.confidence >= 1 ? fresh : n.confidence > 0 ? aging : stale);
    max_score = std::max(max_score, n.contention_score);
    for (const L3DomainSummary& d : n.l3_domains) max_l3 = std::max(max_l3, d.pressure);
    for (const NumaNodeSummary& m : n.numa_nodes) {
      max_membw = std::max(max_membw, m.membw_utilisation);
    }
    if (n.telemetry_age != absl::InfiniteDuration()) {
      max_age_seconds = std::max(max_age_seconds, absl::ToDoubleSeconds(n.telemetry_age));
    }
    bookings += n.bookings;
    for (const auto& [cls, count] : n.pods_by_class) pods_by_class[cls] += count;
  }
  constexpr std::string_view kFleetNodesHelp =
      "Nodes with telemetry, by its state: fresh (confidence 1), aging (between), stale "
      "(confidence 0: scored neutrally).";
  page.Gauge("neighborly_fleet_nodes", kFleetNodesHelp, {{"telemetry", "fresh"}},
             static_cast<double>(fresh));
  page.Gauge("neighborly_fleet_nodes", kFleetNodesHelp, {{"telemetry", "aging"}},
             static_cast<double>(aging));
  page.Gauge("neighborly_fleet_nodes", kFleetNodesHelp, {{"telemetry", "stale"}},
             static_cast<double>(stale));
  page.Gauge("neighborly_fleet_max_contention_score",
             "Highest neighborly_node_contention_score over the nodes, 0..1.", {}, max_score);
  page.Gauge("neighborly_fleet_max_l3_pressure_ratio",
             "Highest L3 pressure over every node's L3 domains, 0..1 (can exceed 1).", {}, max_l3);
  page.Gauge("neighborly_fleet_max_membw_utilization_ratio",
             "Highest memory bandwidth utilization over every node's NUMA nodes, 0..1.", {},
             max_membw);
  if (!nodes.empty()) {
    page.Gauge("neighborly_fleet_max_telemetry_age_seconds",
               "Age of the oldest newest-report over the nodes.", {}, max_age_seconds);
  }
  page.Gauge("neighborly_fleet_bookings", "In-flight pods booked by prioritize, all nodes.", {},
             static_cast<double>(bookings));
  for (const auto& [cls, count] : pods_by_class) {
    page.Gauge("neighborly_fleet_pods", "Pods on the nodes with telemetry, by contention class.",
               {{"class", cls}}, static_cast<double>(count));
  }

  AppendIsolationMetrics(source, options.per_node_series, page);
  if (!options.per_node_series) return;
  for (const NodeSummary& n : nodes) {
    page.Gauge("neighborly_node_contention_score",
               "Max of L3 pressure and bandwidth utilization on the node, 0..1.",
               {{"node", n.name}}, n.contention_score);
    for (const L3DomainSummary& d : n.l3_domains) {
      page.Gauge(
          "neighborly_node_l3_pressure_ratio",
          "L3 occupancy over capacity per L3 domain, 0..1 (can exceed 1 when summed from pods).",
          {{"node", n.name}, {"l3_domain", absl::StrCat(d.id)}}, d.pressure);
    }
    for (const NumaNodeSummary& m : n.numa_nodes) {
      page.Gauge("neighborly_node_membw_utilization_ratio",
                 "Memory bandwidth over peak per NUMA node, 0..1.",
                 {{"node", n.name}, {"numa_node", absl::StrCat(m.id)}}, m.membw_utilisation);
    }
    if (n.telemetry_age != absl::InfiniteDuration()) {
      page.Gauge("neighborly_node_telemetry_age_seconds",
                 "Age of the node's newest telemetry report.", {{"node", n.name}},
                 absl::ToDoubleSeconds(n.telemetry_age));
    }
    page.Gauge("neighborly_node_telemetry_confidence",
               "Weight of the node's telemetry in its score: 1 fresh .. 0 stale.",
               {{"node", n.name}}, n.confidence);
    for (const auto& [cls, count] : n.pods_by_class) {
      page.Gauge("neighborly_node_pods", "Pods on the node by contention class.",
                 {{"node", n.name}, {"class", cls}}, count);
    }
    page.Gauge("neighborly_node_bookings", "In-flight pods booked on the node by prioritize.",
               {{"node", n.name}}, n.bookings);
  }
}

std::string RenderMetrics(const OperatorSource& source, const ExtenderMetrics& metrics,
                          const MetricsPage& options) {
  PrometheusWriter page;
  metrics.AppendTo(page);
  AppendOperatorMetrics(source, options, page);
  if (options.append) options.append(page);
  for (const std::string& problem : page.problems()) {
    spdlog::error("/metrics: {}", problem);  // a bug; the tests keep the list empty
  }
  return page.Render();
}

void RegisterOperatorApi(HttpRoutes& server, const OperatorSource& source,
                         const ExtenderMetrics& metrics, ReadinessCheck ready,
                         MetricsPage metrics_page) {
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, {{"status", "ok"}});
  });
  server.Get("/readyz", [ready](const httplib::Request&, httplib::Response& res) {
    const std::string reason = ready ? ready() : std::string();
    if (reason.empty()) {
      Reply(res, 200, {{"ready", true}});
    } else {
      Reply(res, 503, {{"ready", false}, {"reason", reason}});
    }
  });
  server.Get("/metrics", [&source, &metrics, metrics_page = std::move(metrics_page)](
                             const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(RenderMetrics(source, metrics, metrics_page),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/v1/nodes", [&source](const httplib::Request&, httplib::Response& res) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const NodeSummary& n : source.Nodes()) nodes.push_back(NodeSummaryJson(n, false));
    Reply(res, 200, nodes);
  });
  server.Get(
      R"(/v1/nodes/([^/]+))", [&source](const httplib::Request& req, httplib::Response& res) {
        const std::string name = req.matches[1];
        const std::optional<NodeSummary> node = source.Node(name);
        if (!node.has_value()) {
          ReplyError(res, 404, absl::StrCat("unknown node \"", name, "\": no telemetry received"));
          return;
        }
        Reply(res, 200, NodeSummaryJson(*node, true));
      });
  server.Get("/v1/workloads", [&source](const httplib::Request&, httplib::Response& res) {
    nlohmann::json list = nlohmann::json::array();
    for (const WorkloadView& w : source.Workloads()) list.push_back(WorkloadViewJson(w));
    Reply(res, 200, list);
  });
  server.Get(R"(/v1/workloads/([^/]+)/([^/]+)/([^/]+))", [&source](const httplib::Request& req,
                                                                   httplib::Response& res) {
    const std::string key =
        absl::StrCat(req.matches[1].str(), "/", req.matches[2].str(), "/", req.matches[3].str());
    const std::optional<WorkloadView> w = source.Workload(key);
    if (!w.has_value()) {
      ReplyError(
          res, 404,
          absl::StrCat("unknown workload \"", key, "\": no replica of it has been measured"));
      return;
    }
    Reply(res, 200, WorkloadViewJson(*w));
  });
  RegisterIsolationApi(server, source);
  server.Get("/v1/decisions", [&source](const httplib::Request& req, httplib::Response& res) {
    const std::string pod = req.get_param_value("pod");
    if (pod.empty()) {
      ReplyError(res, 400, "query parameter pod (uid, namespace/name or name) is required");
      return;
    }
    size_t limit = kDefaultDecisionLimit;
    if (req.has_param("limit")) {
      const std::optional<size_t> parsed = ParseInt<size_t>(req.get_param_value("limit"));
      if (!parsed || *parsed == 0 || *parsed > kMaxDecisionLimit) {
        ReplyError(res, 400, absl::StrCat("limit must be an integer in 1..", kMaxDecisionLimit));
        return;
      }
      limit = *parsed;
    }
    nlohmann::json records = nlohmann::json::array();
    for (const DecisionRecord& r : source.Decisions(pod, limit)) {
      records.push_back(DecisionRecordJson(r));
    }
    Reply(res, 200, records);
  });
}

}  // namespace neighborly::extender
