// CPU priority per thread, for work that must yield to the scheduling path.
//
// On Linux a nice value belongs to a thread, not a process, and raising it
// needs no privilege. The extender's gRPC ingest threads call
//   neighborly::LowerThisThreadPriority(kIngestNiceIncrement);
// at the top of every callback: the first call per thread sets the nice value,
// later calls cost one thread-local load. Under CPU contention the kernel then
// runs kube-scheduler's /filter and /prioritize workers (nice 0) first; when
// the CPU is idle the ingest threads get all of it, as before.
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
int LowerThisThreadPriority(int increment);

// The calling thread's nice value (for tests and diagnostics).
int ThisThreadNice();

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_THREAD_PRIORITY_H_
