#include "extender/src/ingest/telemetry_server.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "common/host_port.h"
#include "common/memory_release.h"
#include "common/strings.h"
#include "common/thread_priority.h"
#include "extender/src/ingest/protobuf_log.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

// The stream's "authorization: Bearer <jwt>" metadata, verified.
absl::StatusOr<NodeIdentity> VerifyBearer(const TokenVerifier& verifier,
                                          const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto range = metadata.equal_range("authorization");
  if (range.first == range.second) {
    return absl::UnauthenticatedError(
        "no \"authorization: Bearer <token>\" metadata (the agent's --identity-token-file)");
  }
  if (std::next(range.first) != range.second) {
    return absl::UnauthenticatedError("more than one authorization metadata entry");
  }
  const std::string_view value(range.first->second.data(), range.first->second.size());
  constexpr std::string_view kScheme = "Bearer ";
  if (value.size() < kScheme.size() ||
      !EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError("authorization metadata is not \"Bearer <token>\"");
  }
  return verifier.Verify(Trim(value.substr(kScheme.size())));
}

// A stream refused before its first read (no valid identity token).
class RefusedReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// One agent stream: read a report, check it against the stream's limits and
// identity, ingest it, ack it, read the next.
class ReportReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  ReportReactor(TelemetryService& service, grpc::CallbackServerContext* context, ExtenderCore& core,
                IngestCounters& counters, const IngestPolicy& policy, const Clock& clock,
                std::optional<NodeIdentity> identity, std::string peer)
      : service_(service),
        handle_(std::make_shared<TelemetryService::StreamHandle>()),
        core_(core),
        counters_(counters),
        policy_(policy),
        clock_(clock),
        identity_(std::move(identity)),
        peer_(std::move(peer)) {
    counters_.streams_opened.fetch_add(1, std::memory_order_relaxed);
    handle_->context = context;
    // With an identity the node is known now: this stream supersedes the node's older one.
    if (identity_.has_value()) ClaimNode(identity_->node_name);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    // Ingest yields the CPU to the scheduling path (common/thread_priority.h).
    LowerThisThreadPriority(kIngestNiceIncrement, policy_.idle_ingest_threads);
    if (!ok) {  // the agent closed its side (or the call was cancelled)
      Finish(handle_->superseded.load()
                 ? grpc::Status(grpc::StatusCode::ABORTED,
                                "superseded by a newer stream for the same node")
                 : grpc::Status::OK);
      return;
    }
    if (handle_->superseded.load()) {
      Finish(grpc::Status(grpc::StatusCode::ABORTED,
                          "superseded by a newer stream for the same node"));
      return;
    }
    if (const size_t bytes = request_.Length(); bytes > policy_.max_report_bytes) {
      Refuse(counters_.reports_too_large,
             grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("report of ", bytes, " bytes exceeds the limit of ",
                                       policy_.max_report_bytes, " bytes (grpc.maxReportBytes)")));
      return;
    }
    if (identity_.has_value() && clock_.Now() > identity_->expires + kExpiryGrace) {
      counters_.streams_token_expired.fetch_add(1, std::memory_order_relaxed);
      Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "identity token expired during the stream; reconnect with a fresh one"));
      return;
    }
    // Before anything is parsed (issue 24): the identity, the node's rate and
    // what the parsed report would cost, from one walk over the wire bytes.
    absl::StatusOr<Prescan> scan;
    {
      grpc::ProtoBufferReader reader(&request_);
      scan = service_.prescanner().Scan(&reader, request_.Length());
    }
    if (!scan.ok()) {
      counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
      counters_.reports_malformed.fetch_add(1, std::memory_order_relaxed);
      Finish(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(scan.status().message())));
      return;
    }
    if (identity_.has_value() && scan->node_name != identity_->node_name) {
      spdlog::warn(
          "telemetry from {} refused: its identity token is for node \"{}\" ({}) but the report "
          "is for node \"{}\"",
          peer_, identity_->node_name, identity_->subject, Clip(scan->node_name));
      Refuse(counters_.reports_node_mismatch,
             grpc::Status(
                 grpc::StatusCode::PERMISSION_DENIED,
                 absl::StrCat("this stream may report only for node \"", identity_->node_name,
                              "\" (its identity token), not \"", Clip(scan->node_name), "\"")));
      return;
    }
    const std::string& bucket = identity_.has_value() ? identity_->node_name
                                : claimed_node_.empty() ? scan->node_name
                                                        : claimed_node_;
    if (policy_.max_reports_per_second > 0 && !service_.TakeToken(bucket, clock_.Now())) {
      Refuse(counters_.reports_rate_limited,
             grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("more than ", policy_.max_reports_per_second,
                                       " reports per second for node \"", Clip(bucket),
                                       "\" (burst ", policy_.report_burst,
                                       ", across its streams; grpc.maxReportsPerSecond); "
                                       "reconnect later")));
      return;
    }
    if (!scan->refusal.ok()) {
      const bool too_large = scan->refusal.code() == absl::StatusCode::kResourceExhausted;
      if (too_large) {
        counters_.reports_too_large.fetch_add(1, std::memory_order_relaxed);
      }
      counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
      Finish(grpc::Status(static_cast<grpc::StatusCode>(scan->refusal.code()),
                          std::string(scan->refusal.message())));
      return;
    }
    if (!grpc::SerializationTraits<tv1::NodeReport>::Deserialize(&request_, &report_).ok()) {
      counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
      counters_.reports_malformed.fetch_add(1, std::memory_order_relaxed);
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "malformed NodeReport: the message is not a valid "
                          "neighborly.telemetry.v1.NodeReport protobuf"));
      return;
    }
    // The prescan read the same node_name the parse did.
    const uint64_t sequence = report_.sequence();
    const std::string node = report_.node_name();
    const absl::Duration window = absl::Seconds(report_.window_duration().seconds()) +
                                  absl::Nanoseconds(report_.window_duration().nanos());
    const absl::Time window_end = absl::FromUnixSeconds(report_.window_start().seconds()) +
                                  absl::Nanoseconds(report_.window_start().nanos()) + window;
    // Without an identity the first report names the node.
    if (claimed_node_.empty()) ClaimNode(node);
    dropped_.clear();
    // Handed over, not copied; the next message is parsed into a fresh report_.
    const absl::Status status = core_.Ingest(std::move(report_), &dropped_);
    report_.Clear();
    if (!status.ok()) {
      counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
      Finish(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                          std::string(status.message())));
      return;
    }
    counters_.reports_accepted.fetch_add(1, std::memory_order_relaxed);
    tv1::ReportAck ack;
    ack.set_sequence(sequence);
    if (policy_.allocation_policy) {
      *ack.mutable_allocation_policy() = *policy_.allocation_policy;
      // The model's class of each of the node's pods: the agent caps an
      // unlabelled streamer the model calls batch, not only annotated ones.
      core_.PodClasses(node, ack.mutable_allocation_policy()->mutable_pods());
    }
    if (const std::optional<absl::Duration> ask = service_.pacer().Observe(window_end, window)) {
      const int64_t ns = absl::ToInt64Nanoseconds(*ask);
      ack.mutable_interval()->set_seconds(ns / 1'000'000'000);
      ack.mutable_interval()->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
    }
    if (!dropped_.empty()) {
      counters_.pods_dropped.fetch_add(dropped_.size(), std::memory_order_relaxed);
      for (const InvalidPod& pod : dropped_) {
        tv1::DroppedPod* d = ack.add_dropped_pods();
        d->set_index(pod.index);
        d->set_uid(pod.uid);
        d->set_reason(pod.reason);
      }
      LogDroppedPods(node);
    }
    bool own_buffer = false;
    response_.Clear();
    if (!grpc::SerializationTraits<tv1::ReportAck>::Serialize(ack, &response_, &own_buffer).ok()) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "cannot encode ReportAck"));
      return;
    }
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "cannot send ReportAck"));
      return;
    }
    request_.Clear();
    StartRead(&request_);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(handle_->mu);
      handle_->context = nullptr;
    }
    if (!claimed_node_.empty()) service_.Forget(claimed_node_, handle_);
    counters_.streams_open.fetch_sub(1, std::memory_order_relaxed);
    TelemetryService& service = service_;
    delete this;
    service.NoteStreamClosed();
  }

 private:
  // Tokens within the verifier's leeway are accepted at open; a stream outlives
  // its token by at most this before it must reconnect with the rotated one.
  static constexpr absl::Duration kExpiryGrace = absl::Seconds(30);

  static std::string Clip(const std::string& name) {
    return name.size() <= 253 ? name : absl::StrCat(name.substr(0, 253), "...");
  }

  void Refuse(std::atomic<uint64_t>& reason, const grpc::Status& status) {
    reason.fetch_add(1, std::memory_order_relaxed);
    counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
    Finish(status);
  }

  // One line per TelemetryService::kDroppedPodLogInterval at most, process-wide:
  // a node sending a bad record every second cannot flood the log.
  void LogDroppedPods(const std::string& node) {
    const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
    int64_t last = counters_.dropped_log_last_ns.load(std::memory_order_relaxed);
    const int64_t interval_ns = absl::ToInt64Nanoseconds(TelemetryService::kDroppedPodLogInterval);
    if ((last != INT64_MIN && now_ns - last < interval_ns) ||
        !counters_.dropped_log_last_ns.compare_exchange_strong(last, now_ns)) {
      counters_.dropped_log_suppressed.fetch_add(dropped_.size(), std::memory_order_relaxed);
      return;
    }
    const uint64_t held = counters_.dropped_log_suppressed.exchange(0);
    spdlog::warn(
        "telemetry from node \"{}\" ({}): {} invalid pod record(s) dropped, the rest of the "
        "report accepted; first: uid \"{}\": {}{}",
        Clip(node), peer_, dropped_.size(), dropped_.front().uid, dropped_.front().reason,
        held == 0
            ? std::string()
            : absl::StrCat(" (", held, " more dropped records not logged since the last line)"));
  }

  void ClaimNode(const std::string& node) {
    claimed_node_ = node;
    service_.Claim(node, handle_);
  }

  TelemetryService& service_;
  const std::shared_ptr<TelemetryService::StreamHandle> handle_;
  std::string claimed_node_;  // the node whose one stream this is
  ExtenderCore& core_;
  IngestCounters& counters_;
  const IngestPolicy& policy_;
  const Clock& clock_;
  const std::optional<NodeIdentity> identity_;
  const std::string peer_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  tv1::NodeReport report_;  // reused across reports: keeps its allocations
  std::vector<InvalidPod> dropped_;
};

}  // namespace

TelemetryService::TelemetryService(ExtenderCore& core, IngestPolicy policy)
    : core_(core),
      policy_(policy),
      pacer_(policy_.pacing, policy_.clock != nullptr ? *policy_.clock : real_clock_),
      prescanner_(policy.prescan) {
  // Malformed reports must not flood the log through protobuf's own messages.
  static std::once_flag installed;
  std::call_once(installed, [] { InstallProtobufLogLimiter(); });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* TelemetryService::Report(
    grpc::CallbackServerContext* context) {
  LowerThisThreadPriority(kIngestNiceIncrement, policy_.idle_ingest_threads);
  const Clock& clock = policy_.clock != nullptr ? *policy_.clock : real_clock_;
  std::optional<NodeIdentity> identity;
  if (policy_.identity != nullptr) {
    absl::StatusOr<NodeIdentity> verified = VerifyBearer(*policy_.identity, *context);
    if (!verified.ok()) {
      counters_.streams_unauthenticated.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("telemetry stream from {} refused: {}", context->peer(),
                   std::string(verified.status().message()));
      return new RefusedReactor(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                             std::string(verified.status().message())));
    }
    identity = std::move(*verified);
  }
  // The global cap, counted before the stream exists.
  if (counters_.streams_open.fetch_add(1, std::memory_order_relaxed) >=
      static_cast<int64_t>(policy_.max_streams)) {
    counters_.streams_open.fetch_sub(1, std::memory_order_relaxed);
    counters_.streams_over_limit.fetch_add(1, std::memory_order_relaxed);
    return new RefusedReactor(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat(policy_.max_streams, " telemetry streams are open (grpc.maxStreams)")));
  }
  return new ReportReactor(*this, context, core_, counters_, policy_, clock, std::move(identity),
                           context->peer());
}

void TelemetryService::Claim(const std::string& node, const std::shared_ptr<StreamHandle>& stream) {
  std::shared_ptr<StreamHandle> older;
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    std::shared_ptr<StreamHandle>& slot = stream_of_node_[node];
    if (slot == stream) return;
    older = std::exchange(slot, stream);
  }
  if (older == nullptr) return;
  older->superseded.store(true);
  counters_.streams_superseded.fetch_add(1, std::memory_order_relaxed);
  // Cancelled now, so that a silent older stream does not linger; its
  // reactions run after this one returns (gRPC defers them).
  std::lock_guard<std::mutex> lock(older->mu);
  if (older->context != nullptr) older->context->TryCancel();
}

void TelemetryService::Forget(const std::string& node,
                              const std::shared_ptr<StreamHandle>& stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = stream_of_node_.find(node);
  if (it != stream_of_node_.end() && it->second == stream) stream_of_node_.erase(it);
}

bool TelemetryService::TakeToken(const std::string& node, absl::Time now) {
  std::lock_guard<std::mutex> lock(buckets_mu_);
  const double rate = policy_.max_reports_per_second;
  const double burst = policy_.report_burst;
  auto refill = [&](Bucket& b) {
    const double elapsed_s = std::max(0.0, absl::ToDoubleSeconds(now - b.last));
    b.last = now;
    b.tokens = std::min(burst, b.tokens + elapsed_s * rate);
  };
  if (buckets_.size() >= buckets_prune_at_ && !buckets_.contains(node)) {
    // A full bucket is what a new node gets: dropping those forgets nothing.
    absl::erase_if(buckets_, [&](auto& entry) {
      refill(entry.second);
      return entry.second.tokens >= burst;
    });
    buckets_prune_at_ = std::max<size_t>(1024, 2 * buckets_.size());
  }
  auto [it, inserted] = buckets_.try_emplace(node, Bucket{.tokens = burst, .last = now});
  Bucket& bucket = it->second;
  if (!inserted) refill(bucket);
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

void TelemetryService::NoteStreamClosed() {
  // Thousands of closed streams leave their buffers in malloc's free lists
  // (8,000 streams: +152 MB that stayed). Give them back at most every 10 s,
  // once 64 streams or more have closed since the last time.
  if (closed_since_trim_.fetch_add(1, std::memory_order_relaxed) + 1 < 64) return;
  const int64_t now_ns = absl::ToUnixNanos(absl::Now());
  int64_t last = last_trim_ns_.load(std::memory_order_relaxed);
  if (now_ns - last < absl::ToInt64Nanoseconds(absl::Seconds(10)) ||
      !last_trim_ns_.compare_exchange_strong(last, now_ns)) {
    return;
  }
  closed_since_trim_.store(0, std::memory_order_relaxed);
  ReleaseFreeMemory();
}

void AppendIngestRefusals(const IngestCounters& c, PrometheusWriter& page) {
  const uint64_t too_large = c.reports_too_large.load(std::memory_order_relaxed);
  const uint64_t rate_limited = c.reports_rate_limited.load(std::memory_order_relaxed);
  const uint64_t node_mismatch = c.reports_node_mismatch.load(std::memory_order_relaxed);
  const uint64_t malformed = c.reports_malformed.load(std::memory_order_relaxed);
  const uint64_t rejected = c.reports_rejected.load(std::memory_order_relaxed);
  const uint64_t accounted = too_large + rate_limited + node_mismatch + malformed;
  const std::pair<const char*, uint64_t> reasons[] = {
      {"invalid", rejected > accounted ? rejected - accounted : 0},
      {"malformed", malformed},
      {"too_large", too_large},
      {"rate_limited", rate_limited},
      {"node_mismatch", node_mismatch},
      {"unauthenticated", c.streams_unauthenticated.load(std::memory_order_relaxed)},
      {"token_expired", c.streams_token_expired.load(std::memory_order_relaxed)},
      {"superseded", c.streams_superseded.load(std::memory_order_relaxed)},
      {"too_many_streams", c.streams_over_limit.load(std::memory_order_relaxed)},
  };
  for (const auto& [reason, count] : reasons) {
    page.Counter("neighborly_ingest_refused_total",
                 "Telemetry refused, by reason: reports (invalid, malformed, too_large, "
                 "rate_limited, node_mismatch) or whole streams (unauthenticated, token_expired, "
                 "superseded by the node's newer stream, too_many_streams).",
                 {{"reason", reason}}, static_cast<double>(count));
  }
  page.Counter("neighborly_ingest_pods_dropped_total",
               "Invalid pod records left out of otherwise accepted reports (each named in the "
               "report's ack).",
               {}, static_cast<double>(c.pods_dropped.load(std::memory_order_relaxed)));
}

absl::StatusOr<std::unique_ptr<TelemetryServer>> TelemetryServer::Start(ExtenderCore& core,
                                                                        Options options) {
  absl::StatusOr<HostPort> hp = ParseHostPort(options.address);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gRPC telemetry address \"", options.address, "\": ", hp.status().message()));
  }
  std::unique_ptr<TelemetryServer> server(new TelemetryServer());
  IngestPolicy policy = options.policy;
  if (options.max_receive_message_bytes <= 0) {
    return absl::InvalidArgumentError("the largest telemetry report must be at least 1 byte");
  }
  policy.max_report_bytes = static_cast<size_t>(options.max_receive_message_bytes);
  server->service_ = std::make_unique<TelemetryService>(core, policy);
  grpc::ServerBuilder builder;
  builder.RegisterService(server->service_.get());
  // Twice the limit, so that reports up to it are refused (and counted) by the
  // service with a clear message instead of by gRPC's transport.
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<int64_t>(int64_t{options.max_receive_message_bytes} * 2, INT32_MAX)));
  // Bound what an agent can have in flight beyond what ingest has read: with
  // BDP probing the per-stream window grows to megabytes, and when ingest falls
  // behind, 5,000 streams' unread reports piled up in transport buffers (RSS
  // +400 MiB in 10 minutes in bench/soak_load). Reports are ~15 KB; 64 KiB of
  // lookahead keeps a few per stream and still streams a 1,000-pod report.
  // Identity tokens may be up to kMaxTokenBytes (16 KiB); gRPC's default
  // metadata limit (8 KiB) refused them above ~8 KB with its own error.
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, static_cast<int>(kMaxTokenBytes + 8192));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 * 1024);
  // BuildAndListen refuses a port another extender holds (no SO_REUSEPORT).
  absl::StatusOr<ListeningGrpcServer> listening =
      BuildAndListen(builder, options.address, hp->host, options.credentials, "gRPC telemetry");
  if (!listening.ok()) return listening.status();
  server->listening_ = *std::move(listening);
  return server;
}

TelemetryServer::~TelemetryServer() { Shutdown(absl::Seconds(5)); }

void TelemetryServer::Shutdown(absl::Duration grace) {
  std::call_once(shutdown_once_, [&] { StopGrpcServer(listening_.server.get(), grace); });
}

IngestStats TelemetryServer::stats() const {
  const IngestCounters& c = service_->counters();
  IngestStats s;
  s.reports_accepted = c.reports_accepted.load(std::memory_order_relaxed);
  s.reports_rejected = c.reports_rejected.load(std::memory_order_relaxed);
  s.streams_open = static_cast<uint64_t>(std::max<int64_t>(0, c.streams_open.load()));
  return s;
}

}  // namespace neighborly::extender
