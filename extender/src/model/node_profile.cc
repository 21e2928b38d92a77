#include "extender/src/model/node_profile.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "extender/src/model/interference.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cpu_list.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

CpuSet ParseOrEmpty(std::string_view text) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList(text);
  return cpus.ok() ? *std::move(cpus) : CpuSet{};
}

CpuSet Difference(const CpuSet& a, const CpuSet& b) {
  CpuSet out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Where a pod's load lands: a weight per NUMA node and per L3 domain, each summing to 1.
struct Placement {
  std::vector<double> numa;
  std::vector<double> l3;
};

// A window is a victim's when its IPC is below this share of its workload's
// baseline while its MPKI is above this multiple of its baseline.
constexpr double kVictimIpcDrop = 0.85;
constexpr double kVictimMpkiRise = 1.25;

// Demand per L3 domain and each resident's predicted slowdown now; the most
// sensitive residents tracked for evaluation (issue 22).
void PredictResidents(const google::protobuf::RepeatedPtrField<tv1::PodReport>& pods_in,
                      std::span<const Demand> demands,
                      std::span<const std::vector<double>> l3_weights, const ModelConfig& config,
                      NodeProfile& p) {
  const InterferenceConfig& ic = config.interference;
  for (L3Profile& l3 : p.l3) l3.demand_bytes = l3.cold_demand = 0;
  // A pod running on several L3 domains (the shared pool) keeps its whole
  // working set in each (its threads there touch all of it), with the share
  // of its accesses its CPUs there make: colder there.
  for (size_t i = 0; i < demands.size(); ++i) {
    const double cold = demands[i].Coldness(ic);
    for (size_t d = 0; d < p.l3.size() && d < l3_weights[i].size(); ++d) {
      const double w = l3_weights[i][d];
      if (w <= 0) continue;
      p.l3[d].demand_bytes += demands[i].llc_bytes;
      p.l3[d].cold_demand += demands[i].llc_bytes * cold / w;
    }
  }
  // A domain's measured occupancy is not demand: a cache never empties, so a
  // quiet node's L3 reads nearly full. Demand is its pods' working sets.
  std::array<double, kMaxNumaNodes> latency{};
  for (size_t n = 0; n < p.numa.size(); ++n) {
    latency[n] = p.numa[n].peak_membw > 0 ? p.numa[n].membw / p.numa[n].peak_membw : 0;
  }
  CoupleSocketUtilisation(p, ic.socket_membw_coupling, latency);
  for (size_t n = 0; n < p.numa.size(); ++n) latency[n] = LoadedLatency(latency[n], ic);
  std::vector<size_t> order;
  for (size_t i = 0; i < demands.size(); ++i) {
    const Demand& dm = demands[i];
    const double cold = dm.Coldness(ic);
    double slowdown = 0, weight = 0;
    for (size_t d = 0; d < p.l3.size() && d < l3_weights[i].size(); ++d) {
      const double w = l3_weights[i][d];
      if (w <= 0) continue;
      const double loss =
          CacheLoss(cold / w, p.l3[d].demand_bytes, p.l3[d].cold_demand, p.l3[d].size_bytes);
      slowdown += w * Slowdown(dm.cache_sensitivity, dm.membw_sensitivity, loss,
                               latency[p.l3[d].numa_index]);
      weight += w;
    }
    p.pods[i].slowdown = weight > 0 ? slowdown / weight : 1.0;
    if (dm.llc_bytes > 0 || dm.membw_bytes_per_second > 0) order.push_back(i);
  }
  // Latency-critical first, then by how much their slowdown counts.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((demands[a].tolerance > 0) != (demands[b].tolerance > 0)) return demands[a].tolerance > 0;
    return demands[a].harm_weight > demands[b].harm_weight;
  });
  const size_t cap = static_cast<size_t>(std::max(0, ic.max_tracked_residents));
  for (size_t i : order) {
    const Demand& dm = demands[i];
    size_t entries = 0;
    for (size_t d = 0; d < p.l3.size() && d < l3_weights[i].size(); ++d) {
      entries += l3_weights[i][d] > 0 ? 1 : 0;
    }
    if (entries == 0 || p.tracked.size() + entries > cap) continue;
    const double cold = dm.Coldness(ic);
    const int32_t name_index = static_cast<int32_t>(p.tracked_names.size());
    p.tracked_names.push_back(
        absl::StrCat(pods_in[static_cast<int>(i)].namespace_(), "/",
                     pods_in[static_cast<int>(i)].name()));
    for (size_t d = 0; d < p.l3.size() && d < l3_weights[i].size(); ++d) {
      const double w = l3_weights[i][d];
      if (w <= 0) continue;
      TrackedResident t;
      t.llc_bytes = dm.llc_bytes;
      t.coldness = cold / w;
      t.cache_sensitivity = dm.cache_sensitivity;
      t.membw_sensitivity = dm.membw_sensitivity;
      t.tolerance = dm.tolerance;
      t.harm_weight = dm.harm_weight;
      t.share = w;
      t.slowdown = p.pods[i].slowdown;
      t.cache_loss = CacheLoss(cold, p.l3[d].demand_bytes, p.l3[d].cold_demand, p.l3[d].size_bytes);
      t.domain_slowdown = Slowdown(dm.cache_sensitivity, dm.membw_sensitivity, t.cache_loss,
                                   latency[p.l3[d].numa_index]);
      t.l3_index = static_cast<uint16_t>(d);
      t.numa_index = p.l3[d].numa_index;
      t.pod_index = static_cast<int32_t>(i);
      t.name_index = name_index;
      p.tracked.push_back(t);
    }
  }
}

}  // namespace

ResidentPod ClassifyResident(const tv1::PodReport& pod, const ModelConfig& config,
                             const RememberedPod* remembered, std::optional<double> membw_share,
                             std::optional<double> l3_share, const ResidentKnowledge* knowledge) {
  ResidentPod out;
  if (std::optional<ClassResolution> declared =
          DeclaredClass(pod.labels(), pod.annotations(), config)) {
    out.contention_class = declared->contention_class;
    out.source = declared->source;
    return out;
  }
  // A Guaranteed pod with whole cores is never demoted to batch by
  // measurement alone (issue 22): a squeezed service misses like a streamer.
  const bool protected_qos =
      pod.qos_class() == tv1::QOS_CLASS_GUARANTEED && !pod.exclusive_cpus().empty();
  if (protected_qos) {
    membw_share.reset();
    l3_share.reset();
  }
  const bool bw_aggressor = membw_share && *membw_share >= config.aggressor_membw_share;
  const bool mpki_ok = !pod.has_llc_misses_per_kilo_instructions() ||
                       pod.llc_misses_per_kilo_instructions() >= config.aggressor_min_mpki;
  const bool l3_aggressor = l3_share && *l3_share >= config.aggressor_l3_share && mpki_ok;
  if (bw_aggressor || l3_aggressor) {
    out.contention_class = ContentionClass::kBatch;
    out.source = ClassSource::kMeasured;
    out.aggressor = true;
    out.why =
        bw_aggressor
            ? absl::StrFormat("measured membw %.0f%% of its NUMA node's peak", *membw_share * 100)
            : absl::StrFormat("measured L3 occupancy %.0f%% of its L3 domain", *l3_share * 100);
    return out;
  }
  // Its workload's verdict holds through quiet windows (hysteresis).
  if (!protected_qos && knowledge != nullptr && knowledge->workload != nullptr &&
      knowledge->workload->aggressor) {
    out.contention_class = ContentionClass::kBatch;
    out.source = ClassSource::kMeasured;
    out.aggressor = true;
    out.why = absl::StrCat("its workload ", Av(knowledge->workload_name), ": ",
                           knowledge->workload->aggressor_why);
    return out;
  }
  if (remembered != nullptr && remembered->source != ClassSource::kDefault) {
    out.contention_class = remembered->contention_class;
    out.source = ClassSource::kRemembered;
  }
  return out;
}

QosClass QosClassOf(tv1::QosClass qos) {
  switch (qos) {
    case tv1::QOS_CLASS_GUARANTEED:
      return QosClass::kGuaranteed;
    case tv1::QOS_CLASS_BURSTABLE:
      return QosClass::kBurstable;
    case tv1::QOS_CLASS_BEST_EFFORT:
      return QosClass::kBestEffort;
    default:
      return QosClass::kUnknown;
  }
}

std::string IsolationReason(ContentionClass incoming, std::string_view example, int count) {
  return absl::StrCat("isolation: ", Av(ContentionClassName(incoming)), " pod would run beside ",
                      Av(example),
                      count > 1 ? absl::StrCat(" and ", count - 1, " more") : std::string());
}

namespace {

// Each NUMA node's socket, from its cores' physical_package_id (issue 27):
// a node without core information is a socket of its own.
template <typename IndexOf>
void AssignSockets(const tv1::Topology& topology, const IndexOf& numa_index, NodeProfile& p) {
  std::vector<int64_t> package(p.numa.size(), -1);
  for (const tv1::CpuCore& core : topology.cores()) {
    const int n = numa_index(core.numa_node());
    if (n < 0) continue;
    int64_t& mine = package[static_cast<size_t>(n)];
    if (mine < 0) mine = core.socket();
  }
  std::vector<int64_t> seen;
  for (size_t n = 0; n < p.numa.size(); ++n) {
    // Unknown: a key of its own, below every package id.
    const int64_t key = package[n] >= 0 ? package[n] : -1 - static_cast<int64_t>(n);
    const auto it = std::find(seen.begin(), seen.end(), key);
    if (it != seen.end()) p.numa_shares_socket = true;
    const size_t index = it != seen.end() ? static_cast<size_t>(it - seen.begin()) : seen.size();
    if (it == seen.end()) seen.push_back(key);
    p.numa[n].socket = static_cast<uint8_t>(std::min<size_t>(index, 255));
  }
}

}  // namespace

NodeProfile BuildNodeProfile(const tv1::NodeReport& report, const ModelConfig& config,
                             const RememberedLookup& remembered, absl::Time received_at,
                             std::span<const ResidentKnowledge> knowledge) {
  NodeProfile p;
  p.residents_until = received_at + config.residents_max_age;
  p.name = report.node_name();
  p.received_at = received_at;
  p.window = absl::Seconds(report.window_duration().seconds()) +
             absl::Nanoseconds(report.window_duration().nanos());
  p.fresh_until = received_at + p.window * config.fresh_intervals;
  p.stale_at = received_at + config.max_age;
  p.topology_manager_policy = report.kubelet().topology_manager_policy();
  p.cpu_manager_policy = report.kubelet().cpu_manager_policy();
  p.single_numa_admission =
      p.topology_manager_policy == "single-numa-node" || p.topology_manager_policy == "restricted";

  const auto& numa_in = report.topology().numa_nodes();
  const size_t numa_count = std::min<size_t>(numa_in.size(), kMaxNumaNodes);
  std::vector<CpuSet> numa_cpus(numa_count);
  std::vector<int64_t> numa_memory(numa_count);
  p.numa.resize(numa_count);
  for (size_t n = 0; n < numa_count; ++n) {
    const tv1::NumaNode& in = numa_in[static_cast<int>(n)];
    NumaProfile& out = p.numa[n];
    out.id = in.id();
    numa_cpus[n] = ParseOrEmpty(in.cpus());
    numa_memory[n] = static_cast<int64_t>(std::min<uint64_t>(in.memory_bytes(), INT64_MAX));
    out.peak_membw = in.has_peak_membw_bytes_per_second() && in.peak_membw_bytes_per_second() > 0
                         ? static_cast<double>(in.peak_membw_bytes_per_second())
                         : static_cast<double>(config.default_peak_membw_bytes_per_second);
    if (in.has_membw_bytes_per_second()) {
      out.membw = static_cast<double>(in.membw_bytes_per_second());
      out.membw_measured = true;
    }
  }
  auto numa_index = [&](uint32_t id) -> int {
    for (size_t n = 0; n < numa_count; ++n) {
      if (p.numa[n].id == id) return static_cast<int>(n);
    }
    return -1;
  };
  AssignSockets(report.topology(), numa_index, p);

  // L3 domains, grouped by NUMA node so that each NUMA node owns a contiguous range.
  struct L3In {
    const tv1::L3Domain* domain;
    int numa;
  };
  std::vector<L3In> l3_in;
  for (const tv1::L3Domain& d : report.topology().l3_domains()) {
    if (l3_in.size() >= kMaxL3Domains) break;
    const int n = numa_index(d.numa_node());
    if (n >= 0) l3_in.push_back({&d, n});
  }
  std::stable_sort(l3_in.begin(), l3_in.end(),
                   [](const L3In& a, const L3In& b) { return a.numa < b.numa; });
  std::vector<CpuSet> l3_cpus(l3_in.size());
  p.l3.resize(l3_in.size());
  for (auto& numa : p.numa) numa.l3_begin = numa.l3_end = 0;
  for (size_t d = 0; d < l3_in.size(); ++d) {
    const tv1::L3Domain& in = *l3_in[d].domain;
    L3Profile& out = p.l3[d];
    out.id = in.id();
    out.numa_index = static_cast<uint16_t>(l3_in[d].numa);
    out.size_bytes = static_cast<double>(in.size_bytes());
    l3_cpus[d] = ParseOrEmpty(in.cpus());
    if (in.has_occupancy_bytes()) {
      out.occupancy_bytes = static_cast<double>(in.occupancy_bytes());
      out.occupancy_measured = true;
    }
  }
  for (size_t n = 0; n < numa_count; ++n) {
    size_t begin = 0;
    while (begin < p.l3.size() && p.l3[begin].numa_index < n) ++begin;
    size_t end = begin;
    while (end < p.l3.size() && p.l3[end].numa_index == n) ++end;
    p.numa[n].l3_begin = static_cast<uint16_t>(begin);
    p.numa[n].l3_end = static_cast<uint16_t>(end);
  }
  // A NUMA node's bandwidth is the sum of its L3 domains' MBM when every one is measured.
  for (size_t n = 0; n < numa_count; ++n) {
    NumaProfile& numa = p.numa[n];
    if (numa.membw_measured || numa.l3_begin == numa.l3_end) continue;
    double sum = 0;
    bool all = true;
    for (size_t d = numa.l3_begin; d < numa.l3_end; ++d) {
      const tv1::L3Domain& in = *l3_in[d].domain;
      all = all && in.has_membw_total_bytes_per_second();
      sum += static_cast<double>(in.membw_total_bytes_per_second());
    }
    if (all) {
      numa.membw = sum;
      numa.membw_measured = true;
    }
  }

  // Exclusive CPUs of pods, reserved CPUs, and the shared pool.
  const auto& pods_in = report.pods();
  std::vector<CpuSet> pod_cpus(pods_in.size());
  CpuSet exclusive_all;
  for (int i = 0; i < pods_in.size(); ++i) {
    pod_cpus[i] = ParseOrEmpty(pods_in[i].exclusive_cpus());
    exclusive_all.insert(exclusive_all.end(), pod_cpus[i].begin(), pod_cpus[i].end());
  }
  std::sort(exclusive_all.begin(), exclusive_all.end());
  exclusive_all.erase(std::unique(exclusive_all.begin(), exclusive_all.end()), exclusive_all.end());
  const CpuSet reserved = ParseOrEmpty(report.kubelet().reserved_cpus());
  CpuSet shared = ParseOrEmpty(report.kubelet().shared_pool_cpus());
  if (shared.empty()) {
    CpuSet all;
    for (const CpuSet& c : numa_cpus) all.insert(all.end(), c.begin(), c.end());
    std::sort(all.begin(), all.end());
    shared = Difference(all, exclusive_all);
  }
  for (size_t n = 0; n < numa_count; ++n) {
    const int32_t taken = static_cast<int32_t>(IntersectionSize(numa_cpus[n], reserved) +
                                               IntersectionSize(numa_cpus[n], exclusive_all));
    p.numa[n].free_exclusive_cpus = std::max(0, static_cast<int32_t>(numa_cpus[n].size()) - taken);
  }
  {
    double total = 0;
    std::vector<double> numa_shared(numa_count), l3_shared(p.l3.size());
    for (size_t n = 0; n < numa_count; ++n) {
      numa_shared[n] = static_cast<double>(IntersectionSize(numa_cpus[n], shared));
      total += numa_shared[n];
    }
    for (size_t n = 0; n < numa_count; ++n) {
      p.numa[n].shared_weight = total > 0 ? numa_shared[n] / total : 1.0 / numa_count;
      // Within a NUMA node, by the shared CPUs of each L3 domain (evenly without CPU lists).
      double in_numa = 0;
      for (size_t d = p.numa[n].l3_begin; d < p.numa[n].l3_end; ++d) {
        l3_shared[d] = static_cast<double>(IntersectionSize(l3_cpus[d], shared));
        in_numa += l3_shared[d];
      }
      const size_t domains = p.numa[n].l3_end - p.numa[n].l3_begin;
      for (size_t d = p.numa[n].l3_begin; d < p.numa[n].l3_end; ++d) {
        p.l3[d].shared_weight =
            p.numa[n].shared_weight * (in_numa > 0 ? l3_shared[d] / in_numa : 1.0 / domains);
      }
    }
  }

  // Pods: placement weights, classification, load and memory.
  // pred_*: every pod's load (measured or predicted), for domains without a
  // measurement of their own; unmeasured_*: only the pods without a
  // measurement, added to the domains that have one.
  std::vector<double> pred_numa_bw(numa_count, 0), pred_l3_occ(p.l3.size(), 0);
  std::vector<double> unmeasured_numa_bw(numa_count, 0), unmeasured_l3_occ(p.l3.size(), 0);
  std::vector<double> streaming_bw(numa_count, 0);
  std::vector<int> streaming_pods(numa_count, 0);
  std::vector<bool> streaming_unpinned(numa_count, false);  // a member runs in the shared pool
  double total_bw = 0, unmeasured_bw = 0;
  std::vector<int64_t> used_memory(numa_count, 0);
  p.pods.resize(pods_in.size());
  std::vector<Demand> demands(pods_in.size());
  std::vector<std::vector<double>> l3_weights(pods_in.size());
  // What each NUMA node's measured load did to memory latency this window:
  // the fit's natural experiment (interference_fit.h).
  std::array<double, kMaxNumaNodes> measured_u{};
  for (size_t n = 0; n < numa_count; ++n) {
    if (p.numa[n].membw_measured && p.numa[n].peak_membw > 0) {
      measured_u[n] = p.numa[n].membw / p.numa[n].peak_membw;
    }
  }
  CoupleSocketUtilisation(p, config.interference.socket_membw_coupling, measured_u);
  for (int i = 0; i < pods_in.size(); ++i) {
    const tv1::PodReport& pod = pods_in[i];
    Placement w{std::vector<double>(numa_count, 0), std::vector<double>(p.l3.size(), 0)};
    if (!pod_cpus[i].empty()) {
      const double total = static_cast<double>(pod_cpus[i].size());
      for (size_t n = 0; n < numa_count; ++n) {
        w.numa[n] = static_cast<double>(IntersectionSize(pod_cpus[i], numa_cpus[n])) / total;
      }
      double l3_total = 0;
      for (size_t d = 0; d < p.l3.size(); ++d) {
        w.l3[d] = static_cast<double>(IntersectionSize(pod_cpus[i], l3_cpus[d])) / total;
        l3_total += w.l3[d];
      }
      if (l3_total <= 0) {  // no L3 CPU lists: evenly over the domains of its NUMA nodes
        for (size_t n = 0; n < numa_count; ++n) {
          const size_t domains = p.numa[n].l3_end - p.numa[n].l3_begin;
          for (size_t d = p.numa[n].l3_begin; d < p.numa[n].l3_end; ++d) {
            w.l3[d] = w.numa[n] / static_cast<double>(domains);
          }
        }
      }
    } else if (!pod.memory_bytes_by_numa().empty()) {
      double total = 0;
      for (const auto& [id, bytes] : pod.memory_bytes_by_numa())
        total += static_cast<double>(bytes);
      for (const auto& [id, bytes] : pod.memory_bytes_by_numa()) {
        const int n = numa_index(id);
        if (n >= 0 && total > 0) w.numa[n] = static_cast<double>(bytes) / total;
      }
      for (size_t n = 0; n < numa_count; ++n) {
        const size_t domains = p.numa[n].l3_end - p.numa[n].l3_begin;
        for (size_t d = p.numa[n].l3_begin; d < p.numa[n].l3_end; ++d) {
          w.l3[d] = w.numa[n] / static_cast<double>(domains);
        }
      }
    } else {
      for (size_t n = 0; n < numa_count; ++n) w.numa[n] = p.numa[n].shared_weight;
      for (size_t d = 0; d < p.l3.size(); ++d) w.l3[d] = p.l3[d].shared_weight;
    }
    const size_t home_numa =
        numa_count == 0 ? 0 : std::max_element(w.numa.begin(), w.numa.end()) - w.numa.begin();
    l3_weights[i] = w.l3;
    const size_t home_l3 =
        p.l3.empty() ? 0 : std::max_element(w.l3.begin(), w.l3.end()) - w.l3.begin();

    // Bandwidth: MBM, else a lower bound from LLC misses (each brings a 64-byte line).
    std::optional<double> measured_bw;
    bool bw_estimated = false;
    if (pod.has_membw_total_bytes_per_second()) {
      measured_bw = static_cast<double>(pod.membw_total_bytes_per_second());
    } else if (pod.has_llc_misses_per_second()) {
      measured_bw = static_cast<double>(pod.llc_misses_per_second()) * 64.0;
      bw_estimated = true;
    }
    const ResidentKnowledge* k =
        static_cast<size_t>(i) < knowledge.size() ? &knowledge[static_cast<size_t>(i)] : nullptr;
    const WorkloadPrediction* fit = k != nullptr ? k->workload : nullptr;
    // Issue 22: a window whose IPC fell while its misses rose, against its
    // workload's uncontended baseline, is a victim's: its bandwidth is a
    // symptom. Its demand is what it would move with its baseline misses
    // and IPC (traffic ~ MPKI x IPC); an aggressor's holds whatever happens.
    bool victim = false;
    std::optional<double> solo_bw = measured_bw;
    if (measured_bw && fit != nullptr && fit->baseline_ipc && fit->baseline_mpki &&
        pod.has_ipc() && pod.has_llc_misses_per_kilo_instructions() && pod.ipc() > 0 &&
        pod.llc_misses_per_kilo_instructions() > 0) {
      const double ipc = pod.ipc(), mpki = pod.llc_misses_per_kilo_instructions();
      victim = ipc < kVictimIpcDrop * *fit->baseline_ipc &&
               mpki > kVictimMpkiRise * *fit->baseline_mpki;
      if (victim) {
        solo_bw = *measured_bw * (*fit->baseline_mpki / mpki) * (*fit->baseline_ipc / ipc);
        solo_bw = std::min(*solo_bw, *measured_bw);
      }
    }
    if (fit != nullptr && fit->solo_membw_bytes_per_second && measured_bw &&
        fit->fit_confidence >= 0.5) {
      solo_bw = std::min(*solo_bw, std::max(*fit->solo_membw_bytes_per_second, 0.0));
    }
    std::optional<double> membw_share, l3_share;
    if (solo_bw && numa_count > 0) membw_share = *solo_bw / p.numa[home_numa].peak_membw;
    if (pod.has_llc_occupancy_bytes() && !p.l3.empty() && p.l3[home_l3].size_bytes > 0) {
      l3_share = static_cast<double>(pod.llc_occupancy_bytes()) / p.l3[home_l3].size_bytes;
    }
    const RememberedPod* known =
        k != nullptr ? k->remembered : (remembered ? remembered(pod.uid()) : nullptr);
    ResidentPod& resident = p.pods[i];
    resident = ClassifyResident(pod, config, known, victim ? std::nullopt : membw_share, l3_share, k);
    resident.victim = victim;

    // "namespace/name" only for the first pod of each conflicting class.
    auto who = [&pod] { return absl::StrCat(pod.namespace_(), "/", pod.name()); };
    switch (resident.contention_class) {
      case ContentionClass::kLatencyCritical:
        if (p.latency_critical_pods++ == 0) {
          p.latency_critical_example = absl::StrCat("latency-critical pod ", who());
        }
        break;
      case ContentionClass::kBatch:
        if (resident.aggressor) ++p.aggressor_pods;
        if (p.batch_pods++ == 0) {
          p.batch_example = resident.aggressor
                                ? absl::StrCat("aggressor pod ", who(), " (", resident.why, ")")
                                : absl::StrCat("batch pod ", who());
        }
        break;
      case ContentionClass::kStandard:
        ++p.standard_pods;
        break;
    }

    // Its load: measured (or estimated), else predicted: its workload's
    // profile blended with its hints or prior by the profile's confidence.
    FootprintHints hints = HintsFromAnnotations(pod.annotations());
    if (known != nullptr) {
      if (!hints.llc_bytes) hints.llc_bytes = known->hints.llc_bytes;
      if (!hints.membw_bytes_per_second) {
        hints.membw_bytes_per_second = known->hints.membw_bytes_per_second;
      }
    }
    const Footprint prior = PriorFootprint(
        resident.contention_class,
        static_cast<double>(std::max<int64_t>(0, pod.cpu_request_millicores())) / 1000.0, config);
    double llc = static_cast<double>(hints.llc_bytes.value_or(prior.llc_bytes));
    double bw =
        static_cast<double>(hints.membw_bytes_per_second.value_or(prior.membw_bytes_per_second));
    resident.footprint_source = hints.empty() ? "prior" : "hint";
    if (k != nullptr && BlendWithProfile(k->workload, llc, bw)) {
      resident.footprint_source = "workload";
    }
    const bool llc_measured = pod.has_llc_occupancy_bytes();
    if (llc_measured) llc = static_cast<double>(pod.llc_occupancy_bytes());
    if (measured_bw) {
      bw = *measured_bw;
      resident.footprint_source = bw_estimated ? "estimated" : "measured";
    }
    // Issue 14: isolation by footprint (a tiny batch pod blocks nothing) and
    // by socket (a pinned pod counts on the NUMA nodes it is pinned to).
    if (resident.contention_class == ContentionClass::kBatch && !resident.aggressor &&
        llc < static_cast<double>(config.isolation_floor_llc_bytes) &&
        bw < static_cast<double>(config.isolation_floor_membw_bytes_per_second)) {
      resident.tiny = true;
      ++p.tiny_batch_pods;
      if (--p.batch_pods == 0 || p.batch_example == absl::StrCat("batch pod ", who())) {
        p.batch_example.clear();  // re-chosen after the loop
      }
    } else if (!pod_cpus[i].empty() && resident.contention_class != ContentionClass::kStandard) {
      const bool lc = resident.contention_class == ContentionClass::kLatencyCritical;
      ++(lc ? p.pinned_latency_critical_pods : p.pinned_batch_pods);
      for (size_t n = 0; n < numa_count; ++n) {
        if (w.numa[n] <= 0) continue;
        uint8_t& count = lc ? p.numa[n].pinned_latency_critical : p.numa[n].pinned_batch;
        if (count < 255) ++count;
      }
    }
    // Listed but not measured while a booking here still carries it: the
    // booking counts its load until it is measured (docs/scoring.md, section 5).
    const bool booked = k != nullptr && k->booked_here && !measured_bw && !llc_measured;
    if (booked) {
      llc = 0;
      bw = 0;
      resident.footprint_source = "booked";
    }
    resident.llc_bytes = llc;
    resident.membw_bytes_per_second = bw;
    // What it needs: the working set it had room for (its workload's, its
    // hint), never less than it holds now; its traffic alone.
    {
      double llc_demand = llc;
      if (!booked) {
        if (hints.llc_bytes) llc_demand = std::max(llc_demand, static_cast<double>(*hints.llc_bytes));
        if (fit != nullptr && fit->llc_demand_bytes) {
          llc_demand = std::max(llc_demand, *fit->llc_demand_bytes);
        }
      }
      double solo = booked ? 0.0 : (solo_bw ? *solo_bw : bw);
      // Issue 27: a pod the agent holds under a resctrl cap is a smaller
      // neighbour: it cannot fill more ways or move more bytes than the cap lets it.
      if (pod.has_resctrl_cap()) {
        const tv1::ResctrlCap& cap = pod.resctrl_cap();
        const bool home_capped =
            !p.l3.empty() &&
            (cap.l3_domains().empty() ||
             std::find(cap.l3_domains().begin(), cap.l3_domains().end(), p.l3[home_l3].id) !=
                 cap.l3_domains().end());
        if (cap.has_l3_fraction() && home_capped && p.l3[home_l3].size_bytes > 0) {
          const double ways = std::clamp(cap.l3_fraction(), 0.0, 1.0) * p.l3[home_l3].size_bytes;
          llc_demand = std::min(llc_demand, ways);
          llc = std::min(llc, ways);
        }
        std::optional<double> bw_cap;
        if (cap.has_mba_bytes_per_second()) {
          bw_cap = static_cast<double>(cap.mba_bytes_per_second());
        } else if (cap.has_mba_fraction() && numa_count > 0 && p.numa[home_numa].peak_membw > 0) {
          bw_cap = std::clamp(cap.mba_fraction(), 0.0, 1.0) * p.numa[home_numa].peak_membw;
        }
        if (bw_cap) {
          solo = std::min(solo, *bw_cap);
          bw = std::min(bw, *bw_cap);
        }
        resident.capped = true;
      }
      resident.llc_bytes = llc;
      resident.membw_bytes_per_second = bw;
      resident.llc_demand_bytes = llc_demand;
      resident.solo_membw_bytes_per_second = solo;
      demands[i] = PodDemand(resident.contention_class, llc_demand, solo, fit,
                             ParseMaxSlowdown(FindValue(pod.annotations(), kMaxSlowdownAnnotation),
                                              nullptr),
                             config);
    }
    total_bw += bw;
    if (!pod.has_membw_total_bytes_per_second()) unmeasured_bw += bw_estimated ? bw * 0.5 : bw;

    // What this window teaches its workload.
    WorkloadObservation& o = resident.observation;
    if (llc_measured) o.llc_bytes = llc;
    if (measured_bw) o.membw_bytes_per_second = *measured_bw;
    o.membw_estimated = bw_estimated;
    if (pod.has_membw_local_bytes_per_second()) {
      o.membw_local_bytes_per_second = static_cast<double>(pod.membw_local_bytes_per_second());
    }
    if (pod.has_llc_misses_per_kilo_instructions()) o.mpki = pod.llc_misses_per_kilo_instructions();
    if (pod.has_ipc()) o.ipc = pod.ipc();
    if (pod.has_cpu_usage_millicores())
      o.cpu_millicores = static_cast<double>(pod.cpu_usage_millicores());
    o.membw_share = victim ? std::nullopt : membw_share;
    o.l3_share = l3_share;
    o.victim = victim;
    if (llc_measured && fit != nullptr && fit->llc_demand_bytes && *fit->llc_demand_bytes > 0) {
      o.cache_loss = std::clamp(1.0 - llc / *fit->llc_demand_bytes, 0.0, 1.0);
    }
    if (numa_count > 0 && p.numa[home_numa].membw_measured && p.numa[home_numa].peak_membw > 0) {
      o.latency_factor = LoadedLatency(measured_u[home_numa], config.interference);
    }
    resident.measured = o.llc_bytes || o.membw_bytes_per_second || o.ipc || o.mpki;

    // Streamers below the aggressor threshold still add up on their NUMA nodes.
    const bool streamer_mpki = !pod.has_llc_misses_per_kilo_instructions() ||
                               pod.llc_misses_per_kilo_instructions() >= config.aggressor_min_mpki;
    const bool streamer = config.aggregate_streamers && measured_bw && streamer_mpki &&
                          !resident.aggressor &&
                          resident.contention_class != ContentionClass::kLatencyCritical;
    const double sensitivity = Sensitivity(resident.contention_class);
    for (size_t n = 0; n < numa_count; ++n) {
      if (w.numa[n] <= 0) continue;
      pred_numa_bw[n] += bw * w.numa[n];
      if (!measured_bw) unmeasured_numa_bw[n] += bw * w.numa[n];
      if (streamer && bw * w.numa[n] >= config.streamer_min_membw_share * p.numa[n].peak_membw) {
        streaming_bw[n] += bw * w.numa[n];
        ++streaming_pods[n];
        if (pod_cpus[i].empty()) streaming_unpinned[n] = true;
      }
      p.numa[n].resident_sensitivity = std::max(p.numa[n].resident_sensitivity, sensitivity);
      if (pod.memory_bytes_by_numa().empty()) {
        used_memory[n] += static_cast<int64_t>(
            static_cast<double>(std::min<uint64_t>(pod.memory_request_bytes(), INT64_MAX / 2)) *
            w.numa[n]);
      }
    }
    for (const auto& [id, bytes] : pod.memory_bytes_by_numa()) {
      const int n = numa_index(id);
      if (n >= 0) used_memory[n] += static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX / 2));
    }
    for (size_t d = 0; d < p.l3.size(); ++d) {
      if (w.l3[d] <= 0) continue;
      pred_l3_occ[d] += llc * w.l3[d];
      if (!llc_measured) unmeasured_l3_occ[d] += llc * w.l3[d];
      p.l3[d].resident_sensitivity = std::max(p.l3[d].resident_sensitivity, sensitivity);
    }
  }
  // A domain's load: its measurement plus the predicted load of the pods it
  // could not have measured yet (warm-up, missing counters), else the sum of its pods.
  for (size_t n = 0; n < numa_count; ++n) {
    p.numa[n].membw =
        p.numa[n].membw_measured ? p.numa[n].membw + unmeasured_numa_bw[n] : pred_numa_bw[n];
    p.numa[n].free_memory_bytes = std::max<int64_t>(0, numa_memory[n] - used_memory[n]);
  }
  for (size_t d = 0; d < p.l3.size(); ++d) {
    p.l3[d].occupancy_bytes = p.l3[d].occupancy_measured
                                  ? p.l3[d].occupancy_bytes + unmeasured_l3_occ[d]
                                  : pred_l3_occ[d];
  }
  p.unmeasured_share = total_bw > 0 ? unmeasured_bw / total_bw : 0;
  {
    double cpus = 0, requested = 0;
    for (const CpuSet& c : numa_cpus) cpus += static_cast<double>(c.size());
    for (const tv1::PodReport& pod : pods_in) {
      requested += static_cast<double>(std::max<int64_t>(0, pod.cpu_request_millicores())) / 1000.0;
    }
    p.cpu_requested_share = cpus > 0 ? requested / cpus : 0;
  }
  PredictResidents(pods_in, demands, l3_weights, config, p);
  // Several streamers that together take an aggressor's share of a NUMA node
  // are judged as one aggressor (a group) by isolation.
  for (size_t n = 0; n < numa_count; ++n) {
    if (streaming_pods[n] < 2 ||
        streaming_bw[n] < config.aggressor_membw_share * p.numa[n].peak_membw) {
      continue;
    }
    ++p.aggressor_pods;
    // All pinned to this NUMA node: the group is that socket's, as a pinned
    // aggressor would be (socket-level isolation); else node-wide.
    if (!streaming_unpinned[n]) {
      ++p.pinned_batch_pods;
      if (p.numa[n].pinned_batch < 255) ++p.numa[n].pinned_batch;
    }
    if (p.batch_pods++ == 0) {
      p.batch_example = absl::StrFormat(
          "%d streaming pods on NUMA node %u (together %.1f GB/s, %.0f%% of its peak)",
          streaming_pods[n], p.numa[n].id, streaming_bw[n] / 1e9,
          100 * streaming_bw[n] / p.numa[n].peak_membw);
    }
  }
  {
    std::vector<int64_t> free_memory(numa_count);
    for (size_t n = 0; n < numa_count; ++n) free_memory[n] = p.numa[n].free_memory_bytes;
    p.admission = BuildAdmissionProfile(report, free_memory);
  }
  if (p.batch_pods > 0 && p.batch_example.empty()) {  // a tiny batch pod was the example
    for (int i = 0; i < pods_in.size(); ++i) {
      const ResidentPod& r = p.pods[i];
      if (r.contention_class != ContentionClass::kBatch || r.tiny) continue;
      const std::string who = absl::StrCat(pods_in[i].namespace_(), "/", pods_in[i].name());
      p.batch_example = r.aggressor ? absl::StrCat("aggressor pod ", who, " (", r.why, ")")
                                    : absl::StrCat("batch pod ", who);
      break;
    }
  }
  if (p.batch_pods > 0) {
    p.isolation_reason_latency_critical =
        IsolationReason(ContentionClass::kLatencyCritical, p.batch_example, p.batch_pods);
  }
  if (p.latency_critical_pods > 0) {
    p.isolation_reason_batch = IsolationReason(ContentionClass::kBatch, p.latency_critical_example,
                                               p.latency_critical_pods);
  }
  return p;
}

bool SameDecisionsWhileFresh(const NodeProfile& previous, NodeProfile& next) {
  if (next.fresh_until < previous.fresh_until || next.pods.size() != previous.pods.size()) {
    return false;
  }
  // What evaluation does not read, `previous`'s, swapped into `next` for the
  // comparison and out again: the report's timing, and what each pod's
  // window teaches its workload (which moves as the workload learns,
  // whatever the node does).
  absl::Time received_at = previous.received_at, fresh_until = previous.fresh_until,
             stale_at = previous.stale_at, residents_until = previous.residents_until;
  absl::Duration window = previous.window;
  absl::InlinedVector<WorkloadObservation, 16> observations;
  observations.reserve(previous.pods.size());
  for (const ResidentPod& pod : previous.pods) observations.push_back(pod.observation);
  auto swap_unread = [&] {
    std::swap(next.received_at, received_at);
    std::swap(next.fresh_until, fresh_until);
    std::swap(next.stale_at, stale_at);
    std::swap(next.residents_until, residents_until);
    std::swap(next.window, window);
    for (size_t i = 0; i < next.pods.size(); ++i) {
      std::swap(next.pods[i].observation, observations[i]);
    }
  };
  swap_unread();
  const bool same = next == previous;
  swap_unread();
  return same;
}

}  // namespace neighborly::extender
