// Helper threads that evaluate one large request's candidates together with
// the request's own thread. kube-scheduler asks its extenders about one pod at
// a time, so while a 5,000-name filter runs the extender's other cores are
// usually idle; splitting the candidates over them cuts the latency the
// scheduler waits for. Small requests (the usual 500 names) stay on their
// thread: waking a helper costs more than it saves there.
//
//   EvaluationPool pool(4);                       // the caller plus 3 helpers
//   pool.Run(chunks, [&](size_t chunk) { ... });  // every chunk once, then returns
//
// Run() hands out chunks through one atomic counter: the caller starts at
// once and helpers join as they wake, so a slow wake-up costs nothing but
// its share. One request at a time uses the helpers; a Run() that finds them
// busy does all its chunks itself. Chunks must not depend on each other.
#ifndef NEIGHBORLY_EXTENDER_SRC_CORE_EVALUATION_POOL_H_
#define NEIGHBORLY_EXTENDER_SRC_CORE_EVALUATION_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace neighborly::extender {

class EvaluationPool {
 public:
  // `threads` counts the caller: 1 starts no helper (Run calls fn in a loop).
  explicit EvaluationPool(size_t threads);
  ~EvaluationPool();
  EvaluationPool(const EvaluationPool&) = delete;
  EvaluationPool& operator=(const EvaluationPool&) = delete;

  // Calls fn(i) once for every i in [0, count), on this thread and on idle
  // helpers; returns when every call has returned.
  void Run(size_t count, absl::FunctionRef<void(size_t)> fn);

  // Wakes the helpers ahead of a Run that is about to come (the caller is
  // still parsing the request): they wait for it spinning, for up to
  // kPrewakeSpin, instead of asleep, so that a wake-up (tens of microseconds
  // on a VM) is not on the request's path. Costs that much CPU per helper
  // when no Run follows.
  void Prewake();
  static constexpr int64_t kPrewakeSpinNanos = 300'000;

  size_t threads() const { return helpers_.size() + 1; }
  // Runs in which a helper ran at least one chunk (for tests and metrics).
  uint64_t shared_runs() const { return shared_runs_.load(std::memory_order_relaxed); }

  // The CPUs this process may use: its affinity mask, capped by a cgroup CPU
  // quota (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us / cfs_period_us) read
  // under `cgroup_root` (normally /sys/fs/cgroup). At least 1.
  static size_t UsableCpus(const char* cgroup_root = "/sys/fs/cgroup");

 private:
  struct Job {
    size_t count;
    absl::FunctionRef<void(size_t)> fn;
    std::atomic<size_t> next{0};
    std::atomic<size_t> finished{0};
    size_t helpers_inside = 0;  // guarded by mu_
    size_t helper_chunks = 0;   // guarded by mu_
  };
  static size_t Work(Job& job);  // chunks it ran
  void HelperLoop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;  // guarded by mu_
  uint64_t generation_ = 0;
  // Bumped by Prewake() and by Run() (which also publishes job_), so that a
  // prewoken helper sees either without taking the lock.
  std::atomic<uint64_t> signal_{0};
  uint64_t prewake_generation_ = 0;  // guarded by mu_
  bool stop_ = false;
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> shared_runs_{0};
  std::vector<std::thread> helpers_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CORE_EVALUATION_POOL_H_
