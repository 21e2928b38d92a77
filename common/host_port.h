// "HOST:PORT" addresses as given on command lines ("0.0.0.0:8888", "[::1]:0").
#ifndef NEIGHBORLY_COMMON_HOST_PORT_H_
#define NEIGHBORLY_COMMON_HOST_PORT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neighborly {

struct HostPort {
  std::string host;  // without IPv6 brackets
  uint16_t port = 0;
};

absl::StatusOr<HostPort> ParseHostPort(std::string_view text);

// The inverse: "host:port", with brackets around an IPv6 host ("[::1]:9090").
std::string JoinHostPort(std::string_view host, int port);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_HOST_PORT_H_
