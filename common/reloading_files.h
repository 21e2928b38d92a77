// Credentials read from files that are rotated in place (a Secret volume,
// cert-manager): the parsed material is held behind a shared_ptr that readers
// copy, and a reader that finds the check interval passed stats the files and,
// if they changed, reads and parses them again. A reload that fails (a
// half-written file, a key that does not match its certificate) keeps the last
// good material, logs one warning naming the problem and counts it; the same
// broken content is not reported twice.
//
// Used by the HTTPS server (certificate, key, client CA; per handshake) and by
// the node-identity verifier (the issuer's public keys; per token).
//
//   auto keys = ReloadingFiles<KeySet>::Create(
//       {.what = "grpc.identity keys", .paths = {"/keys/jwks.json"}, .interval =
//       absl::Seconds(10)}, clock, [](std::span<const std::string> contents) { return
//       ParseKeys(contents[0]); });
//   if (!keys.ok()) -> startup error (names the file)
//   std::shared_ptr<const KeySet> now = (*keys)->Current();   // at most a stat per file
//
// Cost on the reader's path: one clock read; once per interval, one stat per
// file. Only when a file changed are the files read and parsed, by the one
// reader that takes the check (try_lock): the others keep the current
// material and never wait for file I/O.
#ifndef NEIGHBORLY_COMMON_RELOADING_FILES_H_
#define NEIGHBORLY_COMMON_RELOADING_FILES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace neighborly {

struct ReloadingFilesOptions {
  std::string what;                // names the material in logs ("http.tls")
  std::vector<std::string> paths;  // read in this order; all must exist
  // Optional, per path: what the file is ("CA file"), named before the path in errors.
  std::vector<std::string> labels;
  // How often the files are checked; zero: on every Current() (tests).
  absl::Duration interval = absl::Seconds(10);
  // Called after each reload attempt that parsed changed content (true) or
  // failed (false); e.g. to count it in /metrics.
  std::function<void(bool ok)> on_reload;
};

namespace internal {

// The non-template part: the interval, the stat snapshot and the contents last
// seen. `Check` returns the files' contents when they are new and worth parsing.
class FileChangeCheck {
 public:
  FileChangeCheck(ReloadingFilesOptions options, const Clock& clock);

  // Reads every file (an error names the file); records what was read.
  absl::StatusOr<std::vector<std::string>> ReadInitial();
  // Whether the interval has passed since the last check (cheap; lock-free).
  bool Due() const;
  // Under the caller's lock: stats the files; when they changed, reads them.
  // Returns the contents to parse, or nothing when they are the good or the
  // last failed contents, or unreadable (then already reported as a failure).
  std::optional<std::vector<std::string>> Check();
  // The outcome of parsing what ReadInitial (`initial`: not counted) or Check returned.
  void Accepted(std::vector<std::string> contents, bool initial = false);
  void Rejected(std::vector<std::string> contents, const absl::Status& why);

  uint64_t reloads() const { return reloads_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  const ReloadingFilesOptions& options() const { return options_; }

 private:
  struct FileStat {
    bool ok = false;
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const FileStat&) const = default;
  };
  std::vector<FileStat> StatAll() const;
  void Fail(const std::string& message);

  const ReloadingFilesOptions options_;
  const Clock& clock_;
  std::atomic<int64_t> next_check_ns_{0};
  // Guarded by the owner's check lock.
  std::vector<FileStat> stats_;
  bool racy_ = false;  // a file changed so recently that its stat may not show the next change
  std::vector<std::string> good_;
  std::vector<std::string> failed_;
  std::string failed_read_;  // the last unreadable-file message, reported once
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> failures_{0};
};

}  // namespace internal

template <typename T>
class ReloadingFiles {
 public:
  // Parses the files' contents (in `paths` order) into material; errors name the file.
  using Parser =
      std::function<absl::StatusOr<std::shared_ptr<const T>>(std::span<const std::string>)>;

  // Reads and parses the files now: an error here is a startup error.
  static absl::StatusOr<std::unique_ptr<ReloadingFiles>> Create(ReloadingFilesOptions options,
                                                                const Clock& clock, Parser parse) {
    std::unique_ptr<ReloadingFiles> files(
        new ReloadingFiles(std::move(options), clock, std::move(parse)));
    absl::StatusOr<std::vector<std::string>> contents = files->check_.ReadInitial();
    if (!contents.ok()) return contents.status();
    absl::StatusOr<std::shared_ptr<const T>> material = files->parse_(*contents);
    if (!material.ok()) return material.status();
    files->current_ = std::move(*material);
    files->check_.Accepted(std::move(*contents), /*initial=*/true);
    return files;
  }

  // The material to use now, after checking the files if the interval passed.
  std::shared_ptr<const T> Current() {
    if (check_.Due()) MaybeReload();
    std::lock_guard<std::mutex> lock(current_mu_);
    return current_;
  }

  // Successful reloads and failed ones since Create (the initial load not counted).
  uint64_t reloads() const { return check_.reloads(); }
  uint64_t failures() const { return check_.failures(); }

 private:
  ReloadingFiles(ReloadingFilesOptions options, const Clock& clock, Parser parse)
      : check_(std::move(options), clock), parse_(std::move(parse)) {}

  void MaybeReload() {
    std::unique_lock<std::mutex> lock(check_mu_, std::try_to_lock);
    if (!lock.owns_lock()) return;  // another reader is checking; use the current material
    std::optional<std::vector<std::string>> contents = check_.Check();
    if (!contents.has_value()) return;
    absl::StatusOr<std::shared_ptr<const T>> material = parse_(*contents);
    if (!material.ok()) {
      check_.Rejected(std::move(*contents), material.status());
      return;
    }
    {
      std::lock_guard<std::mutex> current_lock(current_mu_);
      current_ = std::move(*material);
    }
    check_.Accepted(std::move(*contents));
  }

  internal::FileChangeCheck check_;
  const Parser parse_;
  std::mutex check_mu_;
  std::mutex current_mu_;
  std::shared_ptr<const T> current_;
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_RELOADING_FILES_H_
