// Roles per port through the real neighborly-extender binary, with the chart's
// TLS layout: one CA signs the extender's, the agents' and the scheduler's
// certificates, and each port names the role it accepts
// (*.tls.allowedClientNames, docs/security.md "Roles"). Before roles, an
// agent's certificate was accepted as the scheduler's on the HTTPS port and
// the placement port (issue 24, finding 1).
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "neighborly/placement/v1/placement.grpc.pb.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "test/support/subprocess.h"
#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;
using testing::TestPki;
namespace pv1 = ::neighborly::placement::v1;
namespace tv1 = ::neighborly::telemetry::v1;

class RolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A folder per test: ctest runs the tests of this suite at once, and one
    // test's keys rewritten under another's feet read as "Invalid private key".
    dir_ = std::string(NEIGHBORLY_BINARY_DIR) + "/roles_test_tls_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pki_ = std::make_unique<TestPki>(dir_);
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    // As the chart issues them (templates/tls-secrets.yaml): CN per component.
    ASSERT_TRUE(pki_->Issue("ca", "extender", "neighborly-extender").ok());
    ASSERT_TRUE(pki_->Issue("ca", "agent", "neighborly-agent", {}).ok());
    ASSERT_TRUE(pki_->Issue("ca", "scheduler", "neighborly-scheduler", {}).ok());
    // A certificate naming the role in a URI SAN only (cert-manager's `uris`).
    ASSERT_TRUE(pki_->Issue("ca", "scheduler-uri", "someone-else",
                            {"URI:spiffe://neighborly/scheduler"})
                    .ok());
    const std::string ca = pki_->Path("ca.crt"), crt = pki_->Path("extender.crt"),
                      key = pki_->Path("extender.key");
    std::ofstream(dir_ + "/extender.yaml")
        << "http:\n  tls:\n    certFile: " << crt << "\n    keyFile: " << key
        << "\n    clientCaFile: " << ca
        << "\n    allowedClientNames: [neighborly-scheduler, spiffe://neighborly/scheduler]\n"
        << "placement:\n  address: 127.0.0.1:0\n  tls:\n    caFile: " << ca
        << "\n    certFile: " << crt << "\n    keyFile: " << key
        << "\n    allowedClientNames: [neighborly-scheduler]\n"
        << "grpc:\n  tls:\n    caFile: " << ca << "\n    certFile: " << crt
        << "\n    keyFile: " << key << "\n    allowedClientNames: [neighborly-agent]\n";
    auto started =
        Subprocess::Start({NEIGHBORLY_EXTENDER_BINARY, "--config", dir_ + "/extender.yaml",
                           "--http-address", "127.0.0.1:0", "--grpc-address", "127.0.0.1:0"});
    ASSERT_TRUE(started.ok()) << started.status();
    extender_ = std::move(*started);
    const std::optional<std::string> line =
        extender_->WaitForLine("listening http=", absl::Seconds(30));
    ASSERT_TRUE(line.has_value()) << extender_->Stderr();
    std::smatch m;
    const std::regex ports(R"(http=\S+:(\d+) grpc=\S+:(\d+).* placement=\S+:(\d+))");
    ASSERT_TRUE(std::regex_search(*line, m, ports)) << *line;
    http_port_ = std::stoi(m[1]);
    grpc_port_ = m[2];
    placement_port_ = m[3];
  }

  void TearDown() override {
    if (extender_ != nullptr) {
      EXPECT_EQ(extender_->Terminate(absl::Seconds(30)), 0) << extender_->Stderr();
    }
  }

  // GET /v1/nodes on the scheduler port with `who`'s certificate: the status,
  // or -1 when the connection failed (the handshake refused).
  int SchedulerPortGet(const std::string& who) {
    httplib::SSLClient client("localhost", http_port_, pki_->Path(who + ".crt"),
                              pki_->Path(who + ".key"));
    client.set_ca_cert_path(pki_->Path("ca.crt").c_str());
    client.enable_server_certificate_verification(true);
    client.set_read_timeout(20, 0);
    httplib::Result r = client.Get("/v1/nodes");
    return r ? r->status : -1;
  }

  std::shared_ptr<grpc::ChannelCredentials> Credentials(const std::string& who) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = TestPki::Read(pki_->Path("ca.crt"));
    options.pem_cert_chain = TestPki::Read(pki_->Path(who + ".crt"));
    options.pem_private_key = TestPki::Read(pki_->Path(who + ".key"));
    return grpc::SslCredentials(options);
  }

  grpc::Status PlacementUnreserve(const std::string& who) {
    auto stub = pv1::Placement::NewStub(
        grpc::CreateChannel("localhost:" + placement_port_, Credentials(who)));
    pv1::UnreserveRequest request;
    request.set_pod_uid("6f1c0e1a-0000-4000-8000-0000000000a2");
    request.set_node_name("node-1");
    pv1::UnreserveResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub->Unreserve(&context, request, &response);
  }

  // One report on the telemetry port with `who`'s certificate.
  grpc::Status Report(const std::string& who) {
    auto stub = tv1::Telemetry::NewStub(
        grpc::CreateChannel("localhost:" + grpc_port_, Credentials(who)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream = stub->Report(&context);
    tv1::NodeReport report;
    report.set_node_name("node-1");
    report.set_boot_id("b");
    report.set_sequence(1);
    stream->Write(report);
    stream->WritesDone();
    tv1::ReportAck ack;
    while (stream->Read(&ack)) {
    }
    return stream->Finish();
  }

  std::string Metrics() {
    httplib::SSLClient client("localhost", http_port_, pki_->Path("scheduler.crt"),
                              pki_->Path("scheduler.key"));
    client.enable_server_certificate_verification(false);
    httplib::Result r = client.Get("/metrics");
    return r ? r->body : "";
  }

  // neighborly_tls_client_role_refusals_total{listener}, once it reaches
  // `at_least` (the counter moves on the server's thread after the client
  // already saw its handshake fail) or 10 s have passed.
  int64_t RoleRefusals(const std::string& listener, int64_t at_least) {
    const std::string series =
        "neighborly_tls_client_role_refusals_total{listener=\"" + listener + "\"} ";
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    int64_t count = 0;
    while (true) {
      const std::string metrics = Metrics();
      const size_t at = metrics.find(series);
      count = at == std::string::npos ? 0 : std::stoll(metrics.substr(at + series.size()));
      if (count >= at_least || absl::Now() > deadline) return count;
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  std::string dir_;
  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<Subprocess> extender_;
  int http_port_ = 0;
  std::string grpc_port_, placement_port_;
};

TEST_F(RolesTest, AnAgentCertificateIsRefusedOnTheSchedulerPort) {
  EXPECT_EQ(SchedulerPortGet("scheduler"), 200);
  EXPECT_EQ(SchedulerPortGet("scheduler-uri"), 200);  // the role in a URI SAN
  EXPECT_EQ(SchedulerPortGet("agent"), -1);           // the handshake fails
  EXPECT_EQ(SchedulerPortGet("extender"), -1);        // the server's own certificate too
  ASSERT_TRUE(extender_->WaitForLine("the scheduler port: refused the client certificate",
                                     absl::Seconds(10)))
      << extender_->Stderr();
  EXPECT_THAT(extender_->Stderr(),
              HasSubstr("(CN=neighborly-agent): the scheduler port accepts only the scheduler's "
                        "identity, a certificate naming one of [neighborly-scheduler, "
                        "spiffe://neighborly/scheduler] (http.tls.allowedClientNames)"));
  // Both refusals counted; the second was within the log's interval.
  EXPECT_EQ(RoleRefusals("http", 2), 2);
}

TEST_F(RolesTest, AnAgentCertificateIsRefusedOnThePlacementPort) {
  const grpc::Status scheduler = PlacementUnreserve("scheduler");
  EXPECT_TRUE(scheduler.ok()) << scheduler.error_message();
  const grpc::Status agent = PlacementUnreserve("agent");
  EXPECT_EQ(agent.error_code(), grpc::StatusCode::UNAVAILABLE) << agent.error_message();
  ASSERT_TRUE(extender_->WaitForLine("the placement port: refused the client certificate",
                                     absl::Seconds(10)))
      << extender_->Stderr();
  EXPECT_THAT(extender_->Stderr(),
              HasSubstr("(CN=neighborly-agent): the placement port accepts only the scheduler's "
                        "identity, a certificate naming one of [neighborly-scheduler] "
                        "(placement.tls.allowedClientNames)"));
  // A gRPC channel may retry its handshake before the call fails: at least one.
  EXPECT_GE(RoleRefusals("placement", 1), 1);
}

TEST_F(RolesTest, TheSchedulersCertificateIsRefusedOnTheTelemetryPort) {
  const grpc::Status agent = Report("agent");
  EXPECT_NE(agent.error_code(), grpc::StatusCode::UNAVAILABLE) << agent.error_message();
  const grpc::Status scheduler = Report("scheduler");
  EXPECT_EQ(scheduler.error_code(), grpc::StatusCode::UNAVAILABLE) << scheduler.error_message();
  ASSERT_TRUE(extender_->WaitForLine("the telemetry port: refused the client certificate",
                                     absl::Seconds(10)))
      << extender_->Stderr();
  EXPECT_THAT(extender_->Stderr(), HasSubstr("accepts only the agent's identity"));
  EXPECT_GE(RoleRefusals("grpc", 1), 1);
}

}  // namespace
}  // namespace neighborly
