// Both integration modes, one model: the same core state (the seed scenario's
// reports, deploy/examples/content-platform.yaml, as its simulated agents
// send them) and the same pods through real HTTP (/filter, /prioritize) and
// through real gRPC (Filter, Score) give the same refusals with the same
// reasons and the same scores. After each pod the HTTP core's prioritize
// booking is mirrored by a gRPC Reserve on the node it chose, so both cores
// go on with the same bookings; their bookings are compared too.
#include <httplib.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/quantity.h"
#include "extender/src/http/http_server.h"
#include "extender/src/placement/placement_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::extender {
namespace {

namespace pv1 = ::neighborly::placement::v1;
using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A v1.Pod (JSON) as the plugin sends it: Quantity.MilliValue() for CPU,
// .Value() for memory, unset stays unset.
void SetQuantities(const json& list, std::optional<int64_t>& cpu_millicores,
                   std::optional<int64_t>& memory_bytes) {
  if (list.contains("cpu")) {
    absl::StatusOr<int64_t> v = ParseMilliQuantity(list.at("cpu").get<std::string>());
    ASSERT_TRUE(v.ok()) << v.status();
    cpu_millicores = *v;
  }
  if (list.contains("memory")) {
    absl::StatusOr<int64_t> v = ParseByteQuantity(list.at("memory").get<std::string>());
    ASSERT_TRUE(v.ok()) << v.status();
    memory_bytes = *v;
  }
}

void AddContainers(const json& containers,
                   google::protobuf::RepeatedPtrField<pv1::Container>& out) {
  for (const json& c : containers) {
    pv1::Container* pc = out.Add();
    pc->set_name(c.value("name", ""));
    std::optional<int64_t> cpu_req, mem_req, cpu_lim, mem_lim;
    if (c.contains("resources")) {
      const json& resources = c.at("resources");
      if (resources.contains("requests")) SetQuantities(resources.at("requests"), cpu_req, mem_req);
      if (resources.contains("limits")) SetQuantities(resources.at("limits"), cpu_lim, mem_lim);
    }
    if (cpu_req) pc->set_cpu_request_millicores(*cpu_req);
    if (mem_req) pc->set_memory_request_bytes(*mem_req);
    if (cpu_lim) pc->set_cpu_limit_millicores(*cpu_lim);
    if (mem_lim) pc->set_memory_limit_bytes(*mem_lim);
  }
}

pv1::Pod ToProto(const json& pod) {
  pv1::Pod out;
  const json& meta = pod.at("metadata");
  out.set_uid(meta.value("uid", ""));
  out.set_namespace_(meta.value("namespace", ""));
  out.set_name(meta.value("name", ""));
  if (meta.contains("labels")) {
    for (const auto& [k, v] : meta.at("labels").items()) {
      (*out.mutable_labels())[k] = v.get<std::string>();
    }
  }
  if (meta.contains("annotations")) {
    for (const auto& [k, v] : meta.at("annotations").items()) {
      (*out.mutable_annotations())[k] = v.get<std::string>();
    }
  }
  if (meta.contains("ownerReferences")) {
    for (const json& ref : meta.at("ownerReferences")) {
      pv1::OwnerReference* r = out.add_owner_references();
      r->set_kind(ref.value("kind", ""));
      r->set_name(ref.value("name", ""));
      r->set_controller(ref.value("controller", false));
    }
  }
  if (pod.contains("spec")) {
    const json& spec = pod.at("spec");
    if (spec.contains("containers"))
      AddContainers(spec.at("containers"), *out.mutable_containers());
    if (spec.contains("initContainers")) {
      AddContainers(spec.at("initContainers"), *out.mutable_init_containers());
    }
  }
  if (pod.contains("status")) out.set_qos_class(pod.at("status").value("qosClass", ""));
  return out;
}

class PlacementParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<agent::Scenario> scenario = agent::LoadScenarioFile(
        std::string(NEIGHBORLY_SOURCE_DIR) + "/deploy/examples/content-platform.yaml");
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    for (const telemetry::v1::NodeReport& node : scenario->nodes) {
      agent::SimulatedNode simulated(node, "boot-" + node.node_name());
      const telemetry::v1::NodeReport report =
          simulated.NextReport(clock_.Now() - absl::Seconds(1), absl::Seconds(1));
      ASSERT_TRUE(http_core_.Ingest(report).ok());
      ASSERT_TRUE(grpc_core_.Ingest(report).ok());
      names_.push_back(node.node_name());
    }
    ASSERT_EQ(names_.size(), 6u);
    names_.push_back("node-without-telemetry");

    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    http_ = std::make_unique<HttpServer>(options, http_core_, http_metrics_);
    absl::StatusOr<int> port = http_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_read_timeout(20, 0);

    absl::StatusOr<std::unique_ptr<PlacementServer>> server = PlacementServer::Start(
        grpc_core_,
        // Both paths teach (the HTTP core's default), so they also learn alike.
        {.address = "127.0.0.1:0", .service = {.learn_from_unauthenticated = true}}, nullptr);
    ASSERT_TRUE(server.ok()) << server.status();
    placement_ = std::move(*server);
    stub_ = pv1::Placement::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(placement_->port()), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    client_.reset();
    if (http_) http_->Stop();
  }

  json Post(const std::string& path, const json& pod) {
    const json body = {{"Pod", pod}, {"NodeNames", names_}};
    httplib::Result r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }

  std::map<std::string, std::string> GrpcRefusals(const pv1::Pod& pod, bool with_names) {
    pv1::FilterRequest request;
    *request.mutable_pod() = pod;
    if (with_names) {
      for (const std::string& n : names_) request.add_node_names(n);
    }
    pv1::FilterResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    const grpc::Status s = stub_->Filter(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.nodes_judged(), with_names ? names_.size() : names_.size() - 1);
    std::map<std::string, std::string> out;
    for (const pv1::NodeRefusal& r : response.refused()) out[r.node_name()] = r.reason();
    return out;
  }

  // Compares one pod on both paths; returns how many nodes were refused.
  size_t Compare(const json& pod) {
    const std::string uid = pod["metadata"].value("uid", "");
    SCOPED_TRACE(uid);
    const pv1::Pod proto = ToProto(pod);

    const json filtered = Post("/filter", pod);
    std::map<std::string, std::string> http_refusals;
    for (const auto& [node, reason] : filtered["FailedNodes"].items()) {
      http_refusals[node] = reason.get<std::string>();
    }
    EXPECT_EQ(GrpcRefusals(proto, /*with_names=*/false), http_refusals);
    EXPECT_EQ(GrpcRefusals(proto, /*with_names=*/true), http_refusals);

    pv1::ScoreRequest request;
    *request.mutable_pod() = proto;
    for (const std::string& n : names_) request.add_node_names(n);
    pv1::ScoreResponse scores;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    EXPECT_TRUE(stub_->Score(&context, request, &scores).ok());
    const json prioritized = Post("/prioritize", pod);
    EXPECT_EQ(prioritized.size(), names_.size());
    EXPECT_EQ(static_cast<size_t>(scores.scores_size()), names_.size());
    for (size_t i = 0; i < names_.size() && i < prioritized.size() &&
                       i < static_cast<size_t>(scores.scores_size());
         ++i) {
      EXPECT_EQ(prioritized[i]["Host"], names_[i]);
      EXPECT_EQ(scores.scores(static_cast<int>(i)).node_name(), names_[i]);
      EXPECT_EQ(scores.scores(static_cast<int>(i)).score(), prioritized[i]["Score"].get<int>())
          << names_[i];
      scores_seen_.insert(scores.scores(static_cast<int>(i)).score());
    }

    // The scheduler binds where /prioritize booked; the plugin reserves there.
    const std::vector<DecisionRecord> decisions = http_core_.Decisions(uid, 1);
    EXPECT_EQ(decisions.size(), 1u);
    if (!decisions.empty() && !decisions[0].booked_node.empty()) {
      pv1::ReserveRequest reserve;
      *reserve.mutable_pod() = proto;
      reserve.set_node_name(decisions[0].booked_node);
      pv1::ReserveResponse reserved;
      grpc::ClientContext reserve_context;
      EXPECT_TRUE(stub_->Reserve(&reserve_context, reserve, &reserved).ok());
      EXPECT_TRUE(reserved.booked());
    }
    std::map<std::string, int> http_bookings, grpc_bookings;
    for (const NodeSummary& n : http_core_.Nodes()) http_bookings[n.name] = n.bookings;
    for (const NodeSummary& n : grpc_core_.Nodes()) grpc_bookings[n.name] = n.bookings;
    EXPECT_EQ(http_bookings, grpc_bookings);
    return http_refusals.size();
  }

  FakeClock clock_{absl::FromUnixSeconds(1'790'000'000)};
  // The HTTP path's scheduler binds where /prioritize guessed (as the plugin
  // reserves there), so its pinned guesses are right: no pod is assumed elsewhere.
  static ModelConfig GuessesAreRight() {
    ModelConfig c;
    c.interference.pinned_guesses_elsewhere = false;
    return c;
  }
  ExtenderCore http_core_{GuessesAreRight(), clock_};
  ExtenderCore grpc_core_{ModelConfig(), clock_};
  ExtenderMetrics http_metrics_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<httplib::Client> client_;
  std::unique_ptr<PlacementServer> placement_;
  std::unique_ptr<pv1::Placement::Stub> stub_;
  std::vector<std::string> names_;
  std::set<int> scores_seen_;
};

TEST_F(PlacementParityTest, SameRefusalsReasonsAndScoresOnBothPaths) {
  const json incoming = json::parse(ReadFile(std::string(NEIGHBORLY_SOURCE_DIR) +
                                             "/deploy/examples/content-platform-incoming.json"));
  std::vector<json> pods(incoming["pods"].begin(), incoming["pods"].end());
  ASSERT_EQ(pods.size(), 3u);  // the demo's batch job, article service, indexer replica
  // A pinned Guaranteed pod without a status (QoS derived) and without a declared class.
  pods.push_back(json::parse(R"({"metadata": {"uid": "u-pinned", "namespace": "shop",
      "name": "checkout-0", "labels": {"app": "checkout"},
      "ownerReferences": [{"kind": "StatefulSet", "name": "checkout", "controller": true}]},
      "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "6", "memory": "8Gi"}}}],
               "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"},
                                   "limits": {"cpu": "1", "memory": "1Gi"}}}]}})"));
  // A pod nobody knows anything about: no labels, no requests.
  pods.push_back(json::parse(R"({"metadata": {"uid": "u-unknown", "namespace": "default",
      "name": "mystery"}, "spec": {"containers": [{"name": "c"}]}})"));
  // A second latency-critical replica, after the first one's booking.
  json second = pods[1];
  second["metadata"]["uid"] = "6f1c0e1a-0000-4000-8000-0000000000b2";
  second["metadata"]["name"] = "article-service-5d8f7-zz9x1";
  pods.push_back(second);

  size_t refusals = 0;
  for (const json& pod : pods) refusals += Compare(pod);
  // Not a comparison of empty answers: nodes were refused and scores differ.
  EXPECT_GT(refusals, 3u);
  EXPECT_GE(scores_seen_.size(), 3u);
  EXPECT_GT(http_core_.bookings(), 0u);
  EXPECT_EQ(http_core_.bookings(), grpc_core_.bookings());
}

}  // namespace
}  // namespace neighborly::extender
