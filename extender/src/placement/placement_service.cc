#include "extender/src/placement/placement_service.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "common/host_port.h"
#include "extender/src/placement/verdict_stream.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/auth_context.h"

namespace neighborly::extender {
namespace {

namespace pv1 = ::neighborly::placement::v1;

// Names from which ExtenderCore shares a request's evaluation with its helper
// threads (its kParallelMinNodes).
constexpr int kLargeRequestNames = 1024;

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// Records the call's outcome and latency when it ends.
class CallRecord {
 public:
  CallRecord(PlacementMetrics* metrics, PlacementMethod method)
      : metrics_(metrics), method_(method), start_(std::chrono::steady_clock::now()) {}
  grpc::Status Finish(grpc::Status status) {
    if (metrics_ != nullptr) {
      metrics_->Record(method_, static_cast<int>(status.error_code()),
                       absl::FromChrono(std::chrono::steady_clock::now() - start_));
    }
    return status;
  }

 private:
  PlacementMetrics* metrics_;
  PlacementMethod method_;
  std::chrono::steady_clock::time_point start_;
};

grpc::Status ExpiredStatus() {
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      "the call's deadline had passed when the extender took it up; nothing was "
                      "evaluated");
}

// FilterResponse.scores_in_order's byte for a refused node.
constexpr unsigned char kRefusedInOrder = 255;

// A node's score as Score answers it (and Filter, when asked with_scores).
void SetScore(std::string_view node, const NodeDecision& d, pv1::NodeScore& score) {
  score.set_node_name(node.data(), node.size());
  score.set_score(std::clamp(d.score, 0, 10));  // as /prioritize
  score.set_cost(d.cost);
  score.set_has_telemetry(d.has_telemetry);
}

}  // namespace

PlacementService::PlacementService(ExtenderCore& core, Options options, PlacementMetrics* metrics)
    : core_(core), options_(std::move(options)), metrics_(metrics) {}

std::unique_ptr<PlacementService::Scratch> PlacementService::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<Scratch> scratch = std::move(free_.back());
      free_.pop_back();
      return scratch;
    }
  }
  return std::make_unique<Scratch>();
}

void PlacementService::Release(std::unique_ptr<Scratch> scratch) {
  // Keep up to one scratch per thread that could use it; a scratch that grew
  // past 50,000 decisions (a hostile or mistaken request) is freed.
  if (scratch->decisions.capacity() > options_.limits.max_node_names) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() < 64) free_.push_back(std::move(scratch));
}

// The scheduler has moved on (its plugin failed open): any work would be wasted.
bool PlacementService::Expired(const grpc::ServerContext& context) const {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return false;
  const Clock& clock = options_.deadline_clock != nullptr ? *options_.deadline_clock : real_clock_;
  return absl::FromChrono(deadline) <= clock.Now();
}

bool PlacementService::Teaches(const grpc::ServerContext& context) const {
  if (options_.learn_from_unauthenticated) return true;
  // With placement.tls the handshake has verified the client certificate
  // against the CA: every call on such a connection is the scheduler's.
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return auth != nullptr && auth->IsPeerAuthenticated();
}

grpc::Status PlacementService::Filter(grpc::ServerContext* context,
                                      const pv1::FilterRequest* request,
                                      pv1::FilterResponse* response) {
  CallRecord record(metrics_, PlacementMethod::kFilter);
  if (Expired(*context)) return record.Finish(ExpiredStatus());
  // As on the HTTP path: helpers for a large request wake while the pod is converted.
  if (request->node_names_size() >= kLargeRequestNames) core_.ExpectLargeRequest();
  if (!request->has_pod()) {
    return record.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod is missing"));
  }
  std::unique_ptr<Scratch> scratch = Acquire();
  Scratch& s = *scratch;
  absl::Status status = PodFromProto(request->pod(), options_.limits, s.pod);
  if (status.ok() && !request->node_names().empty()) {
    status = NodeNamesFromProto(request->node_names(), "node_names", options_.limits, s.names);
  }
  if (!status.ok()) {
    Release(std::move(scratch));
    return record.Finish(ToGrpc(status));
  }
  if (request->node_names().empty()) {
    core_.FilterKnownNodes(s.pod, Teaches(*context), s.names, s.decisions);
  } else {
    core_.FilterNodes(s.pod, s.names, Teaches(*context), s.decisions);
  }
  // Scores one byte a node, in the request's order, where the plugin asks
  // (its windowed Filter: no NodeScore message per feasible node to encode
  // here and decode there).
  std::string* in_order = nullptr;
  if (request->with_scores() && request->scores_in_order() && !request->node_names().empty()) {
    in_order = response->mutable_scores_in_order();
    in_order->assign(s.names.size(), static_cast<char>(kRefusedInOrder));
  }
  for (size_t i = 0; i < s.names.size(); ++i) {
    const NodeDecision& d = s.decisions[i];
    if (d.feasible) {
      if (in_order != nullptr) {
        (*in_order)[i] = static_cast<char>(std::clamp(d.score, 0, 10));  // as /prioritize
      } else if (request->with_scores()) {
        SetScore(s.names[i], d, *response->add_scores());
      }
      continue;
    }
    pv1::NodeRefusal* refusal = response->add_refused();
    refusal->set_node_name(s.names[i].data(), s.names[i].size());
    refusal->set_reason(d.reason);
  }
  response->set_nodes_judged(static_cast<uint32_t>(s.names.size()));
  Release(std::move(scratch));
  return record.Finish(grpc::Status::OK);
}

grpc::Status PlacementService::Score(grpc::ServerContext* context, const pv1::ScoreRequest* request,
                                     pv1::ScoreResponse* response) {
  CallRecord record(metrics_, PlacementMethod::kScore);
  if (Expired(*context)) return record.Finish(ExpiredStatus());
  if (request->node_names_size() >= kLargeRequestNames) core_.ExpectLargeRequest();
  if (!request->has_pod()) {
    return record.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod is missing"));
  }
  std::unique_ptr<Scratch> scratch = Acquire();
  Scratch& s = *scratch;
  absl::Status status = PodFromProto(request->pod(), options_.limits, s.pod);
  if (status.ok()) {
    status = NodeNamesFromProto(request->node_names(), "node_names", options_.limits, s.names);
  }
  if (!status.ok()) {
    Release(std::move(scratch));
    return record.Finish(ToGrpc(status));
  }
  core_.Score(s.pod, s.names, Teaches(*context), s.decisions);
  response->mutable_scores()->Reserve(static_cast<int>(s.names.size()));
  for (size_t i = 0; i < s.names.size(); ++i) {
    SetScore(s.names[i], s.decisions[i], *response->add_scores());
  }
  Release(std::move(scratch));
  return record.Finish(grpc::Status::OK);
}

grpc::Status PlacementService::Reserve(grpc::ServerContext* context,
                                       const pv1::ReserveRequest* request,
                                       pv1::ReserveResponse* response) {
  CallRecord record(metrics_, PlacementMethod::kReserve);
  if (Expired(*context)) return record.Finish(ExpiredStatus());
  if (!request->has_pod()) {
    return record.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod is missing"));
  }
  if (request->node_name().empty()) {
    return record.Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node_name is empty"));
  }
  if (request->node_name().size() > options_.limits.max_name_bytes) {
    return record.Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("node_name is ", request->node_name().size(), " bytes, at most ",
                                  options_.limits.max_name_bytes)));
  }
  std::unique_ptr<Scratch> scratch = Acquire();
  absl::Status status = PodFromProto(request->pod(), options_.limits, scratch->pod);
  if (status.ok()) {
    response->set_booked(core_.Reserve(scratch->pod, request->node_name(), Teaches(*context)));
  }
  Release(std::move(scratch));
  return record.Finish(ToGrpc(status));
}

grpc::Status PlacementService::Unreserve(grpc::ServerContext* context,
                                         const pv1::UnreserveRequest* request,
                                         pv1::UnreserveResponse* response) {
  CallRecord record(metrics_, PlacementMethod::kUnreserve);
  if (Expired(*context)) return record.Finish(ExpiredStatus());
  if (request->pod_uid().empty() || request->pod_uid().size() > options_.limits.max_uid_bytes) {
    return record.Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     request->pod_uid().empty()
                         ? std::string("pod_uid is empty")
                         : absl::StrCat("pod_uid is ", request->pod_uid().size(),
                                        " bytes, at most ", options_.limits.max_uid_bytes)));
  }
  if (request->node_name().empty() ||
      request->node_name().size() > options_.limits.max_name_bytes) {
    return record.Finish(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     request->node_name().empty()
                         ? std::string("node_name is empty")
                         : absl::StrCat("node_name is ", request->node_name().size(),
                                        " bytes, at most ", options_.limits.max_name_bytes)));
  }
  response->set_released(core_.Unreserve(request->pod_uid(), request->node_name()));
  return record.Finish(grpc::Status::OK);
}

grpc::Status PlacementService::Verdicts(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<pv1::VerdictsUpdate, pv1::VerdictsRequest>* stream) {
  VerdictStream::Options options;
  options.limits = options_.limits;
  options.max_shapes = options_.verdicts_max_shapes;
  options.refresh = options_.verdicts_refresh;
  options.teach = Teaches(*context);
  VerdictStream verdicts(core_, std::move(options), metrics_);
  return verdicts.Run(context, stream);
}

absl::StatusOr<std::unique_ptr<PlacementServer>> PlacementServer::Start(ExtenderCore& core,
                                                                        Options options,
                                                                        PlacementMetrics* metrics) {
  absl::StatusOr<HostPort> hp = ParseHostPort(options.address);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement address \"", options.address, "\": ", hp.status().message()));
  }
  if (options.max_receive_message_bytes <= 0 || options.max_threads < 2) {
    return absl::InvalidArgumentError(
        "placement server: the largest message must be at least 1 byte and at least 2 threads "
        "are needed");
  }
  std::unique_ptr<PlacementServer> server(new PlacementServer());
  server->service_ = std::make_unique<PlacementService>(core, options.service, metrics);
  grpc::ServerBuilder builder;
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // The synchronous server's threads: started as calls come, at most this many.
  grpc::ResourceQuota quota("neighborly-placement");
  quota.SetMaxThreads(options.max_threads);
  builder.SetResourceQuota(quota);
  // One long-lived connection per scheduler: the server pings it every 30 s
  // when idle (a vanished scheduler's connection is closed after 10 s more),
  // and accepts the client's own keepalive pings down to every 10 s, with or
  // without calls in flight (a faster client is told GOAWAY by gRPC).
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  absl::StatusOr<ListeningGrpcServer> listening =
      BuildAndListen(builder, options.address, hp->host, options.credentials, "placement calls");
  if (!listening.ok()) return listening.status();
  server->listening_ = *std::move(listening);
  return server;
}

PlacementServer::~PlacementServer() { Shutdown(absl::Seconds(5)); }

void PlacementServer::Shutdown(absl::Duration grace) {
  std::call_once(shutdown_once_, [&] { StopGrpcServer(listening_.server.get(), grace); });
}

}  // namespace neighborly::extender
