// The real measurement on this machine (a 2-CPU VM, one NUMA node, shared by
// several builds): it must finish within its budget and give a figure in a
// range any DRAM system of the last two decades falls in.
#include "node-agent/src/membw/stream_triad.h"

#include <sched.h>

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

constexpr double kPlausibleLow = 1e9;    // 1 GB/s: below any DDR channel
constexpr double kPlausibleHigh = 2e12;  // 2 TB/s: above any CPU socket today

CpuSet ThisProcessCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  CpuSet cpus;
  for (uint32_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// The machine is shared with other builds: up to three tries for a clean
// figure. Each try must keep the bound; a try without one must say it was the
// load (out of time while touching, or no clean pass), never give a figure.
TEST(StreamTriadTest, MeasuresThisMachineWithinTheBudget) {
  std::unique_ptr<BandwidthMeter> meter = NewStreamTriadMeter();
  const absl::Duration budget = absl::Seconds(2);
  bool measured = false;
  for (int attempt = 0; attempt < 3 && !measured; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<TriadResult> r = meter->Measure({.numa_node = 0,
                                                    .cpus = ThisProcessCpus(),
                                                    .working_set_bytes = 384ull << 20,
                                                    .budget = budget});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The bound: the budget plus thread start-up and unmapping.
    EXPECT_LT(seconds, absl::ToDoubleSeconds(budget) + 0.5);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
      std::printf("triad: try %d: %s (%.2f s)\n", attempt + 1,
                  std::string(r.status().message()).c_str(), seconds);
      continue;
    }
    EXPECT_LE(absl::ToDoubleSeconds(r->elapsed), seconds);
    EXPECT_GE(r->passes, 1);
    EXPECT_EQ(r->threads, static_cast<int>(ThisProcessCpus().size()));
    EXPECT_GE(r->working_set_bytes, 380ull << 20);
    EXPECT_FALSE(r->placement.empty());
    // Even a disturbed pass moves data at DRAM speed, not at cache speed.
    EXPECT_GT(r->best_any_bytes_per_second, kPlausibleLow);
    EXPECT_LT(r->best_any_bytes_per_second, kPlausibleHigh);
    std::printf(
        "triad: try %d: %.2f GB/s best clean (%d of %d passes), %.2f GB/s best (CPU share "
        "%.2f), %.2f s, %s\n",
        attempt + 1, r->bytes_per_second / 1e9, r->clean_passes, r->passes,
        r->best_any_bytes_per_second / 1e9, r->cpu_share, seconds, r->placement.c_str());
    if (r->clean_passes > 0) {
      EXPECT_GT(r->bytes_per_second, kPlausibleLow);
      EXPECT_LE(r->bytes_per_second, r->best_any_bytes_per_second);
      measured = true;
    } else {
      EXPECT_EQ(r->bytes_per_second, 0);  // no figure from a throttled run
      EXPECT_LT(r->cpu_share, kCleanCpuShare);
    }
  }
  if (!measured) std::printf("triad: this machine was too busy for a clean pass in 3 tries\n");
}

TEST(StreamTriadTest, AShortBudgetStopsTouchingInTime) {
  std::unique_ptr<BandwidthMeter> meter = NewStreamTriadMeter();
  const auto start = std::chrono::steady_clock::now();
  // 4 GiB cannot be touched in 50 ms; the call gives up instead of overrunning.
  absl::StatusOr<TriadResult> r = meter->Measure({.numa_node = 0,
                                                  .cpus = ThisProcessCpus(),
                                                  .working_set_bytes = 4ull << 30,
                                                  .budget = absl::Milliseconds(50)});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("took longer than 3/4 of the budget"));
  EXPECT_LT(seconds, 1.0);
}

TEST(StreamTriadTest, RefusesCpusOutsideTheAffinityAndTinyWorkingSets) {
  std::unique_ptr<BandwidthMeter> meter = NewStreamTriadMeter();
  absl::StatusOr<TriadResult> foreign = meter->Measure({.numa_node = 3,
                                                        .cpus = {4000, 4001},
                                                        .working_set_bytes = 96ull << 20,
                                                        .budget = absl::Seconds(1)});
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.status().message(), HasSubstr("NUMA node 3's CPUs (4000-4001)"));
  absl::StatusOr<TriadResult> tiny = meter->Measure({.numa_node = 0,
                                                     .cpus = ThisProcessCpus(),
                                                     .working_set_bytes = 4096,
                                                     .budget = absl::Seconds(1)});
  EXPECT_EQ(tiny.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neighborly::agent
