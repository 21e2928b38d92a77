#include "node-agent/src/sys/limits.h"

#include <sys/resource.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

rlimit Current() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit;
}

TEST(RaiseOpenFileLimitTest, ReachesTheHardLimit) {
  const rlimit before = Current();
  absl::StatusOr<uint64_t> soft = RaiseOpenFileLimit(before.rlim_max);
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_EQ(*soft, before.rlim_max);
  EXPECT_EQ(Current().rlim_cur, before.rlim_max);
  // Asking for less than what is in force changes nothing.
  EXPECT_EQ(*RaiseOpenFileLimit(16), before.rlim_max);
}

TEST(RaiseOpenFileLimitTest, BeyondTheKernelMaximumIsAClearError) {
  uint64_t nr_open = 0;
  std::ifstream("/proc/sys/fs/nr_open") >> nr_open;
  if (nr_open == 0) GTEST_SKIP() << "no /proc/sys/fs/nr_open";
  const rlimit before = Current();
  absl::StatusOr<uint64_t> soft = RaiseOpenFileLimit(nr_open + 1);
  ASSERT_FALSE(soft.ok());
  EXPECT_THAT(std::string(soft.status().message()), HasSubstr("cannot raise RLIMIT_NOFILE"));
  EXPECT_THAT(std::string(soft.status().message()), HasSubstr("perf counters"));
  // Best effort: the soft limit went as far as the hard one.
  EXPECT_EQ(Current().rlim_cur, Current().rlim_max);
  EXPECT_GE(Current().rlim_max, before.rlim_max);
}

}  // namespace
}  // namespace neighborly::agent
