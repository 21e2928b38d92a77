// Test helper: NodeReports shaped like the reference scenario's nodes (2
// sockets x 8 cores, one NUMA node and one 25 MiB L3 per socket, 32 GiB and
// 50 GB/s per NUMA node), with pods added one line each.
//
//   NodeReport r = TwoSocketNode("node-1");
//   AddPod(r, {.uid = "u1", .name = "article", .annotations = {{"neighborly.io/class",
//              "latency-critical"}}, .exclusive_cpus = "2-3", .llc_bytes = 19188940});
#ifndef NEIGHBORLY_EXTENDER_SRC_MODEL_TESTING_REPORT_BUILDER_H_
#define NEIGHBORLY_EXTENDER_SRC_MODEL_TESTING_REPORT_BUILDER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "neighborly/telemetry/v1/telemetry.pb.h"

namespace neighborly::extender::testing {

inline constexpr uint64_t kL3Bytes = 26214400;             // 25 MiB per socket
inline constexpr uint64_t kNumaMemoryBytes = 34359738368;  // 32 GiB
inline constexpr uint64_t kPeakMembw = 50'000'000'000;     // 50 GB/s per NUMA node

struct PodSpec {
  std::string uid;
  std::string namespace_name = "default";
  std::string name;
  telemetry::v1::QosClass qos = telemetry::v1::QOS_CLASS_BURSTABLE;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<int64_t> cpu_request_millicores;
  std::optional<uint64_t> memory_request_bytes;
  std::string exclusive_cpus;
  std::optional<uint64_t> llc_bytes;
  std::optional<uint64_t> membw_bytes_per_second;
  std::optional<double> mpki;
};

inline telemetry::v1::NodeReport TwoSocketNode(
    const std::string& name, uint64_t sequence = 1,
    const std::string& topology_policy = "single-numa-node") {
  telemetry::v1::NodeReport r;
  r.set_node_name(name);
  r.set_agent_version("test");
  r.set_boot_id("boot-" + name);
  r.set_sequence(sequence);
  r.mutable_window_start()->set_seconds(1'700'000'000);
  r.mutable_window_duration()->set_seconds(1);
  auto* caps = r.mutable_capabilities();
  caps->mutable_resctrl_occupancy()->set_available(true);
  caps->mutable_resctrl_mbm_total()->set_available(true);
  r.mutable_kubelet()->set_cpu_manager_policy("static");
  r.mutable_kubelet()->set_topology_manager_policy(topology_policy);
  r.mutable_kubelet()->set_topology_manager_scope("container");
  auto* topo = r.mutable_topology();
  topo->set_cpus_online(16);
  for (uint32_t id = 0; id < 2; ++id) {
    auto* numa = topo->add_numa_nodes();
    numa->set_id(id);
    numa->set_cpus(id == 0 ? "0-7" : "8-15");
    numa->set_memory_bytes(kNumaMemoryBytes);
    numa->add_distances(id == 0 ? 10 : 21);
    numa->add_distances(id == 0 ? 21 : 10);
    numa->set_peak_membw_bytes_per_second(kPeakMembw);
    numa->set_peak_membw_source("scenario");
    auto* l3 = topo->add_l3_domains();
    l3->set_id(id);
    l3->set_cpus(numa->cpus());
    l3->set_size_bytes(kL3Bytes);
    l3->set_numa_node(id);
  }
  return r;
}

inline telemetry::v1::PodReport& AddPod(telemetry::v1::NodeReport& r, const PodSpec& s) {
  telemetry::v1::PodReport& p = *r.add_pods();
  p.set_uid(s.uid);
  p.set_namespace_(s.namespace_name);
  p.set_name(s.name);
  p.set_qos_class(s.qos);
  for (const auto& [k, v] : s.labels) (*p.mutable_labels())[k] = v;
  for (const auto& [k, v] : s.annotations) (*p.mutable_annotations())[k] = v;
  if (s.cpu_request_millicores) p.set_cpu_request_millicores(*s.cpu_request_millicores);
  if (s.memory_request_bytes) p.set_memory_request_bytes(*s.memory_request_bytes);
  p.set_exclusive_cpus(s.exclusive_cpus);
  if (s.llc_bytes) p.set_llc_occupancy_bytes(*s.llc_bytes);
  if (s.membw_bytes_per_second) p.set_membw_total_bytes_per_second(*s.membw_bytes_per_second);
  if (s.mpki) p.set_llc_misses_per_kilo_instructions(*s.mpki);
  return p;
}

// Sets measured occupancy / bandwidth on NUMA node `id` (and its L3 domain).
inline void SetMeasured(telemetry::v1::NodeReport& r, uint32_t id, uint64_t occupancy_bytes,
                        uint64_t membw_bytes_per_second) {
  auto* topo = r.mutable_topology();
  topo->mutable_numa_nodes(static_cast<int>(id))
      ->set_membw_bytes_per_second(membw_bytes_per_second);
  auto* l3 = topo->mutable_l3_domains(static_cast<int>(id));
  l3->set_occupancy_bytes(occupancy_bytes);
  l3->set_membw_total_bytes_per_second(membw_bytes_per_second);
}

}  // namespace neighborly::extender::testing

#endif  // NEIGHBORLY_EXTENDER_SRC_MODEL_TESTING_REPORT_BUILDER_H_
