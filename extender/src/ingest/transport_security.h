// TLS for the telemetry endpoint: server credentials from PEM files (CA,
// certificate, key) that are reloaded when they change (cert-manager or a
// Secret volume rotating them needs no restart), with client certificates
// required by default (mutual TLS). gRPC reads checked in-memory copies of the
// files (common/verified_tls_files.h), so a half-rotated pair never reaches it.
//
//   absl::StatusOr<ServerTls> tls = MakeServerCredentials(
//       {.ca_file = "/tls/ca.crt", .cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key"});
//   TelemetryServer::Start(core, {.credentials = tls->credentials});   // keep *tls alive
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/client_identity.h"
#include "common/verified_tls_files.h"
#include "grpcpp/security/server_credentials.h"

namespace neighborly::extender {

struct ServerTlsFiles {
  std::string ca_file;    // CA bundle that client certificates must chain to
  std::string cert_file;  // the server's certificate chain (PEM)
  std::string key_file;   // its private key (PEM)
  bool require_client_cert = true;
  absl::Duration reload_interval = absl::Seconds(10);  // how often the files are checked
  // After each check of changed files: loaded (true) or refused, the previous
  // certificate kept (false); e.g. to count it in /metrics.
  std::function<void(bool ok)> on_reload;
  // With client certificates: the names one of which a client's certificate
  // must carry (its role, common/client_identity.h); a certificate of the CA
  // without them fails the handshake, with a log line naming the role.
  ClientRole client_role;
};

struct ServerTls {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  std::unique_ptr<VerifiedTlsFiles> files;  // what gRPC reads: must outlive the server
};

// Checks now that every file is readable, holds what it should, and that key
// and certificate belong together (one clear error naming the file otherwise),
// then watches them: a changed set that passes the same checks is handed to
// gRPC; one that does not is logged and counted, and the last good one stays.
absl::StatusOr<ServerTls> MakeServerCredentials(ServerTlsFiles files);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_
