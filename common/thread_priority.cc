#include "common/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace neighborly {
namespace {

pid_t ThisThreadId() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

}  // namespace

int ThisThreadNice() {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(ThisThreadId()));
  return errno == 0 ? nice : -100;
}

int LowerThisThreadPriority(int increment, bool idle_policy) {
  thread_local int applied = -2;  // -2: not tried on this thread yet
  if (applied != -2) return applied;
  const int current = ThisThreadNice();
  if (current < -20) return applied = -1;
  const int nice = std::clamp(current + std::max(0, increment), -20, 19);
  // PRIO_PROCESS with a thread id changes that thread only (Linux).
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(ThisThreadId()), nice) != 0) {
    applied = -1;
  } else {
    applied = ThisThreadNice();
  }
  if (idle_policy) {
    // sched_setscheduler(0, ...) is per thread on Linux, too; a refusal
    // leaves the thread at its (already lowered) nice value.
    const sched_param param{};
    ::sched_setscheduler(0, SCHED_IDLE, &param);
  }
  return applied;
}

bool ThisThreadIsIdlePolicy() { return ::sched_getscheduler(0) == SCHED_IDLE; }

}  // namespace neighborly
