// Encoding with libpfm4's Ice Lake tables forced (LIBPFM_FORCE_PMU=icl), so the
// model-specific names are exercised on a machine without a PMU.
#include <cstdlib>

#include "gtest/gtest.h"
#include "node-agent/src/perf/perf_events.h"

namespace neighborly::agent {
namespace {

TEST(PerfEncodeIclTest, ModelSpecificNamesWinOverGenericOnes) {
  // Must run before the first pfm_initialize in this process (one test per binary).
  setenv("LIBPFM_FORCE_PMU", "icl", 1);
  absl::StatusOr<HardwareEvents> events = EncodeHardwareEvents();
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->cycles.attr.type, PERF_TYPE_RAW);
  EXPECT_EQ(events->cycles.attr.config & 0xff, 0x3cu);
  EXPECT_EQ(events->instructions.name, "INST_RETIRED:ANY_P");
  EXPECT_EQ(events->instructions.attr.config & 0xff, 0xc0u);
  ASSERT_TRUE(events->llc_misses.has_value());
  EXPECT_EQ(events->llc_misses->name, "LONGEST_LAT_CACHE:MISS");
  EXPECT_EQ(events->llc_misses->attr.config & 0xffff, 0x412eu);
  EXPECT_FALSE(EncodeFirst({"NO_SUCH_EVENT", "cycles"}).ok());  // generic names are not in icl
}

}  // namespace
}  // namespace neighborly::agent
