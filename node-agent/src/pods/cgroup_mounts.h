// Which cgroup hierarchies the host has mounted, read from the host root's
// mount table (proc/self/mountinfo, else proc/mounts) rather than from statfs
// in the agent's own namespace, so a fixture tree answers like the host did.
//
//   absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(fs, "/host");
//   mounts->mode == CgroupMode::kHybrid;  mounts->V1Dir("memory") == "/sys/fs/cgroup/memory"
#ifndef NEIGHBORLY_NODE_AGENT_SRC_PODS_CGROUP_MOUNTS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_PODS_CGROUP_MOUNTS_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

enum class CgroupMode { kV1, kV2, kHybrid };

std::string_view CgroupModeName(CgroupMode mode);

struct CgroupMounts {
  CgroupMode mode = CgroupMode::kV2;
  std::string unified;                    // cgroup2 mount point; empty when none
  std::map<std::string, std::string> v1;  // controller -> mount point

  // Mount point of a v1 controller, or empty.
  std::string V1Dir(std::string_view controller) const;
};

// /proc/mounts lines: "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0".
// Mount points under `host_root` (a containerised agent sees "/host/sys/...")
// are turned back into host paths.
absl::StatusOr<CgroupMounts> ParseProcMounts(std::string_view text, std::string_view host_root);
// /proc/self/mountinfo lines: "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory".
absl::StatusOr<CgroupMounts> ParseMountinfo(std::string_view text, std::string_view host_root);

absl::StatusOr<CgroupMounts> DetectCgroupMounts(const Filesystem& fs, std::string_view host_root);

// A generic mount-table row, shared with resctrl detection.
struct MountEntry {
  std::string mount_point;
  std::string fstype;
  std::string options;  // super options (mountinfo) or the options column (mounts)
};
absl::StatusOr<std::vector<MountEntry>> ReadMountTable(const Filesystem& fs,
                                                       std::string_view host_root);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_PODS_CGROUP_MOUNTS_H_
