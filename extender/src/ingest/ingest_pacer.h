// Asks the agents for a longer report interval when the ingest falls behind,
// and gives them their own back once it keeps up (the ReportAck's interval,
// proto/neighborly/telemetry/v1). A replica that cannot keep up otherwise
// ingests reports ever older: its view of the fleet lags while it looks fresh.
//
// Behind: in a period (5 s), more than `late_share` (10 %) of the accepted
// reports were older than `max_lag` (1 s) when they were ingested, the age
// being the receipt time minus the end of the report's window (agents stamp
// windows with their own clock; NTP keeps that within milliseconds, and a
// report stamped over an hour off is left out). Then the interval asked for
// doubles (from the agents' own, the shortest window seen while nothing was
// asked), up to `max_interval`; the period after a change is not judged (it
// still holds reports sent at the old interval, and the backlog draining). After `calm_periods` (6) periods with under a
// quarter of that share late it halves, and where half would be the agents'
// own it is released: acks carry interval 0, "your own" (the agent keeps an
// asked interval until told so).
//
//   IngestPacer pacer({.max_lag = absl::Seconds(1)}, clock);
//   std::optional<absl::Duration> ask = pacer.Observe(window_end, window);   // per report
//   if (ask) ack.mutable_interval()->set_seconds(...);                        // 0: your own
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_INGEST_PACER_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_INGEST_PACER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/prometheus_text.h"

namespace neighborly::extender {

struct IngestPacerOptions {
  bool enabled = true;                          // grpc.adaptiveInterval.enabled
  absl::Duration max_lag = absl::Seconds(1);    // grpc.adaptiveInterval.maxLag
  absl::Duration max_interval = absl::Seconds(30);  // grpc.adaptiveInterval.maxInterval
  absl::Duration period = absl::Seconds(5);
  double late_share = 0.1;
  int calm_periods = 6;
  uint64_t min_reports = 20;  // a period with fewer decides nothing
};

class IngestPacer {
 public:
  IngestPacer(IngestPacerOptions options, const Clock& clock);

  // One accepted report, its window's end and length, received now. Returns
  // the interval its ack carries: nullopt (none: nothing was ever asked),
  // zero (back to the agent's own) or the interval to report at.
  std::optional<absl::Duration> Observe(absl::Time window_end, absl::Duration window);

  // The interval asked for now (zero: none).
  absl::Duration requested() const;
  // neighborly_ingest_late_reports_total, neighborly_ingest_requested_interval_seconds,
  // neighborly_ingest_interval_changes_total{direction}.
  void AppendPrometheus(PrometheusWriter& page) const;

 private:
  // At a period's end: behind, calm or neither (under mu_).
  void Decide(absl::Time now);

  const IngestPacerOptions options_;
  const Clock& clock_;
  // This period's reports and late ones; the shortest window while nothing is asked.
  std::atomic<uint64_t> period_reports_{0};
  std::atomic<uint64_t> period_late_{0};
  std::atomic<int64_t> own_window_ns_{INT64_MAX};
  std::atomic<int64_t> next_decision_ns_;
  std::atomic<int64_t> requested_ns_{0};
  std::atomic<bool> ever_asked_{false};
  std::atomic<uint64_t> late_total_{0};
  std::atomic<uint64_t> raises_{0};
  std::atomic<uint64_t> lowers_{0};
  std::atomic<uint64_t> releases_{0};
  std::mutex mu_;  // one decision at a time
  int calm_ = 0;   // guarded by mu_
  bool settle_ = false;  // the next period follows a change: not judged (mu_)
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_INGEST_PACER_H_
