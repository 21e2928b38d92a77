// When each node's verdict may next change, for a verdict tracker's refresh
// (ExtenderCore::VerdictTracker, issue 25): entries (time, node ordinal) are
// pushed as nodes are evaluated, and each refresh pops those due by its
// `now`, earliest first, ties by ordinal, as a binary heap of them would.
//
// A calendar of one-millisecond buckets over the next ~4 s, and a heap for
// what lies beyond. A binary heap of a fleet's entries (5,000 nodes, 5,000
// to 20,000 entries of 24 bytes per shape) cost a refresh of the stream a
// dozen cold cache lines per popped entry, 7-12 % of the refresh
// (bench/verdict_stream_bench under perf); a refresh here visits the
// buckets of the milliseconds since the last one and sorts what is due.
//
//   ExpiryQueue q;
//   q.Push(valid_until, ordinal);
//   q.PopDue(now, due);  // appends (time, ordinal) of every entry <= now, in order
#ifndef NEIGHBORLY_EXTENDER_SRC_CORE_EXPIRY_QUEUE_H_
#define NEIGHBORLY_EXTENDER_SRC_CORE_EXPIRY_QUEUE_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace neighborly::extender {

class ExpiryQueue {
 public:
  using Entry = std::pair<absl::Time, uint64_t>;  // (time, ordinal)

  ExpiryQueue() : buckets_(kBuckets) {}

  void Push(absl::Time at, uint64_t ordinal);
  // Removes every entry at or before `now` and appends them to `due` in
  // (time, ordinal) order. `now` need not grow from call to call.
  void PopDue(absl::Time now, std::vector<Entry>& due);
  // Entries held, stale ones included (the caller's to tell).
  size_t size() const { return size_; }
  // Empties the queue (its buckets' memory is kept).
  void Clear();

 private:
  static constexpr int64_t kBuckets = 4096;  // one millisecond each
  static int64_t Bucket(absl::Time at) { return absl::ToUnixMillis(at); }  // floor

  // buckets_[b % kBuckets] holds the entries of bucket b for b in
  // [base_, base_ + kBuckets), and those before base_ in base_'s; later
  // ones, and all pushed before the first PopDue, wait in `later_`. base_
  // is now's bucket as of the last PopDue.
  std::vector<std::vector<Entry>> buckets_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> later_;
  int64_t base_ = 0;
  bool started_ = false;  // base_ set by a PopDue since the last Clear
  size_t size_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CORE_EXPIRY_QUEUE_H_
