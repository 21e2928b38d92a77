// Ingest rate of 50-pod NodeReports (target: >= 5,000 reports/s on 2 cores):
// ExtenderCore::Ingest() alone, from 1 and 2 threads, and over real gRPC on
// loopback with several client streams (client and server share the
// machine's cores, so the gRPC figure is a lower bound for the server).
//
//   build/default/bench/ingest_bench                       (Ingest() benchmarks, then gRPC)
//   build/default/bench/ingest_bench --benchmark_filter=-  (gRPC only)
//   NEIGHBORLY_BENCH_GRPC=0 build/default/bench/ingest_bench   (Ingest() only)
//   NEIGHBORLY_BENCH_QUICK=1 ...                           (fewer gRPC reports)
//
// Every report is valid and newer than the node's last one, so each is fully
// validated, profiled, published and its pods looked up in the registry.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/http_bench_support.h"
#include "extender/src/ingest/telemetry_server.h"
#include "grpcpp/grpcpp.h"

namespace neighborly::bench {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

constexpr int kPodsPerReport = 50;
constexpr int kNodes = 5'000;

// A report as an agent sends it for a busy node: 50 pods with a few labels,
// an annotation, and every measurement the agent takes.
std::vector<tv1::NodeReport> Reports(int first, int count, uint64_t sequence) {
  std::vector<tv1::NodeReport> reports;
  reports.reserve(count);
  for (int i = first; i < first + count; ++i) {
    tv1::NodeReport r = SyntheticReport(i, sequence, kPodsPerReport);
    for (int p = 0; p < r.pods_size(); ++p) {
      tv1::PodReport& pod = *r.mutable_pods(p);
      (*pod.mutable_labels())["app"] = absl::StrCat("service-", p % 7);
      (*pod.mutable_labels())["pod-template-hash"] = "7d9f8c6b5";
      (*pod.mutable_annotations())["kubectl.kubernetes.io/default-container"] = "main";
      pod.set_cpu_usage_millicores(100 + p * 13);
      pod.set_membw_local_bytes_per_second(pod.membw_total_bytes_per_second() / 2);
      pod.set_ipc(1.2 + 0.01 * p);
      pod.set_llc_misses_per_kilo_instructions(0.5 + 0.1 * p);
      pod.set_psi_cpu_some_avg10(0.5);
      pod.set_psi_memory_some_avg10(0.0);
      pod.set_psi_memory_full_avg10(0.0);
    }
    reports.push_back(std::move(r));
  }
  return reports;
}

// Sequence numbers only grow, across the benchmark's repeated runs too.
uint64_t NextSequenceBase() {
  static std::atomic<uint64_t> base{0};
  return base.fetch_add(1'000'000'000) + 1;
}

// Each thread re-reports its own share of the nodes with rising sequence numbers.
void BM_IngestCore(benchmark::State& state) {
  static FakeClock* clock = new FakeClock();
  static extender::ExtenderCore* core = new extender::ExtenderCore(extender::ModelConfig(), *clock);
  const int share = kNodes / state.threads();
  std::vector<tv1::NodeReport> reports =
      Reports(state.thread_index() * share, share, NextSequenceBase());
  size_t next = 0;
  for (auto _ : state) {
    tv1::NodeReport& r = reports[next];
    r.set_sequence(r.sequence() + 1);
    if (absl::Status s = core->Ingest(r); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    next = next + 1 == reports.size() ? 0 : next + 1;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(reports[0].ByteSizeLong()));
}
BENCHMARK(BM_IngestCore)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The same on one thread with workload profiles on (the default) and off, in
// one run: the difference is what learning profiles costs per 50-pod report
// (keys, lookups and one profile update per measured pod).
void IngestOneThread(benchmark::State& state, bool profiles) {
  static FakeClock* clock = new FakeClock();
  extender::ModelConfig config;
  config.workloads.enabled = profiles;
  extender::ExtenderCore core(config, *clock);
  std::vector<tv1::NodeReport> reports = Reports(0, kNodes, NextSequenceBase());
  size_t next = 0;
  for (auto _ : state) {
    tv1::NodeReport& r = reports[next];
    r.set_sequence(r.sequence() + 1);
    if (absl::Status s = core.Ingest(r); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    next = next + 1 == reports.size() ? 0 : next + 1;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["workloads"] = static_cast<double>(core.workload_profiles());
}
void BM_IngestProfilesOn(benchmark::State& state) { IngestOneThread(state, true); }
void BM_IngestProfilesOff(benchmark::State& state) { IngestOneThread(state, false); }
BENCHMARK(BM_IngestProfilesOff)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IngestProfilesOn)->Unit(benchmark::kMicrosecond);

// As the gRPC service calls it: the parsed report is handed over (moved into
// the snapshot), not copied. The copy each iteration needs is not timed.
void BM_IngestCoreMove(benchmark::State& state) {
  static FakeClock* clock = new FakeClock();
  static extender::ExtenderCore* core = new extender::ExtenderCore(extender::ModelConfig(), *clock);
  std::vector<tv1::NodeReport> reports = Reports(0, kNodes, NextSequenceBase());
  size_t next = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tv1::NodeReport& r = reports[next];
    r.set_sequence(r.sequence() + 1);
    tv1::NodeReport copy = r;
    next = next + 1 == reports.size() ? 0 : next + 1;
    state.ResumeTiming();
    if (absl::Status s = core->Ingest(std::move(copy)); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_IngestCoreMove)->Unit(benchmark::kMicrosecond);

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

// `streams` client streams (one thread each) send `per_stream` reports, each
// waiting for its ack as an agent does, to a TelemetryServer on loopback.
void RunGrpc(int streams, int per_stream) {
  RealClock clock;
  extender::ExtenderCore core(extender::ModelConfig(), clock);
  extender::TelemetryServer::Options options;
  options.address = "127.0.0.1:0";
  // A real agent sends one report per second per stream; the per-stream rate
  // limit (5/s) would cap this benchmark's few streams, so it is off here.
  options.policy.max_reports_per_second = 0;
  absl::StatusOr<std::unique_ptr<extender::TelemetryServer>> server =
      extender::TelemetryServer::Start(core, options);
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start the telemetry server: %s\n",
                 std::string(server.status().message()).c_str());
    std::exit(1);
  }
  const int nodes_per_stream = kNodes / streams;
  std::vector<std::vector<tv1::NodeReport>> reports;
  for (int s = 0; s < streams; ++s)
    reports.push_back(Reports(s * nodes_per_stream, nodes_per_stream, NextSequenceBase()));
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> clients;
  for (int s = 0; s < streams; ++s) {
    clients.emplace_back([&, s] {
      auto channel =
          grpc::CreateCustomChannel((*server)->address(), grpc::InsecureChannelCredentials(), [s] {
            grpc::ChannelArguments args;
            args.SetInt("neighborly.bench.stream", s);  // one connection per stream, as agents
            return args;
          }());
      auto stub = tv1::Telemetry::NewStub(channel);
      grpc::ClientContext ctx;
      auto stream = stub->Report(&ctx);
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      std::vector<tv1::NodeReport>& mine = reports[s];
      for (int i = 0; i < per_stream; ++i) {
        tv1::NodeReport& r = mine[i % mine.size()];
        r.set_sequence(r.sequence() + 1);
        tv1::ReportAck ack;
        if (!stream->Write(r) || !stream->Read(&ack) || ack.sequence() != r.sequence()) {
          failures.fetch_add(1);
          break;
        }
      }
      stream->WritesDone();
      if (!stream->Finish().ok()) failures.fetch_add(1);
    });
  }
  while (ready.load() < streams) std::this_thread::yield();
  const double cpu_start = ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  go = true;
  for (std::thread& t : clients) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = ProcessCpuSeconds() - cpu_start;
  const double total = static_cast<double>(streams) * per_stream;
  std::printf(
      "gRPC ingest on loopback: %d streams x %d reports of %d pods (%zu bytes each): "
      "%.0f reports/s (%.2f s)%s; accepted %llu; CPU of clients + server %.0f us per report "
      "(%.0f reports/s per fully used core), load average %s\n",
      streams, per_stream, kPodsPerReport, reports[0][0].ByteSizeLong(), total / seconds, seconds,
      failures.load() ? ", WITH FAILURES" : "",
      static_cast<unsigned long long>((*server)->stats().reports_accepted), cpu / total * 1e6,
      total / cpu, LoadAverage().c_str());
  (*server)->Shutdown(absl::Seconds(5));
}

}  // namespace
}  // namespace neighborly::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (const char* grpc = std::getenv("NEIGHBORLY_BENCH_GRPC"); grpc != nullptr && *grpc == '0') {
    return 0;  // Ingest() alone (e.g. under a profiler)
  }
  const char* quick = std::getenv("NEIGHBORLY_BENCH_QUICK");
  const int per_stream = quick != nullptr ? 500 : 2'500;
  neighborly::bench::RunGrpc(4, per_stream);
  neighborly::bench::RunGrpc(8, per_stream / 2);
  return 0;
}
