#include "extender/src/ingest/telemetry_server.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

// One agent stream: read a report, ingest it, ack it, read the next.
class ReportReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  ReportReactor(ExtenderCore& core, IngestCounters& counters) : core_(core), counters_(counters) {
    counters_.streams_opened.fetch_add(1, std::memory_order_relaxed);
    counters_.streams_open.fetch_add(1, std::memory_order_relaxed);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent closed its side (or the call was cancelled)
      Finish(grpc::Status::OK);
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
    const absl::Status status = core_.Ingest(report_);
    if (!status.ok()) {
      counters_.reports_rejected.fetch_add(1, std::memory_order_relaxed);
      Finish(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                          std::string(status.message())));
      return;
    }
    counters_.reports_accepted.fetch_add(1, std::memory_order_relaxed);
    tv1::ReportAck ack;
    ack.set_sequence(report_.sequence());
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
    counters_.streams_open.fetch_sub(1, std::memory_order_relaxed);
    delete this;
  }

 private:
  ExtenderCore& core_;
  IngestCounters& counters_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  tv1::NodeReport report_;  // reused across reports: keeps its allocations
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* TelemetryService::Report(
    grpc::CallbackServerContext* context) {
  return new ReportReactor(core_, counters_);
}

absl::StatusOr<std::unique_ptr<TelemetryServer>> TelemetryServer::Start(ExtenderCore& core,
                                                                        Options options) {
  absl::StatusOr<HostPort> hp = ParseHostPort(options.address);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("gRPC telemetry address \"", options.address,
                                                   "\": ", hp.status().message()));
  }
  std::unique_ptr<TelemetryServer> server(new TelemetryServer());
  server->service_ = std::make_unique<TelemetryService>(core);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(
      options.address,
      options.credentials ? options.credentials : grpc::InsecureServerCredentials(),
      &selected_port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // gRPC enables SO_REUSEPORT by default: a second extender on the same port
  // would silently share it. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || selected_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC telemetry on ",
                                               options.address,
                                               " (address in use, not local, or not permitted)"));
  }
  server->port_ = selected_port;
  const bool ipv6 = hp->host.find(':') != std::string::npos;
  server->address_ = ipv6 ? absl::StrCat("[", hp->host, "]:", selected_port)
                          : absl::StrCat(hp->host, ":", selected_port);
  return server;
}

TelemetryServer::~TelemetryServer() { Shutdown(absl::Seconds(5)); }

void TelemetryServer::Shutdown(absl::Duration grace) {
  std::call_once(shutdown_once_, [&] {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::nanoseconds(absl::ToInt64Nanoseconds(grace)));
    server_->Wait();
  });
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
