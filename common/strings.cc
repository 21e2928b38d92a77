#include "common/strings.h"

#include <bit>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

void AppendOneDecimal(std::string* out, int64_t value, int shift) {
  // Exact when the value converts to a double without loss (below 2^53) and
  // ten times it fits; anything else takes the general formatter.
  if (value < 0 || value >= (int64_t{1} << 53) || shift < 1 || shift > 62) {
    absl::StrAppendFormat(out, "%.1f", std::ldexp(static_cast<double>(value), -shift));
    return;
  }
  const uint64_t tenths = static_cast<uint64_t>(value) * 10;
  uint64_t q = tenths >> shift;
  const uint64_t rest = tenths & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (q & 1) != 0)) ++q;
  const char digit[2] = {static_cast<char>('0' + q % 10), '\0'};
  absl::StrAppend(out, q / 10, ".", absl::string_view(digit, 1));
}

namespace {

// AppendFixed where the value is below 2^52 in magnitude and the precision
// at most 3: the value is m * 2^-shift for a 53-bit integer m, so value *
// 10^precision rounds half to even in integers, as AppendOneDecimal does.
// False where it does not apply.
bool AppendFixedInIntegers(std::string* out, double value, int precision) {
  const auto bits = std::bit_cast<uint64_t>(value);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  if (precision < 0 || precision > 3 || biased >= 1075) return false;  // 2^52 and up, inf, NaN
  const uint64_t m = biased == 0 ? fraction : fraction | (uint64_t{1} << 52);
  const int shift = biased == 0 ? 1074 : 1075 - biased;  // >= 1
  constexpr uint64_t kPowers[] = {1, 10, 100, 1000};
  const uint64_t scaled = m * kPowers[precision];  // < 2^63
  uint64_t q = 0;
  if (shift < 64) {
    q = scaled >> shift;
    const uint64_t rest = scaled & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (q & 1) != 0)) ++q;
  }  // else below half of the last digit: 0
  // Digits backwards: the decimals, the point, the integer part, the sign.
  char buf[32];
  char* p = buf + sizeof(buf);
  for (int i = 0; i < precision; ++i, q /= 10) *--p = static_cast<char>('0' + q % 10);
  if (precision > 0) *--p = '.';
  do {
    *--p = static_cast<char>('0' + q % 10);
    q /= 10;
  } while (q != 0);
  if (bits >> 63) *--p = '-';  // as printf: "-0.00" for -0.001 and -0.0
  out->append(p, buf + sizeof(buf));
  return true;
}

}  // namespace

void AppendFixed(std::string* out, double value, int precision) {
  if (AppendFixedInIntegers(out, value, precision)) return;
  absl::StrAppendFormat(out, "%.*f", precision, value);
}

}  // namespace neighborly
