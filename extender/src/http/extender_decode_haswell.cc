// The On-Demand extraction pass for AVX2 CPUs (simdjson's haswell kernel),
// chosen at run time by ExtenderCodec when the CPU has AVX2, BMI1/2, PCLMUL
// and LZCNT.
//
// This file is compiled with the project's ordinary flags; only what follows
// the target pragma below is compiled for AVX2. Every header with code shared
// with other translation units (the standard library, Abseil, our own) is
// included before the pragma, so no inline function that another file might
// also use is ever emitted here with AVX2 instructions (the linker keeps one
// copy of each, and it must run on every CPU). What the pragma covers lives in
// simdjson's haswell namespace or in decode_haswell. The test
// http_dispatch_object_test checks the object file for exactly this.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cfloat>
#include <cinttypes>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <ranges>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "extender/src/http/extender_decode.h"
#include "extender/src/model/pod_spec.h"

#pragma GCC push_options
#pragma GCC target("avx2,bmi,bmi2,pclmul,lzcnt,popcnt")
// The pragma does not define __AVX2__ and friends, so simdjson's own choice
// would be its portable kernel: name the haswell one.
#define SIMDJSON_BUILTIN_IMPLEMENTATION haswell
// simdjson forces inlining (always_inline) by default, which GCC refuses when
// a standard template compiled without the target (std::pair<raw_json_string,
// value>) calls into the AVX2 code; plain inline lets the compiler call such
// functions out of line instead (still inlining within the AVX2 code).
#define simdjson_inline inline
#include <simdjson.h>

#define NEIGHBORLY_DECODE_NS decode_haswell
#include "extender/src/http/extender_decode.inc"
#pragma GCC pop_options
