// Table tests of the kubelet static CPU manager emulation. Every case named
// in quotes mirrors, input for input and result for result, the upstream
// kubelet test case of that name in pkg/kubelet/cm/cpumanager/
// cpu_assignment_test.go (TestTakeByTopologyNUMAPacked with its
// commonTakeByTopologyTestCases, TestTakeByTopologyNUMADistributed with
// commonTakeByTopologyExtendedTestCases) and policy_static_test.go; the
// topologies are those of the upstream fixtures (policy_test.go), which name
// no uncore cache for the older ones (every CPU in cache 0). Cases without
// an upstream name are ours, on the fleet shapes.
#include "extender/src/model/cpu_assignment.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/cpu_list.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

CpuIds Cpus(const std::string& list) {
  absl::StatusOr<CpuSet> set = ParseCpuList(list);
  EXPECT_TRUE(set.ok()) << list;
  CpuIds out;
  for (uint32_t c : set.value_or(CpuSet{})) out.push_back(static_cast<int32_t>(c));
  return out;
}

std::string Format(const CpuIds& cpus) {
  CpuSet set(cpus.begin(), cpus.end());
  return FormatCpuList(set);
}

CpuTopologyView Topo(int32_t n, int32_t (*core)(int32_t), int32_t (*socket)(int32_t),
                     int32_t (*numa)(int32_t), int32_t (*uncore)(int32_t)) {
  std::vector<KubeletCpu> cpus;
  for (int32_t c = 0; c < n; ++c) cpus.push_back({c, core(c), socket(c), numa(c), uncore(c)});
  absl::StatusOr<CpuTopologyView> view = CpuTopologyView::Make(std::move(cpus));
  EXPECT_TRUE(view.ok()) << view.status();
  return *std::move(view);
}

int32_t Zero(int32_t) { return 0; }

// topoSingleSocketHT: 1 socket, 4 cores, siblings {i, i+4}.
const CpuTopologyView& SingleSocketHT() {
  static const CpuTopologyView* t =
      new CpuTopologyView(Topo(8, [](int32_t c) { return c % 4; }, Zero, Zero, Zero));
  return *t;
}
// topoDualSocketHT: 2 sockets (= NUMA nodes), 6 cores, siblings {i, i+6},
// even CPUs on socket 0.
const CpuTopologyView& DualSocketHT() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(12, [](int32_t c) { return c % 6; }, [](int32_t c) { return c % 2; },
           [](int32_t c) { return c % 2; }, Zero));
  return *t;
}
// topoDualSocketMultiNumaPerSocketHT: 2 sockets x 2 NUMA nodes x 10 cores,
// siblings {i, i+40}.
const CpuTopologyView& DualSocketMultiNumaPerSocketHT() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(80, [](int32_t c) { return c % 40; }, [](int32_t c) { return (c % 40) / 20; },
           [](int32_t c) { return (c % 40) / 10; }, Zero));
  return *t;
}
// topoUncoreSingleSocketNoSMT: 16 cores, 4 uncore caches of 4.
const CpuTopologyView& UncoreSingleSocketNoSMT() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(16, [](int32_t c) { return c; }, Zero, Zero, [](int32_t c) { return c / 4; }));
  return *t;
}
// topoUncoreDualSocketNoSMT: 2 sockets (= NUMA nodes) x 2 caches x 4 cores.
const CpuTopologyView& UncoreDualSocketNoSMT() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(16, [](int32_t c) { return c; }, [](int32_t c) { return c / 8; },
           [](int32_t c) { return c / 8; }, [](int32_t c) { return c / 4; }));
  return *t;
}
// topoUncoreSingleSocketMultiNuma: 1 socket, 2 NUMA nodes, 4 caches of 4.
const CpuTopologyView& UncoreSingleSocketMultiNuma() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(16, [](int32_t c) { return c; }, Zero, [](int32_t c) { return c / 8; },
           [](int32_t c) { return c / 4; }));
  return *t;
}
// topoUncoreSingleSocketSMT: 8 cores x SMT2 (siblings {i, i+8}), 2 caches of 4 cores.
const CpuTopologyView& UncoreSingleSocketSMT() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(16, [](int32_t c) { return c % 8; }, Zero, Zero, [](int32_t c) { return (c % 8) / 4; }));
  return *t;
}
// Ours: the EPYC fixture host shape, 2 sockets x 8 CCDs x 2 cores x SMT2,
// siblings {i, i+32}; NPS1 (a NUMA node per socket).
const CpuTopologyView& EpycNps1() {
  static const CpuTopologyView* t = new CpuTopologyView(
      Topo(64, [](int32_t c) { return c % 32; }, [](int32_t c) { return (c % 32) / 16; },
           [](int32_t c) { return (c % 32) / 16; }, [](int32_t c) { return (c % 32) / 2; }));
  return *t;
}

struct PackedCase {
  const char* name;
  const CpuTopologyView& (*topo)();
  bool uncore;
  const char* available;
  int32_t count;
  const char* error;  // substring; "" for success
  const char* result;
};

// TestTakeByTopologyNUMAPacked (commonTakeByTopologyTestCases first).
const PackedCase kPacked[] = {
    {"take more cpus than are available from single socket with HT", SingleSocketHT, false,
     "0,2,4,6", 5, "not enough cpus available to satisfy request: requested=5, available=4", ""},
    {"take zero cpus from single socket with HT", SingleSocketHT, false, "0-7", 0, "", ""},
    {"take one cpu from single socket with HT", SingleSocketHT, false, "0-7", 1, "", "0"},
    {"take one cpu from single socket with HT, some cpus are taken", SingleSocketHT, false,
     "1,3,5,6,7", 1, "", "6"},
    {"take two cpus from single socket with HT", SingleSocketHT, false, "0-7", 2, "", "0,4"},
    {"take all cpus from single socket with HT", SingleSocketHT, false, "0-7", 8, "", "0-7"},
    {"take two cpus from single socket with HT, only one core totally free", SingleSocketHT, false,
     "0-3,6", 2, "", "2,6"},
    {"take a socket of cpus from dual socket with HT", DualSocketHT, false, "0-11", 6, "",
     "0,2,4,6,8,10"},
    {"take a socket of cpus from dual socket with multi-numa-per-socket with HT",
     DualSocketMultiNumaPerSocketHT, false, "0-79", 40, "", "0-19,40-59"},
    {"take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     DualSocketMultiNumaPerSocketHT, false, "0-79", 20, "", "0-9,40-49"},
    {"take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, with 1 NUMA "
     "node already taken",
     DualSocketMultiNumaPerSocketHT, false, "10-39,50-79", 20, "", "10-19,50-59"},
    {"take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT",
     DualSocketMultiNumaPerSocketHT, false, "0-79", 60, "", "0-29,40-69"},
    {"take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, "
     "a core taken",
     DualSocketMultiNumaPerSocketHT, false, "1-39,41-79", 60, "", "10-39,50-79"},
    {"take one cpu from dual socket with HT - core from Socket 0", DualSocketHT, false,
     "1-5,7-11", 1, "", "2"},
    {"allocate 4 full cores with 3 coming from the first NUMA node (filling it up) and 1 coming "
     "from the second NUMA node",
     DualSocketHT, false, "0-11", 8, "", "0-2,4,6-8,10"},
    {"allocate 32 full cores with 30 coming from the first 3 NUMA nodes (filling them up) and 2 "
     "coming from the fourth NUMA node",
     DualSocketMultiNumaPerSocketHT, false, "0-79", 64, "", "0-31,40-71"},
    // PreferAlignByUncoreCache.
    {"take cpus from two full UncoreCaches and partial from a single UncoreCache",
     UncoreSingleSocketNoSMT, true, "1-15", 10, "", "1-2,4-11"},
    {"take one cpu from dual socket with HT - core from Socket 0 (PreferAlignByUncoreCache)",
     DualSocketHT, true, "1-5,7-11", 1, "", "1"},
    {"take first available UncoreCache from first socket", UncoreDualSocketNoSMT, true, "0-15", 4,
     "", "0-3"},
    {"take all available UncoreCache from first socket", UncoreDualSocketNoSMT, true, "2-15", 6,
     "", "2-7"},
    {"take first available UncoreCache from second socket", UncoreDualSocketNoSMT, true, "8-15", 4,
     "", "8-11"},
    {"take first available UncoreCache from available NUMA", UncoreSingleSocketMultiNuma, true,
     "3,4-8,12", 2, "", "4-5"},
    {"take cpus from best available UncoreCache group of multi uncore cache single socket - SMT "
     "enabled",
     UncoreSingleSocketSMT, true, "2-3,10-11,4-7,12-15", 6, "", "4-6,12-14"},
    {"take cpus from multiple UncoreCache of single socket - SMT enabled", UncoreSingleSocketSMT,
     true, "1-7,9-15", 10, "", "1,4-7,9,12-15"},
};

TEST(CpuAssignmentTest, TakeByTopologyNUMAPacked) {
  for (const PackedCase& c : kPacked) {
    SCOPED_TRACE(c.name);
    const CpuIds available = Cpus(c.available);
    absl::StatusOr<CpuIds> got = TakeByTopologyNumaPacked(c.topo(), available, c.count, c.uncore);
    if (*c.error != '\0') {
      ASSERT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Format(*got), Format(Cpus(c.result)));
  }
}

struct DistributedCase {
  const char* name;
  const CpuTopologyView& (*topo)();
  const char* available;
  int32_t count;
  int32_t group_size;
  const char* result;
};

// TestTakeByTopologyNUMADistributed (commonTakeByTopologyExtendedTestCases
// and its own cases).
const DistributedCase kDistributed[] = {
    {"allocate 4 full cores with 2 distributed across each NUMA node", DualSocketHT, "0-11", 8, 1,
     "0-3,6-9"},
    {"allocate 32 full cores with 8 distributed across each NUMA node",
     DualSocketMultiNumaPerSocketHT, "0-79", 64, 1,
     "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"},
    {"allocate 24 full cores with 8 distributed across the first 3 NUMA nodes",
     DualSocketMultiNumaPerSocketHT, "0-79", 48, 1, "0-7,10-17,20-27,40-47,50-57,60-67"},
    {"allocate 24 full cores with 8 distributed across the first 3 NUMA nodes (taking all but 2 "
     "from the first NUMA node)",
     DualSocketMultiNumaPerSocketHT, "1-29,32-39,41-69,72-79", 48, 1,
     "1-8,10-17,20-27,41-48,50-57,60-67"},
    {"allocate 24 full cores with 8 distributed across the last 3 NUMA nodes (even though all 8 "
     "could be allocated from the first NUMA node)",
     DualSocketMultiNumaPerSocketHT, "2-29,31-39,42-69,71-79", 48, 1,
     "10-17,20-27,31-38,50-57,60-67,71-78"},
    {"allocate 8 full cores with 2 distributed across each NUMA node",
     DualSocketMultiNumaPerSocketHT, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, 1,
     "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"},
    {"take one cpu from dual socket with HT - core from Socket 0", DualSocketHT, "1-5,7-11", 1, 1,
     "1"},
    {"take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2", DualSocketHT,
     "1-5,7-11", 1, 2, "2"},
    {"allocate 13 full cores distributed across the first 2 NUMA nodes",
     DualSocketMultiNumaPerSocketHT, "0-79", 26, 1, "0-6,10-16,40-45,50-55"},
    {"allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)",
     DualSocketMultiNumaPerSocketHT, "0-79", 26, 2, "0-6,10-15,40-46,50-55"},
    {"allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling "
     "over to each of NUMA 0, 1",
     DualSocketMultiNumaPerSocketHT, "0-79", 62, 1,
     "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"},
    {"allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling "
     "over to each of NUMA 0, 1, 2 (cpuGroupSize 2)",
     DualSocketMultiNumaPerSocketHT, "0-79", 62, 2,
     "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"},
    {"allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling "
     "over to each of NUMA 2, 3 (to keep balance)",
     DualSocketMultiNumaPerSocketHT, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1,
     "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"},
    {"allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling "
     "over to each of NUMA 0, 2, 3 (to keep balance with cpuGroupSize 2)",
     DualSocketMultiNumaPerSocketHT, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2,
     "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"},
    {"ensure bestRemainder chosen with NUMA nodes that have enough CPUs to satisfy the request",
     DualSocketMultiNumaPerSocketHT, "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1,
     "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"},
};

TEST(CpuAssignmentTest, TakeByTopologyNUMADistributed) {
  for (const DistributedCase& c : kDistributed) {
    SCOPED_TRACE(c.name);
    const CpuIds available = Cpus(c.available);
    absl::StatusOr<CpuIds> got =
        TakeByTopologyNumaDistributed(c.topo(), available, c.count, c.group_size);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Format(*got), Format(Cpus(c.result)));
  }
}

// The packed common cases hold for the distributed algorithm with group size 1
// (commonTakeByTopologyExtendedTestCases reuses them).
TEST(CpuAssignmentTest, TakeByTopologyNUMADistributedCommonCases) {
  for (size_t i = 0; i < 13; ++i) {  // the commonTakeByTopologyTestCases part of kPacked
    const PackedCase& c = kPacked[i];
    SCOPED_TRACE(c.name);
    const CpuIds available = Cpus(c.available);
    absl::StatusOr<CpuIds> got = TakeByTopologyNumaDistributed(c.topo(), available, c.count, 1);
    if (*c.error != '\0') {
      EXPECT_FALSE(got.ok());
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(Format(*got), Format(Cpus(c.result)));
  }
}

// policy_static_test.go: full-pcpus-only refuses a request that is not whole
// cores ("SMTAlignmentError"), as in TestStaticPolicyAdd "Request 3 CPUs,
// SMT alignment required (full-pcpus-only)".
TEST(CpuAssignmentTest, FullPcpusOnlyRefusesHalfCores) {
  StaticPolicyOptions options;
  options.full_pcpus_only = true;
  const CpuIds all = Cpus("0-7");
  absl::StatusOr<CpuIds> got = AllocateExclusiveCpus(SingleSocketHT(), options, all, 3, {});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("SMT Alignment Error"));
  got = AllocateExclusiveCpus(SingleSocketHT(), options, all, 4, {});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Format(*got), "0-1,4-5");
}

// allocateCPUs: the CPUs of the merged NUMA hint first, the rest after.
TEST(CpuAssignmentTest, NumaAffinityFirstThenTheRest) {
  const CpuIds all = Cpus("0-11");
  const int32_t numa1[] = {1};
  absl::StatusOr<CpuIds> got = AllocateExclusiveCpus(DualSocketHT(), {}, all, 2, numa1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Format(*got), "1,7");  // a whole core of NUMA node 1
  got = AllocateExclusiveCpus(DualSocketHT(), {}, all, 8, numa1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Format(*got), "0-1,3,5-7,9,11");  // all of node 1, then a core of node 0
}

// align-by-socket widens the NUMA hint to its socket (getAlignedCPUs): on
// two NUMA nodes per socket, a hint of NUMA node 0 that cannot hold the pod
// continues on NUMA node 1 of the same socket before the other socket.
TEST(CpuAssignmentTest, AlignBySocketWidensTheHintToItsSocket) {
  const CpuIds all = Cpus("0-79");
  const int32_t numa0[] = {0};
  StaticPolicyOptions options;
  options.align_by_socket = true;
  absl::StatusOr<CpuIds> got =
      AllocateExclusiveCpus(DualSocketMultiNumaPerSocketHT(), options, all, 24, numa0);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Format(*got), "0-11,40-51");
}

// Ours, on the EPYC shape: a 4-CPU pod when core 0 is reserved and a
// neighbour holds core 2 (half of CCD 1). Packed, the kubelet takes the
// lowest whole cores, 1 and 3: two L3s, one shared with the neighbour; with
// prefer-align-cpus-by-uncorecache it takes the first whole free CCD.
TEST(CpuAssignmentTest, EpycUncoreOptionKeepsAPodInOneCcd) {
  // Reserved 0,32; a neighbour holds core 2 (2,34).
  const CpuIds free = Cpus("1,3-31,33,35-63");
  absl::StatusOr<CpuIds> packed = AllocateExclusiveCpus(EpycNps1(), {}, free, 4, {});
  ASSERT_TRUE(packed.ok());
  EXPECT_THAT(UncoreCachesOf(EpycNps1(), *packed), ElementsAre(0, 1));  // split over two L3s
  StaticPolicyOptions uncore;
  uncore.prefer_align_cpus_by_uncore_cache = true;
  uncore.full_pcpus_only = true;
  absl::StatusOr<CpuIds> aligned = AllocateExclusiveCpus(EpycNps1(), uncore, free, 4, {});
  ASSERT_TRUE(aligned.ok());
  EXPECT_EQ(Format(*aligned), "4-5,36-37");
  EXPECT_THAT(UncoreCachesOf(EpycNps1(), *aligned), ElementsAre(2));
}

TEST(CpuAssignmentTest, FromReportUsesCoresAndL3Domains) {
  telemetry::v1::Topology t;
  auto* n0 = t.add_numa_nodes();
  n0->set_id(0);
  n0->set_cpus("0-3");
  for (int core = 0; core < 2; ++core) {
    auto* c = t.add_cores();
    c->set_cpus(absl::StrCat(core, ",", core + 2));
  }
  auto* l3 = t.add_l3_domains();
  l3->set_id(7);
  l3->set_cpus("0-3");
  absl::StatusOr<CpuTopologyView> view = CpuTopologyView::FromReport(t);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->num_cores(), 2);
  EXPECT_EQ(view->CpusPerCore(), 2);
  EXPECT_EQ(view->Find(2)->core, 0);
  EXPECT_EQ(view->Find(3)->uncore, 7);

  n0->set_cpus("0-3,9000");
  EXPECT_THAT(std::string(CpuTopologyView::FromReport(t).status().message()),
              HasSubstr("CPU 9000 is above 8191"));
}

}  // namespace
}  // namespace neighborly::extender
