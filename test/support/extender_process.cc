#include "test/support/extender_process.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace neighborly::testing {
namespace {

std::string WordAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  const size_t end = line.find_first_of(" \t\r\n", start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

int ExtenderAddresses::http_port() const {
  const size_t colon = http.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(http.substr(colon + 1), &port)) return 0;
  return port;
}

std::optional<ExtenderAddresses> ParseListeningLine(const std::string& line) {
  ExtenderAddresses out{WordAfter(line, "http="), WordAfter(line, "grpc="),
                        WordAfter(line, "placement=")};
  if (out.http.empty() || out.grpc.empty()) return std::nullopt;
  return out;
}

absl::StatusOr<RunningExtender> StartExtender(const std::string& grpc_address,
                                              const std::vector<std::string>& extra_args,
                                              absl::Duration timeout) {
  std::vector<std::string> argv = {BinaryPath("extender/neighborly-extender"),
                                   "--http-address",
                                   "127.0.0.1:0",
                                   "--grpc-address",
                                   grpc_address,
                                   "--grpc-insecure-plaintext"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(std::move(argv));
  if (!p.ok()) return p.status();
  RunningExtender out;
  out.process = std::move(*p);
  const std::optional<std::string> line = out.process->WaitForLine("listening", timeout);
  if (!line) {
    return absl::DeadlineExceededError(
        absl::StrCat("the extender printed no listening line:\n", out.process->Stderr()));
  }
  const std::optional<ExtenderAddresses> addresses = ParseListeningLine(*line);
  if (!addresses) return absl::InternalError(absl::StrCat("unparsable line: ", *line));
  out.addresses = *addresses;
  return out;
}

}  // namespace neighborly::testing
