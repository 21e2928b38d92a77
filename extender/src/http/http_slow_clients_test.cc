// Slow and hostile clients against the real server on loopback (issue 15,
// finding 3): trickling and half-open connections must not hold the workers,
// a request has one deadline for all of it (not a per-read timeout),
// connections beyond the limit are answered 503 at once, pipelined requests
// are answered in order. With the thread-per-connection server these failed:
// two trickling connections held both workers until the client gave up.
//
// The time bounds below are generous (seconds where the server needs
// milliseconds); what they tell apart is "answered" from "held until a
// 60 s timeout".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/testing/fake_decider.h"
#include "extender/src/http/testing/loopback_server_test.h"
#include "extender/src/http/testing/raw_client.h"
#include "extender/src/http/testing/tls_client.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::neighborly::extender::testing::RawClient;
using ::neighborly::extender::testing::TlsClient;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

std::string Post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return absl::StrCat(
      "POST ", std::string(path), " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
      std::string(extra), "Content-Length: ", body.size(), "\r\n\r\n", std::string(body));
}

const std::string kFilterA = Post("/filter", R"({"Pod":{},"NodeNames":["a"]})");

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Connections that send `prefix` and then one byte every `interval`, each
// byte well within any per-read timeout, until stopped or refused.
class Tricklers {
 public:
  Tricklers(int port, int count, std::string prefix, std::chrono::milliseconds interval) {
    for (int i = 0; i < count; ++i) {
      clients_.push_back(std::make_unique<RawClient>(port));
      clients_.back()->Send(prefix);
    }
    thread_ = std::thread([this, interval] {
      while (!stop_) {
        for (auto& c : clients_) c->Send("a");
        std::this_thread::sleep_for(interval);
      }
    });
  }
  ~Tricklers() {
    stop_ = true;
    thread_.join();
  }
  RawClient& client(int i) { return *clients_[static_cast<size_t>(i)]; }

 private:
  std::vector<std::unique_ptr<RawClient>> clients_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class HttpSlowClientsTest : public LoopbackServerTest {
 protected:
  // Long per-stage timeouts unless a test shortens them: only the event loop
  // lets the requests below through in time.
  static HttpServerOptions LongTimeouts() {
    HttpServerOptions options;
    options.read_timeout = absl::Seconds(60);
    options.request_timeout = absl::Seconds(60);
    options.keep_alive_timeout = absl::Seconds(60);
    return options;
  }
  void Start(HttpServerOptions options) { StartServer(options); }
};

TEST_F(HttpSlowClientsTest, TricklingConnectionsDoNotHoldTheWorkers) {
  HttpServerOptions options = LongTimeouts();
  options.worker_threads = 2;
  options.max_connections = 64;
  Start(options);
  // Four times as many tricklers as workers, in the head and in the body.
  Tricklers heads(port_, 4,
                  "POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: ", std::chrono::milliseconds(50));
  Tricklers bodies(port_, 4, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
                   std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    RawClient scheduler(port_);
    ASSERT_TRUE(scheduler.Send(kFilterA));
    EXPECT_THAT(scheduler.ReadResponse(), HasSubstr("HTTP/1.1 200"));
    EXPECT_LT(SecondsSince(t0), 5.0);
  }
  EXPECT_EQ(decider_.filter_calls.load(), 3);
}

TEST_F(HttpSlowClientsTest, HalfOpenTlsHandshakesDoNotHoldTheWorkers) {
  ::neighborly::testing::TestPki pki(::testing::TempDir() + "/slow-tls-pki-" +
                                     std::to_string(getpid()));
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "extender").ok());
  HttpServerOptions options = LongTimeouts();
  options.worker_threads = 2;
  options.tls_cert_file = pki.Path("server.crt");
  options.tls_key_file = pki.Path("server.key");
  Start(options);
  // Connected, then silent or stopped inside the ClientHello.
  std::vector<std::unique_ptr<RawClient>> half_open;
  for (int i = 0; i < 8; ++i) {
    half_open.push_back(std::make_unique<RawClient>(port_));
    if (i % 2 == 1) half_open.back()->Send(std::string("\x16\x03\x01\x02\x00\x01", 6));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = Clock::now();
  TlsClient scheduler(port_);
  ASSERT_TRUE(scheduler.handshake_ok());
  EXPECT_THAT(scheduler.Exchange(kFilterA), HasSubstr("HTTP/1.1 200"));
  EXPECT_LT(SecondsSince(t0), 5.0);
}

TEST_F(HttpSlowClientsTest, ConnectionsBeyondTheLimitAre503AtOnce) {
  HttpServerOptions options = LongTimeouts();
  options.worker_threads = 2;
  options.max_connections = 2;
  Start(options);
  Tricklers holders(port_, 2,
                    "POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: ", std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Says nothing: the 503 comes anyway, and the connection closes.
  const auto t0 = Clock::now();
  RawClient silent(port_);
  bool closed = false;
  const std::string reply = silent.ReadUntilClosed(closed);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(reply, HasSubstr("too many connections"));
  EXPECT_THAT(reply, HasSubstr("Connection: close"));
  EXPECT_TRUE(closed);
  EXPECT_LT(SecondsSince(t0), 5.0);
  // One that sends a request reads the 503 too; its request is not served.
  RawClient eager(port_);
  ASSERT_TRUE(eager.Send(kFilterA));
  EXPECT_THAT(eager.ReadResponse(), HasSubstr("HTTP/1.1 503"));
  EXPECT_EQ(decider_.filter_calls.load(), 0);
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr("neighborly_extender_rejected_connections_total 2"));
}

TEST_F(HttpSlowClientsTest, OneDeadlineCoversTheWholeRequest) {
  HttpServerOptions options = LongTimeouts();
  options.read_timeout = absl::Seconds(1);
  options.request_timeout = absl::Seconds(2);
  Start(options);
  // A byte every 100 ms: each read is far within the 1 s readTimeout.
  Tricklers slow(port_, 2, "", std::chrono::milliseconds(100));
  RawClient& head = slow.client(0);
  const auto t0 = Clock::now();
  bool closed = false;
  const std::string head_reply = head.ReadUntilClosed(closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(head_reply, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(head_reply, HasSubstr("http.readTimeout"));
  EXPECT_LT(SecondsSince(t0), 8.0);

  Tricklers body(port_, 1, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
                 std::chrono::milliseconds(100));
  const auto t1 = Clock::now();
  const std::string body_reply = body.client(0).ReadUntilClosed(closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(body_reply, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(body_reply, HasSubstr("http.requestTimeout"));
  EXPECT_GE(SecondsSince(t1), 1.5);  // the body had its whole requestTimeout
  EXPECT_LT(SecondsSince(t1), 8.0);
  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_extender_http_requests_total{verb="filter",code="408"} 1)"));
}

TEST_F(HttpSlowClientsTest, IdleKeepAliveConnectionsCloseAfterKeepAliveTimeout) {
  HttpServerOptions options = LongTimeouts();
  options.keep_alive_timeout = absl::Seconds(1);
  Start(options);
  RawClient c(port_);
  ASSERT_TRUE(c.Send(kFilterA));
  ASSERT_THAT(c.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(server_->open_connections(), 1u);
  const auto t0 = Clock::now();
  bool closed = false;
  EXPECT_EQ(c.ReadUntilClosed(closed), "");  // closed without a word
  EXPECT_TRUE(closed);
  EXPECT_LT(SecondsSince(t0), 8.0);
}

// Issue 15, finding 6: pipelined requests after the first were dropped.
TEST_F(HttpSlowClientsTest, PipelinedRequestsAreAnsweredInOrder) {
  Start(LongTimeouts());
  decider_.Reject("b", "membw too high");
  decider_.SetScore("a", 9);
  RawClient c(port_);
  ASSERT_TRUE(c.Send(
      absl::StrCat(Post("/filter", R"({"Pod":{},"NodeNames":["a"]})"),
                   Post("/prioritize", R"({"Pod":{},"NodeNames":["a","b"]})"),
                   "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n",
                   Post("/filter", R"({"Pod":{},"NodeNames":["b"]})", "Connection: close\r\n"))));
  bool closed = false;
  const std::string replies = c.ReadUntilClosed(closed);
  EXPECT_TRUE(closed);
  const size_t first = replies.find(R"("NodeNames":["a"])");
  const size_t second = replies.find(R"({"Host":"a","Score":9})");
  const size_t third = replies.find("no route for GET /nowhere");
  const size_t fourth = replies.find(R"("FailedNodes":{"b":"membw too high"})");
  ASSERT_NE(first, std::string::npos) << replies;
  ASSERT_NE(second, std::string::npos) << replies;
  ASSERT_NE(third, std::string::npos) << replies;
  ASSERT_NE(fourth, std::string::npos) << replies;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_LT(third, fourth);
  EXPECT_EQ(decider_.filter_calls.load(), 2);
  EXPECT_EQ(decider_.prioritize_calls.load(), 1);
}

TEST_F(HttpSlowClientsTest, ListensWithTheSystemsBacklog) {
  Start(LongTimeouts());
  int somaxconn = 0;
  std::ifstream("/proc/sys/net/core/somaxconn") >> somaxconn;
  ASSERT_GT(somaxconn, 0);
  EXPECT_EQ(server_->listen_backlog(), somaxconn);  // cpp-httplib's was 5
}

TEST_F(HttpSlowClientsTest, OversizedHeadsAndRequestLinesAreRefused) {
  Start(LongTimeouts());
  RawClient long_line(port_);
  ASSERT_TRUE(long_line.Send("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_THAT(long_line.ReadResponse(), HasSubstr("HTTP/1.1 414"));
  RawClient big_head(port_);
  std::string head = "GET /x HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20; ++i)
    absl::StrAppend(&head, "X-", i, ": ", std::string(4000, 'v'), "\r\n");
  ASSERT_TRUE(big_head.Send(head + "\r\n"));
  const std::string reply = big_head.ReadResponse();
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 431"));
  EXPECT_THAT(reply, Not(HasSubstr("HTTP/1.1 404")));
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

// Issue 15, "bounded memory in total": request bytes held across connections
// are bounded by http.maxInFlightBytes. A request that would pass it is
// answered 503 at once (not queued), small requests are never refused for
// it, and the bytes are given back when a request is answered.
TEST_F(HttpSlowClientsTest, LargeRequestsShareABoundedBudget) {
  HttpServerOptions options = LongTimeouts();
  options.body_limit_bytes = 2 << 20;
  options.max_in_flight_bytes = 2 << 20;
  Start(options);
  ASSERT_EQ(server_->max_in_flight_bytes(), 2 << 20);
  const std::string big_body = R"({"Pod":{},"NodeNames":["a"]})" + std::string((2 << 20) - 64, ' ');
  const std::string big = Post("/filter", big_body);
  const size_t head_bytes = big.size() - big_body.size();

  // A holds 1.5 MiB of its 2 MiB request, and waits.
  RawClient a(port_);
  ASSERT_TRUE(a.Send(std::string_view(big).substr(0, head_bytes + (3 << 19))));
  const auto a_charged = [&] { return server_->in_flight_bytes() > (1 << 20); };
  for (int i = 0; i < 200 && !a_charged(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(a_charged()) << server_->in_flight_bytes();

  // B's whole request does not fit beside it: 503 at once, naming the key,
  // and B's connection closes.
  RawClient b(port_);
  b.Send(big);
  bool closed = false;
  const std::string b_reply = b.ReadUntilClosed(closed);
  EXPECT_THAT(b_reply, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(b_reply, HasSubstr("http.maxInFlightBytes"));
  EXPECT_TRUE(closed);

  // A kube-scheduler-sized request goes through meanwhile.
  RawClient small(port_);
  ASSERT_TRUE(small.Send(kFilterA));
  EXPECT_THAT(small.ReadResponse(), HasSubstr("HTTP/1.1 200"));

  // A completes and is served; its bytes are given back.
  ASSERT_TRUE(a.Send(std::string_view(big).substr(head_bytes + (3 << 19))));
  EXPECT_THAT(a.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  for (int i = 0; i < 200 && server_->in_flight_bytes() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->in_flight_bytes(), 0);
  // Now B's request fits.
  RawClient b_again(port_);
  ASSERT_TRUE(b_again.Send(big));
  EXPECT_THAT(b_again.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(decider_.filter_calls.load(), 3);

  std::string text;
  metrics_.AppendPrometheus(text);
  EXPECT_THAT(text, HasSubstr("neighborly_extender_http_over_budget_requests_total 1"));
  EXPECT_THAT(text,
              HasSubstr(R"(neighborly_extender_http_requests_total{verb="filter",code="503"} 1)"));
}

// A chunked body has no declared length: it is charged as it arrives, and a
// read the budget cannot take gets its request a 503; every byte is given
// back once the connection closes.
TEST_F(HttpSlowClientsTest, ChunkedBodiesAreChargedAsTheyArrive) {
  HttpServerOptions options = LongTimeouts();
  options.body_limit_bytes = 2 << 20;
  options.max_in_flight_bytes = 2 << 20;
  Start(options);
  // A holds 1.5 MiB of a declared 2 MiB body.
  const std::string a_body = R"({"Pod":{},"NodeNames":["a"]})" + std::string((2 << 20) - 64, ' ');
  const std::string a_request = Post("/filter", a_body);
  RawClient a(port_);
  ASSERT_TRUE(a.Send(std::string_view(a_request).substr(0, a_request.size() - (1 << 19))));
  for (int i = 0; i < 200 && server_->in_flight_bytes() <= (1 << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // A's head read, its size reserved
  }
  ASSERT_GT(server_->in_flight_bytes(), 1 << 20);
  // B sends 1 MiB in chunks of 64 KiB: it passes the budget on the way.
  RawClient b(port_);
  std::string chunked = "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 16; ++i)
    absl::StrAppend(&chunked, "10000\r\n", std::string(1 << 16, ' '), "\r\n");
  b.Send(chunked);
  bool closed = false;
  const std::string b_reply = b.ReadUntilClosed(closed);
  EXPECT_THAT(b_reply, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(b_reply, HasSubstr("http.maxInFlightBytes"));
  EXPECT_TRUE(closed);
  // A still completes.
  ASSERT_TRUE(a.Send(std::string_view(a_request).substr(a_request.size() - (1 << 19))));
  EXPECT_THAT(a.ReadResponse(), HasSubstr("HTTP/1.1 200"));
  for (int i = 0; i < 200 && server_->in_flight_bytes() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->in_flight_bytes(), 0);
}

// Many connections at once, each sending a near-limit body: the bytes held
// never pass the budget, whatever the interleaving; those beyond it are 503.
TEST_F(HttpSlowClientsTest, ConcurrentLargeRequestsStayWithinTheBudget) {
  HttpServerOptions options = LongTimeouts();
  options.body_limit_bytes = 4 << 20;
  options.max_in_flight_bytes = 6 << 20;
  options.worker_threads = 4;
  Start(options);
  const std::string body = R"({"Pod":{},"NodeNames":["a"]})" + std::string((4 << 20) - 64, ' ');
  const std::string request = Post("/filter", body, "Connection: close\r\n");
  std::atomic<int64_t> peak{0};
  std::atomic<bool> done{false};
  std::thread watch([&] {
    while (!done) {
      const int64_t now = server_->in_flight_bytes();
      int64_t seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::yield();
    }
  });
  std::atomic<int> served{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      RawClient c(port_);
      c.Send(request);
      bool closed = false;
      const std::string reply = c.ReadUntilClosed(closed, 256);
      if (reply.find("HTTP/1.1 200") != std::string::npos) ++served;
      if (reply.find("HTTP/1.1 503") != std::string::npos) ++refused;
    });
  }
  for (std::thread& t : clients) t.join();
  done = true;
  watch.join();
  EXPECT_EQ(served + refused, 8);
  EXPECT_GE(served.load(), 1);
  EXPECT_LE(peak.load(), 6 << 20);
  EXPECT_EQ(server_->in_flight_bytes(), 0);
}

}  // namespace
}  // namespace neighborly::extender
