// Runs one of the project's binaries as a child process for integration tests:
// captures its stderr line by line so a test can wait (with a deadline) for a
// line such as "listening http=127.0.0.1:41233 grpc=127.0.0.1:39411".
//
//   absl::StatusOr<std::unique_ptr<Subprocess>> p =
//       Subprocess::Start({"build/.../neighborly-extender", "--http-address", "127.0.0.1:0"});
//   std::optional<std::string> line = (*p)->WaitForLine("listening", absl::Seconds(10));
//   (*p)->Terminate();   // SIGTERM, then the exit status
#ifndef NEIGHBORLY_TEST_SUPPORT_SUBPROCESS_H_
#define NEIGHBORLY_TEST_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace neighborly::testing {

class Subprocess {
 public:
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(std::vector<std::string> argv);
  ~Subprocess();  // SIGKILLs a child still running

  // The first stderr line containing `needle` (from the start of the process),
  // or nullopt when the deadline passes or the child exits first.
  std::optional<std::string> WaitForLine(const std::string& needle, absl::Duration timeout);

  // Sends SIGTERM and waits up to `timeout` for exit; returns the exit code,
  // 128+signal when killed by a signal, or -1 when it had to be SIGKILLed.
  int Terminate(absl::Duration timeout = absl::Seconds(10));

  // Sends `signal` without waiting.
  void Signal(int signal);

  // Waits for exit up to `timeout`; the exit code as in Terminate, nullopt if still running.
  std::optional<int> Wait(absl::Duration timeout);

  std::string Stderr() const;  // everything captured so far
  pid_t pid() const { return pid_; }

 private:
  Subprocess() = default;
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  bool eof_ = false;
  std::optional<int> exit_code_;
};

// Path of a built binary, from the build tree the test runs in.
std::string BinaryPath(const std::string& relative);  // e.g. "extender/neighborly-extender"

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_SUBPROCESS_H_
