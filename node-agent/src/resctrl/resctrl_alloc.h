// resctrl's allocation side: what cache (CAT, MPAM cache portions) and memory
// bandwidth (MBA, MPAM max bandwidth, the MBA Software Controller) control the
// hardware and kernel offer, read from info/L3, info/MB and the mount options.
//
//   ResctrlAllocInfo alloc = DetectResctrlAllocation(fs, mounts, CpuVendor::kAmd);
//   if (alloc.l3_cat) ... alloc.cbm_bits, alloc.num_closids
//
// Detection only reads; the allocator that writes schemata is opt-in
// (resctrl_allocator.h).
#ifndef NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOC_H_
#define NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "node-agent/src/pods/cgroup_mounts.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

enum class CpuVendor : uint8_t { kUnknown, kIntel, kAmd, kArm };

// From /proc/cpuinfo: x86 "vendor_id", Arm "CPU implementer" / "CPU part".
struct CpuArchitecture {
  CpuVendor vendor = CpuVendor::kUnknown;
  std::string description;  // "x86_64 (AuthenticAMD)", "aarch64 (Arm Neoverse V2)", ""
};
CpuArchitecture ParseCpuInfo(std::string_view cpuinfo);

enum class MbaUnit : uint8_t { kNone, kPercent, kAmdEighthGBps, kMBps };
std::string_view MbaUnitName(MbaUnit unit);  // "percent", "amd-1/8-GBps", "MBps", ""

struct ResctrlAllocInfo {
  std::string root = "/sys/fs/resctrl";
  bool mounted = false;  // resctrl is in the mount table
  bool l3_cat = false;
  std::string l3_reason;  // why not, when !l3_cat
  std::string cbm_mask;   // hex, as the kernel prints it
  uint32_t cbm_bits = 0;  // ways the mask covers (its width)
  uint32_t min_cbm_bits = 1;
  bool sparse_masks = false;
  bool mba = false;
  std::string mba_reason;
  uint32_t mba_min = 0;
  uint32_t mba_granularity = 1;
  uint32_t mba_max = 0;  // the "unlimited" value in mba_unit
  MbaUnit mba_unit = MbaUnit::kNone;
  // CTRL_MON groups the hardware holds, the root included (the smaller of
  // info/L3 and info/MB num_closids where both exist).
  uint32_t num_closids = 0;
  uint32_t closids_used = 0;  // CTRL_MON groups found, the root included
};

ResctrlAllocInfo DetectResctrlAllocation(const Filesystem& fs,
                                         const std::vector<MountEntry>& mounts, CpuVendor vendor);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_RESCTRL_RESCTRL_ALLOC_H_
