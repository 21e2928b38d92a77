// TLS files for gRPC, checked before gRPC sees them. gRPC's
// FileWatcherCertificateProvider loads whatever the files hold when it looks,
// so a half-rotated pair (a new key beside the old certificate) would break
// every new handshake until the pair matched again. VerifiedTlsFiles reads the
// configured files itself, checks each changed set (PEM, key belongs to the
// certificate; tls_material.h), and hands gRPC only sets that pass: gRPC watches in-memory
// copies (memfd, named /proc/self/fd/N) that are replaced whole. A set that
// does not pass keeps the last good one, is logged naming the file and is
// counted (reloading_files.h).
//
//   absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> tls = VerifiedTlsFiles::Create(
//       {.files = {.ca_file = "/tls/ca.crt", .cert_file = "/tls/tls.crt",
//                  .key_file = "/tls/tls.key"},
//        .what = "grpc.tls", .reload_interval = absl::Seconds(10)});
//   grpc::experimental::TlsServerCredentialsOptions options((*tls)->GrpcProvider());
//
// The certificate and key are published as one file (given to gRPC as both),
// whose modification time moves on by at least a second at each publication,
// so a gRPC read that straddles a swap sees the time change and reads again.
#ifndef NEIGHBORLY_COMMON_VERIFIED_TLS_FILES_H_
#define NEIGHBORLY_COMMON_VERIFIED_TLS_FILES_H_

#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/reloading_files.h"
#include "common/tls_material.h"
#include "grpcpp/security/tls_certificate_provider.h"

namespace neighborly {

class VerifiedTlsFiles {
 public:
  struct Options {
    TlsFileNames files;
    std::string what;  // names the files in logs ("grpc.tls")
    // How often the files are checked by the watch thread.
    absl::Duration reload_interval = absl::Seconds(10);
    // Off: nothing checks the files but Check() (tests).
    bool watch_thread = true;
    // After each check of changed files: published (true) or refused (false).
    std::function<void(bool ok)> on_reload;
  };

  // Reads and checks the files now (a bad file is an error naming it) and
  // publishes them.
  static absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> Create(Options options);
  ~VerifiedTlsFiles();
  VerifiedTlsFiles(const VerifiedTlsFiles&) = delete;
  VerifiedTlsFiles& operator=(const VerifiedTlsFiles&) = delete;

  // The paths gRPC is to read: in-memory copies of the last good set; the key
  // path equals the certificate path. Empty where the file is not configured.
  const TlsFileNames& paths() const { return paths_; }
  // A gRPC certificate provider that reads paths() every second (they change
  // only when the real files were checked, every reload_interval).
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> GrpcProvider() const;
  // Checks the files and publishes a changed set that passes.
  void Check();

  uint64_t reloads() const { return files_->reloads(); }
  uint64_t failures() const { return files_->failures(); }

 private:
  struct CheckedSet;
  class MemFile;

  explicit VerifiedTlsFiles(Options options);
  absl::Status Publish(const CheckedSet& set);
  void Watch();

  const Options options_;
  std::unique_ptr<ReloadingFiles<CheckedSet>> files_;
  std::unique_ptr<MemFile> identity_;  // certificate chain, then key
  std::unique_ptr<MemFile> ca_;
  TlsFileNames paths_;
  std::shared_ptr<const CheckedSet> published_;  // guarded by publish_mu_
  std::mutex publish_mu_;
  time_t last_mtime_ = 0;  // guarded by publish_mu_

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread watcher_;
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_VERIFIED_TLS_FILES_H_
