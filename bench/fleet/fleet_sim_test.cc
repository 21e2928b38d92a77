#include "bench/fleet/fleet_sim.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "bench/fleet/agent_view.h"

namespace neighborly::fleet {
namespace {

NodeSpec SmallNode(std::string name, bool static_cpu_manager) {
  NodeSpec n;
  n.name = std::move(name);
  n.cores_per_socket = 4;
  n.threads_per_core = 1;
  n.memory_bytes_per_socket = int64_t{16} << 30;
  n.static_cpu_manager = static_cpu_manager;
  return n;
}

Workload Deployment(std::string name, WorkloadKind kind, int cpus) {
  Workload w;
  w.namespace_name = "shop";
  w.name = std::move(name);
  w.kind = kind;
  w.template_hash = "5d8f7c6b9a";
  w.owner_uid = "uid-" + w.name;
  w.cpu_request_millicores = 1000 * cpus;
  w.memory_request_bytes = int64_t{1} << 30;
  return w;
}

void Arrive(FleetSpec& fleet, Workload w) {
  fleet.workloads.push_back(std::move(w));
  fleet.arrivals.push_back({static_cast<double>(fleet.arrivals.size()),
                            static_cast<int>(fleet.workloads.size()) - 1, 0});
  fleet.last_arrival_s = fleet.arrivals.back().at_s;
}

// The simulator counts a TopologyAffinityError when kube-scheduler's fit
// passes but no NUMA node has the pinned pod's CPUs, and does not retry it.
TEST(FleetSimulator, CountsTopologyAffinityErrors) {
  FleetSpec fleet;
  fleet.seed = 1;
  // 7 allocatable cpus: 3 on NUMA 0 (cpu 0 is reserved), 4 on NUMA 1.
  fleet.nodes.push_back(SmallNode("node-01", /*static_cpu_manager=*/true));
  for (int cpus : {2, 2, 3}) {
    Workload w = Deployment("pinned-" + std::to_string(fleet.workloads.size()),
                            WorkloadKind::kLatencyCritical, cpus);
    w.guaranteed = true;
    w.cpu_limit_millicores = w.cpu_request_millicores;
    w.memory_limit_bytes = w.memory_request_bytes;
    Arrive(fleet, w);
  }
  const FleetResult r = SimulateFleet(fleet, SimOptions{});
  const FleetSummary s = Summarise(r);
  EXPECT_EQ(s.topology_affinity_errors, 1);
  EXPECT_TRUE(r.pods[2].topology_affinity_error);
  EXPECT_EQ(r.pods[2].phase, PodPhase::kFailed);
  EXPECT_EQ(s.pending_end, 0);
  EXPECT_TRUE(r.pods[0].pinned);
  EXPECT_EQ(s.lc_running_end, 2);
}

// Two small nodes and, in this order, a big compute-bound pod, a streaming
// scan and a cache-sensitive service: where the service goes is the test.
FleetSpec ServiceScanAndComputeFleet() {
  FleetSpec fleet;
  fleet.seed = 3;
  fleet.nodes.push_back(SmallNode("node-01", false));
  fleet.nodes.push_back(SmallNode("node-02", false));
  for (NodeSpec& n : fleet.nodes) n.shape.l3_bytes_per_socket = 20e6;
  Workload compute = Deployment("compute", WorkloadKind::kStandard, 5);
  compute.behaviour.mpki_cold = 1;
  compute.behaviour.mpki_floor = 0.5;
  compute.behaviour.working_set_bytes = 1e6;
  compute.behaviour.footprint_bytes = 1e6;
  Arrive(fleet, compute);
  Workload scan = Deployment("scan", WorkloadKind::kBatch, 3);
  scan.is_job = true;
  scan.duration_s = 3600;
  scan.behaviour.mpki_cold = 30;
  scan.behaviour.mpki_floor = 25;
  scan.behaviour.working_set_bytes = 200e6;
  scan.behaviour.footprint_bytes = 400e6;
  scan.behaviour.curve_exponent = 0.5;
  scan.behaviour.mlp = 6;
  scan.cpu_usage_fraction = 1;
  Arrive(fleet, scan);
  Workload service = Deployment("catalog", WorkloadKind::kLatencyCritical, 1);
  service.behaviour.working_set_bytes = 12e6;
  service.behaviour.footprint_bytes = 18e6;
  service.behaviour.mpki_cold = 12;
  Arrive(fleet, service);
  return fleet;
}

// The yardstick sees the interference the default scores cannot: the
// default puts a cache-sensitive service on the emptier node, beside a
// streamer; the oracle puts it beside the big compute-bound pod.
TEST(FleetSimulator, TheOracleKeepsACacheSensitiveServiceAwayFromAStreamer) {
  const FleetSpec fleet = ServiceScanAndComputeFleet();

  const FleetResult by_default = SimulateFleet(fleet, SimOptions{});
  SimOptions oracle;
  oracle.scorer = Scorer::kOracle;
  const FleetResult by_oracle = SimulateFleet(fleet, oracle);
  ASSERT_EQ(by_default.pods[2].phase, PodPhase::kRunning);
  ASSERT_EQ(by_oracle.pods[2].phase, PodPhase::kRunning);
  EXPECT_EQ(by_default.pods[2].node, by_default.pods[1].node);
  EXPECT_EQ(by_oracle.pods[2].node, by_oracle.pods[0].node);
  EXPECT_GT(by_default.pods[2].slowdown_end, 1.2);
  EXPECT_LT(by_oracle.pods[2].slowdown_end, by_default.pods[2].slowdown_end);
  for (const FleetResult* r : {&by_default, &by_oracle}) {
    for (const PodResult& p : r->pods) EXPECT_GE(p.slowdown_end, 1.0);
  }
  // The default's victim started beside the scan and is one because of it.
  EXPECT_EQ(by_default.victims.already_at_start, 1);
  EXPECT_EQ(by_default.victims.made_later, 0);
  EXPECT_EQ(by_default.victims.batch_caused, 1);
  EXPECT_EQ(by_default.victims.without_batch_still, 0);
  const int oracle_victims = by_oracle.pods[2].slowdown_end > 1.2 ? 1 : 0;
  EXPECT_EQ(by_oracle.victims.already_at_start + by_oracle.victims.made_later, oracle_victims);
}

// placement_bench --what-if: each lever takes its part from the ground
// truth. With the truth's filter or its scores the extender's run keeps the
// cache-sensitive service away from the streamer, as the oracle does; with
// instant telemetry every bind adds a report.
TEST(FleetSimulator, WhatIfLeversTakeTheirPartFromTheGroundTruth) {
  const FleetSpec fleet = ServiceScanAndComputeFleet();

  SimOptions plain;
  plain.scorer = Scorer::kNeighborly;
  const FleetResult by_extender = SimulateFleet(fleet, plain);
  // The extender's own filter refuses nothing here; the truth's filter
  // refuses the scan's node to the service (its own slowdown there).
  EXPECT_EQ(by_extender.extender_filtered_out, 0u);
  for (const WhatIf& w : {WhatIf{.oracle_filter = OracleFilter::kAll},
                          WhatIf{.oracle_filter = OracleFilter::kIncoming},
                          WhatIf{.oracle_scores = true}}) {
    SimOptions o = plain;
    o.what_if = w;
    const FleetResult r = SimulateFleet(fleet, o);
    EXPECT_EQ(r.extender_filtered_out, w.oracle_filter != OracleFilter::kNone ? 1u : 0u);
    ASSERT_EQ(r.pods[2].phase, PodPhase::kRunning);
    EXPECT_EQ(r.pods[2].node, r.pods[0].node) << "beside the compute-bound pod";
    EXPECT_NE(r.pods[2].node, r.pods[1].node) << "not beside the scan";
    EXPECT_LE(r.pods[2].slowdown_end, 1.2);
  }
  // The filter protecting residents only does not check the incoming
  // service's own slowdown: nothing refuses the scan's node for it.
  SimOptions residents = plain;
  residents.what_if.oracle_filter = OracleFilter::kResidents;
  EXPECT_EQ(SimulateFleet(fleet, residents).extender_filtered_out, 0u);
  SimOptions instant = plain;
  instant.what_if.instant_telemetry = true;
  const FleetResult r = SimulateFleet(fleet, instant);
  EXPECT_EQ(r.reports, by_extender.reports + 3) << "one more report per bind";
  for (const PodResult& p : r.pods) EXPECT_EQ(p.phase, PodPhase::kRunning);
}

// What-if blind-incoming: the truth's filter judges the service by other
// latency-critical workloads' behaviour in its place. Beside a light one
// (a compute-bound service that loses nothing to the scan), it no longer
// refuses the scan's node to the cache-sensitive service.
TEST(FleetSimulator, BlindIncomingJudgesThePodByOthersOfItsKind) {
  FleetSpec fleet = ServiceScanAndComputeFleet();
  Workload light = Deployment("light", WorkloadKind::kLatencyCritical, 1);
  light.behaviour.mpki_cold = 0.6;
  light.behaviour.mpki_floor = 0.5;
  light.behaviour.working_set_bytes = 1e6;
  light.behaviour.footprint_bytes = 1e6;
  fleet.workloads.push_back(light);  // never arrives: only a stand-in

  SimOptions sighted;
  sighted.scorer = Scorer::kNeighborly;
  sighted.what_if.oracle_filter = OracleFilter::kIncoming;
  const FleetResult seen = SimulateFleet(fleet, sighted);
  EXPECT_EQ(seen.extender_filtered_out, 1u) << "the scan's node, refused to the service";
  EXPECT_NE(seen.pods[2].node, seen.pods[1].node);

  SimOptions blind = sighted;
  blind.what_if.blind_incoming = true;
  const FleetResult unseen = SimulateFleet(fleet, blind);
  EXPECT_EQ(unseen.extender_filtered_out, 0u) << "a light service would be within beside the scan";
  ASSERT_EQ(unseen.pods[2].phase, PodPhase::kRunning);

  // Alone of its kind, the pod is its own stand-in: the lever changes nothing.
  SimOptions alone = blind;
  const FleetResult own = SimulateFleet(ServiceScanAndComputeFleet(), alone);
  EXPECT_EQ(own.extender_filtered_out, 1u);
  EXPECT_EQ(own.pods[2].node, seen.pods[2].node);
}

// placement_bench --extender-config: a file that does not load is refused
// before any fleet runs, by file, line and key; no file is the defaults.
TEST(FleetSimTest, ExtenderConfigIsCheckedBeforeTheRun) {
  EXPECT_TRUE(CheckExtenderConfig("").ok());
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/placement_good.yaml";
  const std::string bad = dir + "/placement_bad.yaml";
  std::ofstream(good) << "model:\n  interference:\n    maxSlowdown: 1.15\n";
  std::ofstream(bad) << "model:\n  interference:\n    maxSlowdwn: 1.15\n";
  EXPECT_TRUE(CheckExtenderConfig(good).ok());
  const absl::Status refused = CheckExtenderConfig(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("placement_bad.yaml:3"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("maxSlowdwn"), std::string::npos) << refused;
  EXPECT_FALSE(CheckExtenderConfig(dir + "/placement_missing.yaml").ok());
}

// What-if true-footprints: each pod's cache hint is the footprint the ground
// truth gives it, its scale applied, a streamer's capped.
TEST(FleetSimulator, TrueFootprintsBecomeTheCacheHint) {
  Workload service;
  service.behaviour.footprint_bytes = 20e6;
  Workload scan;
  scan.streaming = true;
  scan.behaviour.footprint_bytes = 400e6;
  GroundTruthParams truth;
  PodIdentity a;
  AnnotateTrueFootprint(service, truth, a);
  EXPECT_EQ(a.annotations["neighborly.io/llc-bytes"], "20000000");
  truth.working_set_scale = 1.5;
  PodIdentity b;
  AnnotateTrueFootprint(service, truth, b);
  EXPECT_EQ(b.annotations["neighborly.io/llc-bytes"], "30000000");
  PodIdentity c;
  AnnotateTrueFootprint(scan, truth, c);
  EXPECT_EQ(c.annotations["neighborly.io/llc-bytes"], "64000000");
}

}  // namespace
}  // namespace neighborly::fleet
