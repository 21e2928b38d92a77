// Cluster state the scheduler's path reads without ever waiting for ingest.
//
// Each node has an Entry that lives as long as the state does; its current
// snapshot (profile + report) and its in-flight bookings are immutable objects
// published through std::atomic<std::shared_ptr<const T>>. The name -> Entry
// index is itself immutable and replaced (copy-on-write) only when a node
// appears for the first time, so a reader does one atomic load per request and
// one hash probe plus two atomic loads per node.
//
//   ClusterState state;
//   state.GetOrCreate("node-1").snapshot.store(std::make_shared<const NodeSnapshot>(...));
//   ClusterState::View view = state.view();          // per request
//   if (const ClusterState::Entry* e = view.Find("node-1")) auto snap = e->snapshot.load();
#ifndef NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_
#define NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

// One accepted report and what the model derived from it. Immutable.
struct NodeSnapshot {
  NodeProfile profile;
  telemetry::v1::NodeReport report;
};

using BookingList = std::vector<Booking>;

class ClusterState {
 public:
  struct Entry {
    explicit Entry(std::string node_name) : name(std::move(node_name)) {}
    const std::string name;
    std::atomic<std::shared_ptr<const NodeSnapshot>> snapshot;  // null until the first report
    std::atomic<std::shared_ptr<const BookingList>> bookings;   // null when none
    std::mutex ingest_mu;  // serialises writers of `snapshot` (two streams for one node)
  };
  using Index = absl::flat_hash_map<absl::string_view, Entry*>;  // keys point into Entry::name

  // A consistent set of entries, held for the duration of one request.
  class View {
   public:
    explicit View(std::shared_ptr<const Index> index) : index_(std::move(index)) {}
    Entry* Find(std::string_view name) const;
    const Index& entries() const { return *index_; }

   private:
    std::shared_ptr<const Index> index_;
  };

  explicit ClusterState(size_t max_nodes = 50'000);
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  View view() const { return View(index_.load(std::memory_order_acquire)); }

  // The entry for `name`, created (and the index republished) when new;
  // nullptr when max_nodes entries already exist.
  Entry* GetOrCreate(std::string_view name);

  size_t max_nodes() const { return max_nodes_; }

 private:
  const size_t max_nodes_;
  std::mutex create_mu_;
  std::deque<std::unique_ptr<Entry>> entries_;  // owned here; never removed
  std::atomic<std::shared_ptr<const Index>> index_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_STATE_CLUSTER_STATE_H_
