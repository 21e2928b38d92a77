// From a pod's spec, as either transport receives it, to the IncomingPod the
// model reads: effective requests and limits, per-container requests, the QoS
// class (Kubernetes' GetPodQOS when the status gives none), whether the
// kubelet's static CPU manager would pin it, and its controller owner. The
// HTTP decoder (JSON v1.Pod) and the placement service (protobuf Pod) both
// end here, so the same pod gives the same IncomingPod on either path.
//
//   std::vector<ContainerResources> containers = ..., init = ...;
//   DerivePodResources(containers, init, "Burstable", pod);
//   ControllerOwner owner;
//   owner.Offer("ReplicaSet", "web-7d9f8c6b5", /*controller=*/true, pod);
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_POD_SPEC_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_POD_SPEC_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "extender/src/model/types.h"

namespace neighborly::extender {

// One container's cpu and memory, each absent when the spec does not set it.
struct ContainerResources {
  std::optional<int64_t> request_cpu_millicores, request_memory_bytes;
  std::optional<int64_t> limit_cpu_millicores, limit_memory_bytes;
};

// "Guaranteed" | "Burstable" | "BestEffort"; anything else is kUnknown.
QosClass ParseQosClass(std::string_view text);

// Kubernetes' GetPodQOS over cpu and memory (requests defaulted from limits,
// as the API server does before the scheduler sees the pod), over every
// container, init containers included.
QosClass DeriveQos(std::span<const ContainerResources> containers,
                   std::span<const ContainerResources> init_containers);

// Fills the resource fields of `pod` (cpu/memory requests, cpu limit,
// per-container requests, qos, wants_exclusive_cpus). `qos_text` is
// status.qosClass; empty or unknown: derived.
void DerivePodResources(std::span<const ContainerResources> containers,
                        std::span<const ContainerResources> init_containers,
                        std::string_view qos_text, IncomingPod& pod);

// Picks metadata.ownerReferences' controller (controller: true), else the
// first owner, as pod.owner_kind / owner_name. Offer each reference in order.
class ControllerOwner {
 public:
  void Offer(std::string_view kind, std::string_view name, bool controller, IncomingPod& pod);

 private:
  bool have_controller_ = false;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_POD_SPEC_H_
