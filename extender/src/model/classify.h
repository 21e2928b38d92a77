// Contention classes and footprint hints of pods: which class a pod belongs to
// (annotation > label rules > measured aggressor > remembered > standard) and
// how much L3 and memory bandwidth it is expected to use.
//
//   PodRequest req = MakePodRequest(incoming, registry.Lookup(incoming.uid), config);
//   req.contention_class == ContentionClass::kLatencyCritical
//
// Pure: no clock, no I/O.
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_CLASSIFY_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_CLASSIFY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "extender/src/model/interference.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/topology_admission.h"
#include "extender/src/model/types.h"
#include "extender/src/model/workload_key.h"
#include "extender/src/model/workload_profile.h"

namespace neighborly::extender {

inline constexpr std::string_view kClassAnnotation = "neighborly.io/class";
inline constexpr std::string_view kLlcHintAnnotation = "neighborly.io/llc-bytes";
// The slowdown a latency-critical pod tolerates ("1.3" or "1.3x"; issue 22).
inline constexpr std::string_view kMaxSlowdownAnnotation = "neighborly.io/max-slowdown";
inline constexpr std::string_view kMembwHintAnnotation = "neighborly.io/membw-bytes-per-second";

// "latency-critical" | "batch" | "standard" (case-insensitive); nullopt otherwise.
std::optional<ContentionClass> ParseContentionClass(std::string_view text);

struct FootprintHints {
  std::optional<int64_t> llc_bytes;
  std::optional<int64_t> membw_bytes_per_second;
  bool empty() const { return !llc_bytes && !membw_bytes_per_second; }
};

// What the extender remembers about a pod UID (state/pod_registry keeps these).
struct RememberedPod {
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource source = ClassSource::kDefault;  // where the class originally came from
  FootprintHints hints;
  // Its workload key ("namespace/Kind/name") as its scheduling request showed
  // it (ownerReferences), which the agent's labels alone may not tell.
  std::string workload;
};

struct ClassResolution {
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource source = ClassSource::kDefault;
};

// Looks a key up in a string->string map (std::map or google::protobuf::Map).
// Pods carry a handful of labels and annotations: scanning a small map costs
// less than the std::string its find() needs (a heap allocation for keys like
// "neighborly.io/class"), which ingest would pay for every pod of every report.
template <typename Map>
const std::string* FindValue(const Map& map, std::string_view key) {
  if (map.size() <= 16) {
    for (const auto& [k, v] : map) {
      if (std::string_view(k) == key) return &v;
    }
    return nullptr;
  }
  auto it = map.find(std::string(key));
  return it == map.end() ? nullptr : &it->second;
}

// The class a pod declares through its annotation or the configured label
// rules; nullopt when neither says (an unknown annotation value is ignored and
// explained in `note`, when given).
template <typename Map>
std::optional<ClassResolution> DeclaredClass(const Map& labels, const Map& annotations,
                                             const ModelConfig& config,
                                             std::string* note = nullptr) {
  if (const std::string* v = FindValue(annotations, kClassAnnotation)) {
    if (std::optional<ContentionClass> c = ParseContentionClass(*v)) {
      return ClassResolution{*c, ClassSource::kAnnotation};
    }
    if (note != nullptr) {
      *note = "ignored annotation " + std::string(kClassAnnotation) + "=\"" + *v +
              "\" (expected latency-critical, batch or standard)";
    }
  }
  for (const LabelRule& rule : config.label_rules) {
    const std::string* v = FindValue(labels, rule.key);
    if (v == nullptr) continue;
    for (const std::string& want : rule.values) {
      if (*v == want) return ClassResolution{rule.contention_class, ClassSource::kLabelRule};
    }
  }
  return std::nullopt;
}

// Footprint hints from the annotations (Kubernetes quantities, e.g. "18Mi",
// "2.8G"). A malformed or negative hint is ignored and explained in `note`.
template <typename Map>
FootprintHints HintsFromAnnotations(const Map& annotations, std::string* note = nullptr);

// Non-template core of HintsFromAnnotations.
std::optional<int64_t> ParseHint(std::string_view key, const std::string* value, std::string* note);

template <typename Map>
FootprintHints HintsFromAnnotations(const Map& annotations, std::string* note) {
  FootprintHints hints;
  hints.llc_bytes = ParseHint(kLlcHintAnnotation, FindValue(annotations, kLlcHintAnnotation), note);
  hints.membw_bytes_per_second =
      ParseHint(kMembwHintAnnotation, FindValue(annotations, kMembwHintAnnotation), note);
  return hints;
}

// Default footprint for a class when a pod has neither hints nor measurements.
const Footprint& DefaultFootprint(ContentionClass c, const ModelConfig& config);

// How much a pod of this class suffers from interference (1 latency-critical,
// 0.5 standard, 0.25 batch); see docs/scoring.md.
double Sensitivity(ContentionClass c);

// The incoming pod, reduced once per request to what node evaluation needs.
struct PodRequest {
  ContentionClass contention_class = ContentionClass::kStandard;
  ClassSource source = ClassSource::kDefault;
  double sensitivity = 0.5;
  double llc_bytes = 0;               // footprint: hint, else remembered hint, else class default
  double membw_bytes_per_second = 0;  // idem
  bool exclusive_cpus = false;        // Guaranteed with integer CPUs: pinned to one NUMA node
  int32_t cpus = 0;                   // whole CPUs requested (rounded up)
  int64_t memory_bytes = 0;
  std::string pod;   // "namespace/name", for reasons
  std::string note;  // ignored annotations, if any
  // Where the footprint came from, for explanations: "predicted from
  // Deployment shop/event-scan, 3 replicas, 412 windows: 21.8 GB/s, 30.9 MB".
  std::string prediction;
  AdmissionRequest admission;  // per-container demand, for the topology manager emulation
  // What it needs and how it suffers (issue 22): its footprint as demand, its
  // workload's fitted sensitivities (else its class's), its tolerance.
  Demand demand;
};

// A max-slowdown annotation's value: a number in (1, 100], optionally
// followed by "x"; nullopt (explained in `note`) otherwise.
std::optional<double> ParseMaxSlowdown(const std::string* value, std::string* note);

// A pod's demand: the class prior around its footprint (working set, solo
// bandwidth), its sensitivities moved toward its workload's fit by the fit's
// confidence; `tolerance` (> 1) replaces the configured one for a
// latency-critical pod.
Demand PodDemand(ContentionClass c, double llc_bytes, double membw_bytes_per_second,
                 const WorkloadPrediction* fit, std::optional<double> tolerance,
                 const ModelConfig& config);

// A pod's prior footprint when nothing was measured or hinted: the class
// default for its first CPU plus config.priors' per-CPU amounts for the rest
// (a 16-CPU Burstable pod is not a 1-CPU web pod). `cpus`: request, or the
// limit for a Burstable pod whose limit is larger; below 1 counts as 1.
Footprint PriorFootprint(ContentionClass c, double cpus, const ModelConfig& config);

// Moves a footprint toward what the workload's replicas measured, in
// proportion to the profile's confidence (1: the profile alone); true when the
// profile contributed. Used for the arriving pod and for residents not yet measured.
bool BlendWithProfile(const WorkloadPrediction* profile, double& llc_bytes,
                      double& membw_bytes_per_second);

// The CPUs PriorFootprint scales with, for a pod kube-scheduler sends.
double PriorCpus(const IncomingPod& pod);

// `key` and `profile` (what the pod's workload measured, if anything) feed
// the prediction: profile when confident, else hints, else the prior, blended
// with a young profile by its confidence; an aggressor verdict makes the pod batch.
PodRequest MakePodRequest(const IncomingPod& pod, const RememberedPod* remembered,
                          const ModelConfig& config, const WorkloadKey* key = nullptr,
                          const WorkloadPrediction* profile = nullptr);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_CLASSIFY_H_
