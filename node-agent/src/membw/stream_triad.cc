#include "node-agent/src/membw/stream_triad.h"

#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace neighborly::agent {
namespace {

constexpr double kScalar = 3.0;
constexpr size_t kTouchBlockElements = 128 * 1024;  // 1 MiB of doubles between deadline checks
constexpr size_t kMinElementsPerThread = 64 * 1024;

int64_t NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CPUs of `wanted` this process may run on.
absl::StatusOr<CpuSet> AllowedCpus(const CpuSet& wanted) {
  const size_t bits = kMaxCpuId + 1;
  cpu_set_t* set = CPU_ALLOC(bits);
  const size_t size = CPU_ALLOC_SIZE(bits);
  CPU_ZERO_S(size, set);
  if (sched_getaffinity(0, size, set) != 0) {
    const int err = errno;
    CPU_FREE(set);
    return absl::InternalError(absl::StrCat("sched_getaffinity: ", std::strerror(err)));
  }
  CpuSet allowed;
  for (uint32_t cpu : wanted) {
    if (cpu < bits && CPU_ISSET_S(cpu, size, set)) allowed.push_back(cpu);
  }
  CPU_FREE(set);
  return allowed;
}

int PinTo(uint32_t cpu) {
  const size_t bits = static_cast<size_t>(cpu) + 1;
  cpu_set_t* set = CPU_ALLOC(bits);
  const size_t size = CPU_ALLOC_SIZE(bits);
  CPU_ZERO_S(size, set);
  CPU_SET_S(cpu, size, set);
  const int rc = pthread_setaffinity_np(pthread_self(), size, set);
  CPU_FREE(set);
  return rc;
}

// The arrays, unmapped on every path out.
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    addr_ = p == MAP_FAILED ? nullptr : p;
  }
  ~Mapping() {
    if (addr_ != nullptr) munmap(addr_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* addr() const { return addr_; }

 private:
  void* addr_ = nullptr;
  size_t bytes_;
};

struct ThreadPass {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t cpu_ns = 0;
};

class StreamTriadMeter final : public BandwidthMeter {
 public:
  absl::StatusOr<TriadResult> Measure(const TriadRequest& request) override {
    const int64_t begin_ns = NowNs(CLOCK_MONOTONIC);
    const int64_t deadline_ns = begin_ns + absl::ToInt64Nanoseconds(request.budget);
    absl::StatusOr<CpuSet> cpus = AllowedCpus(request.cpus);
    if (!cpus.ok()) return cpus.status();
    if (cpus->empty()) {
      return absl::FailedPreconditionError(absl::StrCat("none of NUMA node ", request.numa_node,
                                                        "'s CPUs (", FormatCpuList(request.cpus),
                                                        ") is in this process's CPU affinity"));
    }
    const size_t threads = cpus->size();
    size_t per_thread = request.working_set_bytes / (3 * sizeof(double)) / threads;
    per_thread -= per_thread % 8;  // whole 64-byte lines per thread
    if (per_thread < kMinElementsPerThread) {
      return absl::InvalidArgumentError(absl::StrCat(
          "working set of ", request.working_set_bytes, " bytes is too small for ", threads,
          " threads (at least ", kMinElementsPerThread * 3 * sizeof(double) * threads, ")"));
    }
    const size_t elements = per_thread * threads;
    const size_t region = 3 * elements * sizeof(double);
    Mapping mapping(region);
    if (mapping.addr() == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("mmap of ", region >> 20, " MiB for the arrays: ", std::strerror(errno)));
    }

    TriadResult result;
    result.threads = static_cast<int>(threads);
    result.cpus = *cpus;
    result.working_set_bytes = region;
    // Bind before the first touch; refused inside RuntimeDefault seccomp
    // without CAP_SYS_NICE, where the pinned threads' first touch still
    // allocates locally under the default policy.
    std::vector<unsigned long> mask(request.numa_node / (8 * sizeof(unsigned long)) + 1, 0);
    mask[request.numa_node / (8 * sizeof(unsigned long))] |=
        1UL << (request.numa_node % (8 * sizeof(unsigned long)));
    if (syscall(SYS_mbind, mapping.addr(), region, MPOL_BIND, mask.data(),
                mask.size() * 8 * sizeof(unsigned long) + 1, 0) == 0) {
      result.placement = absl::StrCat("bound to node ", request.numa_node, " (mbind)");
    } else {
      result.placement =
          absl::StrCat("first touch by the pinned threads (mbind: ", std::strerror(errno), ")");
    }

    double* a = static_cast<double*>(mapping.addr());
    double* b = a + elements;
    double* c = b + elements;
    std::atomic<bool> stop{false};
    std::atomic<bool> touch_late{false};
    std::vector<int> pin_errors(threads, 0);
    std::vector<ThreadPass> pass(threads);
    std::barrier sync(static_cast<std::ptrdiff_t>(threads + 1));

    // Touching may take three quarters of the budget; the rest is for passes.
    const int64_t touch_deadline_ns = begin_ns + absl::ToInt64Nanoseconds(request.budget) * 3 / 4;
    auto worker = [&](size_t i) {
      pin_errors[i] = PinTo((*cpus)[i]);
      const size_t lo = i * per_thread, hi = lo + per_thread;
      for (size_t start = lo; start < hi && pin_errors[i] == 0; start += kTouchBlockElements) {
        const size_t end = std::min(hi, start + kTouchBlockElements);
        for (size_t j = start; j < end; ++j) {
          a[j] = 0.0;
          b[j] = 1.0;
          c[j] = 2.0;
        }
        if (NowNs(CLOCK_MONOTONIC) > touch_deadline_ns) {
          touch_late = true;
          break;
        }
      }
      sync.arrive_and_wait();  // touched
      while (true) {
        sync.arrive_and_wait();  // start of a pass, or stop
        if (stop.load()) return;
        ThreadPass p;
        p.start_ns = NowNs(CLOCK_MONOTONIC);
        const int64_t cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
        double* __restrict out = a;
        const double* __restrict x = b;
        const double* __restrict y = c;
        for (size_t j = lo; j < hi; ++j) out[j] = x[j] + kScalar * y[j];
        p.cpu_ns = NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        p.end_ns = NowNs(CLOCK_MONOTONIC);
        pass[i] = p;
        sync.arrive_and_wait();  // end of the pass
      }
    };
    std::vector<std::thread> workers;
    workers.reserve(threads);
    for (size_t i = 0; i < threads; ++i) workers.emplace_back(worker, i);
    auto finish = [&] {
      stop = true;
      sync.arrive_and_wait();
      for (std::thread& t : workers) t.join();
    };

    sync.arrive_and_wait();  // touched
    for (size_t i = 0; i < threads; ++i) {
      if (pin_errors[i] != 0) {
        finish();
        return absl::FailedPreconditionError(absl::StrCat("cannot pin a thread to CPU ", (*cpus)[i],
                                                          ": ", std::strerror(pin_errors[i])));
      }
    }
    if (touch_late) {
      finish();
      return absl::DeadlineExceededError(absl::StrCat("touching ", region >> 20,
                                                      " MiB took longer than 3/4 of the budget of ",
                                                      absl::FormatDuration(request.budget)));
    }
    const double bytes_per_pass = 3.0 * sizeof(double) * static_cast<double>(elements);
    int64_t estimate_ns = 0;  // the last pass's time
    while (true) {
      const int64_t now = NowNs(CLOCK_MONOTONIC);
      // The first pass always runs (touching left it a quarter of the budget).
      if ((result.passes > 0 && now + estimate_ns > deadline_ns) || now > deadline_ns ||
          result.clean_passes >= kMaxCleanPasses) {
        break;
      }
      sync.arrive_and_wait();  // start
      sync.arrive_and_wait();  // end
      int64_t first = pass[0].start_ns, last = pass[0].end_ns, cpu_ns = 0;
      for (const ThreadPass& p : pass) {
        first = std::min(first, p.start_ns);
        last = std::max(last, p.end_ns);
        cpu_ns += p.cpu_ns;
      }
      const int64_t span = std::max<int64_t>(1, last - first);
      const double share =
          static_cast<double>(cpu_ns) / (static_cast<double>(span) * static_cast<double>(threads));
      estimate_ns = span;
      const double rate = bytes_per_pass / (static_cast<double>(span) / 1e9);
      ++result.passes;
      if (rate > result.best_any_bytes_per_second) {
        result.best_any_bytes_per_second = rate;
        if (result.clean_passes == 0) result.cpu_share = share;
      }
      if (share >= kCleanCpuShare) {
        if (result.clean_passes == 0 || rate > result.bytes_per_second) {
          result.bytes_per_second = rate;
          result.cpu_share = share;
        }
        ++result.clean_passes;
      }
    }
    finish();
    // The kernel ran: every element is 1 + 3 * 2.
    for (size_t i = 0; i < threads && result.passes > 0; ++i) {
      const size_t lo = i * per_thread, hi = lo + per_thread - 1;
      if (a[lo] != 7.0 || a[hi] != 7.0) {
        return absl::InternalError("the triad kernel produced wrong values");
      }
    }
    result.elapsed = absl::Nanoseconds(NowNs(CLOCK_MONOTONIC) - begin_ns);
    if (result.passes == 0) {
      return absl::DeadlineExceededError(absl::StrCat("no pass fitted in the budget of ",
                                                      absl::FormatDuration(request.budget),
                                                      " after touching ", region >> 20, " MiB"));
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<BandwidthMeter> NewStreamTriadMeter() {
  return std::make_unique<StreamTriadMeter>();
}

}  // namespace neighborly::agent
