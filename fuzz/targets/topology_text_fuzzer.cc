// sysfs topology files: node<N>/meminfo and /proc/meminfo (MemTotal),
// node<N>/distance, cache/index<N>/size. The same bytes go to each parser.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  absl::StatusOr<uint64_t> mem = neighborly::agent::ParseMemTotalBytes(text);
  NEIGHBORLY_FUZZ_CHECK(mem.ok() || !mem.status().message().empty(), "error without a message");
  absl::StatusOr<std::vector<uint32_t>> distances = neighborly::agent::ParseDistances(text);
  NEIGHBORLY_FUZZ_CHECK(distances.ok() || !distances.status().message().empty(),
                        "error without a message");
  absl::StatusOr<uint64_t> cache = neighborly::agent::ParseCacheSize(text);
  NEIGHBORLY_FUZZ_CHECK(cache.ok() || !cache.status().message().empty(), "error without a message");
  return 0;
}
