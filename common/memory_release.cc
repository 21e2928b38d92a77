#include "common/memory_release.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstddef>

namespace neighborly {
namespace {

// jemalloc's control entry point, found at run time so that the same code
// serves a process on glibc malloc (where the symbol is absent).
using MallctlFn = int (*)(const char*, void*, size_t*, void*, size_t);

// Looked up on each call (a hash lookup, microseconds) rather than cached:
// callers are rare, and the answer belongs to the process, not to a caller.
MallctlFn Mallctl() { return reinterpret_cast<MallctlFn>(dlsym(RTLD_DEFAULT, "mallctl")); }

}  // namespace

std::string_view AllocatorName() { return Mallctl() != nullptr ? "jemalloc" : "glibc"; }

void ReleaseFreeMemory() {
  if (MallctlFn mallctl = Mallctl(); mallctl != nullptr) {
    // The calling thread's cache first, so that its cached blocks are free in
    // their arenas when those are purged. 4096 is MALLCTL_ARENAS_ALL.
    mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  ::malloc_trim(0);
}

}  // namespace neighborly
