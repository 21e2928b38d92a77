// HTTP/1.1 framing edges (issue 15, finding 6), through the real server on
// loopback with raw sockets: a reply that says "Connection: close" closes the
// connection (an unread body is never served as the next request), and
// ambiguous framing (duplicate Content-Length, Content-Length beside
// Transfer-Encoding) is refused and the connection closed.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/testing/fake_decider.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Sends bytes and reads everything until the server closes (or 20 s pass).
class Connection {
 public:
  explicit Connection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{20, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Connection() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything the server sends until it closes; `closed` says whether it did
  // (false: the 20 s receive timeout expired with the connection open).
  std::string ReadUntilClosed(bool& closed) {
    std::string in;
    char buf[4096];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        closed = true;
        return in;
      }
      if (n < 0) {
        closed = false;
        return in;
      }
      in.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

size_t Count(const std::string& haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

std::string FilterRequest(const std::string& extra_headers = "") {
  const std::string body = R"({"Pod":{},"NodeNames":["a"]})";
  return absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                      extra_headers, "Content-Length: ", body.size(), "\r\n\r\n", body);
}

class HttpEdgesTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    // Long enough that a server waiting for more bytes is told apart from one
    // that closed: the client gives up after 20 s.
    options.read_timeout = absl::Seconds(60);
    options.keep_alive_timeout = absl::Seconds(60);
    server_ = std::make_unique<HttpServer>(options, decider_, metrics_);
    absl::StatusOr<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  FakeDecider decider_;
  ExtenderMetrics metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

// The finding: after a 413 with "Connection: close" the unread body, itself a
// complete request, was answered 200 on the same socket.
TEST_F(HttpEdgesTest, AnUnreadBodyIsNeverServedAsTheNextRequest) {
  HttpServerOptions options;
  options.body_limit_bytes = 100;
  Start(options);
  const std::string smuggled = FilterRequest();
  Connection c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: ", 1000,
                                  "\r\n\r\n", smuggled)));
  bool closed = false;
  const std::string replies = c.ReadUntilClosed(closed);
  EXPECT_TRUE(closed) << "the server kept the connection open after Connection: close";
  EXPECT_THAT(replies, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(replies, HasSubstr("Connection: close"));
  EXPECT_EQ(Count(replies, "HTTP/1.1 "), 1u) << replies;
  EXPECT_EQ(decider_.filter_calls.load(), 0);
}

TEST_F(HttpEdgesTest, ExpectContinueRefusalClosesTheConnection) {
  HttpServerOptions options;
  options.body_limit_bytes = 100;
  Start(options);
  Connection c(port_);
  ASSERT_TRUE(c.Send(
      "POST /filter HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n"));
  // A client that sends the body anyway (many do, after a short wait).
  ASSERT_TRUE(c.Send(FilterRequest()));
  bool closed = false;
  const std::string replies = c.ReadUntilClosed(closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(replies, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(replies, Not(HasSubstr("HTTP/1.1 200")));
  EXPECT_EQ(decider_.filter_calls.load(), 0);
}

TEST_F(HttpEdgesTest, DuplicateOrConflictingContentLengthIsRefusedAndClosed) {
  Start();
  const std::string body = R"({"Pod":{},"NodeNames":["a"]})";
  const std::string framings[] = {
      // Two different lengths: which one ends the body is the smuggling question.
      absl::StrCat("Content-Length: 5\r\nContent-Length: ", body.size(), "\r\n"),
      // Even two equal ones.
      absl::StrCat("Content-Length: ", body.size(), "\r\nContent-Length: ", body.size(), "\r\n"),
      // A length beside chunked.
      absl::StrCat("Content-Length: ", body.size(), "\r\nTransfer-Encoding: chunked\r\n"),
  };
  for (const std::string& framing : framings) {
    SCOPED_TRACE(framing);
    Connection c(port_);
    ASSERT_TRUE(c.Send(absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\n", framing, "\r\n", body,
                                    FilterRequest())));
    bool closed = false;
    const std::string replies = c.ReadUntilClosed(closed);
    EXPECT_TRUE(closed);
    EXPECT_THAT(replies, HasSubstr("HTTP/1.1 400"));
    EXPECT_THAT(replies, HasSubstr("refused: "));
    EXPECT_EQ(Count(replies, "HTTP/1.1 "), 1u) << replies;
  }
  EXPECT_EQ(decider_.filter_calls.load(), 0);
  std::string metrics;
  metrics_.AppendPrometheus(metrics);
  EXPECT_THAT(metrics,
              HasSubstr("neighborly_extender_requests_total{verb=\"filter\",code=\"400\"} 3"));
}

// Issue 15, finding 2: the number of names a request may carry is bounded;
// more are refused before any is evaluated.
TEST_F(HttpEdgesTest, RequestsNamingTooManyNodesAreRefused) {
  HttpServerOptions options;
  options.max_names_per_request = 3;
  Start(options);
  Connection c(port_);
  const std::string body = R"({"Pod":{},"NodeNames":["a","b","c","d"]})";
  ASSERT_TRUE(c.Send(absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\n",
                                  "Content-Length: ", body.size(), "\r\n\r\n", body)));
  bool closed = false;
  const std::string reply = c.ReadUntilClosed(closed);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(reply, HasSubstr("4 candidate nodes, at most 3 (http.maxNamesPerRequest)"));
  EXPECT_EQ(decider_.filter_calls.load(), 0);
}

}  // namespace
}  // namespace neighborly::extender
