#include "common/strings.h"

#include <cmath>
#include <cstdlib>

namespace neighborly {

std::optional<double> ParseDouble(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  // strtod needs a terminated buffer; from_chars for double is missing in GCC 12's
  // libstdc++ only for some targets, so keep to strtod on a local copy.
  char buf[65];
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  char* end = nullptr;
  const double v = std::strtod(buf, &end);
  if (end != buf + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace neighborly
