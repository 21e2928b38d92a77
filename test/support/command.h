// Runs a shell command for a test and returns its exit status (pclose's) and
// its standard output; append " 2>&1" to the command for its errors too.
#ifndef NEIGHBORLY_TEST_SUPPORT_COMMAND_H_
#define NEIGHBORLY_TEST_SUPPORT_COMMAND_H_

#include <cstdio>
#include <string>
#include <utility>

namespace neighborly::testing {

inline std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  return {pclose(pipe), out};
}

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_COMMAND_H_
