// HOST:PORT addresses from the command line and the extender's YAML config.
#include <cstddef>
#include <cstdint>

#include "common/host_port.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<neighborly::HostPort> hp =
      neighborly::ParseHostPort(neighborly::fuzz::AsText(data, size));
  NEIGHBORLY_FUZZ_CHECK(hp.ok() || !hp.status().message().empty(), "error without a message");
  return 0;
}
