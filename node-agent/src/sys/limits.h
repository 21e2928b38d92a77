// Process limits the agent needs raised: perf_event_open takes one file
// descriptor per event, per online CPU, per pod (3 x 256 x 110 is 84,480), far
// above the usual soft RLIMIT_NOFILE of 1024.
//
//   absl::StatusOr<uint64_t> limit = RaiseOpenFileLimit(1 << 20);
//   // not ok: the limit could not reach `wanted`; the soft limit was still
//   // raised as far as the hard limit allows, and the message says to what.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SYS_LIMITS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SYS_LIMITS_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace neighborly::agent {

// Raises RLIMIT_NOFILE to `wanted` (soft and, when needed, hard: that takes
// CAP_SYS_RESOURCE and stays under /proc/sys/fs/nr_open). Returns the soft
// limit now in force.
absl::StatusOr<uint64_t> RaiseOpenFileLimit(uint64_t wanted);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SYS_LIMITS_H_
