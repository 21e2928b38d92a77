// Time source passed through constructors so that tests control time.
//
//   RealClock clock;             // production
//   FakeClock fake(absl::FromUnixSeconds(1000)); fake.Advance(absl::Seconds(2));
#ifndef NEIGHBORLY_COMMON_CLOCK_H_
#define NEIGHBORLY_COMMON_CLOCK_H_

#include <atomic>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace neighborly {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

// A clock that moves only when told; safe to read from several threads.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000))
      : now_ns_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(now_ns_.load()); }
  void Advance(absl::Duration d) { now_ns_ += absl::ToInt64Nanoseconds(d); }
  void Set(absl::Time t) { now_ns_ = absl::ToUnixNanos(t); }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_CLOCK_H_
