#include "extender/src/ingest/transport_security.h"

#include <algorithm>
#include <utility>

#include "grpcpp/security/tls_credentials_options.h"

namespace neighborly::extender {

absl::StatusOr<ServerTls> MakeServerCredentials(ServerTlsFiles files) {
  if (files.require_client_cert && files.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "a CA file is needed to verify client certificates (or do not require them)");
  }
  if (files.cert_file.empty()) return absl::InvalidArgumentError("certificate file is not set");
  if (files.key_file.empty()) return absl::InvalidArgumentError("key file is not set");
  absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> verified =
      VerifiedTlsFiles::Create({.files = {.ca_file = files.ca_file,
                                          .cert_file = files.cert_file,
                                          .key_file = files.key_file},
                                .what = "grpc.tls",
                                .reload_interval = files.reload_interval,
                                .on_reload = std::move(files.on_reload)});
  if (!verified.ok()) return verified.status();
  grpc::experimental::TlsServerCredentialsOptions options((*verified)->GrpcProvider());
  options.watch_identity_key_cert_pairs();
  if (!files.ca_file.empty()) options.watch_root_certs();
  options.set_cert_request_type(
      files.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
      : files.ca_file.empty()   ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC refused the TLS options");
  return ServerTls{.credentials = std::move(credentials), .files = std::move(*verified)};
}

}  // namespace neighborly::extender
