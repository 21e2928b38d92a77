#include "bench/fleet/kubelet_cpus.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace neighborly::fleet
