// The decision core: cluster state + learned pod knowledge + bookings + the
// contention model, behind the Decider seam the HTTP layer calls, plus the
// read-only views the operator API serves.
//
//   ExtenderCore core(model_config, clock);
//   core.Ingest(report);                       // from the gRPC ingest path
//   core.Filter(pod, names, decisions);        // from /filter
//   std::vector<NodeSummary> nodes = core.Nodes();   // for /v1/nodes
#ifndef NEIGHBORLY_EXTENDER_SRC_CORE_EXTENDER_CORE_H_
#define NEIGHBORLY_EXTENDER_SRC_CORE_EXTENDER_CORE_H_

#include <cstdint>
#include <functional>
#include <set>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "extender/src/core/report_validation.h"
#include "extender/src/http/decider.h"
#include "extender/src/model/model_config.h"
#include "extender/src/model/types.h"
#include "extender/src/state/workload_store.h"
#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender {

class DecisionReuse;  // core/decision_reuse.h

// Operator view of one pod on a node.
struct PodSummary {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string qos_class;         // "Guaranteed", ...
  std::string contention_class;  // "latency-critical" | "batch" | "standard"
  std::string class_source;  // "annotation" | "label-rule" | "measured" | "remembered" | "default"
  bool aggressor = false;
  std::string exclusive_cpus;
  std::optional<int64_t> cpu_usage_millicores;
  std::optional<uint64_t> llc_occupancy_bytes;
  std::optional<uint64_t> membw_total_bytes_per_second;
  std::optional<uint64_t> membw_local_bytes_per_second;
  std::optional<double> ipc;
  std::optional<double> llc_misses_per_kilo_instructions;
  std::map<std::string, std::string> unavailable;  // metric -> reason
};

struct L3DomainSummary {
  uint32_t id = 0;
  uint32_t numa_node = 0;
  uint64_t size_bytes = 0;
  std::optional<uint64_t> occupancy_bytes;
  double pressure = 0;  // occupancy (measured, else sum of pods) / size
};

struct NumaNodeSummary {
  uint32_t id = 0;
  std::string cpus;
  uint64_t memory_bytes = 0;
  uint64_t peak_membw_bytes_per_second = 0;
  std::string peak_membw_source;
  std::optional<uint64_t> membw_bytes_per_second;
  double membw_utilisation = 0;  // measured (or summed) bandwidth / peak
  uint32_t free_exclusive_cpus = 0;
  uint64_t free_memory_bytes = 0;
};

// Operator view of one node: what /v1/nodes lists and neighborlyctl shows.
struct NodeSummary {
  std::string name;
  absl::Duration telemetry_age;
  double confidence = 0;        // 1 fresh .. 0 stale (neutral)
  double contention_score = 0;  // 0 (quiet) .. 1 (saturated): max of L3 pressure and bandwidth
  uint64_t sequence = 0;
  std::string agent_version;
  std::map<std::string, std::string> capabilities;  // name -> "available" or the reason
  std::string cpu_manager_policy;
  std::string topology_manager_policy;
  std::vector<L3DomainSummary> l3_domains;
  std::vector<NumaNodeSummary> numa_nodes;
  std::map<std::string, int> pods_by_class;  // "latency-critical" -> n, ...
  std::vector<std::string> aggressors;       // "namespace/name"
  std::vector<PodSummary> pods;              // filled by Node(), empty in Nodes()
  int bookings = 0;                          // in-flight pods booked on this node
};

// One recorded decision for explanations (/v1/decisions, neighborlyctl explain).
struct DecisionRecord {
  absl::Time at;
  // "filter" | "prioritize" (HTTP); "placement.filter" | "placement.score" |
  // "placement.reserve" | "placement.unreserve" (the placement service)
  std::string verb;
  std::string pod_uid;
  std::string pod;  // "namespace/name"
  std::string contention_class;
  std::string class_source;
  struct PerNode {
    std::string node;
    NodeDecision decision;
  };
  // Every rejected node and the best-scored feasible ones (DecisionLog keeps
  // LoggedDecision::kTopFeasible); `candidates` counts all the request named.
  std::vector<PerNode> nodes;
  size_t candidates = 0;
  std::string booked_node;    // prioritize / placement.reserve: where the footprint was booked
  std::string released_node;  // placement.unreserve: where a booking was released
  std::string workload;       // the pod's workload key
  std::string prediction;     // where its predicted footprint came from
};

struct IngestStats {
  uint64_t reports_accepted = 0;
  uint64_t reports_rejected = 0;
  uint64_t streams_open = 0;
};

// How an ExtenderCore is sized (see its constructor).
struct ExtenderCoreOptions {
  // Pod UIDs whose classes and hints are remembered (state.maxPods).
  size_t max_remembered_pods = 200'000;
  // Workload profiles kept (state.maxWorkloads), least recently used dropped.
  size_t max_workloads = 10'000;
  // Of them, at most this many taught by one node (state.maxPodsPerNode).
  size_t max_remembered_pods_per_node = 4096;
  // In-flight bookings, in all and per node (state.maxBookings,
  // state.maxBookingsPerNode); beyond, the oldest is dropped and counted.
  size_t max_bookings = 65'536;
  size_t max_bookings_per_node = 1024;
  // Whether /filter and /prioritize requests teach the registry (only from an
  // authenticated scheduler in the binary; docs/security.md).
  bool learn_from_scheduler = true;
  // Nodes tracked (a core for one node, as the report fuzzers build per
  // input, skips the 50,000-node index's 3 MiB).
  size_t max_nodes = 50'000;
  // Threads, the request's own included, that evaluate a request of 1,024
  // names or more (http.evaluationThreads).
  size_t evaluation_threads = 1;
  // Whether a node's decision is reused for the next pod of the same shape
  // while its snapshot and bookings are unchanged (core/decision_reuse.h,
  // model.reuseDecisions).
  bool reuse_decisions = true;
};

class ExtenderCore : public Decider {
 public:
  using Options = ExtenderCoreOptions;
  ExtenderCore(ModelConfig config, const Clock& clock, Options options = {});
  ~ExtenderCore() override;

  // Validates and applies one report (the gRPC ingest path). Invalid reports
  // return INVALID_ARGUMENT naming the problem and change no state. Releases
  // bookings of pods the report shows running.
  absl::Status Ingest(const telemetry::v1::NodeReport& report);
  // The same, taking the report over instead of copying it (the gRPC path:
  // a 50-pod report's copy is a quarter of its ingest cost).
  absl::Status Ingest(telemetry::v1::NodeReport&& report);
  // The gRPC path: an invalid pod record does not refuse the report. It is
  // left out (appended to `*dropped_pods`, index order) and the rest applied;
  // a problem outside `pods` still refuses the whole report.
  absl::Status Ingest(telemetry::v1::NodeReport&& report, std::vector<InvalidPod>* dropped_pods);

  // Decider.
  void Filter(const IncomingPod& pod, std::span<const std::string_view> nodes,
              std::vector<NodeDecision>& out) override;
  void Prioritize(const IncomingPod& pod, std::span<const std::string_view> nodes,
                  std::vector<NodeDecision>& out) override;
  // Wakes the evaluation helpers (if any) ahead of a large request.
  void ExpectLargeRequest() override;

  // The placement service (proto/neighborly/placement/v1, docs/api.md). The
  // same evaluation as Filter / Prioritize, recorded in the decision log as
  // "placement.<call>". `teach`: whether the caller may teach the registry
  // (an authenticated scheduler; the HTTP path decides this once, by
  // Options::learn_from_scheduler).
  //
  // Judges every node with telemetry (a node without is feasible, as on the
  // HTTP path): `names` gets their names (valid as long as the core), `out`
  // one decision each.
  void FilterKnownNodes(const IncomingPod& pod, bool teach, std::vector<std::string_view>& names,
                        std::vector<NodeDecision>& out);
  // Filter over `nodes`, as /filter.
  void FilterNodes(const IncomingPod& pod, std::span<const std::string_view> nodes, bool teach,
                   std::vector<NodeDecision>& out);
  // As /prioritize, but books nothing.
  void Score(const IncomingPod& pod, std::span<const std::string_view> nodes, bool teach,
             std::vector<NodeDecision>& out);
  // Issue 25, streamed verdicts (placement/verdict_stream.h): what a verdict
  // stream keeps for one pod shape between refreshes, so that a refresh
  // evaluates only the nodes whose snapshot or bookings changed since the
  // last (the cluster state's change journal) or whose last decision no
  // longer holds (its telemetry went stale, a booking's fold expired), not
  // all of them. One per shape, used by one thread at a time; movable.
  class VerdictTracker {
   public:
    // `incremental` false: every refresh evaluates every node (reusing what
    // it can), as before the journal; a benchmark's control.
    explicit VerdictTracker(bool incremental = true);
    // `least_harm_state`: the fallback is not applied to the decisions;
    // softly refused nodes carry their second look (VerdictChanges::second)
    // and the refresh the fallback's state (VerdictChanges::least_harm), for
    // a reader that applies it (the plugin, issue 25).
    VerdictTracker(bool incremental, bool least_harm_state);
    ~VerdictTracker();
    VerdictTracker(VerdictTracker&&) noexcept;
    VerdictTracker& operator=(VerdictTracker&&) noexcept;

   private:
    friend class ExtenderCore;
    struct State;
    std::unique_ptr<State> state_;
  };
  // What one refresh of a shape found.
  struct VerdictChanges {
    // Every node with telemetry was evaluated, not only those that changed:
    // the first refresh, a shape whose request changed (its workload's
    // profile moved), a pinned shape whose largest pinned guess elsewhere
    // appeared, changed or ended, or a journal overrun.
    bool full = false;
    // The nodes evaluated (names valid as long as the core), their ordinals
    // (ClusterState::Entry::ordinal) and decisions, in the same order. Where
    // the least-harm fallback decides (no node passes), a node whose pass
    // changed with the least harm elsewhere is among them too.
    std::vector<std::string_view> names;
    std::vector<uint64_t> ordinals;
    std::vector<NodeDecision> decisions;
    int blind_score = 0;  // the score of a node without telemetry
    // A tracker with least_harm_state: per decision, a softly refused node's
    // second look where it passes (group 0: none), and the fallback's state
    // (active: no node's first look passes and some second look does).
    struct SecondLook {
      uint8_t group = 0;  // 1: refused softly; 2: for a guessed booking
      int score = 0;
      uint64_t harm_micros = 0;
      bool operator==(const SecondLook&) const = default;
    };
    std::vector<SecondLook> second;
    struct LeastHarm {
      bool active = false;
      uint8_t group = 0;
      uint64_t bound_micros = 0;
      bool operator==(const LeastHarm&) const = default;
    } least_harm;
  };
  // Brings `tracker`'s verdicts of `pod`'s shape up to date: every node
  // evaluated as FilterKnownNodes evaluates (scores included), the same
  // decisions, but only the nodes that may have changed since the tracker's
  // last refresh are in `changes` unless it says `full`. Teaches nothing and
  // records nothing in the decision log.
  void Verdicts(const IncomingPod& pod, VerdictTracker& tracker, VerdictChanges& changes);
  // How many refreshes were full / incremental, and the nodes they
  // evaluated (for tests and metrics).
  struct VerdictRefreshStats {
    uint64_t full = 0;
    uint64_t incremental = 0;
    uint64_t nodes_visited = 0;
    // Of nodes_visited: nodes the change journal listed (every node of a
    // full refresh), nodes whose decision expired (telemetry aging, a
    // booking in their fold ending), nodes given again because the
    // least-harm fallback's pass moved without a change of their own.
    uint64_t nodes_changed = 0;
    uint64_t nodes_expired = 0;
    uint64_t nodes_regiven = 0;
    // Reports that changed nothing the model reads, so that no table
    // re-evaluated their node (NodeProfile's SameDecisionsWhileFresh).
    uint64_t reports_unchanged = 0;
  };
  VerdictRefreshStats verdict_refresh_stats() const;
  // The generation of `node`'s booking list (0: none booked there).
  uint64_t BookingsGeneration(std::string_view node) const;
  // The scheduler placed `pod` (non-empty uid) on `node`: evaluates it there
  // (against the node's other bookings, not its own) and books that footprint
  // on exactly that node, replacing any booking of the same UID elsewhere.
  // A node without telemetry is not booked (the model cannot place the pod on
  // it) and false is returned; a booking of the UID elsewhere is released
  // then too. `decision` (optional) gets the evaluation.
  bool Reserve(const IncomingPod& pod, std::string_view node, bool teach,
               NodeDecision* decision = nullptr);
  // Releases the booking of `pod_uid` on `node`; false when there was none
  // (never booked, already released by the node's report, or expired).
  bool Unreserve(std::string_view pod_uid, std::string_view node);

  // Operator views; safe to call concurrently with everything else.
  std::vector<NodeSummary> Nodes() const;  // sorted by contention, highest first
  std::optional<NodeSummary> Node(std::string_view name) const;
  // Issue 26: the newest report of one node (a copy), nullopt when none; and
  // every node's newest report, visited under the state's read view (the
  // reference is valid only during the call).
  std::optional<telemetry::v1::NodeReport> Report(std::string_view name) const;
  void ForEachReport(const std::function<void(const telemetry::v1::NodeReport&)>& visit) const;
  // Issue 27: the class the model resolved for each pod of `node`'s newest
  // report (uid, class, source), for the agent's resctrl allocator (the
  // telemetry ack's AllocationPolicy.pods); empty when the node has none.
  void PodClasses(std::string_view node,
                  google::protobuf::RepeatedPtrField<telemetry::v1::PodClass>* out) const;
  // Feedback from interference attribution (issue 26): each workload named
  // repeatedly as an antagonist is an aggressor in placement from now on (its
  // residents and its next replicas are treated as batch). Returns how many
  // of `workloads` had a profile to mark.
  size_t MarkAntagonists(const std::set<std::string>& workloads);
  // Latest decisions for a pod, matched by uid, "namespace/name" or name; newest first.
  std::vector<DecisionRecord> Decisions(std::string_view pod, size_t limit) const;
  size_t node_count() const;
  // Threads that evaluate a large request (1: its own only).
  size_t evaluation_threads() const;
  // Counters for /metrics: reports accepted/rejected by Ingest (streams_open
  // is 0 here; the gRPC server's TelemetryServer::stats() fills it), bookings
  // in flight, pod UIDs remembered.
  IngestStats ingest_stats() const;
  size_t bookings() const;
  // Bookings dropped for the caps: a node's (max_bookings_per_node), all (max_bookings).
  uint64_t bookings_dropped_node_full() const;
  uint64_t bookings_dropped_full() const;
  size_t remembered_pods() const;
  // Pod records of accepted reports that were not learned from because the
  // pod belongs to another node (docs/security.md, scoped learning).
  uint64_t foreign_pod_claims() const;
  // Candidates with telemetry whose decision was reused for a pod of the same
  // shape, and those evaluated (ExtenderCoreOptions::reuse_decisions).
  struct ReuseStats {
    uint64_t reused = 0;
    uint64_t evaluated = 0;
    // The least-harm fallback's second looks at candidates the soft filters
    // refused, kept per shape as the first looks are.
    uint64_t least_harm_reused = 0;
    uint64_t least_harm_evaluated = 0;
  };
  ReuseStats reuse_stats() const;
  // Requests in which the least-harm fallback passed nodes that interference
  // (or strict isolation) had refused all (issue 22).
  uint64_t least_harm_requests() const;

  // Workload profiles (/v1/workloads), sorted by key.
  std::vector<WorkloadView> Workloads() const;
  // One profile by "namespace/Kind/name".
  std::optional<WorkloadView> Workload(std::string_view key) const;
  size_t workload_profiles() const;
  size_t workload_capacity() const;
  // Requests whose prediction a workload profile served.
  uint64_t workload_predictions_used() const;

  // Learned knowledge (per-UID classes and hints) survives restarts through this file.
  absl::Status LoadState(const std::string& path);
  absl::Status SaveState(const std::string& path) const;
  // Nodes with telemetry when the loaded state file was saved (0: none loaded,
  // or a file from before it counted them): what readiness waits for.
  size_t nodes_in_loaded_state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CORE_EXTENDER_CORE_H_
