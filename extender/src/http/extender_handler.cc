#include "extender/src/http/extender_handler.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/memory_release.h"
#include "common/strings.h"

namespace neighborly::extender {

size_t ScratchPool::BufferBytes(const ExtenderScratch& scratch) {
  return std::max(scratch.body.reserved_bytes(), scratch.reply.capacity());
}

ScratchPool::Lease ScratchPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<ExtenderScratch> scratch = std::move(free_.back());
      free_.pop_back();
      if (BufferBytes(*scratch) > kSmallBytes) --large_free_;
      return Lease(this, std::move(scratch));
    }
  }
  return Lease(this, std::make_unique<ExtenderScratch>());
}

void ScratchPool::Release(std::unique_ptr<ExtenderScratch> scratch) {
  const size_t bytes = BufferBytes(*scratch);
  const bool large = bytes > kSmallBytes;
  if (bytes <= kRetainBytes) {
    scratch->args.Clear();
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxRetained && (!large || large_free_ == 0)) {
      free_.push_back(std::move(scratch));
      if (large) ++large_free_;
      return;
    }
  }
  // Not kept: free its buffers and parsers, and for a large one hand the freed
  // pages back to the system (glibc keeps them in its heaps otherwise: a
  // 54 MiB request left +600 MB of RSS behind, issue 15).
  scratch.reset();
  if (large) ReleaseFreeMemory();
}

int ExtenderHandler::Handle(Verb verb, ExtenderScratch& scratch) {
  scratch.reply.clear();
  // ~13 bytes per name: 16 KiB of body is about 1,000 candidate names (or a
  // few full Node objects), where the Decider starts sharing the work.
  constexpr size_t kLargeBodyBytes = 16 << 10;
  if (scratch.body.view().size() >= kLargeBodyBytes) decider_.ExpectLargeRequest();
  ExtenderArgs& args = scratch.args;
  if (absl::Status s = scratch.codec.Decode(scratch.body, args); !s.ok()) {
    EncodeError(Sv(s.message()), scratch.reply);
    return 400;
  }
  if (args.has_nodes && args.has_node_names) {
    EncodeError(
        "both Nodes and NodeNames are set; kube-scheduler sends exactly one "
        "(NodeNames when nodeCacheCapable is true, Nodes otherwise)",
        scratch.reply);
    return 400;
  }
  if (!args.has_nodes && !args.has_node_names) {
    EncodeError("neither Nodes nor NodeNames is set: no candidate nodes", scratch.reply);
    return 400;
  }
  if (args.node_names.size() > max_names_) {
    EncodeError(absl::StrCat(args.node_names.size(), " candidate nodes, at most ", max_names_,
                             " (http.maxNamesPerRequest)"),
                scratch.reply);
    return 400;
  }
  if (verb == Verb::kFilter) {
    decider_.Filter(args.pod, args.node_names, scratch.decisions);
    scratch.decisions.resize(args.node_names.size());
    EncodeFilterResult(args, scratch.decisions, scratch.reply);
  } else {
    decider_.Prioritize(args.pod, args.node_names, scratch.decisions);
    scratch.decisions.resize(args.node_names.size());
    EncodePrioritizeResult(args.node_names, scratch.decisions, scratch.reply);
  }
  if (metrics_ != nullptr) metrics_->RecordDecisions(verb, scratch.decisions);
  return 200;
}

}  // namespace neighborly::extender
