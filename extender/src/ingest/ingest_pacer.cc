#include "extender/src/ingest/ingest_pacer.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace neighborly::extender {

IngestPacer::IngestPacer(IngestPacerOptions options, const Clock& clock)
    : options_(options),
      clock_(clock),
      next_decision_ns_(absl::ToUnixNanos(clock.Now() + options.period)) {}

std::optional<absl::Duration> IngestPacer::Observe(absl::Time window_end, absl::Duration window) {
  const absl::Time now = clock_.Now();
  const absl::Duration age = now - window_end;
  // A clock an hour off says nothing about this replica's ingest.
  if (age > -absl::Hours(1) && age < absl::Hours(1)) {
    period_reports_.fetch_add(1, std::memory_order_relaxed);
    if (age > options_.max_lag) {
      period_late_.fetch_add(1, std::memory_order_relaxed);
      late_total_.fetch_add(1, std::memory_order_relaxed);
    }
    if (requested_ns_.load(std::memory_order_relaxed) == 0 && window > absl::ZeroDuration()) {
      const int64_t ns = absl::ToInt64Nanoseconds(window);
      int64_t seen = own_window_ns_.load(std::memory_order_relaxed);
      while (ns < seen && !own_window_ns_.compare_exchange_weak(seen, ns)) {
      }
    }
  }
  // Disabled, late reports are still counted (the metric), nothing is asked.
  if (!options_.enabled) return std::nullopt;
  if (absl::ToUnixNanos(now) >= next_decision_ns_.load(std::memory_order_relaxed)) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (lock.owns_lock() && absl::ToUnixNanos(now) >= next_decision_ns_.load()) Decide(now);
  }
  if (!ever_asked_.load(std::memory_order_relaxed)) return std::nullopt;
  return absl::Nanoseconds(requested_ns_.load(std::memory_order_relaxed));
}

void IngestPacer::Decide(absl::Time now) {
  next_decision_ns_.store(absl::ToUnixNanos(now + options_.period));
  const uint64_t reports = period_reports_.exchange(0);
  const uint64_t late = period_late_.exchange(0);
  if (reports < options_.min_reports) return;
  if (settle_) {
    // The period after a change still holds reports sent at the old interval
    // (and a backlog's drain): not judged.
    settle_ = false;
    return;
  }
  const double share = static_cast<double>(late) / static_cast<double>(reports);
  const absl::Duration asked = absl::Nanoseconds(requested_ns_.load());
  const int64_t own_ns = own_window_ns_.load();
  const absl::Duration own = own_ns == INT64_MAX ? absl::Seconds(1) : absl::Nanoseconds(own_ns);
  if (share > options_.late_share) {
    calm_ = 0;
    const absl::Duration next =
        std::min(options_.max_interval, (asked > absl::ZeroDuration() ? asked : own) * 2);
    if (next <= asked) return;  // at the ceiling already
    requested_ns_.store(absl::ToInt64Nanoseconds(next));
    ever_asked_.store(true);
    settle_ = true;
    raises_.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn(
        "ingest falls behind: {} of {} reports in the last {} were older than {} when ingested "
        "(grpc.adaptiveInterval.maxLag); asking agents to report every {}",
        late, reports, absl::FormatDuration(options_.period),
        absl::FormatDuration(options_.max_lag), absl::FormatDuration(next));
    return;
  }
  if (asked == absl::ZeroDuration() || share >= options_.late_share / 4) {
    calm_ = 0;
    return;
  }
  if (++calm_ < options_.calm_periods) return;
  calm_ = 0;
  settle_ = true;
  const absl::Duration half = asked / 2;
  if (half <= own) {
    requested_ns_.store(0);
    releases_.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("ingest keeps up again: agents back to their own interval ({})",
                 absl::FormatDuration(own));
  } else {
    requested_ns_.store(absl::ToInt64Nanoseconds(half));
    lowers_.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("ingest keeps up at {}: asking agents to report every {}",
                 absl::FormatDuration(asked), absl::FormatDuration(half));
  }
}

absl::Duration IngestPacer::requested() const {
  return absl::Nanoseconds(requested_ns_.load(std::memory_order_relaxed));
}

void IngestPacer::AppendPrometheus(PrometheusWriter& page) const {
  page.Counter("neighborly_ingest_late_reports_total",
               "Accepted reports older than grpc.adaptiveInterval.maxLag when ingested (receipt "
               "minus the end of their window): the ingest, or the network, lags.",
               {}, static_cast<double>(late_total_.load(std::memory_order_relaxed)));
  page.Gauge("neighborly_ingest_requested_interval_seconds",
             "The report interval this replica asks the agents for because its ingest fell "
             "behind; 0: none, the agents use their own.",
             {}, absl::ToDoubleSeconds(requested()));
  constexpr std::string_view kHelp =
      "Changes of the interval asked of the agents: raise (ingest behind), lower (keeping up), "
      "release (back to the agents' own).";
  page.Counter("neighborly_ingest_interval_changes_total", kHelp, {{"direction", "raise"}},
               static_cast<double>(raises_.load(std::memory_order_relaxed)));
  page.Counter("neighborly_ingest_interval_changes_total", kHelp, {{"direction", "lower"}},
               static_cast<double>(lowers_.load(std::memory_order_relaxed)));
  page.Counter("neighborly_ingest_interval_changes_total", kHelp, {{"direction", "release"}},
               static_cast<double>(releases_.load(std::memory_order_relaxed)));
}

}  // namespace neighborly::extender
