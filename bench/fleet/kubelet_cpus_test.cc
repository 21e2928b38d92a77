#include "bench/fleet/kubelet_cpus.h"

#include <gtest/gtest.h>

#include "bench/fleet/fleet_sim.h"

namespace neighborly::fleet {
namespace {

NodeSpec SmallNode(int threads_per_core) {
  NodeSpec n;
  n.name = "node-01";
  n.cores_per_socket = 4;
  n.threads_per_core = threads_per_core;
  n.static_cpu_manager = true;
  return n;
}

TEST(KubeletCpus, SingleNumaNodeRefusesWhatFitsOnlyAcrossNodes) {
  KubeletCpus cpus(SmallNode(1));  // cpus 0-3 and 4-7, cpu 0 reserved
  ASSERT_EQ(cpus.FreeExclusive(0), 3);
  std::optional<ExclusiveCpus> a = cpus.Allocate(2);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->numa_node, 0);
  EXPECT_EQ(KubeletCpus::CpuList(a->cpus), "1-2");
  std::optional<ExclusiveCpus> b = cpus.Allocate(2);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->numa_node, 1);
  // Three cpus are free (3, 6, 7) but no NUMA node has three.
  EXPECT_FALSE(cpus.Allocate(3));
  cpus.Release(b->cpus);
  EXPECT_TRUE(cpus.Allocate(3));
}

TEST(KubeletCpus, WholeCoresFirstThenPartlyTakenCores) {
  KubeletCpus cpus(SmallNode(2));  // socket 0: cpus 0-7, cores {0,1} {2,3} ...; 0-1 reserved
  std::optional<ExclusiveCpus> a = cpus.Allocate(3);
  ASSERT_TRUE(a);
  EXPECT_EQ(KubeletCpus::CpuList(a->cpus), "2-4");
  std::optional<ExclusiveCpus> b = cpus.Allocate(1);
  ASSERT_TRUE(b);
  EXPECT_EQ(KubeletCpus::CpuList(b->cpus), "5");  // the sibling left over, not a new core
  EXPECT_EQ(cpus.SharedPoolPerSocket(), (std::vector<int>{4, 8}));
}

// The simulator counts a TopologyAffinityError when kube-scheduler's fit
// passes but no NUMA node has the pinned pod's CPUs, and does not retry it.
TEST(FleetSimulator, CountsTopologyAffinityErrors) {
  FleetSpec fleet;
  fleet.seed = 1;
  fleet.nodes.push_back(SmallNode(1));  // 7 allocatable cpus: 3 on NUMA 0, 4 on NUMA 1
  fleet.nodes[0].memory_bytes_per_socket = int64_t{16} << 30;
  for (int cpus : {2, 2, 3}) {
    Workload w;
    w.namespace_name = "shop";
    w.name = "pinned-" + std::to_string(fleet.workloads.size());
    w.kind = WorkloadKind::kLatencyCritical;
    w.template_hash = "5d8f7c6b9a";
    w.owner_uid = "uid-" + w.name;
    w.guaranteed = true;
    w.cpu_request_millicores = w.cpu_limit_millicores = 1000 * cpus;
    w.memory_request_bytes = w.memory_limit_bytes = int64_t{1} << 30;
    fleet.workloads.push_back(w);
    fleet.arrivals.push_back({static_cast<double>(fleet.arrivals.size()),
                              static_cast<int>(fleet.workloads.size()) - 1, 0});
  }
  fleet.last_arrival_s = fleet.arrivals.back().at_s;
  const FleetResult r = SimulateFleet(fleet, SimOptions{});
  const FleetSummary s = Summarise(r);
  EXPECT_EQ(s.topology_affinity_errors, 1);
  EXPECT_TRUE(r.pods[2].topology_affinity_error);
  EXPECT_EQ(r.pods[2].phase, PodPhase::kFailed);
  EXPECT_EQ(s.pending_end, 0);
  EXPECT_TRUE(r.pods[0].pinned);
  EXPECT_EQ(s.lc_running_end, 2);
}

}  // namespace
}  // namespace neighborly::fleet
