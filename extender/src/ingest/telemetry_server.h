// The gRPC telemetry endpoint: neighborly.telemetry.v1.Telemetry/Report.
//
// Built on gRPC's callback API, so an open agent stream costs a reactor object,
// not a thread: thousands of nodes stream into a handful of threads. Each
// report goes to ExtenderCore::Ingest; an accepted one is acked with its
// sequence; an invalid one (or bytes that are not a NodeReport) ends the stream
// with INVALID_ARGUMENT and the reason, and changes no state.
//
//   absl::StatusOr<std::unique_ptr<TelemetryServer>> server =
//       TelemetryServer::Start(core, {.address = "0.0.0.0:0"});
//   LOG << "telemetry on " << (*server)->address();      // "0.0.0.0:40123"
//   IngestStats s = (*server)->stats();                   // for /metrics
//   (*server)->Shutdown(absl::Seconds(5));                // also done by the destructor
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_TELEMETRY_SERVER_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_TELEMETRY_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/grpc_server.h"
#include "common/prometheus_text.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/ingest/ingest_pacer.h"
#include "extender/src/ingest/node_identity.h"
#include "extender/src/ingest/report_prescan.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"

namespace neighborly::extender {

// Live counters of the ingest endpoint (read with relaxed loads for /metrics).
struct IngestCounters {
  std::atomic<uint64_t> reports_accepted{0};
  std::atomic<uint64_t> reports_rejected{0};   // failed validation, or not a NodeReport at all
  std::atomic<uint64_t> reports_malformed{0};  // the subset that was not a parsable NodeReport
  std::atomic<uint64_t> streams_opened{0};     // total since start
  std::atomic<int64_t> streams_open{0};        // now
  // Refusals by the limits and identity checks (docs/security.md). The first
  // three also count in reports_rejected; the last two are whole streams.
  std::atomic<uint64_t> reports_too_large{0};        // above IngestPolicy::max_report_bytes
  std::atomic<uint64_t> reports_rate_limited{0};     // above the stream's token bucket
  std::atomic<uint64_t> reports_node_mismatch{0};    // node_name not the token's node
  std::atomic<uint64_t> streams_unauthenticated{0};  // no or invalid identity token
  std::atomic<uint64_t> streams_token_expired{0};    // token expired while streaming
  // Invalid pod records left out of otherwise accepted reports (named in the ack).
  std::atomic<uint64_t> pods_dropped{0};
  // Streams ended because the same node opened a newer one, and streams refused
  // at open because IngestPolicy::max_streams were open.
  std::atomic<uint64_t> streams_superseded{0};
  std::atomic<uint64_t> streams_over_limit{0};
  // Log lines about dropped pod records: at most one per kDroppedPodLogInterval,
  // the next line says how many were held back.
  std::atomic<int64_t> dropped_log_last_ns{INT64_MIN};
  std::atomic<uint64_t> dropped_log_suppressed{0};
};

// Appends neighborly_ingest_refused_total{reason} and
// neighborly_ingest_pods_dropped_total for /metrics.
void AppendIngestRefusals(const IngestCounters& counters, PrometheusWriter& page);

// What every stream is held to.
struct IngestPolicy {
  // nullptr: streams are not bound to a node identity.
  const TokenVerifier* identity = nullptr;
  // Token bucket per node (by its identity token's node, else the report's
  // node_name), kept across the node's streams, so that reconnecting does not
  // refill it; rate <= 0 disables it. An agent sends one report per interval
  // (1 s by default), so 5/s with a burst of 10 only stops a runaway.
  double max_reports_per_second = 5;
  double report_burst = 10;
  // A report above this is refused with RESOURCE_EXHAUSTED and counted. gRPC itself
  // drops messages above twice this (its own RESOURCE_EXHAUSTED, not counted here).
  size_t max_report_bytes = 8 << 20;
  const Clock* clock = nullptr;  // nullptr: the real clock
  // grpc.ingestScheduling: ingest threads run SCHED_IDLE (true) or only at
  // nice +10 (common/thread_priority.h).
  bool idle_ingest_threads = true;
  // Streams open at once (grpc.maxStreams); more are refused at open with
  // RESOURCE_EXHAUSTED. Per node there is one: a node's newer stream (by its
  // identity token's node, else its first report's node_name) cancels the older.
  size_t max_streams = 50'000;
  // Counts and the memory estimate every report is held to before it is
  // parsed (report_prescan.h).
  PrescanLimits prescan;
  // grpc.adaptiveInterval: ask the agents for a longer interval while the
  // ingest falls behind (ingest_pacer.h).
  IngestPacerOptions pacing;
  // allocation: carried in every ack (ReportAck.allocation_policy); nullopt:
  // acks carry none and the agents remove the groups they made.
  std::optional<telemetry::v1::AllocationPolicy> allocation_policy;
};

// The service alone (tests and embedders may register it on their own server).
// Takes raw bytes so that an unparsable message is refused with a clear
// INVALID_ARGUMENT instead of being mistaken for the end of the stream.
class TelemetryService final : public telemetry::v1::Telemetry::WithRawCallbackMethod_Report<
                                   telemetry::v1::Telemetry::Service> {
 public:
  explicit TelemetryService(ExtenderCore& core, IngestPolicy policy = {});

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Report(
      grpc::CallbackServerContext* context) override;

  const IngestCounters& counters() const { return counters_; }
  IngestPacer& pacer() { return pacer_; }
  const IngestPacer& pacer() const { return pacer_; }

  // A stream as the service sees it: valid while `context` is set (under mu).
  struct StreamHandle {
    std::mutex mu;
    grpc::CallbackServerContext* context = nullptr;  // null once the stream is done
    std::atomic<bool> superseded{false};
  };
  // Makes `stream` the one stream of `node`, cancelling the one it replaces.
  void Claim(const std::string& node, const std::shared_ptr<StreamHandle>& stream);
  // `stream` is done: forget it (if it is still its node's stream).
  void Forget(const std::string& node, const std::shared_ptr<StreamHandle>& stream);
  // After streams closed: return freed memory to the system now and then.
  void NoteStreamClosed();
  // Takes one report from `node`'s token bucket at `now`; false when empty.
  bool TakeToken(const std::string& node, absl::Time now);
  const ReportPrescanner& prescanner() const { return prescanner_; }

  // At most one log line about dropped pod records per this interval.
  static constexpr absl::Duration kDroppedPodLogInterval = absl::Seconds(10);

 private:
  ExtenderCore& core_;
  IngestPolicy policy_;
  RealClock real_clock_;
  IngestPacer pacer_;  // after real_clock_, which it may read
  IngestCounters counters_;
  std::mutex streams_mu_;
  // guarded by streams_mu_
  absl::flat_hash_map<std::string, std::shared_ptr<StreamHandle>> stream_of_node_;
  std::atomic<int64_t> last_trim_ns_{0};
  const ReportPrescanner prescanner_;
  struct Bucket {
    double tokens = 0;
    absl::Time last;
  };
  std::mutex buckets_mu_;
  // guarded by buckets_mu_; full buckets are dropped when it grows (a full one
  // is what a new node starts with).
  absl::flat_hash_map<std::string, Bucket> buckets_;
  size_t buckets_prune_at_ = 1024;
  std::atomic<uint64_t> closed_since_trim_{0};
};

class TelemetryServer {
 public:
  struct Options {
    std::string address = "0.0.0.0:9090";  // "HOST:PORT"; port 0 picks a free port
    // nullptr: plaintext (grpc::InsecureServerCredentials); mTLS is configured by the caller.
    std::shared_ptr<grpc::ServerCredentials> credentials;
    int max_receive_message_bytes = 8 << 20;  // a 1,000-pod report is well under 2 MiB
    // Identity, rate limit and clock (policy.max_report_bytes is taken from
    // max_receive_message_bytes).
    IngestPolicy policy;
  };

  // Builds and starts the server. Fails with a clear message when the address
  // is malformed or cannot be bound.
  static absl::StatusOr<std::unique_ptr<TelemetryServer>> Start(ExtenderCore& core,
                                                                Options options);

  ~TelemetryServer();  // Shutdown(absl::Seconds(5)) unless already done

  // The port actually bound, and the address with it ("0.0.0.0:40123").
  int port() const { return listening_.port; }
  const std::string& address() const { return listening_.address; }

  // Counters for /metrics (streams_open included).
  IngestStats stats() const;
  const IngestCounters& counters() const { return service_->counters(); }
  const IngestPacer& pacer() const { return service_->pacer(); }

  // Stops accepting streams, lets open ones end until `grace` has passed,
  // then cancels the rest; returns when every stream is done. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  TelemetryServer() = default;

  std::unique_ptr<TelemetryService> service_;
  ListeningGrpcServer listening_;
  std::once_flag shutdown_once_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_TELEMETRY_SERVER_H_
