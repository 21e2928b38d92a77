// TLS for the agent's telemetry streams: channel credentials from PEM files
// (the CA that signed the extender's certificate, and the agent's own
// certificate and key for mutual TLS) that gRPC re-reads when they change, and
// the ServiceAccount token the agent presents as its node identity.
//
//   absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> creds = MakeChannelCredentials(
//       {.ca_file = "/tls/ca.crt", .cert_file = "/tls/tls.crt", .key_file = "/tls/tls.key"});
//   ReportStream stream({.target = "10.0.0.5:9090", .credentials = *creds,
//                        .server_name = "neighborly-extender-agents.neighborly.svc",
//                        .identity_token_file = "/var/run/secrets/neighborly/token"});
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"

namespace neighborly::agent {

struct ClientTlsFiles {
  std::string ca_file;    // required: verifies the extender's certificate
  std::string cert_file;  // with key_file: the agent's client certificate (mutual TLS)
  std::string key_file;
  absl::Duration reload_interval = absl::Seconds(10);
};

// Checks the files now (readable, PEM, key matching certificate: one clear
// error naming the file); gRPC then watches them. The extender's certificate
// is verified against the CA and its name against the target (or the
// stream's server_name override).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files);

inline constexpr size_t kMaxIdentityTokenBytes = 16 * 1024;

// Reads a projected ServiceAccount token (the kubelet rewrites it before it
// expires, so callers read it again for every connection). Whitespace trimmed.
absl::StatusOr<std::string> ReadIdentityToken(const std::string& path);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_CHANNEL_SECURITY_H_
