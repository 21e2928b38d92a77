// Issue 27 part 3 on the model: on an AMD EPYC-shaped node (one L3 per CCD,
// eight per socket) the pod is judged on the L3 domain the kubelet's exact
// CPU choice gives it (cpu_assignment.h). With prefer-align-cpus-by-uncorecache
// a cache-sensitive pinned pod lands on a CCD apart from a streamer; without
// it the kubelet packs cores into the streamer's CCD, and the decision says so.
#include <string>

#include "absl/time/time.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr uint64_t kCcdL3Bytes = 32ull << 20;

// 2 sockets (NPS1) x 8 CCDs x 2 cores x SMT2: core c is CPUs c and c+32, CCD
// (L3 domain) c/2; reserved core 0. A streamer (batch, pinned) holds core 2,
// half of CCD 1, and fills its L3.
tv1::NodeReport EpycNode(const std::string& name, bool uncore_option) {
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
  k->set_topology_manager_policy("best-effort");
  k->set_topology_manager_scope("container");
  k->set_reserved_cpus("0,32");
  (*k->mutable_cpu_manager_policy_options())["full-pcpus-only"] = "true";
  if (uncore_option) {
    (*k->mutable_cpu_manager_policy_options())["prefer-align-cpus-by-uncorecache"] = "true";
  }
  tv1::Topology* t = r.mutable_topology();
  t->set_cpus_online(64);
  for (uint32_t s = 0; s < 2; ++s) {
    tv1::NumaNode* n = t->add_numa_nodes();
    n->set_id(s);
    n->set_cpus(s == 0 ? "0-15,32-47" : "16-31,48-63");
    n->set_memory_bytes(128ull << 30);
    n->add_distances(s == 0 ? 10 : 32);
    n->add_distances(s == 0 ? 32 : 10);
    n->set_peak_membw_bytes_per_second(150'000'000'000);
    n->set_peak_membw_source("scenario");
    n->set_membw_bytes_per_second(s == 0 ? 20'000'000'000 : 0);
  }
  for (uint32_t c = 0; c < 32; ++c) {
    tv1::CpuCore* core = t->add_cores();
    core->set_socket(c / 16);
    core->set_core_id(c % 16);
    core->set_cpus(std::to_string(c) + "," + std::to_string(c + 32));
    core->set_numa_node(c / 16);
  }
  for (uint32_t d = 0; d < 16; ++d) {
    tv1::L3Domain* l3 = t->add_l3_domains();
    l3->set_id(d);
    l3->set_cpus(std::to_string(2 * d) + "-" + std::to_string(2 * d + 1) + "," +
                 std::to_string(2 * d + 32) + "-" + std::to_string(2 * d + 33));
    l3->set_size_bytes(kCcdL3Bytes);
    l3->set_numa_node(d / 8);
    l3->set_occupancy_bytes(d == 1 ? 30ull << 20 : 1ull << 20);
    l3->set_membw_total_bytes_per_second(d == 1 ? 20'000'000'000 : 0);
  }
  testing::AddPod(r, {.uid = "streamer",
                      .namespace_name = "analytics",
                      .name = "event-scan",
                      .qos = tv1::QOS_CLASS_GUARANTEED,
                      .annotations = {{"neighborly.io/class", "batch"}},
                      .cpu_request_millicores = 2000,
                      .memory_request_bytes = 8ull << 30,
                      .exclusive_cpus = "2,34",
                      .llc_bytes = 30ull << 20,
                      .membw_bytes_per_second = 20'000'000'000});
  return r;
}

IncomingPod CacheSensitivePod() {
  IncomingPod pod;
  pod.uid = "uid-article";
  pod.namespace_name = "content";
  pod.name = "article-service-x";
  pod.qos = QosClass::kGuaranteed;
  pod.annotations["neighborly.io/class"] = "latency-critical";
  pod.annotations["neighborly.io/llc-bytes"] = "18M";
  pod.annotations["neighborly.io/membw-bytes-per-second"] = "2.8G";
  pod.cpu_request_millicores = 4000;
  pod.memory_request_bytes = 4ll << 30;
  pod.containers.push_back({4000, 4ll << 30, false});
  return pod;
}

NodeDecision Evaluate(const tv1::NodeReport& report, const ModelConfig& config) {
  const NodeProfile p = BuildNodeProfile(report, config, nullptr, kT0);
  NodeDecision d;
  EvaluateNode(MakePodRequest(CacheSensitivePod(), nullptr, config), &p, {}, kT0, config, d);
  return d;
}

std::string PlacementText(const NodeDecision& d) {
  for (const Term& t : ExplainTerms(d)) {
    if (t.name == "placement") return std::string(t.detail);
  }
  return "";
}

TEST(CcxPlacementTest, UncoreOptionPutsTheCacheSensitivePodOnAFreeCcd) {
  const ModelConfig config;
  const NodeDecision aligned = Evaluate(EpycNode("aligned", true), config);
  ASSERT_TRUE(aligned.feasible) << aligned.reason;
  // The kubelet takes CCD 2 whole (cores 4-5), apart from the streamer's CCD 1.
  EXPECT_EQ(aligned.numa_node, 0);
  EXPECT_EQ(aligned.l3_domain, 2);
  EXPECT_EQ(aligned.l3_span, 1);
  EXPECT_THAT(PlacementText(aligned),
              HasSubstr("prefer-align-cpus-by-uncorecache fits the pod into one L3 domain"));
}

TEST(CcxPlacementTest, WithoutTheOptionThePodWouldShareTheStreamersCcdAndTheDecisionSaysWhy) {
  const ModelConfig config;
  const NodeDecision packed = Evaluate(EpycNode("packed", false), config);
  const NodeDecision aligned = Evaluate(EpycNode("aligned", true), config);
  ASSERT_TRUE(aligned.feasible) << aligned.reason;
  // Packing takes the lowest whole cores, 1 and 3: CCD 0 and the streamer's
  // CCD 1. The model judges the busier of the two.
  // There the streamer's 30 MiB and the pod's 18 MiB overflow the 32 MiB L3:
  // refused for predicted harm, naming the L3 domain, and the placement term
  // says why the kubelet puts it there.
  EXPECT_FALSE(packed.feasible);
  EXPECT_THAT(packed.reason, HasSubstr("predicted slowdown"));
  EXPECT_THAT(packed.reason, HasSubstr("L3 domain 1"));
  EXPECT_EQ(packed.l3_domain, 1);
  EXPECT_EQ(packed.l3_span, 2);
  EXPECT_THAT(PlacementText(packed), HasSubstr("prefer-align-cpus-by-uncorecache off"));
  EXPECT_THAT(PlacementText(packed), HasSubstr("the pod spans 2 L3 domains"));
  EXPECT_GE(aligned.score, 7) << PlacementText(aligned);
}

// The same pod on the old guess (the lowest free core's L3) would have been
// judged on CCD 0 and looked harmless: the exact allocation is what finds the
// streamer.
TEST(CcxPlacementTest, ExactPlanDiffersFromTheLowestFreeCoreGuess) {
  const tv1::NodeReport r = EpycNode("packed", false);
  const ModelConfig config;
  const NodeProfile p = BuildNodeProfile(r, config, nullptr, kT0);
  ASSERT_TRUE(p.admission.split_l3);
  ASSERT_FALSE(p.admission.numa.empty());
  const AdmissionNuma& numa0 = p.admission.numa[0];
  EXPECT_EQ(numa0.first_free_l3, 0);  // core 1, CCD 0
  EXPECT_EQ(numa0.L3For(4), 1);       // cores 1 and 3: the streamer's CCD counts
  EXPECT_EQ(numa0.L3SpanFor(4), 2);
  EXPECT_EQ(numa0.L3For(2), 0);       // one core: core 1 alone
}

}  // namespace
}  // namespace neighborly::extender
