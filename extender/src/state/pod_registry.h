// What the extender has learned about pods, by UID: class, where it came from,
// footprint hints, last seen, and who taught it (its owner: the node whose
// report named the pod, or the scheduler). Survives restarts through
// Save/Load (atomic file replace), owners included.
//
// Memory is partitioned by owner (docs/security.md, scoped learning): a node
// holds at most `max_per_owner` entries (a node adding more forgets its own
// least recently seen; the scheduler, which is authenticated, has no quota), and when the registry
// is full the entry forgotten is the inserting owner's own oldest if it holds its fair share
// (capacity / owners) or more, else the oldest of the owner that holds the
// most. So no owner can push another below its fair share. Capacity, fair
// share and quota are per shard of the UID space for large registries.
//
//   PodRegistry registry(100'000);
//   registry.Remember(uid, {ContentionClass::kBatch, ClassSource::kLabelRule, {}}, now);
//   registry.Remember("worker-3", uid, pod, now);          // taught by worker-3's report
//   std::optional<RememberedPod> known = registry.Lookup(uid);
//   absl::Status s = registry.Save("/var/lib/neighborly/pods.json");
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "extender/src/model/classify.h"

namespace neighborly::extender {

class PodRegistry {
 public:
  // The owner of what the scheduler's requests taught.
  static constexpr std::string_view kScheduler = "";

  explicit PodRegistry(size_t capacity = 200'000, size_t max_per_owner = SIZE_MAX);

  // Records (or refreshes) what is known about `uid`, taught by the scheduler.
  void Remember(std::string_view uid, const RememberedPod& pod, absl::Time now);
  // The same, taught by `owner` (a node name, or kScheduler). The entry moves
  // to `owner`'s partition: callers decide who may teach (ExtenderCore).
  void Remember(std::string_view owner, std::string_view uid, const RememberedPod& pod,
                absl::Time now);
  std::optional<RememberedPod> Lookup(std::string_view uid) const;
  // Also says who taught it (kScheduler or a node name; stable storage).
  std::optional<RememberedPod> Lookup(std::string_view uid, std::string_view* owner) const;
  // Lookups of several UIDs under one lock; out[i] answers uids[i]; with
  // `owners`, (*owners)[i] is the owner of out[i] (empty when unknown).
  void LookupMany(const std::vector<std::string_view>& uids,
                  std::vector<std::optional<RememberedPod>>& out,
                  std::vector<std::string_view>* owners = nullptr) const;
  size_t size() const;
  // Entries taught by `owner`.
  size_t size_of(std::string_view owner) const;
  size_t capacity() const { return capacity_; }

  // Other parts of the learned state saved in the same file: top-level key ->
  // its JSON text (e.g. "workloads" -> the workload profiles).
  using StateSections = std::map<std::string, std::string>;

  // Writes every entry, and `sections`, to `path` atomically (temporary file,
  // fsync, rename, fsync of the directory): a crash leaves the old file or the new one.
  absl::Status Save(const std::string& path, const StateSections& sections = {}) const;
  // Replaces the contents with those of `path`. A missing file is not an
  // error (nothing learned yet). A corrupt file is refused with DATA_LOSS
  // naming the file and the problem, and leaves the registry unchanged.
  // Temporaries left beside `path` by a writer killed mid-save are removed.
  // `sections`, when given, receives the file's other top-level keys.
  absl::Status Load(const std::string& path, StateSections* sections = nullptr);

 private:
  struct Entry {
    std::string uid;
    RememberedPod pod;
    absl::Time last_seen;
    uint32_t owner = 0;  // index into owner_names_; 0: the scheduler
  };
  // UIDs are spread over shards, each with its own lock and LRU order, so that
  // a scheduler request remembering a pod rarely meets an ingest thread
  // looking up a report's pods (which may be preempted while holding a lock:
  // ingest runs at a lower priority). Small registries use one shard, so that
  // their LRU order is exact.
  using Lru = std::list<Entry>;  // front: most recently seen
  struct Shard {
    mutable std::shared_mutex mu;
    absl::flat_hash_map<uint32_t, Lru> by_owner;
    absl::flat_hash_map<std::string, Lru::iterator> by_uid;
    size_t size = 0;
  };
  static constexpr size_t kMaxShards = 64;
  static constexpr size_t kMinPerShard = 1024;

  Shard& ShardOf(std::string_view uid) const;
  void InsertLocked(Shard& shard, Entry entry);
  void EvictOldestLocked(Shard& shard, uint32_t owner);
  uint32_t OwnerId(std::string_view owner);
  std::string_view OwnerName(uint32_t id) const;

  const size_t capacity_;
  const size_t shard_count_;
  const size_t shard_capacity_;
  const size_t shard_owner_quota_;
  mutable std::array<Shard, kMaxShards> shards_;
  // Owner names by id (a deque: references stay valid as it grows).
  mutable std::mutex owners_mu_;
  std::deque<std::string> owner_names_{std::string(kScheduler)};
  absl::flat_hash_map<std::string, uint32_t> owner_ids_{{std::string(kScheduler), 0}};
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_
