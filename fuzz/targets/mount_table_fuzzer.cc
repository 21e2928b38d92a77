// The host's mount table (/proc/self/mountinfo, else /proc/mounts), seen from
// inside the agent's container (host root "/host/") and on the host ("/").
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/pods/cgroup_mounts.h"

namespace {

void Check(const absl::StatusOr<neighborly::agent::CgroupMounts>& mounts) {
  NEIGHBORLY_FUZZ_CHECK(mounts.ok() || !mounts.status().message().empty(),
                        "error without a message");
}

}  // namespace

// Both formats parse every input; the host root is picked by the input's
// length, so each input pays for two parses rather than six and mutations
// (which change the length all the time) still reach all three roots.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr std::string_view kHostRoots[] = {"/", "/host/", "/host"};
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  const std::string_view host_root = kHostRoots[size % 3];
  Check(neighborly::agent::ParseProcMounts(text, host_root));
  Check(neighborly::agent::ParseMountinfo(text, host_root));
  return 0;
}
