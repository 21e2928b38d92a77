#include "extender/src/model/types.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"

namespace neighborly::extender {

std::string_view ContentionClassName(ContentionClass c) {
  switch (c) {
    case ContentionClass::kStandard:
      return "standard";
    case ContentionClass::kBatch:
      return "batch";
    case ContentionClass::kLatencyCritical:
      return "latency-critical";
  }
  return "standard";
}

std::string_view QosClassName(QosClass q) {
  switch (q) {
    case QosClass::kUnknown:
      return "Unknown";
    case QosClass::kGuaranteed:
      return "Guaranteed";
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kBestEffort:
      return "BestEffort";
  }
  return "Unknown";
}

std::string_view ClassSourceName(ClassSource s) {
  switch (s) {
    case ClassSource::kAnnotation:
      return "annotation";
    case ClassSource::kLabelRule:
      return "label-rule";
    case ClassSource::kMeasured:
      return "measured";
    case ClassSource::kRemembered:
      return "remembered";
    case ClassSource::kOwner:
      return "owner";
    case ClassSource::kQos:
      return "qos";
    case ClassSource::kDefault:
      return "default";
  }
  return "default";
}

std::vector<Term> ExplainTerms(const NodeDecision& d) {
  std::vector<Term> terms;
  if (!d.has_telemetry) {
    terms.push_back({"telemetry", 0,
                     absl::StrFormat("no telemetry for this node: pass with the blind score %d "
                                     "(neutral 5; below it for latency-critical pods)",
                                     d.score)});
    return terms;
  }
  if (!d.feasible) {
    terms.push_back({"rejected", 1, d.reason});
  }
  terms.push_back({"confidence", d.confidence,
                   absl::StrFormat("telemetry confidence %.2f (1 fresh, 0 stale: score pulled "
                                   "toward the blind score, 5 or 3 for latency-critical pods)",
                                   d.confidence)});
  if (d.confidence <= 0) return terms;
  const std::string where = d.l3_domain >= 0 ? absl::StrFormat("L3 domain %d", d.l3_domain)
                                             : "shared pool (all L3 domains)";
  const std::string numa = d.numa_node >= 0 ? absl::StrFormat("NUMA node %d", d.numa_node)
                                            : "shared pool (all NUMA nodes)";
  if (d.least_harm) {
    terms.push_back({"least_harm_fallback", 1,
                     "predicted interference (or strict isolation) refused every candidate node; "
                     "this one is among the least harmful (model.leastHarmFallback)"});
  }
  if (d.predicted_slowdown > 0) {
    terms.push_back({"predicted_slowdown", d.predicted_slowdown,
                     absl::StrFormat("the pod's predicted slowdown here: %.2fx",
                                     d.predicted_slowdown)});
  }
  if (d.worst_resident_slowdown > 0) {
    terms.push_back({"resident_slowdown", d.worst_resident_slowdown,
                     absl::StrFormat("a latency-critical resident's predicted slowdown with the "
                                     "pod here: %.2fx",
                                     d.worst_resident_slowdown)});
  }
  if (d.exclusive_cpus > 0) {
    static constexpr std::string_view kWhy[] = {
        "topologyManagerPolicy none: the static CPU manager packs the NUMA node with the "
        "fewest free CPUs first",
        "topologyManagerPolicy best-effort: narrowest preferred hint, lowest NUMA node on ties",
        "topologyManagerPolicy restricted: narrowest preferred hint, lowest NUMA node on ties",
        "topologyManagerPolicy single-numa-node: narrowest preferred hint, lowest NUMA node on "
        "ties"};
    terms.push_back(
        {"placement", static_cast<double>(d.exclusive_cpus),
         absl::StrCat("kubelet will pin ", d.exclusive_cpus, " CPUs on ",
                      d.numa_node >= 0 ? absl::StrCat("NUMA node ", d.numa_node)
                                       : std::string("some NUMA node"),
                      d.spans_numa ? " and beyond" : "",
                      d.l3_domain >= 0 ? absl::StrCat(", L3 domain ", d.l3_domain) : "",
                      d.first_cpu >= 0 ? absl::StrCat(", cores from CPU ", d.first_cpu, " up") : "",
                      d.full_cores ? " (whole cores)" : " (sharing a core with a sibling thread)",
                      "; why: ", Av(kWhy[std::min<size_t>(d.topology_policy, 3)]),
                      d.l3_plan == 1
                          ? absl::StrCat("; L3: the kubelet packs cores, not L3 domains "
                                         "(cpuManagerPolicyOptions prefer-align-cpus-by-uncorecache"
                                         " off), ",
                                         d.l3_span > 1 ? absl::StrCat("the pod spans ", d.l3_span,
                                                                      " L3 domains")
                                                       : std::string("one L3 domain"))
                      : d.l3_plan == 2
                          ? absl::StrCat("; L3: prefer-align-cpus-by-uncorecache fits the pod "
                                         "into ",
                                         d.l3_span > 1 ? absl::StrCat(d.l3_span, " L3 domains")
                                                       : std::string("one L3 domain"))
                          : std::string())});
  }
  terms.push_back({"l3_pressure", d.l3_pressure,
                   absl::StrFormat("predicted L3 demand (working sets) %.0f%% of capacity on %s",
                                   d.l3_pressure * 100, where)});
  terms.push_back({"membw_utilisation", d.membw_utilisation,
                   absl::StrFormat("predicted memory bandwidth %.0f%% of peak on %s",
                                   d.membw_utilisation * 100, numa)});
  terms.push_back({"harm_to_incoming", d.harm_to_incoming,
                   "interference the pod would suffer from the node's residents (its class weight "
                   "x predicted slowdown - 1)"});
  terms.push_back({"harm_to_residents", d.harm_to_residents,
                   "interference the pod would cause the node's residents (their class weights x "
                   "the slowdown it adds them)"});
  terms.push_back({"numa_penalty", d.numa_penalty,
                   d.numa_penalty > 0 ? "pod's CPUs/memory would not stay on one NUMA node"
                                      : "pod fits on one NUMA node"});
  if (d.unmeasured_penalty > 0) {
    terms.push_back({"unmeasured", d.unmeasured_penalty,
                     "part of the residents' load this node cannot measure (no MBM for them)"});
  }
  terms.push_back(
      {"cost", d.cost,
       absl::StrFormat("predicted interference cost %.3f -> score %d", d.cost, d.score)});
  return terms;
}

}  // namespace neighborly::extender
