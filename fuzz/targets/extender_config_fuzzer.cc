// neighborly-extender's YAML configuration (yaml-cpp underneath; its
// exceptions must not escape ParseExtenderConfig).
#include <cstddef>
#include <cstdint>

#include "extender/src/config/extender_config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::extender::ExtenderConfig> config =
      neighborly::extender::ParseExtenderConfig(neighborly::fuzz::AsText(data, size), "fuzz.yaml");
  if (!config.ok()) {
    NEIGHBORLY_FUZZ_CHECK(!config.status().message().empty(), "error without a message");
    return 0;
  }
  absl::Status valid = neighborly::extender::ValidateExtenderConfig(*config);
  NEIGHBORLY_FUZZ_CHECK(valid.ok() || !valid.message().empty(), "error without a message");
  return 0;
}
