#include "common/thread_priority.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace neighborly {
namespace {

TEST(ThreadPriorityTest, LowersOnlyTheCallingThreadAndOnlyOnce) {
  const int main_before = ThisThreadNice();
  ASSERT_GE(main_before, -20);
  // Raising a nice value needs no privilege (ctest may itself run under nice).
  const int wanted = std::min(main_before + 7, 19);
  int first = -3, second = -3, seen = -3;
  std::thread worker([&] {
    first = LowerThisThreadPriority(7);
    second = LowerThisThreadPriority(3);  // ignored: already set on this thread
    seen = ThisThreadNice();
  });
  worker.join();
  EXPECT_EQ(first, wanted);
  EXPECT_EQ(second, wanted);
  EXPECT_EQ(seen, wanted);
  EXPECT_EQ(ThisThreadNice(), main_before) << "the process's other threads keep their priority";
}

TEST(ThreadPriorityTest, ClampsToTheValidRange) {
  int got = -3, negative = -3;
  const int base = ThisThreadNice();
  std::thread worker([&] { got = LowerThisThreadPriority(99); });
  worker.join();
  EXPECT_EQ(got, 19) << "base nice " << base;
  std::thread other([&] { negative = LowerThisThreadPriority(-5); });  // never raises priority
  other.join();
  EXPECT_EQ(negative, base);
}

TEST(ThreadPriorityTest, IdlePolicyIsPerThread) {
  ASSERT_FALSE(ThisThreadIsIdlePolicy());
  bool idle = false, plain = true;
  std::thread worker([&] {
    LowerThisThreadPriority(10, /*idle_policy=*/true);
    idle = ThisThreadIsIdlePolicy();
  });
  worker.join();
  std::thread other([&] {
    LowerThisThreadPriority(10);
    plain = ThisThreadIsIdlePolicy();
  });
  other.join();
  EXPECT_TRUE(idle);
  EXPECT_FALSE(plain) << "only asked for: a nice value";
  EXPECT_FALSE(ThisThreadIsIdlePolicy()) << "the process's other threads keep their policy";
}

}  // namespace
}  // namespace neighborly
