#include "node-agent/src/simulate/node_report.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "common/cpu_list.h"
#include "google/protobuf/util/time_util.h"
#include "node-agent/src/simulate/scenario.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using Pod = tv1::PodReport;

CpuSet Cpus(const std::string& list) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList(list);
  return cpus.ok() ? *std::move(cpus) : CpuSet{};
}

CpuSet Difference(const CpuSet& a, const CpuSet& b) {
  CpuSet out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// One pod measurement: its name in `unavailable`, presence, clearing, reading.
struct Metric {
  std::string_view name;
  const tv1::Capability* capability;  // nullptr: needs no special capability
  bool (Pod::*has)() const;
  void (Pod::*clear)();
};

// Weights of one pod over the node's L3 domains (index-aligned), summing to 1.
std::vector<double> Weights(const Pod& pod, const tv1::Topology& topology,
                            const std::vector<CpuSet>& domain_cpus, const CpuSet& shared) {
  const size_t n = domain_cpus.size();
  std::vector<double> w(n, 0.0);
  auto normalise = [&w]() {
    double sum = 0;
    for (double x : w) sum += x;
    if (sum <= 0) return false;
    for (double& x : w) x /= sum;
    return true;
  };
  if (!pod.exclusive_cpus().empty()) {
    const CpuSet exclusive = Cpus(pod.exclusive_cpus());
    for (size_t i = 0; i < n; ++i)
      w[i] = static_cast<double>(IntersectionSize(exclusive, domain_cpus[i]));
    if (normalise()) return w;
  }
  if (!pod.memory_bytes_by_numa().empty()) {
    for (const auto& [numa, bytes] : pod.memory_bytes_by_numa()) {
      // Split this NUMA node's share over its domains by their shared-pool cpus.
      std::vector<double> within(n, 0.0);
      double within_sum = 0;
      for (size_t i = 0; i < n; ++i) {
        if (topology.l3_domains(static_cast<int>(i)).numa_node() != numa) continue;
        size_t count = IntersectionSize(shared, domain_cpus[i]);
        if (count == 0) count = domain_cpus[i].size();
        within[i] = static_cast<double>(count);
        within_sum += within[i];
      }
      if (within_sum <= 0) continue;
      for (size_t i = 0; i < n; ++i) w[i] += static_cast<double>(bytes) * within[i] / within_sum;
    }
    if (normalise()) return w;
  }
  for (size_t i = 0; i < n; ++i)
    w[i] = static_cast<double>(IntersectionSize(shared, domain_cpus[i]));
  if (normalise()) return w;
  for (size_t i = 0; i < n; ++i) w[i] = static_cast<double>(domain_cpus[i].size());
  normalise();
  return w;
}

// Adds `value` split by `weights` into `sums`; the rounding remainder goes to the
// heaviest domain so that the sums add up to the pods' totals exactly.
void Distribute(uint64_t value, const std::vector<double>& weights, std::vector<uint64_t>* sums) {
  uint64_t given = 0;
  size_t heaviest = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > weights[heaviest]) heaviest = i;
    const uint64_t share =
        static_cast<uint64_t>(std::floor(static_cast<long double>(value) * weights[i]));
    (*sums)[i] += share;
    given += share;
  }
  if (!weights.empty() && given < value) (*sums)[heaviest] += value - given;
}

// The node's memory.available (issue 26) where the scenario does not give
// it: capacity minus the pods' working sets, when any pod gives one.
void DeriveNodeMemory(tv1::NodeReport* node) {
  const bool asked = node->has_memory() && node->memory().available_bytes() == UINT64_MAX;
  if (node->has_memory() && !asked) return;
  uint64_t working_set = 0;
  bool any = false;
  for (const Pod& pod : node->pods()) {
    if (!pod.has_memory_working_set_bytes()) continue;
    any = true;
    working_set += pod.memory_working_set_bytes();
  }
  if (!any && !asked) return;
  tv1::NodeMemory* memory = node->mutable_memory();
  if (!asked) {
    uint64_t total = 0;
    for (const tv1::NumaNode& numa : node->topology().numa_nodes()) total += numa.memory_bytes();
    memory->set_capacity_bytes(total);
    memory->set_source("scenario (available derived from the pods' working sets)");
  }
  memory->set_available_bytes(memory->capacity_bytes() > working_set
                                  ? memory->capacity_bytes() - working_set
                                  : 0);
}

// Applies window `window`'s values of the series to `node`'s pods.
void ApplySeries(const NodeTimeline& timeline, uint64_t window, tv1::NodeReport* node) {
  for (const PodSeries& series : timeline.pods) {
    if (series.pod_index < 0 || series.pod_index >= node->pods_size()) continue;
    Pod* pod = node->mutable_pods(series.pod_index);
    for (const auto& [key, values] : series.metrics) {
      const double v = values[window % values.size()];
      const auto u = static_cast<uint64_t>(std::llround(v));
      if (key == "ipc") pod->set_ipc(v);
      if (key == "llcMissesPerKiloInstructions") pod->set_llc_misses_per_kilo_instructions(v);
      if (key == "membwTotalBytesPerSecond") {
        pod->set_membw_total_bytes_per_second(u);
        if (pod->has_membw_local_bytes_per_second() && pod->membw_local_bytes_per_second() > u) {
          pod->set_membw_local_bytes_per_second(u);
        }
      }
      if (key == "membwLocalBytesPerSecond") pod->set_membw_local_bytes_per_second(u);
      if (key == "llcOccupancyBytes") pod->set_llc_occupancy_bytes(u);
      if (key == "memoryWorkingSetBytes") pod->set_memory_working_set_bytes(u);
      if (key == "cpuUsageMillicores") pod->set_cpu_usage_millicores(static_cast<int64_t>(u));
    }
  }
}

}  // namespace

void DeriveNodeMeasurements(tv1::NodeReport* node) {
  tv1::Topology* topology = node->mutable_topology();
  const tv1::Capabilities& caps = node->capabilities();

  // The kubelet's shared pool: every online cpu that no pod holds exclusively
  // (reserved cpus belong to it, as in the kubelet's cpu_manager_state).
  CpuSet online;
  for (const tv1::NumaNode& numa : topology->numa_nodes()) {
    const CpuSet cpus = Cpus(numa.cpus());
    online.insert(online.end(), cpus.begin(), cpus.end());
  }
  std::sort(online.begin(), online.end());
  CpuSet exclusive;
  for (const Pod& pod : node->pods()) {
    const CpuSet cpus = Cpus(pod.exclusive_cpus());
    exclusive.insert(exclusive.end(), cpus.begin(), cpus.end());
  }
  std::sort(exclusive.begin(), exclusive.end());
  const CpuSet shared = Difference(online, exclusive);
  node->mutable_kubelet()->set_shared_pool_cpus(FormatCpuList(shared));

  // Pod measurements: absent ones get a reason; those whose capability is off are
  // dropped with the capability's reason, as a real agent could not have them.
  const Metric metrics[] = {
      {"cpu_usage_millicores", nullptr, &Pod::has_cpu_usage_millicores,
       &Pod::clear_cpu_usage_millicores},
      {"llc_occupancy_bytes", &caps.resctrl_occupancy(), &Pod::has_llc_occupancy_bytes,
       &Pod::clear_llc_occupancy_bytes},
      {"membw_total_bytes_per_second", &caps.resctrl_mbm_total(),
       &Pod::has_membw_total_bytes_per_second, &Pod::clear_membw_total_bytes_per_second},
      {"membw_local_bytes_per_second", &caps.resctrl_mbm_local(),
       &Pod::has_membw_local_bytes_per_second, &Pod::clear_membw_local_bytes_per_second},
      {"ipc", &caps.perf_hardware_counters(), &Pod::has_ipc, &Pod::clear_ipc},
      {"llc_misses_per_kilo_instructions", &caps.perf_hardware_counters(),
       &Pod::has_llc_misses_per_kilo_instructions, &Pod::clear_llc_misses_per_kilo_instructions},
      {"llc_misses_per_second", &caps.perf_hardware_counters(), &Pod::has_llc_misses_per_second,
       &Pod::clear_llc_misses_per_second},
      {"psi_cpu_some_avg10", &caps.psi(), &Pod::has_psi_cpu_some_avg10,
       &Pod::clear_psi_cpu_some_avg10},
      {"psi_memory_some_avg10", &caps.psi(), &Pod::has_psi_memory_some_avg10,
       &Pod::clear_psi_memory_some_avg10},
      {"psi_memory_full_avg10", &caps.psi(), &Pod::has_psi_memory_full_avg10,
       &Pod::clear_psi_memory_full_avg10},
  };
  for (Pod& pod : *node->mutable_pods()) {
    // A real agent with perf counts LLC misses: every line the pod streams
    // from memory is one, so the scenario's bandwidth implies them (and where
    // MBM is off, they are all the extender sees of that bandwidth).
    if (caps.perf_hardware_counters().available() && pod.has_membw_total_bytes_per_second() &&
        !pod.has_llc_misses_per_second()) {
      pod.set_llc_misses_per_second(pod.membw_total_bytes_per_second() / 64);
    }
    auto& unavailable = *pod.mutable_unavailable();
    for (const Metric& m : metrics) {
      const std::string name(m.name);
      if (m.capability != nullptr && !m.capability->available()) {
        (pod.*m.clear)();
        unavailable[name] = m.capability->reason();
      } else if (!(pod.*m.has)()) {
        unavailable[name] = std::string(kNotInScenario);
      }
    }
    if (pod.memory_bytes_by_numa().empty()) {
      unavailable["memory_bytes_by_numa"] = std::string(kNotInScenario);
    }
  }

  // Per-L3-domain sums.
  const size_t n = static_cast<size_t>(topology->l3_domains_size());
  std::vector<CpuSet> domain_cpus;
  for (const tv1::L3Domain& l3 : topology->l3_domains()) domain_cpus.push_back(Cpus(l3.cpus()));
  struct Sum {
    const tv1::Capability* capability;
    bool (Pod::*pod_has)() const;
    uint64_t (Pod::*pod_get)() const;
    bool (tv1::L3Domain::*has)() const;
    void (tv1::L3Domain::*set)(uint64_t);
    void (tv1::L3Domain::*clear)();
  };
  const Sum sums[] = {
      {&caps.resctrl_occupancy(), &Pod::has_llc_occupancy_bytes, &Pod::llc_occupancy_bytes,
       &tv1::L3Domain::has_occupancy_bytes, &tv1::L3Domain::set_occupancy_bytes,
       &tv1::L3Domain::clear_occupancy_bytes},
      {&caps.resctrl_mbm_total(), &Pod::has_membw_total_bytes_per_second,
       &Pod::membw_total_bytes_per_second, &tv1::L3Domain::has_membw_total_bytes_per_second,
       &tv1::L3Domain::set_membw_total_bytes_per_second,
       &tv1::L3Domain::clear_membw_total_bytes_per_second},
      {&caps.resctrl_mbm_local(), &Pod::has_membw_local_bytes_per_second,
       &Pod::membw_local_bytes_per_second, &tv1::L3Domain::has_membw_local_bytes_per_second,
       &tv1::L3Domain::set_membw_local_bytes_per_second,
       &tv1::L3Domain::clear_membw_local_bytes_per_second},
  };
  std::vector<std::vector<double>> weights;
  for (const Pod& pod : node->pods())
    weights.push_back(Weights(pod, *topology, domain_cpus, shared));
  for (const Sum& sum : sums) {
    if (!sum.capability->available()) {
      for (tv1::L3Domain& l3 : *topology->mutable_l3_domains()) (l3.*sum.clear)();
      continue;
    }
    std::vector<uint64_t> totals(n, 0);
    bool any = node->pods().empty();
    for (int p = 0; p < node->pods_size(); ++p) {
      const Pod& pod = node->pods(p);
      if (!(pod.*sum.pod_has)()) continue;
      any = true;
      Distribute((pod.*sum.pod_get)(), weights[static_cast<size_t>(p)], &totals);
    }
    if (!any) continue;
    for (size_t i = 0; i < n; ++i) {
      tv1::L3Domain* l3 = topology->mutable_l3_domains(static_cast<int>(i));
      if (!(l3->*sum.has)()) (l3->*sum.set)(totals[i]);
    }
  }

  DeriveNodeMemory(node);

  // Per-NUMA bandwidth: the sum of its L3 domains' MBM totals.
  for (tv1::NumaNode& numa : *topology->mutable_numa_nodes()) {
    std::optional<uint64_t> total;
    for (const tv1::L3Domain& l3 : topology->l3_domains()) {
      if (l3.numa_node() != numa.id() || !l3.has_membw_total_bytes_per_second()) continue;
      total = total.value_or(0) + l3.membw_total_bytes_per_second();
    }
    if (total) {
      numa.set_membw_bytes_per_second(*total);
    } else {
      numa.clear_membw_bytes_per_second();
    }
  }
}

std::string NewBootId() {
  absl::BitGen gen;
  const uint64_t hi = absl::Uniform<uint64_t>(gen);
  const uint64_t lo = absl::Uniform<uint64_t>(gen);
  char out[37];
  std::snprintf(out, sizeof out, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0x0fff),
                static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3fff)),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return out;
}

SimulatedNode::SimulatedNode(tv1::NodeReport report_template, std::string boot_id,
                             NodeTimeline timeline)
    : template_(std::move(report_template)), timeline_(std::move(timeline)) {
  template_.set_agent_version(NEIGHBORLY_VERSION);
  template_.set_boot_id(boot_id);
  timeline_.underived.set_agent_version(NEIGHBORLY_VERSION);
  timeline_.underived.set_boot_id(std::move(boot_id));
}

tv1::NodeReport SimulatedNode::NextReport(absl::Time window_start, absl::Duration window_duration) {
  tv1::NodeReport report;
  if (timeline_.pods.empty()) {
    report = template_;
  } else {
    // A node with series: this window's values, then the sums over them.
    report = timeline_.underived;
    ApplySeries(timeline_, sequence_, &report);
    DeriveNodeMeasurements(&report);
  }
  report.set_sequence(++sequence_);
  *report.mutable_window_start() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(window_start));
  *report.mutable_window_duration() = google::protobuf::util::TimeUtil::NanosecondsToDuration(
      absl::ToInt64Nanoseconds(window_duration));
  return report;
}

}  // namespace neighborly::agent
