#include "extender/src/http/tls_reloader.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace neighborly::extender {

absl::StatusOr<std::unique_ptr<TlsReloader>> TlsReloader::Create(
    TlsFiles files, const Clock& clock, std::function<void(bool ok)> on_reload) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate file and a key file");
  }
  ReloadingFilesOptions options{.what = "http.tls",
                                .paths = {files.cert_file, files.key_file},
                                .labels = {},
                                .interval = files.reload_interval,
                                .on_reload = std::move(on_reload)};
  if (!files.client_ca_file.empty()) options.paths.push_back(files.client_ca_file);
  absl::StatusOr<std::unique_ptr<ReloadingFiles<TlsMaterial>>> reloading =
      ReloadingFiles<TlsMaterial>::Create(
          std::move(options), clock, [files](std::span<const std::string> contents) {
            return ParseTlsMaterial({.ca_file = files.client_ca_file,
                                     .cert_file = files.cert_file,
                                     .key_file = files.key_file},
                                    contents[0], contents[1],
                                    contents.size() > 2 ? std::string_view(contents[2]) : "",
                                    "client CA file");
          });
  if (!reloading.ok()) return reloading.status();
  return std::unique_ptr<TlsReloader>(new TlsReloader(std::move(files), std::move(*reloading)));
}

bool TlsReloader::Configure(SSL_CTX& ctx) {
  // No session resumption: a resumed session skips the client-certificate
  // check, which must be made against the client CA of the moment (a rotated
  // CA refuses the old one's certificates at once). kube-scheduler keeps its
  // connections alive, so full handshakes are rare.
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(&ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(&ctx, 0);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
  SSL_CTX_set_cert_cb(&ctx, &TlsReloader::CertCallback, this);
  if (!files_config_.client_ca_file.empty()) {
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    SSL_CTX_set_cert_verify_callback(&ctx, &TlsReloader::VerifyCallback, this);
  }
  return true;
}

// Runs in the handshake, after the ClientHello: installs the current
// certificate, key, chain and client-CA store on this connection only.
int TlsReloader::CertCallback(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsReloader*>(arg);
  const std::shared_ptr<const TlsMaterial> material = self->files_->Current();
  if (SSL_use_cert_and_key(ssl, material->cert, material->key, material->chain,
                           /*override=*/1) != 1) {
    return 0;
  }
  if (material->cas != nullptr && SSL_set1_verify_cert_store(ssl, material->cas) != 1) {
    return 0;
  }
  return 1;
}

namespace {

// "10.0.0.7:51234" for the log line of a refused certificate.
std::string PeerOf(SSL* ssl) {
  const int fd = ssl == nullptr ? -1 : SSL_get_fd(ssl);
  sockaddr_storage addr{};
  socklen_t length = sizeof(addr);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return "an unknown peer";
  }
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return absl::StrCat(host, ":", ntohs(in->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(in6->sin6_port));
  }
  return "a local peer";
}

}  // namespace

// Replaces OpenSSL's verification step: the chain is verified as before
// (X509_verify_cert against the store CertCallback installed), then the leaf
// must carry the client role's names. A refusal fails the handshake with a
// "certificate unknown" alert: the client never gets to send a request.
int TlsReloader::VerifyCallback(X509_STORE_CTX* store, void* arg) {
  const int verified = X509_verify_cert(store);
  if (verified != 1) return verified;
  const auto* self = static_cast<const TlsReloader*>(arg);
  const ClientRole& role = self->files_config_.client_role;
  if (role.allowed_names.empty()) return 1;
  const CertificateNames names = NamesOf(X509_STORE_CTX_get0_cert(store));
  if (role.Admits(names)) return 1;
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  role.LogRefusal(names, PeerOf(ssl));
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

}  // namespace neighborly::extender
