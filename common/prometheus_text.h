// Prometheus text exposition helpers shared by the extender's and the agent's
// /metrics.
//
//   absl::StrCat("node=\"", PrometheusLabelValue(name), "\"")
#ifndef NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_
#define NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_

#include <string>
#include <string_view>

namespace neighborly {

// A label value escaped as the text format requires: backslash, double quote
// and newline.
inline std::string PrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_PROMETHEUS_TEXT_H_
