#include "node-agent/src/simulate/fleet.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "common/clock.h"

namespace neighborly::agent {
namespace {

absl::Duration MonotonicNow() { return RealClock().Monotonic(); }

}  // namespace

void RunFleet(std::vector<SimulatedNode>& nodes,
              const std::vector<std::unique_ptr<ReportPublisher>>& publishers,
              absl::Duration interval, absl::Notification& stop) {
  const size_t n = std::min(nodes.size(), publishers.size());
  if (n == 0) {
    stop.WaitForNotification();
    return;
  }
  const absl::Time start = absl::Now();
  std::vector<absl::Time> window_start(n, start - interval);
  std::vector<absl::Duration> window_start_monotonic(n, MonotonicNow() - interval);
  std::vector<absl::Time> due(n, start);
  for (;;) {
    const absl::Time next = *std::min_element(due.begin(), due.end());
    if (stop.WaitForNotificationWithDeadline(next)) return;
    const absl::Time now = absl::Now();
    const absl::Duration now_monotonic = MonotonicNow();
    for (size_t i = 0; i < n; ++i) {
      if (due[i] > now) continue;
      // The window is stamped with the wall clock and timed with the monotonic one.
      publishers[i]->Publish(
          nodes[i].NextReport(window_start[i], now_monotonic - window_start_monotonic[i]));
      window_start[i] = now;
      window_start_monotonic[i] = now_monotonic;
      // Keep the cadence (no drift) unless the node fell behind by a whole interval.
      const absl::Duration step = publishers[i]->Interval(interval);
      due[i] = std::max(due[i] + step, now);
    }
  }
}

}  // namespace neighborly::agent
