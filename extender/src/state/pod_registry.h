// What the extender has learned about pods, by UID: class, where it came from,
// footprint hints, last seen. Bounded: past `capacity` the least recently seen
// pod is forgotten (per shard of the UID space, for large capacities). Survives restarts through
// Save/Load (atomic file replace).
//
//   PodRegistry registry(100'000);
//   registry.Remember(uid, {ContentionClass::kBatch, ClassSource::kLabelRule, {}}, now);
//   std::optional<RememberedPod> known = registry.Lookup(uid);
//   absl::Status s = registry.Save("/var/lib/neighborly/pods.json");
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_

#include <array>
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
  explicit PodRegistry(size_t capacity = 200'000);

  // Records (or refreshes) what is known about `uid`.
  void Remember(std::string_view uid, const RememberedPod& pod, absl::Time now);
  std::optional<RememberedPod> Lookup(std::string_view uid) const;
  // Lookups of several UIDs under one lock; out[i] answers uids[i].
  void LookupMany(const std::vector<std::string_view>& uids,
                  std::vector<std::optional<RememberedPod>>& out) const;
  size_t size() const;
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
  };
  // UIDs are spread over shards, each with its own lock and LRU order, so that
  // a scheduler request remembering a pod rarely meets an ingest thread
  // looking up a report's pods (which may be preempted while holding a lock:
  // ingest runs at a lower priority). Small registries use one shard, so that
  // their LRU order is exact.
  struct Shard {
    mutable std::shared_mutex mu;
    std::list<Entry> lru;  // front: most recently seen
    absl::flat_hash_map<std::string, std::list<Entry>::iterator> by_uid;
  };
  static constexpr size_t kMaxShards = 64;
  static constexpr size_t kMinPerShard = 1024;

  Shard& ShardOf(std::string_view uid) const;
  void InsertLocked(Shard& shard, Entry entry);

  const size_t capacity_;
  const size_t shard_count_;
  const size_t shard_capacity_;
  mutable std::array<Shard, kMaxShards> shards_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_POD_REGISTRY_H_
