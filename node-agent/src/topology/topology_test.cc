#include "node-agent/src/topology/topology.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Two sockets of two CPUs; the L3 sits at index4 on purpose (level decides).
void WriteTwoSocketHost(const TestTree& tree, bool with_cache) {
  tree.Write("/sys/devices/system/cpu/online", "0-3\n");
  tree.Write("/sys/devices/system/node/online", "0-1\n");
  for (int node = 0; node < 2; ++node) {
    const std::string dir = absl::StrCat("/sys/devices/system/node/node", node);
    tree.Write(dir + "/cpulist", node == 0 ? "0-1\n" : "2-3\n");
    tree.Write(dir + "/distance", node == 0 ? "10 21\n" : "21 10\n");
    tree.Write(dir + "/meminfo", absl::StrCat("Node ", node, " MemTotal:       1024 kB\nNode ",
                                              node, " MemFree:        512 kB\n"));
  }
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu", cpu);
    tree.Write(dir + "/topology/physical_package_id", cpu < 2 ? "0\n" : "1\n");
    // One core of two SMT threads per socket.
    tree.Write(dir + "/topology/core_id", "0\n");
    tree.Write(dir + "/topology/thread_siblings_list", cpu < 2 ? "0-1\n" : "2-3\n");
    if (!with_cache) continue;
    tree.Write(dir + "/cache/index0/level", "1\n");
    tree.Write(dir + "/cache/index3/level", "2\n");
    tree.Write(dir + "/cache/index4/level", "3\n");
    tree.Write(dir + "/cache/index4/id", cpu < 2 ? "0\n" : "8\n");
    tree.Write(dir + "/cache/index4/size", "36608K\n");
    tree.Write(dir + "/cache/index4/shared_cpu_list", cpu < 2 ? "0-1\n" : "2-3\n");
  }
}

TEST(TopologyTest, ReadsNumaAndL3ByLevel) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/true);
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_THAT(topology->cpus_online, ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(topology->numa_nodes.size(), 2u);
  EXPECT_EQ(topology->numa_nodes[1].id, 1u);
  EXPECT_THAT(topology->numa_nodes[1].cpus, ElementsAre(2, 3));
  EXPECT_EQ(topology->numa_nodes[1].memory_bytes, 1024u * 1024);
  EXPECT_THAT(topology->numa_nodes[0].distances, ElementsAre(10, 21));
  ASSERT_EQ(topology->l3_domains.size(), 2u);
  EXPECT_EQ(topology->l3_domains[1].id, 8u);
  EXPECT_THAT(topology->l3_domains[1].cpus, ElementsAre(2, 3));
  EXPECT_EQ(topology->l3_domains[1].size_bytes, 36608u * 1024);
  EXPECT_EQ(topology->l3_domains[1].numa_node, 1u);
  EXPECT_THAT(topology->note, IsEmpty());

  telemetry::v1::Topology proto;
  ToProto(*topology, &proto);
  EXPECT_EQ(proto.cpus_online(), 4u);
  EXPECT_EQ(proto.l3_domains(1).cpus(), "2-3");
  EXPECT_EQ(proto.numa_nodes(0).distances_size(), 2);
  ASSERT_EQ(proto.cores_size(), 2);
  EXPECT_EQ(proto.cores(1).socket(), 1u);
  EXPECT_EQ(proto.cores(1).cpus(), "2-3");
  EXPECT_EQ(proto.cores(1).numa_node(), 1u);
}

TEST(TopologyTest, ReadsSmtSiblingsAsCores) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/true);
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->cores.size(), 2u);
  EXPECT_EQ(topology->cores[0].socket, 0u);
  EXPECT_THAT(topology->cores[0].cpus, ElementsAre(0, 1));
  EXPECT_EQ(topology->cores[1].numa_node, 1u);

  // An offline sibling is no CPU to hand out: cpu3 offline leaves core {2}.
  tree.Write("/sys/devices/system/cpu/online", "0-2\n");
  topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->cores.size(), 2u);
  EXPECT_THAT(topology->cores[1].cpus, ElementsAre(2));
}

TEST(TopologyTest, NoCoresWithoutSiblingInformation) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/true);
  tree.Write("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "0-1\n");
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_THAT(topology->cores, IsEmpty());
  EXPECT_THAT(topology->note, HasSubstr("thread_siblings_list: does not name cpu2"));
  tree.Remove("/sys/devices/system/cpu/cpu1/topology/core_id");
  topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_THAT(topology->cores, IsEmpty());
  EXPECT_THAT(topology->note, HasSubstr("no SMT information in sysfs"));
}

TEST(TopologyTest, FallsBackToPackagesWithoutCacheInfo) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/false);
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->l3_domains.size(), 2u);
  EXPECT_THAT(topology->l3_domains[1].cpus, ElementsAre(2, 3));
  EXPECT_FALSE(topology->l3_domains[1].size_bytes.has_value());
  EXPECT_THAT(topology->note, HasSubstr("one L3 domain per package"));
}

TEST(TopologyTest, FallsBackToNumaNodesWithoutPackages) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/false);
  tree.Remove("/sys/devices/system/cpu/cpu3/topology");
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->l3_domains.size(), 2u);
  EXPECT_EQ(topology->l3_domains[1].numa_node, 1u);
  EXPECT_THAT(topology->note, HasSubstr("one L3 domain per NUMA node"));
}

TEST(TopologyTest, NoNumaSysfsMeansOneNode) {
  TestTree tree;
  tree.Write("/sys/devices/system/cpu/online", "0-1\n");
  tree.Write("/proc/meminfo", "MemTotal:        2048 kB\n");
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->numa_nodes.size(), 1u);
  EXPECT_EQ(topology->numa_nodes[0].memory_bytes, 2048u * 1024);
  EXPECT_THAT(topology->note, HasSubstr("no NUMA information"));
}

TEST(TopologyTest, HostileContentIsAnErrorOrANoteNeverACrash) {
  TestTree tree;
  WriteTwoSocketHost(tree, /*with_cache=*/true);
  tree.Write("/sys/devices/system/node/node0/distance", "10 banana\n");
  tree.Write("/sys/devices/system/node/node1/meminfo", "garbage\n");
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_THAT(topology->note, HasSubstr("node0 distances unusable"));
  EXPECT_THAT(topology->note, HasSubstr("node1 memory unknown"));
  EXPECT_FALSE(topology->numa_nodes[1].memory_bytes.has_value());

  tree.Write("/sys/devices/system/cpu/online", "0-99999999\n");
  absl::StatusOr<Topology> bad = ReadTopology(*NewRealFilesystem(tree.root()));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("/sys/devices/system/cpu/online"));
}

TEST(TopologyTest, ParsersRejectJunk) {
  EXPECT_EQ(*ParseCacheSize("36608K\n"), 36608u * 1024);
  EXPECT_EQ(*ParseCacheSize("32M"), 32u << 20);
  EXPECT_FALSE(ParseCacheSize("K").ok());
  EXPECT_FALSE(ParseCacheSize("-1K").ok());
  EXPECT_EQ(*ParseMemTotalBytes("Node 0 MemTotal:  4 kB\n"), 4096u);
  EXPECT_FALSE(ParseMemTotalBytes("Node 0 MemFree: 4 kB\n").ok());
  EXPECT_FALSE(ParseDistances("\n").ok());
}

TEST(TopologyTest, ReadsThisMachine) {
  absl::StatusOr<Topology> topology = ReadTopology(*NewRealFilesystem("/"));
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_FALSE(topology->cpus_online.empty());
  EXPECT_FALSE(topology->numa_nodes.empty());
  EXPECT_FALSE(topology->l3_domains.empty());
  size_t covered = 0;
  for (const L3DomainInfo& domain : topology->l3_domains) covered += domain.cpus.size();
  EXPECT_GE(covered, topology->cpus_online.size());
}

}  // namespace
}  // namespace neighborly::agent
