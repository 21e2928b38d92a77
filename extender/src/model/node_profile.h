// A node's telemetry report condensed, once per report at ingest, into what
// node evaluation needs: per NUMA node and per L3 domain the capacity, the
// current load, the free exclusive CPUs and memory, and who lives there.
//
//   NodeProfile profile = BuildNodeProfile(report, config, lookup, clock.Now());
//   EvaluateNode(request, &profile, bookings, now, config, decision);
//
// Pure: the caller supplies the time the report was received and a lookup of
// remembered pods.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_NODE_PROFILE_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_NODE_PROFILE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"
#include "extender/src/model/classify.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/topology_admission.h"
#include "extender/src/model/types.h"
#include "extender/src/model/workload_profile.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

// Bounds that report validation enforces and evaluation relies on.
inline constexpr size_t kMaxNumaNodes = 64;
inline constexpr size_t kMaxL3Domains = 256;

// Only what evaluation reads, widest fields first: the two NUMA nodes and two
// L3 domains most servers have fit in the profile's first four cache lines
// with its header (56 and 40 bytes; the lookup prefetches exactly those).
struct NumaProfile {
  double peak_membw = 0;            // bytes/s (reported, else config default)
  double membw = 0;                 // bytes/s now: measured, else predicted from pods
  double shared_weight = 0;         // share of the node's shared-pool CPUs here
  double resident_sensitivity = 0;  // max Sensitivity() of residents here (0: none)
  int64_t free_memory_bytes = 0;    // memory - residents' memory on this node
  uint32_t id = 0;
  int32_t free_exclusive_cpus = 0;  // cpus - reserved - pods' exclusive CPUs
  uint16_t l3_begin = 0;            // its L3 domains: NodeProfile::l3[l3_begin, l3_end)
  uint16_t l3_end = 0;
  bool membw_measured = false;
  // Pods pinned (exclusive CPUs) here, by class, saturating at 255: socket-level
  // isolation (issue 14) fits in this struct's padding.
  uint8_t pinned_latency_critical = 0;
  uint8_t pinned_batch = 0;  // includes measured aggressors, not tiny batch pods
  // Its socket, as an index shared by the NUMA nodes of one package (issue 27:
  // AMD NPS2/NPS4 and Intel SNC put several NUMA nodes in one socket).
  uint8_t socket = 0;
  bool operator==(const NumaProfile&) const = default;
};

struct L3Profile {
  double size_bytes = 0;
  double occupancy_bytes = 0;  // measured, else predicted from pods
  // What the residents *need* here (issue 22): the sum of their working sets
  // (never below the measured occupancy) and of working set x coldness
  // (model/interference.h, CacheLoss).
  double demand_bytes = 0;
  double cold_demand = 0;
  double shared_weight = 0;
  double resident_sensitivity = 0;
  uint32_t id = 0;
  uint16_t numa_index = 0;  // its NUMA node: NodeProfile::numa[numa_index]
  bool occupancy_measured = false;
  bool operator==(const L3Profile&) const = default;
};

// One resident whose slowdown evaluation predicts, on one L3 domain it uses
// (a shared-pool pod has one entry per domain, by its share there).
struct TrackedResident {
  double llc_bytes = 0;  // its working set (kept whole in each domain it runs on)
  double coldness = 0;   // here: seconds between touches of one of its lines / share
  double cache_sensitivity = 0;
  double membw_sensitivity = 0;
  double tolerance = 0;    // > 0: latency-critical, refuse beyond
  double harm_weight = 0;  // class sensitivity
  double share = 1;        // of its CPUs on this domain
  double slowdown = 1;     // predicted now, over all its domains
  double cache_loss = 0;   // fraction of its working set lost here now
  double domain_slowdown = 1;  // its slowdown from this domain and its NUMA node alone
  uint16_t l3_index = 0;   // NodeProfile::l3
  uint16_t numa_index = 0;
  int32_t pod_index = 0;   // report.pods() / NodeProfile::pods
  int32_t name_index = 0;  // NodeProfile::tracked_names
  bool operator==(const TrackedResident&) const = default;
};

// Classification of one pod of the report (same index as report.pods()).
struct ResidentPod {
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource source = ClassSource::kDefault;
  bool aggressor = false;
  std::string why;  // for aggressors: the measurement that made it one
  // What this window measured of the pod, for its workload's profile
  // (`measured` false: nothing to learn from this window).
  bool measured = false;
  WorkloadObservation observation;
  // The load it was counted at: measured, estimated from LLC misses, or predicted.
  double llc_bytes = 0;
  double membw_bytes_per_second = 0;
  std::string
      footprint_source;  // "measured" | "estimated" | "workload" | "hint" | "prior" | "booked"
  // A batch pod whose footprint is below the isolation floors: it blocks no node.
  bool tiny = false;
  // Issue 22: what it needs (working set, solo bandwidth) and its predicted
  // slowdown here now.
  double llc_demand_bytes = 0;
  double solo_membw_bytes_per_second = 0;
  double slowdown = 1;
  bool victim = false;  // its IPC fell while its misses rose: squeezed, not an aggressor
  // The agent holds it under a resctrl cap (PodReport.resctrl_cap): its L3 and
  // bandwidth demand are bounded by the cap (issue 27).
  bool capped = false;
  bool operator==(const ResidentPod&) const = default;
};

// What the extender knows about a reported pod beyond the report (parallel to
// report.pods(); every member optional).
struct ResidentKnowledge {
  const RememberedPod* remembered = nullptr;
  const WorkloadPrediction* workload = nullptr;  // the pod's workload profile
  std::string_view workload_name;                // "shop/Deployment/web", for reasons
  // An in-flight booking on this node still carries the pod's load (it is
  // listed but not measured yet): the profile must not count it twice.
  bool booked_here = false;
};

struct NodeProfile {
  // Evaluation reads the fields up to `l3` for every candidate node on every
  // request, so they come first and the per-NUMA / per-L3 arrays are stored
  // inline for up to two NUMA nodes / L3 domains (most servers): one node's
  // hot data is a few consecutive cache lines of one allocation.
  //
  // Staleness, precomputed so that evaluation only compares times: confidence
  // is 1 until fresh_until, 0 from stale_at, falling in held steps between
  // (Confidence, DecisionHeldUntil in evaluate.h).
  absl::Time fresh_until;
  absl::Time stale_at;
  int latency_critical_pods = 0;
  int batch_pods = 0;  // includes measured aggressors
  // topologyManagerPolicy single-numa-node or restricted: the kubelet admits a
  // pinned pod only where one NUMA node can hold it.
  bool single_numa_admission = false;
  // Some socket holds more than one NUMA node (NPS2/NPS4, SNC): their
  // bandwidth is coupled (CoupleSocketUtilisation).
  bool numa_shares_socket = false;
  // Isolation holds the last reported residents until here, though the
  // telemetry is stale (docs/scoring.md, "Staleness").
  absl::Time residents_until;
  // Share of the residents' predicted bandwidth the node could not measure
  // (0: all measured; estimates from LLC misses count half).
  double unmeasured_share = 0;
  // The residents whose slowdown a placement here is judged by, most
  // sensitive first (at most interference.max_tracked_residents entries).
  std::vector<TrackedResident> tracked;  // a pod's entries are consecutive
  std::vector<std::string> tracked_names;  // "namespace/name" of each tracked pod, for reasons
  absl::InlinedVector<NumaProfile, 2> numa;  // in report order
  absl::InlinedVector<L3Profile, 2> l3;      // grouped by NUMA node (see NumaProfile::l3_begin)
  // The isolation rejections, formatted once per report rather than per request:
  // for an incoming latency-critical pod (when batch_pods > 0) and for an
  // incoming batch pod (when latency_critical_pods > 0). Next to the hot
  // fields: the lookup prefetches them, and their text, only for a pod they
  // can concern.
  std::string isolation_reason_latency_critical;
  std::string isolation_reason_batch;
  // The kubelet's resource managers, for admission and placement as it decides
  // them (topology_admission.h; read only for Guaranteed pods).
  AdmissionProfile admission;

  std::string name;
  absl::Time received_at;
  absl::Duration window;
  std::string topology_manager_policy;
  std::string cpu_manager_policy;
  std::vector<ResidentPod> pods;  // parallel to report.pods()
  int standard_pods = 0;
  // The residents' CPU requests over the node's CPUs: what kube-scheduler's
  // LeastAllocated sees, to guess which of equally scored nodes it will take.
  double cpu_requested_share = 0;
  int aggressor_pods = 0;
  // Of latency_critical_pods / batch_pods, those pinned to NUMA nodes (the rest
  // run in the shared pool, node-wide); tiny batch pods are in neither.
  int pinned_latency_critical_pods = 0;
  int pinned_batch_pods = 0;
  int tiny_batch_pods = 0;
  std::string latency_critical_example;  // "latency-critical pod ns/name", for reasons
  std::string batch_example;             // "batch pod ns/name" or "aggressor pod ns/name (...)"
  bool operator==(const NodeProfile&) const = default;
};

// Whether evaluation decides on `next` as on `previous` at every moment up
// to previous.fresh_until: every field but the report's timing (received_at,
// window, fresh_until, stale_at, residents_until) and what each pod's window
// teaches its workload (ResidentPod::observation, which evaluation does not
// read) is equal, and `next` stays fresh at least as long. A report that
// changes nothing the model reads then need not re-evaluate its node in the
// verdict tables (issue 25; ExtenderCore publishes it without a journal
// entry). `next` is compared in place: its times and observations are set to
// `previous`'s for the comparison and restored, so that no profile is copied.
bool SameDecisionsWhileFresh(const NodeProfile& previous, NodeProfile& next);

// Memory bandwidth utilisation per NUMA node, `u[n]` parallel to p.numa, made
// to include the node's socket: NUMA nodes inside one socket (NPS2/NPS4, SNC)
// share its data fabric and the spill of allocations between them, so a node
// is at least as loaded as (1 - c) of its own utilisation plus c of its
// socket's (c = interference.socket_membw_coupling; docs/scoring.md, section
// 0). Separate sockets are not coupled; a node alone in its socket is
// unchanged.
template <typename Utilisations>
void CoupleSocketUtilisation(const NodeProfile& p, double coupling, Utilisations& u) {
  if (!p.numa_shares_socket || coupling <= 0) return;
  constexpr size_t kSockets = 16;
  std::array<double, kSockets> load{}, peak{};
  const size_t count = std::min<size_t>(p.numa.size(), std::size(u));
  for (size_t n = 0; n < count; ++n) {
    const size_t s = std::min<size_t>(p.numa[n].socket, kSockets - 1);
    const double pk = p.numa[n].peak_membw > 0 ? p.numa[n].peak_membw : 1;
    load[s] += u[n] * pk;
    peak[s] += pk;
  }
  for (size_t n = 0; n < count; ++n) {
    const size_t s = std::min<size_t>(p.numa[n].socket, kSockets - 1);
    const double socket_u = peak[s] > 0 ? load[s] / peak[s] : 0;
    u[n] = std::max(u[n], (1 - coupling) * u[n] + coupling * socket_u);
  }
}

// Remembered knowledge of a pod UID; nullptr when unknown.
using RememberedLookup = std::function<const RememberedPod*(std::string_view uid)>;

// Builds the profile. Assumes a validated report, but tolerates anything
// (unparsable CPU lists count as empty). `knowledge`, when not empty, is
// parallel to report.pods() and takes precedence over `remembered`.
NodeProfile BuildNodeProfile(const telemetry::v1::NodeReport& report, const ModelConfig& config,
                             const RememberedLookup& remembered, absl::Time received_at,
                             std::span<const ResidentKnowledge> knowledge = {});

// "isolation: latency-critical pod would run beside batch pod ns/x and 2 more":
// the rejection of an `incoming` pod by a node whose first conflicting resident
// is `example` ("batch pod ns/x"), of `count`.
std::string IsolationReason(ContentionClass incoming, std::string_view example, int count);

// A report's QoS class as the model's (QOS_CLASS_UNSPECIFIED: kUnknown).
QosClass QosClassOf(telemetry::v1::QosClass qos);

// Resolves a running pod's class: annotation > label rules > measured aggressor
// > remembered > standard. `membw_share` and `l3_share` are the pod's measured
// shares of its home NUMA node's peak and its home L3 domain (nullopt: unmeasured).
ResidentPod ClassifyResident(const telemetry::v1::PodReport& pod, const ModelConfig& config,
                             const RememberedPod* remembered, std::optional<double> membw_share,
                             std::optional<double> l3_share,
                             const ResidentKnowledge* knowledge = nullptr);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_NODE_PROFILE_H_
