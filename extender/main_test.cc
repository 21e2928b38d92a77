// The neighborly-extender binary end to end: flags, config errors, the
// "listening" line, a real request, SIGTERM with state saved.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/process_metrics.h"
#include "extender/src/http/testing/raw_client.h"
#include "test/support/subprocess.h"
#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;
using testing::TestPki;

std::unique_ptr<Subprocess> Start(std::vector<std::string> args) {
  args.insert(args.begin(), NEIGHBORLY_EXTENDER_BINARY);
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(args);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

// The HTTP port from the "listening" line; 0 when there is none.
int HttpPort(Subprocess& p) {
  std::optional<std::string> line = p.WaitForLine("listening http=", absl::Seconds(30));
  std::smatch m;
  if (!line || !std::regex_search(*line, m, std::regex(R"(http=127\.0\.0\.1:(\d+))"))) return 0;
  return std::stoi(m[1]);
}

std::string TempDir(const std::string& name) {
  const std::string dir = std::string(NEIGHBORLY_BINARY_DIR) + "/extender_main_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ExtenderMainTest, VersionAndHelp) {
  auto version = Start({"--version"});
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->Wait(absl::Seconds(20)), 0);
  auto help = Start({"--help"});
  ASSERT_NE(help, nullptr);
  EXPECT_EQ(help->Wait(absl::Seconds(20)), 0);
}

TEST(ExtenderMainTest, BadFlagOrConfigExitsTwoWithOneLine) {
  auto bad_flag = Start({"--http-adress", "x"});
  ASSERT_NE(bad_flag, nullptr);
  EXPECT_EQ(bad_flag->Wait(absl::Seconds(20)), 2);
  EXPECT_EQ(bad_flag->Stderr(),
            "neighborly-extender: unknown flag \"--http-adress\" (see --help)\n");

  const std::string dir = TempDir("bad_config");
  std::ofstream(dir + "/extender.yaml")
      << "http:\n  address: 127.0.0.1:0\nmodel:\n  maxAge: soon\n";
  auto bad_config = Start({"--config", dir + "/extender.yaml"});
  ASSERT_NE(bad_config, nullptr);
  EXPECT_EQ(bad_config->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(bad_config->Stderr(),
              HasSubstr("extender.yaml:4: model.maxAge: expected a duration"));
}

TEST(ExtenderMainTest, ServesAndShutsDownCleanlyOnSigterm) {
  const std::string dir = TempDir("serve");
  const std::string state = dir + "/state.json";
  std::ofstream(dir + "/extender.yaml")
      << "state:\n  file: " << state << "\n  saveInterval: 1s\nlog:\n  level: info\n"
      << "readiness:\n  grace: 1h\n";
  auto p = Start({"--config", dir + "/extender.yaml", "--http-address", "127.0.0.1:0",
                  "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext"});
  ASSERT_NE(p, nullptr);
  std::optional<std::string> line = p->WaitForLine("listening http=", absl::Seconds(30));
  ASSERT_TRUE(line.has_value()) << p->Stderr();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*line, m,
                                std::regex(R"(listening http=127\.0\.0\.1:(\d+) grpc=\S+:(\d+))")))
      << *line;
  const int http_port = std::stoi(m[1]);
  EXPECT_GT(http_port, 0);
  EXPECT_GT(std::stoi(m[2]), 0);

  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(20, 0);
  std::ifstream in(std::string(NEIGHBORLY_SOURCE_DIR) +
                   "/test/testdata/extender/example_b_filter_names.json");
  std::stringstream body;
  body << in.rdbuf();
  httplib::Result filter = client.Post("/filter", body.str(), "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 200);
  // No telemetry at all: every node passes (fail open).
  EXPECT_EQ(nlohmann::json::parse(filter->body)["NodeNames"],
            nlohmann::json::parse(R"(["worker-1","worker-2"])"));
  // It answers (fail open) but is not ready: no agent has reported, and
  // without a state file it waits one report interval plus the grace.
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_THAT(ready->body, HasSubstr("waiting for telemetry: 0 node(s) reported"));
  httplib::Result nodes = client.Get("/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->body, "[]");

  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0) << p->Stderr();
  EXPECT_TRUE(std::filesystem::exists(state));
}

TEST(ExtenderMainTest, RefusesPlaintextTelemetryUnlessAskedFor) {
  auto p = Start({"--http-address", "127.0.0.1:0", "--grpc-address", "127.0.0.1:0"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Wait(absl::Seconds(20)), 2);
  EXPECT_EQ(p->Stderr(),
            "neighborly-extender: telemetry needs TLS (grpc.tls.certFile, keyFile and caFile) or "
            "an explicit grpc.insecurePlaintext: true / --grpc-insecure-plaintext\n");
  const std::string dir = TempDir("identity_without_keys");
  std::ofstream(dir + "/extender.yaml")
      << "grpc:\n  insecurePlaintext: true\n  identity:\n    issuer: https://k8s\n"
      << "    jwksFile: " << dir << "/missing.json\n";
  auto identity = Start({"--config", dir + "/extender.yaml"});
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(identity->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(identity->Stderr(),
              HasSubstr("grpc.identity: " + dir + "/missing.json: cannot read"));
}

// A TLS file that does not load stops the start with one line naming the
// listener, the file and the problem, before either port listens.
TEST(ExtenderMainTest, UnusableTlsFilesExitTwoNamingTheFile) {
  const std::string dir = TempDir("bad_tls");
  TestPki pki(dir);
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "neighborly-extender").ok());
  ASSERT_TRUE(pki.Issue("ca", "other", "neighborly-extender").ok());
  std::ofstream(dir + "/https.yaml")
      << "http:\n  address: 127.0.0.1:0\n  tls:\n    certFile: " << pki.Path("server.crt")
      << "\n    keyFile: " << pki.Path("other.key")
      << "\ngrpc:\n  address: 127.0.0.1:0\n  insecurePlaintext: true\n";
  auto https = Start({"--config", dir + "/https.yaml"});
  ASSERT_NE(https, nullptr);
  EXPECT_EQ(https->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(https->Stderr(),
              HasSubstr("http.tls: key file " + pki.Path("other.key") +
                        " does not belong to certificate " + pki.Path("server.crt")));
  EXPECT_THAT(https->Stderr(), ::testing::Not(HasSubstr("listening")));

  std::ofstream(dir + "/grpc.yaml")
      << "http:\n  address: 127.0.0.1:0\ngrpc:\n  address: "
         "127.0.0.1:0\n  tls:\n    caFile: "
      << dir << "/missing.crt\n    certFile: " << pki.Path("server.crt")
      << "\n    keyFile: " << pki.Path("server.key") << "\n";
  auto grpc = Start({"--config", dir + "/grpc.yaml"});
  ASSERT_NE(grpc, nullptr);
  EXPECT_EQ(grpc->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(grpc->Stderr(), HasSubstr("grpc.tls: CA file " + dir + "/missing.crt: cannot read"));
}

// Both ports with TLS: telemetry over mutual TLS, kube-scheduler's verbs over
// HTTPS with a client certificate required.
TEST(ExtenderMainTest, ServesHttpsAndMutualTlsFromConfiguredFiles) {
  // A refused TLS handshake makes the client's next write raise SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  const std::string dir = TempDir("tls");
  TestPki pki(dir);
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "neighborly-extender").ok());
  ASSERT_TRUE(pki.Issue("ca", "scheduler", "kube-scheduler").ok());
  std::ofstream(dir + "/extender.yaml")
      << "http:\n  address: 127.0.0.1:0\n  tls:\n    certFile: " << pki.Path("server.crt")
      << "\n    keyFile: " << pki.Path("server.key") << "\n    clientCaFile: " << pki.Path("ca.crt")
      << "\ngrpc:\n  address: 127.0.0.1:0\n  tls:\n    caFile: " << pki.Path("ca.crt")
      << "\n    certFile: " << pki.Path("server.crt") << "\n    keyFile: " << pki.Path("server.key")
      << "\n";
  auto p = Start({"--config", dir + "/extender.yaml"});
  ASSERT_NE(p, nullptr);
  const int port = HttpPort(*p);
  ASSERT_GT(port, 0) << p->Stderr();

  httplib::SSLClient scheduler("localhost", port, pki.Path("scheduler.crt"),
                               pki.Path("scheduler.key"));
  scheduler.set_ca_cert_path(pki.Path("ca.crt").c_str());
  scheduler.enable_server_certificate_verification(true);
  scheduler.set_read_timeout(20, 0);
  httplib::Result healthz = scheduler.Get("/healthz");
  ASSERT_TRUE(healthz) << httplib::to_string(healthz.error());
  EXPECT_EQ(healthz->status, 200);
  httplib::Result metrics = scheduler.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body,
              HasSubstr("neighborly_ingest_refused_total{reason=\"rate_limited\"} 0"));
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_ingest_reports_total"));

  // Without a client certificate the handshake fails.
  httplib::SSLClient anonymous("localhost", port);
  anonymous.set_ca_cert_path(pki.Path("ca.crt").c_str());
  anonymous.enable_server_certificate_verification(true);
  anonymous.set_read_timeout(20, 0);
  EXPECT_FALSE(anonymous.Get("/healthz"));
  // Plain HTTP gets no answer from the HTTPS port.
  httplib::Client plain("127.0.0.1", port);
  plain.set_read_timeout(20, 0);
  httplib::Result plain_result = plain.Get("/healthz");
  EXPECT_TRUE(!plain_result || plain_result->status != 200);

  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0) << p->Stderr();
}

// The extender checks the telemetry certificate files before gRPC sees them,
// and logs and counts a rotation that does not load, then the one that does.
TEST(ExtenderMainTest, TelemetryCertificateReloadsAreLoggedAndCounted) {
  const std::string dir = TempDir("grpc_reload");
  TestPki pki(dir);
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "neighborly-extender").ok());
  ASSERT_TRUE(pki.Issue("ca", "rotated", "neighborly-extender").ok());
  std::ofstream(dir + "/extender.yaml")
      << "http:\n  address: 127.0.0.1:0\ngrpc:\n  address: 127.0.0.1:0\n  tls:\n    caFile: "
      << pki.Path("ca.crt") << "\n    certFile: " << pki.Path("server.crt")
      << "\n    keyFile: " << pki.Path("server.key") << "\n    reloadInterval: 1s\n";
  auto p = Start({"--config", dir + "/extender.yaml"});
  ASSERT_NE(p, nullptr);
  const int port = HttpPort(*p);
  ASSERT_GT(port, 0) << p->Stderr();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(20, 0);
  auto metric = [&http](const std::string& sample) {
    httplib::Result r = http.Get("/metrics");
    return r && r->body.find(sample) != std::string::npos;
  };
  auto eventually = [&metric](const std::string& sample) {
    for (int i = 0; i < 300 && !metric(sample); ++i) absl::SleepFor(absl::Milliseconds(100));
    return metric(sample);
  };
  ASSERT_TRUE(metric(R"(neighborly_tls_reload_failures_total{listener="grpc"} 0)"));

  // A certificate whose key has not followed yet: refused, counted, named.
  std::filesystem::copy_file(pki.Path("rotated.crt"), pki.Path("server.crt"),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(eventually(R"(neighborly_tls_reload_failures_total{listener="grpc"} 1)"))
      << p->Stderr();
  EXPECT_TRUE(metric(R"(neighborly_tls_reloads_total{listener="grpc"} 0)"));
  EXPECT_TRUE(metric(R"(neighborly_tls_reload_failures_total{listener="http"} 0)"));
  EXPECT_THAT(p->Stderr(), HasSubstr("grpc.tls"));
  EXPECT_THAT(p->Stderr(), HasSubstr(pki.Path("server.key")));

  // The key follows: the pair loads.
  std::filesystem::copy_file(pki.Path("rotated.key"), pki.Path("server.key"),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(eventually(R"(neighborly_tls_reloads_total{listener="grpc"} 1)")) << p->Stderr();
  EXPECT_TRUE(metric(R"(neighborly_tls_reload_failures_total{listener="grpc"} 1)"));

  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0) << p->Stderr();
}

}  // namespace
}  // namespace neighborly

namespace neighborly {
namespace {

// Issue 15, finding 8: a state path that is a FIFO made start-up wait forever
// for a writer; now it is refused at once, naming the file.
TEST(ExtenderMainTest, AStatePathThatIsNotARegularFileIsRefused) {
  const std::string dir = TempDir("fifo_state");
  const std::string fifo = dir + "/state.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::ofstream(dir + "/extender.yaml") << "state:\n  file: " << fifo << "\n";
  auto p = Start({"--config", dir + "/extender.yaml", "--http-address", "127.0.0.1:0",
                  "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext"});
  ASSERT_NE(p, nullptr);
  const std::optional<int> code = p->Wait(absl::Seconds(20));
  ASSERT_TRUE(code.has_value()) << "the extender hung on a FIFO state path";
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(p->Stderr(), HasSubstr(fifo + " is not a regular file"));
}

// Issue 15, finding 8: a failing save was only a log line; now it is counted.
TEST(ExtenderMainTest, FailedStateSavesAreCounted) {
  const std::string dir = TempDir("save_fails");
  std::ofstream(dir + "/not-a-directory") << "x";
  std::ofstream(dir + "/extender.yaml")
      << "state:\n  file: " << dir << "/not-a-directory/state.json\n  saveInterval: 1s\n";
  auto p = Start({"--config", dir + "/extender.yaml", "--http-address", "127.0.0.1:0",
                  "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext"});
  ASSERT_NE(p, nullptr);
  const int port = HttpPort(*p);
  ASSERT_GT(port, 0) << p->Stderr();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(20, 0);
  double failures = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (failures < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    httplib::Result m = client.Get("/metrics");
    ASSERT_TRUE(m);
    const std::string key = "\nneighborly_state_save_failures_total ";
    const size_t at = m->body.find(key);
    ASSERT_NE(at, std::string::npos) << "no neighborly_state_save_failures_total";
    failures = std::stod(m->body.substr(at + key.size()));
  }
  EXPECT_GE(failures, 1);
  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0);
  EXPECT_THAT(p->Stderr(), HasSubstr("saving state to"));
}

}  // namespace
}  // namespace neighborly

namespace neighborly {
namespace {

// Resident memory of a process, in bytes (VmRSS).
int64_t ResidentBytes(int pid) {
  return static_cast<int64_t>(ReadStatusBytes(pid, "VmRSS").value_or(-1));
}

// Sends `request` on a fresh connection and reads until the server closes it
// (or 60 s pass); returns what came back.
std::string Exchange(int port, const std::string& request) {
  ::neighborly::extender::testing::RawClient client(port, 60);
  client.Send(request);  // the server may refuse early and close
  bool closed = false;
  return client.ReadUntilClosed(closed);
}

// Issue 15, finding 2: a 54 MiB /filter of repeated names raised RSS from 67 to
// 666 MB and it stayed; 48 MB of header lines left 633 MB. The memory of such
// requests must go back to the system once they are answered. (On the build
// VM the binary before issue 15 also stayed under this bound for these
// requests: 24 -> 73 MB; this test guards the bound, the finding's numbers
// were not reproduced here. docs/performance.md.)
TEST(ExtenderMainTest, HostileRequestsLeaveNoMemoryBehind) {
  auto p = Start({"--http-address", "127.0.0.1:0", "--grpc-address", "127.0.0.1:0",
                  "--grpc-insecure-plaintext"});
  ASSERT_NE(p, nullptr);
  const int port = HttpPort(*p);
  ASSERT_GT(port, 0) << p->Stderr();
  const std::string small = R"({"Pod":{},"NodeNames":["a","b"]})";
  auto post = [](const std::string& path, const std::string& body) {
    return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\nContent-Length: ", body.size(),
                        "\r\nConnection: close\r\n\r\n", body);
  };
  ASSERT_THAT(Exchange(port, post("/filter", small)), HasSubstr("HTTP/1.1 200"));
  const int64_t baseline = ResidentBytes(p->pid());
  ASSERT_GT(baseline, 0);

  // ~40 MiB of repeated names, as /filter and as /prioritize.
  std::string big = R"({"Pod":{},"NodeNames":[)";
  while (big.size() < (40 << 20)) big += R"("node-1234567",)";
  big += R"("last"]})";
  for (const char* verb : {"/filter", "/prioritize"}) {
    // Decoded in full, refused before evaluation (2.8 M names > 50,000).
    const std::string reply = Exchange(port, post(verb, big));
    EXPECT_THAT(reply.substr(0, 64), HasSubstr("HTTP/1.1 400")) << verb;
    EXPECT_THAT(reply, HasSubstr("http.maxNamesPerRequest")) << verb;
  }
  // ~48 MB of header lines.
  std::string headers = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  const std::string value(7900, 'h');
  for (int i = 0; headers.size() < (48 << 20); ++i) {
    absl::StrAppend(&headers, "X-Flood-", i, ": ", value, "\r\n");
  }
  headers += "\r\n";
  EXPECT_THAT(Exchange(port, headers).substr(0, 64), HasSubstr("HTTP/1.1 431"));

  // What stays: bounded, well below what one request took (hundreds of MB).
  constexpr int64_t kAllowedGrowth = 96 << 20;
  int64_t after = ResidentBytes(p->pid());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (after - baseline > kAllowedGrowth && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
    after = ResidentBytes(p->pid());
  }
  std::printf("RSS %.1f MB before, %.1f MB after the hostile requests\n", baseline / 1e6,
              after / 1e6);
  EXPECT_LE(after - baseline, kAllowedGrowth) << "baseline " << baseline << " after " << after;
  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0) << p->Stderr();
}

}  // namespace
}  // namespace neighborly
