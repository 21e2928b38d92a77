#include "extender/src/ingest/transport_security.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace neighborly::extender {
namespace {

// Runs after the TLS stack verified the client's chain: the leaf must carry
// the listener's role. gRPC hands over the names it already parsed.
class ClientRoleVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit ClientRoleVerifier(ClientRole role) : role_(std::move(role)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    CertificateNames names;
    names.common_name = std::string(request->common_name().data(), request->common_name().size());
    for (const grpc::string_ref& dns : request->dns_names()) {
      names.dns_names.emplace_back(dns.data(), dns.size());
    }
    for (const grpc::string_ref& uri : request->uri_names()) {
      names.uris.emplace_back(uri.data(), uri.size());
    }
    if (role_.Admits(names)) {
      *sync_status = grpc::Status::OK;
    } else {
      // gRPC does not tell the verifier the peer's address.
      role_.LogRefusal(names, "a client");
      *sync_status = grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          absl::StrCat(role_.listener, " accepts only the ", role_.role, "'s certificate"));
    }
    return true;  // decided synchronously
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  const ClientRole role_;
};

}  // namespace

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
  if (!files.ca_file.empty() && !files.client_role.allowed_names.empty()) {
    options.set_certificate_verifier(
        grpc::experimental::ExternalCertificateVerifier::Create<ClientRoleVerifier>(
            files.client_role));
  }
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
