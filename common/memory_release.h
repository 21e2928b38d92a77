// Hands memory that the process has freed back to the system.
//
// The extender is linked with jemalloc (cmake/NeighborlyDependencies.cmake);
// tests, sanitizer builds and the agent use glibc malloc. glibc's malloc_trim
// does nothing for jemalloc's arenas, whose freed pages stay resident until
// that arena allocates again (jemalloc purges by decay only on allocator
// activity unless it runs background threads): after a burst of large
// requests each worker thread's arena kept 11-17 MB (issue 15). This asks
// whichever allocator the process runs on:
//
//   jemalloc: purge the unused dirty pages of every arena
//             (mallctl "arena.<MALLCTL_ARENAS_ALL>.purge") and flush the
//             calling thread's cache;
//   glibc:    malloc_trim(0), every arena's free pages.
//
//   scratch.reset();                 // a large request's buffers, freed
//   neighborly::ReleaseFreeMemory(); // and returned
//
// Called after rare, large frees (a large request, a header flood, a burst of
// closed streams), not per request: a purge walks every arena.
#ifndef NEIGHBORLY_COMMON_MEMORY_RELEASE_H_
#define NEIGHBORLY_COMMON_MEMORY_RELEASE_H_

#include <string_view>

namespace neighborly {

// Which allocator runs the process: "jemalloc" or "glibc" (for logs, tests
// and /metrics).
std::string_view AllocatorName();

// Returns freed memory to the system (see above). Thread-safe.
void ReleaseFreeMemory();

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_MEMORY_RELEASE_H_
