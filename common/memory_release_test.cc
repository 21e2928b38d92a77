// ReleaseFreeMemory against the allocator this binary is linked with: built
// twice (memory_release_test on glibc malloc; memory_release_jemalloc_test on
// jemalloc, as the extender is), each asserting which allocator it found.
#include "common/memory_release.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace neighborly {
namespace {

// Sanitizers bring an allocator of their own that keeps freed blocks in
// quarantine; neither malloc answers there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * sysconf(_SC_PAGESIZE);
}

TEST(MemoryReleaseTest, NamesTheAllocatorItIsLinkedWith) {
  if (kSanitizerAllocator) GTEST_SKIP() << "a sanitizer's allocator";
  EXPECT_EQ(AllocatorName(), NEIGHBORLY_EXPECTED_ALLOCATOR);
}

// What a burst of large requests leaves on a worker thread: many blocks
// allocated and freed by a thread that lives on (as the HTTP workers do; at
// a thread's exit both allocators give its free memory back by themselves),
// touched so that they are resident. Freeing alone returns none of it here
// (both allocators keep it for reuse); ReleaseFreeMemory, called from another
// thread, must return most of it.
TEST(MemoryReleaseTest, ReturnsWhatALiveThreadFreed) {
  if (kSanitizerAllocator) GTEST_SKIP() << "a sanitizer's allocator";
  constexpr size_t kBlocks = 36'000;
  constexpr size_t kBlockBytes = 4096;  // ~150 MB in all
  const int64_t before = ResidentBytes();
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;  // 1: freed, 2: measured
  std::thread worker([&] {
    std::vector<std::unique_ptr<char[]>> blocks;
    blocks.reserve(kBlocks);
    for (size_t i = 0; i < kBlocks; ++i) {
      blocks.emplace_back(new char[kBlockBytes]);
      for (size_t j = 0; j < kBlockBytes; j += 64) blocks.back()[j] = static_cast<char>(i);
    }
    // A block allocated last stays, so that the heap cannot shrink from its
    // top, as under a server's other allocations.
    auto pin = std::make_unique<char[]>(64);
    for (size_t i = 0; i < kBlocks; i += 2) blocks[i].reset();
    for (size_t i = 1; i < kBlocks; i += 2) blocks[i].reset();
    std::unique_lock<std::mutex> lock(mu);
    phase = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 2; });
  });
  int64_t freed = 0;
  int64_t released = 0;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return phase == 1; });
    freed = ResidentBytes();
    ReleaseFreeMemory();
    released = ResidentBytes();
    phase = 2;
    cv.notify_all();
  }
  worker.join();
  const int64_t allocated = static_cast<int64_t>(kBlocks * kBlockBytes);
  // The blocks were still resident once freed (else the test proves nothing) ...
  ASSERT_GT(freed - before, allocated / 2)
      << "the allocator returned the blocks on free alone; nothing left to test";
  // ... and most of them are returned now.
  EXPECT_LT(released - before, allocated / 4)
      << "before " << (before >> 20) << " MiB, after free " << (freed >> 20)
      << " MiB, after ReleaseFreeMemory " << (released >> 20) << " MiB";
}

}  // namespace
}  // namespace neighborly
