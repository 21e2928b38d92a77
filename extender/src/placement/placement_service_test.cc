// The placement service over real gRPC on loopback: every RPC, bad input,
// expired deadlines, unknown nodes, bookings that Reserve makes and Unreserve
// takes back, metrics, the decision log, and mutual TLS.
#include "extender/src/placement/placement_service.h"

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "extender/src/ingest/transport_security.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::neighborly::testing::TestPki;
using testing::AddPod;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TwoSocketNode;
namespace pv1 = ::neighborly::placement::v1;
namespace tv1 = ::neighborly::telemetry::v1;

pv1::Pod BatchPod(const std::string& uid) {
  pv1::Pod pod;
  pod.set_uid(uid);
  pod.set_namespace_("analytics");
  pod.set_name("scan-" + uid);
  (*pod.mutable_labels())["workload-type"] = "batch";
  pv1::Container* c = pod.add_containers();
  c->set_cpu_request_millicores(2000);
  c->set_memory_request_bytes(4ll << 30);
  return pod;
}

pv1::Pod LatencyCriticalPod(const std::string& uid) {
  pv1::Pod pod;
  pod.set_uid(uid);
  pod.set_namespace_("content");
  pod.set_name("article-" + uid);
  (*pod.mutable_annotations())["neighborly.io/class"] = "latency-critical";
  pv1::Container* c = pod.add_containers();
  c->set_cpu_request_millicores(2000);
  c->set_cpu_limit_millicores(2000);
  c->set_memory_request_bytes(2ll << 30);
  c->set_memory_limit_bytes(2ll << 30);
  return pod;
}

std::vector<std::string> RefusedNodes(const pv1::FilterResponse& r) {
  std::vector<std::string> out;
  for (const pv1::NodeRefusal& refusal : r.refused()) out.push_back(refusal.node_name());
  return out;
}

class PlacementServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // node-1 runs a latency-critical service, node-2 a batch job, node-3 nothing.
    tv1::NodeReport n1 = TwoSocketNode("node-1");
    AddPod(n1, {.uid = "article-1",
                .namespace_name = "content",
                .name = "article-1",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .annotations = {{"neighborly.io/class", "latency-critical"}},
                .cpu_request_millicores = 2000,
                .memory_request_bytes = 4ull << 30,
                .exclusive_cpus = "2-3"});
    tv1::NodeReport n2 = TwoSocketNode("node-2");
    AddPod(n2, {.uid = "batch-1",
                .namespace_name = "analytics",
                .name = "event-scan-1",
                .labels = {{"workload-type", "batch"}},
                .cpu_request_millicores = 4000});
    for (const tv1::NodeReport& r : {n1, n2, TwoSocketNode("node-3")}) {
      ASSERT_TRUE(core_.Ingest(r).ok());
    }
  }

  void Start(PlacementService::Options service = {},
             std::shared_ptr<grpc::ServerCredentials> credentials = nullptr) {
    absl::StatusOr<std::unique_ptr<PlacementServer>> server = PlacementServer::Start(
        core_, {.address = "127.0.0.1:0", .credentials = credentials, .service = service},
        &metrics_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    Connect(grpc::InsecureChannelCredentials());
  }

  void Connect(const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = pv1::Placement::NewStub(grpc::CreateCustomChannel(
        "localhost:" + std::to_string(server_->port()), credentials, args));
  }

  static void Deadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  }

  // A Filter request; the flags as the plugin's windowed calls set them.
  static pv1::FilterRequest FilterRequestFor(const pv1::Pod& pod,
                                             const std::vector<std::string>& names,
                                             bool with_scores = false,
                                             bool scores_in_order = false) {
    pv1::FilterRequest request;
    *request.mutable_pod() = pod;
    for (const std::string& n : names) request.add_node_names(n);
    request.set_with_scores(with_scores);
    request.set_scores_in_order(scores_in_order);
    return request;
  }

  grpc::Status Filter(const pv1::FilterRequest& request, pv1::FilterResponse& response) {
    grpc::ClientContext context;
    Deadline(context);
    return stub_->Filter(&context, request, &response);
  }

  grpc::Status Filter(const pv1::Pod& pod, std::vector<std::string> names,
                      pv1::FilterResponse& response) {
    return Filter(FilterRequestFor(pod, names), response);
  }

  pv1::FilterResponse FilterOk(const pv1::FilterRequest& request) {
    pv1::FilterResponse response;
    const grpc::Status s = Filter(request, response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  pv1::FilterResponse FilterOk(const pv1::Pod& pod, std::vector<std::string> names = {}) {
    return FilterOk(FilterRequestFor(pod, names));
  }

  pv1::ScoreResponse ScoreOk(const pv1::Pod& pod, const std::vector<std::string>& names) {
    pv1::ScoreRequest request;
    *request.mutable_pod() = pod;
    for (const std::string& n : names) request.add_node_names(n);
    pv1::ScoreResponse response;
    grpc::ClientContext context;
    Deadline(context);
    const grpc::Status s = stub_->Score(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response;
  }

  grpc::Status Reserve(const pv1::Pod& pod, const std::string& node, bool* booked = nullptr) {
    pv1::ReserveRequest request;
    *request.mutable_pod() = pod;
    request.set_node_name(node);
    pv1::ReserveResponse response;
    grpc::ClientContext context;
    Deadline(context);
    grpc::Status s = stub_->Reserve(&context, request, &response);
    if (booked != nullptr) *booked = response.booked();
    return s;
  }

  grpc::Status Unreserve(const std::string& uid, const std::string& node, bool* released) {
    pv1::UnreserveRequest request;
    request.set_pod_uid(uid);
    request.set_node_name(node);
    pv1::UnreserveResponse response;
    grpc::ClientContext context;
    Deadline(context);
    grpc::Status s = stub_->Unreserve(&context, request, &response);
    *released = response.released();
    return s;
  }

  FakeClock clock_;
  ExtenderCore core_{PressureModelConfig(), clock_};  // strict isolation: refusals to assert
  PlacementMetrics metrics_;
  std::unique_ptr<PlacementServer> server_;
  std::unique_ptr<pv1::Placement::Stub> stub_;
};

TEST_F(PlacementServiceTest, FilterWithoutNamesJudgesEveryKnownNodeAndAnswersOnlyRefusals) {
  Start();
  const pv1::FilterResponse batch = FilterOk(BatchPod("b-1"));
  EXPECT_EQ(batch.nodes_judged(), 3u);
  EXPECT_THAT(RefusedNodes(batch), ElementsAre("node-1"));
  EXPECT_THAT(batch.refused(0).reason(), HasSubstr("latency-critical"));
  const pv1::FilterResponse lc = FilterOk(LatencyCriticalPod("lc-1"));
  EXPECT_EQ(lc.nodes_judged(), 3u);
  EXPECT_THAT(RefusedNodes(lc), ElementsAre("node-2"));
}

TEST_F(PlacementServiceTest, FilterWithNamesJudgesOnlyThoseAndPassesUnknownNodes) {
  Start();
  const pv1::FilterResponse r =
      FilterOk(LatencyCriticalPod("lc-1"), {"node-3", "node-2", "node-without-telemetry"});
  EXPECT_EQ(r.nodes_judged(), 3u);
  EXPECT_THAT(RefusedNodes(r), ElementsAre("node-2"));
}

TEST_F(PlacementServiceTest, ScoreAnswersEveryNodeInOrderAndBooksNothing) {
  Start();
  pv1::ScoreRequest request;
  *request.mutable_pod() = BatchPod("b-1");
  for (const char* n : {"node-3", "node-without-telemetry", "node-1"}) request.add_node_names(n);
  pv1::ScoreResponse response;
  grpc::ClientContext context;
  Deadline(context);
  ASSERT_TRUE(stub_->Score(&context, request, &response).ok());
  ASSERT_EQ(response.scores_size(), 3);
  EXPECT_EQ(response.scores(0).node_name(), "node-3");
  EXPECT_TRUE(response.scores(0).has_telemetry());
  EXPECT_EQ(response.scores(1).node_name(), "node-without-telemetry");
  EXPECT_FALSE(response.scores(1).has_telemetry());
  EXPECT_EQ(response.scores(1).score(), 5);  // neutral
  EXPECT_EQ(response.scores(2).node_name(), "node-1");
  for (const pv1::NodeScore& s : response.scores()) {
    EXPECT_GE(s.score(), 0);
    EXPECT_LE(s.score(), 10);
  }
  // The empty node beats the one with a latency-critical resident.
  EXPECT_GT(response.scores(0).score(), response.scores(2).score());
  EXPECT_EQ(core_.bookings(), 0u);
}

// The plugin's windowed Filter asks for the feasible nodes' scores with the
// verdicts: the same scores Score answers, none for a refused node, and none
// unless asked.
TEST_F(PlacementServiceTest, FilterWithScoresAnswersTheFeasibleNodesScoresAsScoreDoes) {
  Start();
  const std::vector<std::string> names = {"node-3", "node-1", "node-2", "node-without-telemetry"};
  const pv1::FilterResponse filtered =
      FilterOk(FilterRequestFor(BatchPod("b-1"), names, /*with_scores=*/true));
  EXPECT_THAT(RefusedNodes(filtered), ElementsAre("node-1"));
  const pv1::ScoreResponse scored =
      ScoreOk(BatchPod("b-1"), {"node-3", "node-2", "node-without-telemetry"});
  ASSERT_EQ(filtered.scores_size(), 3);
  ASSERT_EQ(scored.scores_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(filtered.scores(i).node_name(), scored.scores(i).node_name());
    EXPECT_EQ(filtered.scores(i).score(), scored.scores(i).score()) << scored.scores(i).node_name();
    EXPECT_DOUBLE_EQ(filtered.scores(i).cost(), scored.scores(i).cost());
    EXPECT_EQ(filtered.scores(i).has_telemetry(), scored.scores(i).has_telemetry());
  }
  EXPECT_EQ(FilterOk(BatchPod("b-2"), names).scores_size(), 0);
}

// Asked for scores in order (the plugin's windowed Filter): one byte per
// requested name, the score Score answers where feasible, 255 where refused,
// and no NodeScore messages; without node names (the whole fleet) the field
// does not apply and nothing is answered in it.
TEST_F(PlacementServiceTest, FilterWithScoresInOrderAnswersOneBytePerNode) {
  Start();
  const std::vector<std::string> names = {"node-3", "node-1", "node-2", "node-without-telemetry"};
  const pv1::FilterResponse filtered = FilterOk(
      FilterRequestFor(BatchPod("b-1"), names, /*with_scores=*/true, /*scores_in_order=*/true));
  EXPECT_THAT(RefusedNodes(filtered), ElementsAre("node-1"));
  EXPECT_EQ(filtered.scores_size(), 0);
  ASSERT_EQ(filtered.scores_in_order().size(), names.size());
  const pv1::ScoreResponse scored = ScoreOk(BatchPod("b-1"), names);
  ASSERT_EQ(scored.scores_size(), 4);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto byte = static_cast<unsigned char>(filtered.scores_in_order()[i]);
    if (names[i] == "node-1") {
      EXPECT_EQ(byte, 255) << names[i];
    } else {
      EXPECT_EQ(byte, scored.scores(static_cast<int>(i)).score()) << names[i];
    }
  }
  const pv1::FilterResponse whole = FilterOk(
      FilterRequestFor(BatchPod("b-2"), {}, /*with_scores=*/true, /*scores_in_order=*/true));
  EXPECT_TRUE(whole.scores_in_order().empty());
}

TEST_F(PlacementServiceTest, ReserveThenUnreserveChangesTheNextDecision) {
  Start();
  EXPECT_THAT(RefusedNodes(FilterOk(BatchPod("b-1"))), ElementsAre("node-1"));
  bool booked = false;
  ASSERT_TRUE(Reserve(LatencyCriticalPod("lc-new"), "node-3", &booked).ok());
  EXPECT_TRUE(booked);
  EXPECT_EQ(core_.bookings(), 1u);
  const pv1::FilterResponse after = FilterOk(BatchPod("b-2"));
  EXPECT_THAT(RefusedNodes(after), ElementsAre("node-1", "node-3"));
  EXPECT_THAT(after.refused(1).reason(),
              HasSubstr("in-flight latency-critical pod content/article-lc-new"));

  // The same pod reserved elsewhere moves its booking: exactly one, on node-2.
  ASSERT_TRUE(Reserve(LatencyCriticalPod("lc-new"), "node-2", &booked).ok());
  EXPECT_TRUE(booked);
  EXPECT_EQ(core_.bookings(), 1u);
  EXPECT_THAT(RefusedNodes(FilterOk(BatchPod("b-3"))), ElementsAre("node-1", "node-2"));

  bool released = false;
  ASSERT_TRUE(Unreserve("lc-new", "node-3", &released).ok());
  EXPECT_FALSE(released);  // not booked there any more
  ASSERT_TRUE(Unreserve("lc-new", "node-2", &released).ok());
  EXPECT_TRUE(released);
  EXPECT_EQ(core_.bookings(), 0u);
  EXPECT_THAT(RefusedNodes(FilterOk(BatchPod("b-4"))), ElementsAre("node-1"));
  ASSERT_TRUE(Unreserve("lc-new", "node-2", &released).ok());
  EXPECT_FALSE(released);

  // Each call is in the decision log under its placement verb.
  std::vector<std::string> verbs;
  for (const DecisionRecord& r : core_.Decisions("lc-new", 10)) verbs.push_back(r.verb);
  // (The two Unreserve calls that found nothing are logged too, by UID only.)
  EXPECT_THAT(verbs, ElementsAre("placement.unreserve", "placement.unreserve",
                                 "placement.unreserve", "placement.reserve", "placement.reserve"));
  const std::vector<DecisionRecord> latest = core_.Decisions("content/article-lc-new", 10);
  ASSERT_FALSE(latest.empty());
  EXPECT_EQ(latest.front().released_node, "node-2");
  EXPECT_EQ(latest[1].booked_node, "node-2");
  ASSERT_EQ(latest[1].nodes.size(), 1u);
  EXPECT_EQ(latest[1].nodes[0].node, "node-2");
  EXPECT_EQ(core_.Decisions("b-1", 1).at(0).verb, "placement.filter");
}

TEST_F(PlacementServiceTest, ReserveOfAPinnedPodTakesItsCoresOnThatNode) {
  Start();
  // node-3 has 8 + 8 CPUs; each reservation of a 6-CPU Guaranteed pod pins it
  // to one NUMA node, so the third cannot fit on either (single-numa-node).
  pv1::Pod pinned = LatencyCriticalPod("p");
  pinned.mutable_annotations()->clear();
  pv1::Container* c = pinned.mutable_containers(0);
  c->set_cpu_request_millicores(6000);
  c->set_cpu_limit_millicores(6000);
  for (const char* uid : {"pin-1", "pin-2"}) {
    pinned.set_uid(uid);
    bool booked = false;
    ASSERT_TRUE(Reserve(pinned, "node-3", &booked).ok());
    EXPECT_TRUE(booked);
  }
  pinned.set_uid("pin-3");
  const pv1::FilterResponse r = FilterOk(pinned, {"node-3"});
  EXPECT_THAT(RefusedNodes(r), ElementsAre("node-3"));
  // Reserving pin-2 again does not count its own earlier booking.
  pinned.set_uid("pin-2");
  bool booked = false;
  ASSERT_TRUE(Reserve(pinned, "node-3", &booked).ok());
  EXPECT_TRUE(booked);
  EXPECT_EQ(core_.bookings(), 2u);
  const std::vector<DecisionRecord> d = core_.Decisions("pin-2", 1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].nodes.size(), 1u);
  EXPECT_TRUE(d[0].nodes[0].decision.feasible) << d[0].nodes[0].decision.reason;
}

TEST_F(PlacementServiceTest, ReserveOnANodeWithoutTelemetryBooksNothingAndDropsTheOldBooking) {
  Start();
  bool booked = false;
  ASSERT_TRUE(Reserve(LatencyCriticalPod("lc-new"), "node-3", &booked).ok());
  EXPECT_EQ(core_.bookings(), 1u);
  ASSERT_TRUE(Reserve(LatencyCriticalPod("lc-new"), "node-unknown", &booked).ok());
  EXPECT_FALSE(booked);
  EXPECT_EQ(core_.bookings(), 0u);
  EXPECT_EQ(core_.node_count(), 3u);  // no node was made up
}

TEST_F(PlacementServiceTest, BadInputIsRefusedNamingTheProblemAndChangesNothing) {
  Start({.limits = {.max_node_names = 2}});
  pv1::FilterResponse filter;
  grpc::Status s = Filter(pv1::Pod(), {}, filter);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("pod.uid is empty"));
  {
    pv1::FilterRequest request;
    grpc::ClientContext context;
    Deadline(context);
    s = stub_->Filter(&context, request, &filter);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("pod is missing"));
  }
  s = Filter(BatchPod("b"), {"node-1", "node-2", "node-3"}, filter);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("at most 2 (http.maxNamesPerRequest)"));
  s = Filter(BatchPod("b"), {"node-1", ""}, filter);
  EXPECT_THAT(s.error_message(), HasSubstr("node_names[1] is empty"));
  pv1::Pod negative = BatchPod("b");
  negative.mutable_containers(0)->set_memory_request_bytes(-1);
  s = Filter(negative, {}, filter);
  EXPECT_THAT(s.error_message(), HasSubstr("pod.containers[0].memory_request_bytes is negative"));
  s = Reserve(BatchPod("b"), "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("node_name is empty"));
  bool released = true;
  s = Unreserve("", "node-1", &released);
  EXPECT_THAT(s.error_message(), HasSubstr("pod_uid is empty"));
  s = Unreserve("b", "", &released);
  EXPECT_THAT(s.error_message(), HasSubstr("node_name is empty"));
  {
    pv1::ScoreRequest request;
    *request.mutable_pod() = BatchPod("b");
    request.add_node_names(std::string(254, 'n'));
    pv1::ScoreResponse response;
    grpc::ClientContext context;
    Deadline(context);
    s = stub_->Score(&context, request, &response);
    EXPECT_THAT(s.error_message(), HasSubstr("node_names[0] is 254 bytes, at most 253"));
  }
  EXPECT_EQ(core_.bookings(), 0u);
  EXPECT_TRUE(core_.Decisions("", 10).empty());
  EXPECT_EQ(metrics_.requests(PlacementMethod::kFilter, grpc::StatusCode::INVALID_ARGUMENT), 5u);
  EXPECT_EQ(metrics_.requests(PlacementMethod::kFilter, grpc::StatusCode::OK), 0u);
}

TEST_F(PlacementServiceTest, AnExpiredDeadlineIsAnsweredWithoutWork) {
  // The server's clock is an hour ahead: every deadline the client sets has
  // passed by the time the call is taken up.
  FakeClock server_clock(absl::Now() + absl::Hours(1));
  Start({.deadline_clock = &server_clock});
  pv1::FilterResponse filter;
  grpc::Status s = Filter(BatchPod("b"), {}, filter);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(s.error_message(), HasSubstr("nothing was evaluated"));
  s = Reserve(LatencyCriticalPod("lc"), "node-3");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(core_.bookings(), 0u);
  EXPECT_TRUE(core_.Decisions("", 10).empty());
  EXPECT_EQ(metrics_.requests(PlacementMethod::kReserve, grpc::StatusCode::DEADLINE_EXCEEDED), 1u);

  // A client whose own deadline is already over gets the same answer.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() - std::chrono::seconds(1));
  pv1::FilterRequest request;
  *request.mutable_pod() = BatchPod("b");
  EXPECT_EQ(stub_->Filter(&context, request, &filter).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(core_.Decisions("", 10).empty());
}

TEST_F(PlacementServiceTest, MetricsCountCallsByMethodAndCode) {
  Start();
  FilterOk(BatchPod("b"));
  FilterOk(BatchPod("b"));
  pv1::FilterResponse filter;
  Filter(pv1::Pod(), {}, filter);
  bool released = false;
  ASSERT_TRUE(Unreserve("x", "node-1", &released).ok());
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr("# TYPE neighborly_placement_requests_total counter\n"));
  EXPECT_THAT(text,
              HasSubstr("neighborly_placement_requests_total{method=\"Filter\",code=\"OK\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_placement_requests_total{method=\"Filter\",code="
                              "\"INVALID_ARGUMENT\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("neighborly_placement_requests_total{method=\"Unreserve\",code=\"OK\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("neighborly_placement_requests_total{method=\"Score\",code=\"OK\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_placement_request_duration_seconds_bucket{method="
                              "\"Filter\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_placement_request_duration_seconds_count{method="
                              "\"Filter\"} 3\n"));
}

// Mutual TLS like the telemetry port: no client certificate, no call; a
// verified scheduler teaches, an unauthenticated caller does not.
class PlacementTlsTest : public PlacementServiceTest {
 protected:
  void SetUp() override {
    PlacementServiceTest::SetUp();
    pki_ =
        std::make_unique<TestPki>(::testing::TempDir() + "/placement-mtls-" +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server", "neighborly-extender").ok());
    ASSERT_TRUE(pki_->Issue("ca", "scheduler", "neighborly-scheduler").ok());
    ASSERT_TRUE(pki_->MakeCa("rogue-ca").ok());
    ASSERT_TRUE(pki_->Issue("rogue-ca", "rogue", "neighborly-scheduler").ok());
  }

  std::shared_ptr<grpc::ChannelCredentials> ClientTls(const std::string& cert) const {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = TestPki::Read(pki_->Path("ca.crt"));
    if (!cert.empty()) {
      options.pem_cert_chain = TestPki::Read(pki_->Path(cert + ".crt"));
      options.pem_private_key = TestPki::Read(pki_->Path(cert + ".key"));
    }
    return grpc::SslCredentials(options);
  }

  std::unique_ptr<TestPki> pki_;
  ServerTls tls_;
};

TEST_F(PlacementTlsTest, ClientCertificateIsRequiredAndAVerifiedSchedulerTeaches) {
  absl::StatusOr<ServerTls> tls = MakeServerCredentials({.ca_file = pki_->Path("ca.crt"),
                                                         .cert_file = pki_->Path("server.crt"),
                                                         .key_file = pki_->Path("server.key")});
  ASSERT_TRUE(tls.ok()) << tls.status();
  tls_ = std::move(*tls);
  Start({}, tls_.credentials);

  for (const char* cert : {"", "rogue"}) {
    Connect(ClientTls(cert));
    pv1::FilterResponse filter;
    const grpc::Status s = Filter(LatencyCriticalPod("lc-1"), {}, filter);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << cert << ": " << s.error_message();
  }
  EXPECT_TRUE(core_.Decisions("", 10).empty());
  EXPECT_EQ(core_.remembered_pods(), 2u);  // the two residents' declared classes

  Connect(ClientTls("scheduler"));
  const pv1::FilterResponse r = FilterOk(LatencyCriticalPod("lc-1"));
  EXPECT_THAT(RefusedNodes(r), ElementsAre("node-2"));
  // The pod's declared class is remembered: it came from the authenticated scheduler.
  EXPECT_EQ(core_.remembered_pods(), 3u);
}

TEST_F(PlacementServiceTest, APlaintextCallerTeachesOnlyWhenAllowed) {
  Start();
  const size_t before = core_.remembered_pods();
  FilterOk(LatencyCriticalPod("lc-1"));
  EXPECT_EQ(core_.remembered_pods(), before);
  server_.reset();
  Start({.learn_from_unauthenticated = true});
  FilterOk(LatencyCriticalPod("lc-1"));
  EXPECT_EQ(core_.remembered_pods(), before + 1);
}

}  // namespace
}  // namespace neighborly::extender
