// What the agent on a simulated node measures, written as a one-node scenario
// (docs/simulation.md) for the real simulator to turn into the node's report:
// topology and kubelet policies from the NodeSpec, and per running pod its
// requests, exclusive CPUs and the ground truth's outcome as the agent's
// counters would read it (LLC occupancy = the cache it got, MPKI, IPC, memory
// bandwidth, CPU usage).
//
//   std::string json = NodeScenarioJson(spec, cpus, pods);
//   absl::StatusOr<agent::Scenario> s = agent::ParseScenario(json, "node-07");
#ifndef NEIGHBORLY_BENCH_FLEET_AGENT_VIEW_H_
#define NEIGHBORLY_BENCH_FLEET_AGENT_VIEW_H_

#include <map>
#include <string>
#include <vector>

#include "bench/fleet/ground_truth.h"
#include "bench/fleet/kubelet_cpus.h"
#include "bench/fleet/workload_mix.h"

namespace neighborly::fleet {

// A pod's identity as its controller made it.
struct PodIdentity {
  std::string uid;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

PodIdentity IdentityOf(const Workload& workload, int replica, uint64_t seed);

// What-if `true-footprints`: the footprint the ground truth gives the
// workload's pod (its scales applied), as the extender's cache hint
// (annotation neighborly.io/llc-bytes): what the pod needs in each L3 it runs
// on, capped at kTrueFootprintCapBytes (a streamer's is its whole scan).
inline constexpr double kTrueFootprintCapBytes = 64e6;
void AnnotateTrueFootprint(const Workload& workload, const GroundTruthParams& truth,
                           PodIdentity& identity);

struct MeasuredPod {
  const Workload* workload = nullptr;
  const PodIdentity* identity = nullptr;
  std::vector<int> exclusive_cpus;  // empty: shared pool
  int numa_node = -1;               // of the exclusive cpus
  double cpu_usage_cores = 0;
  PodOutcome truth;
};

std::string NodeScenarioJson(const NodeSpec& node, const KubeletCpus& cpus,
                             const std::vector<MeasuredPod>& pods);

// The v1.Pod kube-scheduler sends the extender for `workload`'s pod.
std::string PodJson(const Workload& workload, const PodIdentity& identity);

// "BestEffort" | "Burstable" | "Guaranteed", as the API server derives it.
const char* QosClassOf(const Workload& workload);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_AGENT_VIEW_H_
