// The extender's /metrics page for a fleet of N nodes (2 L3 domains, 2 NUMA
// nodes and 3 pod classes each: 11 series per node), rendered through
// PrometheusWriter, with metrics.perNodeSeries on (arg 1) and off (arg 0).
//
//   build/default/bench/metrics_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender/src/api/operator_api.h"

namespace neighborly::extender {
namespace {

class FleetSource final : public OperatorSource {
 public:
  explicit FleetSource(int nodes) {
    for (int i = 0; i < nodes; ++i) {
      NodeSummary n;
      n.name = absl::StrCat("node-", i);
      n.telemetry_age = absl::Milliseconds(300 + i % 700);
      n.confidence = i % 50 == 0 ? 0.5 : 1;
      n.contention_score = (i % 100) / 100.0;
      n.l3_domains = {{0, 0, 32 << 20, 20 << 20, 0.6}, {1, 1, 32 << 20, 10 << 20, 0.3}};
      NumaNodeSummary a, b;
      a.id = 0;
      a.membw_utilisation = 0.4;
      b.id = 1;
      b.membw_utilisation = 0.7;
      n.numa_nodes = {a, b};
      n.pods_by_class = {{"batch", 3}, {"latency-critical", 2}, {"standard", 12}};
      n.bookings = i % 3;
      nodes_.push_back(std::move(n));
    }
  }
  std::vector<NodeSummary> Nodes() const override { return nodes_; }
  std::optional<NodeSummary> Node(std::string_view) const override { return std::nullopt; }
  std::vector<DecisionRecord> Decisions(std::string_view, size_t) const override { return {}; }
  IngestStats Ingest() const override { return {}; }

 private:
  std::vector<NodeSummary> nodes_;
};

void BM_RenderMetrics(benchmark::State& state) {
  const FleetSource source(static_cast<int>(state.range(0)));
  const ExtenderMetrics metrics;
  const MetricsPage page{.per_node_series = state.range(1) != 0, .append = {}};
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = RenderMetrics(source, metrics, page);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["page_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetrics)
    ->ArgsProduct({{100, 5000}, {1, 0}})
    ->ArgNames({"nodes", "per_node"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace neighborly::extender

BENCHMARK_MAIN();
