// Counters and latency histograms of the scheduler-facing endpoints, kept in
// atomics so the hot path records without locks. The operator API renders them
// (with the per-node gauges) in Prometheus text format.
//
//   metrics.RecordRequest(Verb::kFilter, 200, absl::Microseconds(42));
//   metrics.RecordDecisions(Verb::kFilter, decisions);
//   PrometheusWriter page; metrics.AppendTo(page);
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_METRICS_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "common/client_identity.h"
#include "common/prometheus_text.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

enum class Verb { kFilter = 0, kPrioritize = 1 };
std::string_view VerbName(Verb verb);

// Outcome of one node in one decision, as counted in
// neighborly_decisions_total{verb,outcome,reason} (docs/operations.md).
enum class Outcome {
  kAccepted = 0,     // filter: node kept                          outcome="accepted",reason="none"
  kRejectIsolation,  // filter: "isolation: ..." outcome="rejected",reason="isolation"
  kRejectMembw,      // filter: "membw ..."                        reason="membw-headroom"
  kRejectNuma,       // filter: "NUMA admission ..."               reason="numa-admission"
  kRejectOther,      // filter: any other reason (none today)      reason="none"
  kScored,           // prioritize: every node                     outcome="scored",reason="none"
  kCount
};
std::string_view OutcomeName(Outcome outcome);  // "accepted" | "rejected" | "scored"
std::string_view ReasonName(Outcome outcome);   // "isolation" | ... | "none"
Outcome ClassifyRejection(std::string_view reason);

// The TLS listeners whose certificate files are watched: the scheduler's
// HTTPS port and the agents' gRPC port.
enum class TlsListener : uint8_t { kHttp, kGrpc };

// The listeners that check a client certificate's role (docs/security.md,
// "Roles"): the scheduler's HTTPS port, the agents' port, the placement port.
enum class RoleListener : uint8_t { kHttp, kGrpc, kPlacement };

// Where a scheduler request's time goes inside the server (per-stage
// timestamps, docs/http.md "Where the time goes"), counted in
// neighborly_extender_http_stage_duration_seconds{stage}.
enum class Stage : uint8_t {
  kWake = 0,  // the kernel received the request's bytes -> a worker read them
              // (epoll wake-up and run-queue wait; over TLS from a MSG_PEEK
              // before OpenSSL reads, which drops the receive timestamp)
  kReceive,   // the request's first byte read -> its last byte read
  kHandle,    // request complete -> reply encoded and queued
  kSend,      // reply queued -> its last byte handed to the kernel
  kCount
};
std::string_view StageName(Stage stage);  // "wake" | "receive" | "handle" | "send"

class ExtenderMetrics {
 public:
  // Upper bounds of the latency histogram buckets, in seconds (+Inf implied).
  static constexpr std::array<double, 14> kBucketsSeconds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
      0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
  // The same for the stages, finer at the low end (a wake-up takes tens of
  // microseconds on an idle machine).
  static constexpr std::array<double, 15> kStageBucketsSeconds = {
      0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
      0.005,   0.01,     0.025,   0.05,   0.1,     0.25,   1.0};
  // HTTP status codes counted individually; anything else counts as "other".
  static constexpr std::array<int, 8> kCodes = {200, 400, 404, 408, 411, 413, 500, 503};

  void RecordRequest(Verb verb, int http_status, absl::Duration latency);
  void RecordDecisions(Verb verb, std::span<const NodeDecision> decisions);
  void RecordStage(Stage stage, int64_t duration_ns);
  // Connections refused because max_connections was reached.
  void RecordRejectedConnection() { rejected_connections_.fetch_add(1, std::memory_order_relaxed); }
  // A request answered 503 because the input held across connections would
  // have passed http.maxInFlightBytes.
  void RecordOverBudget() { over_budget_.fetch_add(1, std::memory_order_relaxed); }
  // Change of the request bytes held against that budget (every HTTP server
  // of the process together).
  void AddInFlightBytes(int64_t delta) {
    in_flight_bytes_.fetch_add(delta, std::memory_order_relaxed);
  }
  // A reload of a listener's certificate, key or CA after the files changed:
  // done (ok) or refused, the previous material kept (tls_reloader.h).
  void RecordTlsReload(TlsListener listener, bool ok) {
    TlsReloads& r = tls_[static_cast<size_t>(listener)];
    (ok ? r.reloads : r.failures).fetch_add(1, std::memory_order_relaxed);
  }
  // The refusal counter a listener's ClientRole shares with /metrics.
  std::shared_ptr<RoleRefusals> role_refusals(RoleListener listener) const {
    return role_refusals_[static_cast<size_t>(listener)];
  }
  // The same for the node-identity issuer keys (grpc.identity, node_identity.h).
  void RecordIdentityKeyReload(bool ok) {
    (ok ? identity_key_reloads_ : identity_key_reload_failures_)
        .fetch_add(1, std::memory_order_relaxed);
  }

  // neighborly_extender_http_request_duration_seconds{verb},
  // neighborly_extender_http_requests_total{verb,code},
  // neighborly_decisions_total{verb,outcome,reason} (a request answered with
  // an error counts once as outcome="error"),
  // neighborly_decisions_without_telemetry_total{verb},
  // neighborly_extender_http_stage_duration_seconds{stage},
  // neighborly_extender_rejected_connections_total,
  // neighborly_extender_http_over_budget_requests_total,
  // neighborly_extender_http_in_flight_bytes,
  // neighborly_tls_reloads_total{listener="http"|"grpc"},
  // neighborly_tls_reload_failures_total{listener="http"|"grpc"},
  // neighborly_identity_key_reloads_total,
  // neighborly_identity_key_reload_failures_total,
  // neighborly_tls_client_role_refusals_total{listener="http"|"grpc"|"placement"}.
  void AppendTo(PrometheusWriter& page) const;
  // These families alone, rendered (tests).
  void AppendPrometheus(std::string& out) const {
    PrometheusWriter page;
    AppendTo(page);
    out += page.Render();
  }

 private:
  static constexpr size_t kVerbs = 2;
  struct PerVerb {
    std::array<std::atomic<uint64_t>, kBucketsSeconds.size() + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
    std::array<std::atomic<uint64_t>, kCodes.size() + 1> codes{};
    std::array<std::atomic<uint64_t>, static_cast<size_t>(Outcome::kCount)> outcomes{};
    std::atomic<uint64_t> errors{0};        // requests answered with a non-200 status
    std::atomic<uint64_t> no_telemetry{0};  // nodes answered neutrally (no usable telemetry)
  };
  std::array<PerVerb, kVerbs> verbs_{};
  struct PerStage {
    std::array<std::atomic<uint64_t>, kStageBucketsSeconds.size() + 1> buckets{};
    std::atomic<uint64_t> sum_ns{0};
  };
  std::array<PerStage, static_cast<size_t>(Stage::kCount)> stages_{};
  std::atomic<uint64_t> rejected_connections_{0};
  std::atomic<uint64_t> over_budget_{0};
  std::atomic<int64_t> in_flight_bytes_{0};
  struct TlsReloads {
    std::atomic<uint64_t> reloads{0};
    std::atomic<uint64_t> failures{0};
  };
  std::array<TlsReloads, 2> tls_{};  // by TlsListener
  std::atomic<uint64_t> identity_key_reloads_{0};
  std::atomic<uint64_t> identity_key_reload_failures_{0};
  const std::array<std::shared_ptr<RoleRefusals>, 3> role_refusals_{
      std::make_shared<RoleRefusals>(), std::make_shared<RoleRefusals>(),
      std::make_shared<RoleRefusals>()};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_METRICS_H_
