// Time source passed through constructors so that tests control time.
//
// Two readings: Now() is the wall clock (timestamps, token expiry), which NTP
// or an operator may step; Monotonic() never steps (CLOCK_MONOTONIC), so
// durations (an agent's window, rates per second) are measured with it.
//
//   RealClock clock;             // production
//   FakeClock fake(absl::FromUnixSeconds(1000)); fake.Advance(absl::Seconds(2));
//   fake.Set(absl::FromUnixSeconds(0));   // a wall-clock step; Monotonic() unmoved
#ifndef NEIGHBORLY_COMMON_CLOCK_H_
#define NEIGHBORLY_COMMON_CLOCK_H_

#include <atomic>
#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace neighborly {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Time since an arbitrary fixed point; only differences mean something.
  virtual absl::Duration Monotonic() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  absl::Duration Monotonic() const override {
    return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
};

// A clock that moves only when told; safe to read from several threads.
// Advance moves both readings; Set steps the wall clock only, as NTP would.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000))
      : now_ns_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(now_ns_.load()); }
  absl::Duration Monotonic() const override { return absl::Nanoseconds(monotonic_ns_.load()); }
  void Advance(absl::Duration d) {
    now_ns_ += absl::ToInt64Nanoseconds(d);
    monotonic_ns_ += absl::ToInt64Nanoseconds(d);
  }
  void Set(absl::Time t) { now_ns_ = absl::ToUnixNanos(t); }

 private:
  std::atomic<int64_t> now_ns_;
  std::atomic<int64_t> monotonic_ns_{0};
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_CLOCK_H_
