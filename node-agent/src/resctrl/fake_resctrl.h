// A resctrl file system for tests, layered over a fixture tree: making a
// group directory creates `tasks` and `mon_data/mon_L3_<id>/<event>` files the
// way the kernel does (same domains, sub-NUMA directories and events as the
// tree's root group), mkdir beyond info/L3_MON/num_rmids fails with ENOSPC,
// rmdir removes a group with its files, and writing a TID to `tasks` appends it.
// A CTRL_MON group (a directory in the root) gets a `schemata` copied from the
// root's; mkdir beyond info/L3/num_closids (or info/MB) fails with ENOSPC, and
// schemata writes are checked as the kernel checks them.
//
//   TestTree tree; tree.CopyFrom(".../test/testdata/hosts/intel-mbm");
//   std::unique_ptr<Filesystem> real = NewRealFilesystem(tree.root());
//   FakeResctrl fs(*real);
//   fs.SetCounter("/sys/fs/resctrl/mon_groups/neighborly-<uid>", 0, "mbm_total_bytes", "1000");
#ifndef NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_FAKE_RESCTRL_H_
#define NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_FAKE_RESCTRL_H_

#include <set>
#include <string>
#include <string_view>

#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

class FakeResctrl final : public Filesystem {
 public:
  explicit FakeResctrl(Filesystem& base, std::string root = "/sys/fs/resctrl");

  absl::StatusOr<std::string> ReadFile(std::string_view path) const override {
    return base_.ReadFile(path);
  }
  absl::StatusOr<std::vector<DirEntry>> ListDir(std::string_view path) const override {
    return base_.ListDir(path);
  }
  bool IsDirectory(std::string_view path) const override { return base_.IsDirectory(path); }
  bool Exists(std::string_view path) const override { return base_.Exists(path); }
  std::string HostPath(std::string_view path) const override { return base_.HostPath(path); }
  absl::Status WriteFile(std::string_view path, std::string_view content) override;
  absl::Status MakeDir(std::string_view path) override;
  absl::Status ReplaceFile(std::string_view path, std::string_view content) override {
    return base_.ReplaceFile(path, content);
  }
  absl::Status RemoveDir(std::string_view path) override;

  // Sets a counter file of `group_dir` in L3 domain `domain` (all sub-NUMA
  // parts get it too when the layout has them).
  void SetCounter(std::string_view group_dir, uint32_t domain, std::string_view event,
                  std::string_view value);
  // The next mkdir fails with EBUSY (RMIDs in limbo).
  void FailNextMkdirBusy() { busy_ = true; }
  // Writing this TID to any tasks file fails with EINVAL (foreign CTRL_MON group).
  void RejectTid(int tid) { rejected_.insert(tid); }
  // Every schemata write fails with EINVAL, as for a value the kernel rejects.
  void RejectSchemata(bool reject) { reject_schemata_ = reject; }
  int groups_made() const { return groups_made_; }

 private:
  bool IsGroupPath(std::string_view path) const;
  int CountGroups() const;
  int CountCtrlGroups() const;  // the default group included
  // The kernel's checks of a schemata write (rdtgroup_schemata_write): known
  // resources and domains, masks within cbm_mask with at least min_cbm_bits
  // and contiguous unless sparse_masks, bandwidth at least min_bandwidth.
  absl::Status WriteSchemata(std::string_view path, std::string_view content);
  // Appends to a tasks file, after a newline where its last line has none.
  void AppendLine(std::string_view path, std::string_view lines);

  Filesystem& base_;
  std::string root_;
  bool busy_ = false;
  bool reject_schemata_ = false;
  std::set<int> rejected_;
  int groups_made_ = 0;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_FAKE_RESCTRL_H_
