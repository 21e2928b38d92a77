// perf_event group reads (PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|
// TOTAL_TIME_RUNNING|ID) and the window arithmetic over two of them per CPU.
// Input: one byte of expected event count, then 64-bit words; the words are
// split in two halves, the start and end snapshots, each cut into per-CPU
// reads of the layout's length.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "node-agent/src/perf/perf_events.h"

namespace {

using neighborly::agent::CounterSnapshot;
using neighborly::agent::GroupRead;

CounterSnapshot Snapshot(const uint64_t* words, size_t count, size_t events) {
  CounterSnapshot snapshot;
  const size_t per_cpu = 3 + 2 * events;
  for (size_t at = 0; at < count; at += per_cpu) {
    const size_t n = std::min(per_cpu, count - at);
    absl::StatusOr<GroupRead> read = neighborly::agent::ParseGroupRead(words + at, n, events);
    if (read.ok()) {
      NEIGHBORLY_FUZZ_CHECK(read->values.size() == events, "wrong number of values");
      snapshot.per_cpu.push_back(*read);
    } else {
      snapshot.per_cpu.push_back(std::nullopt);
    }
  }
  return snapshot;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t events = data[0] % 8;
  std::vector<uint64_t> words((size - 1) / sizeof(uint64_t));
  if (!words.empty()) std::memcpy(words.data(), data + 1, words.size() * sizeof(uint64_t));
  // The whole buffer as one read, with the count the fuzzer chose.
  (void)neighborly::agent::ParseGroupRead(words.data(), words.size(), data[0]);
  const size_t half = words.size() / 2;
  CounterSnapshot start = Snapshot(words.data(), half, events);
  CounterSnapshot end = Snapshot(words.data() + half, half, events);
  neighborly::agent::PerfWindow window = neighborly::agent::ComputePerfWindow(start, end);
  // The kernel keeps running <= enabled; hostile words need not, so only sign
  // and finiteness are invariants here.
  NEIGHBORLY_FUZZ_CHECK(window.scale >= 0 && std::isfinite(window.scale), "scale negative or NaN");
  return 0;
}
