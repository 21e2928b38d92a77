// HTTP/1.1 request framing for the extender's event-loop server
// (http_server.h): finds a complete request head in the bytes received so
// far, parses it into an httplib::Request (used as a plain data type; the
// handlers and the operator API take it), and decides how the body is framed.
// Pure functions over buffers: no sockets, no clocks.
//
//   HeadResult head = ParseHead(buffer, limits, request);
//   if (head.kind == HeadResult::kComplete) { ... head.head_bytes ... }
//
// Bodies: a Content-Length, or `Transfer-Encoding: chunked` decoded
// incrementally by ChunkedDecoder (a trickled chunked body is decoded once,
// not rescanned per byte).
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_REQUEST_PARSER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_REQUEST_PARSER_H_

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace neighborly::extender {

struct HeadLimits {
  size_t max_request_line_bytes = 8 << 10;  // longer: 414
  size_t max_header_line_bytes = 8 << 10;   // longer: 431
  size_t max_head_bytes = 64 << 10;         // request line and headers; more: 431
  size_t max_header_fields = 100;           // more: 431
};

struct HeadResult {
  enum Kind { kIncomplete, kComplete, kError };
  Kind kind = kIncomplete;
  size_t head_bytes = 0;  // kComplete: bytes up to and including the empty line
  int status = 0;         // kError: the HTTP status to answer (400, 414, 431, 505)
  std::string error;      // kError: what was wrong, for the JSON error body
};

// Looks for a complete head at the start of `in` (leading empty lines are
// skipped, RFC 9112 section 2.2). `scan_from`: bytes already known not to end
// the head (the previous call's in.size()), so a trickled head is scanned once.
// On kComplete fills req.method, target, path (percent-decoded), params
// (query), version and headers.
HeadResult ParseHead(std::string_view in, size_t scan_from, const HeadLimits& limits,
                     httplib::Request& req);

struct BodyFraming {
  enum Kind { kNone, kLength, kChunked };
  Kind kind = kNone;
  uint64_t length = 0;  // kLength
  int status = 0;       // non-zero: refuse with this status and close (framing error)
  std::string error;
};
// From the parsed head: ambiguous framing (several Content-Length, one beside
// Transfer-Encoding, several Transfer-Encoding, a coding other than chunked)
// is an error (400), as is an unparseable Content-Length.
BodyFraming FramingOf(const httplib::Request& req);

// Decodes a chunked body as bytes arrive. Feed() consumes what it can of `in`
// (returns how much) and appends the decoded data to `out`.
class ChunkedDecoder {
 public:
  enum Status { kNeedMore, kDone, kError, kTooLarge };
  explicit ChunkedDecoder(size_t limit_bytes) : limit_bytes_(limit_bytes) {}
  Status Feed(std::string_view in, size_t& consumed, std::string& out);
  const std::string& error() const { return error_; }

 private:
  enum State { kSize, kData, kDataEnd, kTrailer };
  const size_t limit_bytes_;
  State state_ = kSize;
  uint64_t remaining_ = 0;
  std::string error_;
};

// "%2F" -> "/"; `plus_is_space` for query strings.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// The reason phrase of a status ("OK", "Not Found", ...).
const char* ReasonPhrase(int status);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_REQUEST_PARSER_H_
