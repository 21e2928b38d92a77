// Internal to the codec: the instruction-set variants of the On-Demand
// extraction pass. simdjson's On-Demand API compiles to the instruction set of
// the translation unit that includes it, so extender_decode.inc is compiled
// twice, for AVX2 (extender_decode_haswell.cc) and for any x86-64 or other CPU
// (extender_decode_generic.cc), each in its own namespace; ExtenderCodec picks
// one per process from what the CPU supports.
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_DECODE_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_DECODE_H_

#include <cstddef>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "extender/src/http/extender_codec.h"

namespace neighborly::extender::internal {

// Extracts ExtenderArgs from an already validated body (`text` followed by
// padding up to `padded_capacity` bytes).
class ArgsDecoder {
 public:
  virtual ~ArgsDecoder() = default;
  // Leaves a NodeNames array's elements to the caller, which has them in its
  // validation DOM already (a second copy of thousands of strings is a tenth
  // of a request): sets `out.has_node_names` and `node_names_deferred`.
  virtual absl::Status Decode(std::string_view text, size_t padded_capacity, ExtenderArgs& out,
                              bool& node_names_deferred) = 0;
};

// simdjson::error_message for an error code, compiled without AVX2.
std::string_view SimdjsonErrorText(int error_code);

// Whether this CPU (and OS) can run the AVX2 variant.
bool CpuHasAvx2Kernel();

}  // namespace neighborly::extender::internal

namespace neighborly::extender::decode_haswell {
// Only on x86-64 (NEIGHBORLY_DECODE_HASWELL); call only when CpuHasAvx2Kernel().
std::unique_ptr<internal::ArgsDecoder> MakeArgsDecoder();
}  // namespace neighborly::extender::decode_haswell

namespace neighborly::extender::decode_generic {
std::unique_ptr<internal::ArgsDecoder> MakeArgsDecoder();
}  // namespace neighborly::extender::decode_generic

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_DECODE_H_
