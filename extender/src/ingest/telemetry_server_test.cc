// The telemetry endpoint over real gRPC on loopback (port 0).
#include "extender/src/ingest/telemetry_server.h"

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "common/clock.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using ::testing::HasSubstr;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

// Waits for `condition` with a deadline (not a timed assertion: the deadline
// only bounds a hang).
template <typename F>
bool WaitFor(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

class TelemetryServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TelemetryServer>> server =
        TelemetryServer::Start(core_, {.address = "127.0.0.1:0"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    EXPECT_EQ(server_->address(), "127.0.0.1:" + std::to_string(server_->port()));
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = tv1::Telemetry::NewStub(channel_);
  }

  static void SetDeadline(grpc::ClientContext& ctx) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  }

  FakeClock clock_;
  ExtenderCore core_{ModelConfig{}, clock_};
  std::unique_ptr<TelemetryServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tv1::Telemetry::Stub> stub_;
};

TEST_F(TelemetryServerTest, AcceptsAndAcksReportsVisibleInTheCore) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto stream = stub_->Report(&ctx);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    tv1::NodeReport r = TwoSocketNode("node-1", seq);
    AddPod(r, {.uid = "u", .namespace_name = "content", .name = "article"});
    ASSERT_TRUE(stream->Write(r));
    tv1::ReportAck ack;
    ASSERT_TRUE(stream->Read(&ack));
    EXPECT_EQ(ack.sequence(), seq);
    EXPECT_FALSE(ack.has_allocation_policy());  // off unless configured
  }
  EXPECT_EQ(server_->stats().streams_open, 1u);
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  std::optional<NodeSummary> node = core_.Node("node-1");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->sequence, 3u);
  ASSERT_EQ(node->pods.size(), 1u);
  EXPECT_EQ(node->pods[0].name, "article");
  EXPECT_EQ(server_->stats().reports_accepted, 3u);
  EXPECT_TRUE(WaitFor([&] { return server_->stats().streams_open == 0; }));
}

TEST_F(TelemetryServerTest, InvalidReportEndsTheStreamWithInvalidArgumentAndChangesNothing) {
  ASSERT_TRUE(core_.Ingest(TwoSocketNode("node-1", 1)).ok());
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto stream = stub_->Report(&ctx);
  // A problem outside the pod records refuses the whole report (an invalid pod
  // record alone is dropped: ingest_limits_test.cc).
  tv1::NodeReport bad = TwoSocketNode("node-1", 2);
  AddPod(bad, {.uid = "u", .name = "p"});
  bad.mutable_topology()->mutable_l3_domains(0)->set_numa_node(7);
  stream->Write(bad);
  tv1::ReportAck ack;
  EXPECT_FALSE(stream->Read(&ack));
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("topology.l3_domains[0].numa_node"));
  EXPECT_EQ(core_.Node("node-1")->sequence, 1u);
  EXPECT_TRUE(core_.Node("node-1")->pods.empty());
  EXPECT_EQ(server_->stats().reports_rejected, 1u);
  EXPECT_EQ(server_->stats().reports_accepted, 0u);
}

TEST_F(TelemetryServerTest, ReplayedReportIsRefused) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto stream = stub_->Report(&ctx);
  tv1::ReportAck ack;
  ASSERT_TRUE(stream->Write(TwoSocketNode("node-1", 5)));
  ASSERT_TRUE(stream->Read(&ack));
  stream->Write(TwoSocketNode("node-1", 5));
  EXPECT_FALSE(stream->Read(&ack));
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sequence"));
}

TEST_F(TelemetryServerTest, MalformedProtobufBytesAreRefusedCleanly) {
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  void* got = nullptr;
  bool ok = false;
  auto next = [&](intptr_t want) {
    EXPECT_TRUE(cq.Next(&got, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(got), want);
    return ok;
  };
  auto call = stub.PrepareCall(&ctx, "/neighborly.telemetry.v1.Telemetry/Report", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(next(1));
  // Field 1 (node_name), length-delimited, with a length varint that never ends.
  const std::string garbage = "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer request(&slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  next(2);  // may fail if the server already finished the call
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  EXPECT_FALSE(next(3));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  EXPECT_TRUE(next(4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("malformed NodeReport"));
  EXPECT_EQ(core_.node_count(), 0u);
  EXPECT_EQ(server_->counters().reports_malformed.load(), 1u);
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
  // The server still serves others.
  grpc::ClientContext ctx2;
  SetDeadline(ctx2);
  auto stream = stub_->Report(&ctx2);
  ASSERT_TRUE(stream->Write(TwoSocketNode("node-2", 1)));
  tv1::ReportAck ack;
  EXPECT_TRUE(stream->Read(&ack));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(TelemetryServerTest, ManyConcurrentStreams) {
  constexpr int kStreams = 64;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<tv1::NodeReport, tv1::ReportAck>>> streams;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    SetDeadline(*contexts.back());
    streams.push_back(stub_->Report(contexts.back().get()));
    ASSERT_TRUE(streams.back()->Write(TwoSocketNode("node-" + std::to_string(i), 1)));
  }
  for (auto& s : streams) {
    tv1::ReportAck ack;
    ASSERT_TRUE(s->Read(&ack));
  }
  EXPECT_EQ(server_->stats().streams_open, static_cast<uint64_t>(kStreams));
  EXPECT_EQ(core_.node_count(), static_cast<size_t>(kStreams));
  for (auto& s : streams) {
    s->WritesDone();
    EXPECT_TRUE(s->Finish().ok());
  }
  EXPECT_TRUE(WaitFor([&] { return server_->stats().streams_open == 0; }));
}

TEST_F(TelemetryServerTest, ShutdownEndsOpenStreams) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto stream = stub_->Report(&ctx);
  ASSERT_TRUE(stream->Write(TwoSocketNode("node-1", 1)));
  tv1::ReportAck ack;
  ASSERT_TRUE(stream->Read(&ack));
  server_->Shutdown(absl::Milliseconds(100));
  EXPECT_FALSE(stream->Read(&ack));
  EXPECT_FALSE(stream->Finish().ok());
  server_->Shutdown();  // idempotent
}

TEST(TelemetryServerStartTest, BadAddressesFailClearly) {
  FakeClock clock;
  ExtenderCore core(ModelConfig{}, clock);
  absl::StatusOr<std::unique_ptr<TelemetryServer>> bad =
      TelemetryServer::Start(core, {.address = "no-port"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("no-port"));
  absl::StatusOr<std::unique_ptr<TelemetryServer>> first =
      TelemetryServer::Start(core, {.address = "127.0.0.1:0"});
  ASSERT_TRUE(first.ok());
  absl::StatusOr<std::unique_ptr<TelemetryServer>> taken =
      TelemetryServer::Start(core, {.address = (*first)->address()});
  EXPECT_FALSE(taken.ok());
  EXPECT_THAT(std::string(taken.status().message()), HasSubstr((*first)->address()));
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

// Issue 27: with allocation configured, every ack carries the policy.
TEST(TelemetryAllocationTest, AckCarriesThePolicy) {
  FakeClock clock;
  ExtenderCore core{ModelConfig{}, clock};
  TelemetryServer::Options options{.address = "127.0.0.1:0"};
  tv1::ClassAllocation* batch = options.policy.allocation_policy.emplace().add_classes();
  batch->set_workload_class("batch");
  batch->set_l3_ways_fraction(0.25);
  batch->set_mba_percent(30);
  absl::StatusOr<std::unique_ptr<TelemetryServer>> server =
      TelemetryServer::Start(core, std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  auto stub = tv1::Telemetry::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = stub->Report(&ctx);
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    tv1::NodeReport report = TwoSocketNode("node-1", seq);
    // An annotated service, an unlabelled streamer, a quiet unlabelled pod.
    AddPod(report, {.uid = "lc",
                    .name = "article",
                    .annotations = {{"neighborly.io/class", "latency-critical"}},
                    .membw_bytes_per_second = 2'800'000'000});
    AddPod(report, {.uid = "scan", .name = "scan", .membw_bytes_per_second = 22'100'000'000});
    AddPod(report, {.uid = "web", .name = "web", .membw_bytes_per_second = 100'000'000});
    ASSERT_TRUE(stream->Write(report));
    tv1::ReportAck ack;
    ASSERT_TRUE(stream->Read(&ack));
    ASSERT_TRUE(ack.has_allocation_policy()) << seq;
    // The model's class of each pod: the streamer is batch though unlabelled.
    ASSERT_EQ(ack.allocation_policy().pods_size(), 3) << seq;
    std::map<std::string, std::string> classes, sources;
    for (const tv1::PodClass& pod : ack.allocation_policy().pods()) {
      classes[pod.uid()] = pod.workload_class();
      sources[pod.uid()] = pod.source();
    }
    EXPECT_EQ(classes["lc"], "latency-critical");
    EXPECT_EQ(sources["lc"], "annotation");
    EXPECT_EQ(classes["scan"], "batch");
    EXPECT_EQ(sources["scan"], "measured");
    EXPECT_EQ(classes["web"], "standard");
    ASSERT_EQ(ack.allocation_policy().classes_size(), 1);
    const tv1::ClassAllocation& c = ack.allocation_policy().classes(0);
    EXPECT_EQ(c.workload_class(), "batch");
    EXPECT_DOUBLE_EQ(c.l3_ways_fraction(), 0.25);
    EXPECT_EQ(c.mba_percent(), 30u);
    EXPECT_EQ(c.mba_mbps(), 0u);
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace neighborly::extender
