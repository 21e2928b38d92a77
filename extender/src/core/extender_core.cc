#include "extender/src/core/extender_core.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "extender/src/core/decision_reuse.h"
#include "extender/src/core/evaluation_pool.h"
#include "extender/src/core/expiry_queue.h"
#include "extender/src/core/report_validation.h"
#include "extender/src/model/classify.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "extender/src/model/workload_key.h"
#include "extender/src/state/booking_ledger.h"
#include "extender/src/state/cluster_state.h"
#include "extender/src/state/decision_log.h"
#include "extender/src/state/pod_registry.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

std::string CapabilityText(const tv1::Capability& c) {
  if (c.available()) return "available";
  return c.reason().empty() ? "unavailable" : c.reason();
}

bool SameKnowledge(const RememberedPod& a, const RememberedPod& b) {
  return a.contention_class == b.contention_class && a.source == b.source &&
         a.hints.llc_bytes == b.hints.llc_bytes &&
         a.hints.membw_bytes_per_second == b.hints.membw_bytes_per_second &&
         a.workload == b.workload;
}

// What is worth remembering about a pod: a declared class (or one its QoS
// implies) or footprint hints. (Its workload key is added by the caller.)
std::optional<RememberedPod> Learnable(ContentionClass c, ClassSource source,
                                       const FootprintHints& hints) {
  const bool declared = source == ClassSource::kAnnotation || source == ClassSource::kLabelRule ||
                        source == ClassSource::kOwner || source == ClassSource::kQos;
  if (!declared && hints.empty()) return std::nullopt;
  RememberedPod p;
  p.contention_class = declared ? c : ContentionClass::kStandard;
  p.source = declared ? source : ClassSource::kDefault;
  p.hints = hints;
  return p;
}

// Scoped learning (docs/security.md): whether node `reporter`'s report may
// teach about a pod whose registry entry is owned by `owner` (kScheduler when
// the scheduler taught it or nothing is known). A pod's home is the first
// node that reports it; a pod booked on another node is that node's to claim
// until the booking ends; a node's claim moves a scheduler-taught entry to it.
bool MayTeach(std::string_view reporter, std::string_view owner, bool booked_elsewhere) {
  if (owner == reporter) return true;
  if (booked_elsewhere) return false;
  return owner == PodRegistry::kScheduler;
}

}  // namespace

struct ExtenderCore::Impl {
  Impl(ModelConfig c, const Clock& clk, const Options& options)
      : config(std::move(c)),
        least_harm_config(LeastHarmConfig(config)),
        clock(clk),
        state(options.max_nodes),
        registry(options.max_remembered_pods, options.max_remembered_pods_per_node),
        workloads(options.max_workloads),
        ledger(state, {.max_per_node = options.max_bookings_per_node,
                       .max_total = options.max_bookings}),
        pool(options.evaluation_threads > 1
                 ? std::make_unique<EvaluationPool>(options.evaluation_threads)
                 : nullptr),
        learn_from_scheduler(options.learn_from_scheduler),
        reuse_decisions(options.reuse_decisions) {}

  absl::Status Apply(std::unique_ptr<NodeSnapshot> snapshot);  // a validated report
  // The pod's request as the model sees it, and its workload key; teaches
  // the registry when `teach`.
  struct Prepared {
    PodRequest req;
    std::string key_text;
  };
  Prepared Prepare(const IncomingPod& pod, absl::Time now, bool teach);
  // What a verdict tracker's refresh (issue 25) asks of Decide instead of
  // what a request does: first looks only (the tracker applies the
  // least-harm fallback itself, from what it keeps of every node: `nodes`
  // may be a part of the fleet), at the refresh's `now` (bookings already
  // expired by it) for the request it prepared, evaluated on this thread
  // with the tracker's own decisions to reuse, nothing recorded.
  struct Tracking {
    absl::Time now;
    Prepared* prepared = nullptr;    // never null
    DecisionReuse* reuse = nullptr;  // first looks kept for the shape
    int* blind_score = nullptr;      // the score of a node without telemetry
    // Per node: until when its decision holds (InfinitePast: only now).
    std::vector<absl::Time>* valid_until = nullptr;
  };
  void Decide(std::string_view verb, const IncomingPod& pod,
              std::span<const std::string_view> nodes, std::vector<NodeDecision>& out, bool book,
              bool teach, const Tracking* tracking = nullptr);
  void TrackVerdicts(const IncomingPod& pod, VerdictTracker::State& tracker,
                     VerdictChanges& changes);
  // The least-harm fallback's second look at a node (the soft filters off),
  // counted: the one kept in `harm_reuse` (null: none), valid until its next
  // Keep, or else `scratch`, evaluated.
  const NodeDecision& SecondLook(const PodRequest& req, const ClusterState::Entry& entry,
                                 const NodeSnapshot& snapshot, absl::Time now,
                                 DecisionReuse::Table* harm_reuse, NodeDecision& scratch,
                                 uint64_t& reused, uint64_t& evaluated);
  bool Reserve(const IncomingPod& pod, std::string_view node, bool teach, NodeDecision* decision);
  bool Unreserve(std::string_view pod_uid, std::string_view node);
  NodeSummary Summarize(const ClusterState::Entry& entry, const NodeSnapshot& snap, absl::Time now,
                        bool with_pods) const;

  const ModelConfig config;
  // The least-harm fallback's configuration (soft filters off), made once.
  const ModelConfig least_harm_config;
  const Clock& clock;
  ClusterState state;
  PodRegistry registry;
  WorkloadStore workloads;
  BookingLedger ledger;
  DecisionLog log;
  // Requests of at least kParallelMinNodes names are evaluated in chunks of
  // kParallelChunk by the pool (docs/performance.md: below ~1,000 names a
  // helper's wake-up costs more than its share saves).
  static constexpr size_t kParallelMinNodes = 1024;
  static constexpr size_t kParallelChunk = 256;
  std::unique_ptr<EvaluationPool> pool;  // null: one thread
  const bool learn_from_scheduler;
  const bool reuse_decisions;
  std::atomic<uint64_t> foreign_claims{0};
  // Reusable decisions (core/decision_reuse.h): a request on one thread
  // takes a free set; kube-scheduler asks one request at a time, so two
  // serve it and a second client (a placement plugin) beside it. A set also
  // keeps the least-harm fallback's second looks (EvaluateNodeLeastHarm),
  // which are as pure as the first and were evaluated afresh on every
  // candidate of every request that the soft filters refused everywhere
  // (issue 25, part 6: a latency-critical pod refused on most nodes); its
  // tables fill only for shapes that reach the fallback, at most as many
  // slots again as the first looks'.
  struct Reusable {
    std::mutex mu;
    DecisionReuse decisions;
    DecisionReuse least_harm;
  };
  std::array<Reusable, 2> reusable;
  // Pinned pods booked by /prioritize's guess (issue 22): kube-scheduler may
  // have bound one elsewhere, where nothing accounts for its CPUs until that
  // node's agent reports it. A pinned pod that fits a node only if none of
  // them went there is refused softly ("in-flight: ..."; RefuseWherePinnedGuessFits),
  // so that the least-harm fallback takes a node that fits either way first.
  struct PinnedGuess {
    std::string uid;
    std::string node;  // where it was booked
    PodRequest req;
    absl::Time expires_at;
  };
  static constexpr size_t kMaxPinnedGuesses = 64;
  std::mutex pinned_guesses_mu;
  std::deque<PinnedGuess> pinned_guesses;  // oldest first
  void RememberPinnedGuess(std::string_view uid, std::string_view node, const PodRequest& req,
                           absl::Time expires_at);
  void ForgetPinnedGuess(std::string_view uid);
  // The guess of the most CPUs still in flight, other than `uid`'s.
  std::optional<PinnedGuess> LargestPinnedGuess(std::string_view uid, absl::Time now);
  void RefuseWherePinnedGuessFits(const PodRequest& req, std::string_view uid,
                                  std::span<const std::string_view> nodes,
                                  const ClusterState::View& view, absl::Time now,
                                  std::vector<NodeDecision>& out);
  // Candidates with telemetry whose decision was reused / evaluated.
  std::atomic<uint64_t> decisions_reused{0};
  std::atomic<uint64_t> least_harm_requests{0};
  std::atomic<uint64_t> decisions_evaluated{0};
  // The least-harm fallback's second looks, reused / evaluated.
  std::atomic<uint64_t> least_harm_reused{0};
  std::atomic<uint64_t> least_harm_evaluated{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> rejected{0};
  // Verdict trackers' refreshes (issue 25): full, incremental, nodes evaluated.
  std::atomic<uint64_t> verdicts_full{0};
  std::atomic<uint64_t> verdicts_incremental{0};
  std::atomic<uint64_t> verdicts_nodes{0};
  // Of those nodes: journalled changes, expired decisions, fallback flips.
  std::atomic<uint64_t> verdicts_nodes_changed{0};
  std::atomic<uint64_t> verdicts_nodes_expired{0};
  std::atomic<uint64_t> verdicts_nodes_regiven{0};
  // Reports published without a journal entry (SameDecisionsWhileFresh).
  std::atomic<uint64_t> reports_unchanged{0};
  // Nodes with telemetry when the loaded state file was saved (readiness).
  size_t nodes_in_loaded_state = 0;
};

ExtenderCore::ExtenderCore(ModelConfig config, const Clock& clock, Options options)
    : impl_(std::make_unique<Impl>(std::move(config), clock, options)) {}

size_t ExtenderCore::evaluation_threads() const {
  return impl_->pool != nullptr ? impl_->pool->threads() : 1;
}

ExtenderCore::~ExtenderCore() = default;

absl::Status ExtenderCore::Ingest(const tv1::NodeReport& report) {
  if (absl::Status s = ValidateReport(report); !s.ok()) {
    impl_->rejected.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  auto snapshot = std::make_unique<NodeSnapshot>();
  snapshot->report = report;
  return impl_->Apply(std::move(snapshot));
}

absl::Status ExtenderCore::Ingest(tv1::NodeReport&& report) {
  return Ingest(std::move(report), nullptr);
}

absl::Status ExtenderCore::Ingest(tv1::NodeReport&& report, std::vector<InvalidPod>* dropped_pods) {
  if (absl::Status s = ValidateReport(report, ReportLimits(), dropped_pods); !s.ok()) {
    impl_->rejected.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  if (dropped_pods != nullptr) RemoveInvalidPods(*dropped_pods, report);
  auto snapshot = std::make_unique<NodeSnapshot>();
  snapshot->report = std::move(report);  // same (no) arena: a swap, not a copy
  return impl_->Apply(std::move(snapshot));
}

absl::Status ExtenderCore::Impl::Apply(std::unique_ptr<NodeSnapshot> snapshot) {
  // `report` lives in the snapshot; the View keeps it alive after publication,
  // even if another stream for the same node replaces it meanwhile.
  const tv1::NodeReport& report = snapshot->report;
  const ClusterState::View view = state.view();
  ClusterState::Entry* entry = state.GetOrCreate(report.node_name());
  if (entry == nullptr) {
    rejected.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(absl::StrCat("NodeReport.node_name: cannot track node ",
                                                     report.node_name(), ": already tracking ",
                                                     state.max_nodes(), " nodes"));
  }
  const absl::Time now = clock.Now();
  std::vector<std::string_view> uids;
  uids.reserve(report.pods_size());
  for (const tv1::PodReport& pod : report.pods()) uids.push_back(pod.uid());
  {
    std::lock_guard<std::mutex> lock(entry->ingest_mu);
    // Only writers of this entry (serialised by ingest_mu) replace it.
    const NodeSnapshot* previous = entry->snapshot.load(std::memory_order_acquire);
    if (previous != nullptr && previous->report.boot_id() == report.boot_id() &&
        report.sequence() <= previous->report.sequence()) {
      rejected.fetch_add(1, std::memory_order_relaxed);
      return absl::InvalidArgumentError(
          absl::StrCat("NodeReport.sequence: ", report.sequence(), " is not after ",
                       previous->report.sequence(), ", the last accepted from boot_id \"",
                       report.boot_id(), "\" (replayed or out-of-order report)"));
    }
    std::vector<std::optional<RememberedPod>> known;
    std::vector<std::string_view> owners;
    registry.LookupMany(uids, known, &owners);
    std::vector<bool> booked_elsewhere;
    ledger.BookedElsewhere(report.node_name(), uids, booked_elsewhere);
    // Each pod's workload: the key its scheduling request showed, else its
    // labels'. A node's profile uses only what it or the scheduler taught:
    // another node's teaching about a UID never changes how this node is judged.
    const size_t count = uids.size();
    std::vector<std::string> keys(count);
    std::vector<std::optional<WorkloadPrediction>> predictions(count);
    std::vector<ResidentKnowledge> knowledge(count);
    const BookingList* booked_here = entry->bookings.load();  // under `view`
    absl::flat_hash_map<std::string_view, size_t> first_of_key;
    for (size_t i = 0; i < count; ++i) {
      const tv1::PodReport& pod = report.pods(static_cast<int>(i));
      const bool trusted =
          known[i] && (owners[i] == report.node_name() || owners[i] == PodRegistry::kScheduler);
      WorkloadKey key;
      if (trusted && !known[i]->workload.empty()) {
        if (absl::StatusOr<WorkloadKey> k = ParseWorkloadKey(known[i]->workload); k.ok()) key = *k;
      }
      if (key.empty()) key = WorkloadKeyFromLabels(pod.namespace_(), pod.name(), pod.labels());
      keys[i] = key.ToString();
      if (config.workloads.enabled) {
        // Measured pods need the profile too (issue 22): their workload's
        // working set, baselines and fit tell demand from symptoms. Replicas
        // of one workload on this node share one prediction.
        auto [first, added] = first_of_key.try_emplace(keys[i], i);
        if (!added) {
          predictions[i] = predictions[first->second];
        } else {
          predictions[i] = workloads.Predict(keys[i], now, config, /*count_use=*/false);
        }
      }
      ResidentKnowledge& k = knowledge[i];
      k.remembered = trusted ? &*known[i] : nullptr;
      k.workload = predictions[i] ? &*predictions[i] : nullptr;
      k.workload_name = keys[i];  // "namespace/Kind/name", for an aggressor's reason
      if (booked_here != nullptr) {
        for (const Booking& b : *booked_here) {
          if (b.pod_uid == uids[i] && b.expires_at > now) k.booked_here = true;
        }
      }
    }
    snapshot->profile = BuildNodeProfile(report, config, nullptr, now, knowledge);
    // Learn declared classes and hints the agent could see, and what each
    // measured pod teaches its workload, of this node's pods only (scoped
    // learning, docs/security.md).
    const uint64_t node_hash = NodeNameHash(report.node_name());
    for (size_t i = 0; i < count; ++i) {
      const ResidentPod& resident = snapshot->profile.pods[i];
      const bool booked_away = !booked_elsewhere.empty() && booked_elsewhere[i];
      const std::string_view owner = known[i].has_value() ? owners[i] : PodRegistry::kScheduler;
      const bool may_teach = MayTeach(report.node_name(), owner, booked_away);
      if (config.workloads.enabled && resident.measured && may_teach) {
        WorkloadObservation o = resident.observation;
        o.pod_uid_hash = NodeNameHash(uids[i]);
        workloads.Observe(keys[i], o, node_hash, now, config);
      }
      std::optional<RememberedPod> learn =
          Learnable(resident.contention_class, resident.source,
                    HintsFromAnnotations(report.pods(static_cast<int>(i)).annotations()));
      // The report says nothing of the workload key a scheduling request taught: keep it.
      if (learn && known[i]) learn->workload = known[i]->workload;
      if (!learn) {
        // Nothing new to learn, but a pod the scheduler taught about and this
        // node runs becomes this node's: no other node can claim it later.
        if (known[i] && owners[i] == PodRegistry::kScheduler && !booked_away) {
          registry.Remember(report.node_name(), uids[i], *known[i], now);
        }
      } else if (known[i] && owners[i] == report.node_name() && SameKnowledge(*known[i], *learn)) {
        // already known as such
      } else if (!may_teach) {
        foreign_claims.fetch_add(1, std::memory_order_relaxed);
      } else {
        registry.Remember(report.node_name(), uids[i], *learn, now);
      }
      // A booking here ends once the pod is measured (until then it carries
      // the pod's load, which the profile then leaves out).
      if (knowledge[i].booked_here && !resident.measured) uids[i] = std::string_view();
    }
    // A report that changes nothing the model reads (a steady node: the same
    // residents, measurements and knowledge) leaves the change journal alone:
    // the verdict tables' decisions on the node stand, and come due at the
    // last snapshot's fresh_until, when they are taken from the newest one
    // (issue 25: on a steady fleet most reports re-evaluated every shape's
    // table for nothing). Decided once the snapshot is out: a table refreshed
    // after the last one left fresh may have read it aging, so past that
    // moment the node is journalled after all; before it, a table that read
    // the last one read it fresh, as this one is.
    const bool unchanged =
        previous != nullptr && SameDecisionsWhileFresh(previous->profile, snapshot->profile);
    const absl::Time still_fresh_until =
        unchanged ? previous->profile.fresh_until : absl::InfinitePast();
    state.PublishSnapshot(*entry, std::move(snapshot), /*journal=*/false);
    if (clock.Now() <= still_fresh_until) {
      reports_unchanged.fetch_add(1, std::memory_order_relaxed);
    } else {
      state.JournalChange(*entry);
    }
  }
  std::erase(uids, std::string_view());
  ledger.Release(report.node_name(), uids);
  ledger.Expire(now);
  accepted.fetch_add(1, std::memory_order_relaxed);
  return absl::OkStatus();
}

ExtenderCore::Impl::Prepared ExtenderCore::Impl::Prepare(const IncomingPod& pod, absl::Time now,
                                                         bool teach) {
  std::string_view remembered_owner = PodRegistry::kScheduler;
  std::optional<RememberedPod> remembered =
      pod.uid.empty() ? std::nullopt : registry.Lookup(pod.uid, &remembered_owner);
  // A pod being scheduled runs on no node yet, so what a node's report says
  // of its UID is a claim, not knowledge: only what the scheduler taught (or
  // the request itself) decides it (issue 24: a claim of a pending pod's UID
  // with forged hints refused it on every node while it was pending).
  if (remembered && remembered_owner != PodRegistry::kScheduler) remembered.reset();
  const WorkloadKey key = WorkloadKeyOf(pod);
  std::string key_text = key.empty() ? std::string() : key.ToString();
  std::optional<WorkloadPrediction> profile;
  if (config.workloads.enabled && !key.empty()) profile = workloads.Predict(key_text, now, config);
  Prepared prepared;
  prepared.req = MakePodRequest(pod, remembered ? &*remembered : nullptr, config, &key,
                                profile ? &*profile : nullptr);
  const PodRequest& req = prepared.req;
  // The scheduler teaches only when authenticated, and never over what a
  // node's report taught about its own pod.
  if (!pod.uid.empty() && teach && remembered_owner == PodRegistry::kScheduler) {
    std::optional<RememberedPod> learn =
        Learnable(req.contention_class, req.source, HintsFromAnnotations(pod.annotations));
    // The workload key is learned beside what is known, never in its place.
    if (!key_text.empty()) {
      if (!learn) learn = remembered.value_or(RememberedPod{});
      learn->workload = key_text;
    }
    if (learn && (!remembered || !SameKnowledge(*remembered, *learn))) {
      registry.Remember(PodRegistry::kScheduler, pod.uid, *learn, now);
    }
  }
  prepared.key_text = std::move(key_text);
  return prepared;
}

void ExtenderCore::Impl::Decide(std::string_view verb, const IncomingPod& pod,
                                std::span<const std::string_view> nodes,
                                std::vector<NodeDecision>& out, bool book, bool teach,
                                const Tracking* tracking) {
  const absl::Time now = tracking != nullptr ? tracking->now : clock.Now();
  std::optional<Prepared> own_prepared;
  if (tracking == nullptr) {
    ledger.Expire(now);
    own_prepared.emplace(Prepare(pod, now, teach));
  }
  Prepared& prepared = tracking != nullptr ? *tracking->prepared : *own_prepared;
  const PodRequest& req = prepared.req;
  DecisionReuse* own_reuse = tracking != nullptr ? tracking->reuse : nullptr;
  const bool record = tracking == nullptr;
  if (tracking != nullptr && tracking->blind_score != nullptr) {
    NodeDecision blind;
    EvaluateNode(req, nullptr, {}, now, config, blind);
    *tracking->blind_score = blind.score;
  }
  if (tracking != nullptr && tracking->valid_until != nullptr) {
    tracking->valid_until->assign(nodes.size(), absl::InfinitePast());
  }
  std::string& key_text = prepared.key_text;
  const ClusterState::View view = state.view();
  const bool any_bookings = ledger.size() > 0;
  // Which precomputed isolation rejection this pod can meet, if any.
  const bool latency_critical = req.contention_class == ContentionClass::kLatencyCritical;
  std::string NodeProfile::*isolation_text = nullptr;
  if (latency_critical && config.isolate_latency_critical) {
    isolation_text = &NodeProfile::isolation_reason_latency_critical;
  } else if (req.contention_class == ContentionClass::kBatch && config.isolate_batch) {
    isolation_text = &NodeProfile::isolation_reason_batch;
  }
  out.resize(nodes.size());
  const bool parallel =
      own_reuse == nullptr && pool != nullptr && nodes.size() >= kParallelMinNodes;
  // A request on one thread takes a free set of reusable decisions, if any
  // (a large request's chunks run on several threads and evaluate afresh).
  DecisionReuse* reusing = nullptr;
  DecisionReuse* reusing_least_harm = nullptr;  // the same set's second looks
  std::unique_lock<std::mutex> reuse_lock;
  if (own_reuse != nullptr) {
    reusing = own_reuse;
  } else if (reuse_decisions && !parallel) {
    for (Reusable& r : reusable) {
      std::unique_lock<std::mutex> lock(r.mu, std::try_to_lock);
      if (!lock.owns_lock()) continue;
      reuse_lock = std::move(lock);
      reusing = &r.decisions;
      reusing_least_harm = &r.least_harm;
      break;
    }
  }
  // Candidates are looked up in batches, each level's memory fetched for the
  // whole batch before it is used (index slot, entry, snapshot), so that the
  // cache misses of a batch overlap instead of following one another.
  std::vector<absl::Time>* const valid_until =
      tracking != nullptr ? tracking->valid_until : nullptr;
  auto evaluate = [&](size_t begin, size_t end) {
    constexpr size_t kBatch = 16;
    // Decisions for pods of this shape (core/decision_reuse.h), when this
    // request holds a set of them.
    DecisionReuse::Table* reuse = nullptr;
    if (reusing != nullptr) {
      reuse = own_reuse != nullptr ? &reusing->ForKeeping(req) : &reusing->For(req);
    }
    uint64_t reused = 0, evaluated = 0;
    for (size_t base = begin; base < end; base += kBatch) {
      const size_t count = std::min(kBatch, end - base);
      std::array<uint64_t, kBatch> hashes;
      for (size_t j = 0; j < count; ++j) {
        hashes[j] = NodeNameHash(nodes[base + j]);
        view.PrefetchSlot(hashes[j]);
      }
      for (size_t j = 0; j < count; ++j) view.PrefetchEntry(hashes[j]);
      std::array<const ClusterState::Entry*, kBatch> entries;
      std::array<const NodeSnapshot*, kBatch> snapshots;
      std::array<const BookingList*, kBatch> booked;
      for (size_t j = 0; j < count; ++j) {
        entries[j] = view.Find(nodes[base + j], hashes[j]);
        // Plain loads: `view` keeps whatever they return alive. Most requests
        // find no booking anywhere: skip the second load then.
        snapshots[j] = entries[j] != nullptr ? entries[j]->snapshot.load() : nullptr;
        booked[j] = any_bookings && entries[j] != nullptr ? entries[j]->bookings.load() : nullptr;
        if (reuse != nullptr && snapshots[j] != nullptr) {
          // What a reused decision is checked against: its slot and the two
          // generations (a line each).
          reuse->Prefetch(entries[j]->ordinal);
          __builtin_prefetch(&snapshots[j]->generation);
          if (booked[j] != nullptr) __builtin_prefetch(&booked[j]->generation);
        }
      }
      // Decisions reused; the others (`missed`) are evaluated below.
      std::array<uint8_t, kBatch> missed;
      size_t misses = 0;
      for (size_t j = 0; j < count; ++j) {
        if (valid_until != nullptr && snapshots[j] != nullptr &&
            ::neighborly::extender::Reusable(*snapshots[j], booked[j], now)) {
          // When it may change: just after the last instant it holds.
          (*valid_until)[base + j] =
              ::neighborly::extender::ReusableUntil(*snapshots[j], booked[j], now) +
              absl::Nanoseconds(1);
        }
        if (reuse != nullptr && snapshots[j] != nullptr) {
          if (const NodeDecision* kept =
                  reuse->Find(entries[j]->ordinal, snapshots[j]->generation,
                              booked[j] != nullptr ? booked[j]->generation : 0, now)) {
            out[base + j] = *kept;  // the reply carries it whole
            ++reused;
            continue;
          }
        }
        missed[misses++] = static_cast<uint8_t>(j);
      }
      for (size_t m = 0; m < misses; ++m) {
        const size_t j = missed[m];
        if (booked[j] != nullptr) {
          // The list's header and its fold, which evaluation reads first
          // (under a burst each candidate holds tens of bookings, and their
          // fold was the hottest miss of the request after the profile).
          const char* list = reinterpret_cast<const char*>(booked[j]);
          const char* list_end = reinterpret_cast<const char*>(booked[j] + 1);
          for (; list < list_end; list += 64) __builtin_prefetch(list);
        }
        if (snapshots[j] != nullptr) {
          const NodeProfile& p = snapshots[j]->profile;
          const char* hot = reinterpret_cast<const char*>(&p);
          const char* hot_end = reinterpret_cast<const char*>(&p.l3 + 1);
          if (isolation_text != nullptr) {
            hot_end = reinterpret_cast<const char*>(&(p.*isolation_text) + 1);
          }
          // A Guaranteed pod meets the kubelet emulation, which reads the
          // admission profile after the isolation texts (issue 14).
          if (req.admission.any_hint) {
            hot_end = reinterpret_cast<const char*>(&p.admission + 1);
          }
          // Four lines in the usual case (the first four, unrolled), more only
          // for a node with more NUMA nodes or L3 domains than fit inline.
          for (int line = 0; line < 4; ++line) __builtin_prefetch(hot + 64 * line);
          for (hot += 4 * 64; hot < hot_end; hot += 64) __builtin_prefetch(hot);
        }
      }
      // The text of the isolation rejections this pod will meet (a separate
      // allocation, copied into the decision), once the counts have arrived.
      if (isolation_text != nullptr) {
        for (size_t m = 0; m < misses; ++m) {
          const size_t j = missed[m];
          if (snapshots[j] == nullptr) continue;
          const NodeProfile& p = snapshots[j]->profile;
          if ((latency_critical ? p.batch_pods : p.latency_critical_pods) == 0) continue;
          const std::string& text = p.*isolation_text;
          for (size_t at = 0; at < text.size(); at += 64) __builtin_prefetch(text.data() + at);
        }
      }
      for (size_t m = 0; m < misses; ++m) {
        const size_t j = missed[m];
        NodeDecision& decision = out[base + j];
        const NodeSnapshot* snapshot = snapshots[j];
        EvaluateNode(req, snapshot != nullptr ? &snapshot->profile : nullptr,
                     booked[j] ? std::span<const Booking>(*booked[j]) : std::span<const Booking>(),
                     now, config, decision, booked[j] ? &booked[j]->fold : nullptr);
        if (reuse != nullptr && snapshot != nullptr) {
          ++evaluated;
          reuse->Keep(entries[j]->ordinal, *snapshot, booked[j], now, decision);
        }
      }
    }
    if (reused > 0) decisions_reused.fetch_add(reused, std::memory_order_relaxed);
    if (evaluated > 0) decisions_evaluated.fetch_add(evaluated, std::memory_order_relaxed);
  };
  // A large request's candidates are shared with idle helper threads, in
  // chunks that write disjoint decisions; all read through this one View,
  // which outlives the Run.
  if (parallel) {
    const size_t chunks = (nodes.size() + kParallelChunk - 1) / kParallelChunk;
    pool->Run(chunks, [&](size_t c) {
      evaluate(c * kParallelChunk, std::min(nodes.size(), (c + 1) * kParallelChunk));
    });
  } else {
    evaluate(0, nodes.size());
  }

  if (req.exclusive_cpus && config.numa_admission && config.interference.enabled &&
      config.interference.pinned_guesses_elsewhere) {
    RefuseWherePinnedGuessFits(req, pod.uid, nodes, view, now, out);
  }

  // Least-harm fallback (issue 22, on by default): when the soft filters
  // (predicted slowdown; strict isolation and headroom) refused every
  // candidate and none passed, take a second look at those nodes with them
  // off and pass the least harmful ones (within least_harm_margin of the
  // least), so that Neighborly never strands a pod the default scheduler
  // would run; NUMA admission stays exact. A node refused because a guessed
  // booking there may be right ("in-flight: ...") is passed only when every
  // other is refused outright: where kube-scheduler did put that booking's
  // pod, the kubelet would refuse this one (a TopologyAffinityError).
  if (config.least_harm_fallback && tracking == nullptr &&
      std::none_of(out.begin(), out.end(), [](const NodeDecision& d) { return d.feasible; })) {
    std::vector<std::pair<size_t, NodeDecision>> trials;
    double least = std::numeric_limits<double>::infinity();
    // The second looks of this shape kept by the request's set, if it holds
    // one (a large request evaluated in parallel holds none).
    DecisionReuse::Table* harm_reuse =
        reusing_least_harm != nullptr ? &reusing_least_harm->For(req) : nullptr;
    uint64_t harm_reused = 0, harm_evaluated = 0;
    // One decision written for every node evaluated (its reason's storage
    // reused); a look, kept or evaluated, is copied into `trials` only when
    // it passes.
    NodeDecision scratch;
    // First the nodes refused for interference (or isolation, headroom), then,
    // only if none of those passes, the ones a guessed booking refused.
    for (const bool guessed : {false, true}) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!IsSoftRejection(out[i]) || out[i].reason.starts_with("in-flight") != guessed) continue;
        const ClusterState::Entry* entry = view.Find(nodes[i], NodeNameHash(nodes[i]));
        const NodeSnapshot* snapshot = entry != nullptr ? entry->snapshot.load() : nullptr;
        if (snapshot == nullptr) continue;
        const NodeDecision& look = SecondLook(req, *entry, *snapshot, now, harm_reuse, scratch,
                                              harm_reused, harm_evaluated);
        if (!look.feasible) continue;
        least = std::min(least, look.cost);
        trials.emplace_back(i, look);
      }
      if (!trials.empty()) break;
    }
    size_t passed = 0;
    const uint64_t bound = LeastHarmBoundMicros(least, config);
    for (auto& [i, trial] : trials) {
      if (HarmMicros(trial.cost) > bound) continue;
      // Copied, not moved: the refused decision's reason keeps its storage,
      // which the next request's decision for this candidate reuses (a move
      // left it none, to be allocated again).
      out[i] = trial;
      ++passed;
    }
    if (passed > 0) least_harm_requests.fetch_add(1, std::memory_order_relaxed);
    if (harm_reused > 0) least_harm_reused.fetch_add(harm_reused, std::memory_order_relaxed);
    if (harm_evaluated > 0) {
      least_harm_evaluated.fetch_add(harm_evaluated, std::memory_order_relaxed);
    }
  }
  if (reuse_lock.owns_lock()) reuse_lock.unlock();

  std::string booked_node;
  // kube-scheduler binds a pod that only one node passes without asking
  // /prioritize (no scoring with one feasible node): book it from /filter
  // then, or a burst of replicas would all land on that node unbooked (and
  // fail the kubelet's NUMA admission one after another; issue 22).
  if (!book && !pod.uid.empty() && verb == "filter" && config.interference.enabled &&
      config.interference.book_single_candidate) {
    size_t passed = 0, only = nodes.size();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (out[i].feasible) {
        ++passed;
        only = i;
      }
    }
    if (passed == 1 && out[only].has_telemetry) {
      Booking booking = MakeBooking(pod.uid, req, out[only], now + config.booking_ttl);
      booking.exact = true;  // the scheduler has no other choice
      if (ledger.Book(nodes[only], std::move(booking))) booked_node = std::string(nodes[only]);
    }
  }
  if (book && !pod.uid.empty()) {
    // The best-scoring feasible node; among equals, the one kube-scheduler's
    // LeastAllocated most likely takes (the least requested, counting what is
    // booked there), so that the guess is where the pod goes more often.
    size_t best = nodes.size();
    for (size_t i = 0; i < nodes.size(); ++i) {
      // A node without telemetry is not booked (as Reserve does not): the
      // model cannot place the pod on it.
      if (!out[i].feasible || !out[i].has_telemetry) continue;
      if (best == nodes.size() || out[i].score > out[best].score ||
          (out[i].score == out[best].score &&
           out[i].requested_share < out[best].requested_share)) {
        best = i;
      }
    }
    if (best < nodes.size() &&
        ledger.Book(nodes[best], MakeBooking(pod.uid, req, out[best], now + config.booking_ttl))) {
      booked_node = std::string(nodes[best]);
      if (out[best].exclusive_cpus > 0) {
        RememberPinnedGuess(pod.uid, nodes[best], req, now + config.booking_ttl);
      }
    }
  }

  if (!record) return;
  std::shared_ptr<LoggedDecision> logged = log.NewRecord();
  logged->at = now;
  logged->verb = std::string(verb);
  logged->pod_uid = pod.uid;
  logged->pod_namespace = pod.namespace_name;
  logged->pod_name = pod.name;
  logged->contention_class = req.contention_class;
  logged->class_source = req.source;
  logged->AddNodes(nodes, out);
  logged->booked_node = std::move(booked_node);
  logged->workload = std::move(key_text);
  logged->prediction = req.prediction;
  log.Record(std::move(logged));
}

void ExtenderCore::Filter(const IncomingPod& pod, std::span<const std::string_view> nodes,
                          std::vector<NodeDecision>& out) {
  impl_->Decide("filter", pod, nodes, out, /*book=*/false, impl_->learn_from_scheduler);
}

void ExtenderCore::Prioritize(const IncomingPod& pod, std::span<const std::string_view> nodes,
                              std::vector<NodeDecision>& out) {
  impl_->Decide("prioritize", pod, nodes, out, /*book=*/true, impl_->learn_from_scheduler);
}

const NodeDecision& ExtenderCore::Impl::SecondLook(const PodRequest& req,
                                                   const ClusterState::Entry& entry,
                                                   const NodeSnapshot& snapshot, absl::Time now,
                                                   DecisionReuse::Table* harm_reuse,
                                                   NodeDecision& scratch, uint64_t& reused,
                                                   uint64_t& evaluated) {
  const BookingList* booked = entry.bookings.load();
  if (harm_reuse != nullptr) {
    if (const NodeDecision* kept = harm_reuse->Find(
            entry.ordinal, snapshot.generation, booked != nullptr ? booked->generation : 0, now)) {
      ++reused;
      return *kept;
    }
  }
  EvaluateNodeLeastHarmWith(req, &snapshot.profile,
                            booked ? std::span<const Booking>(*booked) : std::span<const Booking>(),
                            now, least_harm_config, scratch, booked ? &booked->fold : nullptr);
  if (harm_reuse != nullptr) {
    ++evaluated;
    harm_reuse->Keep(entry.ordinal, snapshot, booked, now, scratch);
  }
  return scratch;
}

void ExtenderCore::FilterKnownNodes(const IncomingPod& pod, bool teach,
                                    std::vector<std::string_view>& names,
                                    std::vector<NodeDecision>& out) {
  names.clear();
  {
    // Entries are never freed before the core: their names outlive the View.
    const ClusterState::View view = impl_->state.view();
    names.reserve(view.entries().size());
    for (const ClusterState::Entry* entry : view.entries()) {
      if (entry->snapshot.load() != nullptr) names.push_back(entry->name);
    }
  }
  impl_->Decide("placement.filter", pod, names, out, /*book=*/false, teach);
}

struct ExtenderCore::VerdictTracker::State {
  bool incremental = true;
  bool least_harm_state = false;  // the reader applies the fallback
  bool started = false;
  PodRequest req;       // what the table was evaluated for
  std::string guess;    // the pinned guess it was evaluated against ("": none)
  uint64_t cursor = 0;  // the change journal's, after the last refresh
  DecisionReuse reuse{1};
  DecisionReuse least_harm{1};
  // How a node's first look refused it, where the least-harm fallback may
  // pass it: softly, or softly for a guessed booking ("in-flight").
  enum Soft : uint8_t { kNotSoft = 0, kSoft = 1, kSoftGuessed = 2 };
  struct Node {
    absl::Time valid_until = absl::InfinitePast();  // when its decision may change
    bool tracked = false;                           // has telemetry and a decision
    bool feasible = false;                          // its first look passes
    uint8_t soft = kNotSoft;
    // Its second look (the fallback's), once taken for its current first look.
    bool second_known = false;
    bool second_feasible = false;
    double second_cost = 0;
    bool passed = false;  // the fallback passed it in the table as last given
    uint64_t mark = 0;    // the refresh that last queued it
    // The time of its entry in `expiries` (InfiniteFuture: none). A later
    // valid_until keeps it; when it comes due the node is queued again at
    // its valid_until then, so a node that reports every second has one
    // entry, not one per report.
    absl::Time queued = absl::InfiniteFuture();
  };
  std::vector<Node> nodes;  // by ordinal
  size_t feasible = 0;      // tracked nodes whose first look passes
  size_t passed = 0;        // tracked nodes the fallback passes
  // The least-harm fallback's candidates, kept as nodes change, so that a
  // refresh of a shape that falls back finds each group's least harm without
  // visiting every node (issue 25: that visit, on every refresh of a shape
  // refused everywhere, was the verdict stream's largest single cost). Per
  // group (kSoft, kSoftGuessed): how many tracked nodes' second looks pass,
  // and the least cost among them, exact unless `least_stale` (a node of
  // the least cost left; the next visit finds it again). The visit is made
  // too while some tracked soft node has no second look yet, or a cost that
  // does not order (NaN).
  struct Candidates {
    std::array<size_t, 2> passes{};
    std::array<double, 2> least{std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity()};
    bool least_stale = false;
    size_t unlooked = 0;
    size_t unordered = 0;
    // Every least exact: no visit needed.
    bool Exact() const { return unlooked == 0 && unordered == 0 && !least_stale; }
  };
  Candidates candidates;  // a full refresh starts it over
  // (time, ordinal), popped earliest first; an entry whose time is not its
  // node's `queued` is stale and skipped.
  using Expiry = ExpiryQueue::Entry;
  ExpiryQueue expiries;
  std::vector<Expiry> popped;  // scratch
  uint64_t refreshes = 0;
  // Scratch.
  std::vector<uint64_t> changed;
  std::vector<absl::Time> valid;
  std::vector<std::string_view> more_names;
  std::vector<uint64_t> more_ordinals;
  std::vector<NodeDecision> more;

  // A node's part in the fallback's candidates, taken out before its state
  // changes (Leave) and put back after (Enter).
  void Leave(const Node& n) {
    if (!n.tracked || n.soft == kNotSoft) return;
    if (!n.second_known) {
      --candidates.unlooked;
    } else if (n.second_feasible) {
      if (std::isnan(n.second_cost)) {
        --candidates.unordered;
      } else {
        --candidates.passes[n.soft - 1];
        if (n.second_cost <= candidates.least[n.soft - 1]) candidates.least_stale = true;
      }
    }
  }
  void Enter(const Node& n) {
    if (!n.tracked || n.soft == kNotSoft) return;
    if (!n.second_known) {
      ++candidates.unlooked;
    } else if (n.second_feasible) {
      if (std::isnan(n.second_cost)) {
        ++candidates.unordered;
      } else {
        ++candidates.passes[n.soft - 1];
        double& least = candidates.least[n.soft - 1];
        least = std::min(least, n.second_cost);
      }
    }
  }
  // Queues node `o` at its valid_until unless an entry comes due earlier.
  void Queue(uint64_t o) {
    Node& n = nodes[o];
    if (n.valid_until < n.queued) {
      n.queued = n.valid_until;
      expiries.Push(n.queued, o);
    }
  }
  // Appends to `due` the nodes whose decisions may have changed by `now`.
  void Due(absl::Time now, std::vector<uint64_t>& due) {
    popped.clear();
    expiries.PopDue(now, popped);
    for (const auto& [at, o] : popped) {
      if (o >= nodes.size() || !nodes[o].tracked || nodes[o].queued != at) continue;
      Node& n = nodes[o];
      n.queued = absl::InfiniteFuture();
      if (n.valid_until <= now) {
        due.push_back(o);
      } else {
        Queue(o);  // evaluated since, valid for longer
      }
    }
  }
  // Takes the first looks of one refresh.
  void Take(std::span<const uint64_t> ordinals, std::span<const NodeDecision> decisions) {
    for (size_t i = 0; i < ordinals.size(); ++i) {
      const uint64_t o = ordinals[i];
      if (o >= nodes.size()) nodes.resize(o + 1);
      Node& n = nodes[o];
      const NodeDecision& d = decisions[i];
      Leave(n);
      if (n.tracked && n.feasible) --feasible;
      n.tracked = true;
      n.feasible = d.feasible;
      if (n.feasible) ++feasible;
      n.soft = !IsSoftRejection(d)                   ? kNotSoft
               : d.reason.starts_with("in-flight") ? kSoftGuessed
                                                     : kSoft;
      n.second_known = false;
      Enter(n);
      n.valid_until = valid[i];
      Queue(o);
    }
    // Stale entries beyond a few per node: rebuilt from the nodes.
    if (expiries.size() > 4 * nodes.size() + 64) {
      expiries.Clear();
      for (uint64_t o = 0; o < nodes.size(); ++o) {
        if (nodes[o].tracked && nodes[o].queued != absl::InfiniteFuture()) {
          expiries.Push(nodes[o].queued, o);
        }
      }
    }
  }
};

ExtenderCore::VerdictTracker::VerdictTracker(bool incremental)
    : VerdictTracker(incremental, /*least_harm_state=*/false) {}
ExtenderCore::VerdictTracker::VerdictTracker(bool incremental, bool least_harm_state)
    : state_(std::make_unique<State>()) {
  state_->incremental = incremental;
  state_->least_harm_state = least_harm_state;
}
ExtenderCore::VerdictTracker::~VerdictTracker() = default;
ExtenderCore::VerdictTracker::VerdictTracker(VerdictTracker&&) noexcept = default;
ExtenderCore::VerdictTracker& ExtenderCore::VerdictTracker::operator=(VerdictTracker&&) noexcept =
    default;

void ExtenderCore::Verdicts(const IncomingPod& pod, VerdictTracker& tracker,
                            VerdictChanges& changes) {
  impl_->TrackVerdicts(pod, *tracker.state_, changes);
}

ExtenderCore::VerdictRefreshStats ExtenderCore::verdict_refresh_stats() const {
  return {impl_->verdicts_full.load(std::memory_order_relaxed),
          impl_->verdicts_incremental.load(std::memory_order_relaxed),
          impl_->verdicts_nodes.load(std::memory_order_relaxed),
          impl_->verdicts_nodes_changed.load(std::memory_order_relaxed),
          impl_->verdicts_nodes_expired.load(std::memory_order_relaxed),
          impl_->verdicts_nodes_regiven.load(std::memory_order_relaxed),
          impl_->reports_unchanged.load(std::memory_order_relaxed)};
}

void ExtenderCore::Impl::TrackVerdicts(const IncomingPod& pod, VerdictTracker::State& st,
                                       VerdictChanges& changes) {
  using State = VerdictTracker::State;
  const absl::Time now = clock.Now();
  ledger.Expire(now);
  Prepared prepared = Prepare(pod, now, /*teach=*/false);
  const PodRequest& req = prepared.req;
  // The pinned guess RefuseWherePinnedGuessFits would weigh: while it is the
  // same one, its refusals are a node's own (they change with the node).
  std::string guess;
  if (req.exclusive_cpus && config.numa_admission && config.interference.enabled &&
      config.interference.pinned_guesses_elsewhere) {
    if (std::optional<PinnedGuess> g = LargestPinnedGuess(pod.uid, now)) {
      guess = absl::StrCat(g->uid, "@", g->node, "@", absl::ToUnixNanos(g->expires_at));
    }
  }
  changes.full = false;
  changes.names.clear();
  changes.ordinals.clear();
  changes.decisions.clear();
  changes.second.clear();
  changes.least_harm = {};
  // First looks only: the least-harm fallback is applied below, from what
  // the tracker keeps of every node.
  Tracking tracking{.now = now,
                    .prepared = &prepared,
                    .reuse = &st.reuse,
                    .blind_score = &changes.blind_score,
                    .valid_until = &st.valid};
  // What every refresh ends with.
  auto done = [&] {
    (changes.full ? verdicts_full : verdicts_incremental).fetch_add(1, std::memory_order_relaxed);
    verdicts_nodes.fetch_add(changes.names.size(), std::memory_order_relaxed);
    st.started = true;
    st.req = req;
    st.guess = std::move(guess);
  };
  // A table of the same request: only the nodes journalled since, and those
  // whose decisions have expired.
  st.changed.clear();
  std::optional<uint64_t> next;
  if (st.incremental && st.started && guess == st.guess && SameShape(req, st.req)) {
    next = state.ChangedSince(st.cursor, st.changed);
  }
  // Otherwise every node with telemetry; what changes meanwhile is
  // journalled after the cursor, taken before the fleet is read.
  if (!next) st.cursor = state.journal_end();
  const uint64_t mark = ++st.refreshes;
  // Entries are never freed before the core: their names outlive the View.
  const ClusterState::View view = state.view();
  const std::span<ClusterState::Entry* const> entries = view.entries();
  size_t journalled = st.changed.size();
  if (next) {
    st.cursor = *next;
    st.Due(now, st.changed);
  } else {
    for (State::Node& n : st.nodes) n = State::Node{.mark = n.mark};
    st.feasible = 0;
    st.passed = 0;
    st.candidates = {};
    st.expiries.Clear();
    for (const ClusterState::Entry* entry : entries) st.changed.push_back(entry->ordinal);
    journalled = st.changed.size();
    changes.full = true;
  }
  uint64_t from_journal = 0;
  for (size_t i = 0; i < st.changed.size(); ++i) {
    const uint64_t o = st.changed[i];
    if (o >= entries.size()) continue;
    if (o >= st.nodes.size()) st.nodes.resize(o + 1);
    if (st.nodes[o].mark == mark) continue;
    st.nodes[o].mark = mark;
    // Bookings on a node without telemetry: no verdict (as in a full table).
    if (entries[o]->snapshot.load() == nullptr) continue;
    changes.names.push_back(entries[o]->name);
    changes.ordinals.push_back(o);
    if (i < journalled) ++from_journal;
  }
  verdicts_nodes_changed.fetch_add(from_journal, std::memory_order_relaxed);
  verdicts_nodes_expired.fetch_add(changes.names.size() - from_journal, std::memory_order_relaxed);
  Decide("placement.verdicts", pod, changes.names, changes.decisions, /*book=*/false,
         /*teach=*/false, &tracking);
  st.Take(changes.ordinals, changes.decisions);

  // The least-harm fallback, as Decide applies it to a whole fleet: when no
  // node's first look passes, the nodes refused softly get a second look
  // with the soft filters off, those not refused for a guessed booking
  // first, and the least harmful of that group (within least_harm_margin of
  // its least) pass. Second looks are kept per node like first looks, so
  // only the changed nodes take one; a node whose pass changes with the
  // group's least without a change of its own is given again.
  const bool falling_back = config.least_harm_fallback && st.feasible == 0;
  if (st.least_harm_state) {
    // The reader applies the fallback: each softly refused node that changed
    // carries its second look, and the refresh the fallback's state.
    changes.second.assign(changes.names.size(), {});
    if (!config.least_harm_fallback) return done();
  } else if (!falling_back && st.passed == 0) {
    return done();
  }
  DecisionReuse::Table* harm_reuse = &st.least_harm.ForKeeping(req);
  uint64_t harm_reused = 0, harm_evaluated = 0;
  // What every refresh that took second looks ends with.
  auto finish = [&] {
    if (harm_reused > 0) least_harm_reused.fetch_add(harm_reused, std::memory_order_relaxed);
    if (harm_evaluated > 0) {
      least_harm_evaluated.fetch_add(harm_evaluated, std::memory_order_relaxed);
    }
    done();
  };
  NodeDecision scratch;
  // Node `o`'s second look, kept in the node (its pass and cost; nothing
  // else of it is copied); null without telemetry.
  auto look_again = [&](uint64_t o, State::Node& n) -> const NodeDecision* {
    const NodeSnapshot* snapshot = entries[o]->snapshot.load();
    if (snapshot == nullptr) return nullptr;
    const NodeDecision& look = SecondLook(req, *entries[o], *snapshot, now, harm_reuse, scratch,
                                          harm_reused, harm_evaluated);
    st.Leave(n);
    n.second_known = true;
    n.second_feasible = look.feasible;
    n.second_cost = look.cost;
    st.Enter(n);
    return &look;
  };
  if (st.least_harm_state) {
    for (size_t i = 0; i < changes.ordinals.size(); ++i) {
      State::Node& n = st.nodes[changes.ordinals[i]];
      if (n.soft == State::kNotSoft) continue;
      const NodeDecision* look = look_again(changes.ordinals[i], n);
      if (look != nullptr && look->feasible) {
        changes.second[i] = {.group = n.soft,
                             .score = std::clamp(look->score, 0, 10),
                             .harm_micros = HarmMicros(look->cost)};
      }
    }
  }
  // The group that passes (kSoft when any of its second looks passes, else
  // kSoftGuessed) and the least cost in it.
  uint8_t group = State::kNotSoft;
  double least = std::numeric_limits<double>::infinity();
  bool any_soft = false, any_guessed = false;
  double least_soft = least, least_guessed = least;
  if (falling_back && st.candidates.Exact()) {
    // Every candidate's second look is known: each group's least as kept.
    any_soft = st.candidates.passes[State::kSoft - 1] > 0;
    any_guessed = st.candidates.passes[State::kSoftGuessed - 1] > 0;
    if (any_soft) least_soft = st.candidates.least[State::kSoft - 1];
    if (any_guessed) least_guessed = st.candidates.least[State::kSoftGuessed - 1];
  } else if (falling_back) {
    for (uint64_t o = 0; o < st.nodes.size() && o < entries.size(); ++o) {
      State::Node& n = st.nodes[o];
      if (!n.tracked || n.soft == State::kNotSoft) continue;
      if (!n.second_known && look_again(o, n) == nullptr) continue;
      if (!n.second_feasible) continue;
      if (n.soft == State::kSoft) {
        any_soft = true;
        least_soft = std::min(least_soft, n.second_cost);
      } else {
        any_guessed = true;
        least_guessed = std::min(least_guessed, n.second_cost);
      }
    }
    // What the visit found is each group's least (NaN costs aside).
    st.candidates.least = {least_soft, least_guessed};
    st.candidates.least_stale = false;
  }
  if (falling_back) {
    if (any_soft) {
      group = State::kSoft;
      least = least_soft;
    } else if (any_guessed) {
      group = State::kSoftGuessed;
      least = least_guessed;
    }
  }
  const uint64_t bound = LeastHarmBoundMicros(least, config);
  if (st.least_harm_state) {
    // A group is chosen only while falling back.
    if (group != State::kNotSoft) {
      changes.least_harm = {.active = true, .group = group, .bound_micros = bound};
    }
    return finish();
  }
  auto passes = [&](const State::Node& n) {
    return falling_back && n.tracked && n.soft == group && group != State::kNotSoft &&
           n.second_known && n.second_feasible && HarmMicros(n.second_cost) <= bound;
  };
  // Nodes whose pass flips though they did not change: their first looks
  // again (reused), to be given below.
  st.more_names.clear();
  st.more_ordinals.clear();
  for (uint64_t o = 0; o < st.nodes.size() && o < entries.size(); ++o) {
    const State::Node& n = st.nodes[o];
    if (!n.tracked || n.mark == mark || passes(n) == n.passed) continue;
    st.more_names.push_back(entries[o]->name);
    st.more_ordinals.push_back(o);
  }
  if (!st.more_names.empty()) {
    verdicts_nodes_regiven.fetch_add(st.more_names.size(), std::memory_order_relaxed);
    tracking.valid_until = nullptr;  // their expiries are queued already
    Decide("placement.verdicts", pod, st.more_names, st.more, /*book=*/false, /*teach=*/false,
           &tracking);
    changes.names.insert(changes.names.end(), st.more_names.begin(), st.more_names.end());
    changes.ordinals.insert(changes.ordinals.end(), st.more_ordinals.begin(),
                            st.more_ordinals.end());
    changes.decisions.insert(changes.decisions.end(), st.more.begin(), st.more.end());
  }
  for (size_t i = 0; i < changes.ordinals.size(); ++i) {
    const uint64_t o = changes.ordinals[i];
    State::Node& n = st.nodes[o];
    const bool pass = passes(n);
    if (pass != n.passed) {
      pass ? ++st.passed : --st.passed;
      n.passed = pass;
    }
    if (!pass) continue;
    const NodeSnapshot* snapshot = entries[o]->snapshot.load();
    if (snapshot == nullptr) continue;
    NodeDecision& given = changes.decisions[i];
    const NodeDecision& look = SecondLook(req, *entries[o], *snapshot, now, harm_reuse, given,
                                          harm_reused, harm_evaluated);
    if (&look != &given) given = look;
  }
  finish();
}

uint64_t ExtenderCore::BookingsGeneration(std::string_view node) const {
  const ClusterState::View view = impl_->state.view();
  const ClusterState::Entry* entry = view.Find(node);
  const BookingList* bookings = entry != nullptr ? entry->bookings.load() : nullptr;
  return bookings != nullptr ? bookings->generation : 0;
}

void ExtenderCore::FilterNodes(const IncomingPod& pod, std::span<const std::string_view> nodes,
                               bool teach, std::vector<NodeDecision>& out) {
  impl_->Decide("placement.filter", pod, nodes, out, /*book=*/false, teach);
}

void ExtenderCore::Score(const IncomingPod& pod, std::span<const std::string_view> nodes,
                         bool teach, std::vector<NodeDecision>& out) {
  impl_->Decide("placement.score", pod, nodes, out, /*book=*/false, teach);
}

bool ExtenderCore::Reserve(const IncomingPod& pod, std::string_view node, bool teach,
                           NodeDecision* decision) {
  return impl_->Reserve(pod, node, teach, decision);
}

bool ExtenderCore::Unreserve(std::string_view pod_uid, std::string_view node) {
  return impl_->Unreserve(pod_uid, node);
}

bool ExtenderCore::Impl::Reserve(const IncomingPod& pod, std::string_view node, bool teach,
                                 NodeDecision* decision_out) {
  const absl::Time now = clock.Now();
  ledger.Expire(now);
  Prepared prepared = Prepare(pod, now, teach);
  NodeDecision decision;
  bool booked = false;
  {
    const ClusterState::View view = state.view();
    const ClusterState::Entry* entry = view.Find(node);
    const NodeSnapshot* snapshot = entry != nullptr ? entry->snapshot.load() : nullptr;
    if (snapshot != nullptr) {
      // The node's other bookings count; this pod's own (an earlier Reserve
      // or prioritize of the same UID) does not: it is the one being placed.
      const BookingList* booked_here = entry->bookings.load();
      std::span<const Booking> others;
      std::vector<Booking> without_self;
      if (booked_here != nullptr) {
        others = *booked_here;
        if (std::any_of(booked_here->begin(), booked_here->end(),
                        [&](const Booking& b) { return b.pod_uid == pod.uid; })) {
          for (const Booking& b : *booked_here) {
            if (b.pod_uid != pod.uid) without_self.push_back(b);
          }
          others = without_self;
        }
      }
      EvaluateNode(prepared.req, &snapshot->profile, others, now, config, decision);
      // The scheduler placed it here whatever the soft filters said (the
      // least-harm fallback, another profile's choice): book where the
      // kubelet will put it, which a soft refusal leaves unpredicted.
      if (IsSoftRejection(decision)) {
        EvaluateNodeLeastHarmWith(prepared.req, &snapshot->profile, others, now,
                                  least_harm_config, decision);
      }
      Booking booking = MakeBooking(pod.uid, prepared.req, decision, now + config.booking_ttl);
      booking.exact = true;
      booked = ledger.Book(node, std::move(booking));
      ForgetPinnedGuess(pod.uid);
    } else {
      EvaluateNode(prepared.req, nullptr, {}, now, config, decision);
      ledger.ReleasePod(/*node=*/"", pod.uid);  // the pod goes here, not where it was booked
    }
  }
  std::shared_ptr<LoggedDecision> logged = log.NewRecord();
  logged->at = now;
  logged->verb = "placement.reserve";
  logged->pod_uid = pod.uid;
  logged->pod_namespace = pod.namespace_name;
  logged->pod_name = pod.name;
  logged->contention_class = prepared.req.contention_class;
  logged->class_source = prepared.req.source;
  logged->AddNode(node, decision);
  if (booked) logged->booked_node = std::string(node);
  logged->workload = std::move(prepared.key_text);
  logged->prediction = prepared.req.prediction;
  log.Record(std::move(logged));
  if (decision_out != nullptr) *decision_out = std::move(decision);
  return booked;
}

bool ExtenderCore::Impl::Unreserve(std::string_view pod_uid, std::string_view node) {
  const absl::Time now = clock.Now();
  ledger.Expire(now);
  std::optional<Booking> released = ledger.ReleasePod(node, pod_uid);
  ForgetPinnedGuess(pod_uid);
  std::shared_ptr<LoggedDecision> logged = log.NewRecord();
  logged->at = now;
  logged->verb = "placement.unreserve";
  logged->pod_uid = std::string(pod_uid);
  if (released.has_value()) {
    // Booking::pod is "namespace/name".
    const size_t slash = released->pod.find('/');
    logged->pod_namespace = released->pod.substr(0, slash);
    if (slash != std::string::npos) logged->pod_name = released->pod.substr(slash + 1);
    logged->contention_class = released->contention_class;
    logged->released_node = std::string(node);
  }
  log.Record(std::move(logged));
  return released.has_value();
}

void ExtenderCore::Impl::RememberPinnedGuess(std::string_view uid, std::string_view node,
                                             const PodRequest& req, absl::Time expires_at) {
  std::lock_guard<std::mutex> lock(pinned_guesses_mu);
  std::erase_if(pinned_guesses, [&](const PinnedGuess& g) { return g.uid == uid; });
  if (pinned_guesses.size() >= kMaxPinnedGuesses) pinned_guesses.pop_front();
  pinned_guesses.push_back({std::string(uid), std::string(node), req, expires_at});
}

void ExtenderCore::Impl::ForgetPinnedGuess(std::string_view uid) {
  std::lock_guard<std::mutex> lock(pinned_guesses_mu);
  std::erase_if(pinned_guesses, [&](const PinnedGuess& g) { return g.uid == uid; });
}

std::optional<ExtenderCore::Impl::PinnedGuess> ExtenderCore::Impl::LargestPinnedGuess(
    std::string_view uid, absl::Time now) {
  std::lock_guard<std::mutex> lock(pinned_guesses_mu);
  std::erase_if(pinned_guesses, [&](const PinnedGuess& g) { return g.expires_at <= now; });
  const PinnedGuess* largest = nullptr;
  for (const PinnedGuess& g : pinned_guesses) {
    if (g.uid == uid) continue;
    if (largest == nullptr || g.req.cpus > largest->req.cpus) largest = &g;
  }
  if (largest == nullptr) return std::nullopt;
  return *largest;
}

void ExtenderCore::Impl::RefuseWherePinnedGuessFits(const PodRequest& req, std::string_view uid,
                                                    std::span<const std::string_view> nodes,
                                                    const ClusterState::View& view, absl::Time now,
                                                    std::vector<NodeDecision>& out) {
  const std::optional<PinnedGuess> guess = LargestPinnedGuess(uid, now);
  if (!guess) return;
  std::vector<Booking> with_guess;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeDecision& d = out[i];
    if (!d.feasible || d.exclusive_cpus <= 0 || nodes[i] == guess->node) continue;
    const ClusterState::Entry* entry = view.Find(nodes[i], NodeNameHash(nodes[i]));
    const NodeSnapshot* snapshot = entry != nullptr ? entry->snapshot.load() : nullptr;
    if (snapshot == nullptr) continue;
    const BookingList* booked = entry->bookings.load();
    const std::span<const Booking> bookings =
        booked ? std::span<const Booking>(*booked) : std::span<const Booking>();
    if (std::any_of(bookings.begin(), bookings.end(),
                    [&](const Booking& b) { return b.pod_uid == guess->uid; })) {
      continue;
    }
    // Where the kubelet would pin the guessed pod here, had it come here.
    NodeDecision there;
    EvaluateNodeLeastHarmWith(guess->req, &snapshot->profile, bookings, now, least_harm_config,
                              there, booked ? &booked->fold : nullptr);
    if (!there.feasible || there.exclusive_cpus <= 0) continue;  // it could not be here
    with_guess.assign(bookings.begin(), bookings.end());
    Booking phantom = MakeBooking(guess->uid, guess->req, there, guess->expires_at);
    phantom.llc_bytes = 0;  // its CPUs only: its load is counted where it was booked
    phantom.membw_bytes_per_second = 0;
    with_guess.push_back(std::move(phantom));
    NodeDecision trial;
    EvaluateNode(req, &snapshot->profile, with_guess, now, config, trial);
    if (trial.feasible || !trial.reason.starts_with("in-flight")) continue;
    d.feasible = false;
    d.score = 0;
    d.reason = absl::StrCat("in-flight: pinned pod ", guess->req.pod, " (", guess->req.cpus,
                            " CPUs, guessed on ", guess->node, ") may be here: ",
                            Av(std::string_view(trial.reason).substr(11)));
  }
}

void ExtenderCore::ExpectLargeRequest() {
  if (impl_->pool != nullptr) impl_->pool->Prewake();
}

NodeSummary ExtenderCore::Impl::Summarize(const ClusterState::Entry& entry,
                                          const NodeSnapshot& snap, absl::Time now,
                                          bool with_pods) const {
  const tv1::NodeReport& r = snap.report;
  const NodeProfile& p = snap.profile;
  NodeSummary s;
  s.name = entry.name;
  s.telemetry_age = std::max(absl::ZeroDuration(), now - p.received_at);
  s.confidence = Confidence(p, now, config);
  s.sequence = r.sequence();
  s.agent_version = r.agent_version();
  const tv1::Capabilities& c = r.capabilities();
  s.capabilities = {
      {"resctrl_occupancy", CapabilityText(c.resctrl_occupancy())},
      {"resctrl_mbm_total", CapabilityText(c.resctrl_mbm_total())},
      {"resctrl_mbm_local", CapabilityText(c.resctrl_mbm_local())},
      {"perf_hardware_counters", CapabilityText(c.perf_hardware_counters())},
      {"psi", CapabilityText(c.psi())},
      {"kubelet_pod_resources", CapabilityText(c.kubelet_pod_resources())},
      {"cpu_manager_state", CapabilityText(c.cpu_manager_state())},
      {"pod_metadata", CapabilityText(c.pod_metadata())},
      {"peak_membw", CapabilityText(c.peak_membw())},
  };
  if (c.has_rmids_free()) s.capabilities["rmids_free"] = absl::StrCat(c.rmids_free());
  if (c.has_rmids_total()) s.capabilities["rmids_total"] = absl::StrCat(c.rmids_total());
  s.cpu_manager_policy = r.kubelet().cpu_manager_policy();
  s.topology_manager_policy = r.kubelet().topology_manager_policy();
  double contention = 0;
  for (const L3Profile& l3 : p.l3) {
    L3DomainSummary d;
    d.id = l3.id;
    d.numa_node = p.numa[l3.numa_index].id;
    d.size_bytes = static_cast<uint64_t>(l3.size_bytes);
    // What the node measured; the pressure also counts unmeasured pods' predictions.
    for (const tv1::L3Domain& in : r.topology().l3_domains()) {
      if (in.id() == l3.id && in.has_occupancy_bytes()) d.occupancy_bytes = in.occupancy_bytes();
    }
    d.pressure = l3.size_bytes > 0 ? l3.occupancy_bytes / l3.size_bytes : 0;
    contention = std::max(contention, d.pressure);
    s.l3_domains.push_back(d);
  }
  for (size_t n = 0; n < p.numa.size(); ++n) {
    const NumaProfile& numa = p.numa[n];
    const tv1::NumaNode& in = r.topology().numa_nodes(static_cast<int>(n));
    NumaNodeSummary d;
    d.id = numa.id;
    d.cpus = in.cpus();
    d.memory_bytes = in.memory_bytes();
    d.peak_membw_bytes_per_second = static_cast<uint64_t>(numa.peak_membw);
    d.peak_membw_source =
        in.has_peak_membw_bytes_per_second()
            ? (in.peak_membw_source().empty() ? "reported" : in.peak_membw_source())
            : "default (extender config)";
    if (in.has_membw_bytes_per_second()) {
      d.membw_bytes_per_second = in.membw_bytes_per_second();
    } else if (numa.membw_measured) {
      d.membw_bytes_per_second = static_cast<uint64_t>(numa.membw);
    }
    d.membw_utilisation = numa.peak_membw > 0 ? numa.membw / numa.peak_membw : 0;
    contention = std::max(contention, d.membw_utilisation);
    d.free_exclusive_cpus = static_cast<uint32_t>(std::max(0, numa.free_exclusive_cpus));
    d.free_memory_bytes = static_cast<uint64_t>(std::max<int64_t>(0, numa.free_memory_bytes));
    s.numa_nodes.push_back(std::move(d));
  }
  s.contention_score = std::min(1.0, contention);
  for (int i = 0; i < r.pods_size() && static_cast<size_t>(i) < p.pods.size(); ++i) {
    const tv1::PodReport& pod = r.pods(i);
    const ResidentPod& resident = p.pods[i];
    ++s.pods_by_class[std::string(ContentionClassName(resident.contention_class))];
    if (resident.aggressor) s.aggressors.push_back(absl::StrCat(pod.namespace_(), "/", pod.name()));
    if (!with_pods) continue;
    PodSummary ps;
    ps.uid = pod.uid();
    ps.namespace_name = pod.namespace_();
    ps.name = pod.name();
    ps.qos_class = QosClassName(QosClassOf(pod.qos_class()));
    ps.contention_class = std::string(ContentionClassName(resident.contention_class));
    ps.class_source = std::string(ClassSourceName(resident.source));
    ps.aggressor = resident.aggressor;
    ps.exclusive_cpus = pod.exclusive_cpus();
    if (pod.has_cpu_usage_millicores()) ps.cpu_usage_millicores = pod.cpu_usage_millicores();
    if (pod.has_llc_occupancy_bytes()) ps.llc_occupancy_bytes = pod.llc_occupancy_bytes();
    if (pod.has_membw_total_bytes_per_second()) {
      ps.membw_total_bytes_per_second = pod.membw_total_bytes_per_second();
    }
    if (pod.has_membw_local_bytes_per_second()) {
      ps.membw_local_bytes_per_second = pod.membw_local_bytes_per_second();
    }
    if (pod.has_ipc()) ps.ipc = pod.ipc();
    if (pod.has_llc_misses_per_kilo_instructions()) {
      ps.llc_misses_per_kilo_instructions = pod.llc_misses_per_kilo_instructions();
    }
    for (const auto& [k, v] : pod.unavailable()) ps.unavailable[k] = v;
    s.pods.push_back(std::move(ps));
  }
  if (const BookingList* booked = entry.bookings.load()) {  // under the caller's View
    for (const Booking& b : *booked) s.bookings += b.expires_at > now ? 1 : 0;
  }
  return s;
}

std::vector<NodeSummary> ExtenderCore::Nodes() const {
  const absl::Time now = impl_->clock.Now();
  std::vector<NodeSummary> out;
  const ClusterState::View view = impl_->state.view();
  out.reserve(view.entries().size());
  for (const ClusterState::Entry* entry : view.entries()) {
    if (const NodeSnapshot* snap = entry->snapshot.load()) {
      out.push_back(impl_->Summarize(*entry, *snap, now, /*with_pods=*/false));
    }
  }
  std::sort(out.begin(), out.end(), [](const NodeSummary& a, const NodeSummary& b) {
    return a.contention_score != b.contention_score ? a.contention_score > b.contention_score
                                                    : a.name < b.name;
  });
  return out;
}

std::optional<NodeSummary> ExtenderCore::Node(std::string_view name) const {
  const ClusterState::View view = impl_->state.view();
  const ClusterState::Entry* entry = view.Find(name);
  if (entry == nullptr) return std::nullopt;
  const NodeSnapshot* snap = entry->snapshot.load();
  if (snap == nullptr) return std::nullopt;
  return impl_->Summarize(*entry, *snap, impl_->clock.Now(), /*with_pods=*/true);
}

std::optional<tv1::NodeReport> ExtenderCore::Report(std::string_view name) const {
  const ClusterState::View view = impl_->state.view();
  const ClusterState::Entry* entry = view.Find(name);
  const NodeSnapshot* snap = entry != nullptr ? entry->snapshot.load() : nullptr;
  if (snap == nullptr) return std::nullopt;
  return snap->report;
}

void ExtenderCore::ForEachReport(const std::function<void(const tv1::NodeReport&)>& visit) const {
  const ClusterState::View view = impl_->state.view();
  for (const ClusterState::Entry* entry : view.entries()) {
    if (const NodeSnapshot* snap = entry->snapshot.load()) visit(snap->report);
  }
}

void ExtenderCore::PodClasses(std::string_view node,
                              google::protobuf::RepeatedPtrField<tv1::PodClass>* out) const {
  const ClusterState::View view = impl_->state.view();
  const ClusterState::Entry* entry = view.Find(node);
  const NodeSnapshot* snap = entry != nullptr ? entry->snapshot.load() : nullptr;
  if (snap == nullptr) return;
  const auto& pods = snap->report.pods();
  const size_t n = std::min<size_t>(pods.size(), snap->profile.pods.size());
  out->Reserve(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    const ResidentPod& resident = snap->profile.pods[i];
    tv1::PodClass* c = out->Add();
    c->set_uid(pods[static_cast<int>(i)].uid());
    c->set_workload_class(std::string(ContentionClassName(resident.contention_class)));
    c->set_source(std::string(ClassSourceName(resident.source)));
  }
}

size_t ExtenderCore::MarkAntagonists(const std::set<std::string>& workloads) {
  size_t marked = 0;
  for (const std::string& key : workloads) {
    marked += impl_->workloads.MarkAntagonist(
                  key, "named repeatedly as an antagonist by interference attribution",
                  impl_->clock.Now())
                  ? 1
                  : 0;
  }
  return marked;
}

std::vector<DecisionRecord> ExtenderCore::Decisions(std::string_view pod, size_t limit) const {
  std::vector<DecisionRecord> out;
  for (const std::shared_ptr<const LoggedDecision>& d : impl_->log.Find(pod, limit)) {
    DecisionRecord r;
    r.at = d->at;
    r.verb = d->verb;
    r.pod_uid = d->pod_uid;
    r.pod = absl::StrCat(d->pod_namespace, "/", d->pod_name);
    r.contention_class = std::string(ContentionClassName(d->contention_class));
    r.class_source = std::string(ClassSourceName(d->class_source));
    r.nodes.reserve(d->node_count());
    for (size_t i = 0; i < d->node_count(); ++i) {
      r.nodes.push_back({std::string(d->node(i)), d->decision(i)});
    }
    r.candidates = d->candidates;
    r.booked_node = d->booked_node;
    r.released_node = d->released_node;
    r.workload = d->workload;
    r.prediction = d->prediction;
    out.push_back(std::move(r));
  }
  return out;
}

size_t ExtenderCore::node_count() const {
  size_t n = 0;
  const ClusterState::View view = impl_->state.view();
  for (const ClusterState::Entry* entry : view.entries()) {
    n += entry->snapshot.load() != nullptr ? 1 : 0;
  }
  return n;
}

absl::Status ExtenderCore::LoadState(const std::string& path) {
  PodRegistry::StateSections sections;
  if (absl::Status s = impl_->registry.Load(path, &sections); !s.ok()) return s;
  if (auto fleet = sections.find("fleetNodes"); fleet != sections.end()) {
    uint64_t nodes = 0;
    if (!absl::SimpleAtoi(fleet->second, &nodes)) {
      return absl::DataLossError(
          absl::StrCat("state file ", path, ": fleetNodes is not a count: ", fleet->second));
    }
    impl_->nodes_in_loaded_state = static_cast<size_t>(nodes);
  }
  auto it = sections.find("workloads");
  if (it == sections.end()) return absl::OkStatus();  // a state file from before profiles
  if (absl::Status s = impl_->workloads.FromJson(it->second); !s.ok()) {
    return absl::DataLossError(absl::StrCat("state file ", path, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status ExtenderCore::SaveState(const std::string& path) const {
  return impl_->registry.Save(path, {{"workloads", impl_->workloads.ToJson()},
                                     {"fleetNodes", absl::StrCat(node_count())}});
}

size_t ExtenderCore::nodes_in_loaded_state() const { return impl_->nodes_in_loaded_state; }

std::vector<WorkloadView> ExtenderCore::Workloads() const {
  return impl_->workloads.List(impl_->clock.Now(), impl_->config);
}

std::optional<WorkloadView> ExtenderCore::Workload(std::string_view key) const {
  return impl_->workloads.Get(key, impl_->clock.Now(), impl_->config);
}

size_t ExtenderCore::workload_profiles() const { return impl_->workloads.size(); }

size_t ExtenderCore::workload_capacity() const { return impl_->workloads.capacity(); }

uint64_t ExtenderCore::workload_predictions_used() const {
  return impl_->workloads.predictions_used();
}

IngestStats ExtenderCore::ingest_stats() const {
  IngestStats s;
  s.reports_accepted = impl_->accepted.load(std::memory_order_relaxed);
  s.reports_rejected = impl_->rejected.load(std::memory_order_relaxed);
  return s;
}

size_t ExtenderCore::bookings() const { return impl_->ledger.size(); }

uint64_t ExtenderCore::bookings_dropped_node_full() const {
  return impl_->ledger.dropped_node_full();
}

uint64_t ExtenderCore::bookings_dropped_full() const { return impl_->ledger.dropped_full(); }

size_t ExtenderCore::remembered_pods() const { return impl_->registry.size(); }

uint64_t ExtenderCore::foreign_pod_claims() const {
  return impl_->foreign_claims.load(std::memory_order_relaxed);
}

uint64_t ExtenderCore::least_harm_requests() const {
  return impl_->least_harm_requests.load(std::memory_order_relaxed);
}

ExtenderCore::ReuseStats ExtenderCore::reuse_stats() const {
  return {impl_->decisions_reused.load(std::memory_order_relaxed),
          impl_->decisions_evaluated.load(std::memory_order_relaxed),
          impl_->least_harm_reused.load(std::memory_order_relaxed),
          impl_->least_harm_evaluated.load(std::memory_order_relaxed)};
}

}  // namespace neighborly::extender
