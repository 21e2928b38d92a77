#include "extender/src/model/topology_admission.h"

#include <algorithm>
#include <bit>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cpu_list.h"
#include "common/strings.h"
#include "extender/src/model/cpu_assignment.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

CpuSet ParseOrEmpty(std::string_view text) {
  absl::StatusOr<CpuSet> cpus = ParseCpuList(text);
  return cpus.ok() ? *std::move(cpus) : CpuSet{};
}

bool Contains(const CpuSet& set, uint32_t cpu) {
  return std::binary_search(set.begin(), set.end(), cpu);
}

// Appends "20.0 GiB" or "512.0 MiB". Reasons are written into the decision's
// own string, which is reused from request to request: no temporaries (a
// request whose pod the bookings crowd out of every node formats a refusal
// per candidate).
void AppendBytesText(std::string* out, int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) {
    AppendOneDecimal(out, bytes, 30);
    out->append(" GiB");
  } else {
    AppendOneDecimal(out, bytes, 20);
    out->append(" MiB");
  }
}

// Up to every non-empty NUMA mask: inline for up to 8 NUMA nodes (no
// allocation per evaluation), on the heap beyond (nodes above the kubelet's
// default max-allowable-numa-nodes, where the operator raised it).
struct HintList {
  static constexpr size_t kInline = (1u << 8) - 1;
  std::array<TopologyHint, kInline> inline_hints;
  std::vector<TopologyHint> heap;
  TopologyHint* hints = inline_hints.data();
  size_t size = 0;
  HintList() = default;
  HintList(const HintList&) = delete;
  HintList& operator=(const HintList&) = delete;
  void Reserve(size_t numa_count) {
    const size_t need = (size_t{1} << numa_count) - 1;
    if (need <= kInline) return;
    if (heap.size() < need) heap.resize(need);
    hints = heap.data();
  }
  void Set(TopologyHint h) { hints[size++] = h; }
  std::span<const TopologyHint> view() const { return {hints, size}; }
};

// The average NUMA distance within a mask (NUMADistances.CalculateAverageFor:
// every ordered pair, itself included).
double AverageDistance(uint32_t mask, std::span<const uint16_t> distances, size_t n) {
  double sum = 0, count = 0;
  for (uint32_t a = mask; a != 0; a &= a - 1) {
    for (uint32_t b = mask; b != 0; b &= b - 1) {
      sum += distances[static_cast<size_t>(std::countr_zero(a)) * n +
                       static_cast<size_t>(std::countr_zero(b))];
      count += 1;
    }
  }
  return count == 0 ? 0 : sum / count;
}

template <typename TotalFn, typename FreeFn>
void GenerateHints(size_t numa_count, int64_t request, TotalFn total, FreeFn free, HintList& out) {
  out.size = 0;
  out.Reserve(numa_count);
  const uint32_t all = (1u << numa_count) - 1;
  int min_affinity = static_cast<int>(numa_count);
  for (uint32_t mask = 1; mask <= all; ++mask) {
    int64_t in_mask_total = 0, in_mask_free = 0;
    for (uint32_t bits = mask; bits != 0; bits &= bits - 1) {
      const int i = std::countr_zero(bits);
      in_mask_total += total(i);
      in_mask_free += free(i);
    }
    const int count = std::popcount(mask);
    if (in_mask_total >= request && count < min_affinity) min_affinity = count;
    if (in_mask_free >= request) out.Set({mask, false});
  }
  for (size_t i = 0; i < out.size; ++i) {
    out.hints[i].preferred = std::popcount(out.hints[i].mask) == min_affinity;
  }
}

void FilterSingleNuma(HintList& list) {
  size_t kept = 0;
  for (size_t i = 0; i < list.size; ++i) {
    const TopologyHint h = list.hints[i];
    if (h.preferred && (h.mask == 0 || std::popcount(h.mask) == 1)) list.hints[kept++] = h;
  }
  list.size = kept;
}

// IsNarrowerThan: fewer NUMA nodes, or as many with the lower mask.
bool Narrower(uint32_t a, uint32_t b) {
  const int ca = std::popcount(a), cb = std::popcount(b);
  return ca == cb ? a < b : ca < cb;
}

// HintMerger.compare; `closest` (prefer-closest-numa-nodes): equally wide
// masks are told apart by average distance (NUMAInfo.Closest), else the
// narrower / lower one wins (NUMAInfo.Narrowest).
TopologyHint Compare(const TopologyHint* current, const TopologyHint& candidate, int best_count,
                     std::span<const uint16_t> closest = {}, size_t n = 0) {
  auto fitter = [&](const TopologyHint& cur, const TopologyHint& cand) {
    if (cand.mask == cur.mask) return cur;
    if (!closest.empty() && std::popcount(cur.mask) == std::popcount(cand.mask)) {
      const double dc = AverageDistance(cur.mask, closest, n);
      const double dn = AverageDistance(cand.mask, closest, n);
      if (dc != dn) return dc < dn ? cur : cand;
    }
    return Narrower(cur.mask, cand.mask) ? cur : cand;
  };
  const int cur = std::popcount(current->mask), cand = std::popcount(candidate.mask);
  if (!current->preferred && candidate.preferred) return candidate;
  if (current->preferred && !candidate.preferred) return *current;
  if (current->preferred && candidate.preferred) return fitter(*current, candidate);
  if (cur > best_count) return fitter(*current, candidate);
  if (cur == best_count) return cand != best_count ? *current : fitter(*current, candidate);
  if (cand > best_count) return *current;
  if (cand == best_count) return candidate;
  if (cand > cur) return candidate;
  if (cand < cur) return *current;
  return fitter(*current, candidate);
}

// Working state: free CPUs, cores and memory per NUMA index.
// Only the first numa.size() entries are ever read (and all of them are set).
struct Free {
  std::array<int32_t, kMaxAdmissionNumaNodes> cpus;
  std::array<int32_t, kMaxAdmissionNumaNodes> cores;
  std::array<int64_t, kMaxAdmissionNumaNodes> memory;
};

// The static policy's allocation of `request` CPUs with affinity `mask`
// (takeByTopologyNUMAPacked): first inside the mask, NUMA nodes with the
// fewest free CPUs first (packing), ties by id; then whatever is left
// elsewhere. Whole cores first; under full-pcpus-only only whole cores.
// Returns false when the node has too few (the kubelet's "not enough cpus
// available" / SMT alignment failure).
bool Allocate(size_t numa_count, int32_t request, uint32_t mask, int32_t threads_per_core,
              bool full_pcpus_only, Free& free, AdmissionResult& out) {
  // Insertion sort (at most 8 entries; std::stable_sort would allocate a
  // buffer on every evaluation): in-mask first, then fewest free CPUs, then id.
  std::array<uint8_t, kMaxAdmissionNumaNodes> order;
  auto before = [&](uint8_t a, uint8_t b) {
    const bool in_a = (mask >> a) & 1, in_b = (mask >> b) & 1;
    if (in_a != in_b) return in_a;
    return free.cpus[a] < free.cpus[b];
  };
  for (size_t i = 0; i < numa_count; ++i) {
    size_t j = i;
    while (j > 0 && before(static_cast<uint8_t>(i), order[j - 1])) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = static_cast<uint8_t>(i);
  }
  int32_t left = request;
  for (size_t k = 0; k < numa_count && left > 0; ++k) {
    const size_t i = order[k];
    const int32_t usable = full_pcpus_only ? free.cores[i] * threads_per_core : free.cpus[i];
    const int32_t take = std::min(usable, left);
    if (take <= 0) continue;
    const int32_t whole = std::min(free.cores[i], take / threads_per_core);
    const int32_t rest = take - whole * threads_per_core;
    // Loose threads come from partly used cores while there are any, then a
    // whole core is broken. Either way the pod shares a core.
    const int32_t loose = free.cpus[i] - free.cores[i] * threads_per_core;
    const int32_t from_broken = rest - std::min(rest, std::max(0, loose));
    const int32_t broken = (from_broken + threads_per_core - 1) / threads_per_core;
    if (rest > 0) out.full_cores = false;
    free.cpus[i] -= take;
    free.cores[i] = std::max(0, free.cores[i] - whole - broken);
    out.cpus[i] += take;
    left -= take;
  }
  out.total_cpus += request - left;
  return left == 0;
}

// Appends "NUMA node 0 has 2 free CPUs (3 short) and 20.0 GiB; NUMA node 1 ...".
void AppendShortfall(std::string* text, const AdmissionProfile& node, const Free& free,
                     int32_t cpus, int64_t memory, bool memory_counts) {
  for (size_t i = 0; i < node.numa.size(); ++i) {
    absl::StrAppend(text, i == 0 ? "" : "; ", "NUMA node ", node.numa[i].id, " has ",
                    std::max(0, free.cpus[i]), " free CPUs");
    if (cpus > free.cpus[i]) absl::StrAppend(text, " (", cpus - free.cpus[i], " short)");
    if (memory_counts) {
      text->append(" and ");
      AppendBytesText(text, std::max<int64_t>(0, free.memory[i]));
      if (memory > free.memory[i]) {
        text->append(" (");
        AppendBytesText(text, memory - free.memory[i]);
        text->append(" short)");
      }
    }
  }
}

// Several L3 domains in one NUMA node: replay the static policy's exact
// allocation (cpu_assignment.h) of 1..kL3PlanCpus CPUs on each NUMA node, so
// that the model judges the L3 domain the pod will really share. Cost: one
// allocation per size and NUMA node, per report of such a node only.
template <typename IsFree>
void PlanL3(const tv1::NodeReport& report, const IsFree& is_free, AdmissionProfile& p) {
  const auto& l3s = report.topology().l3_domains();
  for (const AdmissionNuma& n : p.numa) {
    int domains = 0;
    for (const tv1::L3Domain& l3 : l3s) domains += l3.numa_node() == n.id ? 1 : 0;
    p.split_l3 = p.split_l3 || domains > 1;
  }
  if (!p.split_l3) return;
  absl::StatusOr<CpuTopologyView> topo = CpuTopologyView::FromReport(report.topology());
  if (!topo.ok()) return;  // the lowest-free-core guess stays
  const StaticPolicyOptions options = StaticPolicyOptionsFrom(report.kubelet());
  auto occupancy_of = [&](int32_t id) -> uint64_t {
    for (const tv1::L3Domain& l3 : l3s) {
      if (static_cast<int32_t>(l3.id()) == id) return l3.occupancy_bytes();
    }
    return 0;
  };
  p.uncore_aligned = options.prefer_align_cpus_by_uncore_cache;
  CpuIds free;
  for (const KubeletCpu& c : topo->cpus()) {
    if (is_free(static_cast<uint32_t>(c.cpu))) free.push_back(c.cpu);
  }
  for (AdmissionNuma& n : p.numa) {
    const int32_t numa[] = {static_cast<int32_t>(n.id)};
    // Beyond two L3 domains' worth the pod spans several anyway.
    const int32_t most =
        std::min<int32_t>({static_cast<int32_t>(kL3PlanCpus), n.free_cpus,
                           std::max(1, 2 * topo->CpusPerUncore())});
    for (int32_t k = 1; k <= most; ++k) {
      absl::StatusOr<CpuIds> cpus = AllocateExclusiveCpus(*topo, options, free, k, numa);
      if (!cpus.ok()) continue;  // SMT alignment: Admit refuses it anyway
      std::map<int32_t, int32_t> per_l3;
      for (int32_t cpu : *cpus) ++per_l3[topo->Find(cpu)->uncore];
      // Most of its CPUs; on ties the busier L3 (a pod split over two
      // suffers from the worse).
      int32_t best = -1, best_count = 0;
      uint64_t best_occupancy = 0;
      for (const auto& [l3, count] : per_l3) {
        const uint64_t occupancy = occupancy_of(l3);
        if (count > best_count || (count == best_count && occupancy > best_occupancy)) {
          best = l3;
          best_count = count;
          best_occupancy = occupancy;
        }
      }
      n.l3_for_cpus[k - 1] = static_cast<int16_t>(best);
      n.l3_span_for_cpus[k - 1] = static_cast<uint8_t>(std::min<size_t>(per_l3.size(), 255));
    }
  }
}

}  // namespace

void NoteL3Plan(const AdmissionProfile& node, const AdmissionNuma& home, int32_t cpus,
                NodeDecision& out) {
  if (!node.split_l3 || home.L3SpanFor(cpus) == 0) return;
  out.l3_span = static_cast<int8_t>(std::min(home.L3SpanFor(cpus), 127));
  out.l3_plan = node.uncore_aligned ? 2 : 1;
}

std::vector<TopologyHint> GenerateTopologyHints(std::span<const int64_t> total,
                                                std::span<const int64_t> free, int64_t request) {
  HintList list;
  const size_t n = std::min({total.size(), free.size(), kMaxAdmissionNumaNodes});
  GenerateHints(
      n, request, [&](int i) { return total[i]; }, [&](int i) { return free[i]; }, list);
  return {list.hints, list.hints + list.size};
}

std::vector<TopologyHint> FilterSingleNumaHints(std::span<const TopologyHint> hints) {
  std::vector<TopologyHint> out;
  for (const TopologyHint& h : hints) {
    if (h.preferred && (h.mask == 0 || std::popcount(h.mask) == 1)) out.push_back(h);
  }
  return out;
}

TopologyHint MergeTopologyHints(std::span<const std::span<const TopologyHint>> lists,
                                size_t numa_count, std::span<const uint16_t> closest) {
  if (closest.size() != numa_count * numa_count) closest = {};
  const uint32_t all = numa_count >= 32 ? ~0u : (1u << numa_count) - 1;
  // BestNonPreferredAffinityCount: the largest over lists of their narrowest non-nil mask.
  int best_count = 0;
  for (const auto& list : lists) {
    const TopologyHint* narrowest = nullptr;
    for (const TopologyHint& h : list) {
      if (h.mask == 0) continue;
      if (narrowest == nullptr || Narrower(h.mask, narrowest->mask)) narrowest = &h;
    }
    if (narrowest != nullptr) best_count = std::max(best_count, std::popcount(narrowest->mask));
  }
  TopologyHint best{all, false};
  bool have = false;
  for (const auto& list : lists) {
    if (list.empty()) return {all, false};  // no permutation at all
  }
  // Above 8 NUMA nodes two providers can offer 65,535 hints each: instead of
  // the kubelet's full cross product (which its max-allowable-numa-nodes
  // warning is about), take the narrowest mask all lists prefer, else the
  // non-preferred "all" (an approximation, docs/scoring.md section 3a).
  double product = 1;
  for (const auto& list : lists) product *= static_cast<double>(list.size());
  if (product > double{1 << 22}) {
    const TopologyHint* pick = nullptr;
    for (const TopologyHint& h : lists[0]) {
      if (!h.preferred || h.mask == 0) continue;
      bool everywhere = true;
      for (size_t l = 1; l < lists.size() && everywhere; ++l) {
        everywhere = std::any_of(lists[l].begin(), lists[l].end(), [&](const TopologyHint& o) {
          return o.preferred && (o.mask == h.mask || o.mask == 0);
        });
      }
      if (everywhere && (pick == nullptr || Narrower(h.mask, pick->mask))) pick = &h;
    }
    return pick != nullptr ? *pick : TopologyHint{all, false};
  }
  // Odometer over one hint per list.
  std::array<size_t, 8> index{};
  if (lists.size() > index.size()) return {all, false};
  while (true) {
    uint32_t mask = all;
    bool preferred = true;
    uint32_t first_mask = 0;
    for (size_t l = 0; l < lists.size(); ++l) {
      const TopologyHint& h = lists[l][index[l]];
      if (h.mask != 0) {
        if (first_mask == 0) first_mask = h.mask;
        if (h.mask != first_mask) preferred = false;  // only equal affinities stay preferred
        mask &= h.mask;
      }
      preferred = preferred && h.preferred;
    }
    const TopologyHint candidate{mask, preferred};
    if (mask != 0) {
      best = have ? Compare(&best, candidate, best_count, closest, numa_count) : candidate;
      have = true;
    }
    size_t l = 0;
    while (l < lists.size() && ++index[l] == lists[l].size()) index[l++] = 0;
    if (l == lists.size()) break;
  }
  return have ? best : TopologyHint{all, false};
}

std::string_view TopologyPolicyName(TopologyPolicy p) {
  switch (p) {
    case TopologyPolicy::kBestEffort:
      return "best-effort";
    case TopologyPolicy::kRestricted:
      return "restricted";
    case TopologyPolicy::kSingleNumaNode:
      return "single-numa-node";
    case TopologyPolicy::kNone:
      break;
  }
  return "none";
}

AdmissionProfile BuildAdmissionProfile(const tv1::NodeReport& report,
                                       std::span<const int64_t> free_memory_bytes) {
  AdmissionProfile p;
  const tv1::KubeletPolicies& k = report.kubelet();
  const std::string& policy = k.topology_manager_policy();
  p.policy = policy == "single-numa-node" ? TopologyPolicy::kSingleNumaNode
             : policy == "restricted"     ? TopologyPolicy::kRestricted
             : policy == "best-effort"    ? TopologyPolicy::kBestEffort
                                          : TopologyPolicy::kNone;
  p.scope = k.topology_manager_scope() == "pod" ? TopologyScope::kPod : TopologyScope::kContainer;
  p.static_cpu = k.cpu_manager_policy() == "static";
  p.static_memory = k.memory_manager_policy() == "static";
  if (auto it = k.cpu_manager_policy_options().find("full-pcpus-only");
      it != k.cpu_manager_policy_options().end()) {
    p.full_pcpus_only = it->second == "true";
  }
  const auto& options = k.topology_manager_policy_options();
  if (auto it = options.find("max-allowable-numa-nodes"); it != options.end()) {
    int32_t value = 0;
    if (absl::SimpleAtoi(it->second, &value) && value > 0) p.max_allowable_numa_nodes = value;
  }
  if (auto it = options.find("prefer-closest-numa-nodes"); it != options.end()) {
    p.prefer_closest = it->second == "true";
  }
  const auto& numa_in = report.topology().numa_nodes();
  p.above_max_allowable = p.policy != TopologyPolicy::kNone &&
                          numa_in.size() > p.max_allowable_numa_nodes;
  if (static_cast<size_t>(numa_in.size()) > kMaxAdmissionNumaNodes) {
    p.too_many_numa_nodes = true;
    return p;
  }

  // CPUs the kubelet may hand out: allocatable, else online minus reserved;
  // minus every pod's exclusive CPUs.
  const CpuSet reserved = ParseOrEmpty(k.reserved_cpus());
  const CpuSet allocatable = ParseOrEmpty(k.allocatable_cpus());
  CpuSet held;
  for (const tv1::PodReport& pod : report.pods()) {
    const CpuSet cpus = ParseOrEmpty(pod.exclusive_cpus());
    held.insert(held.end(), cpus.begin(), cpus.end());
  }
  std::sort(held.begin(), held.end());
  auto is_free = [&](uint32_t cpu) {
    if (Contains(held, cpu)) return false;
    return allocatable.empty() ? !Contains(reserved, cpu) : Contains(allocatable, cpu);
  };

  struct In {
    const tv1::NumaNode* numa;
    int64_t free_memory;
    CpuSet cpus;
    uint16_t index;
  };
  std::vector<In> in;
  for (int n = 0; n < numa_in.size(); ++n) {
    in.push_back({&numa_in[n],
                  static_cast<size_t>(n) < free_memory_bytes.size() ? free_memory_bytes[n] : 0,
                  ParseOrEmpty(numa_in[n].cpus()), static_cast<uint16_t>(n)});
  }
  std::sort(in.begin(), in.end(),
            [](const In& a, const In& b) { return a.numa->id() < b.numa->id(); });
  std::map<uint32_t, uint64_t> reserved_memory(k.reserved_memory_bytes_by_numa().begin(),
                                               k.reserved_memory_bytes_by_numa().end());
  for (const In& n : in) {
    AdmissionNuma& out = p.numa.emplace_back();
    out.id = n.numa->id();
    out.report_index = n.index;
    out.cpus = static_cast<int32_t>(n.cpus.size());
    for (uint32_t cpu : n.cpus) out.free_cpus += is_free(cpu) ? 1 : 0;
    const int64_t reserved_here =
        static_cast<int64_t>(std::min<uint64_t>(reserved_memory[out.id], INT64_MAX / 2));
    out.memory_bytes = std::max<int64_t>(
        0, static_cast<int64_t>(std::min<uint64_t>(n.numa->memory_bytes(), INT64_MAX / 2)) -
               reserved_here);
    out.free_memory_bytes = std::max<int64_t>(0, n.free_memory - reserved_here);
  }

  // Distances in profile order, for prefer-closest-numa-nodes (kept only
  // when every NUMA node reports a full row).
  if (p.prefer_closest) {
    const size_t n = p.numa.size();
    p.distances.assign(n * n, 0);
    bool complete = true;
    for (size_t i = 0; i < n && complete; ++i) {
      const tv1::NumaNode& row = *in[i].numa;
      if (static_cast<size_t>(row.distances_size()) != n) {
        complete = false;
        break;
      }
      // Row entries are in NUMA id order, which is the profile's order.
      for (size_t j = 0; j < n; ++j) {
        p.distances[i * n + j] = static_cast<uint16_t>(std::min<uint32_t>(row.distances(j), 65535));
      }
    }
    if (!complete) p.distances.clear();
  }

  // The lowest free CPU of each NUMA node, and of a whole free core.
  std::vector<int64_t> lowest_free(p.numa.size(), -1), lowest_core(p.numa.size(), -1);
  for (size_t i = 0; i < in.size(); ++i) {
    for (uint32_t cpu : in[i].cpus) {
      if (is_free(cpu)) {
        lowest_free[i] = cpu;
        break;
      }
    }
  }

  // Whole free cores per NUMA node; without core information, one thread per core.
  const auto& cores = report.topology().cores();
  if (cores.empty()) {
    for (AdmissionNuma& n : p.numa) n.free_cores = n.free_cpus;
    lowest_core = lowest_free;
  }
  int32_t threads = 1;
  for (const tv1::CpuCore& core : cores) {
    const CpuSet cpus = ParseOrEmpty(core.cpus());
    threads = std::max(threads, static_cast<int32_t>(cpus.size()));
    bool all_free = !cpus.empty();
    for (uint32_t cpu : cpus) all_free = all_free && is_free(cpu);
    if (!all_free) continue;
    for (size_t i = 0; i < p.numa.size(); ++i) {
      if (p.numa[i].id != core.numa_node()) continue;
      ++p.numa[i].free_cores;
      if (lowest_core[i] < 0 || cpus.front() < lowest_core[i]) lowest_core[i] = cpus.front();
    }
  }
  p.threads_per_core = threads;
  for (size_t i = 0; i < p.numa.size(); ++i) {
    const int64_t cpu = lowest_core[i] >= 0 ? lowest_core[i] : lowest_free[i];
    if (cpu < 0) continue;
    p.numa[i].first_free_cpu = static_cast<int32_t>(cpu);
    for (const tv1::L3Domain& l3 : report.topology().l3_domains()) {
      if (Contains(ParseOrEmpty(l3.cpus()), static_cast<uint32_t>(cpu))) {
        p.numa[i].first_free_l3 = static_cast<int32_t>(l3.id());
        break;
      }
    }
  }
  if (p.static_cpu) PlanL3(report, is_free, p);
  return p;
}

AdmissionRequest MakeAdmissionRequest(const IncomingPod& pod) {
  AdmissionRequest r;
  r.guaranteed = pod.qos == QosClass::kGuaranteed;
  auto exclusive = [&](int64_t millicores) -> int32_t {
    if (!r.guaranteed || millicores <= 0 || millicores % 1000 != 0) return 0;
    return static_cast<int32_t>(std::min<int64_t>(millicores / 1000, INT32_MAX));
  };
  if (pod.containers.empty()) {
    r.containers.push_back(
        {exclusive(pod.cpu_request_millicores), std::max<int64_t>(0, pod.memory_request_bytes)});
  } else {
    for (const ContainerRequest& c : pod.containers) {
      r.containers.push_back({exclusive(c.cpu_request_millicores),
                              std::max<int64_t>(0, c.memory_request_bytes), c.init});
    }
  }
  int64_t app_cpus = 0, app_memory = 0, init_cpus = 0, init_memory = 0;
  for (const AdmissionContainer& c : r.containers) {
    if (c.init) {
      init_cpus = std::max<int64_t>(init_cpus, c.exclusive_cpus);
      init_memory = std::max(init_memory, c.memory_bytes);
    } else {
      app_cpus += c.exclusive_cpus;
      app_memory += c.memory_bytes;
    }
  }
  r.pod_exclusive_cpus =
      static_cast<int32_t>(std::min<int64_t>(INT32_MAX, std::max(app_cpus, init_cpus)));
  r.pod_memory_bytes = std::max(app_memory, init_memory);
  r.any_hint = r.guaranteed && (r.pod_exclusive_cpus > 0 || r.pod_memory_bytes > 0);
  return r;
}

bool Admit(const AdmissionProfile& node, const AdmissionRequest& pod, const AdmissionBooked& booked,
           AdmissionResult& out, std::string* reason) {
  out = AdmissionResult();
  if (!pod.any_hint || node.too_many_numa_nodes || node.numa.empty()) return true;
  if (node.above_max_allowable && node.static_cpu && pod.pod_exclusive_cpus > 0) {
    if (reason != nullptr) {
      reason->clear();
      absl::StrAppend(reason, "NUMA admission: ", node.numa.size(),
                      " NUMA nodes exceed topologyManagerPolicyOptions max-allowable-numa-nodes ",
                      node.max_allowable_numa_nodes, ": the kubelet does not start with "
                      "topologyManagerPolicy ", Av(TopologyPolicyName(node.policy)),
                      " (raise the option to emulate)");
    }
    return false;
  }
  const size_t n = node.numa.size();
  const uint32_t all = (1u << n) - 1;
  Free free;
  for (size_t i = 0; i < n; ++i) {
    const int32_t booked_cpus = i < booked.cpus.size() ? booked.cpus[i] : 0;
    free.cpus[i] = std::max(0, node.numa[i].free_cpus - booked_cpus);
    // Booked pods take whole cores first.
    const int32_t booked_cores = (booked_cpus + node.threads_per_core - 1) / node.threads_per_core;
    free.cores[i] = std::max(
        0, std::min(node.numa[i].free_cores - booked_cores, free.cpus[i] / node.threads_per_core));
    free.memory[i] = node.numa[i].free_memory_bytes -
                     (i < booked.memory_bytes.size() ? booked.memory_bytes[i] : 0);
  }
  const bool hints = node.policy != TopologyPolicy::kNone;  // policy none asks no provider
  const bool single = node.policy == TopologyPolicy::kSingleNumaNode;
  const bool strict = node.policy == TopologyPolicy::kRestricted || single;
  std::array<int64_t, kMaxAdmissionNumaNodes> memory_by_numa{};
  HintList cpu_hints, memory_hints;

  // One admission unit: the whole pod (scope pod) or one container.
  auto admit_one = [&](int32_t cpus, int64_t memory, bool reuse) -> bool {
    const bool cpu_opinion = node.static_cpu && cpus > 0;
    const bool memory_opinion = node.static_memory && pod.guaranteed && memory > 0;
    if (!cpu_opinion && !memory_opinion) return true;
    TopologyHint best{0, true};
    bool merged = false;
    if (hints && cpu_opinion && !memory_opinion) {
      // One provider (the common case): the merge picks its narrowest preferred
      // hint, the lowest mask among equals, which is the first mask in
      // increasing order with the preferred width and enough free CPUs. Falls
      // through to the general merge when there is none.
      const uint32_t masks = (1u << n) - 1;
      int min_affinity = static_cast<int>(n);
      for (uint32_t mask = 1; mask <= masks; ++mask) {
        int32_t total = 0;
        for (uint32_t bits = mask; bits != 0; bits &= bits - 1) {
          total += node.numa[std::countr_zero(bits)].cpus;
        }
        if (total >= cpus) min_affinity = std::min(min_affinity, std::popcount(mask));
      }
      // prefer-closest-numa-nodes: of the fitting masks that wide, the
      // closest (lowest average distance), the lower one on ties.
      const bool closest = node.distances.size() == n * n && min_affinity > 1;
      double best_distance = 0;
      if (!single || min_affinity == 1) {
        for (uint32_t mask = 1; mask <= masks && (!merged || closest); ++mask) {
          if (std::popcount(mask) != min_affinity) continue;
          int32_t available = 0;
          for (uint32_t bits = mask; bits != 0; bits &= bits - 1) {
            available += free.cpus[std::countr_zero(bits)];
          }
          if (available < cpus) continue;
          const double distance = closest ? AverageDistance(mask, node.distances, n) : 0;
          if (!merged || distance < best_distance) {
            best = {mask, true};
            best_distance = distance;
            merged = true;
          }
        }
      }
      if (merged) out.numa_mask |= best.mask;
    }
    if (hints && !merged) {
      std::array<std::span<const TopologyHint>, 2> lists;
      size_t count = 0;
      auto add = [&](HintList& list) {
        if (list.size == 0) list.Set({0, false});  // no possible affinity
        if (single) FilterSingleNuma(list);
        lists[count++] = list.view();
      };
      if (cpu_opinion) {
        GenerateHints(
            n, cpus, [&](int i) { return node.numa[i].cpus; }, [&](int i) { return free.cpus[i]; },
            cpu_hints);
        add(cpu_hints);
      }
      if (memory_opinion) {
        GenerateHints(
            n, memory, [&](int i) { return node.numa[i].memory_bytes; },
            [&](int i) { return free.memory[i]; }, memory_hints);
        add(memory_hints);
      }
      best = MergeTopologyHints(std::span<const std::span<const TopologyHint>>(lists.data(), count),
                                n, node.distances);
      if (single && best.mask == all) best.mask = 0;  // single-numa-node: the default is "any"
      out.preferred = out.preferred && best.preferred;
      if (strict && !best.preferred) {
        if (reason != nullptr) {
          reason->clear();
          absl::StrAppend(reason, "NUMA admission (topologyManagerPolicy ",
                          Av(TopologyPolicyName(node.policy)), ", scope ",
                          node.scope == TopologyScope::kPod ? "pod" : "container",
                          "): ", single ? "no single NUMA node" : "no preferred set of NUMA nodes",
                          " can hold ");
          if (cpu_opinion) absl::StrAppend(reason, cpus, " exclusive CPUs");
          if (cpu_opinion && memory_opinion) reason->append(" and ");
          if (memory_opinion) {
            AppendBytesText(reason, memory);
            reason->append(" of memory");
          }
          reason->append(" (TopologyAffinityError): ");
          AppendShortfall(reason, node, free, cpu_opinion ? cpus : 0, memory, memory_opinion);
        }
        return false;
      }
      out.numa_mask |= best.mask;
    }
    if (cpu_opinion) {
      out.pinned = true;
      if (node.full_pcpus_only && cpus % node.threads_per_core != 0) {
        if (reason != nullptr) {
          reason->clear();
          absl::StrAppend(reason, "SMT alignment (cpuManagerPolicyOptions full-pcpus-only): ", cpus,
                          " CPUs is not a multiple of ", node.threads_per_core,
                          " threads per core (SMTAlignmentError)");
        }
        return false;
      }
      // Enough CPUs (whole cores under full-pcpus-only) anywhere on the node?
      // Allocate takes from outside the hint when it must, so this is the
      // kubelet's "not enough cpus available".
      int32_t usable = 0;
      for (size_t i = 0; i < n; ++i) {
        usable += node.full_pcpus_only ? free.cores[i] * node.threads_per_core : free.cpus[i];
      }
      if (usable < cpus) {
        if (reason != nullptr) {
          reason->clear();
          absl::StrAppend(reason, "CPU manager: ", cpus, " exclusive CPUs requested, ", usable,
                          node.full_pcpus_only ? " free on whole cores" : " free", " (",
                          cpus - usable, " short): ");
          AppendShortfall(reason, node, free, cpus, 0, false);
        }
        return false;
      }
      // Init containers' CPUs are reused by the app containers that follow:
      // they allocate on copies.
      Free trial;
      AdmissionResult before;
      if (reuse) {
        trial = free;
        before = out;
      }
      Allocate(n, cpus, best.mask == 0 ? all : best.mask, node.threads_per_core,
               node.full_pcpus_only, reuse ? trial : free, out);
      if (reuse) {
        out.cpus = before.cpus;
        out.total_cpus = before.total_cpus;
      }
    }
    if (memory_opinion && !reuse) {
      // The memory manager takes from the hinted NUMA nodes, lowest first.
      int64_t left = memory;
      const uint32_t mask = best.mask == 0 ? all : best.mask;
      for (size_t i = 0; i < n && left > 0; ++i) {
        if (((mask >> i) & 1) == 0) continue;
        const int64_t take = std::min(left, std::max<int64_t>(0, free.memory[i]));
        free.memory[i] -= take;
        memory_by_numa[i] += take;
        left -= take;
      }
    }
    return true;
  };

  if (node.scope == TopologyScope::kPod) {
    if (!admit_one(pod.pod_exclusive_cpus, pod.pod_memory_bytes, false)) return false;
  } else {
    // Init containers first, one at a time (their CPUs return for reuse), then the app containers.
    for (const AdmissionContainer& c : pod.containers) {
      if (c.init && !admit_one(c.exclusive_cpus, c.memory_bytes, true)) return false;
    }
    for (const AdmissionContainer& c : pod.containers) {
      if (!c.init && !admit_one(c.exclusive_cpus, c.memory_bytes, false)) return false;
    }
  }
  // Home: the NUMA node holding most of the pod's CPUs, else of its memory.
  int32_t best_amount = 0;
  for (size_t i = 0; i < n; ++i) {
    if (out.cpus[i] > best_amount) {
      best_amount = out.cpus[i];
      out.home = static_cast<int32_t>(i);
    }
  }
  if (out.home < 0) {
    int64_t most = 0;
    for (size_t i = 0; i < n; ++i) {
      if (memory_by_numa[i] > most) {
        most = memory_by_numa[i];
        out.home = static_cast<int32_t>(i);
      }
    }
  }
  if (out.numa_mask == 0) {
    for (size_t i = 0; i < n; ++i) {
      if (out.cpus[i] > 0 || memory_by_numa[i] > 0) out.numa_mask |= 1u << i;
    }
  }
  return true;
}

}  // namespace neighborly::extender
