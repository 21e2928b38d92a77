#include "common/host_port.h"

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly {

absl::StatusOr<HostPort> ParseHostPort(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", Av(text), "\" is not HOST:PORT"));
  }
  HostPort out;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  out.host = std::string(host);
  const std::string_view port_text = text.substr(colon + 1);
  const std::optional<uint32_t> port = ParseInt<uint32_t>(port_text);
  if (!port || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", Av(text), "\": port \"", Av(port_text), "\" is not 0..65535"));
  }
  out.port = static_cast<uint16_t>(*port);
  return out;
}

std::string JoinHostPort(std::string_view host, int port) {
  return host.find(':') != std::string_view::npos ? absl::StrCat("[", Av(host), "]:", port)
                                                  : absl::StrCat(Av(host), ":", port);
}

}  // namespace neighborly
