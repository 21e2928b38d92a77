// The topology manager options of issue 27: prefer-closest-numa-nodes and
// max-allowable-numa-nodes, and the emulation above 8 NUMA nodes (no fail
// open there any more). Case names in quotes mirror kubelet
// pkg/kubelet/cm/topologymanager/policy_best_effort_test.go
// (mergeTestCasesClosestNUMA) with its commonNUMAInfoEightNodes distances.
#include <string>
#include <vector>

#include "extender/src/model/topology_admission.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::HasSubstr;

// commonNUMAInfoEightNodes.
const std::vector<uint16_t> kEightNodeDistances = {
    10, 11, 12, 12, 30, 30, 30, 30,  //
    11, 10, 12, 12, 30, 30, 30, 30,  //
    12, 12, 10, 11, 30, 30, 30, 30,  //
    12, 12, 11, 10, 30, 30, 30, 30,  //
    30, 30, 30, 30, 10, 11, 12, 12,  //
    30, 30, 30, 30, 11, 10, 12, 12,  //
    30, 30, 30, 30, 12, 12, 10, 11,  //
    30, 30, 30, 30, 12, 12, 13, 10};

uint32_t Mask(std::initializer_list<int> bits) {
  uint32_t m = 0;
  for (int b : bits) m |= 1u << b;
  return m;
}

TEST(PreferClosestNumaTest, MergeTestCasesClosestNuma) {
  // "Two providers, 2 hints each, same mask (some with different bits), same preferred"
  const std::vector<TopologyHint> a = {{Mask({0, 4}), true}, {Mask({0, 2}), true}};
  const std::vector<TopologyHint> b = {{Mask({0, 4}), true}, {Mask({0, 2}), true}};
  const std::span<const TopologyHint> lists[] = {a, b};
  EXPECT_EQ(MergeTopologyHints(lists, 8, kEightNodeDistances), (TopologyHint{Mask({0, 2}), true}));
}

TEST(PreferClosestNumaTest, ClosestBeatsLowerMaskOfEqualWidth) {
  // {1,4} is the lower mask but crosses the 30-distance link; {6,7} is close.
  const std::vector<TopologyHint> hints = {{Mask({1, 4}), true}, {Mask({6, 7}), true}};
  const std::span<const TopologyHint> lists[] = {hints};
  EXPECT_EQ(MergeTopologyHints(lists, 8, kEightNodeDistances), (TopologyHint{Mask({6, 7}), true}));
  EXPECT_EQ(MergeTopologyHints(lists, 8), (TopologyHint{Mask({1, 4}), true}));  // narrowest
  // A narrower mask still wins over a closer wide one.
  const std::vector<TopologyHint> mixed = {{Mask({6, 7}), true}, {Mask({5}), true}};
  const std::span<const TopologyHint> mixed_lists[] = {mixed};
  EXPECT_EQ(MergeTopologyHints(mixed_lists, 8, kEightNodeDistances),
            (TopologyHint{Mask({5}), true}));
}

// A node report with `numa` NUMA nodes of 4 CPUs each (one thread per core).
tv1::NodeReport Node(int numa, const std::string& policy,
                     std::vector<std::vector<uint32_t>> distances = {}) {
  tv1::NodeReport r;
  r.set_node_name("n");
  r.mutable_kubelet()->set_cpu_manager_policy("static");
  r.mutable_kubelet()->set_topology_manager_policy(policy);
  for (int i = 0; i < numa; ++i) {
    tv1::NumaNode* n = r.mutable_topology()->add_numa_nodes();
    n->set_id(static_cast<uint32_t>(i));
    n->set_cpus(std::to_string(4 * i) + "-" + std::to_string(4 * i + 3));
    n->set_memory_bytes(8ull << 30);
    if (!distances.empty()) {
      for (uint32_t d : distances[static_cast<size_t>(i)]) n->add_distances(d);
    }
  }
  return r;
}

IncomingPod Guaranteed(int cpus) {
  IncomingPod pod;
  pod.qos = QosClass::kGuaranteed;
  pod.cpu_request_millicores = cpus * 1000;
  pod.memory_request_bytes = 1ll << 30;
  pod.containers.push_back({cpus * 1000, 1ll << 30, false});
  return pod;
}

TEST(PreferClosestNumaTest, AdmitPicksTheClosestPairOfNumaNodes) {
  // 6 CPUs need two NUMA nodes; 0-1 are far apart, 0-2 close.
  tv1::NodeReport r = Node(3, "best-effort", {{10, 30, 11}, {30, 10, 30}, {11, 30, 10}});
  const std::vector<int64_t> free_memory(3, 8ll << 30);
  AdmissionResult placed;
  AdmissionProfile plain = BuildAdmissionProfile(r, free_memory);
  ASSERT_TRUE(Admit(plain, MakeAdmissionRequest(Guaranteed(6)), {}, placed, nullptr));
  EXPECT_EQ(placed.numa_mask, Mask({0, 1}));  // lowest mask
  (*r.mutable_kubelet()->mutable_topology_manager_policy_options())["prefer-closest-numa-nodes"] =
      "true";
  AdmissionProfile closest = BuildAdmissionProfile(r, free_memory);
  ASSERT_TRUE(closest.prefer_closest);
  ASSERT_TRUE(Admit(closest, MakeAdmissionRequest(Guaranteed(6)), {}, placed, nullptr));
  EXPECT_EQ(placed.numa_mask, Mask({0, 2}));
}

TEST(MaxAllowableNumaNodesTest, AboveTheKubeletLimitTheNodeAdmitsNoPinnedPod) {
  tv1::NodeReport r = Node(10, "single-numa-node");
  const std::vector<int64_t> free_memory(10, 8ll << 30);
  AdmissionProfile p = BuildAdmissionProfile(r, free_memory);
  EXPECT_FALSE(p.too_many_numa_nodes);  // emulated, not failed open
  EXPECT_TRUE(p.above_max_allowable);
  AdmissionResult placed;
  std::string reason;
  EXPECT_FALSE(Admit(p, MakeAdmissionRequest(Guaranteed(2)), {}, placed, &reason));
  EXPECT_THAT(reason, HasSubstr("10 NUMA nodes exceed topologyManagerPolicyOptions "
                                "max-allowable-numa-nodes 8"));
}

TEST(MaxAllowableNumaNodesTest, RaisedLimitIsEmulatedOnTenNumaNodes) {
  tv1::NodeReport r = Node(10, "single-numa-node");
  (*r.mutable_kubelet()->mutable_topology_manager_policy_options())["max-allowable-numa-nodes"] =
      "16";
  // NUMA nodes 0-8 are full: only node 9 can hold the pod.
  for (int i = 0; i < 9; ++i) {
    tv1::PodReport* pod = r.add_pods();
    pod->set_uid("p" + std::to_string(i));
    pod->set_exclusive_cpus(std::to_string(4 * i) + "-" + std::to_string(4 * i + 3));
  }
  const std::vector<int64_t> free_memory(10, 8ll << 30);
  AdmissionProfile p = BuildAdmissionProfile(r, free_memory);
  EXPECT_FALSE(p.above_max_allowable);
  AdmissionResult placed;
  std::string reason;
  ASSERT_TRUE(Admit(p, MakeAdmissionRequest(Guaranteed(3)), {}, placed, &reason)) << reason;
  EXPECT_EQ(placed.numa_mask, Mask({9}));
  EXPECT_EQ(placed.home, 9);
  // Too big for any single NUMA node: refused as the kubelet would.
  EXPECT_FALSE(Admit(p, MakeAdmissionRequest(Guaranteed(5)), {}, placed, &reason));
  EXPECT_THAT(reason, HasSubstr("TopologyAffinityError"));
  EXPECT_THAT(reason, HasSubstr("NUMA node 9 has 4 free CPUs (1 short)"));
}

TEST(MaxAllowableNumaNodesTest, PolicyNoneIgnoresTheLimit) {
  tv1::NodeReport r = Node(10, "none");
  const std::vector<int64_t> free_memory(10, 8ll << 30);
  AdmissionProfile p = BuildAdmissionProfile(r, free_memory);
  EXPECT_FALSE(p.above_max_allowable);
  AdmissionResult placed;
  EXPECT_TRUE(Admit(p, MakeAdmissionRequest(Guaranteed(2)), {}, placed, nullptr));
}

}  // namespace
}  // namespace neighborly::extender
