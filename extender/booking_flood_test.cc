// Bookings bounded, through the real neighborly-extender binary (issue 24,
// finding 2): made-up pod UIDs booked onto one node by anonymous /prioritize
// calls, and by Reserve on the placement port, no longer buy memory, and the
// memory is returned once the bookings expire. Peak RSS (VmHWM) and RSS after
// are read from /proc/PID/status; each test starts its own process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/process_metrics.h"
#include "extender/src/model/testing/report_builder.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/placement/v1/placement.grpc.pb.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;
namespace pv1 = ::neighborly::placement::v1;
namespace tv1 = ::neighborly::telemetry::v1;

// docs/security.md, "Limits": the chart's memory limit, which the peak must
// stay under, and how far above its start RSS may stay once the bookings
// have expired (the issue's "within 50 MB").
constexpr int64_t kChartMemoryLimitBytes = int64_t{512} << 20;
constexpr int64_t kRetainedBytes = 50'000'000;

int64_t StatusBytes(int pid, std::string_view key) {
  return static_cast<int64_t>(ReadStatusBytes(pid, key).value_or(-1));
}
double Mb(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

struct Extender {
  std::unique_ptr<Subprocess> process;
  int http_port = 0;
  std::string grpc_address, placement_address;
};

// A TTL of 3 s, so that the test sees the bookings expire; the periodic
// purge every second.
Extender Start(const std::string& name) {
  const std::string config = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(config) << "state:\n  saveInterval: 1s\nmodel:\n  bookingTtl: 3s\n";
  absl::StatusOr<testing::RunningExtender> started = testing::StartExtender(
      "127.0.0.1:0", {"--config", config, "--placement-address", "127.0.0.1:0",
                      "--placement-insecure-plaintext", "--log-level", "warn"});
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  EXPECT_FALSE(started->addresses.placement.empty()) << started->process->Stderr();
  return {std::move(started->process), started->addresses.http_port(), started->addresses.grpc,
          started->addresses.placement};
}

// node-1's telemetry (bookings need it), `reports` reports a second apart.
bool Report(const std::string& address, uint64_t sequence) {
  auto stub =
      tv1::Telemetry::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->Report(&ctx);
  tv1::ReportAck ack;
  const bool ok = stream->Write(extender::testing::TwoSocketNode("node-1", sequence)) &&
                  stream->Read(&ack);
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  if (!ok || !status.ok()) {
    ADD_FAILURE() << "report " << sequence << ": " << (ok ? "acked" : "not acked") << ", status "
                  << status.error_code() << " " << status.error_message();
  }
  return ok && status.ok();
}

// The value of one series of /metrics ("" when absent), e.g.
// Metric(port, "neighborly_bookings_dropped_total{reason=\"full\"}").
std::string Metric(int port, const std::string& series) {
  httplib::Client client("127.0.0.1", port);
  httplib::Result r = client.Get("/metrics");
  if (!r) return "";
  const size_t at = r->body.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  const size_t start = at + series.size() + 2;
  return r->body.substr(start, r->body.find('\n', start) - start);
}

std::string Uid(int i) { return absl::StrCat("6f1c0e1a-0000-4000-8000-", 100000000000 + i); }

// Waits for the bookings to expire (the next report expires them) and the
// memory to come back; returns RSS after.
int64_t AfterExpiry(Extender& e, int64_t baseline) {
  absl::SleepFor(absl::Seconds(4));  // the TTL, so that the next report expires them
  EXPECT_TRUE(Report(e.grpc_address, 3));
  EXPECT_EQ(Metric(e.http_port, "neighborly_fleet_bookings"), "0");
  int64_t after = StatusBytes(e.process->pid(), "VmRSS");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (after - baseline > kRetainedBytes && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(250));  // the purge runs every state.saveInterval
    after = StatusBytes(e.process->pid(), "VmRSS");
  }
  return after;
}

TEST(BookingFloodTest, PrioritizeWithMadeUpUidsCannotBuyMemory) {
  Extender e = Start("booking-flood-prioritize");
  ASSERT_GT(e.http_port, 0);
  ASSERT_TRUE(Report(e.grpc_address, 1)) << e.process->Stderr();
  // Tiny footprint hints, so that the node stays feasible for every booking.
  const std::string head =
      R"({"Pod":{"metadata":{"namespace":"ns","name":"p","annotations":{)"
      R"("neighborly.io/llc-bytes":"1","neighborly.io/membw-bytes-per-second":"1"},"uid":")";
  const std::string tail = R"("}},"NodeNames":["node-1"]})";
  {
    httplib::Client client("127.0.0.1", e.http_port);
    httplib::Result r = client.Post("/prioritize", head + Uid(-1) + tail, "application/json");
    ASSERT_TRUE(r && r->status == 200);
  }
  const int pid = e.process->pid();
  const int64_t baseline = StatusBytes(pid, "VmRSS");
  // Issue 24: 5,000 anonymous /prioritize calls, distinct UIDs, one node.
  constexpr int kCalls = 5000;
  constexpr int kThreads = 4;
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", e.http_port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      for (int i = t; i < kCalls; i += kThreads) {
        httplib::Result r = client.Post("/prioritize", head + Uid(i) + tail, "application/json");
        if (r && r->status == 200) ++answered;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(answered.load(), kCalls);
  EXPECT_EQ(Metric(e.http_port, "neighborly_fleet_bookings"), "1024");
  const int64_t peak = StatusBytes(pid, "VmHWM");
  const int64_t after = AfterExpiry(e, baseline);
  std::printf("RSS %.1f MB before, peak %.1f MB, %.1f MB after the bookings expired: %d "
              "/prioritize of made-up UIDs onto one node\n",
              Mb(baseline), Mb(peak), Mb(after), kCalls);
  EXPECT_LE(peak, kChartMemoryLimitBytes);
  EXPECT_LE(after - baseline, kRetainedBytes);
  EXPECT_EQ(Metric(e.http_port, "neighborly_bookings_dropped_total{reason=\"node_full\"}"),
            std::to_string(kCalls + 1 - 1024));
  EXPECT_EQ(e.process->Terminate(absl::Seconds(30)), 0) << e.process->Stderr();
}

TEST(BookingFloodTest, ReserveWithMadeUpUidsCannotBuyMemory) {
  Extender e = Start("booking-flood-reserve");
  ASSERT_GT(e.http_port, 0);
  ASSERT_TRUE(Report(e.grpc_address, 1)) << e.process->Stderr();
  auto channel = grpc::CreateChannel(e.placement_address, grpc::InsecureChannelCredentials());
  auto reserve = [&](pv1::Placement::Stub& stub, int i) {
    pv1::ReserveRequest request;
    request.mutable_pod()->set_uid(Uid(i));
    request.mutable_pod()->set_namespace_("ns");
    request.mutable_pod()->set_name(absl::StrCat("p-", i));
    request.set_node_name("node-1");
    pv1::ReserveResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub.Reserve(&ctx, request, &response).ok() && response.booked();
  };
  {
    auto stub = pv1::Placement::NewStub(channel);
    ASSERT_TRUE(reserve(*stub, -1)) << e.process->Stderr();
  }
  const int pid = e.process->pid();
  const int64_t baseline = StatusBytes(pid, "VmRSS");
  // Issue 24: 8 threads, 25,057 UIDs (peak 8.3 GB, 993 MB held ten minutes later).
  constexpr int kUids = 25'057;
  constexpr int kThreads = 8;
  std::atomic<int> booked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = pv1::Placement::NewStub(channel);
      for (int i = t; i < kUids; i += kThreads) {
        if (reserve(*stub, i)) ++booked;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(booked.load(), kUids);
  EXPECT_EQ(Metric(e.http_port, "neighborly_fleet_bookings"), "1024");
  const int64_t peak = StatusBytes(pid, "VmHWM");
  ASSERT_TRUE(Report(e.grpc_address, 2));
  const int64_t after = AfterExpiry(e, baseline);
  std::printf("RSS %.1f MB before, peak %.1f MB, %.1f MB after the bookings expired: %d "
              "Reserve of made-up UIDs onto one node from %d threads\n",
              Mb(baseline), Mb(peak), Mb(after), kUids, kThreads);
  EXPECT_LE(peak, kChartMemoryLimitBytes);
  EXPECT_LE(after - baseline, kRetainedBytes);
  EXPECT_EQ(e.process->Terminate(absl::Seconds(30)), 0) << e.process->Stderr();
}

}  // namespace
}  // namespace neighborly
