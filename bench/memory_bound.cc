// Peak memory of the real neighborly-extender for the largest legitimate
// request (docs/performance.md, "Memory bound"): kube-scheduler with
// nodeCacheCapable: false sends /filter and /prioritize with every candidate as
// a full v1.Node object. This starts the binary, streams one NodeReport for
// each of `--nodes` nodes over gRPC (the streams stay open, as 5,000 agents'
// would), then sends the requests one at a time and prints, from
// /proc/PID/status, VmRSS before, VmHWM during (reset through
// /proc/PID/clear_refs before each request) and VmRSS after.
//
//   memory_bound --extender build/default/extender/neighborly-extender
//   memory_bound --nodes 5000 --images 50 --pods 30 --requests 3
//   memory_bound --names          # NodeNames instead (nodeCacheCapable: true)
#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/http_bench_support.h"
#include "common/process_metrics.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly::bench {
namespace {

namespace tv1 = telemetry::v1;

struct Options {
  std::string extender = NEIGHBORLY_EXTENDER_BINARY;
  int nodes = 5000;
  int images = 50;   // container images per Node (nodeStatusMaxImages defaults to 50)
  int pods = 30;     // per node, in its telemetry
  int requests = 3;  // of each verb
  bool telemetry = true;
  bool names = false;  // NodeNames (nodeCacheCapable: true) instead of full Nodes
};

// One value of /proc/PID/status in bytes ("VmRSS", "VmHWM"); -1 if unreadable.
int64_t StatusBytes(int pid, std::string_view key) {
  return static_cast<int64_t>(ReadStatusBytes(pid, key).value_or(-1));
}

// Resets VmHWM to the current RSS (Linux >= 4.0).
bool ResetPeak(int pid) {
  const int fd = ::open(absl::StrCat("/proc/", pid, "/clear_refs").c_str(), O_WRONLY);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

double Mb(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// One node's agent: writes its report once, reads acks until cancelled.
class NodeStream final : public grpc::ClientBidiReactor<tv1::NodeReport, tv1::ReportAck> {
 public:
  NodeStream(tv1::Telemetry::Stub& stub, const tv1::NodeReport& report, std::atomic<int>& acked)
      : report_(report), acked_(acked) {
    stub.async()->Report(&context_, this);
    StartWrite(&report_);
    StartRead(&ack_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  bool done() const { return done_.load(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    acked_.fetch_add(1);
    StartRead(&ack_);
  }
  void OnDone(const grpc::Status&) override { done_.store(true); }

 private:
  grpc::ClientContext context_;
  tv1::NodeReport report_;
  tv1::ReportAck ack_;
  std::atomic<int>& acked_;
  std::atomic<bool> done_{false};
};

int Run(const Options& o) {
  // The body must fit: raise http.bodyLimitBytes above what the request takes
  // (the default 64Mi holds about 4,000 such Nodes; docs/performance.md).
  const std::string filter_body = o.names ? NamesBody(o.nodes) : FullNodesBody(o.nodes, o.images);
  const std::string config_path =
      absl::StrCat("/tmp/neighborly_memory_bound_", ::getpid(), ".yaml");
  {
    std::ofstream config(config_path);
    config << "http:\n  bodyLimitBytes: " << (filter_body.size() / (1 << 20) + 16) << "Mi\n";
  }
  absl::StatusOr<std::unique_ptr<testing::Subprocess>> started = testing::Subprocess::Start(
      {o.extender, "--config", config_path, "--http-address", "127.0.0.1:0", "--grpc-address",
       "127.0.0.1:0", "--grpc-insecure-plaintext", "--log-level", "warn"});
  if (!started.ok()) {
    std::fprintf(stderr, "memory_bound: %s\n", std::string(started.status().message()).c_str());
    return 1;
  }
  testing::RunningExtender running{std::move(*started), {}};
  testing::RunningExtender* e = &running;
  const std::optional<std::string> line = e->process->WaitForLine("listening", absl::Seconds(60));
  ::unlink(config_path.c_str());
  const std::optional<testing::ExtenderAddresses> addresses =
      line ? testing::ParseListeningLine(*line) : std::nullopt;
  if (!addresses) {
    std::fprintf(stderr, "memory_bound: the extender did not start:\n%s\n",
                 e->process->Stderr().c_str());
    return 1;
  }
  e->addresses = *addresses;
  const int pid = e->process->pid();
  std::printf("extender pid %d, http %s, grpc %s\n", pid, e->addresses.http.c_str(),
              e->addresses.grpc.c_str());
  if (o.names) {
    std::printf("request: %d NodeNames, %.2f MB body\n", o.nodes,
                Mb(static_cast<int64_t>(filter_body.size())));
  } else {
    std::printf("request: %d full Nodes (%d images each), %.1f MB body, %.1f KB per Node\n",
                o.nodes, o.images, Mb(static_cast<int64_t>(filter_body.size())),
                static_cast<double>(filter_body.size()) / o.nodes / 1e3);
  }
  std::printf("RSS idle: %.1f MB\n", Mb(StatusBytes(pid, "VmRSS")));

  // Telemetry for every node: one open stream each, 8 connections.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<tv1::Telemetry::Stub>> stubs;
  for (int c = 0; c < 8; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("neighborly.memory_bound.channel", c);
    channels.push_back(
        grpc::CreateCustomChannel(e->addresses.grpc, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(tv1::Telemetry::NewStub(channels.back()));
  }
  std::atomic<int> acked{0};
  std::vector<std::unique_ptr<NodeStream>> streams;
  if (o.telemetry) {
    for (int n = 0; n < o.nodes; ++n) {
      streams.push_back(std::make_unique<NodeStream>(*stubs[static_cast<size_t>(n % 8)],
                                                     SyntheticReport(n, 1, o.pods), acked));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (acked.load() < o.nodes && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::printf(
        "telemetry: %d of %d reports (%d pods each) acknowledged, %zu streams open; "
        "RSS %.1f MB\n",
        acked.load(), o.nodes, o.pods, streams.size(), Mb(StatusBytes(pid, "VmRSS")));
  }

  // The prioritize body is the same ExtenderArgs.
  httplib::Client client("http://" + e->addresses.http);
  client.set_read_timeout(120, 0);
  client.set_write_timeout(120, 0);
  int64_t worst_peak = 0;
  int failures = 0;
  const int64_t before = StatusBytes(pid, "VmRSS");
  std::printf("RSS before the requests: %.1f MB\n", Mb(before));
  for (int i = 0; i < o.requests; ++i) {
    for (const char* verb : {"/filter", "/prioritize"}) {
      const int64_t rss = StatusBytes(pid, "VmRSS");
      const bool reset = ResetPeak(pid);
      const auto start = std::chrono::steady_clock::now();
      httplib::Result r = client.Post(verb, filter_body, "application/json");
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      const int64_t peak = StatusBytes(pid, "VmHWM");
      worst_peak = std::max(worst_peak, peak);
      const int status = r ? r->status : -1;
      if (status != 200) ++failures;
      std::printf(
          "%-12s status %d, %.0f ms, reply %.1f MB: RSS before %.1f MB, peak %.1f MB%s (+%.1f), "
          "after %.1f MB\n",
          verb, status, ms, r ? Mb(static_cast<int64_t>(r->body.size())) : 0.0, Mb(rss), Mb(peak),
          reset ? "" : " (since start: clear_refs refused)", Mb(peak - rss),
          Mb(StatusBytes(pid, "VmRSS")));
      if (status != 200 && r) std::printf("  %s\n", r->body.substr(0, 200).c_str());
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t after = StatusBytes(pid, "VmRSS");
  std::printf(
      "summary: %d nodes, body %.1f MB: RSS before %.1f MB, worst peak %.1f MB (+%.1f), "
      "after %.1f MB (+%.1f); %d failed requests\n",
      o.nodes, Mb(static_cast<int64_t>(filter_body.size())), Mb(before), Mb(worst_peak),
      Mb(worst_peak - before), Mb(after), Mb(after - before), failures);
  for (auto& s : streams) s->Cancel();
  for (auto& s : streams) {
    while (!s->done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int code = e->process->Terminate(absl::Seconds(30));
  return failures == 0 && code == 0 ? 0 : 1;
}

}  // namespace
}  // namespace neighborly::bench

int main(int argc, char** argv) {
  neighborly::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "memory_bound: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--extender") {
      o.extender = value();
    } else if (arg == "--nodes") {
      o.nodes = std::stoi(value());
    } else if (arg == "--images") {
      o.images = std::stoi(value());
    } else if (arg == "--pods") {
      o.pods = std::stoi(value());
    } else if (arg == "--names") {
      o.names = true;
    } else if (arg == "--requests") {
      o.requests = std::stoi(value());
    } else if (arg == "--no-telemetry") {
      o.telemetry = false;
    } else {
      std::fprintf(stderr,
                   "usage: memory_bound [--extender PATH] [--nodes N] [--images N] [--pods N]\n"
                   "                    [--requests N] [--names] [--no-telemetry]\n");
      return 2;
    }
  }
  return neighborly::bench::Run(o);
}
