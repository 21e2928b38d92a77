// The operator port end to end (docs/security.md, "The operator port"): the
// extender binary with the chart's default TLS (the scheduler port wants a
// client certificate) and an HTTPS operator port without one; Prometheus-style
// scrapes and probes work there, /v1 wants a bearer token, and the
// neighborlyctl binary reaches it with --cacert and --token-file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "test/support/subprocess.h"
#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;
using testing::TestPki;

constexpr char kToken[] = "operator-token-0123456789abcdef";

// Runs a command line, returns its exit status and what it printed (stdout and stderr).
std::pair<int, std::string> RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::array<char, 4096> buf;
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class OperatorPortMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    // One directory per test: ctest runs them in parallel.
    dir_ = std::string(NEIGHBORLY_BINARY_DIR) + "/extender_operator_port_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    pki_ = std::make_unique<TestPki>(dir_);
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server", "neighborly-extender").ok());
    std::ofstream(dir_ + "/tokens") << "# operators\n" << kToken << "\n";
    std::ofstream(dir_ + "/token") << kToken << "\n";
    std::ofstream(dir_ + "/extender.yaml")
        << "http:\n  address: 127.0.0.1:0\n  tls:\n    certFile: " << pki_->Path("server.crt")
        << "\n    keyFile: " << pki_->Path("server.key")
        << "\n    clientCaFile: " << pki_->Path("ca.crt")
        << "\noperator:\n  address: 127.0.0.1:0\n  tokenFile: " << dir_ << "/tokens"
        << "\n  tls:\n    certFile: " << pki_->Path("server.crt")
        << "\n    keyFile: " << pki_->Path("server.key")
        << "\ngrpc:\n  address: 127.0.0.1:0\n  insecurePlaintext: true\n"
        // Ready at once: no agents stream here (the rule itself: readiness_test, replicas_test).
        << "readiness:\n  reportInterval: 10ms\n  grace: 0s\n";
    absl::StatusOr<std::unique_ptr<Subprocess>> p =
        Subprocess::Start({NEIGHBORLY_EXTENDER_BINARY, "--config", dir_ + "/extender.yaml"});
    ASSERT_TRUE(p.ok()) << p.status();
    extender_ = std::move(*p);
    std::optional<std::string> line = extender_->WaitForLine("listening http=", absl::Seconds(30));
    ASSERT_TRUE(line.has_value()) << extender_->Stderr();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(*line, m, std::regex(R"(operator=127\.0\.0\.1:(\d+))"))) << *line;
    operator_port_ = std::stoi(m[1]);
  }
  void TearDown() override {
    if (extender_ != nullptr) {
      EXPECT_EQ(extender_->Terminate(absl::Seconds(30)), 0) << extender_->Stderr();
    }
  }
  std::unique_ptr<httplib::SSLClient> Client() {
    auto client = std::make_unique<httplib::SSLClient>("localhost", operator_port_);
    client->set_ca_cert_path(pki_->Path("ca.crt").c_str());
    client->enable_server_certificate_verification(true);
    client->set_read_timeout(20, 0);
    return client;
  }
  std::string Ctl(const std::string& args) {
    return std::string(NEIGHBORLY_CTL_BINARY) +
           " --server https://localhost:" + std::to_string(operator_port_) + " " + args;
  }

  std::string dir_;
  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<Subprocess> extender_;
  int operator_port_ = 0;
};

TEST_F(OperatorPortMainTest, ScrapesAndProbesNeedNoClientCertificate) {
  auto client = Client();
  httplib::Result metrics = client->Get("/metrics");
  ASSERT_TRUE(metrics) << httplib::to_string(metrics.error());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_ingest_reports_total"));
  EXPECT_THAT(metrics->body,
              HasSubstr("neighborly_extender_build_info{version=\"" NEIGHBORLY_VERSION "\"} 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("\nprocess_resident_memory_bytes "));
  EXPECT_THAT(metrics->body, HasSubstr("\nprocess_open_fds "));
  // The whole page, as Prometheus reads it (promtool: scripts/setup.sh).
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    std::ofstream(dir_ + "/metrics.prom") << metrics->body;
    const auto [code, out] = RunCommand("promtool check metrics < " + dir_ + "/metrics.prom");
    EXPECT_EQ(code, 0) << out;
  }
  for (const char* path : {"/healthz", "/readyz"}) {
    httplib::Result r = client->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
  // The scheduler verbs are not served there.
  httplib::Result filter = client->Post("/filter", "{}", "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 404);
}

TEST_F(OperatorPortMainTest, ApiWantsABearerToken) {
  auto client = Client();
  httplib::Result anonymous = client->Get("/v1/nodes");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  httplib::Result with_token =
      client->Get("/v1/nodes", {{"Authorization", std::string("Bearer ") + kToken}});
  ASSERT_TRUE(with_token);
  EXPECT_EQ(with_token->status, 200);
  EXPECT_EQ(with_token->body, "[]");
}

TEST_F(OperatorPortMainTest, NeighborlyctlOverHttpsWithCaAndToken) {
  const std::string cacert = " --cacert " + pki_->Path("ca.crt");
  auto [code, out] = RunCommand(Ctl(cacert + " --token-file " + dir_ + "/token -o yaml nodes"));
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "[]\n");
  // Without the token: the server's reason, exit 1.
  std::tie(code, out) = RunCommand(Ctl(cacert + " nodes"));
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("401"));
  EXPECT_THAT(out, HasSubstr("Authorization: Bearer TOKEN"));
  // Without the CA the server's certificate is not trusted, and the error says what to do.
  std::tie(code, out) = RunCommand(Ctl("--token-file " + dir_ + "/token nodes"));
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("--cacert"));
}

}  // namespace
}  // namespace neighborly
