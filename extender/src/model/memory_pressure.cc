#include "extender/src/model/memory_pressure.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/quantity.h"
#include "extender/src/model/node_profile.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

std::string Gib(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

// memory.available thresholds of one kind ("hard" / "soft").
void AddThreshold(const google::protobuf::Map<std::string, std::string>& map,
                  std::string_view kind, const std::string& source, NodeMemoryView& view) {
  auto it = map.find("memory.available");
  if (it == map.end()) return;
  absl::StatusOr<uint64_t> bytes = ParseEvictionThreshold(it->second, view.capacity_bytes);
  if (!bytes.ok()) {
    view.notes.push_back(absl::StrCat("eviction", kind == "hard" ? "Hard" : "Soft",
                                      " memory.available skipped: ", bytes.status().message()));
    return;
  }
  MemoryThreshold t;
  t.kind = std::string(kind);
  t.value = it->second;
  t.bytes = *bytes;
  t.source = source;
  view.thresholds.push_back(std::move(t));
}

void ExpectOomScoreAdj(const tv1::PodReport& pod, uint64_t capacity, PodMemoryView& v) {
  const bool critical = pod.has_priority() && pod.priority() >= kSystemNodeCriticalPriority;
  if (pod.qos_class() == tv1::QOS_CLASS_UNSPECIFIED) {
    v.oom_note = "not checked: QoS class unknown";
    return;
  }
  if (pod.qos_class() == tv1::QOS_CLASS_BURSTABLE && !critical) {
    if (capacity == 0) {
      v.oom_note = "not checked: node memory capacity unknown";
      return;
    }
    if (!pod.container_memory_request_bytes().empty()) {
      std::set<int32_t> expected;
      for (const auto& [container, request] : pod.container_memory_request_bytes()) {
        expected.insert(ExpectedOomScoreAdj(pod.qos_class(), request, capacity));
      }
      v.expected_oom_score_adj.assign(expected.begin(), expected.end());
    } else if (pod.has_memory_request_bytes()) {
      v.expected_oom_score_adj.push_back(
          ExpectedOomScoreAdj(pod.qos_class(), pod.memory_request_bytes(), capacity));
      v.expected_is_lower_bound = true;
    } else {
      v.oom_note = "not checked: the pod's memory request is not reported";
      return;
    }
  } else {
    v.expected_oom_score_adj.push_back(ExpectedOomScoreAdj(pod.qos_class(), 0, capacity, critical));
  }
  if (v.oom_score_adj.empty()) {
    v.oom_note = "not checked: oom_score_adj not reported";
    return;
  }
  for (int32_t observed : v.oom_score_adj) {
    const bool ok =
        v.expected_is_lower_bound
            ? observed >= v.expected_oom_score_adj.front() && observed <= 999
            : std::find(v.expected_oom_score_adj.begin(), v.expected_oom_score_adj.end(),
                        observed) != v.expected_oom_score_adj.end();
    if (ok) continue;
    v.oom_score_adj_mismatch = true;
    v.oom_note = absl::StrCat(
        "a process has oom_score_adj ", observed, "; the kubelet sets ",
        v.expected_is_lower_bound
            ? absl::StrCat(v.expected_oom_score_adj.front(), "..999")
            : absl::StrJoin(v.expected_oom_score_adj, ","),
        " for a ", v.qos_class, " pod", critical ? " (node-critical)" : "",
        ": something changed it (an entrypoint writing /proc/self/oom_score_adj, a runtime "
        "hook, a node tuning daemon)");
    break;
  }
}

}  // namespace

int ExpectedOomScoreAdj(tv1::QosClass qos, uint64_t container_request_bytes,
                        uint64_t capacity_bytes, bool node_critical) {
  if (node_critical || qos == tv1::QOS_CLASS_GUARANTEED) return kGuaranteedOomScoreAdj;
  if (qos == tv1::QOS_CLASS_BEST_EFFORT) return kBestEffortOomScoreAdj;
  if (capacity_bytes == 0) return kBestEffortOomScoreAdj - 1;
  // The kubelet's integer arithmetic; a request at or above the capacity
  // clamps below anyway (and keeps 1000 * request from overflowing).
  if (container_request_bytes >= capacity_bytes) return 1000 + kGuaranteedOomScoreAdj;
  const uint64_t share = container_request_bytes <= UINT64_MAX / 1000
                             ? container_request_bytes * 1000 / capacity_bytes
                             : container_request_bytes / (capacity_bytes / 1000);
  const int64_t adj = 1000 - static_cast<int64_t>(share);
  if (adj < 1000 + kGuaranteedOomScoreAdj) return 1000 + kGuaranteedOomScoreAdj;
  if (adj == kBestEffortOomScoreAdj) return kBestEffortOomScoreAdj - 1;
  return static_cast<int>(adj);
}

absl::StatusOr<uint64_t> ParseEvictionThreshold(std::string_view value, uint64_t capacity_bytes) {
  const std::string_view text = Trim(value);
  if (text.empty()) return absl::InvalidArgumentError("empty eviction threshold");
  if (text.back() == '%') {
    const std::optional<double> percent = ParseDouble(text.substr(0, text.size() - 1));
    if (!percent || !(*percent >= 0) || *percent > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction threshold \"", Av(text), "\" is not a percentage in 0..100%"));
    }
    return static_cast<uint64_t>(std::llround(*percent / 100.0 * static_cast<double>(capacity_bytes)));
  }
  absl::StatusOr<int64_t> bytes = ParseByteQuantity(text);
  if (!bytes.ok() || *bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("eviction threshold \"", Av(text),
                                                   "\" is neither a quantity (100Mi) nor a "
                                                   "percentage (10%)"));
  }
  return static_cast<uint64_t>(*bytes);
}

NodeMemoryView BuildNodeMemoryView(const tv1::NodeReport& report) {
  NodeMemoryView view;
  view.node = report.node_name();
  if (report.has_memory() && report.memory().capacity_bytes() > 0) {
    view.capacity_bytes = report.memory().capacity_bytes();
    view.capacity_source = report.memory().source().empty() ? "reported" : report.memory().source();
    view.available_bytes = report.memory().available_bytes();
  } else {
    for (const tv1::NumaNode& numa : report.topology().numa_nodes()) {
      view.capacity_bytes += numa.memory_bytes();
    }
    view.capacity_source = "NUMA nodes";
    view.notes.push_back(
        "memory.available not reported (an agent before issue 26, or /proc/meminfo unreadable): "
        "no distance to the thresholds");
  }

  // Thresholds: the kubelet's, else its default hard threshold.
  const tv1::KubeletPolicies& kubelet = report.kubelet();
  const std::string source =
      kubelet.eviction_source().empty() ? "kubelet" : kubelet.eviction_source();
  if (kubelet.eviction_hard().contains("memory.available")) {
    AddThreshold(kubelet.eviction_hard(), "hard", source, view);
  } else {
    google::protobuf::Map<std::string, std::string> defaults;
    defaults["memory.available"] = std::string(kDefaultEvictionHardMemory);
    AddThreshold(defaults, "hard", "kubelet default (evictionHard not reported)", view);
  }
  AddThreshold(kubelet.eviction_soft(), "soft", source, view);
  for (MemoryThreshold& t : view.thresholds) {
    if (!view.available_bytes) continue;
    t.distance_bytes = static_cast<int64_t>(*view.available_bytes) - static_cast<int64_t>(t.bytes);
    if (t.kind == "hard" && *t.distance_bytes < 0) view.under_pressure = true;
  }

  // Pods, then the kubelet's ranking.
  for (const tv1::PodReport& pod : report.pods()) {
    PodMemoryView v;
    v.uid = pod.uid();
    v.namespace_name = pod.namespace_();
    v.name = pod.name();
    v.qos_class = QosClassName(QosClassOf(pod.qos_class()));
    if (pod.has_priority()) v.priority = pod.priority();
    if (pod.has_memory_working_set_bytes()) v.working_set_bytes = pod.memory_working_set_bytes();
    if (pod.has_memory_request_bytes()) v.request_bytes = pod.memory_request_bytes();
    if (pod.has_memory_limit_bytes()) v.limit_bytes = pod.memory_limit_bytes();
    if (v.working_set_bytes) {
      v.usage_above_request_bytes = static_cast<int64_t>(*v.working_set_bytes) -
                                    static_cast<int64_t>(v.request_bytes.value_or(0));
      v.exceeds_request = *v.usage_above_request_bytes > 0;
    }
    view.pods_over_request += v.exceeds_request ? 1 : 0;
    v.oom_score_adj.assign(pod.oom_score_adj().begin(), pod.oom_score_adj().end());
    std::sort(v.oom_score_adj.begin(), v.oom_score_adj.end());
    ExpectOomScoreAdj(pod, view.capacity_bytes, v);
    view.oom_score_adj_mismatches += v.oom_score_adj_mismatch ? 1 : 0;
    view.pods.push_back(std::move(v));
  }
  std::stable_sort(view.pods.begin(), view.pods.end(),
                   [](const PodMemoryView& a, const PodMemoryView& b) {
                     const bool a_none = !a.working_set_bytes, b_none = !b.working_set_bytes;
                     if (a_none != b_none) return a_none;  // no statistics: first
                     if (a.exceeds_request != b.exceeds_request) return a.exceeds_request;
                     const int32_t pa = a.priority.value_or(0), pb = b.priority.value_or(0);
                     if (pa != pb) return pa < pb;
                     const int64_t ua = a.usage_above_request_bytes.value_or(0);
                     const int64_t ub = b.usage_above_request_bytes.value_or(0);
                     if (ua != ub) return ua > ub;
                     return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
                   });
  bool any_priority = false;
  for (size_t i = 0; i < view.pods.size(); ++i) {
    PodMemoryView& v = view.pods[i];
    v.eviction_rank = static_cast<int>(i + 1);
    any_priority = any_priority || v.priority.has_value();
    if (!v.working_set_bytes) {
      v.eviction_reason = "no usage statistics (the kubelet evicts these first)";
    } else if (v.exceeds_request) {
      v.eviction_reason = absl::StrCat("over its request by ", Gib(*v.usage_above_request_bytes));
    } else {
      v.eviction_reason =
          absl::StrCat("within its request (", Gib(-*v.usage_above_request_bytes), " to spare)");
    }
  }
  if (!view.pods.empty() && !any_priority) {
    view.notes.push_back("no pod priorities reported: ranked as if all had priority 0");
  }
  return view;
}

}  // namespace neighborly::extender
