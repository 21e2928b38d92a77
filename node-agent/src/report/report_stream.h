// The agent's side of Telemetry/Report: one bidirectional gRPC stream from one
// node to one extender address, used by real and simulated agents alike.
//
// Telemetry is a gauge, so the stream never queues: Offer() replaces any report
// not yet written, and after a reconnect only the newest report is (re)sent.
// The stream reconnects with capped exponential backoff and jitter, reads acks
// (an ack's interval becomes RequestedInterval()), logs once per state change
// rather than once per failure, and stops promptly.
//
//   ReportStream stream({.target = "127.0.0.1:9090", .node_name = "node-1"});
//   stream.Start();
//   stream.Offer(report);           // every window
//   stream.Stop();                  // or the destructor
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPORT_STREAM_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPORT_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "common/verified_tls_files.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"

namespace neighborly::agent {

struct ReportStreamOptions {
  std::string target;     // "host:port" of one extender
  std::string node_name;  // for logs and metrics
  // nullptr: plaintext. TLS: MakeChannelCredentials (channel_security.h).
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The checked certificate files `credentials` reads (MakeChannelCredentials).
  std::shared_ptr<VerifiedTlsFiles> tls_files;
  // The name the extender's certificate must carry when `target` is an address
  // (the agents dial every replica's IP); empty: the target's host.
  std::string server_name;
  // A projected ServiceAccount token, re-read for every connection and sent as
  // "authorization: Bearer <token>"; empty: none.
  std::string identity_token_file;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // The --extender value `target` was resolved from (logs and metrics); empty:
  // `target` itself.
  std::string target_name;
  // Called on the stream's thread whenever a stream ends or cannot be opened
  // (not for a refused report): the replica may have moved (replica_directory.h).
  std::function<void()> on_failure;
};

// Bounds applied to an interval requested in an ack.
inline constexpr absl::Duration kMinAckInterval = absl::Milliseconds(100);
inline constexpr absl::Duration kMaxAckInterval = absl::Minutes(10);

class ReportStream {
 public:
  enum class State { kIdle, kConnected, kRetrying, kStopped };

  struct Stats {
    State state = State::kIdle;
    uint64_t reports_offered = 0;
    uint64_t reports_written = 0;     // handed to gRPC on some stream
    uint64_t reports_superseded = 0;  // replaced by a newer one before being written
    uint64_t reports_refused = 0;     // streams ended by INVALID_ARGUMENT
    uint64_t auth_refusals = 0;       // streams ended by UNAUTHENTICATED or PERMISSION_DENIED
    uint64_t acks = 0;
    uint64_t last_acked_sequence = 0;
    uint64_t connects = 0;  // streams that got at least one ack
    uint64_t failures = 0;  // streams that ended without a stop
    absl::Time last_ack = absl::InfinitePast();  // when the newest ack arrived
  };

  explicit ReportStream(ReportStreamOptions options);
  ~ReportStream();  // Stop()
  ReportStream(const ReportStream&) = delete;
  ReportStream& operator=(const ReportStream&) = delete;

  void Start();
  // Makes `report` the one to send next, replacing any report not yet written.
  void Offer(telemetry::v1::NodeReport report);
  // Cancels the stream in progress and joins the worker; idempotent.
  void Stop();

  // The interval the extender asked for in its latest ack, if any (clamped to
  // [kMinAckInterval, kMaxAckInterval]).
  std::optional<absl::Duration> RequestedInterval() const;
  // The allocation policy of the latest ack (nullopt: that ack had none) and
  // when it arrived; nullopt before the first ack.
  struct AckedPolicy {
    absl::Time at = absl::InfinitePast();
    std::optional<telemetry::v1::AllocationPolicy> policy = {};
  };
  std::optional<AckedPolicy> LatestPolicy() const;
  Stats stats() const;
  const ReportStreamOptions& options() const { return options_; }
  // options().target_name, else options().target.
  const std::string& target_name() const;

 private:
  void Run();
  // One stream from open to end; returns its final status and whether an ack arrived.
  grpc::Status RunOneStream(telemetry::v1::Telemetry::Stub& stub, bool* got_ack);
  void OnAck(const telemetry::v1::ReportAck& ack);
  void SetState(State state, const std::string& detail);
  // " (a replica of TARGET)" when the address came from a name, for logs.
  std::string Via() const;
  // Waits up to `d` or until Stop(); false when stopping.
  bool SleepUnlessStopped(absl::Duration d);

  const ReportStreamOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::optional<telemetry::v1::NodeReport> pending_;       // newest, not yet written
  std::optional<telemetry::v1::NodeReport> last_written_;  // may need a resend
  bool stream_broken_ = false;
  grpc::ClientContext* active_context_ = nullptr;
  std::optional<absl::Duration> requested_interval_;
  std::optional<AckedPolicy> policy_;  // guarded by mu_
  std::string last_refusal_;
  Stats stats_;
  std::thread worker_;
};

std::string_view StateName(ReportStream::State state);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPORT_STREAM_H_
