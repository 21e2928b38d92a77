#include "extender/src/placement/placement_metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

constexpr std::array<std::string_view, PlacementMetrics::kCodes> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

constexpr PlacementMethod kAllMethods[] = {PlacementMethod::kFilter, PlacementMethod::kScore,
                                           PlacementMethod::kReserve, PlacementMethod::kUnreserve};

}  // namespace

std::string_view PlacementMethodName(PlacementMethod m) {
  switch (m) {
    case PlacementMethod::kFilter:
      return "Filter";
    case PlacementMethod::kScore:
      return "Score";
    case PlacementMethod::kReserve:
      return "Reserve";
    case PlacementMethod::kUnreserve:
      return "Unreserve";
  }
  return "unknown";
}

void PlacementMetrics::Record(PlacementMethod method, int code, absl::Duration latency) {
  PerMethod& m = methods_[static_cast<size_t>(method)];
  const double seconds = absl::ToDoubleSeconds(latency);
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kBucketsSeconds.begin(), kBucketsSeconds.end(), seconds) -
      kBucketsSeconds.begin());
  m.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  m.count.fetch_add(1, std::memory_order_relaxed);
  m.sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Nanoseconds(latency))),
                     std::memory_order_relaxed);
  m.codes[static_cast<size_t>(std::clamp(code, 0, kCodes - 1))].fetch_add(
      1, std::memory_order_relaxed);
}

uint64_t PlacementMetrics::requests(PlacementMethod method, int code) const {
  if (code < 0 || code >= kCodes) return 0;
  return methods_[static_cast<size_t>(method)].codes[static_cast<size_t>(code)].load(
      std::memory_order_relaxed);
}

void PlacementMetrics::AppendPrometheus(std::string& out) const {
  absl::StrAppend(&out,
                  "# HELP neighborly_placement_requests_total Calls of the placement service "
                  "(neighborly.placement.v1), by method and gRPC status code.\n"
                  "# TYPE neighborly_placement_requests_total counter\n");
  for (PlacementMethod method : kAllMethods) {
    const PerMethod& m = methods_[static_cast<size_t>(method)];
    for (int code = 0; code < kCodes; ++code) {
      const uint64_t n = m.codes[static_cast<size_t>(code)].load(std::memory_order_relaxed);
      if (n == 0 && code != 0) continue;
      absl::StrAppend(&out, "neighborly_placement_requests_total{method=\"",
                      Av(PlacementMethodName(method)), "\",code=\"", Av(kCodeNames[code]), "\"} ",
                      n, "\n");
    }
  }
  absl::StrAppend(&out,
                  "# HELP neighborly_placement_request_duration_seconds Server-side time of a "
                  "placement call, from its arrival to its answer, by method.\n"
                  "# TYPE neighborly_placement_request_duration_seconds histogram\n");
  for (PlacementMethod method : kAllMethods) {
    const PerMethod& m = methods_[static_cast<size_t>(method)];
    const absl::string_view name = Av(PlacementMethodName(method));
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kBucketsSeconds.size(); ++b) {
      cumulative += m.buckets[b].load(std::memory_order_relaxed);
      absl::StrAppend(&out, "neighborly_placement_request_duration_seconds_bucket{method=\"", name,
                      "\",le=\"", absl::StrFormat("%g", kBucketsSeconds[b]), "\"} ", cumulative,
                      "\n");
    }
    cumulative += m.buckets[kBucketsSeconds.size()].load(std::memory_order_relaxed);
    absl::StrAppend(&out, "neighborly_placement_request_duration_seconds_bucket{method=\"", name,
                    "\",le=\"+Inf\"} ", cumulative, "\n");
    absl::StrAppend(
        &out, "neighborly_placement_request_duration_seconds_sum{method=\"", name, "\"} ",
        absl::StrFormat("%.9f",
                        static_cast<double>(m.sum_ns.load(std::memory_order_relaxed)) / 1e9),
        "\n");
    absl::StrAppend(&out, "neighborly_placement_request_duration_seconds_count{method=\"", name,
                    "\"} ", cumulative, "\n");
  }
  absl::StrAppend(&out,
                  "# HELP neighborly_placement_tls_reloads_total Reloads of the placement port's "
                  "certificate, key or CA after their files changed.\n"
                  "# TYPE neighborly_placement_tls_reloads_total counter\n"
                  "neighborly_placement_tls_reloads_total ",
                  tls_reloads_.load(std::memory_order_relaxed), "\n",
                  "# HELP neighborly_placement_tls_reload_failures_total Changed placement.tls "
                  "files that were refused (the previous certificate kept); the log says why.\n"
                  "# TYPE neighborly_placement_tls_reload_failures_total counter\n"
                  "neighborly_placement_tls_reload_failures_total ",
                  tls_reload_failures_.load(std::memory_order_relaxed), "\n");
}

}  // namespace neighborly::extender
