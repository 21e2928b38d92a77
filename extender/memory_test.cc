// The extender's memory bound (docs/performance.md, "Memory bound"), through
// the real binary's HTTP port only: hostile requests of every kind the limits
// are for, then RSS must come back within the documented retained bound of
// where it started, and stay under the documented peak of the largest
// legitimate request (5,000 full Nodes).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/process_metrics.h"
#include "extender/src/http/testing/raw_client.h"
#include "extender/src/model/testing/report_builder.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;

// docs/performance.md, "Memory bound": what the extender may keep after any
// sequence of requests, above its RSS before them (the scratch pool's retained
// buffers, allocator slack), and its peak RSS while answering the largest
// legitimate request (5,000 full Nodes, with 5,000 agents of 30 pods each
// streaming; measured 765 MB by bench/memory_bound). The retained bound was
// 128 MiB with cpp-httplib's server (111-113 MB measured), then 192 MiB on the
// event-loop server while its memory was "returned" with glibc's malloc_trim,
// which does nothing for the jemalloc the extender runs on (each worker's
// arena kept 11-17 MB). Purging jemalloc's arenas (common/memory_release.h)
// leaves 54-57 MB; the bound stays 128 MiB for the scratch pool's documented
// worst case (one retained scratch of up to ~95 MB).
constexpr int64_t kRetainedBoundBytes = 128 << 20;
constexpr int64_t kLargestRequestPeakBytes = int64_t{1} << 30;

// One /proc/PID/status field in bytes ("VmRSS", "VmHWM"); -1 if unreadable.
int64_t StatusBytes(int pid, std::string_view key) {
  return static_cast<int64_t>(ReadStatusBytes(pid, key).value_or(-1));
}

double Mb(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// Sends `head` then `body` (which may be large and shared between threads) on
// a fresh connection and reads until the server closes it or 120 s pass;
// returns the first bytes of the reply.
std::string Exchange(int port, const std::string& head, const std::string& body = "") {
  ::neighborly::extender::testing::RawClient client(port, 120);
  if (!client.connected()) return "";
  // The server may refuse early and close: the reply is read either way.
  if (client.Send(head)) client.Send(body);
  bool closed = false;
  return client.ReadUntilClosed(closed, 4096);
}

std::string PostHead(const std::string& path, size_t length) {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                      "Content-Length: ", length, "\r\nConnection: close\r\n\r\n");
}

// ExtenderArgs naming the same node over and over, about `bytes` long.
std::string RepeatedNames(size_t bytes) {
  std::string body = R"({"Pod":{},"NodeNames":[)";
  body.reserve(bytes + 64);
  while (body.size() < bytes) body += R"("node-1234567",)";
  body += R"("last"]})";
  return body;
}

// A Pod with a huge label map (many small keys and values), about `bytes` long.
std::string ManyLabels(size_t bytes) {
  std::string body = R"({"Pod":{"metadata":{"name":"p","labels":{)";
  body.reserve(bytes + 64);
  for (int i = 0; body.size() < bytes; ++i) absl::StrAppend(&body, "\"k", i, "\":\"v\",");
  body += R"("last":"v"}}},"NodeNames":["a"]})";
  return body;
}

// Runs `fn(i)` on `n` threads at once and waits for all.
void Concurrently(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (std::thread& t : threads) t.join();
}

// Issue 15, "bounded memory": huge bodies within the limit, many repeated
// names, header floods and many connections at once each with a large body.
// Before this test, the same requests left ~800 MB resident for good: 12
// connections of 8 MiB each kept their body, parser and name buffers in the
// scratch pool, and a Pod of 5 M labels (decoded in full, 7 s) kept ~380 MB.
TEST(ExtenderMemoryTest, HostileRequestsLeaveRssWithinTheDocumentedBound) {
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(
      {NEIGHBORLY_EXTENDER_BINARY, "--http-address", "127.0.0.1:0", "--grpc-address", "127.0.0.1:0",
       "--grpc-insecure-plaintext", "--log-level", "warn"});
  ASSERT_TRUE(started.ok()) << started.status();
  Subprocess& p = **started;
  std::optional<std::string> line = p.WaitForLine("listening http=", absl::Seconds(30));
  std::smatch m;
  ASSERT_TRUE(line && std::regex_search(*line, m, std::regex(R"(http=127\.0\.0\.1:(\d+))")))
      << p.Stderr();
  const int port = std::stoi(m[1]);
  const std::string small = R"({"Pod":{},"NodeNames":["a","b"]})";
  ASSERT_THAT(Exchange(port, PostHead("/filter", small.size()), small), HasSubstr("HTTP/1.1 200"));
  const int64_t baseline = StatusBytes(p.pid(), "VmRSS");
  ASSERT_GT(baseline, 0);

  // 1. Bodies just under the 64 MiB limit: 4.3 M repeated names (decoded in
  // full, refused by http.maxNamesPerRequest), and a Pod with 5 M labels.
  const std::string names = RepeatedNames(60 << 20);
  for (const char* verb : {"/filter", "/prioritize"}) {
    EXPECT_THAT(Exchange(port, PostHead(verb, names.size()), names).substr(0, 64),
                HasSubstr("HTTP/1.1 400"))
        << verb;
  }
  {
    const std::string labels = ManyLabels(60 << 20);
    const std::string reply = Exchange(port, PostHead("/filter", labels.size()), labels);
    EXPECT_THAT(reply.substr(0, 64), HasSubstr("HTTP/1.1 400"));
    EXPECT_THAT(reply, HasSubstr("Pod.metadata.labels: more than"));
  }
  // 2. Several connections at once, each with a near-limit body: at most
  // http.maxInFlightBytes (twice the body limit) of them are held at once,
  // the rest answered 503 at once, whatever http.workerThreads is.
  std::atomic<int> over_budget{0};
  Concurrently(8, [&](int) {
    const std::string reply = Exchange(port, PostHead("/filter", names.size()), names);
    if (reply.find("HTTP/1.1 503") != std::string::npos) {
      ++over_budget;
      EXPECT_THAT(reply, HasSubstr("http.maxInFlightBytes"));
    } else {
      EXPECT_THAT(reply.substr(0, 64), HasSubstr("HTTP/1.1 400"));
    }
  });
  EXPECT_GE(over_budget.load(), 1) << "8 bodies of 60 MiB at once all fit a 128 MiB budget";
  // 3. Many connections at once with bodies a pool could keep (8 MiB each).
  const std::string medium = RepeatedNames(8 << 20);
  Concurrently(12, [&](int i) {
    const char* verb = i % 2 ? "/prioritize" : "/filter";
    EXPECT_THAT(Exchange(port, PostHead(verb, medium.size()), medium).substr(0, 64),
                HasSubstr("HTTP/1.1 400"));
  });
  // 4. A header flood, ~16 MB of header lines (431 once the head passes
  // 64 KiB; the rest is read and discarded).
  std::string flood = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  const std::string value(7900, 'h');
  for (int i = 0; flood.size() < (16 << 20); ++i) {
    absl::StrAppend(&flood, "X-Flood-", i, ": ", value, "\r\n");
  }
  flood += "\r\n";
  {
    const std::string reply = Exchange(port, flood);
    // Refused (431), or the connection closed while the flood was still
    // being sent: either way, not served.
    EXPECT_THAT(reply, ::testing::Not(HasSubstr("HTTP/1.1 200"))) << reply.substr(0, 64);
  }

  // The extender still serves, and gives the memory back.
  EXPECT_THAT(Exchange(port, PostHead("/filter", small.size()), small), HasSubstr("HTTP/1.1 200"));
  int64_t after = StatusBytes(p.pid(), "VmRSS");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (after - baseline > kRetainedBoundBytes && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    after = StatusBytes(p.pid(), "VmRSS");
  }
  const int64_t peak = StatusBytes(p.pid(), "VmHWM");
  std::printf(
      "RSS %.1f MB before, peak %.1f MB, %.1f MB after the hostile requests (%d of 8 concurrent "
      "60 MiB requests over the in-flight budget)\n",
      Mb(baseline), Mb(peak), Mb(after), over_budget.load());
  // The peak too stays under the bound documented for the largest legitimate
  // request: many large requests at once are bounded by http.maxInFlightBytes.
  EXPECT_LE(peak, kLargestRequestPeakBytes) << "peak RSS " << Mb(peak) << " MB";
  EXPECT_LE(after - baseline, kRetainedBoundBytes)
      << "RSS " << Mb(baseline) << " MB before, " << Mb(after) << " MB after";
  EXPECT_LE(after, kLargestRequestPeakBytes);
  EXPECT_EQ(p.Terminate(absl::Seconds(30)), 0) << p.Stderr();
}

// Issue 15, finding 4 ("8,000 streams added 152 MB that was not returned"):
// once agents' streams close, their memory goes back to the system. Streams
// are opened and each sends one report (so the server holds what a live
// stream holds), then all are cancelled; RSS must fall back by most of what
// the streams took. The node state the reports created stays, so the check
// is against the streams' own share, measured.
TEST(ExtenderMemoryTest, ClosedStreamsGiveTheirMemoryBack) {
  const std::string config = ::testing::TempDir() + "/streams-memory.yaml";
  {
    std::ofstream out(config);
    out << "state:\n  saveInterval: 1s\n";  // the periodic purge's pace too
  }
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(
      {NEIGHBORLY_EXTENDER_BINARY, "--config", config, "--http-address", "127.0.0.1:0",
       "--grpc-address", "127.0.0.1:0", "--grpc-insecure-plaintext", "--log-level", "warn"});
  ASSERT_TRUE(started.ok()) << started.status();
  Subprocess& p = **started;
  std::optional<std::string> line = p.WaitForLine("listening http=", absl::Seconds(30));
  std::smatch m;
  ASSERT_TRUE(line && std::regex_search(*line, m, std::regex(R"(grpc=(127\.0\.0\.1:\d+))")))
      << p.Stderr();
  const std::string grpc_address = m[1];

  namespace tv1 = ::neighborly::telemetry::v1;
  constexpr int kStreams = 3000;
  constexpr int kChannels = 8;
  std::vector<std::unique_ptr<tv1::Telemetry::Stub>> stubs;
  for (int c = 0; c < kChannels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("neighborly.test.channel", c);
    stubs.push_back(tv1::Telemetry::NewStub(
        grpc::CreateCustomChannel(grpc_address, grpc::InsecureChannelCredentials(), args)));
  }
  // Warm up: one stream, one report, so that the baseline has gRPC's own
  // setup in it.
  auto open_stream = [&](int i, grpc::ClientContext& ctx)
      -> std::unique_ptr<grpc::ClientReaderWriter<tv1::NodeReport, tv1::ReportAck>> {
    auto stream = stubs[static_cast<size_t>(i % kChannels)]->Report(&ctx);
    tv1::NodeReport report = extender::testing::TwoSocketNode(absl::StrCat("stream-node-", i));
    tv1::ReportAck ack;
    if (!stream->Write(report) || !stream->Read(&ack)) return nullptr;
    return stream;
  };
  {
    grpc::ClientContext warm;
    ASSERT_NE(open_stream(kStreams, warm), nullptr) << p.Stderr();
    warm.TryCancel();
  }
  absl::SleepFor(absl::Seconds(2));
  const int64_t before = StatusBytes(p.pid(), "VmRSS");

  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<tv1::NodeReport, tv1::ReportAck>>> streams;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(open_stream(i, *contexts.back()));
    ASSERT_NE(streams.back(), nullptr) << "stream " << i << ": " << p.Stderr();
  }
  const int64_t open = StatusBytes(p.pid(), "VmRSS");
  for (auto& ctx : contexts) ctx->TryCancel();
  for (auto& stream : streams) stream->Finish();
  streams.clear();
  contexts.clear();

  // The node state the reports created stays; the streams' buffers must go:
  // at least half of what opening them added.
  int64_t after = StatusBytes(p.pid(), "VmRSS");
  const int64_t streams_took = open - before;
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (after - before > streams_took / 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(250));
    after = StatusBytes(p.pid(), "VmRSS");
  }
  std::printf("RSS %.1f MB before, %.1f MB with %d streams open, %.1f MB after they closed\n",
              Mb(before), Mb(open), kStreams, Mb(after));
  ASSERT_GT(streams_took, 20 << 20) << "the streams took too little memory to tell anything";
  EXPECT_LE(after - before, streams_took / 2) << "RSS " << Mb(before) << " MB before, " << Mb(open)
                                              << " MB open, " << Mb(after) << " MB after";
  EXPECT_EQ(p.Terminate(absl::Seconds(30)), 0) << p.Stderr();
}

}  // namespace
}  // namespace neighborly
