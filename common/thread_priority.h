// CPU priority per thread, for work that must yield to the scheduling path.
//
// On Linux a nice value and a scheduling policy belong to a thread, not a
// process, and lowering either needs no privilege. The extender's gRPC ingest
// threads call
//   neighborly::LowerThisThreadPriority(kIngestNiceIncrement, /*idle_policy=*/true);
// at the top of every callback: the first call per thread sets the priority,
// later calls cost one thread-local load.
//
// Nice +10 gives a thread about a tenth of the CPU weight of a nice-0 thread,
// but the kernel (CFS) does not always preempt it when a nice-0 thread wakes:
// a /filter worker could wait out the rest of its slice, milliseconds. Under
// SCHED_IDLE a thread is preempted by any waking normal thread at once, and
// otherwise runs on whatever CPU nothing else wants (docs/performance.md, soak
// run H: round-trip p99 1.9 ms -> below 1 ms). The nice value is set as well,
// for a kernel or seccomp profile that refuses the policy.
#ifndef NEIGHBORLY_COMMON_THREAD_PRIORITY_H_
#define NEIGHBORLY_COMMON_THREAD_PRIORITY_H_

namespace neighborly {

// How much lower than the process's own priority the extender's ingest
// threads run: nice +10 is about a tenth of the CPU weight of a nice-0 thread.
inline constexpr int kIngestNiceIncrement = 10;

// Raises the calling thread's nice value by `increment` (capped at 19, the
// lowest priority) the first time it is called on this thread; returns the
// nice value the thread now has, or -1 when the kernel refused (the thread
// then keeps its priority; nothing else changes).
// With `idle_policy`, also moves it to SCHED_IDLE (kept at its nice value if
// the kernel refuses).
int LowerThisThreadPriority(int increment, bool idle_policy = false);

// Whether the calling thread runs under SCHED_IDLE (for tests and diagnostics).
bool ThisThreadIsIdlePolicy();

// The calling thread's nice value (for tests and diagnostics).
int ThisThreadNice();

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_THREAD_PRIORITY_H_
