// Process-wide logging setup (spdlog). main() calls SetupLogging once; library
// code logs through spdlog's default logger and never configures it.
#ifndef NEIGHBORLY_COMMON_LOGGING_H_
#define NEIGHBORLY_COMMON_LOGGING_H_

#include <string_view>

#include "absl/status/status.h"

namespace neighborly {

// level: trace|debug|info|warn|error|off. Logs go to stderr.
absl::Status SetupLogging(std::string_view level, std::string_view program);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_LOGGING_H_
