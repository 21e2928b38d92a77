// The smaller findings of issue 24 (point 4), each through the real
// neighborly-extender binary: a report's claim of a pending pod's UID, the
// state file's temporary (a symlink or a FIFO put in its place), the message
// of a start that fails on a corrupt state file, and the request target and
// Host header rules of the HTTP port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "extender/src/http/testing/raw_client.h"
#include "extender/src/model/testing/report_builder.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Subprocess;
namespace tv1 = ::neighborly::telemetry::v1;

struct Extender {
  std::unique_ptr<Subprocess> process;
  int http_port = 0;
  std::string grpc_address;
};

std::string Dir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/hostile-inputs-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Extender Start(const std::string& dir, const std::string& config_yaml) {
  std::ofstream(dir + "/extender.yaml") << config_yaml;
  absl::StatusOr<testing::RunningExtender> started =
      testing::StartExtender("127.0.0.1:0", {"--config", dir + "/extender.yaml"});
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  return {std::move(started->process), started->addresses.http_port(), started->addresses.grpc};
}

std::string Exchange(int port, const std::string& request) {
  extender::testing::RawClient client(port, 20);
  if (!client.connected() || !client.Send(request)) return "";
  bool closed = false;
  return client.ReadUntilClosed(closed, 8192);
}

bool Report(const std::string& address, const tv1::NodeReport& report) {
  auto stub =
      tv1::Telemetry::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->Report(&ctx);
  tv1::ReportAck ack;
  const bool ok = stream->Write(report) && stream->Read(&ack);
  stream->WritesDone();
  return ok && stream->Finish().ok();
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Finding 4, first part: node-evil names the UID of a pod kube-scheduler is
// still placing, with forged footprint hints; before, every /filter for that
// pod refused every node (`membw ... > 80%`) for as long as it was pending.
TEST(HostileInputsTest, AReportsClaimOfAPendingPodDoesNotRefuseIt) {
  const std::string dir = Dir("claim");
  // Strict headroom for latency-critical pods and no least-harm fallback: the
  // refusal the attack caused shows as one.
  Extender e =
      Start(dir, "model:\n  isolateLatencyCritical: true\n  leastHarmFallback: false\n");
  ASSERT_GT(e.http_port, 0) << e.process->Stderr();
  const std::string uid = "6f1c0e1a-0000-4000-8000-0000000000a7";
  ASSERT_TRUE(Report(e.grpc_address, extender::testing::TwoSocketNode("node-1")));
  tv1::NodeReport evil = extender::testing::TwoSocketNode("node-evil");
  extender::testing::AddPod(evil, {.uid = uid,
                                   .namespace_name = "content",
                                   .name = "article-service-5d8f7-x1",
                                   .annotations = {{"neighborly.io/membw-bytes-per-second", "900G"},
                                                   {"neighborly.io/llc-bytes", "1Gi"}}});
  ASSERT_TRUE(Report(e.grpc_address, evil));
  const std::string body = absl::StrCat(
      R"({"Pod":{"metadata":{"namespace":"content","name":"article-service-5d8f7-x1","uid":")",
      uid, R"(","annotations":{"neighborly.io/class":"latency-critical"}}},)",
      R"("NodeNames":["node-1"]})");
  const std::string reply = Exchange(
      e.http_port,
      absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                   "Connection: close\r\nContent-Length: ", body.size(), "\r\n\r\n", body));
  ASSERT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  const nlohmann::json answer =
      nlohmann::json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false);
  ASSERT_TRUE(answer.is_object()) << reply;
  EXPECT_EQ(answer["NodeNames"], nlohmann::json::array({"node-1"})) << reply;
  EXPECT_TRUE(answer["FailedNodes"].empty()) << reply;
  EXPECT_EQ(e.process->Terminate(absl::Seconds(30)), 0) << e.process->Stderr();
}

// Finding 4, the state file: its temporary is a new file of the extender's.
// A symlink put at the temporary's path was written through (to its target);
// a FIFO there blocked every save, and the shutdown, silently.
TEST(HostileInputsTest, TheStateFilesTemporaryIsNeverFollowed) {
  for (const std::string what : {"symlink", "fifo"}) {
    const std::string dir = Dir("state-" + what);
    const std::string state = dir + "/state.json";
    Extender e = Start(dir, absl::StrCat("state:\n  file: ", state, "\n  saveInterval: 1h\n"));
    ASSERT_GT(e.http_port, 0) << e.process->Stderr();
    const std::string tmp = absl::StrCat(state, ".tmp.", e.process->pid());
    std::ofstream(dir + "/victim") << "keep";
    if (what == "symlink") {
      std::filesystem::create_symlink(dir + "/victim", tmp);
    } else {
      ASSERT_EQ(::mkfifo(tmp.c_str(), 0600), 0);
    }
    // SIGTERM saves the state, through the temporary.
    EXPECT_EQ(e.process->Terminate(absl::Seconds(20)), 0) << what << ": " << e.process->Stderr();
    EXPECT_EQ(Read(dir + "/victim"), "keep") << what;
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(state))) << what;
    EXPECT_TRUE(nlohmann::json::parse(Read(state), nullptr, false).is_object()) << what;
    EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(tmp))) << what;
  }
}

// Finding 4: a start that fails on a corrupt state file said "starting
// without learned pod classes" and then exited.
TEST(HostileInputsTest, ACorruptStateFileIsOneLineThatSaysTheExtenderStops) {
  const std::string dir = Dir("corrupt");
  const std::string state = dir + "/state.json";
  std::ofstream(state) << "{not json";
  std::ofstream(dir + "/extender.yaml") << "state:\n  file: " << state << "\n";
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(
      {NEIGHBORLY_EXTENDER_BINARY, "--config", dir + "/extender.yaml", "--http-address",
       "127.0.0.1:0", "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(absl::Seconds(20)), 1);
  const std::string err = (*p)->Stderr();
  EXPECT_THAT(err, HasSubstr("cannot load state file " + state));
  EXPECT_THAT(err, HasSubstr("(move it away to start without learned state)"));
  EXPECT_THAT(err, Not(HasSubstr("starting without")));
}

// Finding 4 (Info): an absolute-form target, and a missing or second Host.
TEST(HostileInputsTest, TheHttpPortTakesOriginFormAndExactlyOneHost) {
  const std::string dir = Dir("host");
  Extender e = Start(dir, "{}\n");
  ASSERT_GT(e.http_port, 0) << e.process->Stderr();
  EXPECT_THAT(
      Exchange(e.http_port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      HasSubstr("HTTP/1.1 200"));
  const std::pair<std::string, std::string> refused[] = {
      {"GET http://elsewhere/healthz HTTP/1.1\r\nHost: x\r\n\r\n", "absolute-form"},
      {"GET /healthz HTTP/1.1\r\n\r\n", "no Host header"},
      {"GET /healthz HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", "2 Host headers"},
  };
  for (const auto& [request, reason] : refused) {
    const std::string reply = Exchange(e.http_port, request);
    EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400")) << request;
    EXPECT_THAT(reply, HasSubstr(reason)) << request;
  }
  // HTTP/1.0 needs no Host.
  EXPECT_THAT(Exchange(e.http_port, "GET /healthz HTTP/1.0\r\n\r\n"), HasSubstr(" 200"));
  EXPECT_EQ(e.process->Terminate(absl::Seconds(30)), 0) << e.process->Stderr();
}

}  // namespace
}  // namespace neighborly
