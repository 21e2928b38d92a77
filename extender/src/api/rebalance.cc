#include "extender/src/api/rebalance.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"
#include "extender/src/model/node_profile.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

struct Found {
  std::string node;
  tv1::PodReport pod;
};

// The pod as the scheduler would ask about its next replica.
IncomingPod AsIncoming(const tv1::PodReport& p) {
  IncomingPod pod;
  pod.namespace_name = p.namespace_();
  pod.name = p.name();
  pod.qos = QosClassOf(p.qos_class());
  pod.labels.insert(p.labels().begin(), p.labels().end());
  pod.annotations.insert(p.annotations().begin(), p.annotations().end());
  pod.cpu_request_millicores = p.cpu_request_millicores();
  pod.memory_request_bytes = static_cast<int64_t>(p.memory_request_bytes());
  pod.wants_exclusive_cpus = p.qos_class() == tv1::QOS_CLASS_GUARANTEED &&
                             p.cpu_request_millicores() > 0 &&
                             p.cpu_request_millicores() % 1000 == 0;
  return pod;
}

bool Pinned(const tv1::PodReport& p) {
  return p.qos_class() == tv1::QOS_CLASS_GUARANTEED && !p.exclusive_cpus().empty();
}

}  // namespace

std::vector<MoveProposal> ProposeMoves(ExtenderCore& core,
                                       const InterferenceView& interference,
                                       const RebalanceOptions& options) {
  std::vector<const Victim*> victims;
  for (const Victim& v : interference.victims) {
    if (v.persisting_windows >= options.min_persisting_windows && !v.suspects.empty()) {
      victims.push_back(&v);
    }
  }
  std::sort(victims.begin(), victims.end(), [](const Victim* a, const Victim* b) {
    return a->persisting_windows != b->persisting_windows
               ? a->persisting_windows > b->persisting_windows
               : a->pod < b->pod;
  });
  if (victims.empty()) return {};

  // The pods involved and every node's name, from the newest reports.
  std::set<std::string> wanted;
  for (const Victim* v : victims) {
    wanted.insert(v->uid);
    wanted.insert(v->suspects.front().uid);
  }
  std::map<std::string, Found> pods;
  std::vector<std::string> nodes;
  core.ForEachReport([&](const tv1::NodeReport& r) {
    nodes.push_back(r.node_name());
    for (const tv1::PodReport& p : r.pods()) {
      if (wanted.contains(p.uid())) pods[p.uid()] = {r.node_name(), p};
    }
  });
  std::sort(nodes.begin(), nodes.end());

  std::vector<MoveProposal> out;
  std::set<std::string> nodes_done;
  for (const Victim* v : victims) {
    if (out.size() >= options.max_moves) break;
    if (nodes_done.contains(v->node)) continue;  // one move per node at a time
    const Suspect& suspect = v->suspects.front();
    auto victim_pod = pods.find(v->uid);
    auto suspect_pod = pods.find(suspect.uid);
    if (victim_pod == pods.end() || suspect_pod == pods.end()) continue;
    const tv1::PodReport& vp = victim_pod->second.pod;
    const tv1::PodReport& sp = suspect_pod->second.pod;

    MoveProposal m;
    m.victim = v->pod;
    m.victim_node = v->node;
    m.persisting_windows = v->persisting_windows;
    const bool suspect_pinned = Pinned(sp) && !Pinned(vp);
    auto cls = sp.annotations().find("neighborly.io/class");
    const bool suspect_serving = cls != sp.annotations().end() && cls->second == "latency-critical";
    const bool move_victim = suspect_pinned || suspect_serving;
    const tv1::PodReport& moving = move_victim ? vp : sp;
    m.move = absl::StrCat(moving.namespace_(), "/", moving.name());
    m.move_uid = moving.uid();
    m.from_node = move_victim ? victim_pod->second.node : suspect_pod->second.node;
    m.why = move_victim
                ? absl::StrCat("the antagonist ", suspect.pod, " is the more expensive to move (",
                               suspect_pinned ? "Guaranteed with exclusive CPUs"
                                              : "latency-critical itself: it serves traffic",
                               "): move the victim")
                : absl::StrCat("the antagonist (score ", absl::StrFormat("%.2f", suspect.score),
                               ") is the cheaper to move");

    std::vector<std::string_view> candidates;
    for (const std::string& n : nodes) {
      if (n != m.from_node) candidates.push_back(n);
    }
    std::vector<NodeDecision> decisions;
    core.Score(AsIncoming(moving), candidates, /*teach=*/false, decisions);
    int best = -1;
    for (size_t i = 0; i < candidates.size() && i < decisions.size(); ++i) {
      const NodeDecision& d = decisions[i];
      if (!d.feasible) {
        m.refused.push_back(absl::StrCat(Av(candidates[i]), ": ", d.reason));
        continue;
      }
      if (best < 0 || d.score > decisions[static_cast<size_t>(best)].score ||
          (d.score == decisions[static_cast<size_t>(best)].score &&
           d.cost < decisions[static_cast<size_t>(best)].cost)) {
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) {
      m.to_node = std::string(candidates[static_cast<size_t>(best)]);
      m.score = decisions[static_cast<size_t>(best)].score;
      absl::StrAppend(&m.why, "; ", m.to_node, " scores ", m.score,
                      "/10 for it in the placement model");
    } else {
      absl::StrAppend(&m.why, "; no other node takes it without harming a latency-critical pod");
    }
    nodes_done.insert(v->node);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace neighborly::extender
