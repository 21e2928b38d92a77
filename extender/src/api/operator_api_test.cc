#include "extender/src/api/operator_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "extender/src/http/http_server.h"
#include "extender/src/http/testing/fake_decider.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class FakeSource final : public OperatorSource {
 public:
  FakeSource() {
    NodeSummary n;
    n.name = "node-1";
    n.telemetry_age = absl::Seconds(2);
    n.confidence = 1;
    n.contention_score = 0.91;
    n.sequence = 42;
    n.agent_version = "0.1.0";
    n.capabilities = {{"resctrl_occupancy", "available"}, {"perf", "EACCES on perf_event_open"}};
    n.cpu_manager_policy = "static";
    n.topology_manager_policy = "single-numa-node";
    n.l3_domains = {{0, 0, 26214400, 22000000, 0.84}, {1, 1, 26214400, std::nullopt, 0.1}};
    NumaNodeSummary numa;
    numa.id = 0;
    numa.cpus = "0-7";
    numa.membw_utilisation = 0.9;
    n.numa_nodes = {numa};
    n.pods_by_class = {{"batch", 1}, {"latency-critical", 1}};
    n.aggressors = {"analytics/scan-1"};
    PodSummary pod;
    pod.uid = "u1";
    pod.namespace_name = "content";
    pod.name = "article-service";
    pod.contention_class = "latency-critical";
    pod.llc_occupancy_bytes = 19188940;
    pod.unavailable = {{"ipc", "perf counters unavailable"}};
    n.pods = {pod};
    node_ = n;
    NodeSummary quiet;
    quiet.name = "node \"2\"";
    quiet.telemetry_age = absl::InfiniteDuration();
    quiet_ = quiet;
    DecisionRecord r;
    r.at = absl::FromUnixSeconds(1'700'000'000);
    r.verb = "filter";
    r.candidates = 500;
    r.pod_uid = "u9";
    r.pod = "analytics/scan-2";
    r.contention_class = "batch";
    r.class_source = "label-rule";
    NodeDecision d;
    d.feasible = false;
    d.reason = "isolation: batch pod would run beside latency-critical content/article-service";
    d.has_telemetry = true;
    d.l3_pressure = 0.8;
    r.nodes = {{"node-1", d}};
    record_ = r;
  }
  std::vector<NodeSummary> Nodes() const override {
    NodeSummary n = node_;
    n.pods.clear();
    return {n, quiet_};
  }
  std::optional<NodeSummary> Node(std::string_view name) const override {
    if (name == node_.name) return node_;
    return std::nullopt;
  }
  std::vector<DecisionRecord> Decisions(std::string_view pod, size_t limit) const override {
    last_limit = limit;
    if (pod == "u9" || pod == "analytics/scan-2" || pod == "scan-2") return {record_};
    return {};
  }
  IngestStats Ingest() const override { return {7, 2, 3}; }
  std::vector<WorkloadView> Workloads() const override { return {workload_}; }
  std::optional<WorkloadView> Workload(std::string_view key) const override {
    if (key == workload_.key) return workload_;
    return std::nullopt;
  }
  WorkloadCounts WorkloadCountsNow() const override { return {1, 10000, 17}; }

  mutable size_t last_limit = 0;
  WorkloadView workload_ = [] {
    WorkloadView w;
    w.key = "analytics/Deployment/event-scan";
    w.prediction.windows = 412;
    w.prediction.confidence = 1;
    w.prediction.replicas = 3;
    w.prediction.nodes = 3;
    w.prediction.membw_bytes_per_second = 21.8e9;
    w.prediction.llc_demand_bytes = 31.4e6;
    w.prediction.cache_sensitivity = 0.05;
    w.prediction.fit_confidence = 0.7;
    w.prediction.aggressor = true;
    w.prediction.aggressor_why = "recent peak membw 44% of its NUMA node's peak";
    w.metrics[static_cast<int>(WorkloadMetric::kMembw)] =
        WorkloadMetricSummary{21.1e9, 21.8e9, 412};
    w.last_update = absl::FromUnixSeconds(1'700'000'000);
    w.aggressor_since = absl::InfinitePast();
    return w;
  }();

 private:
  NodeSummary node_, quiet_;
  DecisionRecord record_;
};

class OperatorApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, decider_, metrics_);
    RegisterOperatorApi(server_->routes(), source_, metrics_, [this] { return not_ready_; });
    absl::StatusOr<int> port = server_->Start();
    ASSERT_TRUE(port.ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  void TearDown() override { server_->Stop(); }
  nlohmann::json GetJson(const std::string& path, int want_status) {
    httplib::Result r = client_->Get(path.c_str());
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, want_status) << path << " " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    return nlohmann::json::parse(r->body);
  }

  FakeDecider decider_;
  ExtenderMetrics metrics_;
  FakeSource source_;
  std::string not_ready_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(OperatorApiTest, HealthAndReadiness) {
  EXPECT_EQ(GetJson("/healthz", 200)["status"], "ok");
  EXPECT_EQ(GetJson("/readyz", 200)["ready"], true);
  not_ready_ = "state file not loaded yet";
  const nlohmann::json j = GetJson("/readyz", 503);
  EXPECT_EQ(j["ready"], false);
  EXPECT_EQ(j["reason"], "state file not loaded yet");
}

TEST_F(OperatorApiTest, NodesListsSummariesWithoutPods) {
  const nlohmann::json nodes = GetJson("/v1/nodes", 200);
  ASSERT_EQ(nodes.size(), 2u);
  const nlohmann::json& n = nodes[0];
  EXPECT_EQ(n["name"], "node-1");
  EXPECT_DOUBLE_EQ(n["contentionScore"].get<double>(), 0.91);
  EXPECT_DOUBLE_EQ(n["telemetryAgeSeconds"].get<double>(), 2);
  EXPECT_EQ(n["l3Domains"][0]["occupancyBytes"], 22000000);
  EXPECT_TRUE(n["l3Domains"][1]["occupancyBytes"].is_null());
  EXPECT_DOUBLE_EQ(n["numaNodes"][0]["membwUtilisation"].get<double>(), 0.9);
  EXPECT_EQ(n["podsByClass"]["batch"], 1);
  EXPECT_EQ(n["aggressors"][0], "analytics/scan-1");
  EXPECT_EQ(n["capabilities"]["perf"], "EACCES on perf_event_open");
  EXPECT_FALSE(n.contains("pods"));
  EXPECT_TRUE(nodes[1]["telemetryAgeSeconds"].is_null());
}

TEST_F(OperatorApiTest, NodeDetailHasPodsAndUnknownIs404) {
  const nlohmann::json n = GetJson("/v1/nodes/node-1", 200);
  ASSERT_EQ(n["pods"].size(), 1u);
  EXPECT_EQ(n["pods"][0]["name"], "article-service");
  EXPECT_EQ(n["pods"][0]["llcOccupancyBytes"], 19188940);
  EXPECT_TRUE(n["pods"][0]["ipc"].is_null());
  EXPECT_EQ(n["pods"][0]["unavailable"]["ipc"], "perf counters unavailable");
  const nlohmann::json missing = GetJson("/v1/nodes/nope", 404);
  EXPECT_THAT(missing["Error"].get<std::string>(), HasSubstr("unknown node \"nope\""));
}

TEST_F(OperatorApiTest, DecisionsExplainTerms) {
  const nlohmann::json records = GetJson("/v1/decisions?pod=analytics/scan-2&limit=5", 200);
  EXPECT_EQ(source_.last_limit, 5u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["verb"], "filter");
  EXPECT_EQ(records[0]["at"], "2023-11-14T22:13:20Z");
  const nlohmann::json& node = records[0]["nodes"][0];
  EXPECT_EQ(node["node"], "node-1");
  EXPECT_EQ(node["feasible"], false);
  EXPECT_THAT(node["reason"].get<std::string>(), HasSubstr("isolation"));
  EXPECT_FALSE(node["terms"].empty());
  // The request named more nodes than the record kept: the rest are counted.
  EXPECT_EQ(records[0]["candidates"], 500);
  EXPECT_EQ(records[0]["omittedNodes"], 500 - records[0]["nodes"].size());
  EXPECT_EQ(GetJson("/v1/decisions?pod=nobody", 200).size(), 0u);
  EXPECT_THAT(GetJson("/v1/decisions", 400)["Error"].get<std::string>(), HasSubstr("pod"));
  EXPECT_THAT(GetJson("/v1/decisions?pod=x&limit=0", 400)["Error"].get<std::string>(),
              HasSubstr("limit"));
}

TEST_F(OperatorApiTest, WorkloadsListOneAndUnknownIs404) {
  const nlohmann::json list = GetJson("/v1/workloads", 200);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["workload"], "analytics/Deployment/event-scan");
  EXPECT_EQ(list[0]["replicas"], 3);
  EXPECT_EQ(list[0]["aggressor"], true);
  EXPECT_DOUBLE_EQ(list[0]["metrics"]["membw_total_bytes_per_second"]["p95"].get<double>(), 21.8e9);
  EXPECT_DOUBLE_EQ(list[0]["predictedMembwBytesPerSecond"].get<double>(), 21.8e9);
  EXPECT_FALSE(list[0].contains("aggressorSince"));
  const nlohmann::json one = GetJson("/v1/workloads/analytics/Deployment/event-scan", 200);
  EXPECT_EQ(one["windows"], 412.0);
  // Issue 22: the fit, and absent what it has no evidence for.
  EXPECT_DOUBLE_EQ(one["interference"]["llcDemandBytes"].get<double>(), 31.4e6);
  EXPECT_DOUBLE_EQ(one["interference"]["cacheSensitivity"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(one["interference"]["fitConfidence"].get<double>(), 0.7);
  EXPECT_FALSE(one["interference"].contains("baselineIpc"));
  const nlohmann::json missing = GetJson("/v1/workloads/analytics/Deployment/nope", 404);
  EXPECT_THAT(missing["Error"].get<std::string>(),
              HasSubstr("unknown workload \"analytics/Deployment/nope\""));
  httplib::Result r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_THAT(r->body, HasSubstr("neighborly_workload_profiles 1\n"));
  EXPECT_THAT(r->body, HasSubstr("neighborly_workload_predictions_total 17\n"));
}

TEST_F(OperatorApiTest, MetricsArePrometheusText) {
  ASSERT_TRUE(client_->Post("/filter", R"({"Pod":{},"NodeNames":["node-1"]})", "application/json"));
  httplib::Result r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const std::string& text = r->body;
  EXPECT_THAT(text, HasSubstr(R"(neighborly_node_contention_score{node="node-1"} 0.91)"));
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_node_l3_pressure_ratio{node="node-1",l3_domain="0"} 0.84)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(neighborly_node_membw_utilization_ratio{node="node-1",numa_node="0"} 0.9)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_node_telemetry_age_seconds{node="node-1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_node_pods{node="node-1",class="batch"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_node_contention_score{node="node \"2\""} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_ingest_reports_total{result="accepted"} 7)"));
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_extender_http_requests_total{verb="filter",code="200"} 1)"));
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(neighborly_extender_http_request_duration_seconds_bucket{verb="filter",le="+Inf"} 1)"));

  // promtool, where installed, is the judge of the format.
  const std::string path = std::string(NEIGHBORLY_BINARY_DIR) + "/operator_api_test.metrics";
  { std::ofstream(path) << text; }
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string command = "promtool check metrics < " + path + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buf[512];
    while (fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
    const int rc = pclose(pipe);
    EXPECT_EQ(rc, 0) << output;
  }
  std::remove(path.c_str());
}

// metrics.perNodeSeries: off leaves only the fleet aggregates, which are
// there either way.
TEST_F(OperatorApiTest, PerNodeSeriesSwitchKeepsTheFleetAggregates) {
  // The served page (which also waits for the server to listen: a fixture
  // torn down before that never stops).
  httplib::Result r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  const std::string with = r->body;
  const std::string without =
      RenderMetrics(source_, metrics_, {.per_node_series = false, .append = {}});
  for (const std::string* text : {&with, &without}) {
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_nodes{telemetry=\"fresh\"} 1\n"));
    // The quiet node has confidence 0: stale.
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_nodes{telemetry=\"stale\"} 1\n"));
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_max_contention_score 0.91\n"));
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_max_l3_pressure_ratio 0.84\n"));
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_max_membw_utilization_ratio 0.9\n"));
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_max_telemetry_age_seconds 2\n"));
    EXPECT_THAT(*text, HasSubstr("neighborly_fleet_pods{class=\"batch\"} 1\n"));
  }
  EXPECT_THAT(with, HasSubstr("# TYPE neighborly_node_contention_score gauge\n"));
  EXPECT_THAT(with, HasSubstr("# TYPE neighborly_node_membw_utilization_ratio gauge\n"));
  EXPECT_THAT(without, Not(HasSubstr("# TYPE neighborly_node_")));
  EXPECT_THAT(without, Not(HasSubstr("\nneighborly_node_")));
  // The binary's own families come through `append`.
  const std::string appended = RenderMetrics(
      source_, metrics_, {.per_node_series = true, .append = [](PrometheusWriter& page) {
                            page.Counter("extra_total", "Extra.", {}, 3);
                          }});
  EXPECT_THAT(appended, HasSubstr("# TYPE extra_total counter\nextra_total 3\n"));
}

}  // namespace
}  // namespace neighborly::extender
