#include "bench/fleet/fleet_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/fleet/agent_view.h"
#include "bench/fleet/default_scheduler.h"
#include "bench/fleet/kubelet_cpus.h"
#include "common/clock.h"
#include "extender/src/config/extender_config.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/http/decider.h"
#include "extender/src/http/extender_handler.h"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::fleet {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "placement_bench: %s\n", what.c_str());
  std::abort();
}

// The extender exactly as neighborly-extender builds it from its
// configuration (by default none, as without --config): the ModelConfig and
// the core's options main.cc derives from it. Learning from the scheduler is
// off there (no http.tls.clientCaFile); one evaluation thread (the default
// adds helpers only for requests of 1,024 names or more).
std::unique_ptr<extender::ExtenderCore> MakeExtender(const Clock& clock,
                                                     const std::string& config_file) {
  extender::CommandLine command_line;
  command_line.config_file = config_file;
  absl::StatusOr<extender::ExtenderConfig> config = extender::LoadExtenderConfig(command_line);
  if (!config.ok()) Die(std::string(config.status().message()));
  return std::make_unique<extender::ExtenderCore>(
      config->model, clock,
      extender::ExtenderCore::Options{
          .max_remembered_pods = static_cast<size_t>(config->state_max_pods),
          .max_workloads = static_cast<size_t>(config->state_max_workloads),
          .max_remembered_pods_per_node = static_cast<size_t>(config->state_max_pods_per_node),
          .learn_from_scheduler = !config->http.tls_client_ca_file.empty() ||
                                  config->state_learn_from_unauthenticated_scheduler,
          .evaluation_threads = 1,
          .reuse_decisions = config->reuse_decisions});
}

// The core, as the HTTP handler's Decider, keeping the last /prioritize
// decisions for --calibrate.
class RecordingDecider : public extender::Decider {
 public:
  explicit RecordingDecider(extender::ExtenderCore& core) : core_(core) {}
  void Filter(const extender::IncomingPod& pod, std::span<const std::string_view> nodes,
              std::vector<extender::NodeDecision>& out) override {
    last_pod_ = pod;
    core_.Filter(pod, nodes, out);
  }
  void Prioritize(const extender::IncomingPod& pod, std::span<const std::string_view> nodes,
                  std::vector<extender::NodeDecision>& out) override {
    core_.Prioritize(pod, nodes, out);
    last_.clear();
    for (size_t i = 0; i < nodes.size() && i < out.size(); ++i) {
      last_.emplace(std::string(nodes[i]), out[i]);
    }
  }
  // The pod of the last /filter (what WhatIf::exact_bookings reserves).
  const extender::IncomingPod& last_pod() const { return last_pod_; }
  const extender::NodeDecision* Last(const std::string& node) const {
    auto it = last_.find(node);
    return it == last_.end() ? nullptr : &it->second;
  }

 private:
  extender::ExtenderCore& core_;
  std::map<std::string, extender::NodeDecision> last_;
  extender::IncomingPod last_pod_;
};

enum class EventType { kReport, kFinish, kStart, kArrival, kRetry };

struct Event {
  double at_s;
  uint64_t order;
  EventType type;
  int index;
  bool operator>(const Event& o) const { return at_s != o.at_s ? at_s > o.at_s : order > o.order; }
};

struct PodState {
  const Workload* workload = nullptr;
  int replica = 0;
  PodIdentity identity;
  PodPhase phase = PodPhase::kPending;
  int node = -1;
  std::optional<ExclusiveCpus> exclusive;
  bool was_pending = false;
  bool topology_affinity_error = false;
  double slowdown_integral = 0;
  double running_s = 0;
  double slowdown_now = 1;
  double slowdown_at_start = 1;  // right after it started running
};

struct NodeState {
  const NodeSpec* spec = nullptr;
  std::unique_ptr<KubeletCpus> cpus;
  int64_t requested_millicores = 0;
  int64_t requested_memory_bytes = 0;
  std::vector<int> bound;    // starting or running
  std::vector<int> running;  // what the ground truth was last solved for
  NodeOutcome outcome;
  double solved_at_s = 0;
  double last_report_s = 0;
  uint64_t sequence = 0;
};

class Simulation {
 public:
  Simulation(const FleetSpec& fleet, const SimOptions& options)
      : fleet_(fleet),
        options_(options),
        rng_(fleet.seed * 7919 + 17),
        report_rng_(fleet.seed * 104729 + 3),
        host_rng_(fleet.seed) {
    for (const NodeSpec& spec : fleet.nodes) {
      NodeState n;
      n.spec = &spec;
      n.cpus = std::make_unique<KubeletCpus>(spec);
      nodes_.push_back(std::move(n));
      names_.push_back(spec.name);
    }
    for (const Arrival& a : fleet.arrivals) {
      PodState p;
      p.workload = &fleet.workloads[static_cast<size_t>(a.workload)];
      p.replica = a.replica;
      p.identity = IdentityOf(*p.workload, a.replica, fleet.seed);
      if (options.scorer == Scorer::kNeighborly && options.what_if.true_footprints) {
        AnnotateTrueFootprint(*p.workload, options.truth, p.identity);
      }
      pods_.push_back(std::move(p));
    }
    if (options.scorer == Scorer::kNeighborly) {
      core_ = MakeExtender(clock_, options.extender_config_file);
      recorder_ = std::make_unique<RecordingDecider>(*core_);
      handler_ = std::make_unique<extender::ExtenderHandler>(*recorder_, nullptr);
    }
  }

  FleetResult Run() {
    const double interval = options_.report_interval_s;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      // Agents were running before the first pod: each node's first report
      // lands at its own phase within the interval before time 0.
      const double first = -interval + report_rng_.Uniform(0, interval);
      nodes_[i].last_report_s = first - interval;
      Push(first, EventType::kReport, static_cast<int>(i));
    }
    for (size_t i = 0; i < fleet_.arrivals.size(); ++i) {
      Push(fleet_.arrivals[i].at_s, EventType::kArrival, static_cast<int>(i));
    }
    const double end_s = fleet_.last_arrival_s + options_.tail_s;
    for (double t = options_.retry_interval_s; t < end_s; t += options_.retry_interval_s) {
      Push(t, EventType::kRetry, 0);
    }
    now_s_ = -2 * interval;
    while (!events_.empty() && events_.top().at_s <= end_s) {
      const Event e = events_.top();
      events_.pop();
      AdvanceTo(e.at_s);
      switch (e.type) {
        case EventType::kArrival:
          if (!Schedule(e.index)) {
            pods_[static_cast<size_t>(e.index)].was_pending = true;
            pending_.push_back(e.index);
          }
          break;
        case EventType::kRetry:
          Retry();
          break;
        case EventType::kStart:
          Start(e.index);
          break;
        case EventType::kFinish:
          Finish(e.index);
          break;
        case EventType::kReport:
          Report(e.index);
          break;
      }
    }
    AdvanceTo(end_s);
    for (NodeState& n : nodes_) Accumulate(n);
    return Result();
  }

 private:
  void Push(double at_s, EventType type, int index) {
    events_.push(Event{at_s, order_++, type, index});
  }

  void AdvanceTo(double t) {
    if (t > now_s_) {
      clock_.Advance(absl::Seconds(t - now_s_));
      now_s_ = t;
    }
  }

  extender::ExtenderScratch& Scratch() {
    if (!scratch_) scratch_.emplace(handler_->scratch().Acquire());
    return **scratch_;
  }

  static std::string ArgsJson(const std::string& pod_json, const std::vector<size_t>& candidates,
                              const std::vector<std::string>& names) {
    std::string body = absl::StrCat(R"({"Pod":)", pod_json, R"(,"Nodes":null,"NodeNames":[)");
    for (size_t k = 0; k < candidates.size(); ++k) {
      absl::StrAppend(&body, k ? "," : "", "\"", names[candidates[k]], "\"");
    }
    return body + "]}";
  }

  nlohmann::json Call(extender::Verb verb, const std::string& body) {
    extender::ExtenderScratch& scratch = Scratch();
    scratch.body.Assign(body);
    scratch.body.Seal();
    const int status = handler_->Handle(verb, scratch);
    if (status != 200) Die(absl::StrCat("extender answered ", status, ": ", scratch.reply));
    return nlohmann::json::parse(scratch.reply);
  }

  std::vector<NodeLoad> Loads(const PodState& pod) const {
    std::vector<NodeLoad> loads(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& n = nodes_[i];
      loads[i].zone = n.spec->zone;
      loads[i].allocatable_millicores = n.spec->allocatable_millicores();
      loads[i].allocatable_memory_bytes = n.spec->allocatable_memory_bytes();
      loads[i].requested_millicores = n.requested_millicores;
      loads[i].requested_memory_bytes = n.requested_memory_bytes;
      for (int b : n.bound) {
        // The ReplicaSet's selector (app, pod-template-hash) matches its own pods.
        if (pods_[static_cast<size_t>(b)].workload == pod.workload) ++loads[i].matching_pods;
      }
    }
    return loads;
  }

  // One scheduling cycle; false when no node passes (the pod stays Pending).
  bool Schedule(int index) {
    PodState& pod = pods_[static_cast<size_t>(index)];
    const Workload& w = *pod.workload;
    const PodRequest request{.millicores = w.cpu_request_millicores,
                             .memory_bytes = w.memory_request_bytes,
                             .default_spread = !w.is_job};
    const std::vector<NodeLoad> loads = Loads(pod);
    std::vector<size_t> feasible = FeasibleNodes(loads, request);
    if (feasible.empty()) return false;
    std::string pod_json;
    std::vector<int64_t> oracle_scores;
    const WhatIf& what_if = options_.what_if;
    if (core_ && what_if.oracle_filter != OracleFilter::kNone) {
      // The extender still sees the request (its state moves as it would),
      // but the ground truth's filter decides. Its scores, relative to the
      // nodes it passes, are WhatIf::oracle_scores' too.
      pod_json = PodJson(w, pod.identity);
      Call(extender::Verb::kFilter, ArgsJson(pod_json, feasible, names_));
      std::vector<int64_t> truth_scores;
      std::vector<size_t> passed = OracleFilterAndScore(pod, feasible, truth_scores);
      if (what_if.oracle_scores) oracle_scores = std::move(truth_scores);
      extender_filtered_out_ += feasible.size() - passed.size();
      if (passed.empty()) {
        ++extender_refused_all_;
        return false;
      }
      feasible = std::move(passed);
    } else if (core_) {
      pod_json = PodJson(w, pod.identity);
      const nlohmann::json reply =
          Call(extender::Verb::kFilter, ArgsJson(pod_json, feasible, names_));
      std::vector<size_t> passed;
      if (reply.contains("NodeNames") && reply["NodeNames"].is_array()) {
        for (const auto& name : reply["NodeNames"]) {
          const std::string s = name.get<std::string>();
          for (size_t k : feasible) {
            if (names_[k] == s) passed.push_back(k);
          }
        }
      }
      extender_filtered_out_ += feasible.size() - passed.size();
      if (passed.empty()) {
        ++extender_refused_all_;
        return false;
      }
      feasible = std::move(passed);
    }
    if (options_.scorer == Scorer::kOracle) {
      feasible = OracleFilterAndScore(pod, feasible, oracle_scores);
      if (feasible.empty()) return false;
    } else if (core_ && what_if.oracle_scores && oracle_scores.empty() && feasible.size() > 1) {
      feasible = OracleScores(pod, feasible, oracle_scores);
      if (feasible.empty()) return false;
    }
    size_t chosen = feasible[0];
    if (feasible.size() > 1) {  // with one feasible node kube-scheduler skips scoring
      std::vector<int64_t> scores = ScoreNodes(loads, feasible, request);
      for (size_t k = 0; k < oracle_scores.size(); ++k) {
        scores[k] += ExtenderContribution(oracle_scores[k], options_.extender_weight);
      }
      if (core_ && !what_if.oracle_scores) {
        const nlohmann::json reply =
            Call(extender::Verb::kPrioritize, ArgsJson(pod_json, feasible, names_));
        for (const auto& host : reply) {
          const std::string s = host["Host"].get<std::string>();
          for (size_t k = 0; k < feasible.size(); ++k) {
            if (names_[feasible[k]] == s) {
              scores[k] +=
                  ExtenderContribution(host["Score"].get<int64_t>(), options_.extender_weight);
            }
          }
        }
      }
      const size_t pick = SelectHost(scores, host_rng_);
      chosen = feasible[pick];
      if (core_ && options_.calibrate) Calibrate(pod, feasible, pick);
    }
    if (core_ && what_if.exact_bookings) {
      core_->Reserve(recorder_->last_pod(), names_[chosen], /*teach=*/false);
    }
    Bind(index, static_cast<int>(chosen));
    return true;
  }

  // --calibrate: the extender's view of every candidate beside the truth's.
  void Calibrate(const PodState& pod, const std::vector<size_t>& feasible, size_t pick) {
    CalibrationDecision d;
    d.kind = pod.workload->kind;
    const std::vector<extender::DecisionRecord> records = core_->Decisions(pod.identity.uid, 1);
    if (!records.empty()) d.extender_class = records[0].contention_class;
    for (size_t k = 0; k < feasible.size(); ++k) {
      std::optional<CalibrationCandidate> t = TruthOf(pod, nodes_[feasible[k]]);
      if (!t) continue;  // the kubelet refuses it: no slowdown to compare
      if (const extender::NodeDecision* e = recorder_->Last(names_[feasible[k]])) {
        t->predicted_slowdown = e->predicted_slowdown;
        t->harm_to_incoming = e->harm_to_incoming;
        t->harm_to_residents = e->harm_to_residents;
        t->score = e->score;
      }
      if (k == pick) d.chosen = static_cast<int>(d.candidates.size());
      d.candidates.push_back(*t);
    }
    calibration_.push_back(std::move(d));
  }

  void Bind(int index, int node_index) {
    PodState& pod = pods_[static_cast<size_t>(index)];
    NodeState& node = nodes_[static_cast<size_t>(node_index)];
    const Workload& w = *pod.workload;
    pod.node = node_index;
    // The kubelet admits at once: a Guaranteed pod with integer CPUs on a
    // static node needs them on one NUMA node (single-numa-node).
    if (PinnedByKubelet(node, w)) {
      pod.exclusive = node.cpus->Allocate(static_cast<int>(w.cpu_request_millicores / 1000));
      if (!pod.exclusive) {
        pod.phase = PodPhase::kFailed;  // TopologyAffinityError; the pod is not retried
        pod.topology_affinity_error = true;
        return;
      }
    }
    node.requested_millicores += w.cpu_request_millicores;
    node.requested_memory_bytes += w.memory_request_bytes;
    node.bound.push_back(index);
    pod.phase = PodPhase::kStarting;
    if (core_ && options_.what_if.instant_telemetry) {
      Start(index);
      Report(node_index, /*periodic=*/false);
      return;
    }
    Push(now_s_ + rng_.Uniform(options_.min_startup_s, options_.max_startup_s), EventType::kStart,
         index);
  }

  void Retry() {
    std::vector<int> still;
    for (int index : pending_) {
      if (!Schedule(index)) still.push_back(index);
    }
    pending_ = std::move(still);
  }

  void Start(int index) {
    PodState& pod = pods_[static_cast<size_t>(index)];
    NodeState& node = nodes_[static_cast<size_t>(pod.node)];
    Accumulate(node);
    pod.phase = PodPhase::kRunning;
    node.running.push_back(index);
    Solve(node);
    pod.slowdown_at_start = pod.slowdown_now;
    if (pod.workload->is_job) Push(now_s_ + pod.workload->duration_s, EventType::kFinish, index);
  }

  void Finish(int index) {
    PodState& pod = pods_[static_cast<size_t>(index)];
    NodeState& node = nodes_[static_cast<size_t>(pod.node)];
    Accumulate(node);
    pod.phase = PodPhase::kSucceeded;
    std::erase(node.running, index);
    std::erase(node.bound, index);
    node.requested_millicores -= pod.workload->cpu_request_millicores;
    node.requested_memory_bytes -= pod.workload->memory_request_bytes;
    if (pod.exclusive) node.cpus->Release(pod.exclusive->cpus);
    Solve(node);
  }

  double UsageCores(const PodState& pod) const {
    return static_cast<double>(pod.workload->cpu_request_millicores) / 1000 *
           pod.workload->cpu_usage_fraction;
  }

  // Integrates each running pod's slowdown up to now.
  void Accumulate(NodeState& node) {
    const double dt = now_s_ - node.solved_at_s;
    for (size_t k = 0; k < node.running.size() && k < node.outcome.pods.size(); ++k) {
      PodState& p = pods_[static_cast<size_t>(node.running[k])];
      p.slowdown_integral += p.slowdown_now * dt;
      p.running_s += dt;
    }
    node.solved_at_s = now_s_;
  }

  bool PinnedByKubelet(const NodeState& node, const Workload& w) const {
    return node.spec->static_cpu_manager && w.guaranteed && w.cpu_request_millicores % 1000 == 0;
  }

  // Where `pod`'s threads and memory are on `node` (its exclusive CPUs, else
  // the shared pool as `shared` CPUs per socket).
  Placement PlacementOf(const PodState& pod, const NodeState& node,
                        const std::optional<ExclusiveCpus>& exclusive,
                        const std::vector<int>& shared) const {
    double shared_total = 0;
    for (int c : shared) shared_total += c;
    Placement pl;
    pl.behaviour = pod.workload->behaviour;
    pl.cpus = UsageCores(pod);
    pl.socket_share.assign(static_cast<size_t>(node.spec->shape.sockets), 0);
    if (exclusive) {
      pl.socket_share[static_cast<size_t>(exclusive->numa_node)] = 1;
    } else {
      for (size_t s = 0; s < shared.size(); ++s) pl.socket_share[s] = shared[s] / shared_total;
    }
    pl.memory_share = pl.socket_share;
    return pl;
  }

  void Solve(NodeState& node) {
    const std::vector<int> shared = node.cpus->SharedPoolPerSocket();
    std::vector<Placement> placements;
    for (int index : node.running) {
      const PodState& p = pods_[static_cast<size_t>(index)];
      placements.push_back(PlacementOf(p, node, p.exclusive, shared));
    }
    node.outcome = SolveNode(node.spec->shape, placements, options_.truth);
    for (size_t k = 0; k < node.running.size(); ++k) {
      pods_[static_cast<size_t>(node.running[k])].slowdown_now = node.outcome.pods[k].slowdown;
    }
    node.solved_at_s = now_s_;
  }

  // The oracle's harm of a node's pods: each latency-critical pod's slowdown
  // above 1, and a whole point for each above the 1.2x the benchmark counts;
  // a quarter of the others' (batch throughput counts, less).
  double Harm(const std::vector<const Workload*>& workloads, const NodeOutcome& out) const {
    double harm = 0;
    for (size_t k = 0; k < workloads.size(); ++k) {
      const double excess = out.pods[k].slowdown - 1;
      if (workloads[k]->kind == WorkloadKind::kLatencyCritical) {
        harm += excess + (out.pods[k].slowdown > 1.2 ? 1 : 0);
      } else {
        harm += 0.25 * excess;
      }
    }
    return harm;
  }

  // What the ground truth says of `pod` on `node`, with the bound pods
  // (starting ones too) where the kubelet put them; nullopt where the kubelet
  // would refuse it (exact NUMA admission).
  std::optional<CalibrationCandidate> TruthOf(const PodState& pod, const NodeState& node) const {
    KubeletCpus trial = *node.cpus;
    std::optional<ExclusiveCpus> exclusive;
    if (PinnedByKubelet(node, *pod.workload)) {
      exclusive = trial.Allocate(static_cast<int>(pod.workload->cpu_request_millicores / 1000));
      if (!exclusive) return std::nullopt;
    }
    std::vector<const Workload*> workloads;
    std::vector<Placement> before, after;
    const std::vector<int> shared_before = node.cpus->SharedPoolPerSocket();
    const std::vector<int> shared_after = trial.SharedPoolPerSocket();
    for (int b : node.bound) {
      const PodState& p = pods_[static_cast<size_t>(b)];
      workloads.push_back(p.workload);
      before.push_back(PlacementOf(p, node, p.exclusive, shared_before));
      after.push_back(PlacementOf(p, node, p.exclusive, shared_after));
    }
    const NodeOutcome out_before =
        before.empty() ? NodeOutcome() : SolveNode(node.spec->shape, before, options_.truth);
    const double harm_before = before.empty() ? 0 : Harm(workloads, out_before);
    workloads.push_back(pod.workload);
    after.push_back(PlacementOf(pod, node, exclusive, shared_after));
    const NodeOutcome out = SolveNode(node.spec->shape, after, options_.truth);
    CalibrationCandidate c;
    for (size_t j = 0; j < workloads.size(); ++j) {
      if (workloads[j]->kind != WorkloadKind::kLatencyCritical) continue;
      const bool resident = j + 1 < workloads.size();
      if (!Protected(*workloads[j], resident)) {
        if (resident) {
          c.true_resident_added = std::max(c.true_resident_added,
                                           out.pods[j].slowdown - out_before.pods[j].slowdown);
        }
        continue;
      }
      // A resident already past 1.2x is not the newcomer's doing unless it
      // makes it worse (the extender's minAddedSlowdown rule): else, once
      // every node held one such pod, no placement would count as within
      // and the oracle would stop protecting anyone.
      if (out.pods[j].slowdown > 1.2 &&
          (!resident || out_before.pods[j].slowdown <= 1.2 ||
           out.pods[j].slowdown - out_before.pods[j].slowdown > 0.01)) {
        c.true_within = false;
      }
      if (resident) {
        c.true_resident_added = std::max(c.true_resident_added,
                                         out.pods[j].slowdown - out_before.pods[j].slowdown);
      }
    }
    c.true_slowdown = out.pods.back().slowdown;
    c.true_added_harm = Harm(workloads, out) - harm_before;
    return c;
  }

  // WhatIf::blind_incoming's stand-ins for `pod`: up to kBlindSamples other
  // workloads of its kind, spread over the fleet's list, each as `pod`'s
  // workload with their behaviour. Empty (the pod judged as itself) without
  // the lever or without others of its kind. Once per scheduling cycle.
  std::vector<Workload> StandIns(const PodState& pod) const {
    std::vector<Workload> stand_ins;
    if (options_.scorer != Scorer::kNeighborly || !options_.what_if.blind_incoming) {
      return stand_ins;
    }
    std::vector<const Workload*> others;
    for (const Workload& w : fleet_.workloads) {
      if (w.kind == pod.workload->kind && &w != pod.workload) others.push_back(&w);
    }
    const size_t samples = std::min(others.size(), WhatIf::kBlindSamples);
    for (size_t i = 0; i < samples; ++i) {
      stand_ins.push_back(*pod.workload);
      stand_ins.back().behaviour = others[i * others.size() / samples]->behaviour;
    }
    return stand_ins;
  }

  // The truth the oracle and the oracle levers judge a candidate by:
  // TruthOf, or with stand-ins (StandIns) its average over them: the added
  // harm their mean, the candidate within where at least half of them are.
  std::optional<CalibrationCandidate> LeverTruthOf(const PodState& pod, const NodeState& node,
                                                   const std::vector<Workload>& stand_ins) const {
    if (stand_ins.empty()) return TruthOf(pod, node);
    std::optional<CalibrationCandidate> out;
    double harm = 0;
    size_t within = 0;
    for (const Workload& stand_in : stand_ins) {
      PodState as_other = pod;
      as_other.workload = &stand_in;
      std::optional<CalibrationCandidate> t = TruthOf(as_other, node);
      if (!t) return std::nullopt;  // the kubelet's refusal does not depend on behaviour
      harm += t->true_added_harm;
      within += t->true_within ? 1 : 0;
      if (!out) out = t;
    }
    out->true_added_harm = harm / static_cast<double>(stand_ins.size());
    out->true_within = 2 * within >= stand_ins.size();
    return out;
  }

  // Whether `within` checks this latency-critical pod: always for the
  // oracle; for WhatIf::oracle_filter, the pods of its scope.
  bool Protected(const Workload& w, bool resident) const {
    switch (options_.scorer == Scorer::kOracle ? OracleFilter::kAll
                                               : options_.what_if.oracle_filter) {
      case OracleFilter::kAnnotated:
        return w.annotated_latency_critical;
      case OracleFilter::kResidents:
        return resident;
      case OracleFilter::kIncoming:
        return !resident;
      case OracleFilter::kNone:
      case OracleFilter::kAll:
        break;
    }
    return true;
  }

  // WhatIf::oracle_scores: the candidates the kubelet admits, scored by the
  // ground truth's added harm relative to them (as the oracle scores).
  std::vector<size_t> OracleScores(const PodState& pod, const std::vector<size_t>& feasible,
                                   std::vector<int64_t>& scores) const {
    std::vector<size_t> admitted;
    std::vector<double> harm;
    const std::vector<Workload> stand_ins = StandIns(pod);
    for (size_t k : feasible) {
      if (std::optional<CalibrationCandidate> t = LeverTruthOf(pod, nodes_[k], stand_ins)) {
        admitted.push_back(k);
        harm.push_back(t->true_added_harm);
      }
    }
    RelativeScores(harm, scores);
    return admitted;
  }

  // 10 for the least harm of `harm`, 0 for the most, linear between.
  static void RelativeScores(const std::vector<double>& harm, std::vector<int64_t>& scores) {
    scores.clear();
    if (harm.empty()) return;
    const double best = *std::min_element(harm.begin(), harm.end());
    const double worst = *std::max_element(harm.begin(), harm.end());
    for (double h : harm) {
      scores.push_back(worst - best < 1e-3 ? kMaxExtenderPriority
                                           : std::llround(10 * (worst - h) / (worst - best)));
    }
  }

  // The oracle extender: the ground truth's added harm of `pod` on each
  // candidate (TruthOf). Refuses what the kubelet would refuse and, while
  // some candidate keeps every latency-critical pod within 1.2x, the
  // candidates that do not; scores 10 (least harm) .. 0 (most).
  std::vector<size_t> OracleFilterAndScore(const PodState& pod, const std::vector<size_t>& feasible,
                                           std::vector<int64_t>& scores) const {
    std::vector<size_t> admitted;
    std::vector<CalibrationCandidate> truth;
    const std::vector<Workload> stand_ins = StandIns(pod);
    for (size_t k : feasible) {
      std::optional<CalibrationCandidate> t = LeverTruthOf(pod, nodes_[k], stand_ins);
      if (!t) continue;
      admitted.push_back(k);
      truth.push_back(*t);
    }
    std::vector<size_t> passed;
    std::vector<double> passed_harm;
    const bool any_within = std::any_of(truth.begin(), truth.end(),
                                        [](const CalibrationCandidate& t) { return t.true_within; });
    for (size_t j = 0; j < admitted.size(); ++j) {
      if (!any_within || truth[j].true_within) {
        passed.push_back(admitted[j]);
        passed_harm.push_back(truth[j].true_added_harm);
      }
    }
    RelativeScores(passed_harm, scores);
    return passed;
  }

  // A node's report: the periodic one schedules the next; an extra one
  // (WhatIf::instant_telemetry) does not.
  void Report(int node_index, bool periodic = true) {
    NodeState& node = nodes_[static_cast<size_t>(node_index)];
    const double interval = options_.report_interval_s;
    if (periodic) {
      Push(now_s_ + interval * (1 + report_rng_.Uniform(-options_.report_jitter,
                                                        options_.report_jitter)),
           EventType::kReport, node_index);
    }
    if (!core_) {
      node.last_report_s = now_s_;
      return;
    }
    std::vector<MeasuredPod> measured;
    for (size_t k = 0; k < node.running.size(); ++k) {
      const PodState& p = pods_[static_cast<size_t>(node.running[k])];
      MeasuredPod m;
      m.workload = p.workload;
      m.identity = &p.identity;
      if (p.exclusive) {
        m.exclusive_cpus = p.exclusive->cpus;
        m.numa_node = p.exclusive->numa_node;
      }
      auto noisy = [&](double v) {
        return v *
               (1 + report_rng_.Uniform(-options_.measurement_noise, options_.measurement_noise));
      };
      m.cpu_usage_cores = noisy(UsageCores(p));
      m.truth = node.outcome.pods[k];
      m.truth.llc_occupancy_bytes = noisy(m.truth.llc_occupancy_bytes);
      m.truth.membw_bytes_per_second = noisy(m.truth.membw_bytes_per_second);
      m.truth.ipc = noisy(m.truth.ipc);
      m.truth.mpki = noisy(m.truth.mpki);
      measured.push_back(std::move(m));
    }
    absl::StatusOr<agent::Scenario> scenario =
        agent::ParseScenario(NodeScenarioJson(*node.spec, *node.cpus, measured), node.spec->name);
    if (!scenario.ok()) Die(std::string(scenario.status().message()));
    agent::SimulatedNode simulated(std::move(scenario->nodes[0]), boot_id_);
    telemetry::v1::NodeReport report =
        simulated.NextReport(clock_.Now() - absl::Seconds(now_s_ - node.last_report_s),
                             absl::Seconds(now_s_ - node.last_report_s));
    // The agent's sequence runs on across windows (a SimulatedNode per
    // window, since the pods change, would restart it at 1).
    report.set_sequence(++node.sequence);
    node.last_report_s = now_s_;
    if (absl::Status s = core_->Ingest(std::move(report)); !s.ok()) Die(std::string(s.message()));
    ++reports_;
  }

  // Each latency-critical pod past 1.2x at the end: since it started or
  // made so later, and whether the node's batch pods are why.
  VictimAttribution Attribute() const {
    VictimAttribution v;
    for (const NodeState& n : nodes_) {
      const std::vector<int> shared = n.cpus->SharedPoolPerSocket();
      std::vector<Placement> without_batch;
      std::vector<int> kept;
      for (int r : n.running) {
        const PodState& p = pods_[static_cast<size_t>(r)];
        if (p.workload->kind == WorkloadKind::kBatch) continue;
        without_batch.push_back(PlacementOf(p, n, p.exclusive, shared));
        kept.push_back(r);
      }
      if (kept.empty()) continue;
      const NodeOutcome out = SolveNode(n.spec->shape, without_batch, options_.truth);
      for (size_t k = 0; k < kept.size(); ++k) {
        const PodState& p = pods_[static_cast<size_t>(kept[k])];
        if (p.workload->kind != WorkloadKind::kLatencyCritical || p.slowdown_now <= 1.2) continue;
        ++(p.slowdown_at_start > 1.2 ? v.already_at_start : v.made_later);
        ++(out.pods[k].slowdown > 1.2 ? v.without_batch_still : v.batch_caused);
      }
    }
    return v;
  }

  FleetResult Result() const {
    FleetResult r;
    r.victims = Attribute();
    r.nodes = static_cast<int>(nodes_.size());
    r.reports = reports_;
    r.extender_filtered_out = extender_filtered_out_;
    r.extender_refused_all = extender_refused_all_;
    r.calibration = calibration_;
    int64_t requested = 0, allocatable = 0;
    for (const NodeState& n : nodes_) {
      requested += n.requested_millicores;
      allocatable += n.spec->allocatable_millicores();
    }
    r.cpu_requested_fraction_end =
        allocatable > 0 ? static_cast<double>(requested) / static_cast<double>(allocatable) : 0;
    for (const PodState& p : pods_) {
      PodResult out;
      out.name = absl::StrCat(p.workload->namespace_name, "/", p.identity.name);
      out.workload = static_cast<int>(p.workload - fleet_.workloads.data());
      out.kind = p.workload->kind;
      out.phase = p.phase;
      if (p.node >= 0) out.node = nodes_[static_cast<size_t>(p.node)].spec->name;
      out.pinned = p.exclusive.has_value();
      out.was_pending = p.was_pending;
      out.topology_affinity_error = p.topology_affinity_error;
      out.slowdown_end = p.phase == PodPhase::kRunning ? p.slowdown_now : 0;
      out.running_s = p.running_s;
      out.slowdown_mean = p.running_s > 0 ? p.slowdown_integral / p.running_s : 0;
      r.pods.push_back(std::move(out));
    }
    return r;
  }

  const FleetSpec& fleet_;
  const SimOptions options_;
  // Start-up delays; the reports' phases and jitter draw from their own, so
  // the default mode's run does not depend on the report interval.
  Rng rng_;
  Rng report_rng_;
  std::mt19937_64 host_rng_;
  FakeClock clock_;
  std::unique_ptr<extender::ExtenderCore> core_;
  std::unique_ptr<extender::ExtenderHandler> handler_;
  std::optional<extender::ScratchPool::Lease> scratch_;
  const std::string boot_id_ = agent::NewBootId();
  std::vector<NodeState> nodes_;
  std::vector<std::string> names_;
  std::vector<PodState> pods_;
  std::vector<int> pending_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t order_ = 0;
  double now_s_ = 0;
  uint64_t reports_ = 0;
  uint64_t extender_filtered_out_ = 0;
  uint64_t extender_refused_all_ = 0;
  std::unique_ptr<RecordingDecider> recorder_;
  std::vector<CalibrationDecision> calibration_;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

absl::Status CheckExtenderConfig(const std::string& file) {
  if (file.empty()) return absl::OkStatus();
  extender::CommandLine command_line;
  command_line.config_file = file;
  return extender::LoadExtenderConfig(command_line).status();
}

FleetResult SimulateFleet(const FleetSpec& fleet, const SimOptions& options) {
  Simulation sim(fleet, options);
  return sim.Run();
}

FleetSummary Summarise(const FleetResult& r) {
  FleetSummary s;
  std::vector<double> lc_end;
  double lc_time_sum = 0, batch_sum = 0;
  int lc_time_n = 0, batch_n = 0;
  for (const PodResult& p : r.pods) {
    if (p.phase == PodPhase::kPending) ++s.pending_end;
    if (p.was_pending) ++s.ever_pending;
    if (p.topology_affinity_error) ++s.topology_affinity_errors;
    if (p.kind == WorkloadKind::kLatencyCritical) {
      ++s.lc_pods;
      if (p.phase == PodPhase::kRunning) {
        ++s.lc_running_end;
        lc_end.push_back(p.slowdown_end);
        if (p.slowdown_end > 1.2) ++s.lc_over_1_2;
        if (p.slowdown_end > 1.5) ++s.lc_over_1_5;
      }
      if (p.running_s > 0) {
        lc_time_sum += p.slowdown_mean;
        ++lc_time_n;
        if (p.slowdown_mean > 1.2) ++s.lc_time_average_over_1_2;
      }
    }
    if (p.kind == WorkloadKind::kBatch && p.running_s > 0) {
      batch_sum += p.slowdown_mean;
      ++batch_n;
    }
  }
  s.lc_p99 = Percentile(lc_end, 0.99);
  s.lc_worst = lc_end.empty() ? 0 : *std::max_element(lc_end.begin(), lc_end.end());
  s.lc_mean_time_average = lc_time_n ? lc_time_sum / lc_time_n : 0;
  s.batch_mean_slowdown = batch_n ? batch_sum / batch_n : 0;
  s.cpu_requested_fraction_end = r.cpu_requested_fraction_end;
  return s;
}

int PendingThatReferenceRan(const FleetResult& candidate, const FleetResult& reference) {
  int n = 0;
  for (size_t i = 0; i < candidate.pods.size() && i < reference.pods.size(); ++i) {
    const PodPhase ref = reference.pods[i].phase;
    if (candidate.pods[i].phase == PodPhase::kPending &&
        (ref == PodPhase::kRunning || ref == PodPhase::kStarting || ref == PodPhase::kSucceeded)) {
      ++n;
    }
  }
  return n;
}

}  // namespace neighborly::fleet
