// Splitting helpers for kernel text files, on std::string_view (Debian's
// Abseil splits into absl::string_view, which does not convert).
//
//   for (std::string_view line : SplitLines(text)) { auto fields = SplitFields(line); }
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SYS_TEXT_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SYS_TEXT_H_

#include <string_view>
#include <vector>

namespace neighborly::agent {

// Non-empty lines, without their "\n".
inline std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (!line.empty()) lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// Fields separated by runs of spaces or tabs.
inline std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) fields.push_back(line.substr(i, j - i));
    i = j;
  }
  return fields;
}

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SYS_TEXT_H_
