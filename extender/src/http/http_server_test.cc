// Real HTTP over loopback (port 0) against the server with a fake Decider.
#include "extender/src/http/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "extender/src/http/testing/fake_decider.h"
#include "extender/src/http/testing/loopback_server_test.h"
#include "extender/src/http/testing/raw_client.h"
#include "extender/src/http/testing/tls_client.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/extender/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using ::neighborly::extender::testing::RawClient;
using ::neighborly::extender::testing::TlsClient;

std::string PostRequest(std::string_view path, std::string_view body) {
  return std::string("POST ") + std::string(path) +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

class HttpServerTest : public LoopbackServerTest {
 protected:
  void Start(HttpServerOptions options = {}) {
    StartServer(options);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(20, 0);
  }
  void TearDown() override {
    client_.reset();
    LoopbackServerTest::TearDown();
  }
  httplib::Result Post(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), body, "application/json");
  }

  std::unique_ptr<httplib::Client> client_;
};

// A Stop() right after Start() returns: with the cpp-httplib server it was
// lost when the listen thread had not yet marked the server running, and the
// extender hung on a SIGTERM just after its "listening" line (2 runs in 24 of
// extender_placement_port_test).
TEST(HttpServerStopTest, StopRightAfterStartReturns) {
  FakeDecider decider;
  ExtenderMetrics metrics;
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  for (int i = 0; i < 50; ++i) {
    HttpServer server(options, decider, metrics);
    ASSERT_TRUE(server.Start().ok());
    server.Stop();  // a lost stop() leaves this join waiting for ever (ctest's timeout)
  }
}

TEST_F(HttpServerTest, FilterWithNodeNames) {
  Start();
  decider_.Reject("worker-2", "membw 84% > 80% on NUMA node 1");
  httplib::Result r = Post("/filter", Fixture("example_b_filter_names.json"));
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(
      r->body,
      R"({"Nodes":null,"NodeNames":["worker-1"],"FailedNodes":{"worker-2":"membw 84% > 80% on NUMA node 1"},"FailedAndUnresolvableNodes":{},"Error":""})");
  EXPECT_EQ(decider_.last_pod().name, "trainer-7d9f8-x2kq4");
}

TEST_F(HttpServerTest, FilterWithFullNodesReturnsSurvivorsUnchanged) {
  Start();
  decider_.Reject("worker-2", "isolation: batch pod would run beside latency-critical");
  for (const char* fixture :
       {"example_a_filter_nodes.json", "example_a_filter_nodes.pretty.json"}) {
    const std::string request = Fixture(fixture);
    httplib::Result r = Post("/filter", request);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const auto reply = nlohmann::json::parse(r->body);
    EXPECT_TRUE(reply["NodeNames"].is_null());
    ASSERT_EQ(reply["Nodes"]["items"].size(), 1u);
    EXPECT_EQ(reply["Nodes"]["items"][0], nlohmann::json::parse(request)["Nodes"]["items"][0]);
    // Byte for byte: the item text of the request appears verbatim in the reply.
    const std::string prefix = R"({"Nodes":{"metadata":{},"items":[)";
    ASSERT_EQ(r->body.rfind(prefix, 0), 0u);
    const size_t end = r->body.find(R"(]},"NodeNames":null)");
    ASSERT_NE(end, std::string::npos);
    const std::string item = r->body.substr(prefix.size(), end - prefix.size());
    EXPECT_NE(request.find(item), std::string::npos);
    EXPECT_EQ(reply["FailedNodes"]["worker-2"],
              "isolation: batch pod would run beside latency-critical");
  }
}

TEST_F(HttpServerTest, PrioritizeScoresEveryNode) {
  Start();
  decider_.SetScore("worker-1", 7);
  decider_.SetScore("worker-3", 10);
  decider_.SetScore("worker-7", 0);
  httplib::Result r = Post("/prioritize", Fixture("example_c_prioritize_names.json"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(
      r->body,
      R"([{"Host":"worker-1","Score":7},{"Host":"worker-3","Score":10},{"Host":"worker-7","Score":0}])");
}

TEST_F(HttpServerTest, BadInputIs400WithJsonError) {
  Start();
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty request body"},
      {R"({"Pod":{},"NodeNames":["a")", "truncated"},
      {R"({"Pod":{},"NodeNames":["a"]} trailing)", "trailing data"},
      {"{\"Pod\":{},\"NodeNames\":[\"\xFF\"]}", "UTF-8"},
      {R"({"Pod":{},"NodeNames":[1]})", "NodeNames[0]"},
      {Fixture("compat_extender_args.json"), "both Nodes and NodeNames"},
      {R"({"Pod":{}})", "neither Nodes nor NodeNames"},
  };
  for (const auto& [body, needle] : cases) {
    httplib::Result r = Post("/filter", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body;
    const auto reply = nlohmann::json::parse(r->body);
    EXPECT_THAT(reply["Error"].get<std::string>(), HasSubstr(needle));
  }
  EXPECT_EQ(decider_.filter_calls.load(), 0);
  // The connection stays usable after a 400.
  httplib::Result ok = Post("/filter", R"({"Pod":{},"NodeNames":["a"]})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpServerTest, UnknownRouteIsJson404) {
  Start();
  httplib::Result r = Post("/bind", Fixture("compat_binding_args.json"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_THAT(nlohmann::json::parse(r->body)["Error"].get<std::string>(), HasSubstr("/bind"));
}

TEST_F(HttpServerTest, OversizedDeclaredBodyRefusedWithoutReadingIt) {
  HttpServerOptions options;
  options.body_limit_bytes = 1000;
  // If the server waited for the body, the client's 20 s read timeout would
  // expire first and the test would fail.
  options.read_timeout = absl::Seconds(120);
  Start(options);
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(
      raw.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: 1000000000\r\n\r\n{\"Pod\":"));
  const std::string response = raw.ReadResponse();
  EXPECT_THAT(response, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(response, HasSubstr("Connection: close"));
  EXPECT_THAT(response, HasSubstr(R"({"Error":"request body of 1000000000 bytes exceeds)"));
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIsRefused) {
  HttpServerOptions options;
  options.body_limit_bytes = 100;
  Start(options);
  RawClient raw(port_);
  ASSERT_TRUE(raw.connected());
  const std::string chunk(200, ' ');
  ASSERT_TRUE(
      raw.Send("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nc8\r\n" +
               chunk + "\r\n0\r\n\r\n"));
  EXPECT_THAT(raw.ReadResponse(), HasSubstr("HTTP/1.1 413"));
}

TEST_F(HttpServerTest, MissingContentLengthIs411) {
  Start();
  RawClient raw(port_);
  ASSERT_TRUE(raw.Send("POST /filter HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string response = raw.ReadResponse();
  EXPECT_THAT(response, HasSubstr("HTTP/1.1 411"));
  EXPECT_THAT(response, HasSubstr("Content-Length required"));
}

TEST_F(HttpServerTest, IdleAndStalledClientsDoNotBlockOthers) {
  HttpServerOptions options;
  // Long timeouts: only enough workers can let the last request through.
  options.read_timeout = absl::Seconds(120);
  options.keep_alive_timeout = absl::Seconds(120);
  Start(options);
  std::vector<std::unique_ptr<RawClient>> idle;
  const std::string request = PostRequest("/filter", R"({"Pod":{},"NodeNames":["a"]})");
  for (int i = 0; i < 30; ++i) {
    auto c = std::make_unique<RawClient>(port_);
    ASSERT_TRUE(c->connected());
    ASSERT_TRUE(c->Send(request));  // one request, then idle on keep-alive
    ASSERT_THAT(c->ReadResponse(), HasSubstr("HTTP/1.1 200"));
    idle.push_back(std::move(c));
  }
  RawClient stalled(port_);
  ASSERT_TRUE(stalled.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Len"));
  RawClient stalled_body(port_);
  ASSERT_TRUE(stalled_body.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"));

  httplib::Result r = Post("/filter", Fixture("example_b_filter_names.json"));
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, ConnectionsBeyondTheLimitGet503) {
  HttpServerOptions options;
  options.worker_threads = 2;
  options.max_connections = 2;
  options.keep_alive_timeout = absl::Seconds(120);
  Start(options);
  const std::string request = PostRequest("/filter", R"({"Pod":{},"NodeNames":["a"]})");
  RawClient a(port_), b(port_);
  ASSERT_TRUE(a.Send(request));
  ASSERT_THAT(a.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  ASSERT_TRUE(b.Send(request));
  ASSERT_THAT(b.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  RawClient c(port_);
  ASSERT_TRUE(c.Send(request));
  const std::string response = c.ReadResponse();
  EXPECT_THAT(response, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(response, HasSubstr("too many connections"));
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr("neighborly_extender_rejected_connections_total 1"));
}

TEST_F(HttpServerTest, MetricsCountRequestsAndDecisions) {
  Start();
  decider_.Reject("worker-2", "NUMA admission (topologyManagerPolicy single-numa-node): no");
  ASSERT_TRUE(Post("/filter", Fixture("example_b_filter_names.json")));
  ASSERT_TRUE(Post("/filter", "{"));
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_extender_http_requests_total{verb="filter",code="200"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_extender_http_requests_total{verb="filter",code="400"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_decisions_total{verb="filter",outcome="accepted",)"
                              R"(reason="none"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_decisions_total{verb="filter",outcome="rejected",)"
                              R"(reason="numa-admission"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_decisions_total{verb="filter",outcome="rejected",)"
                              R"(reason="isolation"} 0)"));
  // The request with malformed JSON counts once as an error.
  EXPECT_THAT(text, HasSubstr(R"(neighborly_decisions_total{verb="filter",outcome="error",)"
                              R"(reason="none"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(neighborly_decisions_total{verb="prioritize",outcome="scored",)"
                              R"(reason="none"} 0)"));
  EXPECT_THAT(
      text,
      HasSubstr(R"(neighborly_extender_http_request_duration_seconds_count{verb="filter"} 2)"));
}

// Two independent CAs, each with a server and a client certificate, and the
// "live" files the server reads (rewritten by the tests, as a Secret rotates).
class HttpsReloadTest : public HttpServerTest {
 protected:
  static void SetUpTestSuite() {
    pki_ = new ::neighborly::testing::TestPki(::testing::TempDir() + "/https-reload-pki-" +
                                              std::to_string(getpid()));
    for (const std::string ca : {"a", "b"}) {
      ASSERT_TRUE(pki_->MakeCa("ca-" + ca).ok());
      ASSERT_TRUE(pki_->Issue("ca-" + ca, "server-" + ca, "extender-" + ca).ok());
      ASSERT_TRUE(pki_->Issue("ca-" + ca, "client-" + ca, "scheduler-" + ca).ok());
    }
  }
  static void TearDownTestSuite() { delete pki_; }

  static std::string Path(const std::string& name) { return pki_->Path(name); }
  static void Install(const std::string& from, const std::string& to) {
    ASSERT_TRUE(::neighborly::testing::TestPki::Write(
                    Path(to), ::neighborly::testing::TestPki::Read(Path(from)))
                    .ok());
  }
  static void InstallServer(const std::string& which) {
    Install("server-" + which + ".crt", "live.crt");
    Install("server-" + which + ".key", "live.key");
  }

  // HTTPS with the live files, checked at every handshake.
  void StartHttps(bool client_ca) {
    HttpServerOptions options;
    options.tls_cert_file = Path("live.crt");
    options.tls_key_file = Path("live.key");
    if (client_ca) options.tls_client_ca_file = Path("live-ca.crt");
    options.tls_reload_interval = absl::ZeroDuration();
    Start(options);
  }

  static bool Served(TlsClient& client) {
    return client.Exchange(PostRequest("/filter", R"({"Pod":{},"NodeNames":["a"]})"))
        .starts_with("HTTP/1.1 200");
  }
  std::string Metrics() const {
    std::string text;
    metrics_.AppendPrometheus(text);
    return text;
  }

  static ::neighborly::testing::TestPki* pki_;
};

::neighborly::testing::TestPki* HttpsReloadTest::pki_ = nullptr;

TEST_F(HttpsReloadTest, NewConnectionsGetTheRotatedCertificateAndOldOnesKeepWorking) {
  InstallServer("a");
  StartHttps(/*client_ca=*/false);
  TlsClient before(port_);
  ASSERT_TRUE(before.handshake_ok());
  EXPECT_EQ(before.subject(), "extender-a");
  EXPECT_EQ(before.issuer(), "ca-a");
  ASSERT_TRUE(Served(before));

  InstallServer("b");
  TlsClient after(port_);
  ASSERT_TRUE(after.handshake_ok());
  EXPECT_EQ(after.subject(), "extender-b");
  EXPECT_EQ(after.issuer(), "ca-b");
  EXPECT_TRUE(Served(after));
  // The connection made before the rotation is not dropped.
  EXPECT_TRUE(Served(before));
  EXPECT_THAT(Metrics(), HasSubstr(R"(neighborly_tls_reloads_total{listener="http"} 1)"));
  EXPECT_THAT(Metrics(), HasSubstr(R"(neighborly_tls_reload_failures_total{listener="http"} 0)"));
}

TEST_F(HttpsReloadTest, FailedReloadKeepsServingTheLastGoodCertificate) {
  InstallServer("a");
  StartHttps(/*client_ca=*/false);
  InstallServer("b");
  TlsClient b(port_);
  ASSERT_EQ(b.subject(), "extender-b");

  // A half-written certificate file.
  const std::string cert_b = ::neighborly::testing::TestPki::Read(Path("server-b.crt"));
  ASSERT_TRUE(
      ::neighborly::testing::TestPki::Write(Path("live.crt"), cert_b.substr(0, cert_b.size() / 2))
          .ok());
  TlsClient after_garbage(port_);
  ASSERT_TRUE(after_garbage.handshake_ok());
  EXPECT_EQ(after_garbage.subject(), "extender-b");
  EXPECT_TRUE(Served(after_garbage));
  EXPECT_THAT(Metrics(), HasSubstr(R"(neighborly_tls_reload_failures_total{listener="http"} 1)"));

  // A certificate whose key is not (yet) the one beside it.
  Install("server-a.crt", "live.crt");
  TlsClient mismatched(port_);
  ASSERT_TRUE(mismatched.handshake_ok());
  EXPECT_EQ(mismatched.subject(), "extender-b");
  EXPECT_TRUE(Served(mismatched));
  EXPECT_THAT(Metrics(), HasSubstr(R"(neighborly_tls_reload_failures_total{listener="http"} 2)"));

  // Once the key follows, the pair is loaded.
  Install("server-a.key", "live.key");
  TlsClient a(port_);
  EXPECT_EQ(a.subject(), "extender-a");
  EXPECT_THAT(Metrics(), HasSubstr(R"(neighborly_tls_reloads_total{listener="http"} 2)"));
}

TEST_F(HttpsReloadTest, RotatedClientCaRefusesTheOldCasClients) {
  InstallServer("a");
  Install("ca-a.crt", "live-ca.crt");
  StartHttps(/*client_ca=*/true);
  TlsClient anonymous(port_);
  EXPECT_FALSE(Served(anonymous));
  TlsClient old_client(port_, Path("client-a.crt"), Path("client-a.key"));
  EXPECT_TRUE(Served(old_client));
  TlsClient new_client(port_, Path("client-b.crt"), Path("client-b.key"));
  EXPECT_FALSE(Served(new_client));

  Install("ca-b.crt", "live-ca.crt");
  TlsClient old_after(port_, Path("client-a.crt"), Path("client-a.key"));
  EXPECT_FALSE(Served(old_after));
  TlsClient new_after(port_, Path("client-b.crt"), Path("client-b.key"));
  EXPECT_TRUE(Served(new_after));
  // The connection verified before the rotation stays up.
  EXPECT_TRUE(Served(old_client));
}

TEST_F(HttpsReloadTest, BadFilesAtStartAreAnErrorNamingTheFile) {
  ASSERT_TRUE(::neighborly::testing::TestPki::Write(Path("bad.crt"), "not a certificate\n").ok());
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.tls_cert_file = Path("bad.crt");
  options.tls_key_file = Path("server-a.key");
  HttpServer server(options, decider_, metrics_);
  absl::StatusOr<int> port = server.Start();
  ASSERT_FALSE(port.ok());
  EXPECT_THAT(std::string(port.status().message()),
              HasSubstr("certificate file " + Path("bad.crt") +
                        ": no PEM certificate (BEGIN CERTIFICATE) in it"));
  options.tls_cert_file = Path("server-a.crt");
  options.tls_key_file = Path("server-b.key");
  HttpServer mismatched(options, decider_, metrics_);
  EXPECT_THAT(std::string(mismatched.Start().status().message()),
              HasSubstr("does not belong to certificate"));
}

TEST_F(HttpServerTest, StopFinishesAndRefusesNewConnections) {
  Start();
  ASSERT_TRUE(Post("/filter", R"({"Pod":{},"NodeNames":["a"]})"));
  server_->Stop();
  RawClient late(port_);
  EXPECT_FALSE(late.connected());
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

// Per-stage timestamps (issue 15, finding 7): each scheduler request's wake,
// receive, handle and send stages are counted in /metrics, and with
// http.serverTiming the first three come back in a Server-Timing header.
TEST_F(HttpServerTest, StagesAreTimedAndReportedInServerTiming) {
  HttpServerOptions options;
  options.server_timing = true;
  Start(options);
  const std::string request = PostRequest("/filter", R"({"Pod":{},"NodeNames":["a","b"]})");
  // The body arrives 150 ms after the head: the receive stage holds that.
  RawClient c(port_);
  ASSERT_TRUE(c.Send(std::string_view(request).substr(0, request.size() - 5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_TRUE(c.Send(std::string_view(request).substr(request.size() - 5)));
  const std::string reply = c.ReadResponse();
  ASSERT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      reply, m,
      std::regex(R"(Server-Timing: wake;dur=(\d+\.\d{3}), receive;dur=(\d+\.\d{3}), )"
                 R"(handle;dur=(\d+\.\d{3})\r\n)")))
      << reply;
  const double wake_ms = std::stod(m[1]);
  const double receive_ms = std::stod(m[2]);
  EXPECT_GE(receive_ms, 140.0);
  EXPECT_LT(receive_ms, 5000.0);
  EXPECT_GE(wake_ms, 0.0);
  EXPECT_LT(wake_ms, receive_ms);

  auto stage_count = [&](std::string_view stage) {
    std::string text;
    metrics_.AppendPrometheus(text);
    std::smatch n;
    const std::regex count(
        absl::StrCat(R"(neighborly_extender_http_stage_duration_seconds_count\{stage=")",
                     std::string(stage), R"("\} (\d+))"));
    return std::regex_search(text, n, count) ? std::stoi(n[1]) : -1;
  };
  for (int i = 0; i < 200 && stage_count("send") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // recorded once written
  }
  for (std::string_view stage : {"wake", "receive", "handle", "send"}) {
    EXPECT_EQ(stage_count(stage), 1) << stage;
  }
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr(R"(neighborly_extender_http_stage_duration_seconds_bucket{)"
                              R"(stage="receive",le="0.1"} 0)"));
}

TEST_F(HttpServerTest, NoServerTimingHeaderUnlessAskedFor) {
  Start();
  httplib::Result r = Post("/filter", R"({"Pod":{},"NodeNames":["a"]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Server-Timing"));
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

// Over HTTPS (the chart's default) the wake stage is measured too: OpenSSL
// reads without the kernel's timestamp, so the server peeks first.
TEST_F(HttpServerTest, WakeStageIsTimedOverTls) {
  ::neighborly::testing::TestPki pki(::testing::TempDir() + "/stage-tls-pki-" +
                                     std::to_string(getpid()));
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "extender").ok());
  HttpServerOptions options;
  options.server_timing = true;
  options.tls_cert_file = pki.Path("server.crt");
  options.tls_key_file = pki.Path("server.key");
  StartServer(options);
  TlsClient client(port_);
  ASSERT_TRUE(client.handshake_ok());
  const std::string reply =
      client.Exchange(PostRequest("/filter", R"({"Pod":{},"NodeNames":["a"]})"));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(reply, ::testing::ContainsRegex(R"(Server-Timing: wake;dur=[0-9]+\.[0-9]{3}, )"));
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr(R"(neighborly_extender_http_stage_duration_seconds_count{)"
                              R"(stage="wake"} 1)"));
}

}  // namespace
}  // namespace neighborly::extender
