// Authentication of the operator API on the operator port (docs/security.md,
// "The operator port"): /v1/... needs `Authorization: Bearer TOKEN` with a
// token listed in operator.tokenFile; /healthz, /readyz and /metrics stay open
// (probes and Prometheus carry no credentials). The token file is one token a
// line (blank lines and `#` comments ignored) and is reloaded when it changes,
// so a rotated Secret needs no restart.
//
// A wrapper around whatever routes RegisterOperatorApi registers: it decides
// by path prefix before routing, so routes added later under /v1 are covered.
//
//   absl::StatusOr<std::unique_ptr<OperatorAuth>> auth =
//       OperatorAuth::Create({.token_file = "/etc/neighborly-operator/tokens"}, clock);
//   operator_server.SetRequestFilter([&](const auto& req, auto& res) {
//     return (*auth)->Refuse(req, res);   // true: answered 401/403, do not route
//   });
#ifndef NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_AUTH_H_
#define NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_AUTH_H_

#include <httplib.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/reloading_files.h"

namespace neighborly::extender {

// The accepted tokens, parsed from the file's text. Tokens shorter than
// kMinTokenBytes are refused (a guessable token is no authentication).
struct OperatorTokens {
  static constexpr size_t kMinTokenBytes = 16;
  std::vector<std::string> tokens;
};
absl::StatusOr<OperatorTokens> ParseOperatorTokens(std::string_view text);

// Whether `path` needs a token: /v1 and everything under it.
bool OperatorPathNeedsToken(std::string_view path);

class OperatorAuth {
 public:
  struct Options {
    std::string token_file;  // empty: /v1 is refused (403) on this port
    absl::Duration reload_interval = absl::Seconds(10);
  };
  // Reads the token file now (an error names it); a later change that does
  // not parse keeps the previous tokens (logged once).
  static absl::StatusOr<std::unique_ptr<OperatorAuth>> Create(Options options, const Clock& clock);

  // Answers 401 (no or a wrong token) or 403 (no tokens configured) with a
  // JSON {"Error": ...} and returns true; returns false when the request may
  // proceed to its route.
  bool Refuse(const httplib::Request& req, httplib::Response& res);

  // Whether `header` (the Authorization header's value) carries an accepted token.
  bool Accepts(std::string_view header);

 private:
  explicit OperatorAuth(std::unique_ptr<ReloadingFiles<OperatorTokens>> tokens)
      : tokens_(std::move(tokens)) {}
  std::unique_ptr<ReloadingFiles<OperatorTokens>> tokens_;  // null: no token file
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_OPERATOR_AUTH_H_
