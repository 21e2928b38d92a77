// The agent's only door to host files. Every path is written as the host sees
// it ("/sys/fs/cgroup/cpu.stat"); the real implementation prefixes --host-root,
// so a captured fixture tree under test/testdata/hosts/ reads exactly like a host.
//
//   std::unique_ptr<Filesystem> fs = NewRealFilesystem("/host");
//   absl::StatusOr<std::string> online = fs->ReadFile("/sys/devices/system/cpu/online");
//
// Errors are absl::Status values that name the operation and the host path and
// carry the errno (ErrnoOf) so that callers can tell ENOENT from EOPNOTSUPP.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SYS_FILESYSTEM_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SYS_FILESYSTEM_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace neighborly::agent {

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

// Upper bound on what ReadFile returns; larger files are an error, not a
// gigabyte allocation (hostile or corrupt input must not take the agent down).
inline constexpr size_t kMaxFileBytes = 8 << 20;

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  // Whole file as text.
  virtual absl::StatusOr<std::string> ReadFile(std::string_view path) const = 0;
  // Entries other than "." and "..", sorted by name.
  virtual absl::StatusOr<std::vector<DirEntry>> ListDir(std::string_view path) const = 0;
  virtual bool IsDirectory(std::string_view path) const = 0;
  virtual bool Exists(std::string_view path) const = 0;
  // Writes into an existing file (cgroup and resctrl control files are never created).
  virtual absl::Status WriteFile(std::string_view path, std::string_view content) = 0;
  virtual absl::Status MakeDir(std::string_view path) = 0;
  // Creates or replaces a regular file atomically (a temporary file beside it,
  // fsync, rename): a reader never sees half of it. The directory must exist.
  virtual absl::Status ReplaceFile(std::string_view path, std::string_view content) = 0;
  // rmdir(2): on resctrl and cgroupfs this removes a group with its files.
  virtual absl::Status RemoveDir(std::string_view path) = 0;
  // The path on the agent's own filesystem, for system calls that need one
  // (perf_event_open's cgroup fd, flock).
  virtual std::string HostPath(std::string_view path) const = 0;
};

// Reads and writes under `root` ("/" or "/host" or a fixture directory).
std::unique_ptr<Filesystem> NewRealFilesystem(std::string root);

// "a" + "/" + "b" without doubled slashes.
std::string JoinPath(std::string_view a, std::string_view b);

// A status for a failed system call on `path`: the code follows errno
// (ENOENT -> NotFound, EACCES/EPERM -> PermissionDenied, ENOSPC ->
// ResourceExhausted, EBUSY -> Unavailable, others -> FailedPrecondition or
// Internal) and the errno itself rides along as a payload.
absl::Status ErrnoStatus(int err, std::string_view operation, std::string_view path);

// The errno carried by a status from ErrnoStatus; 0 when there is none.
int ErrnoOf(const absl::Status& status);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SYS_FILESYSTEM_H_
