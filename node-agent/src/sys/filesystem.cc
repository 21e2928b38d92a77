#include "node-agent/src/sys/filesystem.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::agent {
namespace {

constexpr char kErrnoPayload[] = "neighborly.io/errno";

class RealFilesystem final : public Filesystem {
 public:
  explicit RealFilesystem(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  absl::StatusOr<std::string> ReadFile(std::string_view path) const override {
    const std::string full = HostPath(path);
    const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open", path);
    std::string text;
    char buffer[8192];
    while (true) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        close(fd);
        return ErrnoStatus(err, "read", path);
      }
      if (n == 0) break;
      if (text.size() + static_cast<size_t>(n) > kMaxFileBytes) {
        close(fd);
        return absl::OutOfRangeError(
            absl::StrCat("read ", Av(path), ": larger than ", kMaxFileBytes, " bytes"));
      }
      text.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    return text;
  }

  absl::StatusOr<std::vector<DirEntry>> ListDir(std::string_view path) const override {
    const std::string full = HostPath(path);
    DIR* dir = opendir(full.c_str());
    if (dir == nullptr) return ErrnoStatus(errno, "opendir", path);
    std::vector<DirEntry> entries;
    errno = 0;
    while (const dirent* entry = readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = entry->d_type == DT_DIR;
      if (entry->d_type == DT_UNKNOWN || entry->d_type == DT_LNK) {
        struct stat st;
        is_dir = stat(JoinPath(full, name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      entries.push_back({std::string(name), is_dir});
    }
    closedir(dir);
    std::sort(entries.begin(), entries.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return entries;
  }

  bool IsDirectory(std::string_view path) const override {
    struct stat st;
    return stat(HostPath(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  bool Exists(std::string_view path) const override {
    struct stat st;
    return stat(HostPath(path).c_str(), &st) == 0;
  }

  absl::Status WriteFile(std::string_view path, std::string_view content) override {
    const std::string full = HostPath(path);
    const int fd = open(full.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open for writing", path);
    // Kernel control files take one value per write(2); never split it.
    const ssize_t n = write(fd, content.data(), content.size());
    const int err = errno;
    close(fd);
    if (n < 0) return ErrnoStatus(err, "write", path);
    if (static_cast<size_t>(n) != content.size()) {
      return absl::DataLossError(absl::StrCat("write ", Av(path), ": short write"));
    }
    return absl::OkStatus();
  }

  absl::Status MakeDir(std::string_view path) override {
    if (mkdir(HostPath(path).c_str(), 0755) != 0) return ErrnoStatus(errno, "mkdir", path);
    return absl::OkStatus();
  }

  absl::Status ReplaceFile(std::string_view path, std::string_view content) override {
    const std::string full = HostPath(path);
    const std::string temporary = absl::StrCat(full, ".tmp.", getpid());
    const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoStatus(errno, "create", absl::StrCat(Av(path), ".tmp"));
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        close(fd);
        unlink(temporary.c_str());
        return ErrnoStatus(err, "write", path);
      }
      done += static_cast<size_t>(n);
    }
    const bool synced = fsync(fd) == 0;
    const int sync_err = errno;
    close(fd);
    if (!synced) {
      unlink(temporary.c_str());
      return ErrnoStatus(sync_err, "fsync", path);
    }
    if (rename(temporary.c_str(), full.c_str()) != 0) {
      const int err = errno;
      unlink(temporary.c_str());
      return ErrnoStatus(err, "rename onto", path);
    }
    return absl::OkStatus();
  }

  absl::Status RemoveDir(std::string_view path) override {
    if (rmdir(HostPath(path).c_str()) != 0) return ErrnoStatus(errno, "rmdir", path);
    return absl::OkStatus();
  }

  std::string HostPath(std::string_view path) const override {
    if (root_ == "/") return std::string(path);
    return JoinPath(root_, path);
  }

 private:
  std::string root_;
};

}  // namespace

std::unique_ptr<Filesystem> NewRealFilesystem(std::string root) {
  return std::make_unique<RealFilesystem>(std::move(root));
}

std::string JoinPath(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (b.empty()) return a.empty() ? "/" : std::string(a);
  return absl::StrCat(Av(a), "/", Av(b));
}

absl::Status ErrnoStatus(int err, std::string_view operation, std::string_view path) {
  const std::string message =
      absl::StrCat(Av(operation), " ", Av(path), ": ", std::strerror(err), " (errno ", err, ")");
  absl::Status status;
  switch (err) {
    case ENOENT:
    case ESRCH:
      status = absl::NotFoundError(message);
      break;
    case EACCES:
    case EPERM:
      status = absl::PermissionDeniedError(message);
      break;
    case ENOSPC:
    case EMFILE:
      status = absl::ResourceExhaustedError(message);
      break;
    case EBUSY:
      status = absl::UnavailableError(message);
      break;
    case EINVAL:
      status = absl::InvalidArgumentError(message);
      break;
    case EEXIST:
      status = absl::AlreadyExistsError(message);
      break;
    default:
      status = absl::FailedPreconditionError(message);
  }
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

int ErrnoOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrnoPayload);
  if (!payload) return 0;
  return ParseInt<int>(Sv(std::string(*payload))).value_or(0);
}

}  // namespace neighborly::agent
