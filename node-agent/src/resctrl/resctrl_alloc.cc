#include "node-agent/src/resctrl/resctrl_alloc.h"

#include <algorithm>
#include <bit>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "node-agent/src/sys/text.h"

namespace neighborly::agent {
namespace {

std::optional<uint32_t> ReadNumber(const Filesystem& fs, const std::string& path) {
  absl::StatusOr<std::string> text = fs.ReadFile(path);
  if (!text.ok()) return std::nullopt;
  return ParseInt<uint32_t>(Trim(*text));
}

// "7ff" -> 11 (the kernel prints the full mask of a contiguous run from bit 0).
std::optional<uint32_t> MaskWidth(std::string_view hex) {
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : hex) {
    uint32_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = value << 4 | digit;
  }
  return static_cast<uint32_t>(std::popcount(value));
}

std::string_view ArmPartName(std::string_view part) {
  if (part == "0xd0c") return "Neoverse N1";
  if (part == "0xd49") return "Neoverse N2";
  if (part == "0xd8e") return "Neoverse N3";
  if (part == "0xd40") return "Neoverse V1";
  if (part == "0xd4f") return "Neoverse V2";
  if (part == "0xd84") return "Neoverse V3";
  return "";
}

}  // namespace

CpuArchitecture ParseCpuInfo(std::string_view cpuinfo) {
  CpuArchitecture arch;
  std::string_view implementer, part;
  for (std::string_view line : SplitLines(cpuinfo)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "vendor_id" && arch.vendor == CpuVendor::kUnknown) {
      arch.vendor = value == "AuthenticAMD" || value == "HygonGenuine" ? CpuVendor::kAmd
                    : value == "GenuineIntel"                          ? CpuVendor::kIntel
                                                                       : CpuVendor::kUnknown;
      arch.description = absl::StrCat("x86_64 (", Av(value.substr(0, 32)), ")");
      return arch;
    }
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
  }
  if (!implementer.empty()) {
    arch.vendor = CpuVendor::kArm;
    const std::string_view name = implementer == "0x41" ? ArmPartName(part) : "";
    arch.description =
        name.empty()
            ? absl::StrCat("aarch64 (implementer ", Av(implementer.substr(0, 8)), ", part ",
                           Av(part.substr(0, 8)), ")")
            : absl::StrCat("aarch64 (Arm ", Av(name), ")");
  }
  return arch;
}

std::string_view MbaUnitName(MbaUnit unit) {
  switch (unit) {
    case MbaUnit::kPercent:
      return "percent";
    case MbaUnit::kAmdEighthGBps:
      return "amd-1/8-GBps";
    case MbaUnit::kMBps:
      return "MBps";
    case MbaUnit::kNone:
      break;
  }
  return "";
}

ResctrlAllocInfo DetectResctrlAllocation(const Filesystem& fs,
                                         const std::vector<MountEntry>& mounts, CpuVendor vendor) {
  ResctrlAllocInfo info;
  auto it = std::find_if(mounts.begin(), mounts.end(),
                         [](const MountEntry& m) { return m.fstype == "resctrl"; });
  if (it == mounts.end()) {
    info.l3_reason = info.mba_reason = "resctrl is not mounted";
    return info;
  }
  info.mounted = true;
  info.root = it->mount_point;
  const bool mbps = absl::StrCat(",", it->options, ",").find(",mba_MBps,") != std::string::npos;

  const std::string l3 = JoinPath(info.root, "info/L3");
  std::optional<uint32_t> l3_closids;
  if (!fs.IsDirectory(l3)) {
    info.l3_reason = fs.IsDirectory(JoinPath(info.root, "info/L3DATA"))
                         ? "resctrl is mounted with cdp (info/L3DATA, info/L3CODE): code/data "
                           "masks are not managed"
                         : absl::StrCat(l3, " is missing: no L3 cache allocation");
  } else {
    absl::StatusOr<std::string> mask = fs.ReadFile(JoinPath(l3, "cbm_mask"));
    // 0: unreadable (GCC warns on an optional here, wrongly).
    const uint32_t width = mask.ok() ? MaskWidth(Trim(*mask)).value_or(0) : 0;
    l3_closids = ReadNumber(fs, JoinPath(l3, "num_closids"));
    if (width == 0 || !l3_closids || *l3_closids < 2) {
      info.l3_reason = absl::StrCat(l3, "/cbm_mask or num_closids unreadable (or one CLOSID)");
    } else {
      info.l3_cat = true;
      info.cbm_mask = std::string(Trim(*mask));
      info.cbm_bits = width;
      info.min_cbm_bits = ReadNumber(fs, JoinPath(l3, "min_cbm_bits")).value_or(1);
      info.sparse_masks = ReadNumber(fs, JoinPath(l3, "sparse_masks")).value_or(0) == 1;
    }
  }

  const std::string mb = JoinPath(info.root, "info/MB");
  std::optional<uint32_t> mb_closids;
  if (!fs.IsDirectory(mb)) {
    info.mba_reason = absl::StrCat(mb, " is missing: no memory bandwidth allocation");
  } else {
    mb_closids = ReadNumber(fs, JoinPath(mb, "num_closids"));
    std::optional<uint32_t> min = ReadNumber(fs, JoinPath(mb, "min_bandwidth"));
    std::optional<uint32_t> gran = ReadNumber(fs, JoinPath(mb, "bandwidth_gran"));
    if (!mb_closids || *mb_closids < 2 || !min || !gran || *gran == 0) {
      info.mba_reason =
          absl::StrCat(mb, "/num_closids, min_bandwidth or bandwidth_gran unreadable");
    } else {
      info.mba = true;
      info.mba_min = *min;
      info.mba_granularity = *gran;
      if (mbps) {
        // The MBA Software Controller: MB values are MiB/s; "unlimited" is U32_MAX.
        info.mba_unit = MbaUnit::kMBps;
        info.mba_max = UINT32_MAX;
      } else if (vendor == CpuVendor::kAmd) {
        info.mba_unit = MbaUnit::kAmdEighthGBps;
        info.mba_max = 2048;
      } else {
        info.mba_unit = MbaUnit::kPercent;
        info.mba_max = 100;
      }
    }
  }
  if (l3_closids && mb_closids) {
    info.num_closids = std::min(*l3_closids, *mb_closids);
  } else {
    info.num_closids = l3_closids ? *l3_closids : mb_closids.value_or(0);
  }
  info.closids_used = 1;  // the root group
  if (absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir(info.root); entries.ok()) {
    for (const DirEntry& entry : *entries) {
      if (entry.is_dir && entry.name != "info" && entry.name != "mon_data" &&
          entry.name != "mon_groups") {
        ++info.closids_used;
      }
    }
  }
  return info;
}

}  // namespace neighborly::agent
