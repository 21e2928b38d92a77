// The placement port of the real neighborly-extender binary: off by default,
// refused without TLS or an explicit plaintext flag, and, when on, the real
// agent's simulated fleet (the seed scenario) judged over gRPC; calls counted
// in /metrics and recorded in /v1/decisions. Mutual TLS from config files.
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "neighborly/placement/v1/placement.grpc.pb.h"
#include "test/support/subprocess.h"
#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using testing::BinaryPath;
using ::testing::HasSubstr;
using testing::Subprocess;
using testing::TestPki;
namespace pv1 = ::neighborly::placement::v1;

const char kScenario[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform.yaml";

std::unique_ptr<Subprocess> StartExtender(std::vector<std::string> args) {
  args.insert(args.begin(), {NEIGHBORLY_EXTENDER_BINARY, "--http-address", "127.0.0.1:0",
                             "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext"});
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(args);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

struct Ports {
  std::string http, grpc, placement;
};

std::optional<Ports> Listening(Subprocess& p) {
  const std::optional<std::string> line = p.WaitForLine("listening http=", absl::Seconds(30));
  std::smatch m;
  if (!line ||
      !std::regex_search(*line, m, std::regex(R"(http=(\S+) grpc=(\S+)(?: placement=(\S+))?)"))) {
    return std::nullopt;
  }
  return Ports{m[1], m[2], m[3]};
}

// The article service's next replica, as the plugin sends it.
pv1::Pod ArticlePod() {
  pv1::Pod pod;
  pod.set_uid("6f1c0e1a-0000-4000-8000-0000000000a2");
  pod.set_namespace_("content");
  pod.set_name("article-service-5d8f7-q9w2e");
  (*pod.mutable_labels())["app"] = "article-service";
  (*pod.mutable_annotations())["neighborly.io/class"] = "latency-critical";
  pv1::OwnerReference* owner = pod.add_owner_references();
  owner->set_kind("ReplicaSet");
  owner->set_name("article-service-5d8f7");
  owner->set_controller(true);
  pv1::Container* c = pod.add_containers();
  c->set_cpu_request_millicores(4000);
  c->set_cpu_limit_millicores(4000);
  c->set_memory_request_bytes(4ll << 30);
  c->set_memory_limit_bytes(4ll << 30);
  pod.set_qos_class("Guaranteed");
  return pod;
}

grpc::Status Filter(pv1::Placement::Stub& stub, pv1::FilterResponse& response) {
  pv1::FilterRequest request;
  *request.mutable_pod() = ArticlePod();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  return stub.Filter(&context, request, &response);
}

TEST(PlacementPortTest, OffByDefaultAndNeverPlaintextByOmission) {
  auto off = StartExtender({});
  ASSERT_NE(off, nullptr);
  const std::optional<Ports> ports = Listening(*off);
  ASSERT_TRUE(ports.has_value()) << off->Stderr();
  EXPECT_EQ(ports->placement, "");
  EXPECT_EQ(off->Terminate(absl::Seconds(30)), 0) << off->Stderr();

  auto refused = StartExtender({"--placement-address", "127.0.0.1:0"});
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(refused->Stderr(),
              HasSubstr("the placement port needs TLS (placement.tls.certFile, keyFile and caFile) "
                        "or an explicit placement.insecurePlaintext: true / "
                        "--placement-insecure-plaintext"));
}

TEST(PlacementPortTest, JudgesTheSimulatedFleetOverGrpc) {
  auto extender =
      StartExtender({"--placement-address", "127.0.0.1:0", "--placement-insecure-plaintext"});
  ASSERT_NE(extender, nullptr);
  const std::optional<Ports> ports = Listening(*extender);
  ASSERT_TRUE(ports.has_value()) << extender->Stderr();
  ASSERT_FALSE(ports->placement.empty()) << extender->Stderr();
  auto agent =
      Subprocess::Start({BinaryPath("node-agent/neighborly-agent"), "--simulate", kScenario,
                         "--extender", ports->grpc, "--interval", "1s", "--insecure-plaintext"});
  ASSERT_TRUE(agent.ok()) << agent.status();

  auto stub = pv1::Placement::NewStub(
      grpc::CreateChannel(ports->placement, grpc::InsecureChannelCredentials()));
  // Until every scenario node has reported (Filter judges the nodes it knows).
  pv1::FilterResponse response;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    response.Clear();
    ASSERT_TRUE(Filter(*stub, response).ok());
    if (response.nodes_judged() == 6) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(response.nodes_judged(), 6u) << (*agent)->Stderr();
  // The latency-critical article service is kept off the nodes whose batch
  // jobs saturate bandwidth (the demo's decision): some refusals, with reasons.
  ASSERT_GT(response.refused_size(), 0);
  ASSERT_LT(response.refused_size(), 6);
  for (const pv1::NodeRefusal& r : response.refused()) EXPECT_FALSE(r.reason().empty());
  {
    pv1::ReserveRequest request;
    *request.mutable_pod() = ArticlePod();
    request.set_node_name("node-5");
    pv1::ReserveResponse reserved;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Reserve(&context, request, &reserved).ok());
    EXPECT_TRUE(reserved.booked());
  }

  httplib::Client client("http://" + ports->http);
  client.set_read_timeout(20, 0);
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body,
              HasSubstr("neighborly_placement_requests_total{method=\"Reserve\",code=\"OK\"} 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_placement_request_duration_seconds_count{"
                                       "method=\"Filter\"}"));
  httplib::Result decisions = client.Get("/v1/decisions?pod=content/article-service-5d8f7-q9w2e");
  ASSERT_TRUE(decisions);
  ASSERT_EQ(decisions->status, 200) << decisions->body;
  const nlohmann::json d = nlohmann::json::parse(decisions->body);
  ASSERT_GE(d.size(), 2u) << decisions->body;
  EXPECT_EQ(d[0]["verb"], "placement.reserve");
  EXPECT_EQ(d[0]["bookedNode"], "node-5");
  EXPECT_EQ(d[1]["verb"], "placement.filter");

  EXPECT_EQ((*agent)->Terminate(absl::Seconds(30)), 0);
  EXPECT_EQ(extender->Terminate(absl::Seconds(30)), 0) << extender->Stderr();
}

TEST(PlacementPortTest, MutualTlsFromConfigFiles) {
  const std::string dir = std::string(NEIGHBORLY_BINARY_DIR) + "/placement_port_test_tls";
  TestPki pki(dir);
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "extender", "neighborly-extender").ok());
  ASSERT_TRUE(pki.Issue("ca", "scheduler", "neighborly-scheduler").ok());
  std::ofstream(dir + "/extender.yaml") << "placement:\n  address: 127.0.0.1:0\n  tls:\n"
                                        << "    caFile: " << pki.Path("ca.crt") << "\n"
                                        << "    certFile: " << pki.Path("extender.crt") << "\n"
                                        << "    keyFile: " << pki.Path("extender.key") << "\n";
  auto extender = StartExtender({"--config", dir + "/extender.yaml"});
  ASSERT_NE(extender, nullptr);
  const std::optional<Ports> ports = Listening(*extender);
  ASSERT_TRUE(ports.has_value()) << extender->Stderr();
  const std::string port = ports->placement.substr(ports->placement.rfind(':') + 1);

  for (bool with_cert : {false, true}) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = TestPki::Read(pki.Path("ca.crt"));
    if (with_cert) {
      options.pem_cert_chain = TestPki::Read(pki.Path("scheduler.crt"));
      options.pem_private_key = TestPki::Read(pki.Path("scheduler.key"));
    }
    auto stub = pv1::Placement::NewStub(
        grpc::CreateChannel("localhost:" + port, grpc::SslCredentials(options)));
    pv1::FilterResponse response;
    const grpc::Status s = Filter(*stub, response);
    if (with_cert) {
      EXPECT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(response.nodes_judged(), 0u);  // no telemetry yet
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
    }
  }
  EXPECT_EQ(extender->Terminate(absl::Seconds(30)), 0) << extender->Stderr();
}

}  // namespace
}  // namespace neighborly
