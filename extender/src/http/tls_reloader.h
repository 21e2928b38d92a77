// The HTTPS server's certificate, key and client CA, reloaded when the files
// change (http.tls.reloadInterval) without a restart: every TLS handshake takes
// the current material from an OpenSSL certificate callback, so a new
// connection gets the new certificate (and is verified against the new client
// CA) while established connections keep what they started with. A reload
// that fails keeps the last good material (reloading_files.h).
//
//   absl::StatusOr<std::unique_ptr<TlsReloader>> tls = TlsReloader::Create(
//       {.cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key", .client_ca_file = "/tls/ca.crt"},
//       clock, [&](bool ok) { metrics.RecordTlsReload(TlsListener::kHttp, ok); });
//   httplib::SSLServer server([&](SSL_CTX& ctx) { return (*tls)->Configure(ctx); });
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_TLS_RELOADER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_TLS_RELOADER_H_

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/client_identity.h"
#include "common/clock.h"
#include "common/reloading_files.h"
#include "common/tls_material.h"

namespace neighborly::extender {

struct TlsFiles {
  std::string cert_file;       // PEM chain, leaf first
  std::string key_file;        // PEM private key (unencrypted)
  std::string client_ca_file;  // PEM CA bundle; empty: client certificates not requested
  absl::Duration reload_interval = absl::Seconds(10);  // zero: check on every handshake
  // With a client CA: the names the client's certificate must carry (the
  // scheduler's role, common/client_identity.h); a certificate of the CA
  // without them fails the handshake, with a log line naming the role.
  ClientRole client_role;
};

class TlsReloader {
 public:
  // Loads the files now: a bad file is an error here (a startup error).
  static absl::StatusOr<std::unique_ptr<TlsReloader>> Create(
      TlsFiles files, const Clock& clock, std::function<void(bool ok)> on_reload = nullptr);

  // Sets up a server context (TLS 1.2+, client certificates required when a
  // client CA is configured and checked for the client role, no session
  // resumption) whose handshakes take the current material. The context must
  // not outlive this object.
  bool Configure(SSL_CTX& ctx);

  // The material the next handshake would use (checks the files when due).
  std::shared_ptr<const TlsMaterial> Current() { return files_->Current(); }
  uint64_t reloads() const { return files_->reloads(); }
  uint64_t failures() const { return files_->failures(); }
  // Client certificates of the CA refused for not carrying the role's names.
  uint64_t role_refusals() const { return files_config_.client_role.refused(); }

 private:
  TlsReloader(TlsFiles files, std::unique_ptr<ReloadingFiles<TlsMaterial>> reloading)
      : files_config_(std::move(files)), files_(std::move(reloading)) {}
  static int CertCallback(SSL* ssl, void* self);
  // The chain's verification, then the leaf's role.
  static int VerifyCallback(X509_STORE_CTX* store, void* self);

  const TlsFiles files_config_;
  std::unique_ptr<ReloadingFiles<TlsMaterial>> files_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_TLS_RELOADER_H_
