// The pod derivation both transports share: QoS as Kubernetes' GetPodQOS
// computes it, effective requests with init containers, the CPU limit, the
// pinning decision and the controller owner.
#include "extender/src/model/pod_spec.h"

#include <vector>

#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

ContainerResources Res(std::optional<int64_t> cpu_req, std::optional<int64_t> cpu_lim,
                       std::optional<int64_t> mem_req, std::optional<int64_t> mem_lim) {
  ContainerResources r;
  r.request_cpu_millicores = cpu_req;
  r.limit_cpu_millicores = cpu_lim;
  r.request_memory_bytes = mem_req;
  r.limit_memory_bytes = mem_lim;
  return r;
}

TEST(PodSpecTest, QosAsKubernetesDerivesIt) {
  using V = std::vector<ContainerResources>;
  EXPECT_EQ(DeriveQos(V{}, V{}), QosClass::kBestEffort);
  EXPECT_EQ(DeriveQos(V{Res({}, {}, {}, {})}, V{}), QosClass::kBestEffort);
  // Limits alone: requests default to them.
  EXPECT_EQ(DeriveQos(V{Res({}, 1000, {}, 1 << 30)}, V{}), QosClass::kGuaranteed);
  EXPECT_EQ(DeriveQos(V{Res(500, 1000, 1 << 30, 1 << 30)}, V{}), QosClass::kBurstable);
  // One container without memory limit makes the pod Burstable.
  EXPECT_EQ(DeriveQos(V{Res(1000, 1000, 1 << 30, 1 << 30), Res(100, 100, {}, {})}, V{}),
            QosClass::kBurstable);
  // Init containers count too.
  EXPECT_EQ(DeriveQos(V{Res(1000, 1000, 1 << 30, 1 << 30)}, V{Res(100, {}, {}, {})}),
            QosClass::kBurstable);
  // Zero quantities are "not set".
  EXPECT_EQ(DeriveQos(V{Res(0, 0, 0, 0)}, V{}), QosClass::kBestEffort);
  EXPECT_EQ(ParseQosClass("Guaranteed"), QosClass::kGuaranteed);
  EXPECT_EQ(ParseQosClass("guaranteed"), QosClass::kUnknown);
}

TEST(PodSpecTest, EffectiveRequestsLimitsAndPinning) {
  IncomingPod pod;
  const std::vector<ContainerResources> main = {Res(500, 1000, 1 << 28, {}), Res({}, 250, {}, {})};
  const std::vector<ContainerResources> init = {Res(3000, {}, 1 << 30, {})};
  DerivePodResources(main, init, "", pod);
  EXPECT_EQ(pod.cpu_request_millicores, 3000);  // the init container is larger
  EXPECT_EQ(pod.memory_request_bytes, 1 << 30);
  EXPECT_EQ(pod.cpu_limit_millicores, 1250);  // every container has a CPU limit
  EXPECT_EQ(pod.qos, QosClass::kBurstable);
  EXPECT_FALSE(pod.wants_exclusive_cpus);
  ASSERT_EQ(pod.containers.size(), 3u);
  EXPECT_EQ(pod.containers[1].cpu_request_millicores, 250);  // from its limit
  EXPECT_TRUE(pod.containers[2].init);

  const std::vector<ContainerResources> unlimited = {Res(500, {}, {}, {})};
  DerivePodResources(unlimited, {}, "", pod);
  EXPECT_EQ(pod.cpu_limit_millicores, 0);
  EXPECT_EQ(pod.containers.size(), 1u);  // replaced, not appended

  const std::vector<ContainerResources> whole = {Res(4000, 4000, 1 << 30, 1 << 30)};
  DerivePodResources(whole, {}, "", pod);
  EXPECT_EQ(pod.qos, QosClass::kGuaranteed);
  EXPECT_TRUE(pod.wants_exclusive_cpus);
  const std::vector<ContainerResources> fractional = {Res(1500, 1500, 1 << 30, 1 << 30)};
  DerivePodResources(fractional, {}, "", pod);
  EXPECT_FALSE(pod.wants_exclusive_cpus);
  // The status wins over the derivation.
  DerivePodResources(whole, {}, "Burstable", pod);
  EXPECT_EQ(pod.qos, QosClass::kBurstable);
  EXPECT_FALSE(pod.wants_exclusive_cpus);
}

TEST(PodSpecTest, ControllerOwnerIsTheControllerElseTheFirst) {
  IncomingPod pod;
  ControllerOwner first;
  first.Offer("Node", "n1", false, pod);
  first.Offer("X", "y", false, pod);
  EXPECT_EQ(pod.owner_kind, "Node");
  EXPECT_EQ(pod.owner_name, "n1");
  ControllerOwner controller;
  IncomingPod other;
  controller.Offer("Job", "first", false, other);
  controller.Offer("CronJob", "c", true, other);
  controller.Offer("Other", "late", true, other);
  EXPECT_EQ(other.owner_kind, "CronJob");
  EXPECT_EQ(other.owner_name, "c");
}

}  // namespace
}  // namespace neighborly::extender
