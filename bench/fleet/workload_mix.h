// A seeded fleet for the placement benchmark: two-socket nodes of a few
// shapes in three zones (a share of them with the kubelet's static CPU manager
// and single-numa-node topology manager), and a mix of workloads arriving over
// time: latency-critical Deployments (annotated or not, pinned Guaranteed or
// Burstable, cache-sensitive or light), streaming and compute batch Jobs
// (labelled workload-type: batch or not) that finish, and standard
// Deployments. Everything follows from the seed (docs/placement-benchmark.md).
//
//   FleetSpec fleet = GenerateFleet(/*seed=*/1, MixOptions{});
//   fleet.nodes.size();     // 30..47
//   fleet.arrivals.size();  // 210..300
#ifndef NEIGHBORLY_BENCH_FLEET_WORKLOAD_MIX_H_
#define NEIGHBORLY_BENCH_FLEET_WORKLOAD_MIX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/fleet/ground_truth.h"

namespace neighborly::fleet {

struct NodeSpec {
  std::string name;
  int zone = 0;  // 0..2
  int cores_per_socket = 8;
  int threads_per_core = 2;
  int64_t memory_bytes_per_socket = int64_t{32} << 30;
  NodeShape shape;
  bool static_cpu_manager = false;  // cpuManagerPolicy static + topology single-numa-node

  int cpus_per_socket() const { return cores_per_socket * threads_per_core; }
  int cpus() const { return shape.sockets * cpus_per_socket(); }
  // The kubelet's reservedSystemCPUs: the first core of socket 0.
  int reserved_cpus() const { return threads_per_core; }
  int64_t allocatable_millicores() const { return int64_t{1000} * (cpus() - reserved_cpus()); }
  // Memory less the kubelet's system and kube reservations (2 GiB).
  int64_t allocatable_memory_bytes() const {
    return memory_bytes_per_socket * shape.sockets - (int64_t{2} << 30);
  }
};

enum class WorkloadKind { kLatencyCritical, kBatch, kStandard };

const char* KindName(WorkloadKind kind);

// A Deployment (pods owned by ReplicaSet <name>-<hash>) or a Job.
struct Workload {
  std::string namespace_name;
  std::string name;
  WorkloadKind kind = WorkloadKind::kStandard;
  bool is_job = false;
  std::string template_hash;                // Deployments: pod-template-hash
  std::string owner_uid;                    // the ReplicaSet's or Job's uid
  bool annotated_latency_critical = false;  // neighborly.io/class: latency-critical
  bool labelled_batch = false;              // workload-type: batch
  bool cache_sensitive = false;             // working set 10-28 MB
  bool streaming = false;                   // a scan: high MPKI, flat curve
  // Guaranteed with an integer CPU request (limits = requests).
  bool guaranteed = false;
  int64_t cpu_request_millicores = 1000;
  int64_t cpu_limit_millicores = 0;  // 0: none
  int64_t memory_request_bytes = int64_t{1} << 30;
  int64_t memory_limit_bytes = 0;
  double cpu_usage_fraction = 0.7;  // of the request, when running
  double duration_s = 0;            // Jobs: run time once started
  MemoryBehaviour behaviour;
};

struct Arrival {
  double at_s = 0;
  int workload = 0;
  int replica = 0;  // index among the workload's pods
};

struct MixOptions {
  int min_nodes = 30, max_nodes = 47;
  int min_arrivals = 210, max_arrivals = 300;
  int arrivals = 0;                 // > 0: exactly this many
  double mean_arrival_gap_s = 1.5;  // pods per second over the run, on average
  double static_node_share = 0.4;   // nodes with the static CPU manager
  double target_cpu_requested_min = 0.7, target_cpu_requested_max = 0.9;
  // Scale-ups (placement_bench --scale-ups): a Deployment of 3 or more
  // replicas starts with a third of them (at least one) and is scaled up to
  // the rest once, 30-180 s later, as a HorizontalPodAutoscaler or a rollout
  // in steps would; so its later replicas arrive after the first ones have
  // run and been measured. Off: every pod at creation, 0.2 s apart.
  bool scale_ups = false;
};

struct FleetSpec {
  uint64_t seed = 0;
  std::vector<NodeSpec> nodes;
  std::vector<Workload> workloads;
  std::vector<Arrival> arrivals;  // in time order
  double last_arrival_s = 0;
};

FleetSpec GenerateFleet(uint64_t seed, const MixOptions& options);

// A deterministic generator for everything seeded in the benchmark: the same
// numbers on every platform (std::*_distribution are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL) {}
  uint64_t Next();                       // splitmix64
  double Uniform(double lo, double hi);  // [lo, hi)
  int Int(int lo, int hi);               // [lo, hi]
  bool Chance(double p) { return Uniform(0, 1) < p; }
  double Exponential(double mean);

 private:
  uint64_t state_;
};

// A pod-name suffix of `digits` characters from the Kubernetes alphabet
// (consonants and digits, as utilrand.String) and an RFC 4122 v4 UID.
std::string RandomSuffix(Rng& rng, int digits);
std::string RandomUid(Rng& rng);

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_WORKLOAD_MIX_H_
