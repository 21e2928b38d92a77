#include "extender/src/http/extender_metrics.h"

#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::extender {

std::string_view VerbName(Verb verb) { return verb == Verb::kFilter ? "filter" : "prioritize"; }

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kAccepted:
      return "accepted";
    case Outcome::kRejectIsolation:
    case Outcome::kRejectMembw:
    case Outcome::kRejectNuma:
    case Outcome::kRejectOther:
      return "rejected";
    case Outcome::kScored:
      return "scored";
    case Outcome::kCount:
      break;
  }
  return "error";
}

std::string_view ReasonName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kRejectIsolation:
      return "isolation";
    case Outcome::kRejectMembw:
      return "membw-headroom";
    case Outcome::kRejectNuma:
      return "numa-admission";
    default:
      return "none";
  }
}

std::string_view StageName(Stage stage) {
  switch (stage) {
    case Stage::kWake:
      return "wake";
    case Stage::kReceive:
      return "receive";
    case Stage::kHandle:
      return "handle";
    case Stage::kSend:
    case Stage::kCount:
      break;
  }
  return "send";
}

Outcome ClassifyRejection(std::string_view reason) {
  if (reason.starts_with("isolation")) return Outcome::kRejectIsolation;
  if (reason.starts_with("membw")) return Outcome::kRejectMembw;
  if (reason.starts_with("NUMA")) return Outcome::kRejectNuma;
  return Outcome::kRejectOther;
}

void ExtenderMetrics::RecordRequest(Verb verb, int http_status, absl::Duration latency) {
  PerVerb& v = verbs_[static_cast<size_t>(verb)];
  const double seconds = absl::ToDoubleSeconds(latency);
  size_t bucket = 0;
  while (bucket < kBucketsSeconds.size() && seconds > kBucketsSeconds[bucket]) ++bucket;
  v.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  v.count.fetch_add(1, std::memory_order_relaxed);
  v.sum_ns.fetch_add(static_cast<uint64_t>(absl::ToInt64Nanoseconds(latency)),
                     std::memory_order_relaxed);
  size_t code = kCodes.size();
  for (size_t i = 0; i < kCodes.size(); ++i) {
    if (kCodes[i] == http_status) code = i;
  }
  v.codes[code].fetch_add(1, std::memory_order_relaxed);
  if (http_status != 200) v.errors.fetch_add(1, std::memory_order_relaxed);
}

void ExtenderMetrics::RecordStage(Stage stage, int64_t duration_ns) {
  if (duration_ns < 0) duration_ns = 0;  // the realtime clock stepped back (wake)
  PerStage& s = stages_[static_cast<size_t>(stage)];
  const double seconds = static_cast<double>(duration_ns) / 1e9;
  size_t bucket = 0;
  while (bucket < kStageBucketsSeconds.size() && seconds > kStageBucketsSeconds[bucket]) ++bucket;
  s.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  s.sum_ns.fetch_add(static_cast<uint64_t>(duration_ns), std::memory_order_relaxed);
}

void ExtenderMetrics::RecordDecisions(Verb verb, std::span<const NodeDecision> decisions) {
  std::array<uint64_t, static_cast<size_t>(Outcome::kCount)> counts{};
  uint64_t no_telemetry = 0;
  for (const NodeDecision& d : decisions) {
    Outcome o;
    if (verb == Verb::kPrioritize) {
      o = Outcome::kScored;
    } else {
      o = d.feasible ? Outcome::kAccepted : ClassifyRejection(d.reason);
    }
    ++counts[static_cast<size_t>(o)];
    no_telemetry += d.has_telemetry && d.confidence > 0 ? 0 : 1;
  }
  PerVerb& v = verbs_[static_cast<size_t>(verb)];
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) v.outcomes[i].fetch_add(counts[i], std::memory_order_relaxed);
  }
  if (no_telemetry > 0) v.no_telemetry.fetch_add(no_telemetry, std::memory_order_relaxed);
}

void ExtenderMetrics::AppendTo(PrometheusWriter& page) const {
  constexpr std::string_view kDurationHelp =
      "Server-side latency of scheduler requests, from the end of the headers to the encoded "
      "reply.";
  constexpr std::string_view kRequestsHelp = "Scheduler requests by verb and HTTP status.";
  constexpr std::string_view kDecisionsHelp =
      "Per-node verdicts by verb, outcome (accepted, rejected, scored; error: a request answered "
      "with an error, counted once) and the rejection's reason.";
  constexpr std::string_view kNoTelemetryHelp =
      "Per-node verdicts given without usable telemetry (no report, or a stale one): passed with "
      "the neutral score 5.";
  for (size_t vi = 0; vi < kVerbs; ++vi) {
    const PerVerb& v = verbs_[vi];
    const Verb verb = static_cast<Verb>(vi);
    const std::string verb_name(VerbName(verb));
    std::array<uint64_t, kBucketsSeconds.size() + 1> buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b] = v.buckets[b].load(std::memory_order_relaxed);
    }
    page.Histogram("neighborly_extender_http_request_duration_seconds", kDurationHelp,
                   {{"verb", verb_name}}, kBucketsSeconds, buckets,
                   static_cast<double>(v.sum_ns.load(std::memory_order_relaxed)) / 1e9);
    for (size_t c = 0; c <= kCodes.size(); ++c) {
      page.Counter("neighborly_extender_http_requests_total", kRequestsHelp,
                   {{"verb", verb_name},
                    {"code", c < kCodes.size() ? absl::StrCat(kCodes[c]) : std::string("other")}},
                   static_cast<double>(v.codes[c].load(std::memory_order_relaxed)));
    }
    for (size_t o = 0; o < static_cast<size_t>(Outcome::kCount); ++o) {
      const Outcome outcome = static_cast<Outcome>(o);
      if ((outcome == Outcome::kScored) != (verb == Verb::kPrioritize)) continue;
      page.Counter("neighborly_decisions_total", kDecisionsHelp,
                   {{"verb", verb_name},
                    {"outcome", std::string(OutcomeName(outcome))},
                    {"reason", std::string(ReasonName(outcome))}},
                   static_cast<double>(v.outcomes[o].load(std::memory_order_relaxed)));
    }
    page.Counter("neighborly_decisions_total", kDecisionsHelp,
                 {{"verb", verb_name}, {"outcome", "error"}, {"reason", "none"}},
                 static_cast<double>(v.errors.load(std::memory_order_relaxed)));
    page.Counter("neighborly_decisions_without_telemetry_total", kNoTelemetryHelp,
                 {{"verb", verb_name}},
                 static_cast<double>(v.no_telemetry.load(std::memory_order_relaxed)));
  }
  for (size_t si = 0; si < stages_.size(); ++si) {
    const PerStage& st = stages_[si];
    std::array<uint64_t, kStageBucketsSeconds.size() + 1> buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b] = st.buckets[b].load(std::memory_order_relaxed);
    }
    page.Histogram(
        "neighborly_extender_http_stage_duration_seconds",
        "Where scheduler requests spend their time in the server, by stage: wake (the kernel "
        "received the request's bytes until a worker read them), receive "
        "(first to last byte read), handle (complete request to queued reply), send (queued "
        "reply to its last byte written).",
        {{"stage", std::string(StageName(static_cast<Stage>(si)))}}, kStageBucketsSeconds, buckets,
        static_cast<double>(st.sum_ns.load(std::memory_order_relaxed)) / 1e9);
  }
  page.Counter("neighborly_extender_rejected_connections_total",
               "Connections refused because max_connections was reached.", {},
               static_cast<double>(rejected_connections_.load(std::memory_order_relaxed)));
  page.Counter("neighborly_extender_http_over_budget_requests_total",
               "Requests answered 503 because the request bytes held across connections would "
               "have passed http.maxInFlightBytes.",
               {}, static_cast<double>(over_budget_.load(std::memory_order_relaxed)));
  page.Gauge("neighborly_extender_http_in_flight_bytes",
             "Request bytes held now against http.maxInFlightBytes (beyond each connection's "
             "first 128 KiB).",
             {}, static_cast<double>(in_flight_bytes_.load(std::memory_order_relaxed)));
  for (TlsListener listener : {TlsListener::kHttp, TlsListener::kGrpc}) {
    const TlsReloads& r = tls_[static_cast<size_t>(listener)];
    const std::string name = listener == TlsListener::kHttp ? "http" : "grpc";
    page.Counter("neighborly_tls_reloads_total",
                 "Certificate, key or CA reloads after the files changed, by listener (http: the "
                 "scheduler's HTTPS port; grpc: the agents' telemetry port).",
                 {{"listener", name}},
                 static_cast<double>(r.reloads.load(std::memory_order_relaxed)));
    page.Counter("neighborly_tls_reload_failures_total",
                 "Changed certificate files that could not be loaded (unreadable, damaged, key "
                 "not matching); the previous certificate stays in use.",
                 {{"listener", name}},
                 static_cast<double>(r.failures.load(std::memory_order_relaxed)));
  }
  for (const auto& [listener, name] : {std::pair{RoleListener::kHttp, "http"},
                                       std::pair{RoleListener::kGrpc, "grpc"},
                                       std::pair{RoleListener::kPlacement, "placement"}}) {
    page.Counter("neighborly_tls_client_role_refusals_total",
                 "Client certificates signed by the listener's CA but refused because they do not "
                 "carry its role's names (*.tls.allowedClientNames): an agent's certificate on the "
                 "scheduler or placement port, or the reverse.",
                 {{"listener", name}},
                 static_cast<double>(role_refusals_[static_cast<size_t>(listener)]->refused.load(
                     std::memory_order_relaxed)));
  }
  page.Counter("neighborly_identity_key_reloads_total",
               "Reloads of the service-account issuer's public keys (grpc.identity) after their "
               "files changed.",
               {}, static_cast<double>(identity_key_reloads_.load(std::memory_order_relaxed)));
  page.Counter("neighborly_identity_key_reload_failures_total",
               "Changed issuer key files that could not be loaded; the previous keys stay in use.",
               {},
               static_cast<double>(identity_key_reload_failures_.load(std::memory_order_relaxed)));
}

}  // namespace neighborly::extender
