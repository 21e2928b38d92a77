// The addresses behind one extender target ("neighborly-extender-agents.neighborly.svc:9090"):
// a headless Service's DNS name returns one A (or AAAA) record per replica, and
// the agent streams to each of them (replica_directory.h).
//
//   SystemResolver resolver;
//   absl::StatusOr<std::vector<std::string>> addresses =
//       resolver.Resolve({.host = "neighborly-extender-agents.neighborly.svc", .port = 9090});
//   // {"10.244.1.7:9090", "10.244.2.9:9090"}
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_ADDRESS_RESOLVER_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_ADDRESS_RESOLVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_port.h"

namespace neighborly::agent {

class AddressResolver {
 public:
  virtual ~AddressResolver() = default;
  // Every address of `target` as "ip:port" ("[ip6]:port"), sorted, without
  // duplicates; an IP literal resolves to itself. An error names the target.
  virtual absl::StatusOr<std::vector<std::string>> Resolve(const HostPort& target) = 0;
};

// getaddrinfo(3), as the C library resolves any name: /etc/hosts, then DNS
// (the cluster's, through the pod's resolv.conf search path), per nsswitch.conf.
// No caching of its own: each call asks again.
class SystemResolver final : public AddressResolver {
 public:
  absl::StatusOr<std::vector<std::string>> Resolve(const HostPort& target) override;
};

// Whether `host` is an IPv4 or IPv6 literal (not a name to resolve or to verify
// a certificate against).
bool IsIpLiteral(const std::string& host);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_ADDRESS_RESOLVER_H_
