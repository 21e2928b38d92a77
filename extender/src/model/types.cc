#include "extender/src/model/types.h"

#include "absl/strings/str_format.h"

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
  terms.push_back({"l3_pressure", d.l3_pressure,
                   absl::StrFormat("predicted L3 occupancy %.0f%% of capacity on %s",
                                   d.l3_pressure * 100, where)});
  terms.push_back({"membw_utilisation", d.membw_utilisation,
                   absl::StrFormat("predicted memory bandwidth %.0f%% of peak on %s",
                                   d.membw_utilisation * 100, numa)});
  terms.push_back({"harm_to_incoming", d.harm_to_incoming,
                   "interference the pod would suffer from the node's residents"});
  terms.push_back({"harm_to_residents", d.harm_to_residents,
                   "interference the pod would cause the node's sensitive residents"});
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
