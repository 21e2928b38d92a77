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

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/quantity.h"
#include "extender/src/http/http_server.h"
#include "extender/src/placement/placement_service.h"
#include "extender/src/placement/verdict_stream.h"
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

// Issue 25: the streamed path and the calls, one model. Two cores fed the
// same reports on the same clock: one answers the plugin's calls (Filter,
// Score, Reserve), the other its Verdicts stream, read here as the plugin
// reads it (a table per shape, deltas applied, a booking's ack awaited). The
// same pod sequence goes through both; every refusal, reason, score, chosen
// node and booking must agree, before and after every booking.
class StreamedParityTest : public PlacementParityTest {
 protected:
  void SetUp() override {
    PlacementParityTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<agent::Scenario> scenario = agent::LoadScenarioFile(
        std::string(NEIGHBORLY_SOURCE_DIR) + "/deploy/examples/content-platform.yaml");
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    for (const telemetry::v1::NodeReport& node : scenario->nodes) {
      agent::SimulatedNode simulated(node, "boot-" + node.node_name());
      ASSERT_TRUE(
          stream_core_.Ingest(simulated.NextReport(clock_.Now() - absl::Seconds(1), absl::Seconds(1)))
              .ok());
    }
    absl::StatusOr<std::unique_ptr<PlacementServer>> server = PlacementServer::Start(
        stream_core_,
        {.address = "127.0.0.1:0",
         .service = {.learn_from_unauthenticated = true,
                     .verdicts_refresh = absl::Milliseconds(5)}},
        &stream_metrics_);
    ASSERT_TRUE(server.ok()) << server.status();
    stream_server_ = std::move(*server);
    stream_stub_ = pv1::Placement::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(stream_server_->port()),
                            grpc::InsecureChannelCredentials()));
    stream_context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (batching_) {
      stream_context_.AddMetadata(std::string(VerdictStream::kBatchMetadata), "1");
    }
    stream_ = stream_stub_->Verdicts(&stream_context_);
    pv1::VerdictsUpdate first;
    ASSERT_TRUE(stream_->Read(&first));
    ASSERT_TRUE(first.ready());
  }

  void TearDown() override {
    if (stream_) {
      stream_->WritesDone();
      pv1::VerdictsUpdate rest;
      while (stream_->Read(&rest)) {
      }
      EXPECT_TRUE(stream_->Finish().ok());
    }
    PlacementParityTest::TearDown();
  }

  struct Verdict {
    bool feasible = true;
    std::string reason;
    int score = 0;
    // Its second look, where it is refused softly and that passes.
    uint32_t fallback_group = 0;
    int fallback_score = 0;
    uint64_t fallback_harm = 0;
  };
  struct Table {
    bool ready = false;
    int blind_score = 0;
    std::map<std::string, Verdict> nodes;
    pv1::LeastHarm least_harm;  // the fallback's state, applied as the plugin does
  };

  // Reads one update (from the batch read last, else a new message) and
  // applies it; returns it.
  pv1::VerdictsUpdate ReadOne() {
    if (unread_.empty()) {
      pv1::VerdictsUpdate message;
      EXPECT_TRUE(stream_->Read(&message)) << "the stream ended";
      ++messages_;
      if (message.has_batch()) {
        ++batches_;
        EXPECT_GT(message.batch().updates_size(), 1) << "a batch of one is sent unwrapped";
        for (int i = message.batch().updates_size() - 1; i >= 0; --i) {
          EXPECT_FALSE(message.batch().updates(i).has_batch()) << "a nested batch";
          unread_.push_back(std::move(*message.mutable_batch()->mutable_updates(i)));
        }
      } else {
        unread_.push_back(std::move(message));
      }
    }
    pv1::VerdictsUpdate u = std::move(unread_.back());
    unread_.pop_back();
    ++updates_;
    if (!u.has_table()) return u;
    const pv1::VerdictTable& t = u.table();
    for (const auto& [id, text] : t.new_reasons()) reasons_[id] = text;
    Table& table = tables_[t.shape_id()];
    if (t.full()) {
      table.nodes.clear();
      table.ready = true;
    } else {
      deltas_ += t.verdicts_size();
    }
    table.blind_score = t.blind_score();
    if (t.has_least_harm()) {
      table.least_harm = t.least_harm();
      least_harm_states_ += t.least_harm().active() ? 1 : 0;
    } else if (t.full()) {
      table.least_harm.Clear();
    }
    for (const pv1::NodeVerdict& v : t.verdicts()) {
      if (v.removed()) {
        table.nodes.erase(v.node_name());
        continue;
      }
      table.nodes[v.node_name()] = {v.feasible(),
                                    v.reason_id() != 0 ? reasons_.at(v.reason_id()) : v.reason(),
                                    v.score(),
                                    v.fallback_group(),
                                    v.fallback_score(),
                                    v.fallback_harm_micros()};
    }
    return u;
  }

  // The shape's table, subscribed on the pod's first sight.
  const Table& TableFor(const pv1::Pod& pod) {
    // As the plugin keys shapes: not by UID or name, but by the name of a
    // pod without an owner (its workload key comes from it).
    pv1::Pod shape = pod;
    shape.clear_uid();
    if (shape.owner_references_size() > 0) shape.clear_name();
    const std::string key = shape.DebugString();
    auto [it, fresh] = shape_ids_.try_emplace(key, shape_ids_.size() + 1);
    if (fresh) {
      pv1::VerdictsRequest subscribe;
      subscribe.mutable_subscribe()->set_shape_id(it->second);
      subscribe.mutable_subscribe()->set_least_harm_state(true);
      *subscribe.mutable_subscribe()->mutable_pod() = pod;
      EXPECT_TRUE(stream_->Write(subscribe));
      while (!tables_[it->second].ready && !HasFailure()) ReadOne();
    }
    return tables_[it->second];
  }

  // Books on the stream and reads until its ack; returns whether it booked.
  bool StreamReserve(const pv1::Pod& pod, const std::string& node) {
    pv1::VerdictsRequest reserve;
    reserve.mutable_reserve()->set_booking_id(++booking_id_);
    *reserve.mutable_reserve()->mutable_pod() = pod;
    reserve.mutable_reserve()->set_node_name(node);
    EXPECT_TRUE(stream_->Write(reserve));
    for (int read = 0; read < 10'000; ++read) {
      const pv1::VerdictsUpdate u = ReadOne();
      if (u.has_ack() && u.ack().booking_id() == booking_id_) {
        EXPECT_EQ(u.ack().error(), "");
        if (u.ack().done()) {
          EXPECT_NE(u.ack().bookings_generation(), 0u);
        }
        return u.ack().done();
      }
    }
    return false;
  }

  // One pod through both paths; returns the nodes refused.
  size_t CompareStreamed(const pv1::Pod& pod) {
    SCOPED_TRACE(pod.uid());
    // As the plugin calls: Filter over every known node, Score over those
    // that passed.
    const std::map<std::string, std::string> refusals = GrpcRefusals(pod, /*with_names=*/false);
    pv1::ScoreRequest request;
    *request.mutable_pod() = pod;
    for (const std::string& n : names_) {
      if (!refusals.contains(n)) request.add_node_names(n);
    }
    pv1::ScoreResponse scores;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    EXPECT_TRUE(stub_->Score(&context, request, &scores).ok());
    EXPECT_EQ(scores.scores_size(), request.node_names_size());

    const Table& table = TableFor(pod);
    std::string best;
    int best_score = -1;
    int scored = 0;
    for (const std::string& n : names_) {
      auto it = table.nodes.find(n);
      Verdict v = it != table.nodes.end() ? it->second : Verdict{true, "", table.blind_score};
      const pv1::LeastHarm& fallback = table.least_harm;
      if (!v.feasible && fallback.active() && v.fallback_group == fallback.group() &&
          v.fallback_harm <= fallback.bound_micros()) {
        v = {true, "", v.fallback_score};
        ++fallback_passes_;
      }
      const auto refused = refusals.find(n);
      EXPECT_EQ(!v.feasible, refused != refusals.end()) << n;
      if (refused != refusals.end()) {
        EXPECT_EQ(v.reason, refused->second) << n;
        continue;
      }
      if (scored >= scores.scores_size()) break;
      const pv1::NodeScore& s = scores.scores(scored++);
      EXPECT_EQ(s.node_name(), n);
      EXPECT_EQ(v.score, s.score()) << n;
      scores_seen_.insert(s.score());
      if (s.has_telemetry() && s.score() > best_score) {
        best = n;
        best_score = s.score();
      }
    }
    if (!best.empty()) {
      // The scheduler binds where the best score is; both paths book it there.
      pv1::ReserveRequest reserve;
      *reserve.mutable_pod() = pod;
      reserve.set_node_name(best);
      pv1::ReserveResponse reserved;
      grpc::ClientContext reserve_context;
      EXPECT_TRUE(stub_->Reserve(&reserve_context, reserve, &reserved).ok());
      EXPECT_EQ(StreamReserve(pod, best), reserved.booked()) << best;
      booked_ += reserved.booked() ? 1 : 0;
    }
    std::map<std::string, int> sync_bookings, stream_bookings;
    for (const NodeSummary& n : grpc_core_.Nodes()) sync_bookings[n.name] = n.bookings;
    for (const NodeSummary& n : stream_core_.Nodes()) stream_bookings[n.name] = n.bookings;
    EXPECT_EQ(sync_bookings, stream_bookings);
    return refusals.size();
  }

  // Whether the stream asks for VerdictsBatch messages, as the plugin does.
  bool batching_ = true;
  std::vector<pv1::VerdictsUpdate> unread_;  // the rest of a batch, last first
  int messages_ = 0;                          // messages read
  int batches_ = 0;                           // of them batches
  int updates_ = 0;                           // updates read, in batches or not
  ExtenderCore stream_core_{ModelConfig(), clock_};
  PlacementMetrics stream_metrics_;
  std::unique_ptr<PlacementServer> stream_server_;
  std::unique_ptr<pv1::Placement::Stub> stream_stub_;
  grpc::ClientContext stream_context_;
  std::unique_ptr<grpc::ClientReaderWriter<pv1::VerdictsRequest, pv1::VerdictsUpdate>> stream_;
  std::map<std::string, uint64_t> shape_ids_;
  std::map<uint64_t, Table> tables_;
  std::map<uint32_t, std::string> reasons_;
  uint64_t booking_id_ = 0;
  int deltas_ = 0;
  int booked_ = 0;
  int least_harm_states_ = 0;  // tables that said the fallback passes nodes
  int fallback_passes_ = 0;    // nodes passed so

  // The pods of the seed's scenario and two more, in rounds, through both
  // paths (CompareStreamed), and what the whole sequence must have shown.
  void CompareRounds() {
    const json incoming = json::parse(ReadFile(std::string(NEIGHBORLY_SOURCE_DIR) +
                                               "/deploy/examples/content-platform-incoming.json"));
    std::vector<json> pods(incoming["pods"].begin(), incoming["pods"].end());
    ASSERT_EQ(pods.size(), 3u);
    pods.push_back(json::parse(R"({"metadata": {"uid": "u-pinned", "namespace": "shop",
        "name": "checkout-0", "labels": {"app": "checkout"},
        "ownerReferences": [{"kind": "StatefulSet", "name": "checkout", "controller": true}]},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "6", "memory": "8Gi"}}}]}})"));
    pods.push_back(json::parse(R"({"metadata": {"uid": "u-unknown", "namespace": "default",
        "name": "mystery"}, "spec": {"containers": [{"name": "c"}]}})"));
    // Rounds of replicas of every shape: each booking changes what the next
    // replicas see, through the deltas on the stream.
    size_t refusals = 0;
    for (int round = 0; round < 4; ++round) {
      for (const json& pod : pods) {
        pv1::Pod proto = ToProto(pod);
        proto.set_uid(absl::StrCat(proto.uid(), "-r", round));
        proto.set_name(absl::StrCat(proto.name(), "-r", round));
        refusals += CompareStreamed(proto);
        if (HasFailure()) return;
      }
    }
    EXPECT_GT(refusals, 3u);
    EXPECT_GE(scores_seen_.size(), 3u);
    EXPECT_GT(booked_, 4);
    EXPECT_GT(deltas_, 0) << "no booking changed a verdict: the comparison saw no deltas";
    // Some shapes fall back on this fleet: the plugin's own application
    // of the fallback's state is compared too.
    EXPECT_GT(least_harm_states_, 0) << "no table said the fallback passes nodes";
    EXPECT_GT(fallback_passes_, 0) << "no node passed by the fallback's state was compared";
    // The owned pods' replicas share their shape's table; a pod without an
    // owner is a shape of its own each round (named differently each time).
    EXPECT_LT(shape_ids_.size(), 20u);
    EXPECT_GT(shape_ids_.size(), 5u);
    EXPECT_EQ(grpc_core_.bookings(), stream_core_.bookings());
    EXPECT_EQ(stream_metrics_.requests(PlacementMethod::kVerdictsSubscribe, 0), shape_ids_.size());
    EXPECT_EQ(stream_metrics_.requests(PlacementMethod::kVerdictsReserve, 0),
              static_cast<uint64_t>(booking_id_));
  }
};

TEST_F(StreamedParityTest, SameRefusalsReasonsScoresAndBookingsStreamedAndCalled) {
  CompareRounds();
  // A booking's deltas and its ack came in one message.
  EXPECT_GT(batches_, 0);
  EXPECT_LT(messages_, updates_);
}

// A plugin that does not ask for batches reads one message per update, with
// the same verdicts.
class StreamedUnbatchedParityTest : public StreamedParityTest {
 protected:
  StreamedUnbatchedParityTest() { batching_ = false; }
};

TEST_F(StreamedUnbatchedParityTest, SameRefusalsReasonsScoresAndBookingsStreamedAndCalled) {
  CompareRounds();
  EXPECT_EQ(batches_, 0);
  EXPECT_EQ(messages_, updates_);
}

// A node whose telemetry arrives after the subscription joins the table as
// one delta; the nodes already sent are not sent again (a refresh writes only
// the verdicts that differ from what it sent).
TEST_F(StreamedParityTest, ANodeJoiningLaterArrivesAsOneDelta) {
  const json incoming = json::parse(ReadFile(std::string(NEIGHBORLY_SOURCE_DIR) +
                                             "/deploy/examples/content-platform-incoming.json"));
  const pv1::Pod pod = ToProto(incoming["pods"][0]);
  const Table& table = TableFor(pod);
  ASSERT_EQ(table.nodes.size(), 6u);
  const std::map<std::string, Verdict> before = table.nodes;

  absl::StatusOr<agent::Scenario> scenario = agent::LoadScenarioFile(
      std::string(NEIGHBORLY_SOURCE_DIR) + "/deploy/examples/content-platform.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  telemetry::v1::NodeReport node = scenario->nodes.front();
  node.set_node_name("node-joined-later");
  agent::SimulatedNode simulated(node, "boot-node-joined-later");
  ASSERT_TRUE(
      stream_core_.Ingest(simulated.NextReport(clock_.Now() - absl::Seconds(1), absl::Seconds(1)))
          .ok());
  const int deltas = deltas_;
  while (!table.nodes.contains("node-joined-later") && !HasFailure()) ReadOne();
  EXPECT_EQ(deltas_ - deltas, 1) << "only the new node's verdict travels";
  EXPECT_EQ(table.nodes.size(), 7u);
  for (const auto& [name, verdict] : before) {
    ASSERT_TRUE(table.nodes.contains(name)) << name;
    EXPECT_EQ(table.nodes.at(name).feasible, verdict.feasible) << name;
    EXPECT_EQ(table.nodes.at(name).score, verdict.score) << name;
    EXPECT_EQ(table.nodes.at(name).reason, verdict.reason) << name;
  }
}

// Several bookings in one VerdictsRequests message (what the plugin held
// back): handled in their order in one turn, their deltas and acks written
// as one message; a nested batch is ignored, a bad booking answered by name.
TEST_F(StreamedParityTest, BookingsInOneMessageAreHandledInOrderInOneTurn) {
  ASSERT_TRUE(VerdictStream::Says(stream_context_.GetServerInitialMetadata(),
                                  VerdictStream::kRequestsMetadata))
      << "the stream does not announce VerdictsRequests";

  const json incoming = json::parse(ReadFile(std::string(NEIGHBORLY_SOURCE_DIR) +
                                             "/deploy/examples/content-platform-incoming.json"));
  pv1::Pod a = ToProto(incoming["pods"][0]);
  a.set_uid("u-held-a");
  pv1::Pod b = a;
  b.set_uid("u-held-b");
  const Table& table = TableFor(a);
  ASSERT_GE(names_.size(), 2u);
  const int messages = messages_;
  const int deltas = deltas_;

  pv1::VerdictsRequest message;
  pv1::VerdictsRequests* batch = message.mutable_batch();
  auto reserve = [&](uint64_t id, const pv1::Pod& pod, const std::string& node) {
    pv1::VerdictsReserve* r = batch->add_requests()->mutable_reserve();
    r->set_booking_id(id);
    *r->mutable_pod() = pod;
    r->set_node_name(node);
  };
  reserve(1, a, names_[0]);
  reserve(2, b, names_[1]);
  // Nested: ignored, so its booking is never acked.
  pv1::VerdictsReserve* nested =
      batch->add_requests()->mutable_batch()->add_requests()->mutable_reserve();
  nested->set_booking_id(9);
  *nested->mutable_pod() = a;
  nested->set_node_name(names_[1]);
  pv1::VerdictsUnreserve* unreserve = batch->add_requests()->mutable_unreserve();
  unreserve->set_booking_id(3);
  unreserve->set_pod_uid("u-held-a");
  unreserve->set_node_name(names_[0]);
  reserve(4, b, "");  // no node: refused by name
  ASSERT_TRUE(stream_->Write(message));

  std::vector<uint64_t> acked;
  while (acked.size() < 4 && !HasFailure()) {
    const pv1::VerdictsUpdate u = ReadOne();
    if (!u.has_ack()) continue;
    acked.push_back(u.ack().booking_id());
    switch (u.ack().booking_id()) {
      case 1:
      case 2:
        EXPECT_TRUE(u.ack().done()) << u.ack().booking_id();
        break;
      case 3:
        EXPECT_TRUE(u.ack().done()) << "the unreserve after its reserve";
        break;
      case 4:
        EXPECT_FALSE(u.ack().done());
        EXPECT_EQ(u.ack().error(), "node_name is empty");
        break;
    }
  }
  EXPECT_EQ(acked, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(messages_ - messages, 1) << "one turn, one message";
  EXPECT_GT(deltas_ - deltas, 0) << "the bookings' deltas came before their acks";
  EXPECT_TRUE(unread_.empty()) << "nothing after the last ack in that turn";
  EXPECT_EQ(stream_core_.bookings(), 1u) << "b booked; a booked and released; the nested one not";
  EXPECT_EQ(stream_metrics_.requests(PlacementMethod::kVerdictsReserve, 0), 2u);
  EXPECT_TRUE(table.ready);
}

TEST_F(StreamedParityTest, BadMessagesAreRefusedByNameAndShapesAreBounded) {
  // A subscription without a pod, a booking without a node: each answered
  // with what is wrong, and the stream goes on.
  pv1::VerdictsRequest bad;
  bad.mutable_subscribe()->set_shape_id(1);
  ASSERT_TRUE(stream_->Write(bad));
  pv1::VerdictsUpdate u = ReadOne();
  ASSERT_TRUE(u.has_refused());
  EXPECT_EQ(u.refused().shape_id(), 1u);
  EXPECT_EQ(u.refused().error(), "pod is missing");
  pv1::VerdictsRequest reserve;
  reserve.mutable_reserve()->set_booking_id(5);
  reserve.mutable_reserve()->mutable_pod()->set_uid("u-1");
  ASSERT_TRUE(stream_->Write(reserve));
  do {
    u = ReadOne();
  } while (!u.has_ack() && !HasFailure());
  EXPECT_EQ(u.ack().booking_id(), 5u);
  EXPECT_FALSE(u.ack().done());
  EXPECT_EQ(u.ack().error(), "node_name is empty");
  EXPECT_EQ(stream_core_.bookings(), 0u);

  // 17 shapes (pods without an owner, named apart): the 17th drops the
  // least recently used, the first.
  uint64_t dropped = 0;
  for (int i = 1; i <= 17; ++i) {
    pv1::VerdictsRequest subscribe;
    subscribe.mutable_subscribe()->set_shape_id(100 + i);
    pv1::Pod* pod = subscribe.mutable_subscribe()->mutable_pod();
    pod->set_namespace_("default");
    pod->set_uid(absl::StrCat("u-bare-", i));
    pod->set_name(absl::StrCat("bare-", i));
    pod->add_containers()->set_name("c");
    ASSERT_TRUE(stream_->Write(subscribe));
    while (!tables_[100 + i].ready && !HasFailure()) {
      u = ReadOne();
      if (u.kind_case() == pv1::VerdictsUpdate::kDroppedShapeId) dropped = u.dropped_shape_id();
      if (u.has_refused()) {
        ADD_FAILURE() << "shape " << u.refused().shape_id() << " refused: " << u.refused().error();
        return;
      }
    }
    EXPECT_EQ(tables_[100 + i].nodes.size(), 6u);  // every node with telemetry
  }
  EXPECT_EQ(dropped, 101u);
}

}  // namespace
}  // namespace neighborly::extender
