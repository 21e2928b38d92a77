// The kubelet's topology manager, emulated for an incoming pod on one node:
// which NUMA nodes its exclusive CPUs (and, under the memory manager's Static
// policy, its memory) will come from, and whether the kubelet admits it at all
// (TopologyAffinityError, SMTAlignmentError, not enough CPUs). Rules and the
// upstream tests each case mirrors: docs/scoring.md section 3.
//
//   AdmissionProfile node = BuildAdmissionProfile(report, free_memory);  // once per report
//   AdmissionRequest pod = MakeAdmissionRequest(incoming);               // once per request
//   AdmissionResult r;
//   if (!Admit(node, pod, {}, r, &reason)) ...  // reason names NUMA nodes and shortfall
//
// Pure and allocation-free except for a refusal's reason.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_TOPOLOGY_ADMISSION_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_TOPOLOGY_ADMISSION_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "extender/src/model/types.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

// The kubelet refuses to start its topology manager on more NUMA nodes than
// its topologyManagerPolicyOptions max-allowable-numa-nodes (default 8): such
// a node admits no pod the topology manager would judge (refused, with that
// reason). Up to kMaxAdmissionNumaNodes the emulation enumerates every NUMA
// mask as the kubelet does (allocation-free up to 8, a heap list above);
// beyond it, it fails open.
inline constexpr size_t kMaxAdmissionNumaNodes = 16;
inline constexpr int32_t kDefaultMaxAllowableNumaNodes = 8;

enum class TopologyPolicy : uint8_t { kNone, kBestEffort, kRestricted, kSingleNumaNode };
enum class TopologyScope : uint8_t { kContainer, kPod };
std::string_view TopologyPolicyName(TopologyPolicy p);  // "single-numa-node", ...

// Exclusive-CPU requests up to this size get their exact L3 placement
// precomputed per NUMA node (BuildAdmissionProfile) on nodes whose NUMA nodes
// hold several L3 domains; larger ones fall back to the lowest free core.
inline constexpr size_t kL3PlanCpus = 32;

struct AdmissionNuma {
  uint32_t id = 0;
  int32_t cpus = 0;          // every CPU of the NUMA node (the static policy's affinity sizing)
  int32_t free_cpus = 0;     // allocatable CPUs no container holds exclusively
  int32_t free_cores = 0;    // cores all of whose threads are free
  int64_t memory_bytes = 0;  // memory the memory manager may hand out (total - reserved)
  int64_t free_memory_bytes = 0;  // of which not used by residents
  uint16_t report_index = 0;      // its position in the report's numa_nodes
  // The L3 domain holding its lowest free whole core (the static policy
  // packs from the lowest core id), else its lowest free CPU; -1: none free.
  int32_t first_free_l3 = -1;
  int32_t first_free_cpu = -1;  // that core's (or CPU's) first CPU
  // Where the static policy's exact allocation (cpu_assignment.h) of k CPUs
  // on this NUMA node lands, k = 1..kL3PlanCpus: the L3 domain holding most
  // of them (lowest id on ties) and how many L3 domains they touch. Computed
  // only on nodes with several L3 domains per NUMA node (AMD CCDs); -1 / 0
  // elsewhere.
  std::array<int16_t, kL3PlanCpus> l3_for_cpus = UnsetL3Plan();
  std::array<uint8_t, kL3PlanCpus> l3_span_for_cpus{};
  // The L3 domain a pinned pod of `cpus` CPUs will use: the exact plan, else
  // the domain of the lowest free core.
  int32_t L3For(int32_t count) const {
    if (count >= 1 && static_cast<size_t>(count) <= kL3PlanCpus && l3_for_cpus[count - 1] >= 0) {
      return l3_for_cpus[count - 1];
    }
    return first_free_l3;
  }
  int32_t L3SpanFor(int32_t count) const {
    return count >= 1 && static_cast<size_t>(count) <= kL3PlanCpus ? l3_span_for_cpus[count - 1]
                                                                  : 0;
  }
  static constexpr std::array<int16_t, kL3PlanCpus> UnsetL3Plan() {
    std::array<int16_t, kL3PlanCpus> a{};
    for (int16_t& v : a) v = -1;
    return a;
  }
  bool operator==(const AdmissionNuma&) const = default;
};

// One node's kubelet, condensed at ingest. NUMA nodes sorted by id (the
// topology manager's bit order).
struct AdmissionProfile {
  TopologyPolicy policy = TopologyPolicy::kNone;
  TopologyScope scope = TopologyScope::kContainer;
  bool static_cpu = false;     // cpuManagerPolicy static: exclusive CPUs exist
  bool static_memory = false;  // memoryManagerPolicy Static: memory gives hints
  bool full_pcpus_only = false;
  int32_t threads_per_core = 1;
  bool too_many_numa_nodes = false;  // > kMaxAdmissionNumaNodes: not emulated (fail open)
  // topologyManagerPolicyOptions max-allowable-numa-nodes, and whether this
  // node has more NUMA nodes than that (the kubelet does not start).
  int32_t max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes;
  bool above_max_allowable = false;
  // prefer-closest-numa-nodes: among equally narrow preferred hints the one
  // with the smallest average distance wins (ties: the lower mask).
  bool prefer_closest = false;
  std::vector<uint16_t> distances;  // numa.size()^2, profile order (row i: from numa[i])
  // Several L3 domains in one NUMA node (EPYC CCDs): where a pinned pod's
  // CPUs land decides which L3 it shares; AdmissionNuma::l3_for_cpus holds
  // the exact prediction. `uncore_aligned`: the kubelet runs with
  // prefer-align-cpus-by-uncorecache.
  bool split_l3 = false;
  bool uncore_aligned = false;
  absl::InlinedVector<AdmissionNuma, 2> numa;
  bool operator==(const AdmissionProfile&) const = default;
};

// `free_memory_bytes`: per NUMA node id of the report (in report order), the
// memory not used by residents, as the model computed it.
AdmissionProfile BuildAdmissionProfile(const telemetry::v1::NodeReport& report,
                                       std::span<const int64_t> free_memory_bytes);

// A topology hint: a NUMA mask (bit i: profile.numa[i]; 0 is the kubelet's
// nil affinity, "any NUMA node") and whether it is preferred.
// Trivially constructible (no member initializers): the emulation keeps up to
// 255 of them per provider on the stack and must not zero them per evaluation.
struct TopologyHint {
  uint32_t mask;
  bool preferred;
  bool operator==(const TopologyHint&) const = default;
};

// The static CPU manager's / Static memory manager's hint generation: every
// NUMA mask whose free amount holds `request` is a hint, preferred when it has
// as few NUMA nodes as the narrowest mask whose *total* could hold it. Empty
// when no mask can. (cpumanager generateCPUTopologyHints; memorymanager
// calculateHints without the group constraint.)
std::vector<TopologyHint> GenerateTopologyHints(std::span<const int64_t> total,
                                                std::span<const int64_t> free, int64_t request);

// single-numa-node's filterSingleNumaHints: keeps preferred hints of one NUMA
// node, and a preferred "any NUMA node".
std::vector<TopologyHint> FilterSingleNumaHints(std::span<const TopologyHint> hints);

// The topology manager's merge (HintMerger.Merge): over every permutation of
// one hint per list, AND the masks (nil counts as all), preferred when all are
// preferred and all non-nil masks are equal; a preferred hint beats a
// non-preferred one, the narrower (lowest mask on ties) wins among preferred,
// non-preferred ones creep toward the widest provider's narrowest mask
// (BestNonPreferredAffinityCount). No permutation: {all, not preferred}.
// `closest`: the prefer-closest-numa-nodes distances (numa_count^2), or empty.
TopologyHint MergeTopologyHints(std::span<const std::span<const TopologyHint>> lists,
                                size_t numa_count, std::span<const uint16_t> closest = {});

// One container's demand on the resource managers.
struct AdmissionContainer {
  int32_t exclusive_cpus = 0;  // integer CPU request of a Guaranteed container, else 0
  int64_t memory_bytes = 0;    // memory request (hints only for Guaranteed pods)
  bool init = false;
};

struct AdmissionRequest {
  bool guaranteed = false;
  absl::InlinedVector<AdmissionContainer, 4> containers;
  // Pod scope: max(sum over app containers, largest init container).
  int32_t pod_exclusive_cpus = 0;
  int64_t pod_memory_bytes = 0;
  // Whether any resource manager can have an opinion (else Admit returns at once).
  bool any_hint = false;
};

// From the pod's containers; a pod without per-container data (older
// callers) counts as one container holding the pod's totals.
AdmissionRequest MakeAdmissionRequest(const IncomingPod& pod);

struct AdmissionResult {
  bool pinned = false;  // some container gets exclusive CPUs
  // Bit i: profile.numa[i]. The merged hint (union over containers), or where
  // the CPUs landed when no hint applied.
  uint32_t numa_mask = 0;
  bool preferred = true;
  // Predicted exclusive CPUs taken per NUMA index, and whole cores among them.
  std::array<int32_t, kMaxAdmissionNumaNodes> cpus{};
  int32_t total_cpus = 0;
  bool full_cores = true;  // every predicted CPU comes as part of a whole free core
  // The NUMA index holding most of the pod (its CPUs, else its memory); -1: none.
  int32_t home = -1;
};

// In-flight bookings per NUMA index of the profile (empty: none).
struct AdmissionBooked {
  std::span<const int32_t> cpus;
  std::span<const int64_t> memory_bytes;
};

// Emulates the kubelet's admission of `pod` on the node. Returns false when
// the kubelet would refuse it; then `reason` (when given) says why, naming the
// NUMA nodes and the shortfall.
bool Admit(const AdmissionProfile& node, const AdmissionRequest& pod, const AdmissionBooked& booked,
           AdmissionResult& out, std::string* reason);

// The L3 part of a pinned pod's placement on `home`, for the explanation:
// how many L3 domains its CPUs touch and whether the kubelet aligns by L3.
void NoteL3Plan(const AdmissionProfile& node, const AdmissionNuma& home, int32_t cpus,
                NodeDecision& out);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_TOPOLOGY_ADMISSION_H_
