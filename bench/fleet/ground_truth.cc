#include "bench/fleet/ground_truth.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace neighborly::fleet {
namespace {

constexpr double kLineBytes = 64;
// A thread's access to the other socket's memory takes this much longer
// (QPI/UPI hop; the seed's "1.5-2x local").
constexpr double kRemoteLatencyFactor = 1.5;
constexpr double kDamping = 0.5;

// Splits `capacity` among claimants in proportion to `weight`, none above its
// `cap`; what a capped claimant leaves goes to the others (water-filling).
std::vector<double> ShareCapped(double capacity, const std::vector<double>& weight,
                                const std::vector<double>& cap) {
  const size_t n = weight.size();
  std::vector<double> share(n, 0);
  std::vector<bool> fixed(n, false);
  double left = capacity;
  for (size_t round = 0; round < n + 1 && left > 0; ++round) {
    double total_weight = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!fixed[i]) total_weight += weight[i];
    }
    if (total_weight <= 0) break;
    bool capped_any = false;
    for (size_t i = 0; i < n; ++i) {
      if (!fixed[i] && left * weight[i] / total_weight >= cap[i]) {
        share[i] = cap[i];
        fixed[i] = true;
        capped_any = true;
      }
    }
    if (!capped_any) {
      for (size_t i = 0; i < n; ++i) {
        if (!fixed[i]) share[i] = left * weight[i] / total_weight;
      }
      break;
    }
    left = capacity;
    for (size_t i = 0; i < n; ++i) {
      if (fixed[i]) left -= share[i];
    }
  }
  return share;
}

double LatencyFactor(double utilisation, const GroundTruthParams& p) {
  const double u = std::min(utilisation, p.max_utilisation);
  double factor = 1 + p.latency_a * std::pow(u, p.latency_b) / (1 - u);
  factor = std::min(factor, p.max_latency_factor);
  // Demand beyond the controller's peak is not served faster: it queues, and
  // the latency grows with the excess (back-pressure that holds bandwidth at
  // the peak in the fixed point).
  if (utilisation > 1) factor *= utilisation;
  return factor;
}

// The fixed point of cache shares and controller latencies for `pods`
// (behaviours already scaled). Fills everything but cpi_alone and slowdown.
NodeOutcome Solve(const NodeShape& shape, const std::vector<Placement>& pods,
                  const GroundTruthParams& p) {
  const size_t n = pods.size();
  const size_t sockets = static_cast<size_t>(shape.sockets);
  const double hz = p.frequency_ghz * 1e9;
  // cache[i][s]: L3 bytes pod i holds on socket s; latency_ns[s]: socket s's controller.
  std::vector<std::vector<double>> cache(n, std::vector<double>(sockets, 0));
  std::vector<double> latency_ns(sockets, p.idle_latency_ns);
  for (size_t s = 0; s < sockets; ++s) {
    size_t there = 0;
    for (const Placement& pod : pods) there += pod.socket_share[s] > 0 ? 1 : 0;
    for (size_t i = 0; i < n; ++i) {
      if (pods[i].socket_share[s] > 0) {
        cache[i][s] = std::min(pods[i].behaviour.footprint_bytes,
                               shape.l3_bytes_per_socket / static_cast<double>(there));
      }
    }
  }
  std::vector<std::vector<double>> ips(n, std::vector<double>(sockets, 0));
  std::vector<std::vector<double>> mpki(n, std::vector<double>(sockets, 0));
  std::vector<double> traffic(sockets, 0);
  auto evaluate_pods = [&] {
    std::fill(traffic.begin(), traffic.end(), 0);
    for (size_t i = 0; i < n; ++i) {
      const MemoryBehaviour& b = pods[i].behaviour;
      for (size_t s = 0; s < sockets; ++s) {
        ips[i][s] = 0;
        if (pods[i].socket_share[s] <= 0) continue;
        double seen_ns = 0;  // the latency a miss from socket s waits, over where its memory is
        for (size_t m = 0; m < sockets; ++m) {
          seen_ns += pods[i].memory_share[m] * latency_ns[m] * (m == s ? 1 : kRemoteLatencyFactor);
        }
        mpki[i][s] = MissesPerKiloInstruction(b, cache[i][s]);
        const double cpi = b.cpi_core + mpki[i][s] / 1000 * seen_ns * p.frequency_ghz / b.mlp;
        ips[i][s] = pods[i].cpus * pods[i].socket_share[s] * hz / cpi;
        const double bytes =
            ips[i][s] * mpki[i][s] / 1000 * kLineBytes * (1 + p.writeback_fraction);
        for (size_t m = 0; m < sockets; ++m) traffic[m] += bytes * pods[i].memory_share[m];
      }
    }
  };
  for (int iteration = 0; iteration < p.fixed_point_iterations; ++iteration) {
    evaluate_pods();
    // Cache: each socket's L3 in proportion to the lines each pod inserts.
    for (size_t s = 0; s < sockets; ++s) {
      std::vector<double> weight(n, 0), cap(n, 0);
      for (size_t i = 0; i < n; ++i) {
        if (pods[i].socket_share[s] <= 0) continue;
        weight[i] = ips[i][s] * mpki[i][s] / 1000;
        cap[i] = pods[i].behaviour.footprint_bytes;
      }
      const std::vector<double> share = ShareCapped(shape.l3_bytes_per_socket, weight, cap);
      for (size_t i = 0; i < n; ++i) {
        if (pods[i].socket_share[s] > 0) {
          cache[i][s] = (1 - kDamping) * cache[i][s] + kDamping * share[i];
        }
      }
    }
    // Memory: each controller's latency at the traffic it serves.
    for (size_t m = 0; m < sockets; ++m) {
      const double u = traffic[m] / shape.peak_membw_bytes_per_second_per_socket;
      latency_ns[m] =
          (1 - kDamping) * latency_ns[m] + kDamping * p.idle_latency_ns * LatencyFactor(u, p);
    }
  }
  evaluate_pods();

  NodeOutcome out;
  out.pods.resize(n);
  out.membw_utilisation.resize(sockets);
  out.l3_occupancy_bytes.assign(sockets, 0);
  for (size_t m = 0; m < sockets; ++m) {
    out.membw_utilisation[m] = traffic[m] / shape.peak_membw_bytes_per_second_per_socket;
  }
  for (size_t i = 0; i < n; ++i) {
    PodOutcome& o = out.pods[i];
    double instructions = 0, misses = 0, local_bytes = 0;
    for (size_t s = 0; s < sockets; ++s) {
      instructions += ips[i][s];
      misses += ips[i][s] * mpki[i][s] / 1000;
      local_bytes += ips[i][s] * mpki[i][s] / 1000 * pods[i].memory_share[s];
      o.llc_occupancy_bytes += cache[i][s];
      out.l3_occupancy_bytes[s] += cache[i][s];
    }
    o.instructions_per_second = instructions;
    o.cpi = instructions > 0 ? pods[i].cpus * hz / instructions : pods[i].behaviour.cpi_core;
    o.ipc = 1 / o.cpi;
    o.mpki = instructions > 0 ? misses / instructions * 1000 : 0;
    o.membw_bytes_per_second = misses * kLineBytes * (1 + p.writeback_fraction);
    o.membw_local_fraction = misses > 0 ? local_bytes / misses : 1;
  }
  return out;
}

}  // namespace

MemoryBehaviour Scaled(const MemoryBehaviour& b, const GroundTruthParams& params) {
  MemoryBehaviour out = b;
  out.mpki_cold = b.mpki_floor + (b.mpki_cold - b.mpki_floor) * params.sensitivity_scale;
  out.working_set_bytes = b.working_set_bytes * params.working_set_scale;
  out.footprint_bytes = b.footprint_bytes * params.working_set_scale;
  return out;
}

double MissesPerKiloInstruction(const MemoryBehaviour& b, double cache_bytes) {
  const double c = std::clamp(cache_bytes, 0.0, b.footprint_bytes);
  return b.mpki_floor +
         (b.mpki_cold - b.mpki_floor) * std::pow(1 + c / b.working_set_bytes, -b.curve_exponent);
}

NodeOutcome SolveNode(const NodeShape& shape, const std::vector<Placement>& pods,
                      const GroundTruthParams& params) {
  std::vector<Placement> scaled = pods;
  for (Placement& pod : scaled) pod.behaviour = Scaled(pod.behaviour, params);
  NodeOutcome out = Solve(shape, scaled, params);
  for (size_t i = 0; i < scaled.size(); ++i) {
    // Alone: the same CPUs and memory on the same node, nobody else.
    const NodeOutcome alone = Solve(shape, {scaled[i]}, params);
    PodOutcome& o = out.pods[i];
    o.cpi_alone = alone.pods[0].cpi;
    // Neighbours only take cache and add queueing, so CPI never falls below
    // alone; the max absorbs the fixed point's last rounding.
    o.slowdown = std::max(1.0, o.cpi / o.cpi_alone);
  }
  return out;
}

}  // namespace neighborly::fleet
