// TLS for the telemetry endpoint: server credentials from PEM files (CA,
// certificate, key) that gRPC re-reads when they change (cert-manager or a
// Secret volume rotating them needs no restart), with client certificates
// required by default (mutual TLS).
//
//   absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = MakeServerCredentials(
//       {.ca_file = "/tls/ca.crt", .cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key"});
//   TelemetryServer::Start(core, {.credentials = *creds});
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"

namespace neighborly::extender {

struct ServerTlsFiles {
  std::string ca_file;    // CA bundle that client certificates must chain to
  std::string cert_file;  // the server's certificate chain (PEM)
  std::string key_file;   // its private key (PEM)
  bool require_client_cert = true;
  absl::Duration reload_interval = absl::Seconds(10);  // how often the files are checked
};

// Checks now that every file is readable, holds what it should, and that key
// and certificate belong together (one clear error naming the file otherwise);
// gRPC then watches the files. On a reload that fails (a half-written file),
// gRPC keeps serving with the previous certificates.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// The PEM checks alone (also used for the HTTPS server's files). `ca_file` may be empty.
absl::Status CheckTlsFiles(const std::string& ca_file, const std::string& cert_file,
                           const std::string& key_file);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_TRANSPORT_SECURITY_H_
