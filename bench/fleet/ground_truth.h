// The placement benchmark's ground truth: how much co-located pods slow each
// other through the shared L3 and the memory controller. It is the benchmark's
// own model, deliberately different in form from the extender's
// (docs/placement-benchmark.md has the equations and their sources):
//
//   - each workload has a miss-rate curve MPKI(c) = m_inf + (m0 - m_inf) (1 + c/ws)^-k
//     (a power law in the cache c it gets, Hartstein et al. 2006), flat beyond
//     its footprint;
//   - the pods of one L3 domain share it in proportion to the rate at which they
//     insert lines (their miss rate), capped at their footprint, solved to a
//     fixed point (Chandra et al., HPCA 2005; Eklov and Hagersten's StatCC);
//   - a NUMA node's memory latency rises toward saturation of its controller,
//     latency = idle (1 + a u^b / (1 - u)), capped;
//   - CPI = CPI_core + MPKI / 1000 * latency_cycles / MLP (a CPI stack,
//     Eyerman and Eeckhout), and a pod's slowdown is its CPI beside its
//     neighbours over its CPI alone on the same node (same CPUs, whole L3).
//
//   NodeShape shape = ...;   std::vector<Placement> pods = ...;
//   NodeOutcome out = SolveNode(shape, pods, params);
//   out.pods[0].slowdown;    // >= 1
//   out.pods[0].llc_occupancy_bytes;  // the cache it got: what the agent measures
//
// Pure: no clock, no I/O.
#ifndef NEIGHBORLY_BENCH_FLEET_GROUND_TRUTH_H_
#define NEIGHBORLY_BENCH_FLEET_GROUND_TRUTH_H_

#include <cstdint>
#include <vector>

namespace neighborly::fleet {

// How a workload uses the memory hierarchy, per thread (one CPU's worth).
struct MemoryBehaviour {
  double cpi_core = 0.6;           // cycles per instruction with every access hitting L3
  double mpki_cold = 10;           // misses per kilo-instruction with no L3 at all (m0)
  double mpki_floor = 0.5;         // compulsory misses with all the cache it can use (m_inf)
  double working_set_bytes = 8e6;  // the curve's scale (ws)
  double curve_exponent = 2;       // k: how fast misses fall with cache
  // Beyond this much cache the pod gains nothing (its data fits): the most it
  // can hold. A streamer's footprint is its whole scan (hundreds of MB).
  double footprint_bytes = 16e6;
  double mlp = 2;  // misses in flight at once: a miss stalls latency / mlp
};

// A shared parameter set the --perturb runs scale (docs/placement-benchmark.md).
struct GroundTruthParams {
  double frequency_ghz = 2.5;
  double idle_latency_ns = 90;
  // latency = idle * (1 + a u^b / (1 - u)), u the controller's utilisation.
  double latency_a = 0.6;
  double latency_b = 2;
  double max_latency_factor = 8;  // the controller throttles beyond (back-pressure)
  double max_utilisation = 0.97;
  double writeback_fraction = 0.3;  // dirty lines written back per miss
  // Multiplies every workload's cold-cache penalty (m0 - m_inf): x0.7 / x1.3
  // make the fleet less or more cache-sensitive.
  double sensitivity_scale = 1;
  double working_set_scale = 1;  // multiplies working_set_bytes and footprint_bytes
  int fixed_point_iterations = 60;
};

struct NodeShape {
  int sockets = 2;  // one NUMA node = one L3 domain = one memory controller each
  double l3_bytes_per_socket = 32e6;
  double peak_membw_bytes_per_second_per_socket = 50e9;
};

// One running pod on a node: its behaviour and where its threads run.
struct Placement {
  MemoryBehaviour behaviour;
  double cpus = 1;  // CPUs it keeps busy
  // Share of its threads (instructions) on each socket: a pinned pod has all on
  // one, a shared-pool pod is spread over the shared pool's CPUs.
  std::vector<double> socket_share = {0.5, 0.5};
  // Share of its memory traffic served by each socket's controller (a pinned
  // pod's memory is local; a shared-pool pod's follows its threads).
  std::vector<double> memory_share = {0.5, 0.5};
};

struct PodOutcome {
  double cpi = 0;
  double cpi_alone = 0;
  double slowdown = 1;  // cpi / cpi_alone, >= 1
  double mpki = 0;
  double ipc = 0;
  double instructions_per_second = 0;
  double llc_occupancy_bytes = 0;  // summed over the sockets it runs on
  double membw_bytes_per_second = 0;
  double membw_local_fraction = 1;  // of its traffic, the share served by its own socket(s)
};

struct NodeOutcome {
  std::vector<PodOutcome> pods;            // in the order given
  std::vector<double> membw_utilisation;   // per socket
  std::vector<double> l3_occupancy_bytes;  // per socket
};

// The steady state of `pods` together on a node of `shape`.
NodeOutcome SolveNode(const NodeShape& shape, const std::vector<Placement>& pods,
                      const GroundTruthParams& params);

// A behaviour as the params see it (sensitivity and working-set scales applied).
MemoryBehaviour Scaled(const MemoryBehaviour& b, const GroundTruthParams& params);

// The curve: misses per kilo-instruction with `cache_bytes` of L3.
double MissesPerKiloInstruction(const MemoryBehaviour& b, double cache_bytes);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_GROUND_TRUTH_H_
