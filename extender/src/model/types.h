// Value types shared by the contention model and the transports that call it.
//
// The HTTP layer decodes a kube-scheduler request into an IncomingPod and a list
// of node names; the model answers with one NodeDecision per node, carrying the
// verdict, the 0..10 score and the terms that produced them (for explanations).
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_TYPES_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_TYPES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace neighborly::extender {

enum class ContentionClass { kStandard, kBatch, kLatencyCritical };
std::string_view ContentionClassName(ContentionClass c);  // "standard", "batch", ...

enum class QosClass { kUnknown, kGuaranteed, kBurstable, kBestEffort };
std::string_view QosClassName(QosClass q);  // "Guaranteed", ...

// Where a pod's contention class came from (precedence order of the design).
// kQos: a Guaranteed pod with exclusive CPUs that declares nothing is taken
// as latency-critical.
enum class ClassSource {
  kAnnotation,
  kLabelRule,
  kMeasured,
  kRemembered,
  kOwner,  // its controller is a Job (model.jobsAreBatch)
  kQos,
  kDefault
};
std::string_view ClassSourceName(ClassSource s);

// One container's requests (limits where no request is given), as the
// kubelet's resource managers see them.
struct ContainerRequest {
  int64_t cpu_request_millicores = 0;
  int64_t memory_request_bytes = 0;
  bool init = false;
};

// The pod kube-scheduler asks about, reduced to what the model needs.
struct IncomingPod {
  std::string uid;
  std::string namespace_name;
  std::string name;
  QosClass qos = QosClass::kUnknown;  // status.qosClass, or derived from resources
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  // The controller among metadata.ownerReferences (controller: true, else the
  // first), e.g. {"ReplicaSet", "web-7d9f8c6b5"}; empty for a bare pod.
  std::string owner_kind;
  std::string owner_name;
  int64_t cpu_request_millicores = 0;  // sum over containers (max with init containers)
  // Sum of the containers' CPU limits; 0 when some container has none (unbounded).
  int64_t cpu_limit_millicores = 0;
  int64_t memory_request_bytes = 0;
  // Guaranteed with an integer CPU request: the kubelet's static CPU manager
  // gives it exclusive cores, and single-numa-node admission applies.
  bool wants_exclusive_cpus = false;
  // Per container (init containers flagged), for the kubelet's topology
  // manager emulation; empty: the pod's totals count as one container.
  std::vector<ContainerRequest> containers;
};

// One named contribution to a node's verdict or score, for explanations.
struct Term {
  std::string name;    // e.g. "l3_pressure", "membw_utilisation", "staleness"
  double value = 0;    // the term's numeric value (unit in `detail`)
  std::string detail;  // human-readable, e.g. "domain 1: 31.4 MB + 18.3 MB of 25 MB"
};

// The model's answer for one candidate node. Kept free of per-node heap
// allocations on the hot path (500-5,000 nodes per request): the terms are plain
// numbers, turned into text only when someone asks for an explanation, and
// `reason` is filled only for rejected nodes.
struct NodeDecision {
  bool feasible = true;
  std::string reason;     // when !feasible, e.g. "membw 84% > 80% on NUMA node 1"
  int score = 5;          // 0..10, higher is better
  double cost = 0;        // predicted interference cost (0 = none) behind the score
  double confidence = 0;  // 0 (no or old telemetry) .. 1 (fresh)
  bool has_telemetry = false;
  // Terms behind the cost, each in [0, 1] unless noted.
  double l3_pressure = 0;         // predicted occupancy / capacity on the chosen L3 domain
  double membw_utilisation = 0;   // predicted bandwidth / peak on the chosen NUMA node
  double harm_to_incoming = 0;    // interference the incoming pod would suffer
  double harm_to_residents = 0;   // interference it would cause sensitive residents
  double numa_penalty = 0;        // cost of not fitting on one NUMA node
  double unmeasured_penalty = 0;  // latency-critical: cost of residents the node cannot measure
  int32_t numa_node = -1;         // the NUMA node the model expects the pod to use
  int32_t l3_domain = -1;         // the L3 domain the model expects the pod to use
  // Where the kubelet is predicted to pin the pod (exclusive_cpus > 0; issue 14).
  int32_t exclusive_cpus = 0;   // CPUs its static CPU manager will give it
  int32_t first_cpu = -1;       // the lowest free core's first CPU, where packing starts
  bool full_cores = true;       // all of them whole cores (no sibling thread shared)
  // Nodes with several L3 domains per NUMA node (issue 27): how many L3
  // domains the pinned CPUs touch, and 1 when the kubelet packs cores
  // (prefer-align-cpus-by-uncorecache off), 2 when it aligns by L3.
  int8_t l3_span = 0;
  int8_t l3_plan = 0;
  bool spans_numa = false;      // its CPUs/memory spread over more than one NUMA node
  uint8_t topology_policy = 0;  // the node's topologyManagerPolicy (TopologyPolicy)
  // Passed by the least-harm fallback: isolation / headroom refused every node.
  bool least_harm = false;
  // Issue 22: the incoming pod's predicted slowdown here (0: not predicted),
  // and for a refusal by a resident, that resident's.
  double predicted_slowdown = 0;
  double worst_resident_slowdown = 0;
  // The node's residents' CPU requests over its CPUs, plus 0.05 per booking:
  // which of equally scored nodes kube-scheduler's LeastAllocated is likeliest
  // to take, for /prioritize's guess (0 without telemetry).
  double requested_share = 0;
};

// Terms of a decision as text, for the operator API, logs and explanations.
std::vector<Term> ExplainTerms(const NodeDecision& decision);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_TYPES_H_
