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

#include <cstdint>
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

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_JSON_WRITER_H_
