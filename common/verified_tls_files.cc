#include "common/verified_tls_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/strings.h"
#include "spdlog/spdlog.h"

namespace neighborly {
namespace {

const Clock& Wall() {
  static const RealClock clock;
  return clock;
}

}  // namespace

// One in-memory file at a fixed path, /proc/self/fd/N: replacing it puts a
// new memfd at descriptor N (dup3), so a reader opens either the old content
// or the new, never a mixture.
class VerifiedTlsFiles::MemFile {
 public:
  static absl::StatusOr<std::unique_ptr<MemFile>> Create(const char* name, std::string_view content,
                                                         time_t mtime) {
    absl::StatusOr<int> fd = Make(name, content, mtime);
    if (!fd.ok()) return fd.status();
    return std::unique_ptr<MemFile>(new MemFile(name, *fd));
  }
  ~MemFile() { close(fd_); }

  absl::Status Replace(std::string_view content, time_t mtime) {
    absl::StatusOr<int> fd = Make(name_, content, mtime);
    if (!fd.ok()) return fd.status();
    const int rc = dup3(*fd, fd_, O_CLOEXEC);
    const int error = errno;
    close(*fd);
    if (rc < 0) return absl::InternalError(absl::StrCat("dup3: ", std::strerror(error)));
    return absl::OkStatus();
  }
  std::string path() const { return absl::StrCat("/proc/self/fd/", fd_); }

 private:
  MemFile(const char* name, int fd) : name_(name), fd_(fd) {}

  static absl::StatusOr<int> Make(const char* name, std::string_view content, time_t mtime) {
    const int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error = errno;
        close(fd);
        return absl::InternalError(absl::StrCat("writing a memfd: ", std::strerror(error)));
      }
      done += static_cast<size_t>(n);
    }
    const timespec times[2] = {{mtime, 0}, {mtime, 0}};
    if (futimens(fd, times) != 0) {
      const int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("futimens on a memfd: ", std::strerror(error)));
    }
    return fd;
  }

  const char* name_;
  int fd_;
};

struct VerifiedTlsFiles::CheckedSet {
  std::string identity;  // certificate chain, then key
  std::string ca;
};

VerifiedTlsFiles::VerifiedTlsFiles(Options options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> VerifiedTlsFiles::Create(Options options) {
  const TlsFileNames names = options.files;
  if (names.cert_file.empty() != names.key_file.empty()) {
    return absl::InvalidArgumentError("a certificate needs both a certificate file and a key file");
  }
  if (names.ca_file.empty() && names.cert_file.empty()) {
    return absl::InvalidArgumentError("no TLS files are configured");
  }
  // The files in the order ReloadingFiles reads them: certificate, key, CA.
  const bool identity = !names.cert_file.empty();
  const bool ca = !names.ca_file.empty();
  ReloadingFilesOptions reloading{.what = options.what,
                                  .paths = {},
                                  .labels = {},
                                  .interval = absl::ZeroDuration(),  // paced by the watch thread
                                  .on_reload = options.on_reload};
  if (identity) {
    reloading.paths = {names.cert_file, names.key_file};
    reloading.labels = {"certificate file", "key file"};
  }
  if (ca) {
    reloading.paths.push_back(names.ca_file);
    reloading.labels.push_back("CA file");
  }
  std::unique_ptr<VerifiedTlsFiles> self(new VerifiedTlsFiles(std::move(options)));
  absl::StatusOr<std::unique_ptr<ReloadingFiles<CheckedSet>>> files =
      ReloadingFiles<CheckedSet>::Create(
          std::move(reloading), Wall(),
          [names, identity, ca](std::span<const std::string> contents)
              -> absl::StatusOr<std::shared_ptr<const CheckedSet>> {
            const std::string_view cert = identity ? std::string_view(contents[0]) : "";
            const std::string_view key = identity ? std::string_view(contents[1]) : "";
            const std::string_view ca_pem = ca ? std::string_view(contents.back()) : "";
            if (absl::Status s = ParseTlsMaterial(names, cert, key, ca_pem).status(); !s.ok()) {
              return s;
            }
            auto set = std::make_shared<CheckedSet>();
            if (identity)
              set->identity = absl::StrCat(Av(cert), cert.ends_with('\n') ? "" : "\n", Av(key));
            set->ca = std::string(ca_pem);
            return set;
          });
  if (!files.ok()) return files.status();
  self->files_ = std::move(*files);

  std::shared_ptr<const CheckedSet> first = self->files_->Current();
  self->last_mtime_ = time(nullptr);
  absl::StatusOr<std::unique_ptr<MemFile>> identity_file, ca_file;
  if (identity)
    identity_file = MemFile::Create("neighborly-tls-identity", first->identity, self->last_mtime_);
  if (ca) ca_file = MemFile::Create("neighborly-tls-ca", first->ca, self->last_mtime_);
  if ((identity && !identity_file.ok()) || (ca && !ca_file.ok())) {
    // No memfd (a seccomp profile that forbids it): gRPC reads the files
    // itself, and a half-rotated pair reaches it until the pair matches.
    const absl::Status why =
        identity && !identity_file.ok() ? identity_file.status() : ca_file.status();
    spdlog::warn("{}: cannot keep checked copies in memory ({}); gRPC reads the files directly",
                 self->options_.what, Sv(why.message()));
    self->paths_ = names;
  } else {
    if (identity) {
      self->identity_ = std::move(*identity_file);
      self->paths_.cert_file = self->paths_.key_file = self->identity_->path();
    }
    if (ca) {
      self->ca_ = std::move(*ca_file);
      self->paths_.ca_file = self->ca_->path();
    }
  }
  self->published_ = std::move(first);
  if (self->options_.watch_thread) self->watcher_ = std::thread([s = self.get()] { s->Watch(); });
  return self;
}

VerifiedTlsFiles::~VerifiedTlsFiles() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<grpc::experimental::CertificateProviderInterface> VerifiedTlsFiles::GrpcProvider()
    const {
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      paths_.key_file, paths_.cert_file, paths_.ca_file, 1);
}

void VerifiedTlsFiles::Check() {
  std::shared_ptr<const CheckedSet> now = files_->Current();
  std::lock_guard<std::mutex> lock(publish_mu_);
  if (now == published_) return;
  if (absl::Status s = Publish(*now); !s.ok()) {
    spdlog::error("{}: cannot hand the reloaded files to gRPC: {}", options_.what, Sv(s.message()));
    return;  // tried again at the next check
  }
  published_ = std::move(now);
}

absl::Status VerifiedTlsFiles::Publish(const CheckedSet& set) {
  if (identity_ == nullptr && ca_ == nullptr) return absl::OkStatus();  // gRPC reads the files
  // A new second for every publication: gRPC re-reads a pair whose time
  // changed while it read it.
  const time_t mtime = std::max(time(nullptr), last_mtime_ + 1);
  if (ca_ != nullptr && set.ca != published_->ca) {
    if (absl::Status s = ca_->Replace(set.ca, mtime); !s.ok()) return s;
  }
  if (identity_ != nullptr && set.identity != published_->identity) {
    if (absl::Status s = identity_->Replace(set.identity, mtime); !s.ok()) return s;
  }
  last_mtime_ = mtime;
  return absl::OkStatus();
}

void VerifiedTlsFiles::Watch() {
  const auto interval =
      absl::ToChronoMilliseconds(std::max(options_.reload_interval, absl::Milliseconds(100)));
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    Check();
    lock.lock();
  }
}

}  // namespace neighborly
