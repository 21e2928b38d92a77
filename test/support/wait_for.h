// Polls a condition that has no notification of its own until it holds or a
// deadline passes (tests only).
//
//   ASSERT_TRUE(WaitFor([&] { return replica.Has(3); }));
//   ASSERT_TRUE(WaitFor([&] { return Ready(); }, absl::Seconds(10), absl::Milliseconds(50)));
#ifndef NEIGHBORLY_TEST_SUPPORT_WAIT_FOR_H_
#define NEIGHBORLY_TEST_SUPPORT_WAIT_FOR_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace neighborly::testing {

template <typename Pred>
bool WaitFor(Pred pred, absl::Duration timeout = absl::Seconds(30),
             absl::Duration step = absl::Milliseconds(2)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(step);
  }
  return true;
}

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_WAIT_FOR_H_
