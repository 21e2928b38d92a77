// Workload identity: which workload (Deployment, StatefulSet, CronJob, ...) a
// pod belongs to, so that what its running replicas measured predicts the next
// replica. Rules (docs/scoring.md, "Workload identity"):
//
//   controller ReplicaSet "web-7d9f8c6b5" + label pod-template-hash=7d9f8c6b5 -> Deployment web
//   controller Job "report-29412360" (name-<minutes since epoch>)             -> CronJob report
//   controller Job / StatefulSet / DaemonSet / other kind                     -> that owner
//   no controller: label app.kubernetes.io/name, else app, else the pod's name
//   without its generated suffix                                              -> kind "Pod"
//
// Pods reported by an agent carry labels but no ownerReferences; the same
// controllers' labels (pod-template-hash, job-name, controller-revision-hash
// with statefulset.kubernetes.io/pod-name or pod-template-generation) identify
// them, and the extender prefers the key it learned from the pod's scheduling
// request when it has one.
//
//   WorkloadKey key = WorkloadKeyOf(incoming_pod);
//   key.ToString() == "shop/Deployment/event-scan"
//
// Pure: no clock, no I/O.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_KEY_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_KEY_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

struct WorkloadKey {
  std::string namespace_name;
  std::string kind;  // "Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Pod", ...
  std::string name;

  bool empty() const { return name.empty(); }
  // "namespace/Kind/name", the form the operator API and the state file use.
  std::string ToString() const;
  bool operator==(const WorkloadKey&) const = default;
};

// Parses "namespace/Kind/name"; an error names what is wrong.
absl::StatusOr<WorkloadKey> ParseWorkloadKey(std::string_view text);

// The key of a pod kube-scheduler asks about (from its controller owner
// reference, labels and name). Empty only when the pod has no name.
WorkloadKey WorkloadKeyOf(const IncomingPod& pod);

// The key of a running pod an agent reports, from its labels and name alone.
// `Map` is std::map<std::string, std::string> or a protobuf map.
template <typename Map>
WorkloadKey WorkloadKeyFromLabels(std::string_view namespace_name, std::string_view pod_name,
                                  const Map& labels);

namespace internal {

// The labels the rules read, pulled out of any map type once.
struct IdentityLabels {
  const std::string* pod_template_hash = nullptr;
  const std::string* job_name = nullptr;
  const std::string* controller_revision_hash = nullptr;
  const std::string* statefulset_pod_name = nullptr;
  const std::string* pod_template_generation = nullptr;
  const std::string* app_name = nullptr;  // app.kubernetes.io/name
  const std::string* app = nullptr;
};

WorkloadKey KeyFromIdentityLabels(std::string_view namespace_name, std::string_view pod_name,
                                  const IdentityLabels& labels);

// "report-29412360" -> "report" when the suffix is a plausible CronJob
// schedule time (minutes since the epoch, 2001-2190); nullopt otherwise.
std::optional<std::string_view> CronJobOfJob(std::string_view job_name);

// The name without a generated suffix: "web-7d9f8c6b5-x2k4q" with hash
// "7d9f8c6b5" -> "web"; "worker-x2k4q" -> "worker" (five characters of the
// alphabet Kubernetes' name generator uses); otherwise unchanged.
std::string_view StripGeneratedSuffix(std::string_view name, std::string_view template_hash = {});

}  // namespace internal

template <typename Map>
WorkloadKey WorkloadKeyFromLabels(std::string_view namespace_name, std::string_view pod_name,
                                  const Map& labels) {
  internal::IdentityLabels found;
  for (const auto& [k, v] : labels) {
    const std::string_view key(k);
    if (key == "pod-template-hash") {
      found.pod_template_hash = &v;
    } else if (key == "batch.kubernetes.io/job-name" ||
               (key == "job-name" && found.job_name == nullptr)) {
      found.job_name = &v;
    } else if (key == "controller-revision-hash") {
      found.controller_revision_hash = &v;
    } else if (key == "statefulset.kubernetes.io/pod-name") {
      found.statefulset_pod_name = &v;
    } else if (key == "pod-template-generation") {
      found.pod_template_generation = &v;
    } else if (key == "app.kubernetes.io/name") {
      found.app_name = &v;
    } else if (key == "app") {
      found.app = &v;
    }
  }
  return internal::KeyFromIdentityLabels(namespace_name, pod_name, found);
}

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_KEY_H_
