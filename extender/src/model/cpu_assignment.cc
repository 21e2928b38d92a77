#include "extender/src/model/cpu_assignment.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/cpu_list.h"

namespace neighborly::extender {
namespace {

using Field = int32_t KubeletCpu::*;

// The kubelet's cpuAccumulator: the free CPUs left, what was taken, and the
// orderings in which each topology level is offered. Every ordering sorts
// candidates by their free CPUs, fewest first (pack into what is already
// used), ties to the lower id, and nests the lower level inside the higher
// one (NUMA nodes before sockets when a NUMA node holds whole sockets,
// sockets first when a socket holds several NUMA nodes: NPS4, SNC).
class Accumulator {
 public:
  Accumulator(const CpuTopologyView& topo, std::span<const int32_t> available, int32_t count)
      : topo_(topo), free_(topo.cpus().size(), 0), needed_(count) {
    for (int32_t cpu : available) {
      const KubeletCpu* c = topo.Find(cpu);
      if (c == nullptr) continue;
      char& f = free_[static_cast<size_t>(c - topo.cpus().data())];
      if (f) continue;
      f = 1;
      ++free_count_;
      for (int l = 0; l < kLevels; ++l) ++free_by_[l][c->*kFields[l]];
    }
    for (const KubeletCpu& c : topo.cpus()) {
      for (int l = 0; l < kLevels; ++l) ++total_by_[l][c.*kFields[l]];
    }
    numa_first_ = topo.num_sockets() >= topo.num_numa_nodes();
  }

  bool Satisfied() const { return needed_ < 1; }
  bool Failed() const { return needed_ > free_count_; }
  bool NeedsAtLeast(int32_t n) const { return needed_ >= n; }
  int32_t needed() const { return needed_; }
  int32_t free_count() const { return free_count_; }
  CpuIds Result() const {
    CpuIds out = result_;
    std::sort(out.begin(), out.end());
    return out;
  }

  void Take(std::span<const int32_t> cpus) {
    for (int32_t cpu : cpus) {
      const KubeletCpu* c = topo_.Find(cpu);
      if (c == nullptr) continue;
      char& f = free_[static_cast<size_t>(c - topo_.cpus().data())];
      if (!f) continue;
      f = 0;
      --free_count_;
      for (int l = 0; l < kLevels; ++l) --free_by_[l][c->*kFields[l]];
      result_.push_back(cpu);
      --needed_;
    }
  }

  // Free CPUs, optionally only those whose `field` equals `value`.
  CpuIds FreeCpus(Field field = nullptr, int32_t value = 0) const {
    CpuIds out;
    for (size_t i = 0; i < free_.size(); ++i) {
      if (!free_[i]) continue;
      const KubeletCpu& c = topo_.cpus()[i];
      if (field == nullptr || c.*field == value) out.push_back(c.cpu);
    }
    return out;
  }
  int32_t FreeIn(Field field, int32_t value) const { return Lookup(free_by_[Level(field)], value); }
  int32_t TotalIn(Field field, int32_t value) const {
    return Lookup(total_by_[Level(field)], value);
  }
  CpuIds AllIn(Field field, int32_t value) const {
    CpuIds out;
    for (const KubeletCpu& c : topo_.cpus()) {
      if (c.*field == value) out.push_back(c.cpu);
    }
    return out;
  }

  // Distinct values of `field` among free CPUs (those with `within` ==
  // `value` when given), sorted by free CPUs ascending, then id.
  std::vector<int32_t> Sorted(Field field, Field within = nullptr, int32_t value = 0) const {
    // Free CPUs per id: of all of it, not only the part `within`.
    const std::map<int32_t, int32_t>& ids = free_by_[Level(field)];
    std::vector<int32_t> out;
    if (within == nullptr) {
      for (const auto& [id, n] : ids) {
        if (n > 0) out.push_back(id);
      }
    } else {
      for (size_t i = 0; i < free_.size(); ++i) {
        if (!free_[i]) continue;
        const KubeletCpu& c = topo_.cpus()[i];
        if (c.*within != value) continue;
        if (std::find(out.begin(), out.end(), c.*field) == out.end()) out.push_back(c.*field);
      }
      std::sort(out.begin(), out.end());
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](int32_t a, int32_t b) { return ids.at(a) < ids.at(b); });
    return out;
  }

  std::vector<int32_t> SortedNumaNodes() const {
    if (numa_first_) return Sorted(&KubeletCpu::numa);
    std::vector<int32_t> out;
    for (int32_t socket : SortedSockets()) {
      for (int32_t numa : Sorted(&KubeletCpu::numa, &KubeletCpu::socket, socket)) {
        out.push_back(numa);
      }
    }
    return out;
  }
  std::vector<int32_t> SortedSockets() const {
    if (!numa_first_) return Sorted(&KubeletCpu::socket);
    std::vector<int32_t> out;
    for (int32_t numa : SortedNumaNodes()) {
      for (int32_t socket : Sorted(&KubeletCpu::socket, &KubeletCpu::numa, numa)) {
        out.push_back(socket);
      }
    }
    return out;
  }
  std::vector<int32_t> SortedCores() const {
    std::vector<int32_t> out;
    if (numa_first_) {
      for (int32_t socket : SortedSockets()) {
        for (int32_t core : Sorted(&KubeletCpu::core, &KubeletCpu::socket, socket)) {
          out.push_back(core);
        }
      }
    } else {
      for (int32_t numa : SortedNumaNodes()) {
        for (int32_t core : Sorted(&KubeletCpu::core, &KubeletCpu::numa, numa)) {
          out.push_back(core);
        }
      }
    }
    return out;
  }
  // Uncore caches inside each NUMA node in NUMA order. An L3 over several
  // NUMA nodes (SNC) is listed once, at its first NUMA node.
  std::vector<int32_t> SortedUncoreCaches() const {
    std::vector<int32_t> out;
    for (int32_t numa : SortedNumaNodes()) {
      for (int32_t uncore : Sorted(&KubeletCpu::uncore, &KubeletCpu::numa, numa)) {
        if (std::find(out.begin(), out.end(), uncore) == out.end()) out.push_back(uncore);
      }
    }
    return out;
  }
  CpuIds SortedCpusPacked() const {
    CpuIds out;
    for (int32_t core : SortedCores()) {
      for (int32_t cpu : FreeCpus(&KubeletCpu::core, core)) out.push_back(cpu);
    }
    return out;
  }

  // Every group of `level` (by `ids`' order) whose CPUs are all free, while
  // the request still needs at least all of it: takeFullSecondLevel and kin.
  template <typename SizeOf>
  void TakeFull(Field level, const std::vector<int32_t>& ids, SizeOf size_of) {
    std::vector<int32_t> free;
    for (int32_t id : ids) {
      if (FreeIn(level, id) == size_of(id)) free.push_back(id);
    }
    for (int32_t id : free) {
      CpuIds cpus = AllIn(level, id);
      if (!NeedsAtLeast(static_cast<int32_t>(cpus.size()))) continue;
      Take(cpus);
    }
  }
  void TakeFullNumaNodes() {
    TakeFull(&KubeletCpu::numa, SortedNumaNodes(),
             [&](int32_t numa) { return TotalIn(&KubeletCpu::numa, numa); });
  }
  void TakeFullSockets() {
    TakeFull(&KubeletCpu::socket, SortedSockets(), [&](int32_t) { return topo_.CpusPerSocket(); });
  }
  void TakeFullFirstLevel() { numa_first_ ? TakeFullNumaNodes() : TakeFullSockets(); }
  void TakeFullSecondLevel() { numa_first_ ? TakeFullSockets() : TakeFullNumaNodes(); }
  void TakeFullCores() {
    TakeFull(&KubeletCpu::core, SortedCores(), [&](int32_t) { return topo_.CpusPerCore(); });
  }
  void TakeFullUncore() {
    TakeFull(&KubeletCpu::uncore, SortedUncoreCaches(),
             [&](int32_t) { return topo_.CpusPerUncore(); });
  }

  // takePartialUncore: the first cores (by id) of the cache that still have
  // free CPUs, as many as the request needs in whole cores; taken only when
  // their free CPUs are exactly the request (an odd request on SMT leaves the
  // last core's second thread).
  void TakePartialUncore(int32_t uncore) {
    const int32_t per_core = std::max(1, topo_.CpusPerCore());
    const int32_t cores_needed = (needed_ + per_core - 1) / per_core;
    std::vector<int32_t> cores;
    for (int32_t cpu : FreeCpus(&KubeletCpu::uncore, uncore)) {
      const int32_t core = topo_.Find(cpu)->core;
      if (std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
    }
    std::sort(cores.begin(), cores.end());
    if (static_cast<int32_t>(cores.size()) > cores_needed) cores.resize(cores_needed);
    CpuIds cpus;
    for (int32_t core : cores) {
      for (int32_t cpu : FreeCpus(&KubeletCpu::core, core)) cpus.push_back(cpu);
    }
    std::sort(cpus.begin(), cpus.end());
    if (needed_ % 2 != 0 && per_core > 1 && static_cast<int32_t>(cpus.size()) > needed_) {
      cpus.pop_back();
    }
    if (static_cast<int32_t>(cpus.size()) == needed_) Take(cpus);
  }

  void TakeUncoreCache() {
    const int32_t per_uncore = topo_.CpusPerUncore();
    for (int32_t uncore : SortedUncoreCaches()) {
      if (NeedsAtLeast(per_uncore)) TakeFullUncore();
      if (Satisfied()) return;
      TakePartialUncore(uncore);
      if (Satisfied()) return;
    }
  }

  void TakeRemainingCpus() {
    for (int32_t cpu : SortedCpusPacked()) {
      const int32_t one[] = {cpu};
      Take(one);
      if (Satisfied()) return;
    }
  }

 private:
  static constexpr int kLevels = 4;
  static constexpr Field kFields[kLevels] = {&KubeletCpu::core, &KubeletCpu::socket,
                                             &KubeletCpu::numa, &KubeletCpu::uncore};
  static int Level(Field field) {
    for (int l = 0; l < kLevels; ++l) {
      if (kFields[l] == field) return l;
    }
    return 0;  // unreachable: every caller passes one of kFields
  }
  static int32_t Lookup(const std::map<int32_t, int32_t>& m, int32_t id) {
    auto it = m.find(id);
    return it == m.end() ? 0 : it->second;
  }

  const CpuTopologyView& topo_;
  // Free and total CPUs per id, for each level of kFields.
  std::array<std::map<int32_t, int32_t>, kLevels> free_by_, total_by_;
  std::vector<char> free_;  // by position in topo_.cpus()
  int32_t free_count_ = 0;
  int32_t needed_ = 0;
  CpuIds result_;
  bool numa_first_ = true;
};

absl::Status NotEnough(int32_t count, size_t available) {
  return absl::ResourceExhaustedError(
      absl::StrCat("not enough cpus available to satisfy request: requested=", count,
                   ", available=", available));
}

double StandardDeviation(const std::map<int32_t, int32_t>& values) {
  if (values.empty()) return 0;
  double mean = 0;
  for (const auto& [k, v] : values) mean += v;
  mean /= static_cast<double>(values.size());
  double sum = 0;
  for (const auto& [k, v] : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / static_cast<double>(values.size()));
}

// Calls f(combo) for every k-combination of `n` in lexicographic order of
// positions; f returns false to stop.
void IterateCombinations(const std::vector<int32_t>& n, int32_t k,
                         const std::function<bool(const std::vector<int32_t>&)>& f) {
  if (k < 1 || k > static_cast<int32_t>(n.size())) return;
  std::vector<int32_t> accum;
  std::function<bool(size_t, int32_t)> helper = [&](size_t start, int32_t left) -> bool {
    if (left == 0) return f(accum);
    for (size_t i = start; i + static_cast<size_t>(left) <= n.size(); ++i) {
      accum.push_back(n[i]);
      const bool go_on = helper(i + 1, left - 1);
      accum.pop_back();
      if (!go_on) return false;
    }
    return true;
  };
  helper(0, k);
}

}  // namespace

absl::StatusOr<CpuTopologyView> CpuTopologyView::Make(std::vector<KubeletCpu> cpus) {
  CpuTopologyView view;
  std::sort(cpus.begin(), cpus.end(),
            [](const KubeletCpu& a, const KubeletCpu& b) { return a.cpu < b.cpu; });
  int32_t max_id = -1;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const KubeletCpu& c = cpus[i];
    if (c.cpu < 0 || c.cpu > kMaxCpuId) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU id ", c.cpu, " is outside 0..", kMaxCpuId));
    }
    if (i > 0 && cpus[i - 1].cpu == c.cpu) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", c.cpu, " appears twice"));
    }
    max_id = c.cpu;
  }
  view.index_.assign(static_cast<size_t>(max_id + 1), -1);
  std::vector<int32_t> cores, sockets, numas, uncores;
  auto count = [](std::vector<int32_t>& seen, int32_t id) {
    if (std::find(seen.begin(), seen.end(), id) == seen.end()) seen.push_back(id);
  };
  for (size_t i = 0; i < cpus.size(); ++i) {
    view.index_[static_cast<size_t>(cpus[i].cpu)] = static_cast<int32_t>(i);
    count(cores, cpus[i].core);
    count(sockets, cpus[i].socket);
    count(numas, cpus[i].numa);
    count(uncores, cpus[i].uncore);
  }
  view.num_cores_ = static_cast<int32_t>(cores.size());
  view.num_sockets_ = static_cast<int32_t>(sockets.size());
  view.num_numa_ = static_cast<int32_t>(numas.size());
  view.num_uncore_ = static_cast<int32_t>(uncores.size());
  view.cpus_ = std::move(cpus);
  return view;
}

absl::StatusOr<CpuTopologyView> CpuTopologyView::FromReport(
    const telemetry::v1::Topology& topology) {
  std::map<int32_t, KubeletCpu> by_cpu;
  for (const telemetry::v1::NumaNode& node : topology.numa_nodes()) {
    absl::StatusOr<CpuSet> cpus = ParseCpuList(node.cpus());
    if (!cpus.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("NUMA node ", node.id(), " cpus: ",
                                                     cpus.status().message()));
    }
    for (uint32_t cpu : *cpus) {
      if (cpu > static_cast<uint32_t>(kMaxCpuId)) {
        return absl::InvalidArgumentError(
            absl::StrCat("NUMA node ", node.id(), ": CPU ", cpu, " is above ", kMaxCpuId));
      }
      KubeletCpu& c = by_cpu[static_cast<int32_t>(cpu)];
      c.cpu = static_cast<int32_t>(cpu);
      c.core = c.cpu;
      c.numa = static_cast<int32_t>(node.id());
      c.socket = -1;
      c.uncore = -1;
    }
  }
  for (const telemetry::v1::CpuCore& core : topology.cores()) {
    absl::StatusOr<CpuSet> cpus = ParseCpuList(core.cpus());
    if (!cpus.ok() || cpus->empty()) continue;
    for (uint32_t cpu : *cpus) {
      auto it = by_cpu.find(static_cast<int32_t>(cpu));
      if (it == by_cpu.end()) continue;
      it->second.core = static_cast<int32_t>(cpus->front());
      it->second.socket = static_cast<int32_t>(core.socket());
    }
  }
  for (const telemetry::v1::L3Domain& domain : topology.l3_domains()) {
    absl::StatusOr<CpuSet> cpus = ParseCpuList(domain.cpus());
    if (!cpus.ok()) continue;
    for (uint32_t cpu : *cpus) {
      auto it = by_cpu.find(static_cast<int32_t>(cpu));
      if (it != by_cpu.end()) it->second.uncore = static_cast<int32_t>(domain.id());
    }
  }
  std::vector<KubeletCpu> cpus;
  for (auto& [id, c] : by_cpu) {
    // No core information: the NUMA node stands in for the socket; no L3: the
    // kubelet names the uncore cache after the socket.
    if (c.socket < 0) c.socket = c.numa;
    if (c.uncore < 0) c.uncore = c.socket;
    cpus.push_back(c);
  }
  return Make(std::move(cpus));
}

const KubeletCpu* CpuTopologyView::Find(int32_t cpu) const {
  if (cpu < 0 || static_cast<size_t>(cpu) >= index_.size()) return nullptr;
  const int32_t i = index_[static_cast<size_t>(cpu)];
  return i < 0 ? nullptr : &cpus_[static_cast<size_t>(i)];
}

CpuIds CpuTopologyView::CpusInNuma(int32_t numa) const {
  CpuIds out;
  for (const KubeletCpu& c : cpus_) {
    if (c.numa == numa) out.push_back(c.cpu);
  }
  return out;
}

CpuIds CpuTopologyView::CpusInSocket(int32_t socket) const {
  CpuIds out;
  for (const KubeletCpu& c : cpus_) {
    if (c.socket == socket) out.push_back(c.cpu);
  }
  return out;
}

absl::StatusOr<CpuIds> TakeByTopologyNumaPacked(const CpuTopologyView& topo,
                                                std::span<const int32_t> available, int32_t count,
                                                bool prefer_uncore) {
  Accumulator acc(topo, available, count);
  if (acc.Satisfied()) return acc.Result();
  if (acc.Failed()) return NotEnough(count, available.size());
  acc.TakeFullFirstLevel();
  if (acc.Satisfied()) return acc.Result();
  acc.TakeFullSecondLevel();
  if (acc.Satisfied()) return acc.Result();
  if (prefer_uncore) {
    acc.TakeUncoreCache();
    if (acc.Satisfied()) return acc.Result();
  }
  acc.TakeFullCores();
  if (acc.Satisfied()) return acc.Result();
  acc.TakeRemainingCpus();
  if (acc.Satisfied()) return acc.Result();
  return absl::InternalError("failed to allocate cpus");
}

absl::StatusOr<CpuIds> TakeByTopologyNumaDistributed(const CpuTopologyView& topo,
                                                     std::span<const int32_t> available,
                                                     int32_t count, int32_t group_size,
                                                     bool align_by_socket) {
  if (group_size < 1) return absl::InvalidArgumentError("cpu group size below 1");
  if (count % group_size != 0) return TakeByTopologyNumaPacked(topo, available, count, false);
  Accumulator acc(topo, available, count);
  if (acc.Satisfied()) return acc.Result();
  if (acc.Failed()) return NotEnough(count, available.size());

  const std::vector<int32_t> numas = acc.SortedNumaNodes();
  // rangeNUMANodesNeededToSatisfy.
  const int32_t num_numa = topo.num_numa_nodes();
  const int32_t num_cpus = static_cast<int32_t>(topo.cpus().size());
  const int32_t groups = (num_cpus - 1) / group_size + 1;
  const int32_t groups_per_numa = (groups - 1) / num_numa + 1;
  const int32_t groups_needed = (count - 1) / group_size + 1;
  const int32_t min_numas = (groups_needed - 1) / groups_per_numa + 1;
  const int32_t max_numas = std::min(groups_needed, static_cast<int32_t>(numas.size()));
  auto free_in = [&](int32_t numa) { return acc.FreeIn(&KubeletCpu::numa, numa); };
  auto one_socket = [&](const std::vector<int32_t>& combo) {
    int32_t socket = -1;
    for (const KubeletCpu& c : topo.cpus()) {
      if (std::find(combo.begin(), combo.end(), c.numa) == combo.end()) continue;
      if (socket >= 0 && c.socket != socket) return false;
      socket = c.socket;
    }
    return true;
  };

  for (int32_t k = min_numas; k <= max_numas; ++k) {
    double best_balance = std::numeric_limits<double>::max();
    std::vector<int32_t> best_remainder, best_combo;
    bool best_in_one_socket = false;
    IterateCombinations(numas, k, [&](const std::vector<int32_t>& combo) {
      if (best_balance == 0 && (!align_by_socket || best_in_one_socket)) return false;
      int32_t total = 0, combo_groups = 0;
      for (int32_t numa : combo) {
        total += free_in(numa);
        combo_groups += free_in(numa) / group_size;
      }
      if (total < count || combo_groups * group_size < count) return true;
      const int32_t size = static_cast<int32_t>(combo.size());
      int32_t distribution = (count / size / group_size) * group_size;
      if (align_by_socket) {
        for (int32_t numa : combo) {
          distribution = std::min(distribution, free_in(numa) / group_size * group_size);
        }
      }
      for (int32_t numa : combo) {
        if (free_in(numa) < distribution) return true;
      }
      std::map<int32_t, int32_t> after;
      for (int32_t numa : numas) after[numa] = free_in(numa);
      for (int32_t numa : combo) after[numa] -= distribution;
      const int32_t remainder = count - distribution * size;
      std::vector<int32_t> remainder_combo;
      for (int32_t numa : combo) {
        if (after[numa] >= group_size) remainder_combo.push_back(numa);
      }
      double best_local = std::numeric_limits<double>::max();
      std::vector<int32_t> best_local_remainder;
      if (remainder == 0) best_local = StandardDeviation(after);
      for (int32_t j = static_cast<int32_t>(remainder_combo.size()); remainder > 0 && j >= 1; --j) {
        IterateCombinations(remainder_combo, j, [&](const std::vector<int32_t>& subset) {
          int32_t left = remainder;
          std::map<int32_t, int32_t> local = after;
          int32_t subset_groups = 0;
          for (int32_t numa : subset) subset_groups += local[numa] / group_size;
          if (subset_groups * group_size < left) return true;
          while (left > 0) {
            for (int32_t numa : subset) {
              if (left == 0) break;
              if (local[numa] < group_size) continue;
              local[numa] -= group_size;
              left -= group_size;
            }
          }
          const double balance = StandardDeviation(local);
          if (balance < best_local) {
            best_local = balance;
            best_local_remainder = subset;
          }
          return true;
        });
      }
      const bool in_one_socket = align_by_socket && one_socket(combo);
      bool better = best_local < best_balance;
      if (align_by_socket && in_one_socket != best_in_one_socket) better = in_one_socket;
      if (better) {
        best_balance = best_local;
        best_remainder = best_local_remainder;
        best_combo = combo;
        if (align_by_socket) best_in_one_socket = in_one_socket;
      }
      return true;
    });
    if (best_combo.empty()) continue;

    const int32_t size = static_cast<int32_t>(best_combo.size());
    int32_t distribution = (count / size / group_size) * group_size;
    for (int32_t numa : best_combo) {
      distribution = std::min(distribution, free_in(numa) / group_size * group_size);
    }
    for (int32_t numa : best_combo) {
      absl::StatusOr<CpuIds> cpus = TakeByTopologyNumaPacked(
          topo, acc.FreeCpus(&KubeletCpu::numa, numa), distribution, false);
      if (cpus.ok()) acc.Take(*cpus);
    }
    int32_t remainder = count - distribution * size;
    while (remainder > 0) {
      bool progress = false;
      for (int32_t numa : best_remainder) {
        if (remainder == 0) break;
        if (free_in(numa) < group_size) continue;
        absl::StatusOr<CpuIds> cpus = TakeByTopologyNumaPacked(
            topo, acc.FreeCpus(&KubeletCpu::numa, numa), group_size, false);
        if (cpus.ok()) acc.Take(*cpus);
        remainder -= group_size;
        progress = true;
      }
      if (!progress) break;  // the kubelet would spin here; its accounting never gets here
    }
    if (acc.needed() != 0) {
      return absl::InternalError(absl::StrCat(
          "accounting error, not enough CPUs allocated, remaining: ", acc.needed()));
    }
    return acc.Result();
  }
  return TakeByTopologyNumaPacked(topo, available, count, false);
}

StaticPolicyOptions StaticPolicyOptionsFrom(const telemetry::v1::KubeletPolicies& kubelet) {
  auto on = [&](const char* name) {
    auto it = kubelet.cpu_manager_policy_options().find(name);
    return it != kubelet.cpu_manager_policy_options().end() && it->second == "true";
  };
  StaticPolicyOptions o;
  o.full_pcpus_only = on("full-pcpus-only");
  o.distribute_cpus_across_numa = on("distribute-cpus-across-numa");
  o.align_by_socket = on("align-by-socket");
  o.prefer_align_cpus_by_uncore_cache = on("prefer-align-cpus-by-uncorecache");
  o.strict_cpu_reservation = on("strict-cpu-reservation");
  return o;
}

absl::StatusOr<CpuIds> AllocateExclusiveCpus(const CpuTopologyView& topo,
                                             const StaticPolicyOptions& options,
                                             std::span<const int32_t> available, int32_t count,
                                             std::span<const int32_t> numa_affinity) {
  const int32_t per_core = std::max(1, topo.CpusPerCore());
  if (options.full_pcpus_only && count % per_core != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("SMT Alignment Error: requested ", count,
                     " cpus not multiple cpus per core = ", per_core));
  }
  if (static_cast<int32_t>(available.size()) < count) return NotEnough(count, available.size());
  auto take = [&](std::span<const int32_t> from, int32_t n) -> absl::StatusOr<CpuIds> {
    if (options.distribute_cpus_across_numa) {
      return TakeByTopologyNumaDistributed(topo, from, n,
                                           options.full_pcpus_only ? per_core : 1,
                                           options.align_by_socket);
    }
    return TakeByTopologyNumaPacked(topo, from, n, options.prefer_align_cpus_by_uncore_cache);
  };
  CpuIds result;
  if (!numa_affinity.empty()) {
    CpuIds aligned;
    for (int32_t cpu : available) {
      const KubeletCpu* c = topo.Find(cpu);
      if (c == nullptr) continue;
      bool in = false;
      for (int32_t numa : numa_affinity) {
        if (options.align_by_socket) {
          // The hint widened to the sockets of its NUMA nodes.
          for (const KubeletCpu& other : topo.cpus()) {
            if (other.numa == numa && other.socket == c->socket) {
              in = true;
              break;
            }
          }
        } else {
          in = in || c->numa == numa;
        }
        if (in) break;
      }
      if (in) aligned.push_back(cpu);
    }
    const int32_t n = std::min(count, static_cast<int32_t>(aligned.size()));
    absl::StatusOr<CpuIds> first = take(aligned, n);
    if (!first.ok()) return first.status();
    result = std::move(*first);
  }
  CpuIds rest;
  for (int32_t cpu : available) {
    if (!std::binary_search(result.begin(), result.end(), cpu)) rest.push_back(cpu);
  }
  absl::StatusOr<CpuIds> more = take(rest, count - static_cast<int32_t>(result.size()));
  if (!more.ok()) return more.status();
  result.insert(result.end(), more->begin(), more->end());
  std::sort(result.begin(), result.end());
  return result;
}

std::vector<int32_t> UncoreCachesOf(const CpuTopologyView& topo, std::span<const int32_t> cpus) {
  std::vector<int32_t> out;
  for (int32_t cpu : cpus) {
    const KubeletCpu* c = topo.Find(cpu);
    if (c != nullptr && std::find(out.begin(), out.end(), c->uncore) == out.end()) {
      out.push_back(c->uncore);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace neighborly::extender
