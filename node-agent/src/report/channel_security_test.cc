// The agent's side of mutual TLS and node identity, over real gRPC on loopback
// against an in-test TLS server; certificates made by the openssl CLI.
#include "node-agent/src/report/channel_security.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "node-agent/src/report/report_stream.h"
#include "test/support/test_pki.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;

// Acks one report per stream, then ends it, recording each stream's authorization.
class OneShotTelemetry final : public tv1::Telemetry::Service {
 public:
  grpc::Status Report(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<tv1::ReportAck, tv1::NodeReport>* stream) override {
    std::string authorization;
    for (const auto& [key, value] : context->client_metadata()) {
      if (key == "authorization") authorization.assign(value.data(), value.size());
    }
    tv1::NodeReport report;
    if (stream->Read(&report)) {
      tv1::ReportAck ack;
      ack.set_sequence(report.sequence());
      stream->Write(ack);
    }
    std::lock_guard<std::mutex> lock(mu_);
    authorizations_.push_back(authorization);
    cv_.notify_all();
    return grpc::Status::OK;
  }

  bool WaitFor(const std::string& authorization) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      return std::find(authorizations_.begin(), authorizations_.end(), authorization) !=
             authorizations_.end();
    });
  }
  size_t streams() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> authorizations_;
};

class ChannelSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ =
        std::make_unique<TestPki>(::testing::TempDir() + "/agent-tls-" +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server", "extender").ok());
    ASSERT_TRUE(
        pki_->Issue("ca", "service", "extender", {"DNS:neighborly-extender-agents.neighborly.svc"})
            .ok());
    ASSERT_TRUE(pki_->Issue("ca", "client", "agent").ok());
  }

  void StartServer(const std::string& cert) {
    grpc::SslServerCredentialsOptions options(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    options.pem_root_certs = TestPki::Read(pki_->Path("ca.crt"));
    options.pem_key_cert_pairs.push_back(
        {TestPki::Read(pki_->Path(cert + ".key")), TestPki::Read(pki_->Path(cert + ".crt"))});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(options), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  ReportStreamOptions Options() {
    absl::StatusOr<ClientTls> tls = MakeChannelCredentials({.ca_file = pki_->Path("ca.crt"),
                                                            .cert_file = pki_->Path("client.crt"),
                                                            .key_file = pki_->Path("client.key")});
    EXPECT_TRUE(tls.ok()) << tls.status();
    ReportStreamOptions options;
    options.target = absl::StrCat("127.0.0.1:", port_);
    options.node_name = "worker-1";
    if (tls.ok()) {
      options.credentials = tls->credentials;
      options.tls_files = tls->files;
    }
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(200);
    return options;
  }

  static tv1::NodeReport Report(uint64_t sequence) {
    tv1::NodeReport r;
    r.set_node_name("worker-1");
    r.set_sequence(sequence);
    return r;
  }

  // Offers reports until `done` holds or the deadline passes.
  template <typename F>
  bool Drive(ReportStream& stream, F done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (uint64_t seq = next_seq_; !done(); ++seq) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      stream.Offer(Report(seq));
      next_seq_ = seq + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  std::unique_ptr<TestPki> pki_;
  OneShotTelemetry service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  uint64_t next_seq_ = 1;
};

TEST_F(ChannelSecurityTest, StreamsOverMutualTlsAndSendsTheCurrentToken) {
  StartServer("server");
  ASSERT_TRUE(TestPki::Write(pki_->Path("token"), "token-one\n").ok());
  ReportStreamOptions options = Options();
  options.identity_token_file = pki_->Path("token");
  ReportStream stream(options);
  stream.Start();
  ASSERT_TRUE(Drive(stream, [&] { return stream.stats().acks > 0; }));
  EXPECT_TRUE(service_.WaitFor("Bearer token-one"));
  // The kubelet rotates the token; the next connection carries the new one.
  ASSERT_TRUE(TestPki::Write(pki_->Path("token"), "token-two").ok());
  const size_t before = service_.streams();
  ASSERT_TRUE(Drive(stream, [&] { return service_.streams() > before + 1; }));
  EXPECT_TRUE(service_.WaitFor("Bearer token-two"));
}

TEST_F(ChannelSecurityTest, TheExtenderNameMustBeInItsCertificate) {
  StartServer("service");  // valid only for neighborly-extender-agents.neighborly.svc
  {
    ReportStream by_ip(Options());  // dials 127.0.0.1: not in the certificate
    by_ip.Start();
    ASSERT_TRUE(Drive(by_ip, [&] { return by_ip.stats().failures >= 2; }));
    EXPECT_EQ(by_ip.stats().acks, 0u);
  }
  ReportStreamOptions options = Options();
  options.server_name = "neighborly-extender-agents.neighborly.svc";
  ReportStream named(options);
  named.Start();
  EXPECT_TRUE(Drive(named, [&] { return named.stats().acks > 0; }));
}

TEST_F(ChannelSecurityTest, AMissingTokenFileIsAnAuthFailureWithoutConnecting) {
  StartServer("server");
  ReportStreamOptions options = Options();
  options.identity_token_file = pki_->Path("no-token");
  ReportStream stream(options);
  stream.Start();
  ASSERT_TRUE(Drive(stream, [&] { return stream.stats().auth_refusals >= 2; }));
  EXPECT_EQ(service_.streams(), 0u);
}

TEST_F(ChannelSecurityTest, BadFilesAreNamed) {
  auto no_ca = MakeChannelCredentials({});
  EXPECT_THAT(std::string(no_ca.status().message()), HasSubstr("--tls-ca"));
  auto half = MakeChannelCredentials(
      {.ca_file = pki_->Path("ca.crt"), .cert_file = pki_->Path("client.crt")});
  EXPECT_THAT(std::string(half.status().message()), HasSubstr("both --tls-cert and --tls-key"));
  auto mismatch = MakeChannelCredentials({.ca_file = pki_->Path("ca.crt"),
                                          .cert_file = pki_->Path("client.crt"),
                                          .key_file = pki_->Path("server.key")});
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("does not belong to"));
  auto missing = MakeChannelCredentials({.ca_file = pki_->Path("nope.crt")});
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("nope.crt: cannot read"));
  ASSERT_TRUE(TestPki::Write(pki_->Path("empty-token"), " \n").ok());
  EXPECT_THAT(std::string(ReadIdentityToken(pki_->Path("empty-token")).status().message()),
              HasSubstr("is empty"));
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("huge-token"), std::string(kMaxIdentityTokenBytes + 1, 'a')).ok());
  EXPECT_THAT(std::string(ReadIdentityToken(pki_->Path("huge-token")).status().message()),
              HasSubstr("larger than"));
}

}  // namespace
}  // namespace neighborly::agent
