// The kubelet's PodResources API v1 over its unix socket
// (/var/lib/kubelet/pod-resources/kubelet.sock): which CPUs each pod holds
// exclusively and what the node can allocate. Preferred over the kubelet's
// internal cpu_manager_state file, which stays the fallback.
//
//   std::unique_ptr<PodResourcesSource> kubelet =
//   NewPodResourcesClient(fs.HostPath(kPodResourcesSocket));
//   absl::StatusOr<std::vector<PodAllocation>> pods = kubelet->List();
//
// Responses carry no pod uid: callers join on (namespace, name).
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PODRESOURCES_POD_RESOURCES_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PODRESOURCES_POD_RESOURCES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cpu_list.h"

namespace v1 {
class ListPodResourcesResponse;
class AllocatableResourcesResponse;
}  // namespace v1

namespace neighborly::agent {

inline constexpr std::string_view kPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

struct PodAllocation {
  std::string namespace_name;
  std::string name;
  CpuSet exclusive_cpus;  // union over the containers (and the pod level); empty: shared pool
  // Static memory manager only: NUMA node -> bytes of "memory" pinned there
  // (a block spanning several nodes is split evenly).
  std::map<uint32_t, uint64_t> memory_bytes_by_numa;
};

struct Allocatable {
  CpuSet cpus;  // online minus reserved
  std::map<uint32_t, uint64_t> memory_bytes_by_numa;
};

// Response decoders (exposed for tests). CPU or NUMA ids outside 0..kMaxCpuId
// are an error naming the pod.
absl::StatusOr<std::vector<PodAllocation>> DecodePodResources(
    const ::v1::ListPodResourcesResponse& response);
absl::StatusOr<Allocatable> DecodeAllocatable(const ::v1::AllocatableResourcesResponse& response);

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  virtual absl::StatusOr<std::vector<PodAllocation>> List() = 0;
  // Fails when the kubelet's KubeletPodResourcesGetAllocatable gate is off.
  virtual absl::StatusOr<Allocatable> GetAllocatableResources() = 0;
  virtual std::string Describe() const = 0;
};

// A client on the unix socket at `socket_path` (a path on the agent's own
// filesystem); each call waits at most `timeout`.
std::unique_ptr<PodResourcesSource> NewPodResourcesClient(
    std::string socket_path, absl::Duration timeout = absl::Seconds(2));

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PODRESOURCES_POD_RESOURCES_H_
