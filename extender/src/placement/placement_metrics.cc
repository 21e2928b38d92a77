#include "extender/src/placement/placement_metrics.h"

#include <algorithm>
#include <array>

#include "common/prometheus_text.h"

namespace neighborly::extender {
namespace {

constexpr std::array<std::string_view, PlacementMetrics::kCodes> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

constexpr PlacementMethod kAllMethods[] = {
    PlacementMethod::kFilter,           PlacementMethod::kScore,
    PlacementMethod::kReserve,          PlacementMethod::kUnreserve,
    PlacementMethod::kVerdictsSubscribe, PlacementMethod::kVerdictsReserve,
    PlacementMethod::kVerdictsUnreserve};

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
    case PlacementMethod::kVerdictsSubscribe:
      return "VerdictsSubscribe";
    case PlacementMethod::kVerdictsReserve:
      return "VerdictsReserve";
    case PlacementMethod::kVerdictsUnreserve:
      return "VerdictsUnreserve";
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

void PlacementMetrics::AppendPrometheus(PrometheusWriter& page) const {
  static constexpr std::string_view kRequests = "neighborly_placement_requests_total";
  static constexpr std::string_view kRequestsHelp =
      "Calls of the placement service (neighborly.placement.v1), by method and gRPC status code.";
  static constexpr std::string_view kDuration = "neighborly_placement_request_duration_seconds";
  static constexpr std::string_view kDurationHelp =
      "Server-side time of a placement call, from its arrival to its answer, by method.";
  for (PlacementMethod method : kAllMethods) {
    const PerMethod& m = methods_[static_cast<size_t>(method)];
    const std::string name(PlacementMethodName(method));
    for (int code = 0; code < kCodes; ++code) {
      const uint64_t n = m.codes[static_cast<size_t>(code)].load(std::memory_order_relaxed);
      if (n == 0 && code != 0) continue;
      page.Counter(kRequests, kRequestsHelp,
                   {{"method", name}, {"code", std::string(kCodeNames[code])}},
                   static_cast<double>(n));
    }
    std::array<uint64_t, kBucketsSeconds.size() + 1> counts{};
    for (size_t b = 0; b < counts.size(); ++b) {
      counts[b] = m.buckets[b].load(std::memory_order_relaxed);
    }
    page.Histogram(kDuration, kDurationHelp, {{"method", name}}, kBucketsSeconds, counts,
                   static_cast<double>(m.sum_ns.load(std::memory_order_relaxed)) / 1e9);
  }
  page.Counter("neighborly_placement_tls_reloads_total",
               "Reloads of the placement port's certificate, key or CA after their files changed.",
               {}, static_cast<double>(tls_reloads_.load(std::memory_order_relaxed)));
  page.Counter("neighborly_placement_tls_reload_failures_total",
               "Changed placement.tls files that were refused (the previous certificate kept); the "
               "log says why.",
               {}, static_cast<double>(tls_reload_failures_.load(std::memory_order_relaxed)));
}

void PlacementMetrics::AppendPrometheus(std::string& out) const {
  PrometheusWriter page;
  AppendPrometheus(page);
  out += page.Render();
}

}  // namespace neighborly::extender
