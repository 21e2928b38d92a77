// HTTP/1.1 framing edges (issue 15, finding 6), through the real server on
// loopback with raw sockets: a reply that says "Connection: close" closes the
// connection (an unread body is never served as the next request), and
// ambiguous framing (duplicate Content-Length, Content-Length beside
// Transfer-Encoding) is refused and the connection closed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/testing/fake_decider.h"
#include "extender/src/http/testing/loopback_server_test.h"
#include "extender/src/http/testing/raw_client.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Connection = ::neighborly::extender::testing::RawClient;

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

class HttpEdgesTest : public LoopbackServerTest {
 protected:
  void Start(HttpServerOptions options = {}) {
    // Long enough that a server waiting for more bytes is told apart from one
    // that closed: the client gives up after 20 s.
    options.read_timeout = absl::Seconds(60);
    options.keep_alive_timeout = absl::Seconds(60);
    StartServer(options);
  }
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
              HasSubstr("neighborly_extender_http_requests_total{verb=\"filter\",code=\"400\"} 3"));
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
