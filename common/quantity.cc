#include "common/quantity.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Longest suffixes first so that "Ki" wins over a bare number ending.
constexpr Suffix kSuffixes[] = {
    {"Ki", 1024.0},
    {"Mi", 1024.0 * 1024},
    {"Gi", 1024.0 * 1024 * 1024},
    {"Ti", 1024.0 * 1024 * 1024 * 1024},
    {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
    {"Ei", 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024},
    {"n", 1e-9},
    {"u", 1e-6},
    {"m", 1e-3},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
};

absl::StatusOr<double> ParseQuantity(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty()) return absl::InvalidArgumentError("quantity is empty");
  double factor = 1.0;
  for (const Suffix& suffix : kSuffixes) {
    if (s.size() > suffix.text.size() && s.ends_with(suffix.text)) {
      factor = suffix.factor;
      s.remove_suffix(suffix.text.size());
      break;
    }
  }
  // Digits, one optional dot, an optional sign and an optional decimal exponent.
  for (char c : s) {
    if (!(c >= '0' && c <= '9') && c != '.' && c != '+' && c != '-' && c != 'e' && c != 'E') {
      return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not a quantity"));
    }
  }
  const std::optional<double> parsed = ParseDouble(s);
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not a quantity"));
  }
  const double value = *parsed;
  if (value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("quantity \"", Av(text), "\" is negative"));
  }
  const double result = value * factor;
  if (result > 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat("quantity \"", Av(text), "\" is too large"));
  }
  return result;
}

}  // namespace

absl::StatusOr<int64_t> ParseMilliQuantity(std::string_view text) {
  absl::StatusOr<double> q = ParseQuantity(text);
  if (!q.ok()) return q.status();
  if (*q * 1000 > 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat("quantity \"", Av(text), "\" is too large"));
  }
  return static_cast<int64_t>(std::ceil(*q * 1000 - 1e-9));
}

absl::StatusOr<int64_t> ParseByteQuantity(std::string_view text) {
  absl::StatusOr<double> q = ParseQuantity(text);
  if (!q.ok()) return q.status();
  return static_cast<int64_t>(std::ceil(*q - 1e-9));
}

}  // namespace neighborly
