// Feeds an InterferenceTracker from the core's newest reports (issue 26): a
// thread looks at every node's newest report every `period` (half the agents'
// default interval, so that each window is seen; the tracker ignores one it
// has seen), and marks the workloads it names repeatedly as aggressors in
// the core (placement feedback). Header-only; stops and joins when destroyed.
//
//   InterferenceTracker tracker;
//   InterferenceObserver observer(core, tracker);   // until it goes out of scope
#ifndef NEIGHBORLY_EXTENDER_SRC_API_INTERFERENCE_OBSERVER_H_
#define NEIGHBORLY_EXTENDER_SRC_API_INTERFERENCE_OBSERVER_H_

#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/model/interference_attribution.h"

namespace neighborly::extender {

class InterferenceObserver {
 public:
  InterferenceObserver(ExtenderCore& core, InterferenceTracker& tracker,
                       absl::Duration period = absl::Milliseconds(500))
      : thread_([this, &core, &tracker, period] {
          while (!stop_.WaitForNotificationWithTimeout(period)) {
            core.ForEachReport(
                [&tracker](const telemetry::v1::NodeReport& r) { tracker.Observe(r); });
            // Feedback: a repeat antagonist is an aggressor in placement.
            const std::set<std::string> repeat = tracker.RepeatAntagonists();
            if (!repeat.empty()) core.MarkAntagonists(repeat);
          }
        }) {}
  ~InterferenceObserver() {
    stop_.Notify();
    thread_.join();
  }
  InterferenceObserver(const InterferenceObserver&) = delete;
  InterferenceObserver& operator=(const InterferenceObserver&) = delete;

 private:
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_API_INTERFERENCE_OBSERVER_H_
