#include "node-agent/src/membw/smbios_memory.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/strings.h"

namespace neighborly::agent {
namespace {

constexpr uint8_t kMemoryDeviceType = 17;
constexpr std::string_view kEntriesDir = "/sys/firmware/dmi/entries";

// Offsets in the formatted area (DMTF DSP0134, 7.18 Memory Device).
constexpr size_t kDataWidth = 0x0A;
constexpr size_t kSize = 0x0C;
constexpr size_t kDeviceLocator = 0x10;
constexpr size_t kBankLocator = 0x11;
constexpr size_t kMemoryType = 0x12;
constexpr size_t kSpeed = 0x15;
constexpr size_t kExtendedSize = 0x1C;
constexpr size_t kConfiguredSpeed = 0x20;
constexpr size_t kMemoryTechnology = 0x28;
constexpr size_t kExtendedSpeed = 0x54;
constexpr size_t kExtendedConfiguredSpeed = 0x58;

uint32_t Le(std::string_view raw, size_t offset, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes; ++i) {
    value |= static_cast<uint32_t>(static_cast<uint8_t>(raw[offset + i])) << (8 * i);
  }
  return value;
}

// A speed field: 0 unknown; 0xFFFF means "see the 32-bit extended field".
uint32_t Speed(std::string_view formatted, size_t field, size_t extended) {
  if (formatted.size() < field + 2) return 0;
  const uint32_t speed = Le(formatted, field, 2);
  if (speed != 0xFFFF) return speed;
  if (formatted.size() < extended + 4) return 0;
  return Le(formatted, extended, 4) & 0x7FFFFFFF;  // bit 31 reserved
}

bool IsDram(const MemoryDevice& d) {
  // Non-volatile technologies (NVDIMM-N/F/P, Intel Optane) do not add DRAM bandwidth.
  if (d.memory_technology >= 4 && d.memory_technology <= 7) return false;
  switch (d.memory_type) {
    case 0x09:  // ROM
    case 0x0A:  // FLASH
    case 0x0B:  // EEPROM
    case 0x0C:  // FEPROM
    case 0x0D:  // EPROM
    case 0x1F:  // logical non-volatile device
      return false;
    default:
      return true;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "P0 CHANNEL A" -> "p0 channel a"; "_Node0_Channel0_Dimm0" -> "_node0_channel0";
// "CHANNEL 1 SLOT 0" -> "channel 1"; nothing when "channel" is absent.
std::string ChannelFromText(std::string_view text) {
  const std::string lower = Lower(text);
  const size_t at = lower.find("channel");
  if (at == std::string::npos) return "";
  size_t end = at + 7;
  while (end < lower.size() && (lower[end] == ' ' || lower[end] == '_' || lower[end] == '-')) {
    ++end;
  }
  while (end < lower.size() && std::isalnum(static_cast<unsigned char>(lower[end]))) ++end;
  return lower.substr(0, end);
}

std::string FormatRate(double bytes_per_second) {
  return absl::StrFormat("%.1f GB/s", bytes_per_second / 1e9);
}

}  // namespace

absl::StatusOr<MemoryDevice> ParseSmbiosMemoryDevice(std::string_view raw) {
  if (raw.size() < 4) {
    return absl::InvalidArgumentError(absl::StrCat("SMBIOS entry of ", raw.size(), " bytes"));
  }
  if (static_cast<uint8_t>(raw[0]) != kMemoryDeviceType) {
    return absl::InvalidArgumentError(
        absl::StrCat("SMBIOS entry of type ", static_cast<uint8_t>(raw[0]), ", not 17"));
  }
  const size_t length = static_cast<uint8_t>(raw[1]);
  if (length < kMemoryType + 1 || length > raw.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SMBIOS type 17 entry with length ", length, " in ", raw.size(), " bytes"));
  }
  const std::string_view formatted = raw.substr(0, length);
  // The string set: NUL-terminated strings after the formatted area, numbered from 1.
  std::vector<std::string_view> strings;
  std::string_view rest = raw.substr(length);
  while (!rest.empty() && rest.front() != '\0') {
    const size_t nul = rest.find('\0');
    strings.push_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  auto string_at = [&](size_t offset) -> std::string {
    const uint8_t index = static_cast<uint8_t>(formatted[offset]);
    if (index == 0 || index > strings.size()) return "";
    return std::string(Trim(strings[index - 1]));
  };

  MemoryDevice d;
  const uint32_t width = Le(formatted, kDataWidth, 2);
  d.data_width_bits = width == 0xFFFF ? 0 : width;
  const uint32_t size = Le(formatted, kSize, 2);
  d.installed = size != 0;
  if (size == 0x7FFF && formatted.size() >= kExtendedSize + 4) {
    d.size_bytes = static_cast<uint64_t>(Le(formatted, kExtendedSize, 4) & 0x7FFFFFFF) << 20;
  } else if (size != 0xFFFF && size != 0x7FFF) {
    d.size_bytes = (size & 0x8000) != 0 ? static_cast<uint64_t>(size & 0x7FFF) << 10
                                        : static_cast<uint64_t>(size) << 20;
  }
  d.device_locator = string_at(kDeviceLocator);
  d.bank_locator = string_at(kBankLocator);
  d.memory_type = static_cast<uint8_t>(formatted[kMemoryType]);
  d.speed_mts = Speed(formatted, kSpeed, kExtendedSpeed);
  d.configured_speed_mts = Speed(formatted, kConfiguredSpeed, kExtendedConfiguredSpeed);
  if (formatted.size() > kMemoryTechnology) {
    d.memory_technology = static_cast<uint8_t>(formatted[kMemoryTechnology]);
  }
  return d;
}

std::string MemoryTypeName(uint8_t memory_type) {
  switch (memory_type) {
    case 0x12:
      return "DDR";
    case 0x13:
      return "DDR2";
    case 0x18:
      return "DDR3";
    case 0x1A:
      return "DDR4";
    case 0x1B:
      return "LPDDR";
    case 0x1C:
      return "LPDDR2";
    case 0x1D:
      return "LPDDR3";
    case 0x1E:
      return "LPDDR4";
    case 0x20:
      return "HBM";
    case 0x21:
      return "HBM2";
    case 0x22:
      return "DDR5";
    case 0x23:
      return "LPDDR5";
    case 0x24:
      return "HBM3";
    default:
      return absl::StrFormat("type 0x%02x", memory_type);
  }
}

std::string ChannelKey(const MemoryDevice& device) {
  if (std::string c = ChannelFromText(device.bank_locator); !c.empty()) return c;
  if (std::string c = ChannelFromText(device.device_locator); !c.empty()) return c;
  // "DIMM_A1", "CPU1_DIMM_B2", "A1": one channel letter, then the slot number.
  const std::string& s = device.device_locator;
  size_t digits = s.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(s[digits - 1]))) --digits;
  if (digits < s.size() && digits >= 1 && std::isalpha(static_cast<unsigned char>(s[digits - 1])) &&
      (digits == 1 || !std::isalpha(static_cast<unsigned char>(s[digits - 2])))) {
    return Lower(absl::StrCat(Av(device.bank_locator), "/", Av(s.substr(0, digits))));
  }
  return "";
}

absl::StatusOr<SmbiosPeak> EstimateSmbiosPeak(const std::vector<MemoryDevice>& devices) {
  struct Channel {
    uint32_t speed_mts = 0;
    uint32_t width_bits = 0;
  };
  std::map<std::string, Channel> channels;
  std::set<std::string> types;
  std::set<uint32_t> speeds;
  std::set<uint32_t> widths;
  int modules = 0, without_speed = 0, own_channel = 0, assumed_width = 0;
  for (const MemoryDevice& d : devices) {
    if (!d.installed || !IsDram(d)) continue;
    if (d.EffectiveSpeedMts() == 0) {
      ++without_speed;
      continue;
    }
    ++modules;
    std::string key = ChannelKey(d);
    if (key.empty()) {
      key = absl::StrCat("#module", modules);
      ++own_channel;
    }
    uint32_t width = d.data_width_bits;
    if (width == 0) {
      width = 64;  // the DIMM data bus of every DDR generation
      ++assumed_width;
    }
    Channel& c = channels[key];
    c.speed_mts =
        c.speed_mts == 0 ? d.EffectiveSpeedMts() : std::min(c.speed_mts, d.EffectiveSpeedMts());
    c.width_bits = std::max(c.width_bits, width);
    types.insert(MemoryTypeName(d.memory_type));
  }
  if (modules == 0) {
    return absl::NotFoundError(
        without_speed > 0
            ? absl::StrCat(without_speed,
                           " installed memory device(s) in SMBIOS but none reports its speed "
                           "(typical of virtual machines)")
            : "no installed DRAM module among the SMBIOS memory devices");
  }
  SmbiosPeak peak;
  peak.modules = modules;
  peak.channels = static_cast<int>(channels.size());
  peak.channels_from_locators = own_channel == 0;
  for (const auto& [key, c] : channels) {
    peak.theoretical_bytes_per_second += static_cast<double>(c.speed_mts) * 1e6 * c.width_bits / 8;
    speeds.insert(c.speed_mts);
    widths.insert(c.width_bits);
  }
  std::vector<std::string> speed_text, width_text;
  for (uint32_t s : speeds) speed_text.push_back(absl::StrCat(s));
  for (uint32_t w : widths) width_text.push_back(absl::StrCat(w));
  peak.description = absl::StrCat(
      modules, " ", absl::StrJoin(types, "/"), " module(s) on ", peak.channels, " channel(s), ",
      absl::StrJoin(speed_text, "/"), " MT/s x ", absl::StrJoin(width_text, "/"),
      " bit: ", FormatRate(peak.theoretical_bytes_per_second), " theoretical");
  if (own_channel > 0) {
    absl::StrAppend(&peak.description, "; ", own_channel,
                    " module(s) whose locators name no channel counted as one channel each");
  }
  if (assumed_width > 0) {
    absl::StrAppend(&peak.description, "; ", assumed_width,
                    " module(s) without a data width taken as 64 bit");
  }
  if (without_speed > 0) {
    absl::StrAppend(&peak.description, "; ", without_speed, " module(s) without a speed left out");
  }
  return peak;
}

absl::StatusOr<SmbiosPeak> ReadSmbiosPeak(const Filesystem& fs) {
  absl::StatusOr<std::vector<DirEntry>> entries = fs.ListDir(kEntriesDir);
  if (!entries.ok()) {
    return absl::NotFoundError(absl::StrCat("no SMBIOS tables: ", entries.status().message()));
  }
  std::vector<MemoryDevice> devices;
  std::vector<std::string> problems;
  for (const DirEntry& entry : *entries) {
    if (!entry.name.starts_with("17-")) continue;
    const std::string path = absl::StrCat(Av(kEntriesDir), "/", entry.name, "/raw");
    absl::StatusOr<std::string> raw = fs.ReadFile(path);
    if (!raw.ok()) {
      problems.push_back(std::string(raw.status().message()));
      continue;
    }
    absl::StatusOr<MemoryDevice> device = ParseSmbiosMemoryDevice(*raw);
    if (!device.ok()) {
      problems.push_back(absl::StrCat(path, ": ", device.status().message()));
      continue;
    }
    devices.push_back(std::move(*device));
  }
  if (devices.empty()) {
    return absl::NotFoundError(
        problems.empty() ? absl::StrCat("no SMBIOS memory device (type 17) under ", Av(kEntriesDir))
                         : absl::StrCat("no readable SMBIOS memory device: ", problems.front(),
                                        problems.size() > 1
                                            ? absl::StrCat(" (and ", problems.size() - 1, " more)")
                                            : ""));
  }
  absl::StatusOr<SmbiosPeak> peak = EstimateSmbiosPeak(devices);
  if (peak.ok() && !problems.empty()) {
    absl::StrAppend(&peak->description, "; ", problems.size(),
                    " entry(ies) unreadable: ", problems.front());
  }
  return peak;
}

}  // namespace neighborly::agent
