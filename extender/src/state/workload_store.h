// Workload profiles by workload key ("namespace/Kind/name"): what running
// replicas measured (model/workload_profile.h), bounded by an LRU over
// workloads, shared by the ingest path (which adds measurements) and the
// scheduler's request path (which reads one prediction per request).
//
//   WorkloadStore store(10'000);
//   store.Observe("shop/Deployment/scan", observation, NodeNameHash("node-1"), now, config);
//   std::optional<WorkloadPrediction> p = store.Predict("shop/Deployment/scan", now, config);
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_WORKLOAD_STORE_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_WORKLOAD_STORE_H_

#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/workload_profile.h"

namespace neighborly::extender {

// One workload as the operator API shows it.
struct WorkloadView {
  std::string key;  // "namespace/Kind/name"
  WorkloadPrediction prediction;
  std::array<std::optional<WorkloadMetricSummary>, kWorkloadMetrics> metrics;
  absl::Time last_update;
  absl::Time aggressor_since;  // InfinitePast when not an aggressor
};

class WorkloadStore {
 public:
  explicit WorkloadStore(size_t capacity = 10'000);

  // Adds one replica-window of the workload `key`, reported by `node_hash`'s node.
  void Observe(std::string_view key, const WorkloadObservation& observation, uint64_t node_hash,
               absl::Time now, const ModelConfig& config);
  // The prediction for `key`'s next replica; nullopt when nothing was measured.
  // Counts as a use (metric) when found.
  std::optional<WorkloadPrediction> Predict(std::string_view key, absl::Time now,
                                            const ModelConfig& config, bool count_use = true) const;
  // The aggressor verdict alone (ingest asks it for every resident pod).
  struct Verdict {
    bool aggressor = false;
    std::string why;
  };
  std::optional<Verdict> VerdictOf(std::string_view key) const;
  // Issue 26: makes `key`'s profile an aggressor (WorkloadProfile::MarkAntagonist);
  // false when the store holds no profile for it.
  bool MarkAntagonist(std::string_view key, std::string why, absl::Time now);

  std::vector<WorkloadView> List(absl::Time now, const ModelConfig& config) const;
  std::optional<WorkloadView> Get(std::string_view key, absl::Time now,
                                  const ModelConfig& config) const;
  size_t size() const;
  size_t capacity() const { return capacity_; }
  // Predictions served from a profile (for the "used" metric).
  uint64_t predictions_used() const { return used_.load(std::memory_order_relaxed); }

  // The whole store as a JSON array (the state file's "workloads" section), and back.
  std::string ToJson() const;
  // Replaces the contents; a malformed section is refused naming the problem
  // and leaves the store unchanged.
  absl::Status FromJson(std::string_view json);

 private:
  struct Entry {
    std::string key;
    WorkloadProfile profile;
  };
  struct Shard {
    mutable std::mutex mu;
    mutable std::list<Entry> lru;  // front: most recently used
    absl::flat_hash_map<std::string, std::list<Entry>::iterator> by_key;
  };
  static constexpr size_t kMaxShards = 16;

  Shard& ShardOf(std::string_view key) const;
  WorkloadView ViewOf(const Entry& e, absl::Time now, const ModelConfig& config) const;

  const size_t capacity_;
  const size_t shard_count_;
  const size_t shard_capacity_;
  mutable std::array<Shard, kMaxShards> shards_;
  mutable std::atomic<uint64_t> used_{0};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_WORKLOAD_STORE_H_
