// Pod labels and annotations from the container runtime over CRI: the kubelet
// copies a pod's labels and annotations onto its sandbox, so
// RuntimeService.ListPodSandbox on the containerd or CRI-O socket tells the
// agent a pod's class even when another scheduler placed it.
//
//   std::optional<std::string> socket = FindCriSocket(fs, {});   // host path under --host-root
//   std::unique_ptr<PodMetadataSource> cri = NewCriPodMetadataSource(*socket, PodMetadataFilter{});
//   absl::StatusOr<std::map<std::string, PodMetadata>> pods = cri->List();  // by pod uid
//
// Only what the contention model needs is kept: annotations under
// `neighborly.io/` and the configured label keys.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_CRI_POD_METADATA_H_
#define NEIGHBORLY_NODE_AGENT_SRC_CRI_POD_METADATA_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "node-agent/src/sys/filesystem.h"

namespace runtime::v1 {
class ListPodSandboxResponse;
}

namespace neighborly::agent {

struct PodMetadata {
  std::string namespace_name;
  std::string name;
  std::map<std::string, std::string> labels;       // only the configured keys
  std::map<std::string, std::string> annotations;  // only `neighborly.io/...`
};

struct PodMetadataFilter {
  std::vector<std::string> label_keys = {"workload-type", "app"};
  std::string annotation_prefix = "neighborly.io/";
};

// Where containerd and CRI-O listen, relative to the host root, in the order tried.
inline constexpr std::string_view kDefaultCriSockets[] = {
    "/run/containerd/containerd.sock", "/var/run/crio/crio.sock", "/run/crio/crio.sock"};

// The first candidate (host paths; empty: kDefaultCriSockets) that exists under
// the host root, as a path on the agent's own filesystem; nullopt when none does.
std::optional<std::string> FindCriSocket(const Filesystem& fs,
                                         const std::vector<std::string>& candidates);

// uid -> metadata. A pod with several sandboxes (restarts) takes the ready one,
// else the newest attempt. Sandboxes without a uid are skipped.
std::map<std::string, PodMetadata> SelectPodMetadata(
    const runtime::v1::ListPodSandboxResponse& response, const PodMetadataFilter& filter);

class PodMetadataSource {
 public:
  virtual ~PodMetadataSource() = default;
  // Every pod sandbox the runtime knows, by pod uid. An error names the socket
  // and the gRPC status.
  virtual absl::StatusOr<std::map<std::string, PodMetadata>> List() = 0;
  // "CRI at /run/containerd/containerd.sock", for logs and reasons.
  virtual std::string Describe() const = 0;
};

// A CRI client on the unix socket at `socket_path` (a path on the agent's own
// filesystem). The channel connects lazily; each List waits at most `timeout`.
std::unique_ptr<PodMetadataSource> NewCriPodMetadataSource(
    std::string socket_path, PodMetadataFilter filter, absl::Duration timeout = absl::Seconds(2));

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_CRI_POD_METADATA_H_
