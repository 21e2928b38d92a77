// ReportStream over real gRPC on loopback against a small in-test Telemetry service.
#include "node-agent/src/report/report_stream.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/support/wait_for.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::ElementsAre;

constexpr absl::Duration kDeadline = absl::Seconds(30);

// Records the sequence of every report it reads and acks each one.
class FakeTelemetry final : public tv1::Telemetry::Service {
 public:
  grpc::Status Report(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<tv1::ReportAck, tv1::NodeReport>* stream) override {
    tv1::NodeReport report;
    while (stream->Read(&report)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        received_.push_back(report.sequence());
        cv_.notify_all();
      }
      if (report.sequence() == refuse_sequence_) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node_name is empty");
      }
      tv1::ReportAck ack;
      ack.set_sequence(report.sequence());
      if (ack_interval_ms_ > 0) ack.mutable_interval()->set_nanos(ack_interval_ms_ * 1'000'000);
      if (ack_interval_ms_ < 0) ack.mutable_interval()->set_nanos(0);  // present, zero
      if (batch_mba_percent_ > 0) {
        tv1::ClassAllocation* c = ack.mutable_allocation_policy()->add_classes();
        c->set_workload_class("batch");
        c->set_mba_percent(static_cast<uint32_t>(batch_mba_percent_.load()));
      }
      if (!stream->Write(ack)) break;
    }
    return grpc::Status::OK;
  }

  // Waits until a report with `sequence` arrived; false at the deadline.
  bool WaitForSequence(uint64_t sequence) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(absl::ToInt64Seconds(kDeadline)), [&] {
      return std::find(received_.begin(), received_.end(), sequence) != received_.end();
    });
  }

  std::vector<uint64_t> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

  uint64_t refuse_sequence_ = 0;  // set before the server starts
  std::atomic<int> ack_interval_ms_{0};  // < 0: an explicit zero
  std::atomic<int> batch_mba_percent_{0};  // > 0: acks carry an allocation policy

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint64_t> received_;
};

struct Server {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  void Kill() {
    // Ends the streams in progress, as a crashing extender would.
    server->Shutdown(std::chrono::system_clock::now());
    server->Wait();
  }
};

Server StartServer(FakeTelemetry* service, int port = 0) {
  Server s;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                           &s.port);
  builder.RegisterService(service);
  s.server = builder.BuildAndStart();
  EXPECT_NE(s.server, nullptr);
  EXPECT_GT(s.port, 0);
  return s;
}

bool Eventually(const std::function<bool()>& pred) {
  return ::neighborly::testing::WaitFor(pred, kDeadline);
}

tv1::NodeReport Report(uint64_t sequence) {
  tv1::NodeReport r;
  r.set_node_name("node-1");
  r.set_sequence(sequence);
  return r;
}

ReportStreamOptions Options(int port) {
  return ReportStreamOptions{.target = absl::StrCat("127.0.0.1:", port),
                             .node_name = "node-1",
                             .credentials = nullptr,
                             .tls_files = nullptr,
                             .server_name = "",
                             .identity_token_file = "",
                             .initial_backoff = absl::Milliseconds(20),
                             .max_backoff = absl::Milliseconds(200),
                             .target_name = "",
                             .on_failure = nullptr};
}

TEST(ReportStreamTest, ReportsArriveAndAreAcked) {
  FakeTelemetry service;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(service.WaitForSequence(1));
  ASSERT_TRUE(Eventually([&] { return stream.stats().last_acked_sequence == 1; }));
  EXPECT_EQ(stream.stats().state, ReportStream::State::kConnected);
  stream.Offer(Report(2));
  ASSERT_TRUE(service.WaitForSequence(2));
  EXPECT_THAT(service.received(), ElementsAre(1, 2));
  stream.Stop();
  EXPECT_EQ(stream.stats().state, ReportStream::State::kStopped);
  server.Kill();
}

TEST(ReportStreamTest, ReconnectsAfterRestartAndResumesWithNewest) {
  FakeTelemetry first;
  Server server = StartServer(&first);
  const int port = server.port;
  ReportStream stream(Options(port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(first.WaitForSequence(1));
  ASSERT_TRUE(Eventually([&] { return stream.stats().state == ReportStream::State::kConnected; }));

  server.Kill();
  ASSERT_TRUE(Eventually([&] { return stream.stats().state == ReportStream::State::kRetrying; }));
  for (uint64_t seq = 2; seq <= 4; ++seq) stream.Offer(Report(seq));

  FakeTelemetry second;
  Server restarted = StartServer(&second, port);
  ASSERT_EQ(restarted.port, port);
  ASSERT_TRUE(second.WaitForSequence(4));
  ASSERT_TRUE(Eventually([&] { return stream.stats().state == ReportStream::State::kConnected; }));
  stream.Offer(Report(5));
  ASSERT_TRUE(second.WaitForSequence(5));
  // Only the newest report crossed the outage; 2 and 3 were superseded.
  EXPECT_THAT(second.received(), ElementsAre(4, 5));
  EXPECT_GE(stream.stats().connects, 2u);
  stream.Stop();
  restarted.Kill();
}

TEST(ReportStreamTest, StaleReportsAreNotQueued) {
  FakeTelemetry service;
  // Learn a free port, then leave it closed while reports pile up.
  int port = 0;
  {
    FakeTelemetry probe;
    Server s = StartServer(&probe);
    port = s.port;
    s.Kill();
  }
  ReportStream stream(Options(port));
  stream.Start();
  for (uint64_t seq = 1; seq <= 10; ++seq) stream.Offer(Report(seq));
  Server server = StartServer(&service, port);
  ASSERT_TRUE(service.WaitForSequence(10));
  stream.Offer(Report(11));
  ASSERT_TRUE(service.WaitForSequence(11));
  EXPECT_THAT(service.received(), ElementsAre(10, 11));
  EXPECT_GE(stream.stats().reports_superseded, 8u);
  stream.Stop();
  server.Kill();
}

TEST(ReportStreamTest, RefusedReportIsDroppedAndTheNextOneGoesThrough) {
  FakeTelemetry service;
  service.refuse_sequence_ = 2;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] { return stream.stats().last_acked_sequence == 1; }));
  stream.Offer(Report(2));
  ASSERT_TRUE(Eventually([&] { return stream.stats().reports_refused == 1; }));
  stream.Offer(Report(3));
  ASSERT_TRUE(Eventually([&] { return stream.stats().last_acked_sequence == 3; }));
  // The refused report was not sent again.
  EXPECT_THAT(service.received(), ElementsAre(1, 2, 3));
  stream.Stop();
  server.Kill();
}

TEST(ReportStreamTest, AckIntervalBecomesTheRequestedInterval) {
  FakeTelemetry service;
  service.ack_interval_ms_ = 250;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  EXPECT_EQ(stream.RequestedInterval(), std::nullopt);
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] { return stream.RequestedInterval().has_value(); }));
  EXPECT_EQ(*stream.RequestedInterval(), absl::Milliseconds(250));
  stream.Stop();
  server.Kill();
}

// Issue 27: the ack's allocation policy reaches the agent; an ack without one withdraws it.
TEST(ReportStreamTest, AckAllocationPolicyIsTheLatest) {
  FakeTelemetry service;
  service.batch_mba_percent_ = 40;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  EXPECT_FALSE(stream.LatestPolicy().has_value());
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] {
    std::optional<ReportStream::AckedPolicy> p = stream.LatestPolicy();
    return p && p->policy;
  }));
  EXPECT_EQ(stream.LatestPolicy()->policy->classes(0).mba_percent(), 40u);
  service.batch_mba_percent_ = 0;
  stream.Offer(Report(2));
  ASSERT_TRUE(Eventually([&] {
    std::optional<ReportStream::AckedPolicy> p = stream.LatestPolicy();
    return p && !p->policy;
  }));
  stream.Stop();
  server.Kill();
}

TEST(ReportStreamTest, AZeroAckIntervalHandsTheAgentItsOwnBack) {
  FakeTelemetry service;
  service.ack_interval_ms_ = 250;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] { return stream.RequestedInterval().has_value(); }));
  service.ack_interval_ms_ = -1;  // an explicit zero from now on
  stream.Offer(Report(2));
  ASSERT_TRUE(Eventually([&] { return !stream.RequestedInterval().has_value(); }));
  stream.Stop();
  server.Kill();
}

TEST(ReportStreamTest, TooShortAckIntervalIsClamped) {
  FakeTelemetry service;
  service.ack_interval_ms_ = 1;
  Server server = StartServer(&service);
  ReportStream stream(Options(server.port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] { return stream.RequestedInterval().has_value(); }));
  EXPECT_EQ(*stream.RequestedInterval(), kMinAckInterval);
  stream.Stop();
  server.Kill();
}

TEST(ReportStreamTest, StopsWhileTheExtenderIsUnreachable) {
  int port = 0;
  {
    FakeTelemetry probe;
    Server s = StartServer(&probe);
    port = s.port;
    s.Kill();
  }
  ReportStream stream(Options(port));
  stream.Start();
  stream.Offer(Report(1));
  ASSERT_TRUE(Eventually([&] { return stream.stats().failures >= 2; }));
  EXPECT_EQ(stream.stats().state, ReportStream::State::kRetrying);
  stream.Stop();  // returns: the test would time out otherwise
  EXPECT_EQ(stream.stats().state, ReportStream::State::kStopped);
}

}  // namespace
}  // namespace neighborly::agent
