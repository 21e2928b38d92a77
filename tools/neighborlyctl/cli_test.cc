// SPDX-License-Identifier: Apache-2.0
// neighborlyctl against a tiny in-test HTTP server on a loopback port.
#include "tools/neighborlyctl/cli.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::ctl {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kNodes[] = R"({"nodes": [
  {"name": "node-a", "contention_score": 0.2, "telemetry_age_seconds": 1},
  {"name": "node-b", "contention_score": 0.9, "telemetry_age_seconds": 1}]})";

class FakeExtender {
 public:
  FakeExtender() {
    server_.Get("/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(kNodes, "application/json");
    });
    server_.Get(R"(/v1/nodes/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      last_node_ = req.matches[1];
      last_target_ = req.target;
      if (last_node_ == "node-a") {
        res.set_content(R"({"name": "node-a", "contention_score": 0.2})", "application/json");
      } else if (last_node_ == "garbled") {
        res.set_content("{\"name\": ", "application/json");
      } else {
        res.status = 404;
        res.set_content(R"({"error": "node \")" + last_node_ + R"(\" not found"})",
                        "application/json");
      }
    });
    server_.Get("/v1/decisions", [this](const httplib::Request& req, httplib::Response& res) {
      last_pod_ = req.get_param_value("pod");
      last_limit_ = req.get_param_value("limit");
      res.set_content(R"({"decisions": [{"verb": "filter", "pod": "content/a b",
          "nodes": [{"node": "node-b", "feasible": false, "reason": "membw 84% > 80% on NUMA node 1"}]}]})",
                      "application/json");
    });
    server_.Get("/v1/broken", [](const httplib::Request&, httplib::Response& res) {
      res.status = 500;
      res.set_content("internal\nerror", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Connections queue in the bound socket's backlog until the loop accepts
    // them, so no wait is needed before the first request.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeExtender() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string last_node_, last_target_, last_pod_, last_limit_;

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

struct Result {
  int code;
  std::string out, err;
};

Result Ctl(std::vector<std::string> args, const std::string& env = "") {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err, env);
  return {code, out.str(), err.str()};
}

// A loopback port with nothing listening: bind one, then close it.
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot bind a loopback socket";
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(Cli, NodesPrintsATableSortedByContention) {
  FakeExtender ext;
  Result r = Ctl({"--server", ext.url(), "nodes"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_LT(r.out.find("node-b"), r.out.find("node-a"));
}

TEST(Cli, JsonOutputIsTheServersAnswer) {
  FakeExtender ext;
  Result r = Ctl({"nodes", "-o", "json", "--server=" + ext.url()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(kNodes));
}

TEST(Cli, ServerComesFromTheEnvironmentWhenNoFlag) {
  FakeExtender ext;
  Result r = Ctl({"node", "node-a"}, ext.url());
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("node-a"));
}

TEST(Cli, AnErrorAnswerIsOneLineWithTheServersMessage) {
  FakeExtender ext;
  Result r = Ctl({"--server", ext.url(), "node", "nope"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(r.err, HasSubstr("404"));
  EXPECT_THAT(r.err, HasSubstr("node \"nope\" not found"));
  EXPECT_THAT(r.err, EndsWith("\n"));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(Cli, AGarbledAnswerIsAnError) {
  FakeExtender ext;
  Result r = Ctl({"--server", ext.url(), "node", "garbled"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("bad answer"));
  EXPECT_THAT(r.err, HasSubstr("not JSON"));
}

TEST(Cli, AnUnreachableServerIsOneLineAndNonZero) {
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  Result r = Ctl({"--server", url, "nodes", "--timeout", "2"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, HasSubstr("cannot reach " + url));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(Cli, ExplainEscapesThePodAndPassesTheLimit) {
  FakeExtender ext;
  Result r = Ctl({"--server", ext.url(), "explain", "content/a b", "--limit", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ext.last_pod_, "content/a b");
  EXPECT_EQ(ext.last_limit_, "3");
  EXPECT_THAT(r.out, HasSubstr("membw 84% > 80% on NUMA node 1"));
}

TEST(Cli, NodeNamesAreEscapedInThePath) {
  FakeExtender ext;
  Ctl({"--server", ext.url(), "node", "a/b"});
  EXPECT_EQ(ext.last_target_, "/v1/nodes/a%2Fb");
}

TEST(Cli, UsageErrorsExitTwoWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"nodes"},                                                  // no server
           {"--server", "http://x:1"},                                 // no command
           {"--server", "http://x:1", "frobnicate"},                   // unknown command
           {"--server", "http://x:1", "node"},                         // missing NAME
           {"--server", "http://x:1", "-o", "xml", "nodes"},           // bad format
           {"--server", "http://x:99999", "nodes"},                    // bad port
           {"--server", "ftp://x:1", "nodes"},                         // not http(s)
           {"--server", "http://x:1", "--cacert", "ca.pem", "nodes"},  // TLS flag, no https
           {"--server", "https://x:1", "--cert", "c.pem", "nodes"},    // cert without key
           {"--server", "https://x:1", "--token-file", "/nonexistent/token", "nodes"},
           {"--server", "http://x:1", "workload", "shop/web"},  // not NS/KIND/NAME
           {"--server", "http://x:1", "workloads", "extra"},    // no argument taken
           {"--bogus", "nodes"},
           {"--server"}}) {
    Result r = Ctl(args);
    EXPECT_EQ(r.code, kExitUsage) << args.back();
    EXPECT_THAT(r.err, HasSubstr("neighborlyctl: ")) << args.back();
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_THAT(r.out, IsEmpty());
  }
}

TEST(Cli, HelpAndVersion) {
  Result help = Ctl({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, HasSubstr("explain POD"));
  Result version = Ctl({"--version"});
  EXPECT_EQ(version.code, kExitOk);
  EXPECT_THAT(version.out, HasSubstr("neighborlyctl "));
  EXPECT_THAT(version.out, Not(IsEmpty()));
}

TEST(ParseServerUrl, AcceptsHostPortAndPrefix) {
  absl::StatusOr<ServerUrl> url = ParseServerUrl("http://extender.neighborly.svc:8888/api/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "extender.neighborly.svc");
  EXPECT_EQ(url->port, 8888);
  EXPECT_EQ(url->path_prefix, "/api");
  url = ParseServerUrl("127.0.0.1:9000");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->port, 9000);
  EXPECT_FALSE(ParseServerUrl("http://:80").ok());
  EXPECT_FALSE(url->https);
}

TEST(ParseServerUrl, AcceptsHttpsWithItsDefaultPort) {
  absl::StatusOr<ServerUrl> url = ParseServerUrl("https://localhost:8889");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_TRUE(url->https);
  EXPECT_EQ(url->port, 8889);
  url = ParseServerUrl("https://extender.example");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->port, 443);
  EXPECT_FALSE(ParseServerUrl("ftp://x:1").ok());
}

}  // namespace
}  // namespace neighborly::ctl
