// What the antagonist attribution and the rebalancing advice cost at fleet
// scale (issue 26): an InterferenceTracker holding 30 windows of 5,000 nodes
// (50 pods each, one in ten latency-critical with IPC, every 50th node with a
// bandwidth-bursting batch job beside a latency-critical replica whose IPC
// falls with it), measured
//   - per report observed (BM_ObserveReport: what the extender's observer
//     thread spends on each node's window),
//   - per GET /v1/interference (BM_InterferenceView: the view it answers from),
//   - per GET /v1/rebalance (BM_ProposeMoves: the view plus scoring every
//     other node for each proposal with ExtenderCore::Score).
//
//   build/default/bench/interference_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/http_bench_support.h"
#include "bench/soak_fleet.h"
#include "extender/src/api/rebalance.h"
#include "extender/src/model/interference_attribution.h"

namespace neighborly::bench {
namespace {

constexpr int kNodes = 5'000;
constexpr int kPodsPerNode = 50;
constexpr int kWarmWindows = 30;  // InterferenceOptions::history_windows

bool Incident(int node) { return node % 50 == 0; }

// Window w of node n: the latency-critical pods' IPC (a small deterministic
// jitter; on incident nodes pod 0 drops from 2.1 to 1.3 while pod 5, batch,
// bursts from 4 to 22 GB/s) and the sequence number.
void SetWindow(telemetry::v1::NodeReport& r, int node, uint64_t w) {
  r.set_sequence(w + 1);
  const bool burst = Incident(node) && w % 3 != 0;
  for (int p = 0; p < r.pods_size(); ++p) {
    telemetry::v1::PodReport* pod = r.mutable_pods(p);
    if (p % 10 == 0) {
      const double jitter = 0.02 * static_cast<double>((node * 13 + p * 7 + w * 5) % 5) - 0.04;
      pod->set_ipc(p == 0 && burst ? 1.3 + jitter : 2.1 + jitter);
    }
    if (p == 5 && Incident(node)) {
      pod->set_membw_total_bytes_per_second(burst ? 22'000'000'000 : 4'000'000'000);
    }
  }
}

struct Fleet {
  Fleet() {
    for (int n = 0; n < kNodes; ++n) {
      reports.push_back(SoakReport(n, kPodsPerNode));
      if (Incident(n)) reports.back().mutable_pods(5)->mutable_labels()->insert({"workload-type", "batch"});
    }
    for (uint64_t w = 0; w < kWarmWindows; ++w) {
      for (int n = 0; n < kNodes; ++n) {
        SetWindow(reports[n], n, w);
        tracker.Observe(reports[n]);
      }
    }
    window = kWarmWindows;
    core = std::make_unique<extender::ExtenderCore>(extender::ModelConfig{}, clock);
    clock.Set(absl::FromUnixSeconds(1'700'000'001));
    for (const telemetry::v1::NodeReport& r : reports) {
      if (absl::Status s = core->Ingest(r); !s.ok()) {
        std::fprintf(stderr, "report rejected: %s\n", std::string(s.message()).c_str());
        std::abort();
      }
    }
  }
  std::vector<telemetry::v1::NodeReport> reports;
  extender::InterferenceTracker tracker;
  uint64_t window = 0;
  FakeClock clock;
  std::unique_ptr<extender::ExtenderCore> core;
};

Fleet& TheFleet() {
  static Fleet* fleet = new Fleet();
  return *fleet;
}

void BM_ObserveReport(benchmark::State& state) {
  Fleet& f = TheFleet();
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    SetWindow(f.reports[n], n, f.window);
    state.ResumeTiming();
    benchmark::DoNotOptimize(f.tracker.Observe(f.reports[n]));
    if (++n == kNodes) {
      n = 0;
      ++f.window;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(absl::StrFormat("%d nodes x %d pods, %d windows kept", kNodes, kPodsPerNode,
                                 kWarmWindows));
}
BENCHMARK(BM_ObserveReport)->Unit(benchmark::kMicrosecond);

void BM_InterferenceView(benchmark::State& state) {
  Fleet& f = TheFleet();
  size_t victims = 0;
  for (auto _ : state) {
    extender::InterferenceView view = f.tracker.View();
    victims = view.victims.size();
    benchmark::DoNotOptimize(view);
  }
  state.SetLabel(absl::StrFormat("%zu victims", victims));
}
BENCHMARK(BM_InterferenceView)->Unit(benchmark::kMillisecond);

void BM_ProposeMoves(benchmark::State& state) {
  Fleet& f = TheFleet();
  size_t moves = 0;
  for (auto _ : state) {
    std::vector<extender::MoveProposal> m = extender::ProposeMoves(*f.core, f.tracker.View());
    moves = m.size();
    benchmark::DoNotOptimize(m);
  }
  state.SetLabel(absl::StrFormat("%zu proposals", moves));
}
BENCHMARK(BM_ProposeMoves)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace neighborly::bench

BENCHMARK_MAIN();
