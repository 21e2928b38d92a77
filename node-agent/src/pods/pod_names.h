// Pod namespace and name by UID, from the kubelet's log directories
// /var/log/pods/<namespace>_<name>_<uid>/ ('_' cannot occur in either name).
//
//   absl::StatusOr<std::map<std::string, PodName>> names = ReadPodNames(fs);
//   (*names)["6f1c..."].name == "article-service-5d8f7-abcde"
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_NAMES_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_NAMES_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

struct PodName {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

// "content_article-service-5d8f7-abcde_6f1c0e1a-0000-4000-8000-000000000001".
std::optional<PodName> ParsePodLogDirName(std::string_view dir_name);

// uid -> name; NotFound when the log directory is absent.
absl::StatusOr<std::map<std::string, PodName>> ReadPodNames(const Filesystem& fs,
                                                            std::string_view dir = "/var/log/pods");

// The kubelet's own directory of a pod, /var/lib/kubelet/pods/<uid>/, when
// the pod has no log directory: the namespace from its service account volume
// (volumes/kubernetes.io~projected/*/namespace, or kubernetes.io~secret/*/
// namespace) and the name from the last line of its etc-hosts (the pod's
// hostname: its name, cut to 63 characters, unless spec.hostname is set).
// NotFound naming what is missing when either cannot be read.
absl::StatusOr<PodName> ReadKubeletPodDirName(const Filesystem& fs, std::string_view uid,
                                              std::string_view dir = "/var/lib/kubelet/pods");

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PODS_POD_NAMES_H_
