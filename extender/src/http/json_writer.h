// Hand-written JSON output for the hot path: appends to a caller-owned buffer
// that is reused across requests, so encoding a reply allocates nothing once
// the buffer has grown to its working size.
//
//   std::string out;
//   out += "{\"Error\":";
//   AppendJsonString("bad \"input\"", out);   // -> "bad \"input\""
//   out += '}';
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_JSON_WRITER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_JSON_WRITER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace neighborly::extender {

// Appends `s` as a JSON string literal (with quotes). Escapes '"', '\\' and
// control characters; like Go's encoding/json it also escapes U+2028 and
// U+2029 and replaces invalid UTF-8 with U+FFFD, so the output is always valid
// JSON whatever bytes a reason or name holds. '<', '>' and '&' stay readable
// ("membw 84% > 80%"); Go's decoder accepts them either way.
void AppendJsonString(std::string_view s, std::string& out);

// Appends a decimal integer.
void AppendInt(int64_t value, std::string& out);

// Appends a number in a form Prometheus and JSON both accept ("NaN"/"+Inf" are
// not valid JSON; callers of this function only pass finite values).
void AppendDouble(double value, std::string& out);

// Appends to a string through a raw cursor, for replies of thousands of
// entries: room is made in large steps, each piece is a store or a memcpy,
// and the string is cut to what was written when the appender goes away.
// Output is byte for byte what the functions above append.
//
//   JsonAppender json(reply);
//   json.Raw("{\"Host\":");
//   json.String(name);
//   json.Char('}');
class JsonAppender {
 public:
  explicit JsonAppender(std::string& out) : out_(out), at_(out.size()) {}
  ~JsonAppender() { out_.resize(at_); }
  JsonAppender(const JsonAppender&) = delete;
  JsonAppender& operator=(const JsonAppender&) = delete;

  void Char(char c) {
    *Room(1) = c;
    ++at_;
  }
  void Raw(std::string_view s) {
    std::memcpy(Room(s.size()), s.data(), s.size());
    at_ += s.size();
  }
  void String(std::string_view s);  // as AppendJsonString
  void Int(int64_t value);          // as AppendInt
  // A score in 0..10, as AppendInt writes it.
  void SmallScore(int score) {
    if (score >= 10) return Raw("10");
    Char(static_cast<char>('0' + std::max(score, 0)));
  }

  // For a writer that knows its piece: at least `n` bytes to write at the
  // returned cursor, then Advance() by what it wrote.
  char* Room(size_t n) {
    if (out_.size() - at_ < n) Grow(n);
    return out_.data() + at_;
  }
  void Advance(size_t n) { at_ += n; }

 private:
  void Grow(size_t n);
  std::string& out_;
  size_t at_;  // written so far; out_.size() is the room
};

namespace internal {
// How many leading bytes of `s` need no escaping: the kernel AppendJsonString
// uses (SSE2 on x86-64) and the portable one, exposed for tests.
size_t JsonPlainPrefix(std::string_view s);
size_t JsonPlainPrefixPortable(std::string_view s);
}  // namespace internal

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_JSON_WRITER_H_
