#include "extender/src/model/classify.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace neighborly::extender {

std::optional<ContentionClass> ParseContentionClass(std::string_view text) {
  text = Trim(text);
  if (EqualsIgnoreCase(text, "latency-critical")) return ContentionClass::kLatencyCritical;
  if (EqualsIgnoreCase(text, "batch")) return ContentionClass::kBatch;
  if (EqualsIgnoreCase(text, "standard")) return ContentionClass::kStandard;
  return std::nullopt;
}

std::optional<int64_t> ParseHint(std::string_view key, const std::string* value,
                                 std::string* note) {
  if (value == nullptr) return std::nullopt;
  absl::StatusOr<int64_t> parsed = ParseByteQuantity(*value);
  if (parsed.ok() && *parsed >= 0) return *parsed;
  if (note != nullptr) {
    if (!note->empty()) note->append("; ");
    absl::StrAppend(note, "ignored annotation ", Av(key), "=\"", *value,
                    "\": ", parsed.ok() ? "negative" : parsed.status().message());
  }
  return std::nullopt;
}

const Footprint& DefaultFootprint(ContentionClass c, const ModelConfig& config) {
  switch (c) {
    case ContentionClass::kLatencyCritical:
      return config.default_latency_critical;
    case ContentionClass::kBatch:
      return config.default_batch;
    case ContentionClass::kStandard:
      break;
  }
  return config.default_standard;
}

double Sensitivity(ContentionClass c) {
  switch (c) {
    case ContentionClass::kLatencyCritical:
      return 1.0;
    case ContentionClass::kBatch:
      return 0.25;
    case ContentionClass::kStandard:
      break;
  }
  return 0.5;
}

Footprint PriorFootprint(ContentionClass c, double cpus, const ModelConfig& config) {
  const Footprint& base = DefaultFootprint(c, config);
  if (!config.priors.scale_with_cpus) return base;
  const double extra = std::clamp(cpus, 1.0, std::max(1.0, config.priors.max_cpus)) - 1.0;
  return Footprint{
      base.llc_bytes +
          static_cast<int64_t>(static_cast<double>(config.priors.llc_bytes_per_cpu) * extra),
      base.membw_bytes_per_second +
          static_cast<int64_t>(static_cast<double>(config.priors.membw_bytes_per_second_per_cpu) *
                               extra)};
}

bool BlendWithProfile(const WorkloadPrediction* profile, double& llc_bytes,
                      double& membw_bytes_per_second) {
  if (profile == nullptr || profile->confidence <= 0 ||
      (!profile->llc_bytes && !profile->membw_bytes_per_second)) {
    return false;
  }
  const double c = profile->confidence;
  if (profile->llc_bytes) llc_bytes = c * *profile->llc_bytes + (1 - c) * llc_bytes;
  if (profile->membw_bytes_per_second) {
    membw_bytes_per_second =
        c * *profile->membw_bytes_per_second + (1 - c) * membw_bytes_per_second;
  }
  return true;
}

std::optional<double> ParseMaxSlowdown(const std::string* value, std::string* note) {
  if (value == nullptr) return std::nullopt;
  std::string_view text = Trim(*value);
  if (!text.empty() && (text.back() == 'x' || text.back() == 'X')) text.remove_suffix(1);
  double v = 0;
  if (absl::SimpleAtod(Av(text), &v) && v > 1.0 && v <= 100.0) return v;
  if (note != nullptr) {
    if (!note->empty()) note->append("; ");
    absl::StrAppend(note, "ignored annotation ", Av(kMaxSlowdownAnnotation), "=\"", *value,
                    "\": expected a slowdown above 1 such as 1.3 or 1.3x");
  }
  return std::nullopt;
}

Demand PodDemand(ContentionClass c, double llc_bytes, double membw_bytes_per_second,
                 const WorkloadPrediction* fit, std::optional<double> tolerance,
                 const ModelConfig& config) {
  Demand d = DemandFor(c, llc_bytes, membw_bytes_per_second, config);
  if (fit != nullptr && fit->fit_confidence > 0) {
    const double w = std::clamp(fit->fit_confidence, 0.0, 1.0);
    if (fit->cache_sensitivity) {
      d.cache_sensitivity = w * *fit->cache_sensitivity + (1 - w) * d.cache_sensitivity;
    }
    if (fit->membw_sensitivity) {
      d.membw_sensitivity = w * *fit->membw_sensitivity + (1 - w) * d.membw_sensitivity;
    }
  }
  if (c == ContentionClass::kLatencyCritical && tolerance) d.tolerance = *tolerance;
  return d;
}

double PriorCpus(const IncomingPod& pod) {
  double millicores = static_cast<double>(std::max<int64_t>(0, pod.cpu_request_millicores));
  if (pod.qos == QosClass::kBurstable && pod.cpu_limit_millicores > pod.cpu_request_millicores) {
    millicores = static_cast<double>(pod.cpu_limit_millicores);
  }
  return millicores / 1000.0;
}

namespace {

std::string FormatRate(double bytes_per_second) {
  return absl::StrFormat("%.1f GB/s", bytes_per_second / 1e9);
}

std::string FormatMb(double bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

}  // namespace

PodRequest MakePodRequest(const IncomingPod& pod, const RememberedPod* remembered,
                          const ModelConfig& config, const WorkloadKey* key,
                          const WorkloadPrediction* profile) {
  PodRequest req;
  req.pod = absl::StrCat(pod.namespace_name, "/", pod.name);
  const int64_t millicores = pod.cpu_request_millicores > 0 ? pod.cpu_request_millicores : 0;
  req.cpus = static_cast<int32_t>((millicores + 999) / 1000);
  req.memory_bytes = pod.memory_request_bytes > 0 ? pod.memory_request_bytes : 0;
  req.exclusive_cpus = pod.wants_exclusive_cpus || (pod.qos == QosClass::kGuaranteed &&
                                                    millicores > 0 && millicores % 1000 == 0);
  req.admission = MakeAdmissionRequest(pod);
  if (!pod.containers.empty()) {
    // Only Guaranteed containers with integer CPU requests are pinned (issue 14).
    req.exclusive_cpus = req.admission.pod_exclusive_cpus > 0;
    if (req.exclusive_cpus) req.cpus = req.admission.pod_exclusive_cpus;
  }
  std::optional<ClassResolution> declared =
      DeclaredClass(pod.labels, pod.annotations, config, &req.note);
  if (declared) {
    req.contention_class = declared->contention_class;
    req.source = declared->source;
  } else if (profile != nullptr && profile->aggressor &&
             !(req.exclusive_cpus && pod.qos == QosClass::kGuaranteed)) {
    // (A Guaranteed pod with whole cores is never demoted by measurement
    // alone: someone paid for them, and a squeezed service misses like a
    // streamer; issue 22.)
    // Its replicas were measured streaming: it will again (docs/scoring.md).
    req.contention_class = ContentionClass::kBatch;
    req.source = ClassSource::kMeasured;
  } else if (remembered != nullptr && remembered->source != ClassSource::kDefault) {
    // An incoming pod has no measurements of its own; what was learned about
    // its UID (for example a measured aggressor being rescheduled) comes next.
    req.contention_class = remembered->contention_class;
    req.source = ClassSource::kRemembered;
  } else if (config.jobs_are_batch && pod.owner_kind == "Job") {
    // A Job's pods run to completion: throughput work, whatever their QoS
    // (many batch Jobs set limits = requests; issue 22).
    req.contention_class = ContentionClass::kBatch;
    req.source = ClassSource::kOwner;
  } else if (config.guaranteed_exclusive_is_latency_critical && req.exclusive_cpus) {
    req.contention_class = ContentionClass::kLatencyCritical;
    req.source = ClassSource::kQos;
  }
  FootprintHints hints = HintsFromAnnotations(pod.annotations, &req.note);
  const bool annotated = !hints.empty();
  if (remembered != nullptr) {
    if (!hints.llc_bytes) hints.llc_bytes = remembered->hints.llc_bytes;
    if (!hints.membw_bytes_per_second) {
      hints.membw_bytes_per_second = remembered->hints.membw_bytes_per_second;
    }
  }
  const double prior_cpus = PriorCpus(pod);
  const Footprint prior = PriorFootprint(req.contention_class, prior_cpus, config);
  double llc = static_cast<double>(hints.llc_bytes.value_or(prior.llc_bytes));
  double membw =
      static_cast<double>(hints.membw_bytes_per_second.value_or(prior.membw_bytes_per_second));
  const char* base_source =
      !hints.empty() ? (annotated ? "hint annotations" : "remembered hints") : "prior";
  const std::string workload =
      key != nullptr && !key->empty()
          ? absl::StrCat(key->kind, " ", key->namespace_name, "/", key->name)
          : std::string("its workload");
  if (BlendWithProfile(profile, llc, membw)) {
    const double c = profile->confidence;
    req.prediction = absl::StrFormat(
        "%s %s, %d replica%s on %d node%s, %.0f windows: %s%s, %s",
        c >= 1 ? "predicted from" : "young profile of", workload, profile->replicas,
        profile->replicas == 1 ? "" : "s", profile->nodes, profile->nodes == 1 ? "" : "s",
        profile->windows, FormatRate(membw),
        profile->membw_estimated ? " (estimated from LLC misses)" : "", FormatMb(llc));
    if (c < 1)
      absl::StrAppend(&req.prediction, absl::StrFormat(" (%.0f%% profile, %.0f%% %s)", c * 100,
                                                       (1 - c) * 100, base_source));
  } else {
    req.prediction =
        hints.empty()
            ? absl::StrFormat("prior for a %s pod of %.1f CPUs (%s): %s, %s",
                              Av(ContentionClassName(req.contention_class)),
                              std::max(1.0, prior_cpus), Av(QosClassName(pod.qos)),
                              FormatRate(membw), FormatMb(llc))
            : absl::StrFormat("from %s: %s, %s", base_source, FormatRate(membw), FormatMb(llc));
  }
  if (profile != nullptr && profile->aggressor && req.source == ClassSource::kMeasured) {
    absl::StrAppend(&req.prediction, "; batch: ", workload, " is an aggressor (",
                    profile->aggressor_why, ")");
  }
  // A profile that knows the working set it had room for, or its traffic
  // with it, predicts demand rather than a squeezed replica's symptoms.
  if (profile != nullptr && profile->fit_confidence > 0) {
    const double w = std::clamp(profile->fit_confidence, 0.0, 1.0);
    if (profile->llc_demand_bytes) llc = std::max(llc, w * *profile->llc_demand_bytes + (1 - w) * llc);
    if (profile->solo_membw_bytes_per_second && req.contention_class != ContentionClass::kBatch) {
      membw = w * *profile->solo_membw_bytes_per_second + (1 - w) * membw;
    }
  }
  req.llc_bytes = llc;
  req.membw_bytes_per_second = membw;
  req.sensitivity = Sensitivity(req.contention_class);
  req.demand = PodDemand(req.contention_class, llc, membw, profile,
                         ParseMaxSlowdown(FindValue(pod.annotations, kMaxSlowdownAnnotation),
                                          &req.note),
                         config);
  return req;
}

}  // namespace neighborly::extender
