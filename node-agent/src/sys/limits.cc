#include "node-agent/src/sys/limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace neighborly::agent {

absl::StatusOr<uint64_t> RaiseOpenFileLimit(uint64_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  if (limit.rlim_cur >= wanted) return static_cast<uint64_t>(limit.rlim_cur);
  if (limit.rlim_max < wanted) {
    rlimit both{static_cast<rlim_t>(wanted), static_cast<rlim_t>(wanted)};
    if (setrlimit(RLIMIT_NOFILE, &both) == 0) return wanted;
    const int err = errno;
    // Without CAP_SYS_RESOURCE (or above nr_open): take what the hard limit allows.
    rlimit soft{limit.rlim_max, limit.rlim_max};
    const bool raised = setrlimit(RLIMIT_NOFILE, &soft) == 0;
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot raise RLIMIT_NOFILE to ", wanted, " (", std::strerror(err),
                     "); the soft limit is ", raised ? limit.rlim_max : limit.rlim_cur,
                     ", so perf counters stop at that many descriptors"));
  }
  rlimit soft{static_cast<rlim_t>(wanted), limit.rlim_max};
  if (setrlimit(RLIMIT_NOFILE, &soft) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot raise the soft RLIMIT_NOFILE to ",
                                                     wanted, ": ", std::strerror(errno)));
  }
  return wanted;
}

}  // namespace neighborly::agent
