#include "extender/src/http/json_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace neighborly::extender {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

bool NeedsEscapeByte(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80; }

#if defined(__SSE2__)
// Bit i set where byte i of the 16 at `p` needs escaping: '"', '\\', a control
// character or a non-ASCII byte (a signed compare puts 0x80-0xFF below 0x20).
inline unsigned EscapeMask16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i special = _mm_or_si128(
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
      _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
  return static_cast<unsigned>(_mm_movemask_epi8(special));
}

// Length of the prefix of `s` that needs no escaping, 16 bytes per step (SSE2,
// part of every x86-64 CPU): the mask names the first byte exactly. The last
// partial block is checked as the string's last 16 bytes (overlapping), or
// for a short string as a copy padded with spaces, which need no escaping.
size_t PlainPrefixSse2(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (const unsigned m = EscapeMask16(p + i)) return i + static_cast<size_t>(__builtin_ctz(m));
  }
  if (i == n) return n;
  if (n >= 16) {
    const unsigned m = EscapeMask16(p + n - 16);  // bytes before i are plain: their bits are 0
    return m != 0 ? n - 16 + static_cast<size_t>(__builtin_ctz(m)) : n;
  }
  // Shorter than 16: its first and last halves (overlapping) side by side.
  // A byte of the overlap shows in both; the first half's bit comes first.
  if (n >= 8) {
    uint64_t head, tail;
    std::memcpy(&head, p, 8);
    std::memcpy(&tail, p + n - 8, 8);
    char both[16];
    std::memcpy(both, &head, 8);
    std::memcpy(both + 8, &tail, 8);
    const unsigned m = EscapeMask16(both);
    if (m == 0) return n;
    return (m & 0xFF) != 0 ? static_cast<size_t>(__builtin_ctz(m))
                           : n - 8 + static_cast<size_t>(__builtin_ctz(m >> 8));
  }
  size_t k = 0;
  while (k < n && !NeedsEscapeByte(static_cast<unsigned char>(p[k]))) ++k;
  return k;
}
#endif

// Whether any of the 8 bytes in `w` needs escaping, 8 bytes per step instead
// of one (node names and reasons are plain ASCII almost always). Exact: the
// "has a zero byte" and "has a byte below n" word tricks may point at the
// wrong byte, but never answer no when a byte qualifies.
constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;
bool WordNeedsEscape(uint64_t w) {
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t backslash = w ^ (kOnes * '\\');
  const uint64_t control = (w - kOnes * 0x20) & ~w;     // some byte < 0x20 (or >= 0x80)
  const uint64_t has_quote = (quote - kOnes) & ~quote;  // some byte == '"'
  const uint64_t has_backslash = (backslash - kOnes) & ~backslash;
  return ((w | control | has_quote | has_backslash) & kHighs) != 0;
}

// Length of the prefix of `s` that needs no escaping. Whole words first; the
// last partial word is checked as one word too (the string's last 8 bytes,
// overlapping, or a short string padded with spaces, which need no escaping),
// so a plain string never reaches the byte loop. For CPUs without SSE2.
size_t PlainPrefixPortable(std::string_view s) {
  const size_t n = s.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (WordNeedsEscape(w)) break;
  }
  if (i + 8 > n) {  // every whole word is plain: one word for the rest
    uint64_t w = kOnes * ' ';
    if (n >= 8) {
      std::memcpy(&w, s.data() + n - 8, 8);
    } else {
      std::memcpy(&w, s.data(), n);
    }
    if (!WordNeedsEscape(w)) return n;
  }
  while (i < n && !NeedsEscapeByte(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

size_t PlainPrefix(std::string_view s) {
#if defined(__SSE2__)
  return PlainPrefixSse2(s);
#else
  return PlainPrefixPortable(s);
#endif
}

}  // namespace

namespace internal {
size_t JsonPlainPrefix(std::string_view s) { return PlainPrefix(s); }
size_t JsonPlainPrefixPortable(std::string_view s) { return PlainPrefixPortable(s); }
}  // namespace internal

void AppendJsonString(std::string_view s, std::string& out) {
  size_t i = PlainPrefix(s);
  if (i == s.size()) {  // the common case: one copy, quotes included
    const size_t at = out.size();
    out.resize(at + s.size() + 2);
    char* p = out.data() + at;
    p[0] = '"';
    std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return;
  }
  out.push_back('"');
  size_t run_start = 0;
  while (i < s.size()) {
    i += PlainPrefix(s.substr(i));
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);  // needs escaping
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
          (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
           static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
        out.append(s.data() + run_start, i - run_start);
        out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
        i += 3;
        run_start = i;
        continue;
      }
      if (n > 0) {
        i += n;
        continue;
      }
      out.append(s.data() + run_start, i - run_start);
      out += "\xEF\xBF\xBD";  // U+FFFD for an invalid byte
      ++i;
      run_start = i;
      continue;
    }
    out.append(s.data() + run_start, i - run_start);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
        break;
    }
    ++i;
    run_start = i;
  }
  out.append(s.data() + run_start, s.size() - run_start);
  out.push_back('"');
}

void AppendInt(int64_t value, std::string& out) {
  char buf[24];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, static_cast<size_t>(ptr - buf));
}

void JsonAppender::Grow(size_t n) {
  // Doubling (at least 4 KiB) keeps the zero-filling resize() does to about
  // twice the reply, once per request: a scratch reply keeps its capacity.
  out_.resize(std::max({at_ + n, 2 * out_.size(), out_.capacity(), size_t{4096}}));
}

void JsonAppender::String(std::string_view s) {
  const size_t n = s.size();
  if (PlainPrefix(s) == n) {
    char* p = Room(n + 2);
    p[0] = '"';
    const char* from = s.data();
    if (n >= 8 && n <= 16) {  // most node names: two overlapping word copies
      std::memcpy(p + 1, from, 8);
      std::memcpy(p + 1 + n - 8, from + n - 8, 8);
    } else if (n > 16 && n <= 32) {
      std::memcpy(p + 1, from, 16);
      std::memcpy(p + 1 + n - 16, from + n - 16, 16);
    } else {
      std::memcpy(p + 1, from, n);
    }
    p[n + 1] = '"';
    at_ += n + 2;
    return;
  }
  out_.resize(at_);  // rare: escape through the string itself
  AppendJsonString(s, out_);
  at_ = out_.size();
}

void JsonAppender::Int(int64_t value) {
  char* p = Room(24);
  const auto [end, ec] = std::to_chars(p, p + 24, value);
  at_ += static_cast<size_t>(end - p);
}

void AppendDouble(double value, std::string& out) {
  if (!std::isfinite(value)) {
    out += '0';
    return;
  }
  char buf[32];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, static_cast<size_t>(ptr - buf));
}

}  // namespace neighborly::extender
