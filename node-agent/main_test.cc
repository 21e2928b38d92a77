// The built neighborly-agent binary: flags, exit codes, --once JSON and
// streaming a scenario to a Telemetry service until SIGTERM.
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "test/support/subprocess.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Agent() { return testing::BinaryPath("node-agent/neighborly-agent"); }

std::string Scenario(const std::string& name) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/scenarios/" + name;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// Runs the agent to completion with `args`, capturing stdout and stderr.
Result RunAgent(std::vector<std::string> args) {
  args.insert(args.begin(), Agent());
  int out_pipe[2], err_pipe[2];
  EXPECT_EQ(pipe(out_pipe), 0);
  EXPECT_EQ(pipe(err_pipe), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  Result r;
  std::string err;
  std::thread err_reader([&] { err = ReadAll(err_pipe[0]); });
  r.out = ReadAll(out_pipe[0]);
  err_reader.join();
  r.err = err;
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(AgentCliTest, VersionAndHelp) {
  Result version = RunAgent({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "neighborly-agent " NEIGHBORLY_VERSION "\n");
  Result help = RunAgent({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--simulate FILE"));
  EXPECT_THAT(help.out, HasSubstr("--extender HOST:PORT"));
}

TEST(AgentCliTest, BadFlagsExitTwoWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "unknown flag --bogus"},
      {{"--interval", "soon", "--once"}, "--interval \"soon\" is not a duration"},
      {{"--interval=0s", "--once"}, "--interval \"0s\""},
      {{"--extender", "no-port"}, "--extender \"no-port\""},
      {{"--extender", "a:1,,b:2"}, "is not HOST:PORT"},
      {{"--output", "yaml", "--once"}, "--output \"yaml\": only json exists"},
      {{"--output", "json"}, "--output needs --once"},
      {{"--rdt-backend", "cat"}, "--rdt-backend \"cat\""},
      {{"--once", "--cri-socket", "run/containerd.sock"}, "is not an absolute path"},
      {{"--once", "--pod-label-keys", "app,,team"}, "has an empty key"},
      {{"--simulate", Scenario("two-nodes.yaml")}, "--extender HOST:PORT is required"},
      {{"--once", "--extender", "127.0.0.1:9090"}, "drop --extender"},
      {{"--extender"}, "flag --extender needs a value"},
      {{"stray"}, "unexpected argument \"stray\""},
      {{"--once", "--log-level", "loud"}, "log level \"loud\""},
      {{"--simulate", Scenario("two-nodes.yaml"), "--extender", "127.0.0.1:9090"},
       "streaming needs TLS (--tls-ca"},
      {{"--extender", "a:1", "--insecure-plaintext", "--tls-ca", "/ca.crt"}, "contradicts"},
      {{"--extender", "a:1", "--tls-cert", "/c.crt"}, "need --tls-ca"},
      {{"--simulate", Scenario("two-nodes.yaml"), "--extender", "127.0.0.1:9090", "--tls-ca",
        "/nonexistent/ca.crt"},
       "CA file /nonexistent/ca.crt: cannot read the file"},
      {{"--simulate", Scenario("two-nodes.yaml"), "--extender", "127.0.0.1:9090",
        "--insecure-plaintext", "--identity-token-file", "/nonexistent/token"},
       "identity token file /nonexistent/token: cannot read it"},
      {{"--once", "--peak-membw-measure", "sometimes"}, "\"sometimes\" is not auto, cached or off"},
      {{"--once", "--peak-membw-bytes-per-second", "0=fast"}, "\"fast\" is not a positive"},
      {{"--once", "--peak-membw-measure-seconds", "1h"}, "between 100ms and 30s"},
      {{"--once", "--peak-membw-measure-max-bytes", "1Ki"}, "between 16Mi and 64Gi"},
      {{"--once", "--peak-membw-cache", "var/x.json"}, "is not an absolute path"},
      {{"--calibrate", "--once"}, "--calibrate decides the peak bandwidth and exits"},
      {{"--calibrate", "--peak-membw-measure", "cached"}, "is what writes the cache"},
  };
  for (const auto& [args, message] : cases) {
    Result r = RunAgent(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_THAT(r.err, StartsWith("neighborly-agent: "));
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_EQ(r.out, "");
  }
}

// This VM for real: `--once --output json` carries the measured peak of its
// one NUMA node (cached in a scratch file), and `--calibrate` then reads it
// back from the cache instead of measuring again.
TEST(AgentCliTest, OnceOnThisMachineCarriesTheCalibratedPeak) {
  char dir[] = "/tmp/neighborly-peak-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string cache = std::string(dir) + "/peak-membw.json";
  Result r = RunAgent({"--once", "--output", "json", "--node-name", "build-vm", "--interval",
                       "50ms", "--metrics-address", "", "--peak-membw-cache", cache});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out;
  const nlohmann::json& node = report["topology"]["numaNodes"][0];
  const std::string source = node["peakMembwSource"];
  if (source == "measured") {
    const double peak = std::stod(node["peakMembwBytesPerSecond"].get<std::string>());
    EXPECT_GT(peak, 1e9);
    EXPECT_LT(peak, 2e12);
    EXPECT_THAT(node["peakMembwDetail"].get<std::string>(), HasSubstr("STREAM triad"));
    EXPECT_EQ(report["capabilities"]["peakMembw"]["available"], true);
  } else {
    // Only a machine too busy to stream at all; the report says so.
    EXPECT_EQ(source, "default") << node.dump();
    EXPECT_THAT(report["capabilities"]["peakMembw"]["reason"].get<std::string>(),
                AnyOf(HasSubstr("no undisturbed pass"), HasSubstr("budget")));
  }
  Result again = RunAgent({"--calibrate", "--peak-membw-cache", cache});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  nlohmann::json calibrated = nlohmann::json::parse(again.out, nullptr, false);
  ASSERT_FALSE(calibrated.is_discarded()) << again.out;
  if (source == "measured") {
    EXPECT_EQ(calibrated["measuredNow"], false);
    EXPECT_EQ(calibrated["numaNodes"][0]["source"], "measured");
  } else {
    EXPECT_EQ(calibrated["measuredNow"], true);  // a disturbed run is measured again
  }
  std::remove(cache.c_str());
  rmdir(dir);
}

TEST(AgentCliTest, OncePrintsOneJsonReportPerScenarioNode) {
  Result r = RunAgent({"--simulate", Scenario("two-nodes.yaml"), "--once", "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["nodeName"], "small-1");
  EXPECT_EQ(first["sequence"], "1");  // 64-bit integers are strings in the JSON mapping
  EXPECT_EQ(first["agentVersion"], NEIGHBORLY_VERSION);
  EXPECT_EQ(first["windowDuration"], "1s");
  EXPECT_TRUE(first.contains("windowStart"));
  EXPECT_EQ(first["kubelet"]["topologyManagerPolicy"], "single-numa-node");
  EXPECT_EQ(first["topology"]["l3Domains"][0]["occupancyBytes"], "4000000");
  EXPECT_EQ(first["capabilities"]["resctrlOccupancy"]["available"], true);
  const nlohmann::json& scanner = first["pods"][1];
  EXPECT_EQ(scanner["name"], "scanner-1");
  EXPECT_EQ(scanner["qosClass"], "QOS_CLASS_BURSTABLE");
  EXPECT_FALSE(scanner.contains("ipc"));  // absent, never zero
  EXPECT_EQ(scanner["unavailable"]["ipc"], "not in scenario");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["nodeName"], "small-2");
  // Both nodes of one run share a boot id.
  EXPECT_EQ(first["bootId"], nlohmann::json::parse(lines[1])["bootId"]);
}

TEST(AgentCliTest, NodeNameSelectsOneScenarioNode) {
  Result r =
      RunAgent({"--simulate", Scenario("two-nodes.json"), "--once", "--node-name", "json-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(Lines(r.out)[0])["nodeName"], "json-1");
  Result missing =
      RunAgent({"--simulate", Scenario("two-nodes.json"), "--once", "--node-name", "x"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("node \"x\" is not in"));
}

TEST(AgentCliTest, ScenarioErrorsExitTwoNamingFileLineAndKey) {
  Result r = RunAgent({"--simulate", Scenario("unknown-key.yaml"), "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_THAT(r.err, HasSubstr("unknown-key.yaml:14: unknown key "
                               "\"nodes[0].pods[0].cpuRequestMilicores\""));
  Result missing = RunAgent({"--simulate", "/nonexistent.yaml", "--once"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent.yaml: cannot open scenario file"));
}

// Counts reports per node name.
class Collector final : public tv1::Telemetry::Service {
 public:
  grpc::Status Report(grpc::ServerContext*,
                      grpc::ServerReaderWriter<tv1::ReportAck, tv1::NodeReport>* stream) override {
    tv1::NodeReport report;
    while (stream->Read(&report)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++count_[report.node_name()];
        cv_.notify_all();
      }
      tv1::ReportAck ack;
      ack.set_sequence(report.sequence());
      stream->Write(ack);
    }
    return grpc::Status::OK;
  }
  bool WaitForReports(const std::set<std::string>& nodes, int each) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      for (const std::string& n : nodes) {
        if (count_[n] < each) return false;
      }
      return true;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> count_;
};

TEST(AgentCliTest, SimulateStreamsEveryNodeUntilSigterm) {
  Collector collector;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&collector);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(port, 0);

  absl::StatusOr<std::unique_ptr<testing::Subprocess>> agent =
      testing::Subprocess::Start({Agent(), "--simulate", Scenario("two-nodes.yaml"), "--extender",
                                  absl::StrCat("127.0.0.1:", port), "--interval", "100ms",
                                  "--metrics-address", "127.0.0.1:0", "--insecure-plaintext"});
  ASSERT_TRUE(agent.ok()) << agent.status();
  ASSERT_TRUE((*agent)->WaitForLine("simulating 2 node(s)", absl::Seconds(30)));
  // Plaintext is allowed only when asked for, and never silently.
  EXPECT_TRUE((*agent)->WaitForLine("--insecure-plaintext: telemetry goes", absl::Seconds(1)));
  // Several windows from each node, each over its own stream.
  ASSERT_TRUE(collector.WaitForReports({"small-1", "small-2"}, 3)) << (*agent)->Stderr();
  EXPECT_EQ((*agent)->Terminate(), 0) << (*agent)->Stderr();
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace neighborly::agent
