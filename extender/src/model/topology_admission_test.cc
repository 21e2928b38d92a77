// Table tests of the topology manager emulation. Each case names the upstream
// case of kubernetes/kubernetes it mirrors (pkg/kubelet/cm/topologymanager/
// policy_test.go, policy_single_numa_node_test.go; pkg/kubelet/cm/cpumanager/
// topology_hints_test.go, policy_static_test.go), or the issue-14 scenario.
#include "extender/src/model/topology_admission.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using Hints = std::vector<TopologyHint>;

// --- hint generation: cpumanager topology_hints_test.go returnTestCases ---
// Machine: 2 NUMA nodes x 6 CPUs (3 cores x 2 threads each).

struct GenerateCase {
  const char* upstream;
  std::vector<int64_t> free;
  int64_t request;
  Hints want;
};

TEST(TopologyHintsTest, MirrorsCpuManagerTopologyHintsTest) {
  const std::vector<int64_t> total = {6, 6};
  const GenerateCase cases[] = {
      {"Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
       {4, 6},
       2,
       {{0b01, true}, {0b10, true}, {0b11, false}}},
      {"Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1",
       {4, 6},
       5,
       {{0b10, true}, {0b11, false}}},
      {"Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", {4, 6}, 7, {{0b11, true}}},
      {"Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", {4, 6}, 11, {}},
      {"Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1", {1, 1}, 2, {{0b11, false}}},
      {"Request more CPUs than available", {3, 1}, 5, {}},
  };
  for (const GenerateCase& c : cases) {
    EXPECT_THAT(GenerateTopologyHints(total, c.free, c.request), ElementsAreArray(c.want))
        << c.upstream;
  }
}

// --- merge: topologymanager policy_test.go commonPolicyMergeTestCases and
// bestEffortPolicy.mergeTestCases ---

struct MergeCase {
  const char* upstream;
  size_t numa_count;
  std::vector<Hints> lists;  // one per provider resource; {{0, true}}: "no preference"
  TopologyHint want;
};

TEST(TopologyMergeTest, MirrorsPolicyMergeTestCases) {
  const MergeCase cases[] = {
      {"Two providers, 1 hint each, same mask, both preferred 1/2",
       2,
       {{{0b01, true}}, {{0b01, true}}},
       {0b01, true}},
      {"Two providers, 1 hint each, same mask, both preferred 2/2",
       2,
       {{{0b10, true}}, {{0b10, true}}},
       {0b10, true}},
      {"Two providers, 1 no hints, 1 single hint preferred 1/2",
       2,
       {{{0, true}}, {{0b01, true}}},
       {0b01, true}},
      {"Two providers, 1 no hints, 1 single hint preferred 2/2",
       2,
       {{{0, true}}, {{0b10, true}}},
       {0b10, true}},
      {"Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
       2,
       {{{0b01, true}, {0b10, true}}, {{0b01, true}}},
       {0b01, true}},
      {"Two providers, both with 2 hints, matching narrower preferred hint from both",
       2,
       {{{0b01, true}, {0b10, true}}, {{0b01, true}, {0b11, false}}},
       {0b01, true}},
      {"Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
       2,
       {{{0b10, true}, {0b11, false}}, {{0b01, true}, {0b10, true}, {0b11, false}}},
       {0b10, true}},
      {"Multiple resources, same provider",
       2,
       {{{0b10, true}, {0b11, false}}, {{0b01, true}, {0b10, true}, {0b11, false}}},
       {0b10, true}},
      {"TopologyHint not set", 2, {}, {0b11, true}},
      {"HintProvider returns -nil map[string][]TopologyHint from provider",
       2,
       {{{0, true}}},
       {0b11, true}},
      {"HintProvider returns empty non-nil map[string][]TopologyHint from provider",
       2,
       {{{0, false}}},
       {0b11, false}},
      {"Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
       2,
       {{{0, false}}},
       {0b11, false}},
      {"Two providers, 1 hint each, no common mask",
       2,
       {{{0b01, true}}, {{0b10, true}}},
       {0b11, false}},
      {"Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
       2,
       {{{0b01, true}}, {{0b01, false}}},
       {0b01, false}},
      {"Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
       2,
       {{{0b01, true}}, {{0b11, true}}},
       {0b01, false}},
      {"Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
       2,
       {{{0b01, true}, {0b10, true}}, {{0b11, false}}},
       {0b01, false}},
      {"bestNonPreferredAffinityCount (1)",
       4,
       {{{0b1111, false}, {0b0011, false}}, {{0b0011, false}}},
       {0b0011, false}},
      {"bestNonPreferredAffinityCount (2)",
       4,
       {{{0b1111, false}, {0b0011, false}}, {{0b1001, false}}},
       {0b1001, false}},
      {"bestNonPreferredAffinityCount (3)",
       4,
       {{{0b1111, false}, {0b0011, false}}, {{0b0110, false}}},
       {0b0110, false}},
  };
  for (const MergeCase& c : cases) {
    std::vector<std::span<const TopologyHint>> lists(c.lists.begin(), c.lists.end());
    EXPECT_EQ(MergeTopologyHints(lists, c.numa_count), c.want) << c.upstream;
  }
}

// policy_single_numa_node_test.go TestPolicySingleNumaNodeFilterHints.
TEST(TopologyMergeTest, MirrorsSingleNumaNodeFilterHints) {
  EXPECT_THAT(FilterSingleNumaHints(Hints{}), ElementsAreArray(Hints{}))
      << "filter empty resources";
  EXPECT_THAT(FilterSingleNumaHints(Hints{{0, true}}), ElementsAreArray(Hints{{0, true}}))
      << "filter hints with nil socket mask 1/2";
  EXPECT_THAT(FilterSingleNumaHints(Hints{{0, false}}), ElementsAreArray(Hints{}))
      << "filter hints with nil socket mask 2/2";
  EXPECT_THAT(FilterSingleNumaHints(Hints{{0b01, true}, {0b10, true}, {0b11, false}}),
              ElementsAreArray(Hints{{0b01, true}, {0b10, true}}))
      << "filter hints with single-NUMA preferred and multi-NUMA non-preferred";
  EXPECT_THAT(FilterSingleNumaHints(Hints{{0b01, false}, {0b11, true}}), ElementsAreArray(Hints{}))
      << "filter hints with single-NUMA non-preferred and multi-NUMA preferred";
}

// --- admission, end to end ---

// Two NUMA nodes of 8 CPUs (4 cores x 2 threads), 32 GiB each.
AdmissionProfile Node(TopologyPolicy policy, std::vector<int32_t> free_cpus = {8, 8},
                      std::vector<int64_t> free_gib = {32, 32}) {
  AdmissionProfile p;
  p.policy = policy;
  p.static_cpu = true;
  p.threads_per_core = 2;
  for (uint32_t i = 0; i < free_cpus.size(); ++i) {
    AdmissionNuma& n = p.numa.emplace_back();
    n.id = i;
    n.cpus = 8;
    n.free_cpus = free_cpus[i];
    n.free_cores = free_cpus[i] / 2;
    n.memory_bytes = 32ll << 30;
    n.free_memory_bytes = free_gib[i] << 30;
    n.report_index = static_cast<uint16_t>(i);
  }
  return p;
}

IncomingPod Guaranteed(std::vector<ContainerRequest> containers) {
  IncomingPod pod;
  pod.qos = QosClass::kGuaranteed;
  for (const ContainerRequest& c : containers) {
    pod.cpu_request_millicores += c.cpu_request_millicores;
    pod.memory_request_bytes += c.memory_request_bytes;
  }
  pod.containers = std::move(containers);
  return pod;
}

constexpr int64_t kGi = 1ll << 30;

struct AdmitCase {
  const char* what;  // the upstream case or issue-14 scenario mirrored
  AdmissionProfile node;
  IncomingPod pod;
  bool admit;
  uint32_t mask;  // expected merged mask (bit = NUMA index); ignored when refused
  int32_t home;
  std::string reason;  // substring of the refusal
};

TEST(AdmitTest, Table) {
  AdmissionProfile pod_scope = Node(TopologyPolicy::kSingleNumaNode, {5, 5});
  pod_scope.scope = TopologyScope::kPod;
  AdmissionProfile container_scope = Node(TopologyPolicy::kSingleNumaNode, {5, 5});
  AdmissionProfile static_memory = Node(TopologyPolicy::kSingleNumaNode, {8, 8}, {10, 12});
  static_memory.static_memory = true;
  AdmissionProfile no_memory_manager = Node(TopologyPolicy::kSingleNumaNode, {8, 8}, {10, 12});
  AdmissionProfile full_pcpus = Node(TopologyPolicy::kSingleNumaNode);
  full_pcpus.full_pcpus_only = true;
  AdmissionProfile fragmented = Node(TopologyPolicy::kNone, {3, 3});
  fragmented.full_pcpus_only = true;
  fragmented.numa[0].free_cores = 1;
  fragmented.numa[1].free_cores = 0;
  AdmissionProfile cpu_none = Node(TopologyPolicy::kSingleNumaNode);
  cpu_none.static_cpu = false;

  const AdmitCase cases[] = {
      // restricted: canAdmitPodResult == hint.Preferred; 12 CPUs fit no single
      // NUMA node, so {0,1} is the narrowest possible and preferred
      // (topology_hints_test "Request 7 CPUs ...": crossSocketMask preferred).
      {"issue 14: 12-CPU pod under restricted is admitted", Node(TopologyPolicy::kRestricted),
       Guaranteed({{12000, 4 * kGi}}), true, 0b11, 0, ""},
      {"single-numa-node refuses what fits no single NUMA node",
       Node(TopologyPolicy::kSingleNumaNode), Guaranteed({{12000, 4 * kGi}}), false, 0, -1,
       "no single NUMA node can hold 12 exclusive CPUs (TopologyAffinityError): NUMA node 0 has 8 "
       "free CPUs (4 short); NUMA node 1 has 8 free CPUs (4 short)"},
      // Ties between preferred single-NUMA hints: IsNarrowerThan picks the lower mask.
      {"issue 14: two idle NUMA nodes, the kubelet takes NUMA 0",
       Node(TopologyPolicy::kSingleNumaNode), Guaranteed({{2000, 1 * kGi}}), true, 0b01, 0, ""},
      {"Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1 (only NUMA 1)",
       Node(TopologyPolicy::kSingleNumaNode, {4, 6}), Guaranteed({{5000, kGi}}), true, 0b10, 1, ""},
      {"issue 14: memory manager None gives no memory hint (2 CPUs / 16 GiB)", no_memory_manager,
       Guaranteed({{2000, 16 * kGi}}), true, 0b01, 0, ""},
      {"memory manager Static: 16 GiB fits no single NUMA node", static_memory,
       Guaranteed({{2000, 16 * kGi}}), false, 0, -1,
       "can hold 2 exclusive CPUs and 16.0 GiB of memory (TopologyAffinityError): NUMA node 0 has "
       "8 free CPUs and 10.0 GiB (6.0 GiB short)"},
      {"memory manager Static: 12 GiB only on NUMA 1", static_memory,
       Guaranteed({{2000, 11 * kGi}}), true, 0b10, 1, ""},
      {"issue 14: two 4-CPU containers, scope container, 5 free per NUMA node", container_scope,
       Guaranteed({{4000, kGi}, {4000, kGi}}), true, 0b11, 0, ""},
      {"the same pod under scope pod needs 8 CPUs on one NUMA node", pod_scope,
       Guaranteed({{4000, kGi}, {4000, kGi}}), false, 0, -1, "scope pod"},
      {"issue 14: Guaranteed 1500m + 500m: no container is pinned",
       Node(TopologyPolicy::kSingleNumaNode, {0, 0}), Guaranteed({{1500, kGi}, {500, kGi}}), true,
       0, -1, ""},
      {"cpuManagerPolicy none: nothing is pinned", cpu_none, Guaranteed({{4000, kGi}}), true, 0, -1,
       ""},
      {"policy_static_test: full-pcpus-only refuses 3 CPUs on 2-thread cores (SMTAlignmentError)",
       full_pcpus, Guaranteed({{3000, kGi}}), false, 0, -1, "SMTAlignmentError"},
      {"full-pcpus-only: 4 CPUs need 2 whole free cores", fragmented, Guaranteed({{4000, kGi}}),
       false, 0, -1, "4 exclusive CPUs requested, 2 free on whole cores (2 short)"},
      // topologyManagerPolicy none: no hints; the packed allocator starts on
      // the NUMA node with the fewest free CPUs.
      {"topologyManagerPolicy none packs the fuller NUMA node", Node(TopologyPolicy::kNone, {3, 8}),
       Guaranteed({{2000, kGi}}), true, 0b01, 0, ""},
      {"Burstable pods give no hints", Node(TopologyPolicy::kSingleNumaNode, {0, 0}),
       [] {
         IncomingPod p = Guaranteed({{2000, kGi}});
         p.qos = QosClass::kBurstable;
         return p;
       }(),
       true, 0, -1, ""},
      // Init containers are admitted first; their CPUs return for reuse.
      {"scope container: init 6 CPUs then app 6 CPUs on 8-CPU NUMA nodes",
       Node(TopologyPolicy::kSingleNumaNode),
       Guaranteed({{6000, kGi, /*init=*/true}, {6000, kGi, false}}), true, 0b01, 0, ""},
  };
  for (const AdmitCase& c : cases) {
    SCOPED_TRACE(c.what);
    const AdmissionRequest request = MakeAdmissionRequest(c.pod);
    AdmissionResult result;
    std::string reason;
    EXPECT_EQ(Admit(c.node, request, {}, result, &reason), c.admit) << reason;
    if (c.admit) {
      EXPECT_TRUE(reason.empty());
      EXPECT_EQ(result.numa_mask, c.mask);
      EXPECT_EQ(result.home, c.home);
    } else {
      EXPECT_THAT(reason, HasSubstr(c.reason));
    }
  }
}

TEST(AdmitTest, InFlightBookingsTakeTheirCpus) {
  // Issue 14: two latency-critical replicas "on separate sockets" — the first
  // takes NUMA 0 (lowest mask); while it is in flight NUMA 0 still holds 2
  // more CPUs, so the kubelet puts the second there too.
  const AdmissionProfile node = Node(TopologyPolicy::kSingleNumaNode, {6, 8});
  const AdmissionRequest replica = MakeAdmissionRequest(Guaranteed({{2000, kGi}}));
  AdmissionResult first;
  ASSERT_TRUE(Admit(node, replica, {}, first, nullptr));
  EXPECT_EQ(first.home, 0);
  const std::vector<int32_t> booked_cpus = {2, 0};
  const std::vector<int64_t> booked_memory = {kGi, 0};
  AdmissionResult second;
  ASSERT_TRUE(Admit(node, replica, {booked_cpus, booked_memory}, second, nullptr));
  EXPECT_EQ(second.home, 0);
  // Once NUMA 0 is full, NUMA 1.
  const std::vector<int32_t> full = {6, 0};
  AdmissionResult third;
  ASSERT_TRUE(Admit(node, replica, {full, booked_memory}, third, nullptr));
  EXPECT_EQ(third.home, 1);
}

TEST(AdmitTest, SmtWholeCoresArePredicted) {
  AdmissionProfile node = Node(TopologyPolicy::kSingleNumaNode, {3, 8});
  node.numa[0].free_cores = 1;  // one whole core and one loose thread
  AdmissionResult r;
  ASSERT_TRUE(Admit(node, MakeAdmissionRequest(Guaranteed({{2000, kGi}})), {}, r, nullptr));
  EXPECT_TRUE(r.full_cores);
  ASSERT_TRUE(Admit(node, MakeAdmissionRequest(Guaranteed({{3000, kGi}})), {}, r, nullptr));
  EXPECT_FALSE(r.full_cores);  // the third CPU is a thread whose sibling is someone else's
}

TEST(AdmitTest, PodScopeSumsAndInitMaximum) {
  // cpumanager topology_hints_test TestPodGuaranteedCPUs "TestCase07: The
  // number of CPUs requested By init is bigger than the number of CPUs
  // requested by app", and "TestCase08: Sum of CPUs requested by multiple containers".
  EXPECT_EQ(
      MakeAdmissionRequest(Guaranteed({{5000, kGi, true}, {2000, kGi, false}})).pod_exclusive_cpus,
      5);
  EXPECT_EQ(MakeAdmissionRequest(Guaranteed({{2000, kGi}, {4000, kGi}, {2000, kGi, true}}))
                .pod_exclusive_cpus,
            6);
  // "TestCase01: if requestedCPU == 0, Pod is not Guaranteed Qos".
  IncomingPod burstable = Guaranteed({{2000, kGi}});
  burstable.qos = QosClass::kBurstable;
  EXPECT_FALSE(MakeAdmissionRequest(burstable).any_hint);
  // Without per-container data the pod's totals count as one container.
  IncomingPod legacy;
  legacy.qos = QosClass::kGuaranteed;
  legacy.cpu_request_millicores = 4000;
  EXPECT_EQ(MakeAdmissionRequest(legacy).pod_exclusive_cpus, 4);
}

TEST(AdmitTest, TooManyNumaNodesFailOpen) {
  AdmissionProfile node = Node(TopologyPolicy::kSingleNumaNode, {0, 0});
  node.too_many_numa_nodes = true;
  AdmissionResult r;
  EXPECT_TRUE(Admit(node, MakeAdmissionRequest(Guaranteed({{64000, kGi}})), {}, r, nullptr));
}

}  // namespace
}  // namespace neighborly::extender
