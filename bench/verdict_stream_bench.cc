// The extender's CPU per booking on the streamed verdict path (issue 25):
// a forked extender process (the real ExtenderCore with the HTTP benchmarks'
// 5,000 synthetic nodes, the real PlacementServer on loopback) and this
// process as the scheduler plugin: one Verdicts stream, several pod shapes
// subscribed with least_harm_state (as the plugin subscribes them), then
// bookings on the stream, each Reserve followed by reading until its ack, at
// a steady rate (kube-scheduler's ~200 pods/s) or as fast as they go.
// Meanwhile the extender ingests its fleet's reports at a steady rate (the
// scheduler_perf fleet's 500 reports/s), so that refreshes see journalled
// nodes as well as the booked one.
//
// Prints, over the measured bookings: the extender's CPU per booking (its
// whole process, less the ingest thread's own CPU), the ingest thread's, the
// wall time per booking and the mean, p50, p90 and p99 of a booking's ack,
// the table refreshes and the nodes they visited, and the updates the plugin
// read.
//
//   build/default/bench/verdict_stream_bench [--bookings 4000] [--rate 200]
//       [--shapes 8] [--reports 500] [--warmup 500] [--batch true] [--group 1]
//   (--rate 0: each Reserve right after the previous ack; --batch false: one
//   message per update, as a plugin that does not ask for VerdictsBatch)
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/http_bench_support.h"
#include "extender/src/model/testing/report_builder.h"
#include "extender/src/placement/placement_service.h"
#include "extender/src/placement/verdict_stream.h"

namespace {

namespace pv1 = ::neighborly::placement::v1;
using neighborly::bench::NodeName;

struct Flags {
  int bookings = 4000;
  int warmup = 500;
  double rate = 200;  // bookings per second; 0: closed loop
  int shapes = 8;
  double reports = 500;  // reports per second the extender ingests
  int nodes = 5000;
  bool batch = true;  // ask for VerdictsBatch messages, as the plugin does
  // Bookings sent together in one VerdictsRequests message (the plugin's
  // held-back bookings), each group at rate / group per second.
  int group = 1;
};

double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() { return CpuSeconds(CLOCK_PROCESS_CPUTIME_ID); }

void WriteAll(int fd, const std::string& s) {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = write(fd, s.data() + at, s.size() - at);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

// One line (without the newline) from `fd`; empty at end of file.
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

// The extender: serves until told "quit" on `in`; "start" and "stop" mark
// the measured span, after which it writes its CPU and counters to `out`.
int Extender(const Flags& flags, int in, int out) {
  using namespace neighborly;
  bench::SyntheticCluster cluster(flags.nodes);
  extender::PlacementServer::Options options;
  options.address = "127.0.0.1:0";
  options.service.learn_from_unauthenticated = true;
  absl::StatusOr<std::unique_ptr<extender::PlacementServer>> server =
      extender::PlacementServer::Start(*cluster.core, options, nullptr);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  // The fleet's reports at a steady rate, the clock following the wall.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ingested{0};
  const absl::Time start = cluster.clock.Now();
  const auto wall_start = std::chrono::steady_clock::now();
  std::thread ingest([&] {
    uint64_t next = 0;
    std::vector<uint64_t> sequence(flags.nodes, 1);
    while (!stop.load()) {
      const auto elapsed = std::chrono::steady_clock::now() - wall_start;
      cluster.clock.Set(start + absl::FromChrono(elapsed));
      const auto due = static_cast<uint64_t>(
          std::chrono::duration<double>(elapsed).count() * flags.reports);
      while (next < due) {
        const int i = static_cast<int>(next % flags.nodes);
        telemetry::v1::NodeReport r = bench::SyntheticReport(i, ++sequence[i]);
        r.mutable_window_start()->set_seconds(absl::ToUnixSeconds(cluster.clock.Now()) - 1);
        const uint64_t wobble = (next / flags.nodes * 2654435761u + sequence[i]) % 8;
        extender::testing::SetMeasured(r, 0, (8 + wobble) << 20, (5 + wobble) * 1'000'000'000);
        (void)cluster.core->Ingest(r);
        ++next;
        ingested.fetch_add(1, std::memory_order_relaxed);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  clockid_t ingest_clock;
  pthread_getcpuclockid(ingest.native_handle(), &ingest_clock);
  WriteAll(out, absl::StrCat((*server)->port(), "\n"));
  double cpu0 = 0, ingest0 = 0;
  uint64_t reports0 = 0;
  extender::ExtenderCore::VerdictRefreshStats stats0;
  for (std::string command = ReadLine(in); !command.empty() && command != "quit";
       command = ReadLine(in)) {
    if (command == "start") {
      cpu0 = ProcessCpuSeconds();
      ingest0 = CpuSeconds(ingest_clock);
      reports0 = ingested.load();
      stats0 = cluster.core->verdict_refresh_stats();
    } else if (command == "stop") {
      const double cpu = ProcessCpuSeconds() - cpu0;
      const double ingest_cpu = CpuSeconds(ingest_clock) - ingest0;
      const extender::ExtenderCore::VerdictRefreshStats s = cluster.core->verdict_refresh_stats();
      WriteAll(out, absl::StrCat(cpu, " ", ingest_cpu, " ", ingested.load() - reports0, " ",
                                 s.full - stats0.full, " ", s.incremental - stats0.incremental,
                                 " ", s.nodes_visited - stats0.nodes_visited, "\n"));
    }
  }
  stop = true;
  ingest.join();
  (*server)->Shutdown(absl::Seconds(1));
  return 0;
}

pv1::Container* AddContainer(pv1::Pod& pod, int64_t cpu_request, int64_t memory_request,
                             int64_t cpu_limit = -1, int64_t memory_limit = -1) {
  pv1::Container* c = pod.add_containers();
  c->set_name("c");
  if (cpu_request >= 0) c->set_cpu_request_millicores(cpu_request);
  if (memory_request >= 0) c->set_memory_request_bytes(memory_request);
  if (cpu_limit >= 0) c->set_cpu_limit_millicores(cpu_limit);
  if (memory_limit >= 0) c->set_memory_limit_bytes(memory_limit);
  return c;
}

// Pod shape `s` (owned by a workload of its own, as Deployment replicas).
pv1::Pod ShapePod(int s) {
  pv1::Pod pod;
  pod.set_namespace_("bench");
  const std::string workload = absl::StrCat("shape-", s);
  pod.set_name(workload + "-x");
  (*pod.mutable_labels())["app"] = workload;
  pv1::OwnerReference* owner = pod.add_owner_references();
  owner->set_kind("ReplicaSet");
  owner->set_name(workload);
  owner->set_controller(true);
  constexpr int64_t kGi = int64_t{1} << 30;
  switch (s % 8) {
    case 0:  // SchedulingBasic's pod
      AddContainer(pod, 100, 500 << 20);
      break;
    case 1:  // a batch trainer with a cache hint
      (*pod.mutable_labels())["workload-type"] = "batch";
      (*pod.mutable_annotations())["neighborly.io/llc-bytes"] = "24Mi";
      AddContainer(pod, 2000, 4 * kGi);
      break;
    case 2:  // latency-critical, Guaranteed
      (*pod.mutable_annotations())["neighborly.io/class"] = "latency-critical";
      AddContainer(pod, 2000, 4 * kGi, 2000, 4 * kGi);
      break;
    case 3:  // pinned: Guaranteed with whole cpus
      AddContainer(pod, 4000, 8 * kGi, 4000, 8 * kGi);
      break;
    case 4:  // latency-critical that tolerates almost nothing: refused widely
      (*pod.mutable_annotations())["neighborly.io/class"] = "latency-critical";
      (*pod.mutable_annotations())["neighborly.io/max-slowdown"] = "1.01";
      AddContainer(pod, 1000, 2 * kGi);
      break;
    case 5:  // best effort
      AddContainer(pod, -1, -1);
      break;
    case 6:  // bandwidth-heavy batch
      (*pod.mutable_labels())["workload-type"] = "batch";
      (*pod.mutable_annotations())["neighborly.io/membw-bytes-per-second"] = "8G";
      AddContainer(pod, 1000, 2 * kGi);
      break;
    default:  // a larger standard pod
      AddContainer(pod, 500, 2 * kGi);
      break;
  }
  if (s >= 8) (*pod.mutable_labels())["variant"] = absl::StrCat(s / 8);
  return pod;
}

struct Plugin {
  std::unique_ptr<grpc::ClientReaderWriter<pv1::VerdictsRequest, pv1::VerdictsUpdate>> stream;
  uint64_t messages = 0, updates = 0, verdicts = 0, bytes = 0;
  std::vector<pv1::VerdictsUpdate> unread;  // the rest of a batch, last first

  // The next update, from a batch read before or a new message.
  pv1::VerdictsUpdate Read() {
    if (unread.empty()) {
      pv1::VerdictsUpdate u;
      if (!stream->Read(&u)) {
        std::fprintf(stderr, "the stream ended\n");
        std::exit(1);
      }
      ++messages;
      bytes += u.ByteSizeLong();
      if (u.has_batch()) {
        for (int i = u.batch().updates_size() - 1; i >= 0; --i) {
          unread.push_back(std::move(*u.mutable_batch()->mutable_updates(i)));
        }
      } else {
        unread.push_back(std::move(u));
      }
    }
    pv1::VerdictsUpdate u = std::move(unread.back());
    unread.pop_back();
    ++updates;
    if (u.has_table()) verdicts += u.table().verdicts_size();
    return u;
  }
};

int Scheduler(const Flags& flags, int port, int to_extender, int from_extender) {
  auto stub = pv1::Placement::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  if (flags.batch) {
    context.AddMetadata(std::string(neighborly::extender::VerdictStream::kBatchMetadata), "1");
  }
  Plugin plugin;
  plugin.stream = stub->Verdicts(&context);
  if (!plugin.Read().ready()) {
    std::fprintf(stderr, "no ready\n");
    return 1;
  }
  std::vector<pv1::Pod> shapes;
  for (int s = 0; s < flags.shapes; ++s) {
    shapes.push_back(ShapePod(s));
    pv1::VerdictsRequest subscribe;
    subscribe.mutable_subscribe()->set_shape_id(s + 1);
    subscribe.mutable_subscribe()->set_least_harm_state(true);
    *subscribe.mutable_subscribe()->mutable_pod() = shapes.back();
    subscribe.mutable_subscribe()->mutable_pod()->set_uid(absl::StrCat("sub-", s));
    plugin.stream->Write(subscribe);
    for (;;) {
      const pv1::VerdictsUpdate u = plugin.Read();
      if (u.has_refused()) {
        std::fprintf(stderr, "shape %d refused: %s\n", s, u.refused().error().c_str());
        return 1;
      }
      if (u.has_table() && u.table().shape_id() == static_cast<uint64_t>(s + 1) &&
          u.table().full()) {
        break;
      }
    }
  }
  std::vector<double> ack_us;
  uint64_t booking = 0, booked = 0;
  uint64_t messages0 = 0, updates0 = 0, verdicts0 = 0, bytes0 = 0;
  const double parent_cpu0 = ProcessCpuSeconds();
  auto measured_start = std::chrono::steady_clock::now();
  auto next = std::chrono::steady_clock::now();
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(flags.rate > 0 ? 1.0 / flags.rate : 0.0));
  const int group = flags.group;
  uint64_t measured = 0;  // bookings after the warm-up
  using neighborly::extender::VerdictStream;
  if (group > 1 &&
      !VerdictStream::Says(context.GetServerInitialMetadata(), VerdictStream::kRequestsMetadata)) {
    std::fprintf(stderr, "the extender does not take VerdictsRequests\n");
    return 1;
  }
  for (int i = -flags.warmup; i < flags.bookings; i += group) {
    if (i >= 0 && i - group < 0) {
      WriteAll(to_extender, "start\n");
      measured_start = std::chrono::steady_clock::now();
      messages0 = plugin.messages;
      updates0 = plugin.updates;
      verdicts0 = plugin.verdicts;
      bytes0 = plugin.bytes;
      next = measured_start;
    }
    if (flags.rate > 0) {
      std::this_thread::sleep_until(next);
      next += period * group;
    }
    pv1::VerdictsRequest message;
    for (int g = 0; g < group; ++g) {
      const int s = static_cast<int>(booking % shapes.size());
      pv1::VerdictsRequest& reserve = group > 1 ? *message.mutable_batch()->add_requests() : message;
      reserve.mutable_reserve()->set_booking_id(++booking);
      pv1::Pod* pod = reserve.mutable_reserve()->mutable_pod();
      *pod = shapes[s];
      pod->set_uid(absl::StrCat("pod-", booking));
      pod->set_name(absl::StrCat(shapes[s].name(), booking));
      reserve.mutable_reserve()->set_node_name(
          NodeName(static_cast<int>((booking * 7919) % static_cast<uint64_t>(flags.nodes))));
    }
    const auto t0 = std::chrono::steady_clock::now();
    plugin.stream->Write(message);
    for (;;) {
      const pv1::VerdictsUpdate u = plugin.Read();
      if (u.has_ack() && u.ack().booking_id() == booking) {
        if (!u.ack().error().empty()) {
          std::fprintf(stderr, "booking refused: %s\n", u.ack().error().c_str());
          return 1;
        }
        booked += u.ack().done() ? 1 : 0;
        break;
      }
      if (u.has_ack()) booked += u.ack().done() ? 1 : 0;
    }
    if (i >= 0) {
      measured += group;
      ack_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
              .count());
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - measured_start).count();
  const double parent_cpu = ProcessCpuSeconds() - parent_cpu0;
  WriteAll(to_extender, "stop\n");
  const std::string line = ReadLine(from_extender);
  double cpu = 0, ingest_cpu = 0;
  uint64_t reports = 0, full = 0, incremental = 0, nodes = 0;
  if (std::sscanf(line.c_str(), "%lf %lf %lu %lu %lu %lu", &cpu, &ingest_cpu, &reports, &full,
                  &incremental, &nodes) != 6) {
    std::fprintf(stderr, "bad line from the extender: %s\n", line.c_str());
    return 1;
  }
  plugin.stream->WritesDone();
  pv1::VerdictsUpdate rest;
  while (plugin.stream->Read(&rest)) {
  }
  (void)plugin.stream->Finish();

  const double n = static_cast<double>(measured);
  std::sort(ack_us.begin(), ack_us.end());
  std::printf("verdict stream: %d nodes, %d shapes, %lu bookings (%d a message) at %s, %.0f "
              "reports/s ingested\n",
              flags.nodes, flags.shapes, measured, group,
              flags.rate > 0 ? absl::StrCat(flags.rate, "/s").c_str() : "closed loop",
              static_cast<double>(reports) / wall);
  std::printf(
      "  extender CPU per booking (less ingest)  %.1f us   (process %.1f us, ingest %.1f us)\n",
      (cpu - ingest_cpu) / n * 1e6, cpu / n * 1e6, ingest_cpu / n * 1e6);
  std::printf("  plugin process CPU per booking          %.1f us\n", parent_cpu / n * 1e6);
  double ack_sum = 0;
  for (double us : ack_us) ack_sum += us;
  // The acks' quantile numerator / denominator (0 when none was measured).
  auto ack = [&](size_t numerator, size_t denominator) {
    return ack_us.empty() ? 0.0 : ack_us[ack_us.size() * numerator / denominator];
  };
  std::printf(
      "  wall per booking %.1f us; ack mean %.0f us, p50 %.0f us, p90 %.0f us, p99 %.0f us; "
      "booked %lu\n",
      wall / n * 1e6, ack_us.empty() ? 0.0 : ack_sum / static_cast<double>(ack_us.size()),
      ack(1, 2), ack(9, 10), ack(99, 100), booked);
  const double refreshes = static_cast<double>(full + incremental);
  std::printf("  refreshes per booking %.2f (full %lu), nodes per refresh %.2f\n", refreshes / n,
              full, static_cast<double>(nodes) / std::max(1.0, refreshes));
  std::printf("  messages per booking %.2f, updates per booking %.2f, verdicts per booking %.2f, "
              "bytes per booking %.0f\n",
              static_cast<double>(plugin.messages - messages0) / n,
              static_cast<double>(plugin.updates - updates0) / n,
              static_cast<double>(plugin.verdicts - verdicts0) / n,
              static_cast<double>(plugin.bytes - bytes0) / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const absl::string_view value = argv[i + 1];
    bool ok = false;
    if (flag == "--bookings") ok = absl::SimpleAtoi(value, &flags.bookings);
    if (flag == "--warmup") ok = absl::SimpleAtoi(value, &flags.warmup);
    if (flag == "--rate") ok = absl::SimpleAtod(value, &flags.rate);
    if (flag == "--shapes") ok = absl::SimpleAtoi(value, &flags.shapes);
    if (flag == "--reports") ok = absl::SimpleAtod(value, &flags.reports);
    if (flag == "--nodes") ok = absl::SimpleAtoi(value, &flags.nodes);
    if (flag == "--batch") ok = absl::SimpleAtob(value, &flags.batch);
    if (flag == "--group") ok = absl::SimpleAtoi(value, &flags.group) && flags.group >= 1;
    if (!ok) {
      std::fprintf(stderr, "usage: %s [--bookings N] [--warmup N] [--rate PER_S] [--shapes N] "
                   "[--reports PER_S] [--nodes N] [--batch true|false] [--group N]\n", argv[0]);
      return 2;
    }
  }
  if (flags.bookings < 1 || flags.shapes < 1 || flags.nodes < 1) return 2;
  // Two pipes: commands to the extender, its port and results back. Forked
  // before either side starts gRPC.
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(down[1]);
    close(up[0]);
    _exit(Extender(flags, down[0], up[1]));
  }
  close(down[0]);
  close(up[1]);
  const std::string port = ReadLine(up[0]);
  int rc = 1;
  if (!port.empty()) rc = Scheduler(flags, std::atoi(port.c_str()), down[1], up[0]);
  WriteAll(down[1], "quit\n");
  close(down[1]);
  int status = 0;
  waitpid(child, &status, 0);
  return rc;
}
