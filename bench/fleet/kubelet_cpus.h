// The kubelet's CPU manager (policy static) under the topology manager's
// single-numa-node policy, for the placement benchmark's simulated nodes:
// which exclusive CPUs a Guaranteed pod with an integer CPU request gets, or
// that admission fails (TopologyAffinityError) because no one NUMA node has
// enough free CPUs. CPU ids follow the scenario format's threadsPerCore rule:
// socket s, core c, thread t is s * cpus_per_socket + c * threads_per_core + t.
//
//   KubeletCpus cpus(node_spec);
//   std::optional<ExclusiveCpus> got = cpus.Allocate(4);   // nullopt: TopologyAffinityError
//   cpus.Release(got->cpus);
#ifndef NEIGHBORLY_BENCH_FLEET_KUBELET_CPUS_H_
#define NEIGHBORLY_BENCH_FLEET_KUBELET_CPUS_H_

#include <optional>
#include <string>
#include <vector>

#include "bench/fleet/workload_mix.h"

namespace neighborly::fleet {

struct ExclusiveCpus {
  int numa_node = 0;
  std::vector<int> cpus;  // ascending
};

class KubeletCpus {
 public:
  explicit KubeletCpus(const NodeSpec& node);

  // The topology manager's hint for `count` CPUs is the lowest NUMA node with
  // that many free (its preferred single-node masks, the first kept on a tie);
  // the CPU manager then takes whole free cores first and the remaining
  // threads from cores already partly taken (packing, as takeByTopology).
  std::optional<ExclusiveCpus> Allocate(int count);
  void Release(const std::vector<int>& cpus);

  // CPUs of the shared pool (reserved included) on each socket.
  std::vector<int> SharedPoolPerSocket() const;
  int FreeExclusive(int numa_node) const;
  const std::vector<int>& reserved() const { return reserved_; }

  // "0-3,8" (the Linux cpu-list format).
  static std::string CpuList(const std::vector<int>& cpus);

 private:
  const int sockets_;
  const int cpus_per_socket_;
  const int threads_per_core_;
  std::vector<int> reserved_;
  std::vector<bool> taken_;  // reserved or exclusive
  std::vector<bool> exclusive_;
};

}  // namespace neighborly::fleet

#endif  // NEIGHBORLY_BENCH_FLEET_KUBELET_CPUS_H_
