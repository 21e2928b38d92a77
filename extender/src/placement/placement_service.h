// The placement service: neighborly.placement.v1.Placement, the scheduler
// framework plugin's way into the extender (proto/neighborly/placement/v1,
// docs/api.md "Placement service"). One call per extension point per pod:
//
//   Filter     refusals over every node with telemetry (or the named nodes),
//              with /filter's reasons
//   Score      0..10 per named node, as /prioritize, booking nothing
//   Reserve    books the pod's footprint on the node the scheduler picked
//   Unreserve  releases that booking
//   Verdicts   a stream: per subscribed pod shape, the verdicts on every node
//              and their changes; bookings on the stream (verdict_stream.h)
//
// Served with gRPC's synchronous API on the server's own threads: the
// telemetry ingest lowers the priority of every thread its callbacks run on
// (common/thread_priority.h), and gRPC's callback threads are shared by every
// callback service in the process, so a callback-API placement service would
// end up answering the scheduler from SCHED_IDLE threads.
//
//   absl::StatusOr<std::unique_ptr<PlacementServer>> server = PlacementServer::Start(
//       core, {.address = "0.0.0.0:9091", .credentials = tls.credentials}, &metrics);
//   LOG << (*server)->address();           // "0.0.0.0:9091"
//   (*server)->Shutdown(absl::Seconds(5));  // also done by the destructor
#ifndef NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_SERVICE_H_
#define NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_SERVICE_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/grpc_server.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/placement/placement_metrics.h"
#include "extender/src/placement/pod_from_proto.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/placement/v1/placement.grpc.pb.h"

namespace neighborly::extender {

class PlacementService final : public placement::v1::Placement::Service {
 public:
  struct Options {
    PlacementLimits limits;
    // Whether a caller without a verified client certificate may teach the
    // registry (state.learnFromUnauthenticatedScheduler). A caller with one
    // always may: it is the authenticated scheduler (docs/security.md).
    bool learn_from_unauthenticated = false;
    // What "now" is when a call's deadline is checked; nullptr: the real
    // clock (tests move it past a deadline to see the refusal).
    const Clock* deadline_clock = nullptr;
    // The Verdicts stream's bounds (verdict_stream.h; placement.verdicts.*).
    size_t verdicts_max_shapes = 16;
    absl::Duration verdicts_refresh = absl::Milliseconds(50);
  };
  // `metrics` may be null.
  PlacementService(ExtenderCore& core, Options options, PlacementMetrics* metrics);

  grpc::Status Filter(grpc::ServerContext* context, const placement::v1::FilterRequest* request,
                      placement::v1::FilterResponse* response) override;
  grpc::Status Score(grpc::ServerContext* context, const placement::v1::ScoreRequest* request,
                     placement::v1::ScoreResponse* response) override;
  grpc::Status Reserve(grpc::ServerContext* context, const placement::v1::ReserveRequest* request,
                       placement::v1::ReserveResponse* response) override;
  grpc::Status Unreserve(grpc::ServerContext* context,
                         const placement::v1::UnreserveRequest* request,
                         placement::v1::UnreserveResponse* response) override;
  // Issue 25: one long-lived stream of verdict tables (verdict_stream.h).
  grpc::Status Verdicts(grpc::ServerContext* context,
                        grpc::ServerReaderWriter<placement::v1::VerdictsUpdate,
                                                 placement::v1::VerdictsRequest>* stream) override;

 private:
  // What one call needs, reused by the next (a 5,000-node Filter's decisions
  // are ~1 MiB that would otherwise be allocated per call).
  struct Scratch {
    IncomingPod pod;
    std::vector<std::string_view> names;
    std::vector<NodeDecision> decisions;
  };
  std::unique_ptr<Scratch> Acquire();
  void Release(std::unique_ptr<Scratch> scratch);

  bool Teaches(const grpc::ServerContext& context) const;
  // A call whose deadline passed before it was taken up is answered without work.
  bool Expired(const grpc::ServerContext& context) const;

  ExtenderCore& core_;
  const Options options_;
  PlacementMetrics* metrics_;
  RealClock real_clock_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Scratch>> free_;  // guarded by mu_
};

class PlacementServer {
 public:
  struct Options {
    std::string address = "0.0.0.0:9091";  // "HOST:PORT"; port 0 picks a free port
    // nullptr: plaintext. mTLS: MakeServerCredentials (ingest/transport_security.h).
    std::shared_ptr<grpc::ServerCredentials> credentials;
    // The largest request accepted (http.bodyLimitBytes): 50,000 node names
    // of 253 bytes are 13 MB.
    int max_receive_message_bytes = 64 << 20;
    // Threads that answer calls at most (gRPC's synchronous server starts
    // them as calls come); the HTTP port's worker count.
    int max_threads = 64;
    PlacementService::Options service;
  };

  // Builds and starts the server; fails with a clear message when the address
  // is malformed or cannot be bound. `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<PlacementServer>> Start(ExtenderCore& core, Options options,
                                                                PlacementMetrics* metrics);
  ~PlacementServer();  // Shutdown(absl::Seconds(5)) unless already done

  int port() const { return listening_.port; }
  const std::string& address() const { return listening_.address; }

  // Stops accepting calls, lets those in flight finish until `grace`, then
  // cancels the rest. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  PlacementServer() = default;
  std::unique_ptr<PlacementService> service_;
  ListeningGrpcServer listening_;
  std::once_flag shutdown_once_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_PLACEMENT_PLACEMENT_SERVICE_H_
