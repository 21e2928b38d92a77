#include "extender/src/http/http_request_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

TEST(ParseHeadTest, ParsesRequestLineHeadersPathAndQuery) {
  const std::string in =
      "\r\nGET /v1/decisions%2Fx?pod=ml%2Ftrainer&limit=5&flag HTTP/1.1\r\n"
      "Host: x\r\nX-Spaced:   value with spaces \t\r\nx-dup: 1\r\nX-Dup: 2\r\n\r\nBODY";
  httplib::Request req;
  const HeadResult head = ParseHead(in, 0, {}, req);
  ASSERT_EQ(head.kind, HeadResult::kComplete) << head.error;
  EXPECT_EQ(head.head_bytes, in.size() - 4);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.version, "HTTP/1.1");
  EXPECT_EQ(req.path, "/v1/decisions/x");
  EXPECT_EQ(req.get_param_value("pod"), "ml/trainer");
  EXPECT_EQ(req.get_param_value("limit"), "5");
  EXPECT_TRUE(req.has_param("flag"));
  EXPECT_EQ(req.get_header_value("x-spaced"), "value with spaces");
  EXPECT_EQ(req.get_header_value_count("X-DUP"), 2u);
}

TEST(ParseHeadTest, IncompleteUntilTheEmptyLineEvenByteByByte) {
  const std::string in = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  httplib::Request req;
  size_t scanned = 0;
  for (size_t n = 1; n < in.size() - 2; ++n) {
    const HeadResult head = ParseHead(std::string_view(in).substr(0, n), scanned, {}, req);
    ASSERT_EQ(head.kind, HeadResult::kIncomplete) << n;
    scanned = n;
  }
  const HeadResult head = ParseHead(in, scanned, {}, req);
  ASSERT_EQ(head.kind, HeadResult::kComplete);
  EXPECT_EQ(head.head_bytes, in.size() - 2);
}

TEST(ParseHeadTest, HttpOneZeroNeedsNoHost) {
  httplib::Request req;
  const HeadResult head = ParseHead("GET /healthz HTTP/1.0\r\n\r\n", 0, {}, req);
  EXPECT_EQ(head.kind, HeadResult::kComplete) << head.error;
}

TEST(ParseHeadTest, LimitsAndMalformedHeadsAreErrorsWithAStatus) {
  HeadLimits limits;
  limits.max_request_line_bytes = 100;
  limits.max_head_bytes = 1000;
  limits.max_header_fields = 3;
  struct Case {
    std::string in;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"GET /" + std::string(200, 'a'), 414, "request line longer than 100 bytes"},
      {"GET / HTTP/1.1\r\n" + std::string(2000, 'h'), 431, "longer than 1000 bytes"},
      {"GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n\r\n", 431,
       "5 header fields (at most 3)"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "not supported"},
      {"GET /\r\n\r\n", 400, "malformed request line"},
      {"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400, "malformed header field"},
      {"GET / HTTP/1.1\r\nBad name: 1\r\n\r\n", 400, "malformed header field"},
      {"GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", 400, "folding"},
      {"GET relative HTTP/1.1\r\n\r\n", 400, "request target"},
      // Issue 24: origin form only, and exactly one Host in HTTP/1.1.
      {"POST http://other/filter HTTP/1.1\r\nHost: x\r\n\r\n", 400, "absolute-form"},
      {"GET https://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "absolute-form"},
      {"GET /healthz HTTP/1.1\r\n\r\n", 400, "no Host header (HTTP/1.1 requires one)"},
      {"GET /healthz HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n", 400,
       "2 Host headers (exactly one is allowed)"},
      {"GET /healthz HTTP/1.0\r\nHost: x\r\nHost: x\r\n\r\n", 400, "2 Host headers"},
  };
  for (const Case& c : cases) {
    httplib::Request req;
    const HeadResult head = ParseHead(c.in, 0, limits, req);
    EXPECT_EQ(head.kind, HeadResult::kError) << c.in.substr(0, 40);
    EXPECT_EQ(head.status, c.status) << c.in.substr(0, 40);
    EXPECT_THAT(head.error, HasSubstr(c.message));
  }
}

TEST(FramingTest, LengthChunkedAndAmbiguity) {
  auto framing = [](std::initializer_list<std::pair<std::string, std::string>> headers) {
    httplib::Request req;
    for (const auto& [k, v] : headers) req.headers.emplace(k, v);
    return FramingOf(req);
  };
  EXPECT_EQ(framing({}).kind, BodyFraming::kNone);
  EXPECT_EQ(framing({{"Content-Length", "0"}}).kind, BodyFraming::kNone);
  const BodyFraming length = framing({{"Content-Length", " 12 "}});
  EXPECT_EQ(length.kind, BodyFraming::kLength);
  EXPECT_EQ(length.length, 12u);
  EXPECT_EQ(framing({{"Transfer-Encoding", "Chunked"}}).kind, BodyFraming::kChunked);
  EXPECT_EQ(framing({{"Content-Length", "1"}, {"content-length", "1"}}).status, 400);
  EXPECT_EQ(framing({{"Content-Length", "1"}, {"Transfer-Encoding", "chunked"}}).status, 400);
  EXPECT_EQ(framing({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}).status,
            400);
  EXPECT_EQ(framing({{"Transfer-Encoding", "gzip, chunked"}}).status, 501);
  EXPECT_EQ(framing({{"Content-Length", "-1"}}).status, 400);
  EXPECT_EQ(framing({{"Content-Length", "1x"}}).status, 400);
}

TEST(ChunkedDecoderTest, DecodesFedAllAtOnceOrByteByByte) {
  const std::string in = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  {
    ChunkedDecoder decoder(100);
    std::string out;
    size_t consumed = 0;
    EXPECT_EQ(decoder.Feed(in, consumed, out), ChunkedDecoder::kDone);
    EXPECT_EQ(out, "hello world");
    EXPECT_EQ(in.substr(consumed), "NEXT");
  }
  ChunkedDecoder decoder(100);
  std::string out;
  size_t offset = 0;
  ChunkedDecoder::Status status = ChunkedDecoder::kNeedMore;
  for (size_t end = 1; end <= in.size() && status == ChunkedDecoder::kNeedMore; ++end) {
    size_t consumed = 0;
    status = decoder.Feed(std::string_view(in).substr(offset, end - offset), consumed, out);
    offset += consumed;
  }
  EXPECT_EQ(status, ChunkedDecoder::kDone);
  EXPECT_EQ(out, "hello world");
  EXPECT_EQ(in.substr(offset), "NEXT");
}

TEST(ChunkedDecoderTest, RefusesOversizedAndMalformedChunks) {
  std::string out;
  size_t consumed = 0;
  EXPECT_EQ(ChunkedDecoder(10).Feed("b\r\nhello world\r\n0\r\n\r\n", consumed, out),
            ChunkedDecoder::kTooLarge);
  ChunkedDecoder bad_size(100);
  EXPECT_EQ(bad_size.Feed("zz\r\n", consumed, out), ChunkedDecoder::kError);
  EXPECT_THAT(bad_size.error(), HasSubstr("malformed chunk size"));
  ChunkedDecoder no_crlf(100);
  EXPECT_EQ(no_crlf.Feed("2\r\nabXY", consumed, out), ChunkedDecoder::kError);
  ChunkedDecoder huge(1ull << 62);
  EXPECT_EQ(huge.Feed("ffffffffffffffffff\r\n", consumed, out), ChunkedDecoder::kError);
}

}  // namespace
}  // namespace neighborly::extender
