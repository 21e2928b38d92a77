// The memory configuration from SMBIOS (DMI type 17 "Memory Device"), as the
// kernel exposes it under /sys/firmware/dmi/entries/17-*/raw, turned into a
// theoretical peak bandwidth: per memory channel, configured speed (MT/s) x
// data width; summed over channels.
//
//   absl::StatusOr<MemoryDevice> dimm = ParseSmbiosMemoryDevice(raw_bytes);
//   absl::StatusOr<SmbiosPeak> peak = ReadSmbiosPeak(fs);
//   peak->theoretical_bytes_per_second   // e.g. 16 x 4800 MT/s x 8 B = 614.4 GB/s
//
// SMBIOS does not say which NUMA node a module belongs to nor, in a standard
// field, which channel: channels are inferred from the locator strings
// ("P0 CHANNEL A", "_Node0_Channel0_Dimm0", "CPU1_DIMM_A2" -> channel
// "CPU1_DIMM_A"); a module whose locators name no channel counts as one.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_MEMBW_SMBIOS_MEMORY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_MEMBW_SMBIOS_MEMORY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "node-agent/src/sys/filesystem.h"

namespace neighborly::agent {

struct MemoryDevice {
  bool installed = false;             // size field non-zero
  uint64_t size_bytes = 0;            // 0 when unknown
  uint32_t data_width_bits = 0;       // 0 when unknown
  uint32_t speed_mts = 0;             // maximum speed; 0 when unknown
  uint32_t configured_speed_mts = 0;  // 0 when unknown
  uint8_t memory_type = 0;            // SMBIOS enumeration (0x1A DDR4, 0x22 DDR5, ...)
  uint8_t memory_technology = 0;      // SMBIOS 3.2+ (3 DRAM, 4-7 non-volatile); 0 unknown
  std::string device_locator;
  std::string bank_locator;

  // The speed the module runs at: configured, else its maximum; 0 unknown.
  uint32_t EffectiveSpeedMts() const {
    return configured_speed_mts != 0 ? configured_speed_mts : speed_mts;
  }
};

// One type 17 structure: formatted area followed by its string set. Fields the
// structure is too short to hold (older SMBIOS versions) stay unknown.
absl::StatusOr<MemoryDevice> ParseSmbiosMemoryDevice(std::string_view raw);

// "DDR4", "DDR5", ... for the SMBIOS memory type; "type 0x<hex>" otherwise.
std::string MemoryTypeName(uint8_t memory_type);

// The channel a module sits on, from its locators (see the header comment).
std::string ChannelKey(const MemoryDevice& device);

struct SmbiosPeak {
  double theoretical_bytes_per_second = 0;
  int modules = 0;                     // installed DRAM modules counted
  int channels = 0;                    // channels they populate
  bool channels_from_locators = true;  // false: some module counted as its own channel
  // "16 DDR5 modules on 16 channels, 4800 MT/s x 64 bit: 614.4 GB/s theoretical"
  std::string description;
};

// Theoretical peak over the installed DRAM modules (non-volatile modules and
// modules without a known speed are left out; each channel runs at the speed
// of its slowest module and carries the width of its widest). An error says
// why no figure can be made (no module, no speed: typical of VMs).
absl::StatusOr<SmbiosPeak> EstimateSmbiosPeak(const std::vector<MemoryDevice>& devices);

// Reads every /sys/firmware/dmi/entries/17-*/raw under the host root (root
// only: the files are mode 0400) and estimates. Unreadable or malformed
// entries are skipped and named in the error when nothing usable remains.
absl::StatusOr<SmbiosPeak> ReadSmbiosPeak(const Filesystem& fs);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_MEMBW_SMBIOS_MEMORY_H_
