// Helpers shared by the fuzz targets: the input as text, and a check that
// turns a broken invariant into a crash the fuzzer records (with the message).
//
//   std::string_view text = neighborly::fuzz::AsText(data, size);
//   NEIGHBORLY_FUZZ_CHECK(reparsed == *cpus, "FormatCpuList does not round-trip");
#ifndef NEIGHBORLY_FUZZ_FUZZ_INPUT_H_
#define NEIGHBORLY_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace neighborly::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* message) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, message);
  std::abort();
}

}  // namespace neighborly::fuzz

#define NEIGHBORLY_FUZZ_CHECK(condition, message)                                   \
  do {                                                                              \
    if (!(condition)) ::neighborly::fuzz::CheckFailed(__FILE__, __LINE__, message); \
  } while (false)

#endif  // NEIGHBORLY_FUZZ_FUZZ_INPUT_H_
