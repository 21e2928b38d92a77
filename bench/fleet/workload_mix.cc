#include "bench/fleet/workload_mix.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace neighborly::fleet {
namespace {

constexpr double kMB = 1e6;
constexpr int64_t kGiB = int64_t{1} << 30;

// Node shapes, per socket (docs/placement-benchmark.md, "Fleets").
struct ShapeTemplate {
  int cores;
  int threads;
  double l3_mb;
  int memory_gib;
  double peak_gb_per_second;
  double weight;
};
constexpr ShapeTemplate kShapes[] = {
    {8, 1, 25, 32, 40, 0.25},  {10, 1, 30, 48, 50, 0.25}, {8, 2, 25, 32, 45, 0.2},
    {12, 1, 32, 64, 60, 0.15}, {16, 1, 40, 64, 70, 0.1},  {16, 2, 45, 128, 80, 0.05},
};

const char* const kNamespaces[] = {"shop", "media", "search", "platform"};
const char* const kLatencyCriticalNames[] = {
    "checkout", "cart",   "search-api", "recommend", "profile",   "feed", "ads-serve", "session",
    "pricing",  "render", "auth",       "catalog",   "inventory", "geo",  "ranking",   "quote"};
const char* const kStandardNames[] = {"web",         "notify",   "cron-api",   "admin",
                                      "webhook",     "mailer",   "reports-ui", "uploader",
                                      "thumbnailer", "exporter", "billing-ui", "status"};
const char* const kBatchNames[] = {"event-scan",  "etl-orders", "logs-compact", "index-build",
                                   "clickstream", "backfill",   "ml-features",  "dedupe"};

// Rounds to the 100m a manifest would carry.
int64_t Millicores(double cpus) { return static_cast<int64_t>(std::lround(cpus * 10)) * 100; }

Workload LatencyCritical(Rng& rng) {
  Workload w;
  w.kind = WorkloadKind::kLatencyCritical;
  w.annotated_latency_critical = rng.Chance(0.6);
  w.cache_sensitive = rng.Chance(0.6);
  w.guaranteed = rng.Chance(0.5);
  if (w.guaranteed) {
    w.cpu_request_millicores = 1000 * rng.Int(2, 5);
    w.cpu_limit_millicores = w.cpu_request_millicores;
    w.cpu_usage_fraction = rng.Uniform(0.6, 0.9);
  } else {
    w.cpu_request_millicores = Millicores(rng.Uniform(1, 3));
    w.cpu_limit_millicores = 2 * w.cpu_request_millicores;
    w.cpu_usage_fraction = rng.Uniform(0.6, 1.0);
  }
  w.memory_request_bytes = kGiB * rng.Int(2, 8);
  if (w.guaranteed) w.memory_limit_bytes = w.memory_request_bytes;
  MemoryBehaviour& b = w.behaviour;
  b.cpi_core = rng.Uniform(0.55, 0.8);
  if (w.cache_sensitive) {
    b.working_set_bytes = rng.Uniform(10, 28) * kMB;
    b.footprint_bytes = b.working_set_bytes * 1.5;
    b.mpki_cold = rng.Uniform(6, 14);
    b.mpki_floor = rng.Uniform(0.3, 0.8);
    b.curve_exponent = rng.Uniform(1.5, 2.5);
    b.mlp = rng.Uniform(2, 3);
  } else {
    b.working_set_bytes = rng.Uniform(2, 6) * kMB;
    b.footprint_bytes = b.working_set_bytes * 1.5;
    b.mpki_cold = rng.Uniform(3, 6);
    b.mpki_floor = rng.Uniform(0.2, 0.5);
    b.curve_exponent = 2;
    b.mlp = rng.Uniform(2, 3);
  }
  return w;
}

Workload Batch(Rng& rng) {
  Workload w;
  w.kind = WorkloadKind::kBatch;
  w.is_job = true;
  w.labelled_batch = rng.Chance(0.5);
  w.streaming = rng.Chance(0.75);
  w.cpu_request_millicores = 1000 * rng.Int(3, 8);
  // Many batch Jobs set limits = requests (Guaranteed): on a static node the
  // kubelet pins them too.
  w.guaranteed = rng.Chance(0.4);
  w.cpu_limit_millicores = w.cpu_request_millicores * (w.guaranteed ? 1 : 2);
  w.cpu_usage_fraction = rng.Uniform(0.9, 1.0);
  w.memory_request_bytes = kGiB * rng.Int(4, 16);
  if (w.guaranteed) w.memory_limit_bytes = w.memory_request_bytes;
  w.duration_s = rng.Uniform(120, 420);
  MemoryBehaviour& b = w.behaviour;
  if (w.streaming) {
    b.cpi_core = rng.Uniform(0.45, 0.6);
    b.mpki_cold = rng.Uniform(15, 30);
    b.mpki_floor = b.mpki_cold * 0.85;
    b.working_set_bytes = 200 * kMB;
    b.footprint_bytes = rng.Uniform(300, 800) * kMB;
    b.curve_exponent = 0.5;
    b.mlp = rng.Uniform(5, 8);
  } else {
    b.cpi_core = rng.Uniform(0.5, 0.8);
    b.mpki_cold = rng.Uniform(2, 5);
    b.mpki_floor = rng.Uniform(0.5, 1.0);
    b.working_set_bytes = rng.Uniform(2, 6) * kMB;
    b.footprint_bytes = b.working_set_bytes * 1.5;
    b.curve_exponent = 2;
    b.mlp = 3;
  }
  return w;
}

Workload Standard(Rng& rng) {
  Workload w;
  w.kind = WorkloadKind::kStandard;
  w.cpu_request_millicores = Millicores(rng.Uniform(1, 2.5));
  w.cpu_limit_millicores = 2 * w.cpu_request_millicores;
  w.cpu_usage_fraction = rng.Uniform(0.4, 0.8);
  w.memory_request_bytes = kGiB * rng.Int(1, 4);
  MemoryBehaviour& b = w.behaviour;
  b.cpi_core = rng.Uniform(0.6, 0.9);
  b.working_set_bytes = rng.Uniform(2, 8) * kMB;
  b.footprint_bytes = b.working_set_bytes * 1.5;
  b.mpki_cold = rng.Uniform(3, 10);
  b.mpki_floor = rng.Uniform(0.5, 1.0);
  b.curve_exponent = 1.5;
  b.mlp = 3;
  return w;
}

}  // namespace

std::string RandomSuffix(Rng& rng, int digits) {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < digits; ++i) s += kAlphabet[rng.Next() % (sizeof(kAlphabet) - 1)];
  return s;
}

std::string RandomUid(Rng& rng) {
  const uint64_t a = rng.Next(), b = rng.Next();
  return absl::StrFormat("%08x-%04x-4%03x-a%03x-%012x", static_cast<uint32_t>(a >> 32),
                         static_cast<uint32_t>(a >> 16) & 0xffff, static_cast<uint32_t>(a) & 0xfff,
                         static_cast<uint32_t>(b >> 48) & 0xfff, b & 0xffffffffffffULL);
}

const char* KindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kLatencyCritical:
      return "latency-critical";
    case WorkloadKind::kBatch:
      return "batch";
    case WorkloadKind::kStandard:
      return "standard";
  }
  return "?";
}

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Rng::Uniform(double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(Next() >> 11) * 0x1.0p-53;
}

int Rng::Int(int lo, int hi) {
  return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1));
}

double Rng::Exponential(double mean) { return -mean * std::log(1 - Uniform(0, 1)); }

FleetSpec GenerateFleet(uint64_t seed, const MixOptions& options) {
  Rng rng(seed);
  FleetSpec fleet;
  fleet.seed = seed;
  const int arrivals =
      options.arrivals > 0 ? options.arrivals : rng.Int(options.min_arrivals, options.max_arrivals);

  // Workloads until their pods make the arrivals: latency-critical and batch
  // each about a third of the pods, standard the rest.
  int pods = 0;
  std::vector<int> replicas;
  int lc = 0, standard = 0, batch = 0;
  while (pods < arrivals) {
    const double pick = rng.Uniform(0, 1);
    Workload w;
    int n = 0;
    if (pick < 0.3) {
      w = LatencyCritical(rng);
      w.name = kLatencyCriticalNames[lc % std::size(kLatencyCriticalNames)];
      if (lc >= static_cast<int>(std::size(kLatencyCriticalNames)))
        absl::StrAppend(&w.name, "-", lc);
      ++lc;
      n = rng.Int(3, 8);
    } else if (pick < 0.65) {
      w = Batch(rng);
      w.name = absl::StrCat(kBatchNames[batch % std::size(kBatchNames)], "-", batch);
      ++batch;
      n = rng.Int(1, 4);
    } else {
      w = Standard(rng);
      w.name = kStandardNames[standard % std::size(kStandardNames)];
      if (standard >= static_cast<int>(std::size(kStandardNames))) {
        absl::StrAppend(&w.name, "-", standard);
      }
      ++standard;
      n = rng.Int(2, 6);
    }
    w.namespace_name = w.kind == WorkloadKind::kBatch
                           ? "analytics"
                           : kNamespaces[rng.Next() % std::size(kNamespaces)];
    w.template_hash = w.is_job ? "" : RandomSuffix(rng, 10);
    w.owner_uid = RandomUid(rng);
    n = std::min(n, arrivals - pods);
    pods += n;
    fleet.workloads.push_back(std::move(w));
    replicas.push_back(n);
  }

  // Each workload is created at a random moment of the run; its controller
  // creates all its pods at once (they reach the scheduler 0.2 s apart).
  const double span_s = options.mean_arrival_gap_s * arrivals;
  // The scale-ups' moments come from a generator of their own, so that the
  // fleets without them stay as they were.
  Rng scale_rng(seed ^ 0x5CA1E0F5CA1E0F5ULL);
  for (size_t w = 0; w < fleet.workloads.size(); ++w) {
    const double created = rng.Uniform(0, span_s);
    const bool scaled = options.scale_ups && !fleet.workloads[w].is_job && replicas[w] >= 3;
    const int first = scaled ? std::max(1, replicas[w] / 3) : replicas[w];
    const double scaled_at = scaled ? created + scale_rng.Uniform(30, 180) : 0;
    for (int r = 0; r < replicas[w]; ++r) {
      const double at = r < first ? created + 0.2 * r : scaled_at + 0.2 * (r - first);
      fleet.arrivals.push_back({at, static_cast<int>(w), r});
    }
  }
  std::sort(fleet.arrivals.begin(), fleet.arrivals.end(), [](const Arrival& a, const Arrival& b) {
    return a.at_s != b.at_s ? a.at_s < b.at_s : a.workload < b.workload;
  });
  fleet.last_arrival_s = fleet.arrivals.empty() ? 0 : fleet.arrivals.back().at_s;

  // Nodes: enough that the CPU requested at the end of the run (Deployments,
  // and Jobs still running then) is the target share of the allocatable.
  const double end_s = fleet.last_arrival_s + 60;
  double requested_at_end = 0;
  for (const Arrival& a : fleet.arrivals) {
    const Workload& w = fleet.workloads[a.workload];
    if (!w.is_job || a.at_s + 6 + w.duration_s > end_s) {
      requested_at_end += static_cast<double>(w.cpu_request_millicores);
    }
  }
  const double target =
      rng.Uniform(options.target_cpu_requested_min, options.target_cpu_requested_max);
  double allocatable = 0;
  double total_weight = 0;
  for (const ShapeTemplate& s : kShapes) total_weight += s.weight;
  while (static_cast<int>(fleet.nodes.size()) < options.max_nodes &&
         (static_cast<int>(fleet.nodes.size()) < options.min_nodes ||
          allocatable * target < requested_at_end)) {
    double pick = rng.Uniform(0, total_weight);
    const ShapeTemplate* shape = &kShapes[0];
    for (const ShapeTemplate& s : kShapes) {
      shape = &s;
      if ((pick -= s.weight) < 0) break;
    }
    NodeSpec n;
    n.name = absl::StrFormat("node-%02d", fleet.nodes.size() + 1);
    n.zone = static_cast<int>(fleet.nodes.size() % 3);
    n.cores_per_socket = shape->cores;
    n.threads_per_core = shape->threads;
    n.memory_bytes_per_socket = kGiB * shape->memory_gib;
    n.shape.sockets = 2;
    n.shape.l3_bytes_per_socket = shape->l3_mb * kMB;
    n.shape.peak_membw_bytes_per_second_per_socket = shape->peak_gb_per_second * 1e9;
    n.static_cpu_manager = rng.Chance(options.static_node_share);
    allocatable += static_cast<double>(n.allocatable_millicores());
    fleet.nodes.push_back(std::move(n));
  }
  return fleet;
}

}  // namespace neighborly::fleet
