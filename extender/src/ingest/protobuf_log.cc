#include "extender/src/ingest/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <chrono>
#include <string>

#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

std::atomic<int64_t> interval_ns{10'000'000'000};
std::atomic<int64_t> last_written_ns{INT64_MIN};
std::atomic<uint64_t> seen{0};
std::atomic<uint64_t> suppressed{0};
std::atomic<uint64_t> suppressed_since_last{0};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Handler(google::protobuf::LogLevel level, const char* filename, int line,
             const std::string& message) {
  seen.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = NowNs();
  int64_t last = last_written_ns.load(std::memory_order_relaxed);
  const bool due = last == INT64_MIN || now - last >= interval_ns.load(std::memory_order_relaxed);
  if (!due || !last_written_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    suppressed.fetch_add(1, std::memory_order_relaxed);
    suppressed_since_last.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t skipped = suppressed_since_last.exchange(0, std::memory_order_relaxed);
  spdlog::warn("protobuf ({}:{}, level {}): {}{}", filename, line, static_cast<int>(level),
               message.substr(0, 500),
               skipped > 0 ? " (" + std::to_string(skipped) + " similar messages suppressed)"
                           : std::string());
}

}  // namespace

void InstallProtobufLogLimiter(absl::Duration interval) {
  interval_ns.store(absl::ToInt64Nanoseconds(interval), std::memory_order_relaxed);
  google::protobuf::SetLogHandler(&Handler);
}

ProtobufLogStats GetProtobufLogStats() {
  return {seen.load(std::memory_order_relaxed), suppressed.load(std::memory_order_relaxed)};
}

}  // namespace neighborly::extender
