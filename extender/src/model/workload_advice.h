// Advice per workload (issue 26): which of the seed's isolation layers a
// workload needs, which it already has, and what each costs, from its
// running replicas' reports and the kubelet policies of the nodes they run
// on; printed as a reviewable patch to its pod template.
//
// Layers (the seed article's four): Guaranteed QoS (requests == limits:
// last in the kubelet's eviction order, oom_score_adj -997), integer CPUs
// (exclusive cores where the kubelet runs the static CPU manager),
// single-numa-node (CPUs and memory from one NUMA node: the seed's remote
// accesses 38 % -> 0.9 %), and anti-affinity / dedicated pools, which
// Neighborly's interference filter replaces without their ~15 % utilisation.
//
//   WorkloadAdvice a = AdviseWorkload("content/Deployment/article-service", reports, interference);
//   a.patch  // YAML for `kubectl patch --type strategic`
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_ADVICE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_ADVICE_H_

#include <optional>
#include <string>
#include <vector>

#include "extender/src/model/interference_attribution.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

struct AdviceLayer {
  std::string layer;  // "guaranteed-qos" | "integer-cpus" | "single-numa-node" | "isolation"
  bool needed = false;
  bool present = false;  // already in place on every replica
  std::string why;
  std::string cost;
};

struct WorkloadAdvice {
  std::string workload;
  int replicas = 0;
  std::string contention_class;  // from the annotation, else "standard"
  bool victim = false;           // a replica is an interference victim now
  bool repeat_antagonist = false;
  std::vector<AdviceLayer> layers;
  std::string patch;  // empty when nothing is to change
  std::vector<std::string> notes;
};

// `reports`: every node's newest report (the workload's replicas are found by
// their workload key). nullopt when no replica of `workload` is reported.
std::optional<WorkloadAdvice> AdviseWorkload(
    const std::string& workload, const std::vector<const telemetry::v1::NodeReport*>& reports,
    const InterferenceView& interference);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_WORKLOAD_ADVICE_H_
