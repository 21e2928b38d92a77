#include "common/cpu_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CpuListTest, ParsesRangesAndSingles) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList("0-3,8,10-11\n");
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8, 10, 11));
}

TEST(CpuListTest, EmptyIsEmptySet) { EXPECT_THAT(*ParseCpuList("\n"), IsEmpty()); }

TEST(CpuListTest, SortsAndDeduplicates) {
  EXPECT_THAT(*ParseCpuList("8,0-2,1"), ElementsAre(0, 1, 2, 8));
}

TEST(CpuListTest, RejectsGarbageWithTheOffendingToken) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList("0-3,x");
  ASSERT_FALSE(cpus.ok());
  EXPECT_THAT(std::string(cpus.status().message()), HasSubstr("\"x\""));
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("0-").ok());
  EXPECT_FALSE(ParseCpuList("-1").ok());
  EXPECT_FALSE(ParseCpuList("0-4294967295").ok());
}

TEST(CpuListTest, FormatsCompactly) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuListTest, CountsIntersection) { EXPECT_EQ(IntersectionSize({0, 1, 2, 3}, {2, 3, 4}), 2u); }

}  // namespace
}  // namespace neighborly
