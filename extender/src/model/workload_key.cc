#include "extender/src/model/workload_key.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

// Kubernetes' name generator (apimachinery's rand.String) draws from these.
constexpr std::string_view kGeneratedAlphabet = "bcdfghjklmnpqrstvwxz2456789";
constexpr size_t kGeneratedLength = 5;

bool IsGeneratedSuffix(std::string_view s) {
  if (s.size() != kGeneratedLength) return false;
  for (char c : s) {
    if (kGeneratedAlphabet.find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "name-<suffix>" -> "name" when `suffix` is exactly what follows the last '-'.
std::optional<std::string_view> WithoutSuffix(std::string_view name, std::string_view suffix) {
  if (suffix.empty() || name.size() <= suffix.size() + 1) return std::nullopt;
  if (name.substr(name.size() - suffix.size()) != suffix) return std::nullopt;
  if (name[name.size() - suffix.size() - 1] != '-') return std::nullopt;
  return name.substr(0, name.size() - suffix.size() - 1);
}

WorkloadKey Key(std::string_view ns, std::string_view kind, std::string_view name) {
  return WorkloadKey{std::string(ns), std::string(kind), std::string(name)};
}

}  // namespace

std::string WorkloadKey::ToString() const {
  return absl::StrCat(namespace_name, "/", kind, "/", name);
}

absl::StatusOr<WorkloadKey> ParseWorkloadKey(std::string_view text) {
  std::vector<std::string_view> parts;
  for (absl::string_view part : absl::StrSplit(Av(text), '/')) parts.push_back(Sv(part));
  if (parts.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload \"", Av(text), "\": expected NAMESPACE/KIND/NAME (e.g. shop/Deployment/web)"));
  }
  for (std::string_view part : parts) {
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload \"", Av(text), "\": NAMESPACE, KIND and NAME must not be empty"));
    }
  }
  return Key(parts[0], parts[1], parts[2]);
}

namespace internal {

std::optional<std::string_view> CronJobOfJob(std::string_view job_name) {
  const size_t dash = job_name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  const std::string_view suffix = job_name.substr(dash + 1);
  if (!AllDigits(suffix) || suffix.size() < 8 || suffix.size() > 9) return std::nullopt;
  // The CronJob controller names its Jobs <cronjob>-<scheduled time in minutes
  // since the epoch>; 16,000,000 .. 115,000,000 minutes is 2000-06 .. 2188.
  const int64_t minutes = std::stoll(std::string(suffix));
  if (minutes < 16'000'000 || minutes > 115'000'000) return std::nullopt;
  return job_name.substr(0, dash);
}

std::string_view StripGeneratedSuffix(std::string_view name, std::string_view template_hash) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0) return name;
  std::string_view stem = name;
  if (IsGeneratedSuffix(name.substr(dash + 1))) stem = name.substr(0, dash);
  if (!template_hash.empty()) {
    if (std::optional<std::string_view> owner = WithoutSuffix(stem, template_hash)) return *owner;
  }
  return stem;
}

WorkloadKey KeyFromIdentityLabels(std::string_view ns, std::string_view pod_name,
                                  const IdentityLabels& labels) {
  if (labels.pod_template_hash != nullptr && !labels.pod_template_hash->empty()) {
    // "<deployment>-<hash>-<suffix>": the hash is known, whatever the suffix.
    const std::string marker = absl::StrCat("-", *labels.pod_template_hash, "-");
    const size_t at = pod_name.rfind(marker);
    if (at != std::string_view::npos && at > 0 && at + marker.size() < pod_name.size()) {
      return Key(ns, "Deployment", pod_name.substr(0, at));
    }
  }
  if (labels.job_name != nullptr && !labels.job_name->empty()) {
    if (std::optional<std::string_view> cronjob = CronJobOfJob(*labels.job_name)) {
      return Key(ns, "CronJob", *cronjob);
    }
    return Key(ns, "Job", *labels.job_name);
  }
  if (labels.controller_revision_hash != nullptr) {
    if (labels.statefulset_pod_name != nullptr) {
      const size_t dash = pod_name.rfind('-');
      if (dash != std::string_view::npos && dash > 0 && AllDigits(pod_name.substr(dash + 1))) {
        return Key(ns, "StatefulSet", pod_name.substr(0, dash));
      }
    } else if (labels.pod_template_generation != nullptr) {
      // The controller's labels already say DaemonSet: any 5-character suffix.
      const size_t dash = pod_name.rfind('-');
      if (dash != std::string_view::npos && dash > 0 &&
          pod_name.size() - dash - 1 == kGeneratedLength) {
        return Key(ns, "DaemonSet", pod_name.substr(0, dash));
      }
    }
  }
  if (labels.app_name != nullptr && !labels.app_name->empty()) {
    return Key(ns, "Pod", *labels.app_name);
  }
  if (labels.app != nullptr && !labels.app->empty()) return Key(ns, "Pod", *labels.app);
  return Key(ns, "Pod", StripGeneratedSuffix(pod_name));
}

}  // namespace internal

WorkloadKey WorkloadKeyOf(const IncomingPod& pod) {
  if (pod.name.empty()) return {};
  if (!pod.owner_kind.empty() && !pod.owner_name.empty()) {
    if (pod.owner_kind == "ReplicaSet") {
      auto hash = pod.labels.find("pod-template-hash");
      if (hash != pod.labels.end()) {
        if (std::optional<std::string_view> deployment =
                WithoutSuffix(pod.owner_name, hash->second)) {
          return Key(pod.namespace_name, "Deployment", *deployment);
        }
      }
    } else if (pod.owner_kind == "Job") {
      if (std::optional<std::string_view> cronjob = internal::CronJobOfJob(pod.owner_name)) {
        return Key(pod.namespace_name, "CronJob", *cronjob);
      }
    }
    return Key(pod.namespace_name, pod.owner_kind, pod.owner_name);
  }
  return WorkloadKeyFromLabels(pod.namespace_name, pod.name, pod.labels);
}

}  // namespace neighborly::extender
