#include "common/reloading_files.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/strings.h"
#include "spdlog/spdlog.h"

namespace neighborly {
namespace {

// Credential files are small; anything larger is not one.
constexpr size_t kMaxFileBytes = 4 << 20;

// Errors name the file as "<label> <path>", or by its path where `label` is empty.
absl::StatusOr<std::string> ReadCredentialFile(const std::string& path, std::string_view label) {
  const std::string name = label.empty() ? path : absl::StrCat(Av(label), " ", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(name, ": cannot read the file"));
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(name, ": read error"));
  if (s.str().size() > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": larger than 4 MiB"));
  }
  return std::move(s).str();
}

}  // namespace

namespace internal {
namespace {

// A file whose timestamps are this close to the time it was examined may
// change again without its stat changing (timestamps are kept at the kernel
// tick's granularity): its contents are compared on the next check too (as
// git does for "racily clean" index entries).
constexpr absl::Duration kRacyWindow = absl::Seconds(2);

absl::StatusOr<std::vector<std::string>> ReadAll(const ReloadingFilesOptions& options) {
  std::vector<std::string> contents;
  contents.reserve(options.paths.size());
  for (size_t i = 0; i < options.paths.size(); ++i) {
    absl::StatusOr<std::string> text = ReadCredentialFile(
        options.paths[i], i < options.labels.size() ? options.labels[i] : std::string_view());
    if (!text.ok()) return text.status();
    contents.push_back(std::move(*text));
  }
  return contents;
}

}  // namespace

FileChangeCheck::FileChangeCheck(ReloadingFilesOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

std::vector<FileChangeCheck::FileStat> FileChangeCheck::StatAll() const {
  std::vector<FileStat> stats(options_.paths.size());
  for (size_t i = 0; i < options_.paths.size(); ++i) {
    struct stat st {};
    if (stat(options_.paths[i].c_str(), &st) != 0) continue;  // ok = false: a change
    stats[i] = {
        .ok = true,
        .device = static_cast<uint64_t>(st.st_dev),
        .inode = static_cast<uint64_t>(st.st_ino),
        .size = static_cast<uint64_t>(st.st_size),
        .mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
        .ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
  }
  return stats;
}

bool FileChangeCheck::Due() const {
  return absl::ToUnixNanos(clock_.Now()) >= next_check_ns_.load(std::memory_order_relaxed);
}

absl::StatusOr<std::vector<std::string>> FileChangeCheck::ReadInitial() {
  // Stat before reading: a change between the two shows as a changed stat later.
  stats_ = StatAll();
  racy_ = true;
  next_check_ns_ = absl::ToUnixNanos(clock_.Now() + options_.interval);
  return ReadAll(options_);
}

std::optional<std::vector<std::string>> FileChangeCheck::Check() {
  next_check_ns_ = absl::ToUnixNanos(clock_.Now() + options_.interval);
  std::vector<FileStat> stats = StatAll();
  if (stats == stats_ && !racy_) return std::nullopt;
  // Racy is judged against the real time: file timestamps are real time, whatever
  // clock paces the checks.
  const int64_t racy_after_ns = absl::ToUnixNanos(absl::Now() - kRacyWindow);
  racy_ = false;
  for (const FileStat& s : stats) {
    racy_ = racy_ || s.mtime_ns >= racy_after_ns || s.ctime_ns >= racy_after_ns;
  }
  stats_ = std::move(stats);
  absl::StatusOr<std::vector<std::string>> contents = ReadAll(options_);
  if (!contents.ok()) {
    const std::string message(contents.status().message());
    if (message != failed_read_) Fail(message);
    failed_read_ = message;
    return std::nullopt;
  }
  failed_read_.clear();
  if (*contents == good_) {
    failed_.clear();  // back to the good files: breaking them again is reported again
    return std::nullopt;
  }
  if (*contents == failed_) return std::nullopt;
  return std::move(*contents);
}

void FileChangeCheck::Accepted(std::vector<std::string> contents, bool initial) {
  good_ = std::move(contents);
  failed_.clear();
  if (initial) return;
  reloads_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("{}: reloaded {}", options_.what, absl::StrJoin(options_.paths, ", "));
  if (options_.on_reload) options_.on_reload(true);
}

void FileChangeCheck::Rejected(std::vector<std::string> contents, const absl::Status& why) {
  failed_ = std::move(contents);
  Fail(std::string(why.message()));
}

void FileChangeCheck::Fail(const std::string& message) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn("{}: reload failed, keeping the previous material: {}", options_.what, message);
  if (options_.on_reload) options_.on_reload(false);
}

}  // namespace internal
}  // namespace neighborly
