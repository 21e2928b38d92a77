#include "extender/src/api/operator_auth.h"

#include <openssl/crypto.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

void ReplyError(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(nlohmann::json{{"Error", std::string(message)}}.dump(), "application/json");
}

// Equal length and equal bytes, in time that depends on the length only.
bool SameToken(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

absl::StatusOr<OperatorTokens> ParseOperatorTokens(std::string_view text) {
  OperatorTokens out;
  int line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    if (line.find_first_of(" \t") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": a token has no blanks (one token a line)"));
    }
    if (line.size() < OperatorTokens::kMinTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": a token of ",
                                                     line.size(), " bytes is too short (at least ",
                                                     OperatorTokens::kMinTokenBytes, ")"));
    }
    out.tokens.emplace_back(line);
  }
  if (out.tokens.empty()) return absl::InvalidArgumentError("no token in the file");
  return out;
}

bool OperatorPathNeedsToken(std::string_view path) {
  return path == "/v1" || path.starts_with("/v1/");
}

absl::StatusOr<std::unique_ptr<OperatorAuth>> OperatorAuth::Create(Options options,
                                                                   const Clock& clock) {
  if (options.token_file.empty()) {
    return std::unique_ptr<OperatorAuth>(new OperatorAuth(nullptr));
  }
  absl::StatusOr<std::unique_ptr<ReloadingFiles<OperatorTokens>>> tokens =
      ReloadingFiles<OperatorTokens>::Create(
          {.what = "operator.tokenFile",
           .paths = {options.token_file},
           .labels = {"token file"},
           .interval = options.reload_interval,
           .on_reload = nullptr},
          clock,
          [path = options.token_file](std::span<const std::string> contents)
              -> absl::StatusOr<std::shared_ptr<const OperatorTokens>> {
            absl::StatusOr<OperatorTokens> parsed = ParseOperatorTokens(contents[0]);
            if (!parsed.ok()) {
              return absl::InvalidArgumentError(
                  absl::StrCat("token file ", path, ": ", parsed.status().message()));
            }
            return std::make_shared<const OperatorTokens>(std::move(*parsed));
          });
  if (!tokens.ok()) return tokens.status();
  return std::unique_ptr<OperatorAuth>(new OperatorAuth(std::move(*tokens)));
}

bool OperatorAuth::Accepts(std::string_view header) {
  if (tokens_ == nullptr) return false;
  header = Trim(header);
  constexpr std::string_view kScheme = "Bearer ";
  if (header.size() <= kScheme.size() ||
      !EqualsIgnoreCase(header.substr(0, kScheme.size()), kScheme)) {
    return false;
  }
  const std::string_view token = Trim(header.substr(kScheme.size()));
  const std::shared_ptr<const OperatorTokens> tokens = tokens_->Current();
  bool accepted = false;
  // Every configured token is compared, so the time does not tell which matched.
  for (const std::string& t : tokens->tokens) accepted |= SameToken(token, t);
  return accepted;
}

bool OperatorAuth::Refuse(const httplib::Request& req, httplib::Response& res) {
  if (!OperatorPathNeedsToken(req.path)) return false;
  if (tokens_ == nullptr) {
    ReplyError(res, 403,
               "the operator API is not served on this port without operator.tokenFile "
               "(docs/security.md)");
    return true;
  }
  if (!req.has_header("Authorization")) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"neighborly\"");
    ReplyError(res, 401, "the operator API needs \"Authorization: Bearer TOKEN\"");
    return true;
  }
  if (!Accepts(req.get_header_value("Authorization"))) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"neighborly\", error=\"invalid_token\"");
    ReplyError(res, 401, "bearer token not accepted");
    return true;
  }
  return false;
}

}  // namespace neighborly::extender
