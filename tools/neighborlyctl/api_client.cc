// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/api_client.h"

#include <httplib.h>
#include <unistd.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::ctl {
namespace {

absl::Status StatusForHttp(int status, std::string message) {
  if (status == 400) return absl::InvalidArgumentError(message);
  if (status == 401) return absl::UnauthenticatedError(message);
  if (status == 403) return absl::PermissionDeniedError(message);
  if (status == 404) return absl::NotFoundError(message);
  if (status == 503) return absl::UnavailableError(message);
  return absl::UnknownError(message);
}

}  // namespace

absl::StatusOr<ServerUrl> ParseServerUrl(std::string_view url) {
  ServerUrl out;
  out.text = std::string(url);
  std::string_view rest = Trim(url);
  if (rest.empty()) return absl::InvalidArgumentError("--server is empty");
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    out.https = true;
    out.port = 443;
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  }
  if (rest.find("://") != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported URL scheme in ", Av(url)));
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    out.path_prefix = std::string(prefix);
  }
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    std::optional<int> port = ParseInt<int>(authority.substr(colon + 1));
    if (!port || *port < 1 || *port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad port in ", Av(url), ": want 1..65535"));
    }
    out.port = *port;
    authority = authority.substr(0, colon);
  }
  if (authority.empty()) return absl::InvalidArgumentError(absl::StrCat("no host in ", Av(url)));
  out.host = std::string(authority);
  return out;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ErrorMessageFromBody(std::string_view body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object()) {
    for (const char* key : {"error", "Error", "message"}) {
      auto it = json.find(key);
      if (it != json.end() && it->is_string() && !it->get<std::string>().empty()) {
        return it->get<std::string>();
      }
    }
  }
  std::string text(Trim(body));
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text.empty() ? "(empty body)" : text;
}

absl::StatusOr<std::string> HttpApiClient::Get(std::string_view path_and_query) {
  const ClientCredentials& creds = url_.credentials;
  if (!url_.https && (!creds.ca_file.empty() || !creds.cert_file.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cacert/--cert/--key need an https:// server, not ", url_.text));
  }
  if (creds.cert_file.empty() != creds.key_file.empty()) {
    return absl::InvalidArgumentError("--cert and --key go together");
  }
  for (const std::string* file : {&creds.ca_file, &creds.cert_file, &creds.key_file}) {
    if (!file->empty() && ::access(file->c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", *file));
    }
  }
  // httplib::Client picks plain HTTP or HTTPS from the scheme; the client
  // certificate is given at construction, the CA through its setter.
  const std::string scheme_host_port =
      absl::StrCat(url_.https ? "https://" : "http://", url_.host, ":", url_.port);
  httplib::Client client(scheme_host_port, creds.cert_file, creds.key_file);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot use ", url_.text,
                     creds.cert_file.empty()
                         ? std::string()
                         : absl::StrCat(" with certificate ", creds.cert_file, " and key ",
                                        creds.key_file, " (not PEM, or the key does not match)")));
  }
  if (url_.https) {
    if (!creds.ca_file.empty()) client.set_ca_cert_path(creds.ca_file);
    client.enable_server_certificate_verification(true);
  }
  const int64_t timeout_us = absl::ToInt64Microseconds(timeout_);
  client.set_connection_timeout(timeout_us / 1'000'000, timeout_us % 1'000'000);
  client.set_read_timeout(timeout_us / 1'000'000, timeout_us % 1'000'000);
  client.set_write_timeout(timeout_us / 1'000'000, timeout_us % 1'000'000);
  const std::string path = absl::StrCat(url_.path_prefix, Av(path_and_query));
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!creds.bearer_token.empty()) {
    headers.emplace("Authorization", absl::StrCat("Bearer ", creds.bearer_token));
  }
  httplib::Result result = client.Get(path, headers);
  if (!result) {
    std::string detail = httplib::to_string(result.error());
    if (result.error() == httplib::Error::SSLServerVerification) {
      absl::StrAppend(&detail, " (pass the cluster's CA with --cacert; the certificate must name ",
                      url_.host, ")");
    } else if (result.error() == httplib::Error::SSLConnection && creds.cert_file.empty()) {
      absl::StrAppend(&detail, " (a port that wants a client certificate: --cert and --key)");
    }
    return absl::UnavailableError(absl::StrCat("cannot reach ", url_.text, ": ", detail));
  }
  if (result->status < 200 || result->status > 299) {
    return StatusForHttp(result->status,
                         absl::StrCat(url_.text, " answered ", result->status, " for ", path, ": ",
                                      ErrorMessageFromBody(result->body)));
  }
  return std::move(result->body);
}

}  // namespace neighborly::ctl
