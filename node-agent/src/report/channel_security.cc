#include "node-agent/src/report/channel_security.h"

#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace neighborly::agent {

absl::StatusOr<ClientTls> MakeChannelCredentials(const ClientTlsFiles& files) {
  if (files.ca_file.empty()) return absl::InvalidArgumentError("TLS needs a CA file (--tls-ca)");
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both --tls-cert and --tls-key (or neither)");
  }
  absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> verified =
      VerifiedTlsFiles::Create({.files = {.ca_file = files.ca_file,
                                          .cert_file = files.cert_file,
                                          .key_file = files.key_file},
                                .what = "tls",
                                .reload_interval = files.reload_interval,
                                .on_reload = files.on_reload});
  if (!verified.ok()) return verified.status();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider((*verified)->GrpcProvider());
  options.watch_root_certs();
  if (!files.cert_file.empty()) options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  // The extender's name must be in its certificate (not only a chain to the CA).
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::experimental::TlsCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC refused the TLS options");
  return ClientTls{.credentials = std::move(credentials), .files = std::move(*verified)};
}

absl::StatusOr<std::string> ReadIdentityToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("identity token file ", path, ": cannot read it"));
  std::string token;
  token.resize(kMaxIdentityTokenBytes + 1);
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<size_t>(in.gcount()));
  if (token.size() > kMaxIdentityTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat("identity token file ", path, ": larger than ",
                                                   kMaxIdentityTokenBytes, " bytes"));
  }
  absl::string_view trimmed = absl::StripAsciiWhitespace(token);
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("identity token file ", path, " is empty"));
  }
  return std::string(trimmed);
}

}  // namespace neighborly::agent
