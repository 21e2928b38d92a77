// TLS for the agent's telemetry streams: channel credentials from PEM files
// (the CA that signed the extender's certificate, and the agent's own
// certificate and key for mutual TLS) that are reloaded when they change (gRPC
// reads checked in-memory copies, common/verified_tls_files.h, so a
// half-rotated pair never reaches it), and the ServiceAccount token the agent
// presents as its node identity.
//
//   absl::StatusOr<ClientTls> tls = MakeChannelCredentials(
//       {.ca_file = "/tls/ca.crt", .cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key"});
//   ReportStream stream({.target = "10.0.0.5:9090", .credentials = tls->credentials,
//                        .tls_files = tls->files,
//                        .server_name = "neighborly-extender-agents.neighborly.svc",
//                        .identity_token_file = "/var/run/secrets/neighborly/token"});
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/verified_tls_files.h"
#include "grpcpp/security/credentials.h"

namespace neighborly::agent {

struct ClientTlsFiles {
  std::string ca_file;    // required: verifies the extender's certificate
  std::string cert_file;  // with key_file: the agent's client certificate (mutual TLS)
  std::string key_file;
  absl::Duration reload_interval = absl::Seconds(10);
  // After each check of changed files: loaded (true) or refused, the previous
  // ones kept (false).
  std::function<void(bool ok)> on_reload;
};

struct ClientTls {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::shared_ptr<VerifiedTlsFiles> files;  // what `credentials` reads: keep it as long
};

// Checks the files now (readable, PEM, key matching certificate: one clear
// error naming the file), then watches them: a changed set that passes the
// same checks is handed to gRPC, one that does not is logged and the last good
// one stays. The extender's certificate is verified against the CA and its
// name against the target (or the stream's server_name override).
absl::StatusOr<ClientTls> MakeChannelCredentials(const ClientTlsFiles& files);

inline constexpr size_t kMaxIdentityTokenBytes = 16 * 1024;

// Reads a projected ServiceAccount token (the kubelet rewrites it before it
// expires, so callers read it again for every connection). Whitespace trimmed.
absl::StatusOr<std::string> ReadIdentityToken(const std::string& path);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_
