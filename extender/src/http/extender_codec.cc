// Decoding half of the extender codec: pass 1 (validation of the whole body
// with simdjson's DOM parser, which dispatches to the CPU's best kernel by
// itself) and the choice of the pass-2 extraction kernel.
//
// Two passes over the body: simdjson's DOM parser validates all of it (syntax
// inside values we never look at, UTF-8, nesting depth, a single value), which
// On-Demand alone does not do for skipped values; then On-Demand walks only the
// parts the model needs and records where each Node item starts and ends
// (extender_decode.inc, compiled for AVX2 and for any CPU; see
// extender_decode.h).
#include "extender/src/http/extender_codec.h"

#include <simdjson.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "extender/src/http/extender_decode.h"

namespace neighborly::extender {
namespace {

// Where the first JSON value in `s` ends (one past it), or npos if it never
// closes. Only used to explain a syntax error, never on the success path.
size_t FirstValueEnd(std::string_view s) {
  size_t i = s.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos) return std::string_view::npos;
  if (s[i] != '{' && s[i] != '[') return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

absl::Status SyntaxError(std::string_view body, simdjson::error_code e) {
  switch (e) {
    case simdjson::EMPTY:
      return absl::InvalidArgumentError(
          "empty request body: expected a JSON object (ExtenderArgs)");
    case simdjson::UTF8_ERROR:
      return absl::InvalidArgumentError("request body is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return absl::InvalidArgumentError(
          absl::StrCat("JSON nested deeper than ", ExtenderCodec::kMaxDepth, " levels"));
    case simdjson::CAPACITY:
      return absl::InvalidArgumentError("request body too large for the JSON parser");
    default:
      break;
  }
  const size_t end = FirstValueEnd(body);
  if (end == std::string_view::npos) {
    if (e == simdjson::TAPE_ERROR || e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ||
        e == simdjson::UNCLOSED_STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed JSON (truncated or unbalanced): ", simdjson::error_message(e)));
    }
  } else if (Trim(body.substr(end)).size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trailing data after the JSON value at byte ", end));
  }
  return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", simdjson::error_message(e)));
}

std::string_view DomTypeName(simdjson::dom::element_type t) {
  switch (t) {
    case simdjson::dom::element_type::OBJECT:
      return "object";
    case simdjson::dom::element_type::ARRAY:
      return "array";
    case simdjson::dom::element_type::STRING:
      return "string";
    case simdjson::dom::element_type::BOOL:
      return "boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
    default:
      return "number";
  }
}

// The candidate names of a NodeNames request, read from the validation DOM:
// string_views into the DOM's string buffer, which the codec keeps until the
// next Decode. Duplicate keys: the last NodeNames wins, as in the extraction
// pass (which checked that it is an array).
absl::Status NodeNamesFromDom(simdjson::dom::element root, ExtenderArgs& out) {
  simdjson::dom::array names;
  for (const simdjson::dom::key_value_pair field : simdjson::dom::object(root)) {
    if (EqualsIgnoreCase(field.key, "NodeNames") && field.value.is_array()) {
      names = simdjson::dom::array(field.value);
    }
  }
  out.node_names.clear();
  out.node_names.reserve(names.size());
  for (const simdjson::dom::element name : names) {
    std::string_view text;
    if (name.get_string().get(text) != simdjson::SUCCESS) {
      return absl::InvalidArgumentError(
          absl::StrCat("wrong type at NodeNames[", out.node_names.size(),
                       "]: expected string, got ", Av(DomTypeName(name.type()))));
    }
    out.node_names.push_back(text);
  }
  return absl::OkStatus();
}

}  // namespace

namespace internal {

std::string_view SimdjsonErrorText(int error_code) {
  return simdjson::error_message(static_cast<simdjson::error_code>(error_code));
}

bool CpuHasAvx2Kernel() {
#if defined(NEIGHBORLY_DECODE_HASWELL) && (defined(__x86_64__) || defined(__i386__))
  // libgcc also checks that the OS saves the AVX state (XGETBV) before
  // reporting avx2.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("lzcnt");
#else
  return false;
#endif
}

}  // namespace internal

void ExtenderArgs::Clear() {
  pod = IncomingPod();
  has_nodes = false;
  has_node_names = false;
  node_names.clear();
  raw_nodes.clear();
}

std::string_view DecodeKernelName(DecodeKernel kernel) {
  return kernel == DecodeKernel::kAvx2 ? "avx2" : "portable";
}

DecodeKernel BestDecodeKernel() {
  return internal::CpuHasAvx2Kernel() ? DecodeKernel::kAvx2 : DecodeKernel::kPortable;
}

struct ExtenderCodec::Impl {
  simdjson::dom::parser validator;
  std::unique_ptr<internal::ArgsDecoder> decoder;
  DecodeKernel kernel = DecodeKernel::kPortable;
};

ExtenderCodec::ExtenderCodec(DecodeKernel kernel) : impl_(std::make_unique<Impl>()) {
  if (kernel == DecodeKernel::kAuto || !internal::CpuHasAvx2Kernel()) kernel = BestDecodeKernel();
#if defined(NEIGHBORLY_DECODE_HASWELL)
  if (kernel == DecodeKernel::kAvx2) {
    impl_->decoder = decode_haswell::MakeArgsDecoder();
    impl_->kernel = DecodeKernel::kAvx2;
    return;
  }
#endif
  impl_->decoder = decode_generic::MakeArgsDecoder();
  impl_->kernel = DecodeKernel::kPortable;
}

ExtenderCodec::~ExtenderCodec() = default;

DecodeKernel ExtenderCodec::kernel() const { return impl_->kernel; }

absl::Status ExtenderCodec::Decode(const RequestBody& body, ExtenderArgs& out) {
  out.Clear();
  const std::string_view text = body.view();
  if (Trim(text).empty()) {
    return absl::InvalidArgumentError("empty request body: expected a JSON object (ExtenderArgs)");
  }
  if (body.capacity() < text.size() + kJsonPadding) {
    return absl::InternalError("request body is not padded for the JSON parser");
  }

  // Pass 1: full validation.
  if (impl_->validator.capacity() < text.size() || impl_->validator.max_depth() != kMaxDepth) {
    if (auto e = impl_->validator.allocate(std::max<size_t>(text.size(), 4096), kMaxDepth)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate the JSON parser: ", simdjson::error_message(e)));
    }
  }
  simdjson::dom::element root;
  if (auto e = impl_->validator.parse(text.data(), text.size(), false).get(root)) {
    return SyntaxError(text, e);
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        "request body must be a JSON object (ExtenderArgs with Pod and Nodes or NodeNames)");
  }

  // Pass 2: extraction.
  bool node_names_deferred = false;
  if (absl::Status s = impl_->decoder->Decode(text, body.capacity(), out, node_names_deferred);
      !s.ok()) {
    return s;
  }
  if (node_names_deferred && !out.has_nodes) return NodeNamesFromDom(root, out);
  return absl::OkStatus();
}

}  // namespace neighborly::extender
