// Issue 27 part 3, bandwidth: NUMA nodes inside one socket (AMD NPS4, Intel
// SNC-2) share its fabric, so streamers on the other NUMA nodes of the
// incoming pod's socket slow it more than the same streamers on the other
// socket; sockets of one NUMA node each (NPS1) are unchanged
// (CoupleSocketUtilisation in node_profile.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr uint32_t kCores = 32;  // 2 sockets x 16 cores, SMT2: core c is CPUs c and c + 32
constexpr uint64_t kNodePeak = 40'000'000'000;
constexpr uint64_t kStreamerBw = 32'000'000'000;  // 80 % of its NUMA node's peak

// 2 sockets, `numa_per_socket` NUMA nodes each (4: EPYC NPS4, 2: SNC-2, 1:
// NPS1), one L3 domain per NUMA node. A pinned streamer on each NUMA node
// listed in `streamers` (on its second core); single-numa-node admission, so
// the incoming pod lands on NUMA node 0 (its lowest free cores).
tv1::NodeReport Node(const std::string& name, uint32_t numa_per_socket,
                     const std::vector<uint32_t>& streamers) {
  const uint32_t numa_count = 2 * numa_per_socket;
  const uint32_t cores_per_numa = kCores / numa_count;
  tv1::NodeReport r;
  r.set_node_name(name);
  r.set_agent_version("test");
  r.set_boot_id("boot-" + name);
  r.set_sequence(1);
  r.mutable_window_start()->set_seconds(1'700'000'000);
  r.mutable_window_duration()->set_seconds(1);
  r.mutable_capabilities()->mutable_resctrl_occupancy()->set_available(true);
  r.mutable_capabilities()->mutable_resctrl_mbm_total()->set_available(true);
  tv1::KubeletPolicies* k = r.mutable_kubelet();
  k->set_cpu_manager_policy("static");
  k->set_topology_manager_policy("single-numa-node");
  k->set_topology_manager_scope("container");
  k->set_reserved_cpus("31,63");
  tv1::Topology* t = r.mutable_topology();
  t->set_cpus_online(2 * kCores);
  auto streams = [&](uint32_t n) {
    for (uint32_t s : streamers) {
      if (s == n) return true;
    }
    return false;
  };
  auto cpus_of = [&](uint32_t n) {
    const uint32_t a = n * cores_per_numa, b = a + cores_per_numa - 1;
    return absl::StrCat(a, "-", b, ",", a + kCores, "-", b + kCores);
  };
  for (uint32_t n = 0; n < numa_count; ++n) {
    tv1::NumaNode* numa = t->add_numa_nodes();
    numa->set_id(n);
    numa->set_cpus(cpus_of(n));
    numa->set_memory_bytes(64ull << 30);
    for (uint32_t m = 0; m < numa_count; ++m) {
      numa->add_distances(m == n ? 10 : (m / numa_per_socket == n / numa_per_socket ? 12 : 32));
    }
    numa->set_peak_membw_bytes_per_second(kNodePeak);
    numa->set_peak_membw_source("scenario");
    numa->set_membw_bytes_per_second(streams(n) ? kStreamerBw : 0);
    tv1::L3Domain* l3 = t->add_l3_domains();
    l3->set_id(n);
    l3->set_cpus(cpus_of(n));
    l3->set_size_bytes(32ull << 20);
    l3->set_numa_node(n);
    l3->set_occupancy_bytes(streams(n) ? 4ull << 20 : 1ull << 20);
    l3->set_membw_total_bytes_per_second(streams(n) ? kStreamerBw : 0);
  }
  for (uint32_t c = 0; c < kCores; ++c) {
    tv1::CpuCore* core = t->add_cores();
    core->set_socket(c / (kCores / 2));
    core->set_core_id(c % (kCores / 2));
    core->set_cpus(absl::StrCat(c, ",", c + kCores));
    core->set_numa_node(c / cores_per_numa);
  }
  for (uint32_t n : streamers) {
    const uint32_t core = n * cores_per_numa + 1;
    testing::AddPod(r, {.uid = absl::StrCat("streamer-", n),
                        .namespace_name = "analytics",
                        .name = absl::StrCat("event-scan-", n),
                        .qos = tv1::QOS_CLASS_GUARANTEED,
                        .annotations = {{"neighborly.io/class", "batch"}},
                        .cpu_request_millicores = 2000,
                        .memory_request_bytes = 8ull << 30,
                        .exclusive_cpus = absl::StrCat(core, ",", core + kCores),
                        .llc_bytes = 4ull << 20,
                        .membw_bytes_per_second = kStreamerBw});
  }
  return r;
}

IncomingPod ServicePod() {
  IncomingPod pod;
  pod.uid = "uid-api";
  pod.namespace_name = "content";
  pod.name = "api-x";
  pod.qos = QosClass::kGuaranteed;
  pod.annotations["neighborly.io/class"] = "latency-critical";
  pod.annotations["neighborly.io/llc-bytes"] = "8M";
  pod.annotations["neighborly.io/membw-bytes-per-second"] = "2G";
  pod.cpu_request_millicores = 2000;
  pod.memory_request_bytes = 4ll << 30;
  pod.containers.push_back({2000, 4ll << 30, false});
  return pod;
}

NodeDecision Evaluate(const tv1::NodeReport& report, const ModelConfig& config) {
  const NodeProfile p = BuildNodeProfile(report, config, nullptr, kT0);
  NodeDecision d;
  EvaluateNode(MakePodRequest(ServicePod(), nullptr, config), &p, {}, kT0, config, d);
  return d;
}

TEST(SocketBandwidthTest, SocketsAreReadFromTheCores) {
  const ModelConfig config;
  const NodeProfile nps4 = BuildNodeProfile(Node("nps4", 4, {}), config, nullptr, kT0);
  ASSERT_EQ(nps4.numa.size(), 8u);
  EXPECT_TRUE(nps4.numa_shares_socket);
  for (size_t n = 0; n < 8; ++n) EXPECT_EQ(nps4.numa[n].socket, n / 4) << "NUMA node " << n;
  const NodeProfile nps1 = BuildNodeProfile(Node("nps1", 1, {}), config, nullptr, kT0);
  EXPECT_FALSE(nps1.numa_shares_socket);
  EXPECT_NE(nps1.numa[0].socket, nps1.numa[1].socket);
  // Without core information every NUMA node is a socket of its own.
  tv1::NodeReport bare = Node("bare", 4, {});
  bare.mutable_topology()->clear_cores();
  EXPECT_FALSE(BuildNodeProfile(bare, config, nullptr, kT0).numa_shares_socket);
}

TEST(SocketBandwidthTest, Nps4StreamersOnTheSameSocketSlowThePodMoreThanOnTheOtherSocket) {
  const ModelConfig config;
  const NodeDecision same = Evaluate(Node("same", 4, {1, 2, 3}), config);
  const NodeDecision other = Evaluate(Node("other", 4, {5, 6, 7}), config);
  ASSERT_TRUE(same.feasible) << same.reason;
  ASSERT_TRUE(other.feasible) << other.reason;
  ASSERT_EQ(same.numa_node, 0);
  ASSERT_EQ(other.numa_node, 0);
  // Socket 0 at (3 x 32 + 2) / 160 GB/s: coupled 0.3 of that, NUMA node 0
  // sees ~22 % instead of its own 5 %.
  EXPECT_GT(same.membw_utilisation, 0.2);
  EXPECT_LT(other.membw_utilisation, 0.06);
  EXPECT_GT(same.predicted_slowdown, other.predicted_slowdown + 0.01);
  EXPECT_LT(same.score, other.score);
}

TEST(SocketBandwidthTest, Snc2CouplesTheSocketsTwoNumaNodes) {
  const ModelConfig config;
  const NodeDecision same = Evaluate(Node("same", 2, {1}), config);
  const NodeDecision other = Evaluate(Node("other", 2, {2, 3}), config);
  ASSERT_TRUE(same.feasible) << same.reason;
  ASSERT_TRUE(other.feasible) << other.reason;
  EXPECT_GT(same.predicted_slowdown, other.predicted_slowdown);
}

TEST(SocketBandwidthTest, ZeroCouplingMakesSubSocketNodesIndependent) {
  ModelConfig config;
  config.interference.socket_membw_coupling = 0;
  const NodeDecision same = Evaluate(Node("same", 4, {1, 2, 3}), config);
  const NodeDecision other = Evaluate(Node("other", 4, {5, 6, 7}), config);
  EXPECT_DOUBLE_EQ(same.predicted_slowdown, other.predicted_slowdown);
  EXPECT_DOUBLE_EQ(same.membw_utilisation, other.membw_utilisation);
}

TEST(SocketBandwidthTest, OneNumaNodePerSocketIsUnchangedByTheCoupling) {
  ModelConfig coupled, independent;
  independent.interference.socket_membw_coupling = 0;
  const tv1::NodeReport r = Node("nps1", 1, {1});
  const NodeDecision a = Evaluate(r, coupled);
  const NodeDecision b = Evaluate(r, independent);
  EXPECT_DOUBLE_EQ(a.predicted_slowdown, b.predicted_slowdown);
  EXPECT_EQ(a.score, b.score);
}

}  // namespace
}  // namespace neighborly::extender
