#include "extender/src/core/expiry_queue.h"

#include <gtest/gtest.h>

#include <functional>
#include <queue>
#include <random>
#include <vector>

namespace neighborly::extender {
namespace {

using Entry = ExpiryQueue::Entry;
using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;

// What the verdict tracker popped before the calendar: a binary heap.
std::vector<Entry> PopFromHeap(Heap& heap, absl::Time now) {
  std::vector<Entry> due;
  while (!heap.empty() && heap.top().first <= now) {
    due.push_back(heap.top());
    heap.pop();
  }
  return due;
}

// Pops what a binary heap pops, in its order, over a tracker's mix of times:
// within the calendar, beyond it, before its base, equal times of several
// nodes, InfinitePast, a clock that stands still, jumps ahead by minutes,
// and steps back.
TEST(ExpiryQueueTest, PopsWhatAHeapPopsInItsOrder) {
  std::mt19937_64 rng(25);
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  for (int round = 0; round < 20; ++round) {
    ExpiryQueue queue;
    Heap heap;
    absl::Time now = t0 + absl::Seconds(round);
    size_t popped = 0;
    for (int step = 0; step < 2'000; ++step) {
      const int pushes = static_cast<int>(rng() % 6);
      for (int p = 0; p < pushes; ++p) {
        absl::Time at;
        switch (rng() % 8) {
          case 0:
            at = absl::InfinitePast();
            break;
          case 1:
            at = now - absl::Milliseconds(static_cast<int64_t>(rng() % 3'000));  // overdue
            break;
          case 2:
            at = now + absl::Seconds(static_cast<int64_t>(5 + rng() % 600));  // beyond the calendar
            break;
          case 3:
            at = now + absl::Milliseconds(static_cast<int64_t>(rng() % 8)) / 4;  // sub-millisecond
            break;
          default:
            at = now + absl::Nanoseconds(static_cast<int64_t>(rng() % 3'000'000'000));
            break;
        }
        const uint64_t ordinal = rng() % 64;  // repeats: equal times of several nodes
        queue.Push(at, ordinal);
        heap.push({at, ordinal});
      }
      switch (rng() % 16) {
        case 0:
          now += absl::Minutes(static_cast<int64_t>(1 + rng() % 3));
          break;
        case 1:
          now -= absl::Milliseconds(static_cast<int64_t>(rng() % 20));
          break;
        case 2:
          break;
        default:
          now += absl::Microseconds(static_cast<int64_t>(rng() % 5'000));
          break;
      }
      std::vector<Entry> due = {{absl::InfiniteFuture(), 99}};  // appended after what is there
      queue.PopDue(now, due);
      const std::vector<Entry> expected = PopFromHeap(heap, now);
      ASSERT_EQ(due.size(), expected.size() + 1) << "round " << round << " step " << step;
      ASSERT_EQ(due.front(), (Entry{absl::InfiniteFuture(), 99}));
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), due.begin() + 1))
          << "round " << round << " step " << step;
      ASSERT_EQ(queue.size(), heap.size());
      popped += expected.size();
    }
    EXPECT_GT(popped, 1'000u);
    queue.Clear();
    EXPECT_EQ(queue.size(), 0u);
    std::vector<Entry> none;
    queue.PopDue(absl::InfiniteFuture(), none);
    EXPECT_TRUE(none.empty());
  }
}

}  // namespace
}  // namespace neighborly::extender
