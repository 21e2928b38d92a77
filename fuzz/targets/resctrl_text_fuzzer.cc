// resctrl: mon_data counter values (llc_occupancy, mbm_*_bytes, with the
// kernel's "Unavailable"/"Error" tokens) and mon_L3_<id> / mon_sub_L3_<id>
// directory names. The same bytes go to each parser.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/resctrl/resctrl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  absl::StatusOr<uint64_t> value = neighborly::agent::ParseMonValue(text);
  NEIGHBORLY_FUZZ_CHECK(value.ok() || !value.status().message().empty(), "error without a message");
  (void)neighborly::agent::ParseMonDomainName(text);
  (void)neighborly::agent::ParseMonDomainName(text, "mon_sub_L3_");
  return 0;
}
