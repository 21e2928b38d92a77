#include "common/logging.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace neighborly {

absl::Status SetupLogging(std::string_view level, std::string_view program) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "log level \"", Av(level), "\" is not one of trace, debug, info, warn, error, off"));
  }
  auto logger = spdlog::stderr_logger_mt(std::string(program));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %n: %v", spdlog::pattern_time_type::utc);
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace neighborly
