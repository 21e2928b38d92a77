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

// A free list of scratch objects, one per concurrent request.
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
  // A scratch whose buffers grew past this is freed instead of kept.
  static constexpr size_t kRetainBytes = 16 << 20;
  void Release(std::unique_ptr<ExtenderScratch> scratch);

  std::mutex mu_;
  std::vector<std::unique_ptr<ExtenderScratch>> free_;
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
