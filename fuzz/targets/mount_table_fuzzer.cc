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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = neighborly::fuzz::AsText(data, size);
  for (std::string_view host_root : {"/", "/host/", "/host"}) {
    Check(neighborly::agent::ParseProcMounts(text, host_root));
    Check(neighborly::agent::ParseMountinfo(text, host_root));
  }
  return 0;
}
