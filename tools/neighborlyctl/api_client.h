// SPDX-License-Identifier: Apache-2.0
// File: api_client.h
//
// The transport of neighborlyctl: GET a path of the extender's operator API
// and hand back the body, or a status that says in one line what went wrong
// (server unreachable, an error answer with its message). An interface so the
// commands can be tested against canned answers as well as a real server.
//
// Example:
//   absl::StatusOr<ServerUrl> url = ParseServerUrl("http://127.0.0.1:8888");
//   HttpApiClient client(*url, absl::Seconds(5));
//   absl::StatusOr<std::string> body = client.Get("/v1/nodes");
#ifndef NEIGHBORLY_TOOLS_NEIGHBORLYCTL_API_CLIENT_H_
#define NEIGHBORLY_TOOLS_NEIGHBORLYCTL_API_CLIENT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace neighborly::ctl {

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  // Get returns the body of a 2xx answer. Otherwise: UNAVAILABLE when the
  // server cannot be reached, or the HTTP status mapped to a code with the
  // server's own error message (its JSON "error"/"Error" field, else the body).
  virtual absl::StatusOr<std::string> Get(std::string_view path_and_query) = 0;
};

// How neighborlyctl proves who it is and whom it trusts (--cacert, --cert,
// --key, --token-file). All optional; the files are read by the client.
struct ClientCredentials {
  std::string ca_file;    // https: CA bundle to verify the server; empty: the system's
  std::string cert_file;  // https: client certificate (the scheduler port asks for one)
  std::string key_file;
  std::string bearer_token;  // sent as "Authorization: Bearer ..." (the operator port)
};

// An http:// or https:// server address, optionally with a path prefix, and
// the credentials to reach it with.
struct ServerUrl {
  bool https = false;
  std::string host;
  int port = 80;            // 443 for https:// without a port
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
  std::string text;         // as given, for messages
  ClientCredentials credentials;
};

// ParseServerUrl accepts "http[s]://HOST[:PORT][/PREFIX]" or "HOST:PORT" (http).
absl::StatusOr<ServerUrl> ParseServerUrl(std::string_view url);

// PercentEncode escapes everything but unreserved characters (RFC 3986), for
// a path segment or a query value.
std::string PercentEncode(std::string_view text);

class HttpApiClient : public ApiClient {
 public:
  HttpApiClient(ServerUrl url, absl::Duration timeout) : url_(std::move(url)), timeout_(timeout) {}
  absl::StatusOr<std::string> Get(std::string_view path_and_query) override;

 private:
  ServerUrl url_;
  absl::Duration timeout_;
};

// ErrorMessageFromBody extracts the message of an error answer: the JSON
// "error" or "Error" string when there is one, else the trimmed body.
std::string ErrorMessageFromBody(std::string_view body);

}  // namespace neighborly::ctl

#endif  // NEIGHBORLY_TOOLS_NEIGHBORLYCTL_API_CLIENT_H_
