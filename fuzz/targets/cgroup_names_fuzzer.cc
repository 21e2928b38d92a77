// Directory names the agent meets under the cgroup hierarchies and
// /var/log/pods (any process on the node can create cgroups and some of
// those directories): pod cgroups, container scopes, pod log directories.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/pods/pod_cgroups.h"
#include "node-agent/src/pods/pod_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = neighborly::agent;
  const std::string_view name = neighborly::fuzz::AsText(data, size);
  std::optional<agent::PodDirName> pod = agent::ParsePodDirName(name);
  NEIGHBORLY_FUZZ_CHECK(!pod || !pod->uid.empty(), "pod cgroup name parsed to an empty UID");
  std::optional<agent::ContainerCgroup> container = agent::ParseContainerDirName(name);
  NEIGHBORLY_FUZZ_CHECK(!container || !container->id.empty(),
                        "container scope parsed to an empty id");
  std::optional<agent::PodName> log_dir = agent::ParsePodLogDirName(name);
  NEIGHBORLY_FUZZ_CHECK(!log_dir || !log_dir->uid.empty(), "pod log dir parsed to an empty UID");
  return 0;
}
