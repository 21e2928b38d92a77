#include "extender/src/model/pod_spec.h"

#include <algorithm>
#include <string>

namespace neighborly::extender {
namespace {

// A container's effective request: the request, else the limit (the API
// server defaults one from the other), else nothing.
int64_t Request(const std::optional<int64_t>& request, const std::optional<int64_t>& limit) {
  return request.has_value() ? *request : limit.value_or(0);
}

bool Positive(const std::optional<int64_t>& q) { return q.has_value() && *q > 0; }

}  // namespace

QosClass ParseQosClass(std::string_view text) {
  if (text == "Guaranteed") return QosClass::kGuaranteed;
  if (text == "Burstable") return QosClass::kBurstable;
  if (text == "BestEffort") return QosClass::kBestEffort;
  return QosClass::kUnknown;
}

QosClass DeriveQos(std::span<const ContainerResources> containers,
                   std::span<const ContainerResources> init_containers) {
  bool any = false;
  bool guaranteed = true;
  for (std::span<const ContainerResources> list : {containers, init_containers}) {
    for (const ContainerResources& c : list) {
      any = any || Positive(c.request_cpu_millicores) || Positive(c.request_memory_bytes) ||
            Positive(c.limit_cpu_millicores) || Positive(c.limit_memory_bytes);
      if (!Positive(c.limit_cpu_millicores) || !Positive(c.limit_memory_bytes)) {
        guaranteed = false;
        continue;
      }
      const int64_t request_cpu = c.request_cpu_millicores.value_or(*c.limit_cpu_millicores);
      const int64_t request_memory = c.request_memory_bytes.value_or(*c.limit_memory_bytes);
      if (request_cpu != *c.limit_cpu_millicores || request_memory != *c.limit_memory_bytes) {
        guaranteed = false;
      }
    }
  }
  if (!any) return QosClass::kBestEffort;
  return guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
}

void DerivePodResources(std::span<const ContainerResources> containers,
                        std::span<const ContainerResources> init_containers,
                        std::string_view qos_text, IncomingPod& pod) {
  // Effective requests: the sum over containers, or the largest init container
  // if that is larger (init containers run one at a time, before the others).
  int64_t cpu = 0, memory = 0, init_cpu = 0, init_memory = 0, cpu_limit = 0;
  bool every_cpu_limited = !containers.empty();
  for (const ContainerResources& c : containers) {
    cpu += Request(c.request_cpu_millicores, c.limit_cpu_millicores);
    memory += Request(c.request_memory_bytes, c.limit_memory_bytes);
    if (c.limit_cpu_millicores.value_or(0) > 0) {
      cpu_limit += *c.limit_cpu_millicores;
    } else {
      every_cpu_limited = false;
    }
  }
  pod.cpu_limit_millicores = every_cpu_limited ? cpu_limit : 0;
  for (const ContainerResources& c : init_containers) {
    init_cpu = std::max(init_cpu, Request(c.request_cpu_millicores, c.limit_cpu_millicores));
    init_memory = std::max(init_memory, Request(c.request_memory_bytes, c.limit_memory_bytes));
  }
  pod.cpu_request_millicores = std::max(cpu, init_cpu);
  pod.memory_request_bytes = std::max(memory, init_memory);
  // Per container, for the topology manager emulation (issue 14).
  pod.containers.clear();
  pod.containers.reserve(containers.size() + init_containers.size());
  for (const ContainerResources& c : containers) {
    pod.containers.push_back({Request(c.request_cpu_millicores, c.limit_cpu_millicores),
                              Request(c.request_memory_bytes, c.limit_memory_bytes), false});
  }
  for (const ContainerResources& c : init_containers) {
    pod.containers.push_back({Request(c.request_cpu_millicores, c.limit_cpu_millicores),
                              Request(c.request_memory_bytes, c.limit_memory_bytes), true});
  }
  pod.qos = ParseQosClass(qos_text);
  if (pod.qos == QosClass::kUnknown) pod.qos = DeriveQos(containers, init_containers);
  pod.wants_exclusive_cpus = pod.qos == QosClass::kGuaranteed && pod.cpu_request_millicores > 0 &&
                             pod.cpu_request_millicores % 1000 == 0;
}

void ControllerOwner::Offer(std::string_view kind, std::string_view name, bool controller,
                            IncomingPod& pod) {
  // The first owner stands until a controller comes; after a controller, nothing.
  if (have_controller_ || (!controller && !pod.owner_kind.empty())) return;
  pod.owner_kind = std::string(kind);
  pod.owner_name = std::string(name);
  have_controller_ = controller;
}

}  // namespace neighborly::extender
