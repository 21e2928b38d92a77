#include "extender/src/api/isolation_api.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "extender/src/api/json_reply.h"

namespace neighborly::extender {
namespace {

using api_json::Optional;
using api_json::Reply;

}  // namespace

nlohmann::json NodeMemoryJson(const NodeMemoryView& view) {
  nlohmann::json thresholds = nlohmann::json::array();
  for (const MemoryThreshold& t : view.thresholds) {
    thresholds.push_back({{"kind", t.kind},
                          {"signal", "memory.available"},
                          {"value", t.value},
                          {"bytes", t.bytes},
                          {"source", t.source},
                          {"distanceBytes", Optional(t.distance_bytes)}});
  }
  nlohmann::json pods = nlohmann::json::array();
  for (const PodMemoryView& p : view.pods) {
    pods.push_back({{"evictionRank", p.eviction_rank},
                    {"uid", p.uid},
                    {"namespace", p.namespace_name},
                    {"name", p.name},
                    {"qosClass", p.qos_class},
                    {"priority", Optional(p.priority)},
                    {"workingSetBytes", Optional(p.working_set_bytes)},
                    {"requestBytes", Optional(p.request_bytes)},
                    {"limitBytes", Optional(p.limit_bytes)},
                    {"usageAboveRequestBytes", Optional(p.usage_above_request_bytes)},
                    {"exceedsRequest", p.exceeds_request},
                    {"evictionReason", p.eviction_reason},
                    {"oomScoreAdj", p.oom_score_adj},
                    {"expectedOomScoreAdj", p.expected_oom_score_adj},
                    {"expectedIsLowerBound", p.expected_is_lower_bound},
                    {"oomScoreAdjMismatch", p.oom_score_adj_mismatch},
                    {"oomNote", p.oom_note}});
  }
  return {{"node", view.node},
          {"capacityBytes", view.capacity_bytes},
          {"capacitySource", view.capacity_source},
          {"availableBytes", Optional(view.available_bytes)},
          {"underPressure", view.under_pressure},
          {"thresholds", thresholds},
          {"oomScoreAdjMismatches", view.oom_score_adj_mismatches},
          {"podsOverRequest", view.pods_over_request},
          {"evictionOrder", pods},
          {"notes", view.notes}};
}

nlohmann::json InterferenceJson(const InterferenceView& view) {
  nlohmann::json victims = nlohmann::json::array();
  for (const Victim& v : view.victims) {
    nlohmann::json suspects = nlohmann::json::array();
    for (const Suspect& s : v.suspects) {
      suspects.push_back({{"pod", s.pod},
                          {"uid", s.uid},
                          {"workload", s.workload},
                          {"score", s.score},
                          {"bandwidthCorrelation", s.bandwidth_correlation},
                          {"occupancyCorrelation", s.occupancy_correlation},
                          {"meanMembwBytesPerSecond", s.mean_membw_bytes_per_second},
                          {"meanLlcOccupancyBytes", s.mean_llc_occupancy_bytes},
                          {"shares", s.shares},
                          {"repeatAntagonist",
                           std::find(view.repeat_antagonists.begin(),
                                     view.repeat_antagonists.end(),
                                     s.workload) != view.repeat_antagonists.end()}});
    }
    victims.push_back({{"node", v.node},
                       {"pod", v.pod},
                       {"uid", v.uid},
                       {"workload", v.workload},
                       {"cpi", v.cpi},
                       {"baselineCpi", v.baseline_cpi},
                       {"baselineStddev", v.baseline_stddev},
                       {"windowsAbove", v.windows_above},
                       {"recentWindows", v.recent_windows},
                       {"persistingWindows", v.persisting_windows},
                       {"suspects", suspects}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [node, counts] : view.per_node) {
    nodes.push_back({{"node", node}, {"victims", counts.first}, {"suspects", counts.second}});
  }
  return {{"windowsObserved", view.windows_observed},
          {"victims", victims},
          {"nodes", nodes},
          {"antagonistCounts", view.antagonist_counts},
          {"repeatAntagonists", view.repeat_antagonists}};
}

nlohmann::json WorkloadAdviceJson(const WorkloadAdvice& a) {
  nlohmann::json layers = nlohmann::json::array();
  for (const AdviceLayer& l : a.layers) {
    layers.push_back({{"layer", l.layer},
                      {"needed", l.needed},
                      {"present", l.present},
                      {"why", l.why},
                      {"cost", l.cost}});
  }
  return {{"workload", a.workload},
          {"replicas", a.replicas},
          {"contentionClass", a.contention_class},
          {"victim", a.victim},
          {"repeatAntagonist", a.repeat_antagonist},
          {"layers", layers},
          {"patch", a.patch},
          {"notes", a.notes}};
}

nlohmann::json MoveProposalsJson(const std::vector<MoveProposal>& moves) {
  nlohmann::json list = nlohmann::json::array();
  for (const MoveProposal& m : moves) {
    list.push_back({{"victim", m.victim},
                    {"victimNode", m.victim_node},
                    {"persistingWindows", m.persisting_windows},
                    {"move", m.move},
                    {"moveUid", m.move_uid},
                    {"fromNode", m.from_node},
                    {"toNode", m.to_node.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.to_node)},
                    {"score", m.score},
                    {"why", m.why},
                    {"refused", m.refused}});
  }
  return {{"proposals", list}};
}

void RegisterIsolationApi(HttpRoutes& server, const OperatorSource& source) {
  server.Get("/v1/rebalance", [&source](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, MoveProposalsJson(source.Rebalance()));
  });
  server.Get(R"(/v1/advice/([^/]+)/([^/]+)/([^/]+))",
             [&source](const httplib::Request& req, httplib::Response& res) {
               const std::string key = absl::StrCat(req.matches[1].str(), "/",
                                                    req.matches[2].str(), "/", req.matches[3].str());
               const std::optional<WorkloadAdvice> advice = source.Advice(key);
               if (!advice.has_value()) {
                 Reply(res, 404,
                       {{"Error", absl::StrCat("unknown workload \"", key,
                                               "\": no running replica of it is reported")}});
                 return;
               }
               Reply(res, 200, WorkloadAdviceJson(*advice));
             });
  server.Get(R"(/v1/nodes/([^/]+)/memory)",
             [&source](const httplib::Request& req, httplib::Response& res) {
               const std::string name = req.matches[1];
               const std::optional<NodeMemoryView> view = source.NodeMemory(name);
               if (!view.has_value()) {
                 Reply(res, 404,
                       {{"Error", absl::StrCat("unknown node \"", name,
                                               "\": no telemetry received")}});
                 return;
               }
               Reply(res, 200, NodeMemoryJson(*view));
             });
  server.Get("/v1/interference", [&source](const httplib::Request& req, httplib::Response& res) {
    InterferenceView view = source.Interference();
    const std::string node = req.get_param_value("node");
    if (!node.empty()) {
      std::erase_if(view.victims, [&node](const Victim& v) { return v.node != node; });
      std::erase_if(view.per_node, [&node](const auto& kv) { return kv.first != node; });
    }
    Reply(res, 200, InterferenceJson(view));
  });
}

void AppendIsolationMetrics(const OperatorSource& source, bool per_node_series,
                            PrometheusWriter& page) {
  const std::vector<NodeMemoryView> memory = source.Memory();
  int64_t mismatches = 0, pressure = 0;
  for (const NodeMemoryView& m : memory) {
    mismatches += m.oom_score_adj_mismatches;
    pressure += m.under_pressure ? 1 : 0;
  }
  page.Gauge("neighborly_fleet_oom_score_adj_mismatches",
             "Pods whose processes' oom_score_adj differs from what the kubelet sets, all nodes.",
             {}, static_cast<double>(mismatches));
  page.Gauge("neighborly_fleet_nodes_under_memory_pressure",
             "Nodes whose memory.available is below the kubelet's hard eviction threshold.", {},
             static_cast<double>(pressure));
  const InterferenceView interference = source.Interference();
  page.Gauge("neighborly_fleet_interference_victims",
             "Latency-critical pods whose CPI stays above their workload's baseline, all nodes.",
             {}, static_cast<double>(interference.victims.size()));
  page.Gauge("neighborly_fleet_repeat_antagonists",
             "Workloads named as antagonist often enough to be treated as aggressors.", {},
             static_cast<double>(interference.repeat_antagonists.size()));
  if (!per_node_series) return;
  for (const NodeMemoryView& m : memory) {
    if (m.available_bytes) {
      page.Gauge("neighborly_node_memory_available_bytes",
                 "The node's memory.available (capacity minus working set), as the kubelet "
                 "evicts by it.",
                 {{"node", m.node}}, static_cast<double>(*m.available_bytes));
    }
    for (const MemoryThreshold& t : m.thresholds) {
      if (!t.distance_bytes) continue;
      page.Gauge("neighborly_node_memory_eviction_distance_bytes",
                 "memory.available minus the kubelet's eviction threshold; negative: crossed.",
                 {{"node", m.node}, {"threshold", t.kind}}, static_cast<double>(*t.distance_bytes));
    }
    page.Gauge("neighborly_node_oom_score_adj_mismatches",
               "Pods on the node whose oom_score_adj differs from what the kubelet sets.",
               {{"node", m.node}}, m.oom_score_adj_mismatches);
    page.Gauge("neighborly_node_memory_pods_over_request",
               "Pods on the node whose working set exceeds their memory request (evicted first).",
               {{"node", m.node}}, m.pods_over_request);
  }
  for (const auto& [node, counts] : interference.per_node) {
    page.Gauge("neighborly_node_interference_victims",
               "Latency-critical pods on the node whose CPI stays above their baseline.",
               {{"node", node}}, counts.first);
    page.Gauge("neighborly_node_interference_suspects",
               "Suspected antagonists named on the node (over its victims).", {{"node", node}},
               counts.second);
  }
}

}  // namespace neighborly::extender
