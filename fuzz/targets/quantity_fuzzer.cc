// Kubernetes resource quantities (pod requests in extender requests and
// scenario files): ParseMilliQuantity and ParseByteQuantity.
#include <cstddef>
#include <cstdint>

#include "common/quantity.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  absl::StatusOr<int64_t> milli = neighborly::ParseMilliQuantity(text);
  absl::StatusOr<int64_t> bytes = neighborly::ParseByteQuantity(text);
  NEIGHBORLY_FUZZ_CHECK(milli.ok() || !milli.status().message().empty(), "error without a message");
  NEIGHBORLY_FUZZ_CHECK(bytes.ok() || !bytes.status().message().empty(), "error without a message");
  return 0;
}
