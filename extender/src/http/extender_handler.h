// The scheduler-facing request path without the transport: body in, decision
// from the Decider, JSON reply out. The HTTP server and the benchmarks call it.
//
//   ExtenderHandler handler(decider, &metrics);
//   ScratchPool::Lease scratch = handler.scratch().Acquire();
//   scratch->body.Assign(bytes); scratch->body.Seal();
//   int status = handler.Handle(Verb::kFilter, *scratch);   // reply in scratch->reply
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_HANDLER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_HANDLER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "extender/src/http/decider.h"
#include "extender/src/http/extender_codec.h"
#include "extender/src/http/extender_metrics.h"

namespace neighborly::extender {

// Everything one request needs, reused by the next request that leases it.
struct ExtenderScratch {
  ExtenderCodec codec;
  ExtenderArgs args;
  std::vector<NodeDecision> decisions;
  RequestBody body;
  std::string reply;
};

// A free list of scratch objects, one per concurrent request, that keeps a
// bounded amount of memory between requests. A scratch's footprint follows the
// largest body it decoded (its body, the parser's structural indexes and
// string buffer, the name vectors: about 5x the body for a body of names), so
// the pool keeps at most kMaxRetained of them, of which at most one decoded a
// body above kSmallBytes (and none above kRetainBytes): about 80 + 3 x 5 MB at
// worst. Others are freed when released, and the freed pages returned to the
// system. Before this bound, 12 connections of 12 MiB bodies at once left
// ~700 MB resident for good (docs/performance.md, "Memory bound").
class ScratchPool {
 public:
  class Lease {
   public:
    Lease(ScratchPool* pool, std::unique_ptr<ExtenderScratch> scratch)
        : pool_(pool), scratch_(std::move(scratch)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (scratch_) pool_->Release(std::move(scratch_));
    }
    ExtenderScratch* operator->() { return scratch_.get(); }
    ExtenderScratch& operator*() { return *scratch_; }

   private:
    ScratchPool* pool_;
    std::unique_ptr<ExtenderScratch> scratch_;
  };

  Lease Acquire();

 private:
  // Scratches kept between requests; kube-scheduler sends one request at a
  // time per profile, so a few cover legitimate concurrency.
  static constexpr size_t kMaxRetained = 4;
  // Bodies up to this (a NodeNames request of ~50,000 long names) are "small".
  static constexpr size_t kSmallBytes = 1 << 20;
  // A scratch whose buffers grew past this is never kept (full Nodes of more
  // than ~1,000 nodes: the allocation is small next to decoding them).
  static constexpr size_t kRetainBytes = 16 << 20;

  // Its body's or reply's allocation, whichever is larger.
  static size_t BufferBytes(const ExtenderScratch& scratch);
  void Release(std::unique_ptr<ExtenderScratch> scratch);

  std::mutex mu_;
  std::vector<std::unique_ptr<ExtenderScratch>> free_;
  size_t large_free_ = 0;  // scratches in free_ above kSmallBytes (at most 1)
};

class ExtenderHandler {
 public:
  // `metrics` may be null.
  // Requests naming more than `max_names` candidate nodes are refused (400)
  // before any is evaluated (http.maxNamesPerRequest).
  ExtenderHandler(Decider& decider, ExtenderMetrics* metrics, size_t max_names = 50'000)
      : decider_(decider), metrics_(metrics), max_names_(max_names) {}

  // Decodes scratch.body (sealed), decides, and writes the reply JSON into
  // scratch.reply. Returns the HTTP status: 200, or 400 with {"Error": ...}.
  int Handle(Verb verb, ExtenderScratch& scratch);

  ScratchPool& scratch() { return pool_; }

 private:
  Decider& decider_;
  ExtenderMetrics* metrics_;
  const size_t max_names_;
  ScratchPool pool_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_EXTENDER_HANDLER_H_
