#include "extender/src/model/booking_fold.h"

#include <algorithm>

#include "extender/src/model/classify.h"

namespace neighborly::extender {
namespace {

void NoteBatch(const Booking& b, BookingFold::Batch& batch) {
  if (b.contention_class != ContentionClass::kBatch) return;
  batch.any = true;
  batch.max_llc_bytes = std::max(batch.max_llc_bytes, b.llc_bytes);
  batch.max_membw_bytes_per_second =
      std::max(batch.max_membw_bytes_per_second, b.membw_bytes_per_second);
}

}  // namespace

BookingFold FoldBookings(std::span<const Booking> bookings) {
  BookingFold fold;
  for (size_t i = 0; i < bookings.size(); ++i) {
    const Booking& b = bookings[i];
    fold.any = true;
    if (b.contention_class == ContentionClass::kLatencyCritical &&
        fold.first_latency_critical < 0) {
      fold.first_latency_critical = static_cast<int32_t>(i);
    }
    if (b.contention_class == ContentionClass::kBatch && fold.first_batch < 0) {
      fold.first_batch = static_cast<int32_t>(i);
    }
    fold.valid_until = std::min(fold.valid_until, b.expires_at);
    const double sensitivity = Sensitivity(b.contention_class);
    const bool lc = b.contention_class == ContentionClass::kLatencyCritical;
    if (b.numa_node < 0) {
      BookingFold::Shared& s = fold.shared;
      s.any = true;
      s.membw_bytes_per_second += b.membw_bytes_per_second;
      s.memory_bytes += static_cast<double>(b.memory_bytes);
      s.llc_bytes += b.llc_bytes;
      s.sensitivity = std::max(s.sensitivity, sensitivity);
      s.latency_critical = s.latency_critical || lc;
      NoteBatch(b, s.batch);
      continue;
    }
    auto group =
        std::find_if(fold.pinned.begin(), fold.pinned.end(),
                     [&](const BookingFold::Pinned& g) { return g.numa_id == b.numa_node; });
    if (group == fold.pinned.end()) {
      fold.pinned.emplace_back();
      group = fold.pinned.end() - 1;
      group->numa_id = b.numa_node;
    }
    group->membw_bytes_per_second += b.membw_bytes_per_second;
    group->exclusive_cpus += b.exclusive_cpus;
    group->memory_bytes += b.memory_bytes;
    if (b.exact) {
      group->exact_cpus += b.exclusive_cpus;
      group->exact_memory_bytes += b.memory_bytes;
    }
    group->sensitivity = std::max(group->sensitivity, sensitivity);
    group->latency_critical = group->latency_critical || lc;
    NoteBatch(b, group->batch);
    const int32_t l3_id = std::max(b.l3_domain, int32_t{-1});
    auto share = std::find_if(group->l3.begin(), group->l3.end(),
                              [&](const BookingFold::L3Share& s) { return s.l3_id == l3_id; });
    if (share == group->l3.end()) {
      group->l3.emplace_back();
      share = group->l3.end() - 1;
      share->l3_id = l3_id;
    }
    share->llc_bytes += b.llc_bytes;
    share->sensitivity = std::max(share->sensitivity, sensitivity);
  }
  return fold;
}

}  // namespace neighborly::extender
