#include "extender/src/core/evaluation_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "common/strings.h"

namespace neighborly::extender {

EvaluationPool::EvaluationPool(size_t threads) {
  for (size_t i = 1; i < threads; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

EvaluationPool::~EvaluationPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

size_t EvaluationPool::Work(Job& job) {
  size_t done = 0;
  for (size_t i = job.next.fetch_add(1, std::memory_order_relaxed); i < job.count;
       i = job.next.fetch_add(1, std::memory_order_relaxed)) {
    job.fn(i);
    job.finished.fetch_add(1, std::memory_order_acq_rel);
    ++done;
  }
  return done;
}

void EvaluationPool::Run(size_t count, absl::FunctionRef<void(size_t)> fn) {
  if (helpers_.empty() || count < 2 || busy_.exchange(true, std::memory_order_acquire)) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  Job job{count, fn};
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &job;
    ++generation_;
    signal_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  Work(job);
  {
    // Every chunk is claimed now; wait for the helpers still inside one, and
    // withdraw the job so that a helper waking late does not pick it up.
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] {
      return job.helpers_inside == 0 && job.finished.load(std::memory_order_acquire) == count;
    });
    job_ = nullptr;
  }
  if (job.helper_chunks > 0) shared_runs_.fetch_add(1, std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

void EvaluationPool::Prewake() {
  if (helpers_.empty() || busy_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++prewake_generation_;
    signal_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
}

void EvaluationPool::HelperLoop() {
  uint64_t seen = 0;
  uint64_t prewakes_seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] {
      return stop_ || (job_ != nullptr && generation_ != seen) ||
             prewake_generation_ != prewakes_seen;
    });
    if (stop_) return;
    if (prewake_generation_ != prewakes_seen && !(job_ != nullptr && generation_ != seen)) {
      // Prewoken: spin (without the lock) until the Run arrives or the spin
      // budget is spent, then look again under the lock.
      prewakes_seen = prewake_generation_;
      const uint64_t signal = signal_.load(std::memory_order_acquire);
      lock.unlock();
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::nanoseconds(kPrewakeSpinNanos);
      while (signal_.load(std::memory_order_acquire) == signal &&
             std::chrono::steady_clock::now() < give_up) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      lock.lock();
      continue;
    }
    prewakes_seen = prewake_generation_;
    seen = generation_;
    Job& job = *job_;
    ++job.helpers_inside;
    lock.unlock();
    const size_t done = Work(job);
    lock.lock();
    job.helper_chunks += done;
    if (--job.helpers_inside == 0) done_.notify_all();
  }
}

namespace {

// The cgroup CPU quota in CPUs (rounded up), or 0 when there is none.
size_t QuotaCpus(const std::string& root) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return in ? std::string(Trim(text.str())) : std::string();
  };
  auto cpus = [](double quota, double period) -> size_t {
    if (quota <= 0 || period <= 0) return 0;
    return static_cast<size_t>(std::max(1.0, std::ceil(quota / period)));
  };
  // cgroup v2: "max 100000" or "200000 100000".
  const std::string max = read(root + "/cpu.max");
  if (!max.empty()) {
    const size_t space = max.find(' ');
    if (space == std::string::npos || max.substr(0, space) == "max") return 0;
    const std::optional<double> quota = ParseDouble(std::string_view(max).substr(0, space));
    const std::optional<double> period = ParseDouble(std::string_view(max).substr(space + 1));
    return quota && period ? cpus(*quota, *period) : 0;
  }
  // cgroup v1: cpu.cfs_quota_us is -1 without a quota.
  const std::optional<double> quota = ParseDouble(read(root + "/cpu/cpu.cfs_quota_us"));
  const std::optional<double> period = ParseDouble(read(root + "/cpu/cpu.cfs_period_us"));
  return quota && period ? cpus(*quota, *period) : 0;
}

}  // namespace

size_t EvaluationPool::UsableCpus(const char* cgroup_root) {
  size_t cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = static_cast<size_t>(CPU_COUNT(&set));
  if (cpus == 0) cpus = std::max<size_t>(1, std::thread::hardware_concurrency());
  if (const size_t quota = QuotaCpus(cgroup_root); quota > 0) cpus = std::min(cpus, quota);
  return std::max<size_t>(1, cpus);
}

}  // namespace neighborly::extender
