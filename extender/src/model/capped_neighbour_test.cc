// Issue 27: a resident the agent holds under a resctrl cap (PodReport.resctrl_cap)
// is a smaller neighbour: the model bounds its L3 and bandwidth demand by the cap.
#include "extender/src/model/classify.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/node_profile.h"
#include "extender/src/model/testing/report_builder.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using testing::kL3Bytes;
using testing::kPeakMembw;
using testing::TwoSocketNode;
namespace tv1 = ::neighborly::telemetry::v1;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A batch streamer pinned to socket 0 that wants more L3 than there is and
// 30 GB/s (its hints: it has just started, nothing is measured yet).
tv1::NodeReport NodeWithStreamer(bool capped) {
  tv1::NodeReport r = TwoSocketNode("n");
  tv1::PodReport& p = AddPod(r, {.uid = "streamer",
                                 .name = "streamer",
                                 .qos = tv1::QOS_CLASS_GUARANTEED,
                                 .annotations = {{"neighborly.io/class", "batch"},
                                                 {"neighborly.io/llc-bytes", "40Mi"},
                                                 {"neighborly.io/membw-bytes-per-second", "30G"}},
                                 .cpu_request_millicores = 4000,
                                 .exclusive_cpus = "0-3"});
  if (capped) {
    tv1::ResctrlCap* cap = p.mutable_resctrl_cap();
    cap->set_group("neighborly-batch");
    cap->set_l3_fraction(0.25);
    cap->set_mba_fraction(0.2);
    cap->add_l3_domains(0);
  }
  return r;
}

IncomingPod Plain() {
  IncomingPod pod;
  pod.uid = "uid-plain";
  pod.namespace_name = "ns";
  pod.name = "plain";
  pod.annotations = {{"neighborly.io/llc-bytes", "10Mi"},
                     {"neighborly.io/membw-bytes-per-second", "5G"}};
  pod.qos = QosClass::kBurstable;
  pod.cpu_request_millicores = 500;
  pod.memory_request_bytes = 1 << 30;
  return pod;
}

TEST(CappedNeighbourTest, DemandBoundedByTheCap) {
  const ModelConfig config = PressureModelConfig();
  NodeProfile open = BuildNodeProfile(NodeWithStreamer(false), config, nullptr, kT0);
  NodeProfile capped = BuildNodeProfile(NodeWithStreamer(true), config, nullptr, kT0);
  ASSERT_EQ(open.pods.size(), 1u);
  ASSERT_EQ(capped.pods.size(), 1u);
  EXPECT_FALSE(open.pods[0].capped);
  EXPECT_TRUE(capped.pods[0].capped);
  EXPECT_DOUBLE_EQ(open.pods[0].llc_demand_bytes, 40.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(capped.pods[0].llc_demand_bytes, 0.25 * kL3Bytes);
  EXPECT_DOUBLE_EQ(open.pods[0].solo_membw_bytes_per_second, 30e9);
  EXPECT_DOUBLE_EQ(capped.pods[0].solo_membw_bytes_per_second, 0.2 * kPeakMembw);

  // An absolute cap (AMD units, mba_MBps) wins over the fraction.
  tv1::NodeReport amd = NodeWithStreamer(true);
  amd.mutable_pods(0)->mutable_resctrl_cap()->set_mba_bytes_per_second(4'000'000'000);
  NodeProfile a = BuildNodeProfile(amd, config, nullptr, kT0);
  EXPECT_DOUBLE_EQ(a.pods[0].solo_membw_bytes_per_second, 4e9);

  // A cap on another L3 domain does not bound this domain's occupancy.
  tv1::NodeReport elsewhere = NodeWithStreamer(true);
  elsewhere.mutable_pods(0)->mutable_resctrl_cap()->set_l3_domains(0, 1);
  NodeProfile e = BuildNodeProfile(elsewhere, config, nullptr, kT0);
  EXPECT_DOUBLE_EQ(e.pods[0].llc_demand_bytes, 40.0 * (1 << 20));
}

TEST(CappedNeighbourTest, CappedNeighbourHarmsLess) {
  const ModelConfig config = PressureModelConfig();
  NodeProfile open = BuildNodeProfile(NodeWithStreamer(false), config, nullptr, kT0);
  NodeProfile capped = BuildNodeProfile(NodeWithStreamer(true), config, nullptr, kT0);
  NodeDecision d_open, d_capped;
  EvaluateNode(MakePodRequest(Plain(), nullptr, config), &open, {}, kT0, config, d_open);
  EvaluateNode(MakePodRequest(Plain(), nullptr, config), &capped, {}, kT0, config, d_capped);
  ASSERT_TRUE(d_open.feasible) << d_open.reason;
  ASSERT_TRUE(d_capped.feasible) << d_capped.reason;
  EXPECT_LT(d_capped.harm_to_incoming, d_open.harm_to_incoming);
  EXPECT_GE(d_capped.score, d_open.score);
}

}  // namespace
}  // namespace neighborly::extender
