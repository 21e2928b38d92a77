// Node identity and per-stream limits on the telemetry endpoint, over real gRPC
// on loopback: tokens signed here against keys made by the openssl CLI.
#include <unistd.h>

#include <chrono>
#include <string>

#include "common/clock.h"
#include "extender/src/ingest/node_identity.h"
#include "extender/src/ingest/telemetry_server.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/support/jwt_signer.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::neighborly::testing::SignJwt;
using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;
namespace tv1 = ::neighborly::telemetry::v1;

constexpr char kIssuer[] = "https://kubernetes.default.svc";

// Metadata per stream and the reports to send; returns the final status and how many acks.
struct StreamResult {
  grpc::Status status;
  int acks = 0;
};

class IngestLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs each test as its own process, two at
    // a time, and a shared directory was regenerated under a concurrent reader.
    pki_ = new TestPki(::testing::TempDir() + "/ingest-limits-pki-" + std::to_string(getpid()));
    ASSERT_TRUE(pki_->MakeSigningKey("sa", "rsa").ok());
  }
  static void TearDownTestSuite() { delete pki_; }

  void Start(IngestPolicy policy, int max_report_bytes = 8 << 20) {
    policy.clock = &clock_;
    absl::StatusOr<std::unique_ptr<TelemetryServer>> server =
        TelemetryServer::Start(core_, {.address = "127.0.0.1:0",
                                       .max_receive_message_bytes = max_report_bytes,
                                       .policy = policy});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = tv1::Telemetry::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  std::unique_ptr<TokenVerifier> Verifier() {
    absl::StatusOr<std::unique_ptr<TokenVerifier>> v = TokenVerifier::Create(
        {.issuer = kIssuer, .public_key_files = {pki_->Path("sa.pub")}}, clock_);
    EXPECT_TRUE(v.ok()) << v.status();
    return std::move(*v);
  }

  std::string Token(const std::string& node, int64_t ttl_s = 3600) {
    const int64_t now = absl::ToUnixSeconds(clock_.Now());
    return SignJwt(TestPki::Read(pki_->Path("sa.key")), "RS256",
                   {{"iss", kIssuer},
                    {"aud", {"neighborly"}},
                    {"exp", now + ttl_s},
                    {"sub", "system:serviceaccount:neighborly:neighborly-agent"},
                    {"kubernetes.io", {{"node", {{"name", node}}}}}});
  }

  StreamResult Send(const std::vector<tv1::NodeReport>& reports, const std::string& bearer = "",
                    std::function<void()> between = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!bearer.empty()) ctx.AddMetadata("authorization", bearer);
    auto stream = stub_->Report(&ctx);
    StreamResult result;
    for (const tv1::NodeReport& r : reports) {
      if (!stream->Write(r)) break;
      tv1::ReportAck ack;
      if (!stream->Read(&ack)) break;
      ++result.acks;
      if (between) between();
    }
    stream->WritesDone();
    result.status = stream->Finish();
    return result;
  }

  std::string Metrics() const {
    std::string out;
    AppendIngestRefusals(server_->counters(), out);
    return out;
  }

  static TestPki* pki_;
  FakeClock clock_;
  ExtenderCore core_{ModelConfig{}, clock_};
  std::unique_ptr<TelemetryServer> server_;
  std::unique_ptr<tv1::Telemetry::Stub> stub_;
};

TestPki* IngestLimitsTest::pki_ = nullptr;

TEST_F(IngestLimitsTest, AStreamReportsOnlyForTheNodeOfItsToken) {
  std::unique_ptr<TokenVerifier> verifier = Verifier();
  Start({.identity = verifier.get()});
  StreamResult own =
      Send({testing::TwoSocketNode("worker-1", 1), testing::TwoSocketNode("worker-1", 2)},
           "Bearer " + Token("worker-1"));
  EXPECT_TRUE(own.status.ok()) << own.status.error_message();
  EXPECT_EQ(own.acks, 2);
  ASSERT_TRUE(core_.Node("worker-1").has_value());

  StreamResult other = Send({testing::TwoSocketNode("worker-2", 1)}, "Bearer " + Token("worker-1"));
  EXPECT_EQ(other.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(other.status.error_message(), HasSubstr("only for node \"worker-1\""));
  EXPECT_THAT(other.status.error_message(), HasSubstr("not \"worker-2\""));
  EXPECT_FALSE(core_.Node("worker-2").has_value());
  EXPECT_EQ(server_->counters().reports_node_mismatch.load(), 1u);
  EXPECT_THAT(Metrics(),
              HasSubstr("neighborly_ingest_refused_total{reason=\"node_mismatch\"} 1\n"));
}

TEST_F(IngestLimitsTest, StreamsWithoutAValidTokenAreUnauthenticated) {
  std::unique_ptr<TokenVerifier> verifier = Verifier();
  Start({.identity = verifier.get()});
  const std::vector<tv1::NodeReport> one = {testing::TwoSocketNode("worker-1", 1)};
  StreamResult none = Send(one);
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.status.error_message(), HasSubstr("no \"authorization: Bearer"));
  StreamResult basic = Send(one, "Basic dXNlcjpwdw==");
  EXPECT_EQ(basic.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  StreamResult expired = Send(one, "Bearer " + Token("worker-1", -3600));
  EXPECT_EQ(expired.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(expired.status.error_message(), HasSubstr("expired"));
  StreamResult garbage = Send(one, "Bearer not.a.jwt");
  EXPECT_EQ(garbage.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(server_->counters().streams_unauthenticated.load(), 4u);
  EXPECT_EQ(server_->stats().reports_accepted, 0u);
  EXPECT_THAT(Metrics(),
              HasSubstr("neighborly_ingest_refused_total{reason=\"unauthenticated\"} 4\n"));
}

TEST_F(IngestLimitsTest, AStreamOutlivingItsTokenMustReconnect) {
  std::unique_ptr<TokenVerifier> verifier = Verifier();
  Start({.identity = verifier.get()});
  StreamResult r =
      Send({testing::TwoSocketNode("worker-1", 1), testing::TwoSocketNode("worker-1", 2)},
           "Bearer " + Token("worker-1", 60), [&] { clock_.Advance(absl::Minutes(5)); });
  EXPECT_EQ(r.acks, 1);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("expired during the stream"));
  EXPECT_EQ(server_->counters().streams_token_expired.load(), 1u);
}

TEST_F(IngestLimitsTest, ReportsAboveTheRateAreRefusedWithResourceExhausted) {
  Start({.max_reports_per_second = 1, .report_burst = 3});
  std::vector<tv1::NodeReport> burst;
  for (uint64_t seq = 1; seq <= 5; ++seq) burst.push_back(testing::TwoSocketNode("n", seq));
  // Five reports at one instant: the burst of three passes, the fourth is refused.
  StreamResult r = Send(burst);
  EXPECT_EQ(r.acks, 3);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("more than 1 reports per second"));
  EXPECT_EQ(server_->counters().reports_rate_limited.load(), 1u);
  // At the allowed pace a stream goes on for ever.
  std::vector<tv1::NodeReport> paced;
  for (uint64_t seq = 10; seq <= 20; ++seq) paced.push_back(testing::TwoSocketNode("n", seq));
  StreamResult ok = Send(paced, "", [&] { clock_.Advance(absl::Seconds(1)); });
  EXPECT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_EQ(ok.acks, 11);
  EXPECT_THAT(Metrics(), HasSubstr("neighborly_ingest_refused_total{reason=\"rate_limited\"} 1\n"));
}

TEST_F(IngestLimitsTest, OversizedReportsAreRefusedAndCounted) {
  Start({}, /*max_report_bytes=*/2048);
  tv1::NodeReport big = testing::TwoSocketNode("n", 1);
  for (int i = 0; big.ByteSizeLong() <= 2048; ++i) {
    testing::AddPod(big, {.uid = "uid-" + std::to_string(i),
                          .namespace_name = "ns",
                          .name = "pod-" + std::to_string(i)});
  }
  ASSERT_LT(big.ByteSizeLong(), 4096u);  // below gRPC's own cap (twice the limit)
  StreamResult r = Send({big});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("exceeds the limit of 2048 bytes"));
  EXPECT_EQ(server_->counters().reports_too_large.load(), 1u);
  // Far above the limit gRPC itself refuses the message; the server stays up.
  for (int i = 1000; big.ByteSizeLong() <= 8192; ++i) {
    testing::AddPod(big, {.uid = "uid-" + std::to_string(i), .namespace_name = "ns", .name = "p"});
  }
  EXPECT_EQ(Send({big}).status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Send({testing::TwoSocketNode("n", 2)}).status.ok());
  EXPECT_THAT(Metrics(), HasSubstr("neighborly_ingest_refused_total{reason=\"too_large\"} 1\n"));
}

TEST_F(IngestLimitsTest, ReportValidationLimitsAreCountedAsInvalid) {
  Start({});
  tv1::NodeReport many = testing::TwoSocketNode("n", 1);
  for (int i = 0; i < 1001; ++i) {
    testing::AddPod(many, {.uid = "u" + std::to_string(i), .namespace_name = "ns", .name = "p"});
  }
  StreamResult r = Send({many});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(r.status.error_message(), HasSubstr("at most 1000"));
  tv1::NodeReport labels = testing::TwoSocketNode("n", 2);
  testing::AddPod(labels, {.uid = "u", .namespace_name = "ns", .name = "p"});
  for (int i = 0; i < 300; ++i) {
    (*labels.mutable_pods(0)->mutable_labels())["k" + std::to_string(i)] = "v";
  }
  StreamResult l = Send({labels});
  EXPECT_EQ(l.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(l.status.error_message(), HasSubstr("labels"));
  EXPECT_THAT(Metrics(), HasSubstr("neighborly_ingest_refused_total{reason=\"invalid\"} 2\n"));
}

}  // namespace
}  // namespace neighborly::extender
