// The extender's gRPC servers (the agents' telemetry, the scheduler plugin's
// placement calls) listen and stop the same way: one address, refused rather
// than shared when another process holds it (gRPC sets SO_REUSEPORT by
// default), an error naming the address, a bounded grace at shutdown.
//
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&service);  // and the server's own arguments
//   absl::StatusOr<ListeningGrpcServer> s =
//       BuildAndListen(builder, "0.0.0.0:9090", "0.0.0.0", credentials, "gRPC telemetry");
//   ...
//   StopGrpcServer(s->server.get(), absl::Seconds(5));
#ifndef NEIGHBORLY_COMMON_GRPC_SERVER_H_
#define NEIGHBORLY_COMMON_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace neighborly {

struct ListeningGrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;         // the port bound (the address may say 0)
  std::string address;  // host:port as bound
};

// Listens on `address` (already parsed; `host` is its host part) with
// `credentials` (nullptr: plaintext) and starts the server built so far; the
// error names `what` and the address.
absl::StatusOr<ListeningGrpcServer> BuildAndListen(
    grpc::ServerBuilder& builder, const std::string& address, std::string_view host,
    std::shared_ptr<grpc::ServerCredentials> credentials, std::string_view what);

// Stops accepting, lets calls under way finish within `grace` (then cancels
// them) and waits for the server's threads. Nothing for nullptr.
void StopGrpcServer(grpc::Server* server, absl::Duration grace);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_GRPC_SERVER_H_
