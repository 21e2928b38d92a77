#include "extender/src/api/operator_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "extender/src/api/operator_api.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/testing/fake_decider.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "a8f1c0e2b7d94e6f9a3c5b1d";
constexpr char kOtherToken[] = "0123456789abcdef0123456789";

TEST(ParseOperatorTokensTest, OneTokenALineCommentsAndBlanksIgnored) {
  absl::StatusOr<OperatorTokens> t = ParseOperatorTokens(
      "# ops team\n  a8f1c0e2b7d94e6f9a3c5b1d  \n\n0123456789abcdef0123456789\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->tokens, ::testing::ElementsAre(kToken, kOtherToken));
}

TEST(ParseOperatorTokensTest, RefusesShortTokensBlanksAndEmptyFiles) {
  EXPECT_THAT(ParseOperatorTokens("short\n").status().message(),
              HasSubstr("line 1: a token of 5 bytes is too short (at least 16)"));
  EXPECT_THAT(ParseOperatorTokens("\na8f1c0e2b7d9 4e6f9a3c5b1d\n").status().message(),
              HasSubstr("line 2: a token has no blanks"));
  EXPECT_THAT(ParseOperatorTokens("# nothing\n").status().message(), HasSubstr("no token"));
}

TEST(OperatorPathNeedsTokenTest, OnlyTheV1Api) {
  EXPECT_TRUE(OperatorPathNeedsToken("/v1/nodes"));
  EXPECT_TRUE(OperatorPathNeedsToken("/v1/workloads/a/Deployment/b"));
  EXPECT_TRUE(OperatorPathNeedsToken("/v1"));
  EXPECT_FALSE(OperatorPathNeedsToken("/v10"));
  EXPECT_FALSE(OperatorPathNeedsToken("/metrics"));
  EXPECT_FALSE(OperatorPathNeedsToken("/healthz"));
  EXPECT_FALSE(OperatorPathNeedsToken("/readyz"));
}

class EmptySource final : public OperatorSource {
 public:
  std::vector<NodeSummary> Nodes() const override { return {}; }
  std::optional<NodeSummary> Node(std::string_view) const override { return std::nullopt; }
  std::vector<DecisionRecord> Decisions(std::string_view, size_t) const override { return {}; }
  IngestStats Ingest() const override { return {}; }
};

// An operator port as main.cc wires it: no scheduler verbs, the operator
// routes, the token filter; real HTTP on loopback.
class OperatorPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("neighborly-operator-auth-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    token_file_ = (dir_ / "tokens").string();
    Write(std::string(kToken) + "\n");
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  void Write(const std::string& text) {
    std::ofstream out(token_file_, std::ios::trunc);
    out << text;
  }
  void Start(std::string token_file) {
    absl::StatusOr<std::unique_ptr<OperatorAuth>> auth = OperatorAuth::Create(
        {.token_file = token_file, .reload_interval = absl::ZeroDuration()}, clock_);
    ASSERT_TRUE(auth.ok()) << auth.status();
    auth_ = std::move(*auth);
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.scheduler_verbs = false;
    server_ = std::make_unique<HttpServer>(options, decider_, metrics_);
    server_->SetRequestFilter([this](const httplib::Request& req, httplib::Response& res) {
      return auth_->Refuse(req, res);
    });
    RegisterOperatorApi(server_->routes(), source_, metrics_, [] { return std::string(); });
    absl::StatusOr<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  httplib::Result Get(const std::string& path, const std::string& authorization = "") {
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    return client_->Get(path, headers);
  }

  FakeClock clock_{absl::FromUnixSeconds(1000)};
  std::filesystem::path dir_;
  std::string token_file_;
  FakeDecider decider_;
  ExtenderMetrics metrics_;
  EmptySource source_;
  std::unique_ptr<OperatorAuth> auth_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(OperatorPortTest, ProbesAndMetricsNeedNoToken) {
  Start(token_file_);
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    httplib::Result r = Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
  }
}

TEST_F(OperatorPortTest, ApiNeedsAListedBearerToken) {
  Start(token_file_);
  httplib::Result none = Get("/v1/nodes");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->body, HasSubstr("Authorization: Bearer TOKEN"));
  EXPECT_THAT(none->get_header_value("WWW-Authenticate"), HasSubstr("Bearer"));
  httplib::Result wrong = Get("/v1/nodes", std::string("Bearer ") + kOtherToken);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_THAT(wrong->body, HasSubstr("not accepted"));
  httplib::Result basic = Get("/v1/nodes", std::string("Basic ") + kToken);
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
  httplib::Result prefix = Get("/v1/nodes", std::string("Bearer ") + std::string(kToken, 20));
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->status, 401);
  httplib::Result ok = Get("/v1/nodes", std::string("bearer ") + kToken);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->body, "[]");
}

TEST_F(OperatorPortTest, RotatedTokenFileIsPickedUpAndABrokenOneKeepsTheOldTokens) {
  Start(token_file_);
  Write(std::string(kOtherToken) + "\n");
  std::filesystem::last_write_time(
      token_file_, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(5));
  clock_.Advance(absl::Seconds(1));
  httplib::Result rotated = Get("/v1/nodes", std::string("Bearer ") + kOtherToken);
  ASSERT_TRUE(rotated);
  EXPECT_EQ(rotated->status, 200);
  httplib::Result old = Get("/v1/nodes", std::string("Bearer ") + kToken);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 401);
  Write("short\n");
  std::filesystem::last_write_time(
      token_file_, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(10));
  clock_.Advance(absl::Seconds(1));
  httplib::Result kept = Get("/v1/nodes", std::string("Bearer ") + kOtherToken);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200);
}

TEST_F(OperatorPortTest, WithoutATokenFileTheApiIsRefused) {
  Start("");
  httplib::Result r = Get("/v1/nodes", std::string("Bearer ") + kToken);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("operator.tokenFile"));
  httplib::Result metrics = Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

TEST_F(OperatorPortTest, SchedulerVerbsAreNotServed) {
  Start(token_file_);
  httplib::Result r = client_->Post("/filter", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
}

TEST(OperatorAuthTest, UnreadableTokenFileIsAStartupErrorNamingIt) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  absl::StatusOr<std::unique_ptr<OperatorAuth>> auth =
      OperatorAuth::Create({.token_file = "/nonexistent/neighborly/tokens"}, clock);
  ASSERT_FALSE(auth.ok());
  EXPECT_THAT(auth.status().message(), HasSubstr("/nonexistent/neighborly/tokens"));
}

}  // namespace
}  // namespace neighborly::extender
