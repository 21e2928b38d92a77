#include "extender/src/model/classify.h"

#include "absl/strings/str_cat.h"
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

PodRequest MakePodRequest(const IncomingPod& pod, const RememberedPod* remembered,
                          const ModelConfig& config) {
  PodRequest req;
  req.pod = absl::StrCat(pod.namespace_name, "/", pod.name);
  std::optional<ClassResolution> declared =
      DeclaredClass(pod.labels, pod.annotations, config, &req.note);
  if (declared) {
    req.contention_class = declared->contention_class;
    req.source = declared->source;
  } else if (remembered != nullptr && remembered->source != ClassSource::kDefault) {
    // An incoming pod has no measurements of its own; what was learned about
    // its UID (for example a measured aggressor being rescheduled) comes next.
    req.contention_class = remembered->contention_class;
    req.source = ClassSource::kRemembered;
  }
  FootprintHints hints = HintsFromAnnotations(pod.annotations, &req.note);
  if (remembered != nullptr) {
    if (!hints.llc_bytes) hints.llc_bytes = remembered->hints.llc_bytes;
    if (!hints.membw_bytes_per_second) {
      hints.membw_bytes_per_second = remembered->hints.membw_bytes_per_second;
    }
  }
  const Footprint& fallback = DefaultFootprint(req.contention_class, config);
  req.llc_bytes = static_cast<double>(hints.llc_bytes.value_or(fallback.llc_bytes));
  req.membw_bytes_per_second =
      static_cast<double>(hints.membw_bytes_per_second.value_or(fallback.membw_bytes_per_second));
  req.sensitivity = Sensitivity(req.contention_class);
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
  return req;
}

}  // namespace neighborly::extender
