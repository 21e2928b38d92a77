#include "extender/src/core/expiry_queue.h"

#include <algorithm>

namespace neighborly::extender {
namespace {

// Bucket numbers stay well inside int64 (base + kBuckets cannot overflow);
// times beyond +-2^61 ms share a bucket and are still told apart by time.
constexpr int64_t kBucketLimit = int64_t{1} << 61;

int64_t Clamped(int64_t bucket) { return std::clamp(bucket, -kBucketLimit, kBucketLimit); }

// A bucket's slot in the calendar (bucket numbers may be negative).
size_t Slot(int64_t bucket, int64_t buckets) {
  return static_cast<size_t>(((bucket % buckets) + buckets) % buckets);
}

}  // namespace

void ExpiryQueue::Push(absl::Time at, uint64_t ordinal) {
  int64_t b = Clamped(Bucket(at));
  ++size_;
  // Until a PopDue says where now is, everything waits in the heap (a base
  // set from the first entry pushed, seconds ahead of now, once gathered
  // every earlier entry into its one bucket, scanned by every PopDue).
  if (!started_ || b >= base_ + kBuckets) {
    later_.push({at, ordinal});
    return;
  }
  // One before the base is due at the next PopDue: it waits in the base's.
  b = std::max(b, base_);
  buckets_[Slot(b, kBuckets)].push_back({at, ordinal});
}

void ExpiryQueue::PopDue(absl::Time now, std::vector<Entry>& due) {
  const int64_t now_bucket = Clamped(Bucket(now));
  if (!started_) {
    base_ = now_bucket;
    started_ = true;
  }
  if (size_ == 0) return;
  const size_t first = due.size();
  // The buckets from the base to now's (every slot once at most): each
  // entry there but in now's own bucket is due; now's, and the base's when
  // now lies before it, are checked one by one.
  const int64_t last = std::min(std::max(now_bucket, base_), base_ + kBuckets - 1);
  for (int64_t b = base_; b <= last; ++b) {
    std::vector<Entry>& bucket = buckets_[Slot(b, kBuckets)];
    size_t kept = 0;
    for (const Entry& e : bucket) {
      if (e.first <= now) {
        due.push_back(e);
      } else {
        bucket[kept++] = e;
      }
    }
    bucket.resize(kept);
  }
  base_ = std::max(base_, now_bucket);
  // What waited beyond the calendar: due now, or within its reach.
  while (!later_.empty() &&
         (later_.top().first <= now || Clamped(Bucket(later_.top().first)) < base_ + kBuckets)) {
    const Entry e = later_.top();
    later_.pop();
    if (e.first <= now) {
      due.push_back(e);
    } else {
      const int64_t b = std::max(Clamped(Bucket(e.first)), base_);
      buckets_[Slot(b, kBuckets)].push_back(e);
    }
  }
  size_ -= due.size() - first;
  std::sort(due.begin() + static_cast<std::ptrdiff_t>(first), due.end());
}

void ExpiryQueue::Clear() {
  for (std::vector<Entry>& bucket : buckets_) bucket.clear();
  later_ = {};
  started_ = false;
  size_ = 0;
}

}  // namespace neighborly::extender
