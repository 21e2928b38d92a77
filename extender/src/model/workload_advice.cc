#include "extender/src/model/workload_advice.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cpu_list.h"
#include "extender/src/model/workload_key.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

std::string Gib(double bytes) { return absl::StrFormat("%.1f GiB", bytes / (1 << 30)); }

struct Replica {
  const tv1::NodeReport* node;
  const tv1::PodReport* pod;
};

}  // namespace

std::optional<WorkloadAdvice> AdviseWorkload(const std::string& workload,
                                             const std::vector<const tv1::NodeReport*>& reports,
                                             const InterferenceView& interference) {
  std::vector<Replica> replicas;
  for (const tv1::NodeReport* r : reports) {
    for (const tv1::PodReport& pod : r->pods()) {
      if (WorkloadKeyFromLabels(pod.namespace_(), pod.name(), pod.labels()).ToString() ==
          workload) {
        replicas.push_back({r, &pod});
      }
    }
  }
  if (replicas.empty()) return std::nullopt;
  WorkloadAdvice a;
  a.workload = workload;
  a.replicas = static_cast<int>(replicas.size());
  const tv1::PodReport& first = *replicas.front().pod;
  auto cls = first.annotations().find("neighborly.io/class");
  a.contention_class = cls != first.annotations().end() ? cls->second : "standard";
  for (const Victim& v : interference.victims) a.victim = a.victim || v.workload == workload;
  a.repeat_antagonist =
      std::find(interference.repeat_antagonists.begin(), interference.repeat_antagonists.end(),
                workload) != interference.repeat_antagonists.end();
  const bool sensitive = a.contention_class == "latency-critical" || a.victim;

  // What the replicas have, and the largest request among them.
  bool all_guaranteed = true, all_pinned = true;
  int64_t cpu_millicores = 0;
  uint64_t memory_bytes = 0, memory_limit = 0;
  for (const Replica& r : replicas) {
    all_guaranteed = all_guaranteed && r.pod->qos_class() == tv1::QOS_CLASS_GUARANTEED;
    all_pinned = all_pinned && !r.pod->exclusive_cpus().empty();
    cpu_millicores = std::max(cpu_millicores, r.pod->cpu_request_millicores());
    memory_bytes = std::max(memory_bytes, r.pod->memory_request_bytes());
    memory_limit = std::max(memory_limit, r.pod->memory_limit_bytes());
  }
  // The cluster's kubelet policies, over the nodes with telemetry.
  int nodes = 0, static_nodes = 0, single_numa_nodes = 0;
  size_t min_numa_cpus = SIZE_MAX;
  uint64_t min_numa_memory = UINT64_MAX;
  for (const tv1::NodeReport* r : reports) {
    ++nodes;
    static_nodes += r->kubelet().cpu_manager_policy() == "static" ? 1 : 0;
    const std::string& tm = r->kubelet().topology_manager_policy();
    single_numa_nodes += tm == "single-numa-node" || tm == "restricted" ? 1 : 0;
    for (const tv1::NumaNode& numa : r->topology().numa_nodes()) {
      min_numa_cpus = std::min(min_numa_cpus, ParseCpuList(numa.cpus()).value_or(CpuSet{}).size());
      min_numa_memory = std::min(min_numa_memory, numa.memory_bytes());
    }
  }
  const int64_t whole_cpus = (cpu_millicores + 999) / 1000;

  AdviceLayer qos;
  qos.layer = "guaranteed-qos";
  qos.present = all_guaranteed;
  qos.needed = sensitive;
  qos.why = qos.needed ? "latency-critical: last in the kubelet's eviction order and "
                         "oom_score_adj -997 instead of BestEffort 1000 / Burstable 3..999"
                       : "not latency-critical: Burstable keeps its requests small";
  qos.cost = all_guaranteed || memory_limit <= memory_bytes
                 ? "none beyond its requests"
                 : absl::StrCat("memory request raised to its limit: +",
                                Gib(static_cast<double>(memory_limit - memory_bytes)),
                                " reserved per replica");
  a.layers.push_back(qos);

  AdviceLayer pin;
  pin.layer = "integer-cpus";
  pin.present = all_pinned;
  pin.needed = sensitive && static_nodes > 0;
  pin.why = static_nodes == 0
                ? "no node runs the static CPU manager: integer CPUs would not be exclusive"
                : absl::StrCat(static_nodes, " of ", nodes,
                               " node(s) run the static CPU manager: integer CPUs in a "
                               "Guaranteed pod get exclusive cores (no time-slicing with the "
                               "shared pool)");
  pin.cost = absl::StrCat(whole_cpus, " whole core(s) per replica taken out of the shared pool",
                          cpu_millicores % 1000 != 0
                              ? absl::StrCat(" (request rounded up from ", cpu_millicores, "m)")
                              : "");
  a.layers.push_back(pin);

  AdviceLayer numa;
  numa.layer = "single-numa-node";
  const bool fits = static_cast<size_t>(whole_cpus) <= min_numa_cpus &&
                    memory_bytes <= min_numa_memory;
  numa.needed = sensitive && fits;
  numa.present = single_numa_nodes == nodes && all_guaranteed && all_pinned;
  numa.why = !fits ? absl::StrCat("does not fit one NUMA node (", whole_cpus, " CPUs, ",
                                  Gib(static_cast<double>(memory_bytes)), "): leave it spread")
                   : absl::StrCat("fits one NUMA node (", whole_cpus, " of ", min_numa_cpus,
                                  " CPUs, ", Gib(static_cast<double>(memory_bytes)), " of ",
                                  Gib(static_cast<double>(min_numa_memory)),
                                  "); the seed's remote accesses fell 38 % -> 0.9 %, P99 32 -> "
                                  "19 ms; ",
                                  single_numa_nodes, " of ", nodes,
                                  " node(s) run topologyManagerPolicy single-numa-node");
  numa.cost = "a node whose NUMA nodes are each too full refuses the pod (TopologyAffinityError); "
              "Neighborly's NUMA admission filter keeps it off those nodes";
  a.layers.push_back(numa);

  AdviceLayer iso;
  iso.layer = "isolation";
  iso.needed = sensitive;
  iso.present = true;  // Neighborly's filter is running: this advice comes from it
  iso.why = a.victim ? "a replica is an interference victim now (neighborlyctl interference): "
                       "Neighborly's interference filter keeps new antagonists away; the "
                       "rebalancing advice says whom to move"
                     : "Neighborly's interference filter refuses nodes where it would be slowed "
                       "beyond neighborly.io/max-slowdown: no required anti-affinity or "
                       "dedicated pool needed";
  iso.cost = "none; a dedicated node pool with required anti-affinity cost the seed ~15 % of "
             "cluster utilisation";
  a.layers.push_back(iso);
  if (a.repeat_antagonist) {
    a.notes.push_back("this workload is named repeatedly as an antagonist: placement treats it "
                      "as an aggressor (batch)");
  }

  // The patch: only what is needed and missing.
  std::string resources, annotations;
  if ((qos.needed && !qos.present) || (pin.needed && !pin.present)) {
    const std::string cpu = pin.needed ? absl::StrCat(whole_cpus) : absl::StrCat(cpu_millicores, "m");
    const uint64_t memory = std::max(memory_bytes, memory_limit);
    const std::string mem = memory > 0 ? absl::StrCat(memory >> 20, "Mi") : "<memory>";
    resources = absl::StrCat("        resources:\n          requests: {cpu: \"", cpu,
                             "\", memory: \"", mem, "\"}\n          limits: {cpu: \"", cpu,
                             "\", memory: \"", mem, "\"}\n");
  }
  if (sensitive && a.contention_class != "latency-critical") {
    annotations = "      annotations:\n        neighborly.io/class: latency-critical\n";
  }
  if (!resources.empty() || !annotations.empty()) {
    a.patch = absl::StrCat("# kubectl patch ", workload.substr(workload.find('/') + 1),
                           " -n ", workload.substr(0, workload.find('/')),
                           " --type strategic --patch-file this.yaml\nspec:\n  template:\n",
                           annotations.empty() ? "" : absl::StrCat("    metadata:\n", annotations),
                           resources.empty() ? ""
                                             : absl::StrCat("    spec:\n      containers:\n      - "
                                                            "name: <container>\n",
                                                            resources));
  }
  if (numa.needed && single_numa_nodes < nodes) {
    a.notes.push_back(absl::StrCat(
        "single-numa-node is a kubelet setting (topologyManagerPolicy), not a pod field: ",
        nodes - single_numa_nodes, " node(s) would need it, or a nodeSelector for those that "
                                   "have it"));
  }
  return a;
}

}  // namespace neighborly::extender
