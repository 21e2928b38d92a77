// Mutual TLS on the telemetry endpoint: real gRPC on loopback with a CA, server
// and client certificates made at test time by the openssl CLI.
#include "extender/src/ingest/transport_security.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "extender/src/ingest/telemetry_server.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;
namespace tv1 = ::neighborly::telemetry::v1;

class TransportSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ =
        std::make_unique<TestPki>(::testing::TempDir() + "/mtls-" +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server", "server-1").ok());
    ASSERT_TRUE(pki_->Issue("ca", "client", "agent").ok());
    ASSERT_TRUE(pki_->MakeCa("rogue-ca").ok());
    ASSERT_TRUE(pki_->Issue("rogue-ca", "rogue", "agent").ok());
  }

  void StartServer(bool require_client_cert = true) {
    absl::StatusOr<ServerTls> tls =
        MakeServerCredentials({.ca_file = pki_->Path("ca.crt"),
                               .cert_file = pki_->Path("server.crt"),
                               .key_file = pki_->Path("server.key"),
                               .require_client_cert = require_client_cert,
                               .reload_interval = absl::Seconds(1),
                               .on_reload = [this](bool ok) { (ok ? reloads_ : failures_)++; }});
    ASSERT_TRUE(tls.ok()) << tls.status();
    tls_ = std::move(*tls);
    absl::StatusOr<std::unique_ptr<TelemetryServer>> server =
        TelemetryServer::Start(core_, {.address = "127.0.0.1:0",
                                       .credentials = tls_.credentials,
                                       // The rotation test probes with one report per new
                                       // connection, ten a second, for as long as the watcher
                                       // takes: above the per-node limit, which is not under test.
                                       .policy = {.max_reports_per_second = 1000}});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
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

  // One report on a fresh connection; the server certificate's CN in `server_cn`.
  grpc::Status SendOne(const std::shared_ptr<grpc::ChannelCredentials>& creds,
                       std::string* server_cn = nullptr) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a new connection every time
    auto channel =
        grpc::CreateCustomChannel("localhost:" + std::to_string(server_->port()), creds, args);
    auto stub = tv1::Telemetry::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream = stub->Report(&ctx);
    stream->Write(testing::TwoSocketNode("node-1", ++sequence_));
    tv1::ReportAck ack;
    const bool acked = stream->Read(&ack);
    if (acked && server_cn != nullptr) {
      for (const grpc::string_ref& cn :
           ctx.auth_context()->FindPropertyValues("x509_common_name")) {
        *server_cn = std::string(cn.data(), cn.size());
      }
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    if (status.ok() && !acked) return grpc::Status(grpc::StatusCode::UNKNOWN, "no ack");
    return status;
  }

  FakeClock clock_;
  ExtenderCore core_{ModelConfig{}, clock_};
  std::unique_ptr<TestPki> pki_;
  std::atomic<int> reloads_{0};
  std::atomic<int> failures_{0};
  ServerTls tls_;  // outlives server_ (declared before it)
  std::unique_ptr<TelemetryServer> server_;
  uint64_t sequence_ = 0;
};

TEST_F(TransportSecurityTest, MutualTlsWorksWithACertificateFromTheCa) {
  StartServer();
  std::string cn;
  grpc::Status status = SendOne(ClientTls("client"), &cn);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(cn, "server-1");
  EXPECT_EQ(server_->stats().reports_accepted, 1u);
}

TEST_F(TransportSecurityTest, ClientsWithoutAGoodCertificateAreRefused) {
  StartServer();
  EXPECT_EQ(SendOne(ClientTls("")).error_code(), grpc::StatusCode::UNAVAILABLE);       // no cert
  EXPECT_EQ(SendOne(ClientTls("rogue")).error_code(), grpc::StatusCode::UNAVAILABLE);  // other CA
  EXPECT_EQ(SendOne(grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);  // plaintext against TLS
  EXPECT_EQ(server_->stats().reports_accepted, 0u);
  EXPECT_TRUE(SendOne(ClientTls("client")).ok());  // the server is fine
}

TEST_F(TransportSecurityTest, WithoutRequiringClientCertsPlainTlsClientsAreServed) {
  StartServer(/*require_client_cert=*/false);
  EXPECT_TRUE(SendOne(ClientTls("")).ok());
  EXPECT_TRUE(SendOne(ClientTls("client")).ok());
  // A certificate that is presented must still verify.
  EXPECT_FALSE(SendOne(ClientTls("rogue")).ok());
}

TEST_F(TransportSecurityTest, RotatedCertificateFilesAreUsedByNewConnections) {
  StartServer();
  std::string cn;
  ASSERT_TRUE(SendOne(ClientTls("client"), &cn).ok());
  ASSERT_EQ(cn, "server-1");
  ASSERT_TRUE(pki_->Issue("ca", "server2", "server-2").ok());
  // Replace key then certificate; gRPC keeps the old pair until both match.
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("server.key"), TestPki::Read(pki_->Path("server2.key"))).ok());
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("server.crt"), TestPki::Read(pki_->Path("server2.crt"))).ok());
  // Wait (bounded) for the watcher's next look at the files.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (cn != "server-2" && std::chrono::steady_clock::now() < deadline) {
    grpc::Status status = SendOne(ClientTls("client"), &cn);
    ASSERT_TRUE(status.ok()) << status.error_message();  // never a gap in service
    if (cn != "server-2") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(cn, "server-2");
}

// A key whose certificate has not followed: gRPC keeps serving the old pair,
// and the refusal is counted. (gRPC's own file watcher would load the
// mismatched pair and fail every new handshake until the certificate came.)
TEST_F(TransportSecurityTest, AHalfRotatedPairKeepsServingTheOldCertificate) {
  StartServer();
  ASSERT_TRUE(pki_->Issue("ca", "server2", "server-2").ok());
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("server.key"), TestPki::Read(pki_->Path("server2.key"))).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (failures_.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(failures_.load(), 1);
  // Past gRPC's next looks at what it is given (every second).
  for (int i = 0; i < 5; ++i) {
    std::string cn;
    grpc::Status status = SendOne(ClientTls("client"), &cn);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(cn, "server-1");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(reloads_.load(), 0);
}

TEST_F(TransportSecurityTest, BadFilesAreNamedAtStart) {
  auto missing = MakeServerCredentials({.ca_file = pki_->Path("ca.crt"),
                                        .cert_file = pki_->Path("nope.crt"),
                                        .key_file = pki_->Path("server.key")});
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope.crt: cannot read"));
  auto mismatch = MakeServerCredentials({.ca_file = pki_->Path("ca.crt"),
                                         .cert_file = pki_->Path("server.crt"),
                                         .key_file = pki_->Path("client.key")});
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("does not belong to"));
  auto key_as_cert = MakeServerCredentials({.ca_file = pki_->Path("server.key"),
                                            .cert_file = pki_->Path("server.crt"),
                                            .key_file = pki_->Path("server.key")});
  EXPECT_THAT(std::string(key_as_cert.status().message()), HasSubstr("no PEM certificate"));
  auto no_ca = MakeServerCredentials(
      {.cert_file = pki_->Path("server.crt"), .key_file = pki_->Path("server.key")});
  EXPECT_THAT(std::string(no_ca.status().message()), HasSubstr("CA file is needed"));
}

}  // namespace
}  // namespace neighborly::extender
