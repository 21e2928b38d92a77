// Every way a report can be wrong is refused with INVALID_ARGUMENT naming the field.
#include "extender/src/core/report_validation.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
namespace tv1 = ::neighborly::telemetry::v1;

tv1::NodeReport Valid() {
  tv1::NodeReport r = testing::TwoSocketNode("node-1");
  testing::AddPod(r, {.uid = "u1", .name = "p1", .exclusive_cpus = "2-3", .mpki = 1.5});
  return r;
}

TEST(ReportValidationTest, AcceptsAValidReport) { EXPECT_TRUE(ValidateReport(Valid()).ok()); }

// An agent on a host without cache information in sysfs reports L3 domains per
// package with an unknown (0) size; the node must still be accepted.
TEST(ReportValidationTest, AcceptsL3DomainsOfUnknownSize) {
  tv1::NodeReport r = Valid();
  r.mutable_topology()->mutable_l3_domains(0)->set_size_bytes(0);
  EXPECT_TRUE(ValidateReport(r).ok());
}

TEST(ReportValidationTest, NodeNamesAreDns1123Subdomains) {
  EXPECT_TRUE(IsDns1123Subdomain("ip-10-0-1-23.ec2.internal"));
  EXPECT_FALSE(IsDns1123Subdomain(""));
  EXPECT_FALSE(IsDns1123Subdomain("Node-1"));
  EXPECT_FALSE(IsDns1123Subdomain("-node"));
  EXPECT_FALSE(IsDns1123Subdomain("node..1"));
  EXPECT_FALSE(IsDns1123Subdomain("node_1"));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
}

struct Case {
  std::string name;
  std::function<void(tv1::NodeReport&)> mutate;
  std::string field;  // expected in the message
};

class InvalidReportTest : public ::testing::TestWithParam<Case> {};

TEST_P(InvalidReportTest, IsRefusedNamingTheField) {
  tv1::NodeReport r = Valid();
  GetParam().mutate(r);
  absl::Status s = ValidateReport(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().field));
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Cases, InvalidReportTest,
    ::testing::Values(
        Case{"EmptyNodeName", [](auto& r) { r.set_node_name(""); }, "node_name: empty"},
        Case{"BadNodeName", [](auto& r) { r.set_node_name("Node_1"); }, "node_name"},
        Case{"NoWindow", [](auto& r) { r.clear_window_duration(); }, "window_duration"},
        Case{"ZeroWindow", [](auto& r) { r.mutable_window_duration()->set_seconds(0); },
             "window_duration: must be > 0"},
        Case{"NegativeWindow", [](auto& r) { r.mutable_window_duration()->set_seconds(-1); },
             "window_duration"},
        Case{"BadTimestamp", [](auto& r) { r.mutable_window_start()->set_nanos(-5); },
             "window_start"},
        Case{"LongBootId", [](auto& r) { r.set_boot_id(std::string(200, 'x')); }, "boot_id"},
        Case{"TooManyPods",
             [](auto& r) {
               for (int i = 0; i < 1001; ++i) {
                 testing::AddPod(r, {.uid = "x" + std::to_string(i), .name = "p"});
               }
             },
             "pods: 1002 pods, at most 1000"},
        Case{"NoNuma", [](auto& r) { r.mutable_topology()->clear_numa_nodes(); },
             "topology.numa_nodes"},
        Case{"DuplicateNuma",
             [](auto& r) { r.mutable_topology()->mutable_numa_nodes(1)->set_id(0); },
             "topology.numa_nodes[1].id: duplicate"},
        Case{"BadNumaCpus",
             [](auto& r) { r.mutable_topology()->mutable_numa_nodes(0)->set_cpus("0-x"); },
             "topology.numa_nodes[0].cpus"},
        Case{"OverlappingNumaCpus",
             [](auto& r) { r.mutable_topology()->mutable_numa_nodes(1)->set_cpus("7-15"); },
             "topology.numa_nodes[1].cpus: overlaps"},
        Case{"ZeroPeak",
             [](auto& r) {
               r.mutable_topology()->mutable_numa_nodes(0)->set_peak_membw_bytes_per_second(0);
             },
             "peak_membw_bytes_per_second"},
        Case{"Distances",
             [](auto& r) { r.mutable_topology()->mutable_numa_nodes(0)->add_distances(30); },
             "topology.numa_nodes[0].distances"},
        Case{"DuplicateL3", [](auto& r) { r.mutable_topology()->mutable_l3_domains(1)->set_id(0); },
             "topology.l3_domains[1].id: duplicate"},
        Case{"L3OnMissingNuma",
             [](auto& r) { r.mutable_topology()->mutable_l3_domains(1)->set_numa_node(7); },
             "topology.l3_domains[1].numa_node: no NUMA node 7"},
        Case{"BadPolicy",
             [](auto& r) { r.mutable_kubelet()->set_topology_manager_policy("strict"); },
             "kubelet.topology_manager_policy"},
        Case{"BadMemoryManagerPolicy",
             [](auto& r) { r.mutable_kubelet()->set_memory_manager_policy("dynamic"); },
             "kubelet.memory_manager_policy"},
        Case{"BadAllocatable", [](auto& r) { r.mutable_kubelet()->set_allocatable_cpus("x"); },
             "kubelet.allocatable_cpus"},
        Case{"ReservedMemoryOnMissingNuma",
             [](auto& r) { (*r.mutable_kubelet()->mutable_reserved_memory_bytes_by_numa())[9] = 1; },
             "kubelet.reserved_memory_bytes_by_numa: NUMA node 9 is not in the topology"},
        Case{"CoreOutsideTopology",
             [](auto& r) {
               auto* core = r.mutable_topology()->add_cores();
               core->set_cpus("99");
             },
             "topology.cores[0].cpus: not CPUs of the report's NUMA nodes"},
        Case{"CoreOnMissingNuma",
             [](auto& r) {
               auto* core = r.mutable_topology()->add_cores();
               core->set_cpus("0-1");
               core->set_numa_node(5);
             },
             "topology.cores[0].numa_node: NUMA node 5 is not in the topology"},
        Case{"BadReserved", [](auto& r) { r.mutable_kubelet()->set_reserved_cpus("3-1"); },
             "kubelet.reserved_cpus"},
        Case{"EmptyUid", [](auto& r) { r.mutable_pods(0)->set_uid(""); }, "pods[0].uid: empty"},
        Case{"DuplicateUid", [](auto& r) { testing::AddPod(r, {.uid = "u1", .name = "again"}); },
             "pods[1].uid: duplicate"},
        Case{"EmptyNamespace", [](auto& r) { r.mutable_pods(0)->set_namespace_(""); },
             "pods[0].namespace"},
        Case{"BadExclusiveCpus", [](auto& r) { r.mutable_pods(0)->set_exclusive_cpus("2-"); },
             "pods[0].exclusive_cpus"},
        Case{"ExclusiveCpuOutsideTopology",
             [](auto& r) { r.mutable_pods(0)->set_exclusive_cpus("40"); },
             "pods[0].exclusive_cpus: CPU 40"},
        Case{"NaNIpc", [](auto& r) { r.mutable_pods(0)->set_ipc(kNaN); }, "pods[0].ipc"},
        Case{"ResctrlCapAboveOne",
             [](auto& r) { r.mutable_pods(0)->mutable_resctrl_cap()->set_l3_fraction(1.5); },
             "pods[0].resctrl_cap.l3_fraction: 1.5 exceeds 1"},
        Case{"ResctrlCapNaN",
             [](auto& r) { r.mutable_pods(0)->mutable_resctrl_cap()->set_mba_fraction(kNaN); },
             "pods[0].resctrl_cap.mba_fraction: not a finite number"},
        Case{"NegativeMpki",
             [](auto& r) { r.mutable_pods(0)->set_llc_misses_per_kilo_instructions(-1); },
             "pods[0].llc_misses_per_kilo_instructions"},
        Case{"InfinitePsi",
             [](auto& r) {
               r.mutable_pods(0)->set_psi_memory_full_avg10(
                   std::numeric_limits<double>::infinity());
             },
             "pods[0].psi_memory_full_avg10"},
        Case{"NegativeCpu", [](auto& r) { r.mutable_pods(0)->set_cpu_request_millicores(-5); },
             "pods[0].cpu_request_millicores"},
        Case{"UnknownQos",
             [](auto& r) { r.mutable_pods(0)->set_qos_class(static_cast<tv1::QosClass>(9)); },
             "pods[0].qos_class"},
        Case{"MemoryOnMissingNuma",
             [](auto& r) { (*r.mutable_pods(0)->mutable_memory_bytes_by_numa())[5] = 1; },
             "pods[0].memory_bytes_by_numa[5]"},
        Case{"TooManyLabels",
             [](auto& r) {
               for (int i = 0; i < 300; ++i) {
                 (*r.mutable_pods(0)->mutable_labels())["k" + std::to_string(i)] = "v";
               }
             },
             "pods[0].labels: 300 entries"},
        Case{"LongLabelKey",
             [](auto& r) { (*r.mutable_pods(0)->mutable_labels())[std::string(400, 'k')] = "v"; },
             "pods[0].labels"},
        Case{"HugeAnnotation",
             [](auto& r) {
               (*r.mutable_pods(0)->mutable_annotations())["a"] = std::string(70 * 1024, 'v');
             },
             "pods[0].annotations[a]"},
        Case{"AnnotationsTotal",
             [](auto& r) {
               for (int i = 0; i < 5; ++i) {
                 (*r.mutable_pods(0)->mutable_annotations())["a" + std::to_string(i)] =
                     std::string(60 * 1024, 'v');
               }
             },
             "pods[0].annotations: total size"},
        Case{"LongCapabilityReason",
             [](auto& r) {
               r.mutable_capabilities()->mutable_psi()->set_reason(std::string(2000, 'r'));
             },
             "capabilities.psi.reason"},
        // Found by fuzz/report_mutation_fuzzer: 2^64-1 bytes/s on a NUMA node
        // passed validation, and the operator view converted the model's
        // double back to uint64 out of range (undefined behaviour).
        Case{"ImpossibleNumaBandwidth",
             [](auto& r) {
               r.mutable_topology()->mutable_numa_nodes(0)->set_membw_bytes_per_second(
                   std::numeric_limits<uint64_t>::max());
             },
             "topology.numa_nodes[0].membw_bytes_per_second: 18446744073709551615 exceeds"},
        Case{"ImpossibleL3Occupancy",
             [](auto& r) {
               r.mutable_topology()->mutable_l3_domains(1)->set_occupancy_bytes(uint64_t{1} << 60);
             },
             "topology.l3_domains[1].occupancy_bytes"},
        Case{"ImpossiblePodBandwidth",
             [](auto& r) { r.mutable_pods(0)->set_membw_total_bytes_per_second(uint64_t{1} << 63); },
             "pods[0].membw_total_bytes_per_second"},
        Case{"ImpossiblePodMemory",
             [](auto& r) {
               (*r.mutable_pods(0)->mutable_memory_bytes_by_numa())[0] = uint64_t{1} << 62;
             },
             "pods[0].memory_bytes_by_numa[0]"},
        Case{"ImpossibleCpuRequest",
             [](auto& r) {
               r.mutable_pods(0)->set_cpu_request_millicores(std::numeric_limits<int64_t>::max());
             },
             "pods[0].cpu_request_millicores"},
        // Issue 26.
        Case{"OomScoreAdjOutOfRange", [](auto& r) { r.mutable_pods(0)->add_oom_score_adj(5000); },
             "pods[0].oom_score_adj: 5000 is outside -1000..1000"},
        Case{"ImpossibleWorkingSet",
             [](auto& r) { r.mutable_pods(0)->set_memory_working_set_bytes(uint64_t{1} << 62); },
             "pods[0].memory_working_set_bytes"},
        Case{"AvailableAboveCapacity",
             [](auto& r) {
               r.mutable_memory()->set_capacity_bytes(1 << 30);
               r.mutable_memory()->set_available_bytes(2u << 30);
             },
             "memory.available_bytes: is larger than memory.capacity_bytes"},
        Case{"LongEvictionValue",
             [](auto& r) {
               (*r.mutable_kubelet()->mutable_eviction_hard())["memory.available"] =
                   std::string(5000, '9');
             },
             "kubelet.eviction value"}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

// The largest quantities a real host could report still pass.
TEST(ReportValidationTest, AcceptsLargeRealQuantities) {
  tv1::NodeReport r = Valid();
  r.mutable_topology()->mutable_numa_nodes(0)->set_memory_bytes(uint64_t{64} << 40);  // 64 TiB
  r.mutable_topology()->mutable_numa_nodes(0)->set_membw_bytes_per_second(uint64_t{4} << 40);
  r.mutable_pods(0)->set_cpu_request_millicores(1'000'000);
  EXPECT_TRUE(ValidateReport(r).ok()) << ValidateReport(r);
}

}  // namespace
}  // namespace neighborly::extender
