#include "node-agent/src/report/report_stream.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "node-agent/src/report/channel_security.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

std::string_view CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN";
  }
}

std::string Describe(const grpc::Status& status) {
  std::string out(CodeName(status.error_code()));
  if (!status.error_message().empty()) out += ": " + status.error_message();
  return out;
}

std::chrono::nanoseconds ToChrono(absl::Duration d) {
  return std::chrono::nanoseconds(absl::ToInt64Nanoseconds(d));
}

}  // namespace

std::string_view StateName(ReportStream::State state) {
  switch (state) {
    case ReportStream::State::kIdle:
      return "idle";
    case ReportStream::State::kConnected:
      return "connected";
    case ReportStream::State::kRetrying:
      return "retrying";
    case ReportStream::State::kStopped:
      return "stopped";
  }
  return "unknown";
}

ReportStream::ReportStream(ReportStreamOptions options) : options_(std::move(options)) {}

ReportStream::~ReportStream() { Stop(); }

const std::string& ReportStream::target_name() const {
  return options_.target_name.empty() ? options_.target : options_.target_name;
}

void ReportStream::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  worker_ = std::thread([this] { Run(); });
}

void ReportStream::Offer(tv1::NodeReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.reports_offered;
  if (pending_.has_value()) ++stats_.reports_superseded;
  pending_ = std::move(report);
  cv_.notify_all();
}

void ReportStream::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (active_context_ != nullptr) active_context_->TryCancel();
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.state = State::kStopped;
}

std::optional<absl::Duration> ReportStream::RequestedInterval() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requested_interval_;
}

ReportStream::Stats ReportStream::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool ReportStream::SleepUnlessStopped(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, ToChrono(d), [this] { return stopping_; });
  return !stopping_;
}

std::string ReportStream::Via() const {
  if (options_.target_name.empty() || options_.target_name == options_.target) return "";
  return absl::StrCat(" (a replica of ", options_.target_name, ")");
}

// Called with mu_ held. Logs only transitions, so a dead extender costs one line
// per outage, not one per attempt.
void ReportStream::SetState(State state, const std::string& detail) {
  const State old = stats_.state;
  if (old == state) return;
  stats_.state = state;
  switch (state) {
    case State::kConnected:
      spdlog::info("node {}: streaming telemetry to {}{}", options_.node_name, options_.target,
                   Via());
      break;
    case State::kRetrying:
      if (old == State::kConnected) {
        spdlog::warn("node {}: stream to {}{} ended ({}); reconnecting with backoff up to {}",
                     options_.node_name, options_.target, Via(), detail,
                     absl::FormatDuration(options_.max_backoff));
      } else {
        spdlog::warn("node {}: cannot reach extender {}{} ({}); retrying with backoff up to {}",
                     options_.node_name, options_.target, Via(), detail,
                     absl::FormatDuration(options_.max_backoff));
      }
      break;
    default:
      break;
  }
}

std::optional<ReportStream::AckedPolicy> ReportStream::LatestPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_;
}

void ReportStream::OnAck(const tv1::ReportAck& ack) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.acks;
  stats_.last_ack = absl::Now();
  stats_.last_acked_sequence = std::max(stats_.last_acked_sequence, ack.sequence());
  policy_ = AckedPolicy{.at = stats_.last_ack};
  if (ack.has_allocation_policy()) policy_->policy = ack.allocation_policy();
  if (!ack.has_interval()) return;
  const absl::Duration asked =
      absl::Seconds(ack.interval().seconds()) + absl::Nanoseconds(ack.interval().nanos());
  if (asked <= absl::ZeroDuration()) {
    // Zero: the extender keeps up again; back to the agent's own interval.
    if (requested_interval_.has_value()) {
      spdlog::info("node {}: extender {} hands the interval back", options_.node_name,
                   options_.target);
      requested_interval_.reset();
    }
    return;
  }
  const absl::Duration interval = std::clamp(asked, kMinAckInterval, kMaxAckInterval);
  if (requested_interval_ != interval) {
    spdlog::info("node {}: extender {} asks for a {} interval", options_.node_name, options_.target,
                 absl::FormatDuration(interval));
    requested_interval_ = interval;
  }
}

grpc::Status ReportStream::RunOneStream(tv1::Telemetry::Stub& stub, bool* got_ack) {
  grpc::ClientContext context;
  if (!options_.identity_token_file.empty()) {
    // Read for every connection: the kubelet rotates the token in place.
    absl::StatusOr<std::string> token = ReadIdentityToken(options_.identity_token_file);
    if (!token.ok()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(token.status().message()));
    }
    context.AddMetadata("authorization", absl::StrCat("Bearer ", *token));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return grpc::Status(grpc::StatusCode::CANCELLED, "stopping");
    active_context_ = &context;
    stream_broken_ = false;
    // Resume with the newest report: the pending one, or else the last one written
    // if no ack proved it arrived (the old stream may have died with it in flight).
    if (!pending_.has_value() && last_written_.has_value() &&
        last_written_->sequence() > stats_.last_acked_sequence) {
      pending_ = std::move(last_written_);
    }
    last_written_.reset();
  }
  std::unique_ptr<grpc::ClientReaderWriter<tv1::NodeReport, tv1::ReportAck>> stream =
      stub.Report(&context);

  std::thread reader([&] {
    tv1::ReportAck ack;
    while (stream->Read(&ack)) {
      if (!*got_ack) {
        *got_ack = true;
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.connects;
        SetState(State::kConnected, "");
      }
      OnAck(ack);
    }
    std::lock_guard<std::mutex> lock(mu_);
    stream_broken_ = true;
    cv_.notify_all();
  });

  bool stopping = false;
  for (;;) {
    tv1::NodeReport report;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || stream_broken_ || pending_.has_value(); });
      if (stopping_ || stream_broken_) {
        stopping = stopping_;
        break;
      }
      report = std::move(*pending_);
      pending_.reset();
    }
    const bool ok = stream->Write(report);
    std::lock_guard<std::mutex> lock(mu_);
    if (ok) ++stats_.reports_written;
    last_written_ = std::move(report);
    if (!ok) break;
  }
  if (stopping) context.TryCancel();
  reader.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_context_ = nullptr;
  }
  return stream->Finish();
}

void ReportStream::Run() {
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff (default up to 120 s) would otherwise delay the
  // stream long after the extender is back; keep it within ours.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.initial_backoff)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.initial_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.max_backoff)));
  if (!options_.server_name.empty()) args.SetSslTargetNameOverride(options_.server_name);
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      options_.credentials != nullptr ? options_.credentials : grpc::InsecureChannelCredentials();
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options_.target, credentials, args);
  std::unique_ptr<tv1::Telemetry::Stub> stub = tv1::Telemetry::NewStub(channel);

  absl::BitGen random;
  absl::Duration backoff = options_.initial_backoff;
  for (;;) {
    bool got_ack = false;
    const grpc::Status status = RunOneStream(*stub, &got_ack);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    if (got_ack) backoff = options_.initial_backoff;
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      // The extender is up and refused one report; the next one may be fine, so
      // drop it (never resend it) and reconnect after the shortest pause.
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.reports_refused;
        last_written_.reset();
        if (status.error_message() != last_refusal_) {
          last_refusal_ = status.error_message();
          spdlog::warn("node {}: extender {} refused a report: {}", options_.node_name,
                       options_.target, status.error_message());
        }
      }
      if (!SleepUnlessStopped(options_.initial_backoff)) break;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failures;
      if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
          status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
        // Identity problems are worth a line each time they change, even while retrying.
        ++stats_.auth_refusals;
        if (status.error_message() != last_refusal_) {
          last_refusal_ = status.error_message();
          spdlog::error("node {}: extender {} refused the stream: {}", options_.node_name,
                        options_.target, Describe(status));
        }
      }
      SetState(State::kRetrying, Describe(status));
    }
    if (options_.on_failure) options_.on_failure();
    const absl::Duration pause = backoff * absl::Uniform(random, 0.5, 1.0);
    backoff = std::min(backoff * 2, options_.max_backoff);
    if (!SleepUnlessStopped(pause)) break;
  }
  spdlog::debug("node {}: stream to {} stopped", options_.node_name, options_.target);
}

}  // namespace neighborly::agent
