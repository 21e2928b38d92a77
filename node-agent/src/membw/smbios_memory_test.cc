#include "node-agent/src/membw/smbios_memory.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/smbios/" + name;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(SmbiosMemoryTest, ParsesAnSmbios33Ddr5Module) {
  absl::StatusOr<MemoryDevice> d = ParseSmbiosMemoryDevice(
      ReadBytes(Fixture("intel-2s-ddr5/sys/firmware/dmi/entries/17-0/raw")));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->installed);
  EXPECT_EQ(d->size_bytes, 32ull << 30);  // through the extended size field
  EXPECT_EQ(d->data_width_bits, 64u);
  EXPECT_EQ(d->speed_mts, 5600u);
  EXPECT_EQ(d->configured_speed_mts, 4800u);
  EXPECT_EQ(d->EffectiveSpeedMts(), 4800u);
  EXPECT_EQ(MemoryTypeName(d->memory_type), "DDR5");
  EXPECT_EQ(d->memory_technology, 3);
  EXPECT_EQ(d->device_locator, "CPU0_DIMM_A1");
  EXPECT_EQ(d->bank_locator, "NODE 0");
  EXPECT_EQ(ChannelKey(*d), "node 0/cpu0_dimm_a");

  absl::StatusOr<MemoryDevice> empty = ParseSmbiosMemoryDevice(
      ReadBytes(Fixture("intel-2s-ddr5/sys/firmware/dmi/entries/17-1/raw")));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->installed);
}

TEST(SmbiosMemoryTest, ExtendedSpeedFieldsAndShortStructures) {
  absl::StatusOr<MemoryDevice> mr = ParseSmbiosMemoryDevice(
      ReadBytes(Fixture("extended-speed-no-channels/sys/firmware/dmi/entries/17-0/raw")));
  ASSERT_TRUE(mr.ok()) << mr.status();
  EXPECT_EQ(mr->speed_mts, 8800u);
  EXPECT_EQ(mr->configured_speed_mts, 8800u);
  EXPECT_EQ(ChannelKey(*mr), "");  // "PROC 1 DIMM 1" names no channel

  // SMBIOS 2.8 (0x28 bytes): no extended fields, speeds 0 = unknown.
  absl::StatusOr<MemoryDevice> vm =
      ParseSmbiosMemoryDevice(ReadBytes(Fixture("vm-no-speed/sys/firmware/dmi/entries/17-0/raw")));
  ASSERT_TRUE(vm.ok()) << vm.status();
  EXPECT_TRUE(vm->installed);
  EXPECT_EQ(vm->EffectiveSpeedMts(), 0u);
}

TEST(SmbiosMemoryTest, RefusesMalformedEntriesWithTheReason) {
  EXPECT_THAT(ParseSmbiosMemoryDevice("").status().message(), HasSubstr("0 bytes"));
  std::string type16(0x17, '\0');
  type16[0] = 16;
  type16[1] = 0x17;
  EXPECT_THAT(ParseSmbiosMemoryDevice(type16).status().message(), HasSubstr("not 17"));
  EXPECT_THAT(ParseSmbiosMemoryDevice(
                  ReadBytes(Fixture("one-corrupt-entry/sys/firmware/dmi/entries/17-1/raw")))
                  .status()
                  .message(),
              HasSubstr("length 240"));
  // Strings referenced past the end of the string set are empty, not a crash.
  std::string no_strings =
      ReadBytes(Fixture("amd-1s-ddr4-2dpc/sys/firmware/dmi/entries/17-0/raw")).substr(0, 0x54);
  absl::StatusOr<MemoryDevice> d = ParseSmbiosMemoryDevice(no_strings);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->device_locator, "");
}

TEST(SmbiosMemoryTest, ChannelsFromLocators) {
  auto key = [](const char* device_locator, const char* bank_locator) {
    MemoryDevice d;
    d.device_locator = device_locator;
    d.bank_locator = bank_locator;
    return ChannelKey(d);
  };
  EXPECT_EQ(key("DIMM 1", "P0 CHANNEL A"), "p0 channel a");
  EXPECT_EQ(key("DIMM_0", "_Node0_Channel0_Dimm0"), "_node0_channel0");
  EXPECT_EQ(key("ChannelA-DIMM0", "BANK 0"), "channela");
  EXPECT_EQ(key("B2", "Not Specified"), "not specified/b");
  EXPECT_EQ(key("DIMM1", ""), "");
}

absl::StatusOr<SmbiosPeak> PeakOf(const std::string& tree) {
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(Fixture(tree));
  return ReadSmbiosPeak(*fs);
}

TEST(SmbiosMemoryTest, TwoSocketDdr5OneModulePerChannel) {
  absl::StatusOr<SmbiosPeak> peak = PeakOf("intel-2s-ddr5");
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->modules, 16);
  EXPECT_EQ(peak->channels, 16);
  EXPECT_TRUE(peak->channels_from_locators);
  EXPECT_DOUBLE_EQ(peak->theoretical_bytes_per_second, 16 * 4800e6 * 8);  // 614.4 GB/s
  EXPECT_THAT(peak->description, HasSubstr("16 DDR5 module(s) on 16 channel(s), 4800 MT/s"));
  EXPECT_THAT(peak->description, HasSubstr("614.4 GB/s theoretical"));
}

TEST(SmbiosMemoryTest, TwoModulesPerChannelShareIt) {
  absl::StatusOr<SmbiosPeak> peak = PeakOf("amd-1s-ddr4-2dpc");
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->modules, 16);
  EXPECT_EQ(peak->channels, 8);
  EXPECT_DOUBLE_EQ(peak->theoretical_bytes_per_second, 8 * 2933e6 * 8);
}

TEST(SmbiosMemoryTest, ModulesWithoutChannelsAndNonVolatileOnes) {
  absl::StatusOr<SmbiosPeak> peak = PeakOf("extended-speed-no-channels");
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->modules, 2);  // the Optane module is left out
  EXPECT_EQ(peak->channels, 2);
  EXPECT_FALSE(peak->channels_from_locators);
  EXPECT_DOUBLE_EQ(peak->theoretical_bytes_per_second, 2 * 8800e6 * 8);
  EXPECT_THAT(peak->description, HasSubstr("name no channel"));
}

TEST(SmbiosMemoryTest, NoFigureWithoutSpeedsOrTables) {
  absl::StatusOr<SmbiosPeak> vm = PeakOf("vm-no-speed");
  EXPECT_FALSE(vm.ok());
  EXPECT_THAT(vm.status().message(), HasSubstr("none reports its speed"));
  absl::StatusOr<SmbiosPeak> none = PeakOf("absent-tree");
  EXPECT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no SMBIOS tables"));
}

TEST(SmbiosMemoryTest, ACorruptEntryIsSkippedAndNamed) {
  absl::StatusOr<SmbiosPeak> peak = PeakOf("one-corrupt-entry");
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->modules, 1);
  EXPECT_DOUBLE_EQ(peak->theoretical_bytes_per_second, 3200e6 * 8);
  EXPECT_THAT(peak->description, HasSubstr("17-1/raw"));
}

}  // namespace
}  // namespace neighborly::agent
