// Which role a client certificate plays. The chart issues the agents', the
// scheduler's and the extender's certificates from one CA, so "signed by the
// CA" proves only "one of ours": each listener also requires the names of its
// role (docs/security.md, "Roles"). A certificate carries a role when one of
// its URI SANs, DNS SANs or its subject's common name equals one of the
// listener's allowed names; an empty list accepts any certificate the CA signed
// (the behaviour before roles, for hand-made PKIs: the extender warns).
//
//   ClientRole scheduler{.role = "scheduler", .listener = "the placement port",
//                        .config_key = "placement.tls.allowedClientNames",
//                        .allowed_names = {"neighborly-scheduler"}};
//   CertificateNames names = NamesOf(leaf);
//   if (!scheduler.Admits(names)) scheduler.LogRefusal(names, peer);  // and fail the handshake
#ifndef NEIGHBORLY_COMMON_CLIENT_IDENTITY_H_
#define NEIGHBORLY_COMMON_CLIENT_IDENTITY_H_

#include <openssl/x509.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace neighborly {

// The names a certificate can be matched on.
struct CertificateNames {
  std::string common_name;  // the subject's CN; empty when it has none
  std::vector<std::string> dns_names;
  std::vector<std::string> uris;
};

// Reads the subject CN and the DNS and URI SANs of `cert` (null: no names).
CertificateNames NamesOf(X509* cert);

// "CN=x, DNS:a, URI:spiffe://..." for log lines (each name clipped, at most 8).
std::string DescribeNames(const CertificateNames& names);

// Counts refusals; shared by the copies of a ClientRole a listener makes.
struct RoleRefusals {
  std::atomic<uint64_t> refused{0};
  std::atomic<int64_t> last_log_ns{INT64_MIN};
  std::atomic<uint64_t> unlogged{0};
};

struct ClientRole {
  std::string role;        // "scheduler", "agent": named in the log line
  std::string listener;    // "the scheduler port", "the placement port", "the telemetry port"
  std::string config_key;  // where the names are configured
  std::vector<std::string> allowed_names;  // empty: any certificate the CA signed
  std::shared_ptr<RoleRefusals> refusals = std::make_shared<RoleRefusals>();

  // True when `names` carries one of allowed_names (or the list is empty).
  bool Admits(const CertificateNames& names) const;

  // Counts the refusal and logs one warning naming the expected role, the
  // certificate's names and the peer; at most one line per 10 s, the next
  // saying how many were not logged (a handshake flood cannot flood the log).
  void LogRefusal(const CertificateNames& names, std::string_view peer) const;

  uint64_t refused() const { return refusals->refused.load(std::memory_order_relaxed); }
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_CLIENT_IDENTITY_H_
