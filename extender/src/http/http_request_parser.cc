#include "extender/src/http/http_request_parser.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

HeadResult Error(int status, std::string message) {
  return {
      .kind = HeadResult::kError, .head_bytes = 0, .status = status, .error = std::move(message)};
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void ParseQuery(std::string_view query, httplib::Params& params) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    params.emplace(
        PercentDecode(pair.substr(0, eq), true),
        eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1), true));
  }
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = HexValue(s[i + 1]);
      const int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && s[i] == '+' ? ' ' : s[i]);
  }
  return out;
}

HeadResult ParseHead(std::string_view in, size_t scan_from, const HeadLimits& limits,
                     httplib::Request& req) {
  size_t start = 0;
  while (in.substr(start).starts_with("\r\n")) start += 2;
  const size_t from = std::max(start, scan_from >= 3 ? scan_from - 3 : 0);
  const size_t end = in.find("\r\n\r\n", from);
  const size_t line_end = in.find("\r\n", start);
  if (line_end == std::string_view::npos && in.size() - start > limits.max_request_line_bytes) {
    return Error(
        414, absl::StrCat("request line longer than ", limits.max_request_line_bytes, " bytes"));
  }
  if (end == std::string_view::npos) {
    if (in.size() - start > limits.max_head_bytes) {
      return Error(431, absl::StrCat("request head (request line and headers) longer than ",
                                     limits.max_head_bytes, " bytes"));
    }
    return {};
  }
  if (end + 4 - start > limits.max_head_bytes) {
    return Error(431, absl::StrCat("request head (request line and headers) longer than ",
                                   limits.max_head_bytes, " bytes"));
  }
  // Request line: METHOD SP request-target SP HTTP-version.
  const std::string_view line = in.substr(start, line_end - start);
  if (line.size() > limits.max_request_line_bytes) {
    return Error(
        414, absl::StrCat("request line longer than ", limits.max_request_line_bytes, " bytes"));
  }
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400, "malformed request line (want METHOD TARGET HTTP/1.1)");
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Error(400, "malformed request method");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (!version.starts_with("HTTP/")) return Error(400, "malformed HTTP version");
    return Error(
        505, absl::StrCat("HTTP version ", std::string(version), " not supported (HTTP/1.1 only)"));
  }
  req.method.assign(method);
  req.version.assign(version);
  req.target.assign(target);
  // Origin form only (issue 24): the absolute form is a proxy's, which no
  // client of this server sends (kube-scheduler, the plugin, Prometheus, the
  // kubelet's probes); served as its path, it let a request name one host in
  // its target and another in Host, which a proxy in front may route apart.
  if (target.find("://") != std::string_view::npos && target.front() != '/') {
    return Error(400,
                 "absolute-form request target (a proxy's request); this server takes an "
                 "absolute path");
  }
  if (target.empty() || (target.front() != '/' && target != "*")) {
    return Error(400, "malformed request target (want an absolute path)");
  }
  const size_t question = target.find('?');
  req.path = PercentDecode(target.substr(0, question), false);
  req.params.clear();
  if (question != std::string_view::npos) ParseQuery(target.substr(question + 1), req.params);

  // Header fields.
  req.headers.clear();
  size_t pos = line_end + 2;
  size_t fields = 0;
  while (pos < end + 2) {
    const size_t eol = in.find("\r\n", pos);
    const std::string_view field = in.substr(pos, eol - pos);
    pos = eol + 2;
    if (++fields > limits.max_header_fields) {
      // Count them all for the message; the head is bounded by max_head_bytes.
      size_t total = fields;
      for (size_t p = pos; p < end + 2; p = in.find("\r\n", p) + 2) ++total;
      return Error(431,
                   absl::StrCat(total, " header fields (at most ", limits.max_header_fields, ")"));
    }
    if (field.size() > limits.max_header_line_bytes) {
      return Error(
          431, absl::StrCat("a header field longer than ", limits.max_header_line_bytes, " bytes"));
    }
    if (field.front() == ' ' || field.front() == '\t') {
      return Error(400, "obsolete header line folding");
    }
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !IsToken(field.substr(0, colon))) {
      return Error(400, "malformed header field");
    }
    const std::string_view value = TrimOws(field.substr(colon + 1));
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
      return Error(400, "malformed header field value");
    }
    req.headers.emplace(std::string(field.substr(0, colon)), std::string(value));
  }
  // RFC 9112 section 3.2: exactly one Host in an HTTP/1.1 request, at most one
  // in HTTP/1.0 (issue 24: a missing or a second Host was accepted).
  const size_t hosts = req.get_header_value_count("Host");
  if (hosts > 1) return Error(400, absl::StrCat(hosts, " Host headers (exactly one is allowed)"));
  if (hosts == 0 && req.version == "HTTP/1.1") {
    return Error(400, "no Host header (HTTP/1.1 requires one)");
  }
  return {.kind = HeadResult::kComplete, .head_bytes = end + 4, .status = 0, .error = {}};
}

BodyFraming FramingOf(const httplib::Request& req) {
  BodyFraming framing;
  const size_t lengths = req.get_header_value_count("Content-Length");
  const size_t encodings = req.get_header_value_count("Transfer-Encoding");
  auto refuse = [&](std::string message) {
    framing.status = 400;
    framing.error = absl::StrCat("refused: ", message);
    return framing;
  };
  if (lengths > 1) {
    return refuse(absl::StrCat(lengths, " Content-Length headers (at most one is allowed)"));
  }
  if (lengths == 1 && encodings > 0) {
    return refuse("both Content-Length and Transfer-Encoding (the body's length is ambiguous)");
  }
  if (encodings > 1) return refuse("more than one Transfer-Encoding header");
  if (encodings == 1) {
    std::string coding(Trim(req.get_header_value("Transfer-Encoding")));
    std::transform(coding.begin(), coding.end(), coding.begin(),
                   [](char c) { return static_cast<char>(std::tolower(c)); });
    if (coding != "chunked") {
      framing.status = 501;
      framing.error =
          absl::StrCat("Transfer-Encoding \"", coding, "\" not supported (chunked only)");
      return framing;
    }
    framing.kind = BodyFraming::kChunked;
    return framing;
  }
  if (lengths == 1) {
    const std::optional<uint64_t> length =
        ParseInt<uint64_t>(Trim(req.get_header_value("Content-Length")));
    if (!length.has_value()) {
      framing.status = 400;
      framing.error = "invalid Content-Length header";
      return framing;
    }
    framing.kind = *length > 0 ? BodyFraming::kLength : BodyFraming::kNone;
    framing.length = *length;
  }
  return framing;
}

ChunkedDecoder::Status ChunkedDecoder::Feed(std::string_view in, size_t& consumed,
                                            std::string& out) {
  consumed = 0;
  for (;;) {
    const std::string_view rest = in.substr(consumed);
    switch (state_) {
      case kSize: {
        const size_t eol = rest.find("\r\n");
        if (eol == std::string_view::npos) {
          if (rest.size() > 1024) {
            error_ = "chunk size line longer than 1024 bytes";
            return kError;
          }
          return kNeedMore;
        }
        std::string_view size = rest.substr(0, eol);
        size = size.substr(0, size.find(';'));  // chunk extensions are ignored
        size = TrimOws(size);
        uint64_t n = 0;
        if (size.empty() || size.size() > 15) {
          error_ = "malformed chunk size";
          return kError;
        }
        for (char c : size) {
          const int v = HexValue(c);
          if (v < 0) {
            error_ = "malformed chunk size";
            return kError;
          }
          n = n * 16 + static_cast<uint64_t>(v);
        }
        consumed += eol + 2;
        if (n == 0) {
          state_ = kTrailer;
          break;
        }
        if (out.size() + n > limit_bytes_) return kTooLarge;
        remaining_ = n;
        state_ = kData;
        break;
      }
      case kData: {
        if (rest.empty()) return kNeedMore;
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, rest.size()));
        out.append(rest.data(), take);
        consumed += take;
        remaining_ -= take;
        if (remaining_ == 0) state_ = kDataEnd;
        break;
      }
      case kDataEnd:
        if (rest.size() < 2) return kNeedMore;
        if (!rest.starts_with("\r\n")) {
          error_ = "chunk data not followed by CRLF";
          return kError;
        }
        consumed += 2;
        state_ = kSize;
        break;
      case kTrailer: {
        // Trailer fields (ignored) up to an empty line.
        const size_t eol = rest.find("\r\n");
        if (eol == std::string_view::npos) {
          if (rest.size() > 8192) {
            error_ = "chunked trailer line longer than 8192 bytes";
            return kError;
          }
          return kNeedMore;
        }
        consumed += eol + 2;
        if (eol == 0) return kDone;
        break;
      }
    }
  }
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace neighborly::extender
