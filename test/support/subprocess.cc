#include "test/support/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace neighborly::testing {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(std::vector<std::string> argv) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (access(argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(argv[0], " is not an executable file"));
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  auto p = std::unique_ptr<Subprocess>(new Subprocess());
  p->pid_ = pid;
  p->reader_ = std::thread([raw = p.get(), fd = pipe_fds[0]] { raw->ReadLoop(fd); });
  return p;
}

void Subprocess::ReadLoop(int fd) {
  std::string partial;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(partial.substr(0, nl));
      partial.erase(0, nl + 1);
      cv_.notify_all();
    }
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (!partial.empty()) lines_.push_back(partial);
  eof_ = true;
  cv_.notify_all();
}

std::optional<std::string> Subprocess::WaitForLine(const std::string& needle,
                                                   absl::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  std::unique_lock<std::mutex> lock(mu_);
  size_t checked = 0;
  while (true) {
    for (; checked < lines_.size(); ++checked) {
      if (lines_[checked].find(needle) != std::string::npos) return lines_[checked];
    }
    if (eof_) return std::nullopt;
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      for (; checked < lines_.size(); ++checked) {
        if (lines_[checked].find(needle) != std::string::npos) return lines_[checked];
      }
      return std::nullopt;
    }
  }
}

void Subprocess::Signal(int signal) {
  if (!exit_code_) kill(pid_, signal);
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_code_) return exit_code_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = DecodeWaitStatus(status);
      if (reader_.joinable()) reader_.join();
      return exit_code_;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    // Polling waitpid: there is no portable way to wait for a child with a timeout.
    usleep(10'000);
  }
}

int Subprocess::Terminate(absl::Duration timeout) {
  if (exit_code_) return *exit_code_;
  kill(pid_, SIGTERM);
  if (std::optional<int> code = Wait(timeout)) return *code;
  kill(pid_, SIGKILL);
  Wait(absl::Seconds(10));
  return -1;
}

std::string Subprocess::Stderr() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const std::string& l : lines_) absl::StrAppend(&out, l, "\n");
  return out;
}

Subprocess::~Subprocess() {
  if (!exit_code_) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
  if (reader_.joinable()) reader_.join();
}

std::string BinaryPath(const std::string& relative) {
  return absl::StrCat(NEIGHBORLY_BINARY_DIR, "/", relative);
}

}  // namespace neighborly::testing
