// Small string helpers on std::string_view.
//
// Debian 12's Abseil is built with its own absl::string_view (not an alias of
// std::string_view), so std::string_view does not convert implicitly. Project
// code uses std::string_view; Av() bridges to Abseil's string functions:
//   absl::StrCat("bad key \"", Av(key), "\"")
#ifndef NEIGHBORLY_COMMON_STRINGS_H_
#define NEIGHBORLY_COMMON_STRINGS_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace neighborly {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// Strips ASCII whitespace (including the "\n" every sysfs file ends with).
inline std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

// Whole-string decimal parses; nullopt on any junk, sign where unsigned, or overflow.
template <typename Int>
std::optional<Int> ParseInt(std::string_view s) {
  Int value{};
  if (s.empty() || s.front() == '+') return std::nullopt;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseDouble(std::string_view s);

// Appends value / 2^shift with one decimal, exactly as printf's "%.1f" of that
// quotient as a double ("1.5", "0.2": the exact binary value rounded half to
// even), without the general float formatter: refusal reasons print a byte
// count in GiB or MiB for each of hundreds of candidates per request.
//   AppendOneDecimal(&text, 3 << 29, 30);  // "1.5"
void AppendOneDecimal(std::string* out, int64_t value, int shift);

// Appends `value` with `precision` decimals exactly as printf's "%.*f" writes
// it (the exact binary value rounded half to even: 1.005 -> "1.00", 0.125 ->
// "0.12", -0.001 -> "-0.00") without the general formatter, which parses
// its format string on every call: a refusal's reason prints up to five such
// numbers, and formatting them was 11 % of a verdict stream's refresh (issue
// 25). Below 2^52 with at most 3 decimals it rounds in integers; anything
// else (larger, non-finite, more decimals) takes the general formatter.
//   AppendFixed(&text, 1.3149, 2);  // "1.31"
void AppendFixed(std::string* out, double value, int precision);

// Case-insensitive ASCII equality (JSON keys from Go clients, header names).
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_STRINGS_H_
