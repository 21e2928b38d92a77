// kube-scheduler extender wire format (docs/http.md): decoding ExtenderArgs
// with simdjson On-Demand and encoding ExtenderFilterResult / HostPriorityList
// by hand. One ExtenderCodec per thread at a time; reuse it, its parsers and
// buffers keep their capacity.
//
//   RequestBody body;  body.Assign(bytes);          // padded for simdjson
//   ExtenderArgs args;
//   absl::Status s = codec.Decode(body, args);      // INVALID_ARGUMENT names the problem
//   decider.Filter(args.pod, args.node_names, decisions);
//   EncodeFilterResult(args, decisions, reply);
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_CODEC_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_CODEC_H_

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "extender/src/model/types.h"

namespace neighborly::extender {

// The simdjson parsers read up to this many bytes past the end of the input.
inline constexpr size_t kJsonPadding = 64;

// A request body with the zeroed tail the parsers need. Reused across requests.
class RequestBody {
 public:
  void Clear() {
    data_.clear();
    size_ = 0;
  }
  void Reserve(size_t n) { data_.reserve(n); }
  size_t appended() const { return data_.size(); }
  void Append(const char* bytes, size_t n) { data_.append(bytes, n); }
  void Assign(std::string_view bytes) { data_.assign(bytes.data(), bytes.size()); }
  // Call once the body is complete, before decoding.
  void Seal() {
    size_ = data_.size();
    data_.append(kJsonPadding, '\0');
  }
  std::string_view view() const { return std::string_view(data_.data(), size_); }
  size_t capacity() const { return data_.size(); }
  // Bytes allocated for the body (kept across Clear()).
  size_t reserved_bytes() const { return data_.capacity(); }
  size_t size() const { return size_; }

 private:
  std::string data_;
  size_t size_ = 0;
};

// ExtenderArgs decoded. Views point into the RequestBody and the codec's
// parser; both must outlive the use of the views (one request).
struct ExtenderArgs {
  IncomingPod pod;
  bool has_nodes = false;       // "Nodes" was a NodeList (nodeCacheCapable: false)
  bool has_node_names = false;  // "NodeNames" was an array (nodeCacheCapable: true)
  // Candidate names in input order: NodeNames, or each Nodes item's metadata.name.
  std::vector<std::string_view> node_names;
  // Nodes mode: each item exactly as received (same order as node_names).
  std::vector<std::string_view> raw_nodes;

  void Clear();
};

// The instruction set the On-Demand extraction pass is compiled for. kAvx2
// needs AVX2, BMI1/2, PCLMUL and LZCNT (x86-64-v3, Haswell and later); a binary
// built on x86-64 carries both and picks at run time, so it also runs (3-4x
// slower in that pass) on CPUs without AVX2.
enum class DecodeKernel { kAuto, kPortable, kAvx2 };
std::string_view DecodeKernelName(DecodeKernel kernel);  // "avx2" | "portable"
// kAvx2 where this CPU can run it, else kPortable.
DecodeKernel BestDecodeKernel();

class ExtenderCodec {
 public:
  // Documents nested deeper than this are refused (Kubernetes objects use < 20).
  static constexpr size_t kMaxDepth = 128;

  // kAuto (and kAvx2 on a CPU without AVX2) use BestDecodeKernel().
  explicit ExtenderCodec(DecodeKernel kernel = DecodeKernel::kAuto);
  ~ExtenderCodec();
  ExtenderCodec(const ExtenderCodec&) = delete;
  ExtenderCodec& operator=(const ExtenderCodec&) = delete;

  // Validates the whole body (syntax, UTF-8, depth, one value) and decodes the
  // ExtenderArgs in it. Keys match case-insensitively, as Go's decoder does;
  // unknown keys are ignored. Errors are INVALID_ARGUMENT with a message that
  // names the problem (and the JSON path for wrong types).
  absl::Status Decode(const RequestBody& body, ExtenderArgs& out);

  // The kernel in use.
  DecodeKernel kernel() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// {"Nodes":..,"NodeNames":..,"FailedNodes":{..},"FailedAndUnresolvableNodes":{},"Error":""}
// In Nodes mode the passing items are copied byte for byte; in NodeNames mode the
// passing names are listed. `decisions` is parallel to args.node_names.
void EncodeFilterResult(const ExtenderArgs& args, std::span<const NodeDecision> decisions,
                        std::string& out);

// [{"Host":"n","Score":7},...] for every node, in input order; scores clamped to 0..10.
void EncodePrioritizeResult(std::span<const std::string_view> names,
                            std::span<const NodeDecision> decisions, std::string& out);

// {"Error":"..."}
void EncodeError(std::string_view message, std::string& out);

// The general ExtenderFilterResult writer behind EncodeFilterResult (also used by
// the conformance tests). A null pointer is written as JSON null.
struct FilterResultView {
  const std::vector<std::string_view>* raw_nodes = nullptr;   // "Nodes" items
  const std::vector<std::string_view>* node_names = nullptr;  // "NodeNames"
  std::span<const std::pair<std::string_view, std::string_view>> failed;
  std::span<const std::pair<std::string_view, std::string_view>> failed_unresolvable;
  std::string_view error;
};
void EncodeFilterResultView(const FilterResultView& view, std::string& out);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_CODEC_H_
