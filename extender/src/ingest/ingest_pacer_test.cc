#include "extender/src/ingest/ingest_pacer.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// Reports `count` windows of `window`, each `age` old when received, over one
// period of the fake clock; returns the last ack's interval.
std::optional<absl::Duration> Period(IngestPacer& pacer, FakeClock& clock, int count,
                                     absl::Duration window, absl::Duration age) {
  std::optional<absl::Duration> ask;
  for (int i = 0; i < count; ++i) {
    clock.Advance(absl::Seconds(5) / count);
    ask = pacer.Observe(clock.Now() - age, window);
  }
  return ask;
}

IngestPacerOptions Options() {
  return {.enabled = true,
          .max_lag = absl::Seconds(1),
          .max_interval = absl::Seconds(8),
          .period = absl::Seconds(5),
          .late_share = 0.1,
          .calm_periods = 2,
          .min_reports = 20};
}

TEST(IngestPacerTest, AcksCarryNoIntervalWhileTheIngestKeepsUp) {
  FakeClock clock;
  IngestPacer pacer(Options(), clock);
  for (int p = 0; p < 5; ++p) {
    EXPECT_EQ(Period(pacer, clock, 100, absl::Seconds(1), absl::Milliseconds(20)), std::nullopt);
  }
  EXPECT_EQ(pacer.requested(), absl::ZeroDuration());
}

TEST(IngestPacerTest, BehindDoublesUpToTheCeilingThenStepsBackAndReleases) {
  FakeClock clock;
  IngestPacer pacer(Options(), clock);
  Period(pacer, clock, 100, absl::Seconds(1), absl::Milliseconds(20));  // learns the own 1 s
  // A period with 30 % of the reports 3 s old: behind.
  std::optional<absl::Duration> ask;
  for (int i = 0; i < 100; ++i) {
    clock.Advance(absl::Milliseconds(50));
    ask = pacer.Observe(clock.Now() - (i % 10 < 3 ? absl::Seconds(3) : absl::Milliseconds(20)),
                        absl::Seconds(1));
  }
  EXPECT_THAT(ask, Optional(absl::Seconds(2)));
  // The period after a change is not judged; the one after it is.
  EXPECT_THAT(Period(pacer, clock, 50, absl::Seconds(2), absl::Seconds(3)),
              Optional(absl::Seconds(2)));
  EXPECT_THAT(Period(pacer, clock, 50, absl::Seconds(2), absl::Seconds(3)),
              Optional(absl::Seconds(4)));
  Period(pacer, clock, 25, absl::Seconds(4), absl::Seconds(3));
  EXPECT_THAT(Period(pacer, clock, 25, absl::Seconds(4), absl::Seconds(3)),
              Optional(absl::Seconds(8)));
  Period(pacer, clock, 25, absl::Seconds(8), absl::Seconds(3));
  EXPECT_THAT(Period(pacer, clock, 25, absl::Seconds(8), absl::Seconds(3)),
              Optional(absl::Seconds(8)));  // the ceiling
  // Keeping up for calm_periods (2) judged periods halves it, and so on down
  // to the agents' own 1 s, which is handed back as 0.
  Period(pacer, clock, 25, absl::Seconds(8), absl::Milliseconds(20));  // settles
  Period(pacer, clock, 25, absl::Seconds(8), absl::Milliseconds(20));
  EXPECT_THAT(Period(pacer, clock, 25, absl::Seconds(8), absl::Milliseconds(20)),
              Optional(absl::Seconds(4)));
  Period(pacer, clock, 25, absl::Seconds(4), absl::Milliseconds(20));  // settles
  Period(pacer, clock, 25, absl::Seconds(4), absl::Milliseconds(20));
  EXPECT_THAT(Period(pacer, clock, 25, absl::Seconds(4), absl::Milliseconds(20)),
              Optional(absl::Seconds(2)));
  Period(pacer, clock, 50, absl::Seconds(2), absl::Milliseconds(20));  // settles
  Period(pacer, clock, 50, absl::Seconds(2), absl::Milliseconds(20));
  EXPECT_THAT(Period(pacer, clock, 50, absl::Seconds(2), absl::Milliseconds(20)),
              Optional(absl::ZeroDuration()));
  EXPECT_EQ(pacer.requested(), absl::ZeroDuration());
  PrometheusWriter page;
  pacer.AppendPrometheus(page);
  const std::string text = page.Render();
  EXPECT_THAT(text, HasSubstr("neighborly_ingest_interval_changes_total{direction=\"raise\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_ingest_interval_changes_total{direction=\"lower\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("neighborly_ingest_interval_changes_total{direction=\"release\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("neighborly_ingest_requested_interval_seconds 0\n"));
}

TEST(IngestPacerTest, FewReportsOrSkewedClocksDecideNothing) {
  FakeClock clock;
  IngestPacer pacer(Options(), clock);
  // 10 late reports a period: under min_reports.
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(Period(pacer, clock, 10, absl::Seconds(1), absl::Seconds(5)), std::nullopt);
  }
  // Windows stamped two hours off: not counted at all.
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(Period(pacer, clock, 100, absl::Seconds(1), absl::Hours(2)), std::nullopt);
  }
  EXPECT_EQ(pacer.requested(), absl::ZeroDuration());
}

TEST(IngestPacerTest, DisabledNeverAsks) {
  FakeClock clock;
  IngestPacerOptions options = Options();
  options.enabled = false;
  IngestPacer pacer(options, clock);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(Period(pacer, clock, 100, absl::Seconds(1), absl::Seconds(5)), std::nullopt);
  }
  // The late reports are counted all the same.
  PrometheusWriter page;
  pacer.AppendPrometheus(page);
  EXPECT_THAT(page.Render(), HasSubstr("neighborly_ingest_late_reports_total 300\n"));
}

}  // namespace
}  // namespace neighborly::extender
