// Server-side cost of one scheduler request: decode (simdjson On-Demand, after
// full validation) + decide (the real ExtenderCore over synthetic telemetry) +
// encode. Targets (docs/performance.md): 500 names <= 50 us median, 5,000 names
// <= 500 us; full-Node mode with 500 realistic Nodes within 3x of a simdjson
// DOM parse of the same body, measured in the same run (printed at the end).
//
//   build/default/bench/http_codec_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true   (one line)
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/http_bench_support.h"
#include "extender/src/http/extender_handler.h"

namespace neighborly::bench {
namespace {

using extender::ExtenderHandler;
using extender::ScratchPool;
using extender::Verb;

constexpr int kClusterNodes = 15'000;
constexpr int kFullNodes = 500;
constexpr int kImagesPerNode = 60;  // ~20 KB per Node

SyntheticCluster& Cluster() {
  static SyntheticCluster* cluster = new SyntheticCluster(kClusterNodes);
  return *cluster;
}

const std::string& FullBody() {
  static const std::string* body = new std::string(FullNodesBody(kFullNodes, kImagesPerNode));
  return *body;
}

// The same cluster, with helper threads for large requests (http.evaluationThreads).
SyntheticCluster& ClusterWithThreads(size_t threads) {
  static std::map<size_t, SyntheticCluster*>* clusters = new std::map<size_t, SyntheticCluster*>;
  SyntheticCluster*& cluster = (*clusters)[threads];
  if (cluster == nullptr) cluster = new SyntheticCluster(kClusterNodes, threads);
  return *cluster;
}

void RunHandler(benchmark::State& state, Verb verb, const std::string& body,
                SyntheticCluster& cluster = Cluster()) {
  ExtenderHandler handler(*cluster.core, nullptr);
  ScratchPool::Lease scratch = handler.scratch().Acquire();
  scratch->body.Assign(body);
  scratch->body.Seal();
  // Warm up for half a second first, as a server that has been answering
  // requests is: right after the 15,000-node cluster is built, the first few
  // hundred milliseconds of requests run up to 1.5x slower (buffers and the
  // log's records not yet allocated and touched), which Google Benchmark
  // 1.7 (Debian 12) has no warm-up option for.
  for (const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
       std::chrono::steady_clock::now() < warm_until;) {
    handler.Handle(verb, *scratch);
  }
  for (auto _ : state) {
    const int status = handler.Handle(verb, *scratch);
    if (status != 200) state.SkipWithError(scratch->reply.c_str());
    benchmark::DoNotOptimize(scratch->reply.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
  // 1: the pod (a trainer replica, ml/Deployment/trainer) was predicted from
  // the workload profile its siblings on every node built.
  state.counters["from_profile"] = cluster.core->workload_predictions_used() > 0 ? 1.0 : 0.0;
  state.counters["reply_bytes"] = static_cast<double>(scratch->reply.size());
}

// The same cluster with workload profiles off: the request path as it was
// before prediction (keys, lookups and the prediction's text not done).
SyntheticCluster& ClusterWithoutProfiles() {
  static SyntheticCluster* cluster = [] {
    extender::ModelConfig config;
    config.workloads.enabled = false;
    return new SyntheticCluster(kClusterNodes, 1, config);
  }();
  return *cluster;
}

void BM_FilterNamesProfilesOff(benchmark::State& state) {
  RunHandler(state, Verb::kFilter, NamesBody(static_cast<int>(state.range(0))),
             ClusterWithoutProfiles());
}
BENCHMARK(BM_FilterNamesProfilesOff)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_FilterNames(benchmark::State& state) {
  RunHandler(state, Verb::kFilter, NamesBody(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_FilterNames)->Arg(500)->Arg(5000)->Arg(15000)->Unit(benchmark::kMicrosecond);

void BM_PrioritizeNames(benchmark::State& state) {
  RunHandler(state, Verb::kPrioritize, NamesBody(static_cast<int>(state.range(0))));
}
BENCHMARK(BM_PrioritizeNames)->Arg(500)->Arg(5000)->Arg(15000)->Unit(benchmark::kMicrosecond);

// Issue 23: a 50,000-node fleet (the most one replica holds by default,
// state.maxNodes) and 5,000 candidates sampled across it, every tenth node,
// as kube-scheduler's percentageOfNodesToScore sends at that size; beside
// BM_FilterNames/5000 of the 15,000-node cluster, run in the same process.
SyntheticCluster& LargeCluster() {
  static SyntheticCluster* cluster = new SyntheticCluster(50'000);
  return *cluster;
}

std::string SampledNamesBody(int n, int fleet) {
  std::string body = absl::StrCat(R"({"Pod":)", PodJson(), R"(,"Nodes":null,"NodeNames":[)");
  const int stride = std::max(1, fleet / n);
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&body, i ? "," : "", "\"", NodeName(i * stride % fleet), "\"");
  }
  body += "]}";
  return body;
}

void BM_FilterSampledFrom50k(benchmark::State& state) {
  RunHandler(state, Verb::kFilter, SampledNamesBody(static_cast<int>(state.range(0)), 50'000),
             LargeCluster());
}
BENCHMARK(BM_FilterSampledFrom50k)->Arg(5000)->Unit(benchmark::kMicrosecond);

void BM_PrioritizeSampledFrom50k(benchmark::State& state) {
  RunHandler(state, Verb::kPrioritize, SampledNamesBody(static_cast<int>(state.range(0)), 50'000),
             LargeCluster());
}
BENCHMARK(BM_PrioritizeSampledFrom50k)->Arg(5000)->Unit(benchmark::kMicrosecond);

// The same requests with the candidates shared over `threads` threads (the
// request's own and helpers): wall time is the latency kube-scheduler sees
// ("Time"), CPU is every thread's ("CPU", the process's).
void BM_FilterNamesThreads(benchmark::State& state) {
  RunHandler(state, Verb::kFilter, NamesBody(static_cast<int>(state.range(0))),
             ClusterWithThreads(static_cast<size_t>(state.range(1))));
}
BENCHMARK(BM_FilterNamesThreads)
    ->ArgsProduct({{500, 5000, 15000}, {2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMicrosecond);

void BM_PrioritizeNamesThreads(benchmark::State& state) {
  RunHandler(state, Verb::kPrioritize, NamesBody(static_cast<int>(state.range(0))),
             ClusterWithThreads(static_cast<size_t>(state.range(1))));
}
BENCHMARK(BM_PrioritizeNamesThreads)
    ->ArgsProduct({{500, 5000, 15000}, {2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kMicrosecond);

// The transport's share: decode + encode around a Decider that does nothing
// (every node passes with score 5).
class NullDecider final : public extender::Decider {
 public:
  void Filter(const extender::IncomingPod&, std::span<const std::string_view> nodes,
              std::vector<extender::NodeDecision>& out) override {
    out.assign(nodes.size(), extender::NodeDecision());
  }
  void Prioritize(const extender::IncomingPod&, std::span<const std::string_view> nodes,
                  std::vector<extender::NodeDecision>& out) override {
    out.assign(nodes.size(), extender::NodeDecision());
  }
};

void BM_FilterNamesNullDecider(benchmark::State& state) {
  NullDecider decider;
  ExtenderHandler handler(decider, nullptr);
  ScratchPool::Lease scratch = handler.scratch().Acquire();
  scratch->body.Assign(NamesBody(static_cast<int>(state.range(0))));
  scratch->body.Seal();
  for (auto _ : state) {
    if (handler.Handle(Verb::kFilter, *scratch) != 200) state.SkipWithError("failed");
    benchmark::DoNotOptimize(scratch->reply.data());
  }
}
BENCHMARK(BM_FilterNamesNullDecider)
    ->Arg(500)
    ->Arg(5000)
    ->Arg(15000)
    ->Unit(benchmark::kMicrosecond);

// Decode alone (no decision), to separate codec and model costs; with the
// kernel this CPU gets (AVX2 where it has it) and with the portable one that
// CPUs without AVX2 run.
void DecodeNames(benchmark::State& state, extender::DecodeKernel kernel) {
  const std::string body = NamesBody(static_cast<int>(state.range(0)));
  extender::ExtenderCodec codec(kernel);
  state.SetLabel(std::string(extender::DecodeKernelName(codec.kernel())));
  extender::RequestBody request;
  request.Assign(body);
  request.Seal();
  extender::ExtenderArgs args;
  for (auto _ : state) {
    if (!codec.Decode(request, args).ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(args.node_names.data());
  }
}
void BM_DecodeNames(benchmark::State& state) { DecodeNames(state, extender::DecodeKernel::kAuto); }
BENCHMARK(BM_DecodeNames)->Arg(500)->Arg(5000)->Arg(15000)->Unit(benchmark::kMicrosecond);

void BM_DecodeNamesPortable(benchmark::State& state) {
  DecodeNames(state, extender::DecodeKernel::kPortable);
}
BENCHMARK(BM_DecodeNamesPortable)->Arg(500)->Arg(5000)->Arg(15000)->Unit(benchmark::kMicrosecond);

void BM_FilterFullNodes(benchmark::State& state) { RunHandler(state, Verb::kFilter, FullBody()); }
BENCHMARK(BM_FilterFullNodes)->Unit(benchmark::kMillisecond);

// The baseline: simdjson's DOM parser over the same bytes, nothing else.
void BM_SimdjsonDomParseFullNodes(benchmark::State& state) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(FullBody());
  for (auto _ : state) {
    simdjson::dom::element root;
    if (parser.parse(padded).get(root)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(root);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * FullBody().size()));
}
BENCHMARK(BM_SimdjsonDomParseFullNodes)->Unit(benchmark::kMillisecond);

// Medians of interleaved runs, for the ratio the target is stated in.
void PrintFullNodeRatio() {
  ExtenderHandler handler(*Cluster().core, nullptr);
  ScratchPool::Lease scratch = handler.scratch().Acquire();
  scratch->body.Assign(FullBody());
  scratch->body.Seal();
  simdjson::dom::parser parser;
  simdjson::padded_string padded(FullBody());
  std::vector<double> handle_us, parse_us;
  for (int i = 0; i < 41; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    simdjson::dom::element root;
    if (parser.parse(padded).get(root)) std::abort();
    auto t1 = std::chrono::steady_clock::now();
    if (handler.Handle(Verb::kFilter, *scratch) != 200) std::abort();
    auto t2 = std::chrono::steady_clock::now();
    parse_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    handle_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  std::sort(handle_us.begin(), handle_us.end());
  std::sort(parse_us.begin(), parse_us.end());
  const double h = handle_us[handle_us.size() / 2], p = parse_us[parse_us.size() / 2];
  std::printf(
      "full-Node mode, %d Nodes, %.1f MB body: decode+decide+encode median %.0f us, "
      "simdjson DOM parse median %.0f us, ratio %.2fx (target <= 3x)\n",
      kFullNodes, static_cast<double>(FullBody().size()) / 1e6, h, p, h / p);
}

}  // namespace
}  // namespace neighborly::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  // NEIGHBORLY_BENCH_FULL_RATIO=0 skips the interleaved ratio (under a profiler).
  if (const char* ratio = std::getenv("NEIGHBORLY_BENCH_FULL_RATIO");
      ratio == nullptr || *ratio != '0') {
    neighborly::bench::PrintFullNodeRatio();
  }
  benchmark::Shutdown();
  return 0;
}
