#include "common/grpc_server.h"

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "common/strings.h"

namespace neighborly {

absl::StatusOr<ListeningGrpcServer> BuildAndListen(
    grpc::ServerBuilder& builder, const std::string& address, std::string_view host,
    std::shared_ptr<grpc::ServerCredentials> credentials, std::string_view what) {
  ListeningGrpcServer out;
  builder.AddListeningPort(
      address, credentials ? std::move(credentials) : grpc::InsecureServerCredentials(), &out.port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || out.port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for ", Av(what), " on ", address,
                                               " (address in use, not local, or not permitted)"));
  }
  out.address = JoinHostPort(host, out.port);
  return out;
}

void StopGrpcServer(grpc::Server* server, absl::Duration grace) {
  if (server == nullptr) return;
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::nanoseconds(absl::ToInt64Nanoseconds(grace)));
  server->Wait();
}

}  // namespace neighborly
