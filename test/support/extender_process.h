// Starts the real neighborly-extender for integration tests: HTTP on
// 127.0.0.1:0, telemetry on the given address with explicit plaintext (loopback
// only), and waits for its "listening http=H:P grpc=H:P" line.
//
//   absl::StatusOr<RunningExtender> e = StartExtender();
//   httplib::Client client("http://" + e->addresses.http);
#ifndef NEIGHBORLY_TEST_SUPPORT_EXTENDER_PROCESS_H_
#define NEIGHBORLY_TEST_SUPPORT_EXTENDER_PROCESS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "test/support/subprocess.h"

namespace neighborly::testing {

struct ExtenderAddresses {
  std::string http;
  std::string grpc;
  std::string placement;  // empty: no placement port
  // The port of `http` (0 when it has none).
  int http_port() const;
};

// The addresses in a line such as "... listening http=127.0.0.1:41233 grpc=127.0.0.1:39411"
// (and " placement=H:P" where the placement port listens).
std::optional<ExtenderAddresses> ParseListeningLine(const std::string& line);

struct RunningExtender {
  std::unique_ptr<Subprocess> process;
  ExtenderAddresses addresses;
};

absl::StatusOr<RunningExtender> StartExtender(const std::string& grpc_address = "127.0.0.1:0",
                                              const std::vector<std::string>& extra_args = {},
                                              absl::Duration timeout = absl::Seconds(60));

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_EXTENDER_PROCESS_H_
