// A bounded memory-bandwidth measurement of one NUMA node: a STREAM-triad
// kernel (a[i] = b[i] + s * c[i] over doubles) run by one thread per CPU of
// the node, each pinned to its CPU, on arrays bound to the node's memory.
//
//   std::unique_ptr<BandwidthMeter> meter = NewStreamTriadMeter();
//   absl::StatusOr<TriadResult> r = meter->Measure({.numa_node = 0, .cpus = {0, 1},
//       .working_set_bytes = 384 << 20, .budget = absl::Seconds(2)});
//   r->bytes_per_second   // best undisturbed pass, STREAM's convention (24 B per element)
//
// The budget bounds the whole call: touching the arrays (at most 3/4 of the
// budget, else DeadlineExceeded) and the timed
// passes (the first always; another while the last one's time still fits;
// at most kMaxCleanPasses clean ones). Preemption only makes
// a pass slower (a thread off its CPU stretches the pass), so the best pass is
// a lower bound of the peak that more passes tighten; on a busy machine it is
// still a usable, conservative figure. What must not pass for a peak is a run
// throttled throughout, as under a container's CPU quota (200m shared by 64
// threads leaves each on its CPU 0.3 % of the time): a pass is "clean" when
// the threads together were on their CPUs for at least kCleanCpuShare of it
// (CPU time from CLOCK_THREAD_CPUTIME_ID over threads x wall time). The
// caller decides what to do without a clean pass (ResolvePeakMembw reports
// the measurement as failed) and shows the share with the figure.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_MEMBW_STREAM_TRIAD_H_
#define NEIGHBORLY_NODE_AGENT_SRC_MEMBW_STREAM_TRIAD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cpu_list.h"

namespace neighborly::agent {

struct TriadRequest {
  uint32_t numa_node = 0;
  CpuSet cpus;                     // the node's CPUs; those this process may not run on are skipped
  uint64_t working_set_bytes = 0;  // the three arrays together
  absl::Duration budget = absl::Seconds(2);
};

struct TriadResult {
  double bytes_per_second = 0;           // best clean pass; 0 when there was none
  double best_any_bytes_per_second = 0;  // best pass, clean or not
  // The threads' CPU time / (threads x wall time) of the best clean pass, or
  // of the best pass when none was clean.
  double cpu_share = 0;
  int threads = 0;
  CpuSet cpus;  // where the threads ran
  int passes = 0;
  int clean_passes = 0;
  uint64_t working_set_bytes = 0;  // after rounding to whole elements per thread
  absl::Duration elapsed;          // the whole call
  // How the arrays were placed: "bound to node 0 (mbind)" or, where mbind is
  // refused (seccomp without CAP_SYS_NICE), "first touch by the pinned threads".
  std::string placement;
};

// The door to the measurement (a fake in tests of what uses it).
class BandwidthMeter {
 public:
  virtual ~BandwidthMeter() = default;
  virtual absl::StatusOr<TriadResult> Measure(const TriadRequest& request) = 0;
};

inline constexpr int kMaxCleanPasses = 30;
// The build VM under a load of 18 on 2 CPUs still gives 0.28-0.35; a quota of
// 200m over 2 threads gives 0.1.
inline constexpr double kCleanCpuShare = 0.2;

std::unique_ptr<BandwidthMeter> NewStreamTriadMeter();

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_MEMBW_STREAM_TRIAD_H_
