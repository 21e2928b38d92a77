// Counters and latency histograms of the placement service, in atomics (the
// calls record without locks), rendered for the extender's /metrics:
//
//   neighborly_placement_requests_total{method,code}       calls by gRPC status
//   neighborly_placement_request_duration_seconds{method}  server-side latency
//   neighborly_placement_tls_reloads_total / _failures_total  placement.tls files
//
//   metrics.Record(PlacementMethod::kFilter, grpc::StatusCode::OK, absl::Microseconds(40));
//   std::string text; metrics.AppendPrometheus(text);
#ifndef NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_METRICS_H_
#define NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace neighborly {
class PrometheusWriter;
}

namespace neighborly::extender {

// The Verdicts* methods are the messages of the Verdicts stream (issue 25),
// each counted and timed as it is handled, as a call would be.
enum class PlacementMethod : uint8_t {
  kFilter,
  kScore,
  kReserve,
  kUnreserve,
  kVerdictsSubscribe,
  kVerdictsReserve,
  kVerdictsUnreserve,
};
std::string_view PlacementMethodName(PlacementMethod m);  // "Filter", ..., "VerdictsReserve"

class PlacementMetrics {
 public:
  // Upper bounds of the latency buckets, in seconds (+Inf implied): the
  // HTTP verbs' buckets, so the two modes compare bucket by bucket.
  static constexpr std::array<double, 14> kBucketsSeconds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
      0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
  static constexpr int kCodes = 17;  // gRPC status codes 0 (OK) .. 16 (UNAUTHENTICATED)

  // `code`: a grpc::StatusCode value.
  void Record(PlacementMethod method, int code, absl::Duration latency);
  void RecordTlsReload(bool ok) {
    (ok ? tls_reloads_ : tls_reload_failures_).fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t requests(PlacementMethod method, int code) const;

  // The families above, with HELP and TYPE; every method and code that has
  // been counted at least once (OK always).
  void AppendPrometheus(PrometheusWriter& page) const;
  // The same, rendered on its own (tests).
  void AppendPrometheus(std::string& out) const;

 private:
  static constexpr size_t kMethods = 7;
  struct PerMethod {
    std::array<std::atomic<uint64_t>, kBucketsSeconds.size() + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
    std::array<std::atomic<uint64_t>, kCodes> codes{};
  };
  std::array<PerMethod, kMethods> methods_{};
  std::atomic<uint64_t> tls_reloads_{0};
  std::atomic<uint64_t> tls_reload_failures_{0};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_METRICS_H_
