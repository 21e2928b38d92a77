// ReportPublisher fanning out to several in-test Telemetry services on
// loopback, behind one name answered by a scripted resolver.
#include "node-agent/src/report/publisher.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
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
using ::testing::Contains;
using ::testing::Not;

constexpr absl::Duration kDeadline = absl::Seconds(30);

bool Eventually(const std::function<bool()>& pred) {
  return ::neighborly::testing::WaitFor(pred, kDeadline);
}

// Acks every report and remembers the sequences it read.
class FakeReplica final : public tv1::Telemetry::Service {
 public:
  FakeReplica() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeReplica() override {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  grpc::Status Report(grpc::ServerContext*,
                      grpc::ServerReaderWriter<tv1::ReportAck, tv1::NodeReport>* stream) override {
    tv1::NodeReport report;
    while (stream->Read(&report)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        received_.insert(report.sequence());
      }
      tv1::ReportAck ack;
      ack.set_sequence(report.sequence());
      if (!stream->Write(ack)) break;
    }
    return grpc::Status::OK;
  }
  bool Has(uint64_t sequence) {
    std::lock_guard<std::mutex> lock(mu_);
    return received_.contains(sequence);
  }
  std::set<uint64_t> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::set<uint64_t> received_;
};

// A replica that accepts connections and never answers (a hung process): the
// HTTP/2 handshake never completes.
class Silent {
 public:
  Silent() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }
  ~Silent() { close(fd_); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Every host resolves to the addresses the test sets (ports included).
class TableResolver final : public AddressResolver {
 public:
  void Set(std::vector<std::string> addresses) {
    std::lock_guard<std::mutex> lock(mu_);
    addresses_ = std::move(addresses);
  }
  absl::StatusOr<std::vector<std::string>> Resolve(const HostPort&) override {
    std::lock_guard<std::mutex> lock(mu_);
    return addresses_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> addresses_;
};

struct Directory {
  TableResolver* resolver = nullptr;  // owned by directory
  std::shared_ptr<ReplicaDirectory> directory;
};

Directory MakeDirectory(std::vector<std::string> addresses) {
  auto resolver = std::make_unique<TableResolver>();
  resolver->Set(std::move(addresses));
  Directory s;
  s.resolver = resolver.get();
  absl::StatusOr<std::unique_ptr<ReplicaDirectory>> d = ReplicaDirectory::Create(
      {.targets = {"replicas.test:9090"},
       .resolve_interval = absl::Hours(1),
       .min_resolve_gap = absl::Milliseconds(10)},
      std::move(resolver));
  EXPECT_TRUE(d.ok()) << d.status();
  s.directory = std::move(*d);
  s.directory->Start();
  return s;
}

ReportStreamOptions Common() {
  ReportStreamOptions o;
  o.initial_backoff = absl::Milliseconds(20);
  o.max_backoff = absl::Milliseconds(200);
  return o;
}

tv1::NodeReport Report(uint64_t sequence) {
  tv1::NodeReport r;
  r.set_node_name("node-1");
  r.set_sequence(sequence);
  return r;
}

TEST(ReportPublisherTest, EveryReplicaBehindTheNameGetsEveryReport) {
  FakeReplica a, b, c;
  Directory s = MakeDirectory({a.address(), b.address(), c.address()});
  ReportPublisher publisher("node-1", s.directory, Common());
  publisher.Start();
  EXPECT_EQ(publisher.stream_count(), 3u);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    publisher.Publish(Report(seq));
    ASSERT_TRUE(Eventually([&] { return a.Has(seq) && b.Has(seq) && c.Has(seq); })) << seq;
  }
  std::vector<StreamView> views;
  publisher.AppendViews(views);
  ASSERT_EQ(views.size(), 3u);
  for (const StreamView& v : views) {
    EXPECT_EQ(v.target, "replicas.test:9090");
    EXPECT_EQ(v.node, "node-1");
    EXPECT_GE(v.stats.acks, 1u) << v.address;
  }
  publisher.Stop();
}

TEST(ReportPublisherTest, FollowsReplicasThatAppearAndDisappear) {
  FakeReplica a, b, c;
  Directory s = MakeDirectory({a.address(), b.address()});
  ReportPublisher publisher("node-1", s.directory, Common());
  publisher.Start();
  publisher.Publish(Report(1));
  ASSERT_TRUE(Eventually([&] { return a.Has(1) && b.Has(1); }));

  // Scaled to three, then b removed: one re-resolve each.
  s.resolver->Set({a.address(), b.address(), c.address()});
  s.directory->ResolveSoon();
  ASSERT_TRUE(Eventually([&] { return publisher.stream_count() == 3; }));
  publisher.Publish(Report(2));
  ASSERT_TRUE(Eventually([&] { return a.Has(2) && b.Has(2) && c.Has(2); }));

  s.resolver->Set({a.address(), c.address()});
  s.directory->ResolveSoon();
  ASSERT_TRUE(Eventually([&] { return publisher.stream_count() == 2; }));
  publisher.Publish(Report(3));
  ASSERT_TRUE(Eventually([&] { return a.Has(3) && c.Has(3); }));
  EXPECT_THAT(b.received(), Not(Contains(3u)));
  publisher.Stop();
}

TEST(ReportPublisherTest, ADeadOrHungReplicaNeverDelaysTheOthers) {
  FakeReplica live;
  Silent hung;
  std::string dead;
  {
    FakeReplica gone;
    dead = gone.address();
  }
  Directory s = MakeDirectory({live.address(), hung.address(), dead});
  ReportPublisher publisher("node-1", s.directory, Common());
  publisher.Start();
  // Each report reaches the live replica although the other two never take one.
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    publisher.Publish(Report(seq));
    ASSERT_TRUE(Eventually([&] { return live.Has(seq); })) << seq;
  }
  // The replica has the report before its ack reaches the publisher.
  std::vector<StreamView> views;
  auto live_acked = [&](uint64_t seq) {
    views.clear();
    publisher.AppendViews(views);
    return std::any_of(views.begin(), views.end(), [&](const StreamView& v) {
      return v.address == live.address() && v.stats.last_acked_sequence == seq;
    });
  };
  EXPECT_TRUE(Eventually([&] { return live_acked(20); }));
  for (const StreamView& v : views) {
    if (v.address == live.address()) {
      EXPECT_EQ(v.stats.state, ReportStream::State::kConnected);
      EXPECT_EQ(v.stats.last_acked_sequence, 20u);
    } else {
      EXPECT_EQ(v.stats.acks, 0u) << v.address;
    }
  }
  publisher.Stop();  // returns although one replica never answered
}

}  // namespace
}  // namespace neighborly::agent
