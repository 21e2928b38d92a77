// Load and soak generator for neighborly-extender (docs/performance.md, "Load
// and soak"). Starts the real extender (or attaches to a running one), then:
//   - `--nodes` simulated nodes of `--pods-per-node` pods each stream one
//     NodeReport per second over gRPC: callback-API bidi streams multiplexed
//     over `--channels` HTTP/2 connections, driven by one pacing thread;
//   - a scheduler-like client sends /filter then /prioritize for
//     `--pods-per-second` new pods, each with `--candidates` node names, over one
//     HTTP keep-alive connection (as kube-scheduler does).
// Every `--print-every` it prints per-verb round-trip p50/p99/max, the report
// rate, and the extender's RSS (VmRSS) and CPU; at the end, the whole run's
// percentiles and the RSS curve.
//
//   soak_load --extender build/x/extender/neighborly-extender --duration 600s
//   soak_load --duration 20s          # short mode (scripts)
//
// The tail under ingest (issue 15, finding 7; docs/performance.md): 500 nodes,
// a client at 375 pods/s (750 requests/s), the fleet paused every other 10 s,
// and the round trips of the two phases reported apart:
//   soak_load --extender BIN --nodes 500 --pods-per-second 375 --candidates 500
//             --pause-fleet-every 10s --duration 60s
// The tail of a latency-critical Guaranteed pod that most nodes refuse
// (issue 25, part 6): `--case lc-refused` sets 500 nodes of 20 pods of mixed
// classes (soak_fleet.h, LcRefusedReport: the pod is refused on nine in
// ten), a client at 350 such pods/s (700 requests/s) with all 500 names, and
// the fleet streaming throughout; it prints the round trips' p50/p99/p99.9,
// the slowest 1 % split as below, the verdict against p99 <= 1 ms, and the
// decisions reused and evaluated per request (any flag given overrides it):
//   soak_load --extender BIN --case lc-refused --duration 30s
// An extender it starts without --config gets http.serverTiming, so that the
// slowest 1 % of round trips are split into the server's stages (wake,
// receive, handle) and the time outside it, and by request kind (verb and
// the pod's class, with mean reply sizes); the verdict against the target
// (p99 <= 1 ms with the fleet streaming) is printed, and at the end how many
// candidates the extender decided by reusing a decision (http.reuseDecisions).
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/soak_fleet.h"
#include "common/process_metrics.h"
#include "common/thread_priority.h"
#include "extender/src/model/testing/report_builder.h"
#include "grpcpp/grpcpp.h"
#include "neighborly/telemetry/v1/telemetry.grpc.pb.h"

namespace neighborly::bench {
namespace {

namespace tv1 = telemetry::v1;

struct Options {
  std::string extender;  // binary to start; empty with --http/--grpc/--pid
  std::string config;
  std::vector<std::string> extender_args;
  std::string extender_log = "/dev/null";
  // An extender it starts saves its state here (on SIGTERM only); the size
  // and the SIGTERM-to-exit time (the save included) are printed.
  std::string state_file;
  std::string http;
  std::string grpc;
  pid_t pid = 0;
  int nodes = 5000;
  int pods_per_node = 50;
  double report_hz = 1;
  double pods_per_second = 200;
  int candidates = 500;
  int channels = 8;
  // The scheduler's pods declare classes (annotation or label), so the
  // extender remembers each new UID; --undeclared-pods sends plain pods, to
  // tell the pod registry's growth (bounded by its capacity) from the rest.
  bool declared_pods = true;
  // Nice value of the simulated fleet's threads (they stand for agents on
  // other machines), which also run SCHED_IDLE unless --fleet-no-idle; the
  // scheduler client keeps the priority it was started with.
  int fleet_nice = 19;
  bool fleet_idle = true;
  absl::Duration duration = absl::Seconds(20);
  absl::Duration print_every = absl::Seconds(10);
  // Non-zero: the fleet sends nothing in every other period of this length,
  // and the scheduler's round trips are summed per phase (fleet running or
  // paused), to tell the ingest's share of the tail from the machine's.
  absl::Duration pause_fleet_every = absl::ZeroDuration();
  // --case: the soak's mix (default), or the latency-critical pod most nodes
  // refuse (lc-refused; see the top of this file).
  bool lc_refused = false;
};

// --fleet-nice and --fleet-no-idle, read by the fleet's gRPC callbacks and pacing thread.
int g_fleet_nice = 19;
bool g_fleet_idle = true;
bool g_lc_refused = false;  // --case lc-refused: the fleet's reports and measurements

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "soak_load: %s\n", message.c_str());
  std::exit(2);
}

absl::Duration ParseDurationFlag(const std::string& flag, const std::string& value) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration()) {
    Die(absl::StrCat(flag, ": expected a duration like 20s or 10m, got \"", value, "\""));
  }
  return d;
}

int ParseIntFlag(const std::string& flag, const std::string& value, int min) {
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || v < min || v > 10'000'000) {
    Die(absl::StrCat(flag, ": expected an integer >= ", min, ", got \"", value, "\""));
  }
  return static_cast<int>(v);
}

Options ParseFlags(int argc, char** argv) {
  Options o;
  std::vector<std::string> given;  // flags set explicitly: --case does not override them
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flag != "--help" && flag != "--undeclared-pods" && flag != "--fleet-no-idle") {
      if (i + 1 >= argc) Die(absl::StrCat(flag, " needs a value"));
      value = argv[++i];
    }
    given.push_back(flag);
    if (flag == "--help") {
      std::printf(
          "usage: soak_load [--extender BIN [--config FILE] [--extender-arg ARG]... "
          "[--extender-log FILE]]\n"
          "                 [--http H:P --grpc H:P --pid PID]\n"
          "                 [--nodes 5000] [--pods-per-node 50] [--report-hz 1]\n"
          "                 [--pods-per-second 200] [--candidates 500] [--channels 8]\n"
          "                 [--duration 20s] [--print-every 10s] [--undeclared-pods]\n"
          "                 [--fleet-nice 19] [--fleet-no-idle] [--pause-fleet-every 10s]\n"
          "                 [--state-file PATH] [--case soak|lc-refused]\n");
      std::exit(0);
    } else if (flag == "--undeclared-pods") {
      o.declared_pods = false;
    } else if (flag == "--fleet-no-idle") {
      o.fleet_idle = false;
    } else if (flag == "--extender") {
      o.extender = value;
    } else if (flag == "--config") {
      o.config = value;
    } else if (flag == "--extender-arg") {
      o.extender_args.push_back(value);
    } else if (flag == "--extender-log") {
      o.extender_log = value;
    } else if (flag == "--state-file") {
      o.state_file = value;
    } else if (flag == "--http") {
      o.http = value;
    } else if (flag == "--grpc") {
      o.grpc = value;
    } else if (flag == "--pid") {
      o.pid = ParseIntFlag(flag, value, 1);
    } else if (flag == "--fleet-nice") {
      o.fleet_nice = ParseIntFlag(flag, value, 0);
    } else if (flag == "--nodes") {
      o.nodes = ParseIntFlag(flag, value, 1);
    } else if (flag == "--pods-per-node") {
      o.pods_per_node = ParseIntFlag(flag, value, 0);
    } else if (flag == "--report-hz") {
      // Fractions too: 0.1 is a 10 s interval.
      char* end = nullptr;
      o.report_hz = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(o.report_hz >= 0.01 && o.report_hz <= 100)) {
        Die(absl::StrCat("--report-hz: expected a rate between 0.01 and 100, got \"", value, "\""));
      }
    } else if (flag == "--pods-per-second") {
      o.pods_per_second = ParseIntFlag(flag, value, 0);
    } else if (flag == "--candidates") {
      o.candidates = ParseIntFlag(flag, value, 1);
    } else if (flag == "--channels") {
      o.channels = ParseIntFlag(flag, value, 1);
    } else if (flag == "--duration") {
      o.duration = ParseDurationFlag(flag, value);
    } else if (flag == "--print-every") {
      o.print_every = ParseDurationFlag(flag, value);
    } else if (flag == "--pause-fleet-every") {
      o.pause_fleet_every = ParseDurationFlag(flag, value);
    } else if (flag == "--case") {
      if (value != "soak" && value != "lc-refused") {
        Die(absl::StrCat("--case: expected soak or lc-refused, got \"", value, "\""));
      }
      o.lc_refused = value == "lc-refused";
    } else {
      Die(absl::StrCat("unknown flag ", flag, " (see --help)"));
    }
  }
  if (o.lc_refused) {
    auto unless_given = [&](const char* flag, int& field, int value) {
      if (std::find(given.begin(), given.end(), flag) == given.end()) field = value;
    };
    unless_given("--nodes", o.nodes, 500);
    unless_given("--pods-per-node", o.pods_per_node, 20);
    unless_given("--candidates", o.candidates, 500);
    if (std::find(given.begin(), given.end(), "--pods-per-second") == given.end()) {
      o.pods_per_second = 350;
    }
  }
  if (o.extender.empty() && (o.http.empty() || o.grpc.empty())) {
    Die("give --extender BIN, or --http and --grpc of a running extender");
  }
  o.candidates = std::min(o.candidates, o.nodes);
  return o;
}

// --- the extender process ---

// Starts the extender on port 0 and returns its pid and addresses, parsed
// from "listening http=H:P grpc=H:P" on its stdout.
pid_t StartExtender(Options& o) {
  if (o.config.empty()) {
    // Server-Timing on every reply: where in the server each round trip went.
    o.config = absl::StrCat("/tmp/soak_load_", ::getpid(), ".yaml");
    std::ofstream config(o.config);
    config << "http:\n  serverTiming: true\n";
    // One stream per node, and room for the reconnects of a restart.
    config << "grpc:\n  maxStreams: " << std::max(50'000, 2 * o.nodes) << "\n";
    if (!o.state_file.empty()) {
      config << "state:\n  file: " << o.state_file << "\n  saveInterval: 1h\n";
    }
  }
  int out[2];
  if (::pipe(out) != 0) Die("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    ::dup2(out[1], 1);
    const int log = ::open(o.extender_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) ::dup2(log, 2);
    ::close(out[0]);
    // The generator streams plaintext on loopback; the extender wants that said.
    std::vector<std::string> args = {o.extender,    "--http-address",
                                     "127.0.0.1:0", "--grpc-address",
                                     "127.0.0.1:0", "--grpc-insecure-plaintext"};
    if (!o.config.empty()) {
      args.push_back("--config");
      args.push_back(o.config);
    }
    for (const std::string& a : o.extender_args) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("execv");
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line.starts_with("listening ")) break;
    line.clear();
  }
  ::close(out[0]);
  const size_t h = line.find("http="), g = line.find("grpc=");
  if (h == std::string::npos || g == std::string::npos) {
    Die(absl::StrCat("the extender did not print its listening line (log: ", o.extender_log, ")"));
  }
  o.http = line.substr(h + 5, line.find(' ', h) - h - 5);
  o.grpc = line.substr(g + 5);
  return pid;
}

double RssMiB(pid_t pid) {
  return static_cast<double>(ReadStatusBytes(pid, "VmRSS").value_or(0)) / (1 << 20);
}

// Time the calling thread has spent waiting on a run queue (runnable, not
// running), in microseconds: /proc/thread-self/schedstat's second field.
double ThreadRunDelayUs() {
  std::ifstream in("/proc/thread-self/schedstat");
  unsigned long long on_cpu = 0, waiting = 0;
  in >> on_cpu >> waiting;
  return static_cast<double>(waiting) / 1e3;
}

// The same summed over every thread of a process.
double ProcessRunDelaySeconds(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::ifstream in(task.path() / "schedstat");
    unsigned long long on_cpu = 0, waiting = 0;
    if (in >> on_cpu >> waiting) total += static_cast<double>(waiting) / 1e9;
  }
  return total;
}

// utime + stime of a process, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) {
      stime = std::atof(f.c_str());
      break;
    }
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// --- telemetry streams ---

struct StreamCounters {
  std::atomic<uint64_t> written{0};
  std::atomic<uint64_t> acked{0};
  std::atomic<uint64_t> skipped{0};  // a tick found the previous write still pending
  std::atomic<uint64_t> failed{0};   // streams that ended (and were reopened)
  std::atomic<int64_t> open{0};
  // Nodes the extender asked for a longer interval (grpc.adaptiveInterval),
  // and the longest it asked for; ticks they skipped because of it.
  std::atomic<int64_t> slowed_nodes{0};
  std::atomic<int64_t> asked_ns_max{0};
  std::atomic<uint64_t> slowed_ticks{0};
};

tv1::NodeReport MakeReport(int node, int pods) {
  tv1::NodeReport r = g_lc_refused ? LcRefusedReport(node, pods) : SoakReport(node, pods);
  r.set_agent_version("soak");
  r.set_boot_id(absl::StrFormat("soak-boot-%05d-%d", node, ::getpid()));
  return r;
}

class NodeStream final : public grpc::ClientBidiReactor<tv1::NodeReport, tv1::ReportAck> {
 public:
  NodeStream(tv1::Telemetry::Stub& stub, int node, tv1::NodeReport* report,
             StreamCounters& counters)
      : node_(node), report_(report), counters_(counters) {
    stub.async()->Report(&context_, this);
    StartRead(&ack_);
    StartCall();
    counters_.open.fetch_add(1, std::memory_order_relaxed);
  }

  // Sends the node's next report unless the previous one is still being
  // written, or the extender asked for a longer interval than has passed
  // since the last (as the agent honours ReportAck.interval). The window is
  // stamped with the real clock, as an agent's is: the extender judges its
  // ingest lag by it.
  void Tick(uint64_t tick, absl::Duration interval) {
    if (done_.load(std::memory_order_acquire)) return;
    const absl::Time now = absl::Now();
    const int64_t asked_ns = asked_ns_.load(std::memory_order_relaxed);
    if (asked_ns > 0 && last_sent_ != absl::InfinitePast() &&
        now - last_sent_ < absl::Nanoseconds(asked_ns) - interval / 2) {
      counters_.slowed_ticks.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (writing_.exchange(true, std::memory_order_acq_rel)) {
      counters_.skipped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const absl::Duration window =
        last_sent_ == absl::InfinitePast() ? interval : std::max(now - last_sent_, interval);
    last_sent_ = now;
    tv1::NodeReport& r = *report_;
    r.set_sequence(r.sequence() + 1);
    const int64_t start_ns = absl::ToUnixNanos(now - window);
    r.mutable_window_start()->set_seconds(start_ns / 1'000'000'000);
    r.mutable_window_start()->set_nanos(static_cast<int32_t>(start_ns % 1'000'000'000));
    const int64_t window_ns = absl::ToInt64Nanoseconds(window);
    r.mutable_window_duration()->set_seconds(window_ns / 1'000'000'000);
    r.mutable_window_duration()->set_nanos(static_cast<int32_t>(window_ns % 1'000'000'000));
    // Measurements move a little every window, as a real node's do.
    const uint64_t wobble = (tick * 2654435761u + r.sequence()) % 8;
    if (g_lc_refused) {
      SetLcRefusedMeasured(r, node_, wobble);
    } else {
      extender::testing::SetMeasured(r, 0, (8 + wobble) << 20, (5 + wobble) * 1'000'000'000);
      extender::testing::SetMeasured(r, 1, (4 + wobble) << 20, (3 + wobble) * 1'000'000'000);
    }
    StartWrite(report_);
  }

  void Cancel() { context_.TryCancel(); }
  bool done() const { return done_.load(std::memory_order_acquire); }

  // The simulated fleet stands for agents on 5,000 other machines: its threads
  // run at the lowest priority (nice 19 and SCHED_IDLE), so that on a shared
  // load machine the CPU goes first to the extender and to the scheduler
  // client being measured.
  void OnWriteDone(bool ok) override {
    LowerThisThreadPriority(g_fleet_nice, g_fleet_idle);
    if (ok) counters_.written.fetch_add(1, std::memory_order_relaxed);
    writing_.store(!ok, std::memory_order_release);  // a failed write: the stream is ending
  }
  void OnReadDone(bool ok) override {
    LowerThisThreadPriority(g_fleet_nice, g_fleet_idle);
    if (!ok) return;
    counters_.acked.fetch_add(1, std::memory_order_relaxed);
    if (ack_.has_interval()) {
      const int64_t ns = ack_.interval().seconds() * 1'000'000'000 + ack_.interval().nanos();
      const int64_t was = asked_ns_.exchange(std::max<int64_t>(ns, 0));
      if ((was > 0) != (ns > 0)) counters_.slowed_nodes.fetch_add(ns > 0 ? 1 : -1);
      int64_t max = counters_.asked_ns_max.load();
      while (ns > max && !counters_.asked_ns_max.compare_exchange_weak(max, ns)) {
      }
    }
    StartRead(&ack_);
  }
  void OnDone(const grpc::Status& status) override {
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
      counters_.failed.fetch_add(1, std::memory_order_relaxed);
      static std::atomic<int> logged{0};
      if (logged.fetch_add(1) < 5) {
        std::fprintf(stderr, "stream ended: %d %s\n", status.error_code(),
                     status.error_message().c_str());
      }
    }
    counters_.open.fetch_sub(1, std::memory_order_relaxed);
    done_.store(true, std::memory_order_release);
  }

 private:
  grpc::ClientContext context_;
  const int node_;
  tv1::NodeReport* report_;
  tv1::ReportAck ack_;
  StreamCounters& counters_;
  std::atomic<bool> writing_{false};
  std::atomic<bool> done_{false};
  std::atomic<int64_t> asked_ns_{0};  // ReportAck.interval; 0: none
  absl::Time last_sent_ = absl::InfinitePast();  // the pacing thread's alone
};

// --- latency bookkeeping ---

struct Latencies {
  std::mutex mu;
  std::vector<double> interval_us, all_us;
  uint64_t errors = 0;

  void Add(double us) {
    std::lock_guard<std::mutex> lock(mu);
    interval_us.push_back(us);
    all_us.push_back(us);
  }
};

std::string Summary(std::vector<double> v) {
  if (v.empty()) return "n=0";
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))] / 1e3;
  };
  return absl::StrFormat("n=%d p50=%.3fms p99=%.3fms p99.9=%.3fms max=%.3fms", v.size(), q(0.5),
                         q(0.99), q(0.999), v.back() / 1e3);
}

// The pod's class in the soak's mix (k % 3: latency-critical, batch, plain);
// --case lc-refused sends latency-critical pods only.
int PodClass(uint64_t k) { return g_lc_refused ? 0 : static_cast<int>(k % 3); }

std::string PodBody(uint64_t k, int nodes, int candidates, bool declared, std::mt19937& random) {
  const int pod_class = PodClass(k);
  const char* cls = !declared    ? ""
                    : pod_class == 0 ? R"("annotations":{"neighborly.io/class":"latency-critical"},)"
                    : pod_class == 1 ? R"("labels":{"workload-type":"batch"},)"
                                 : "";
  std::string body = absl::StrFormat(
      R"({"Pod":{"metadata":{"name":"soak-%d","namespace":"soak","uid":"soak-pod-%012d",%s"ownerReferences":[]},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"2Gi"},"limits":{"cpu":"1","memory":"2Gi"}}}]},"status":{"qosClass":"Guaranteed"}},"Nodes":null,"NodeNames":[)",
      k, k, cls);
  std::uniform_int_distribution<int> start(0, nodes - 1);
  const int first = start(random);
  for (int i = 0; i < candidates; ++i) {
    // A contiguous window (mod nodes) of candidates, as percentageOfNodesToScore
    // walks the node list from a rotating start.
    absl::StrAppend(&body, i ? "," : "", absl::StrFormat("\"node-%05d\"", (first + i) % nodes));
  }
  body += "]}";
  return body;
}

// "wake;dur=0.012, receive;dur=0.000, handle;dur=0.153" (milliseconds; wake
// absent when the kernel gave no timestamp) into microseconds; unparsed stages stay -1.
void ParseServerTiming(const std::string& header, double& wake_us, double& receive_us,
                       double& handle_us) {
  auto stage = [&](std::string_view name, double& out) {
    const size_t at = header.find(absl::StrCat(std::string(name), ";dur="));
    if (at != std::string::npos) out = 1e3 * std::atof(header.c_str() + at + name.size() + 5);
  };
  stage("wake", wake_us);
  stage("receive", receive_us);
  stage("handle", handle_us);
}

// Server-side latency from the extender's own histogram (whatever its name
// prefix, "..._request_duration_seconds_bucket{verb=...,le=...}"): the bucket
// bounds that hold the median and the 99th percentile.
void PrintServerSide(const std::string& http, uint64_t requests) {
  const size_t colon = http.rfind(':');
  httplib::Client client(http.substr(0, colon), std::atoi(http.c_str() + colon + 1));
  client.set_read_timeout(10);
  httplib::Result r = client.Get("/metrics");
  if (!r || r->status != 200) {
    std::printf("server side: /metrics unavailable\n");
    return;
  }
  struct Series {
    std::string what;    // printed
    std::string family;  // "..._bucket{" suffix searched
    std::string key;     // label searched
  };
  const std::vector<Series> series = {
      {"filter", "request_duration_seconds_bucket{", "verb=\"filter\""},
      {"prioritize", "request_duration_seconds_bucket{", "verb=\"prioritize\""},
      {"stage wake", "stage_duration_seconds_bucket{", "stage=\"wake\""},
      {"stage receive", "stage_duration_seconds_bucket{", "stage=\"receive\""},
      {"stage handle", "stage_duration_seconds_bucket{", "stage=\"handle\""},
      {"stage send", "stage_duration_seconds_bucket{", "stage=\"send\""},
  };
  for (const Series& s : series) {
    std::vector<std::pair<std::string, double>> buckets;  // (le, cumulative count)
    std::istringstream lines(r->body);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(s.family) == std::string::npos || line.find(s.key) == std::string::npos) {
        continue;
      }
      const size_t le = line.find("le=\"");
      const size_t le_end = line.find('"', le + 4);
      if (le == std::string::npos || le_end == std::string::npos) continue;
      buckets.emplace_back(line.substr(le + 4, le_end - le - 4),
                           std::atof(line.substr(line.rfind(' ') + 1).c_str()));
    }
    if (buckets.empty() || buckets.back().second <= 0) continue;
    const double total = buckets.back().second;
    auto bound = [&](double q) {
      for (const auto& [le, count] : buckets) {
        if (count >= q * total) return le;
      }
      return std::string("+Inf");
    };
    std::printf("server side %-13s n=%.0f p50<=%ss p99<=%ss (histogram bucket bounds)\n",
                s.what.c_str(), total, bound(0.5).c_str(), bound(0.99).c_str());
  }
  // Candidates decided by reusing a decision for a pod of the same shape.
  // And the least-harm fallback's second looks, reused or evaluated likewise.
  double reused = -1, evaluated = -1, harm_reused = -1, harm_evaluated = -1, harm_requests = -1;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    const double value = std::atof(line.substr(line.rfind(' ') + 1).c_str());
    if (line.starts_with("neighborly_extender_least_harm_total ")) harm_requests = value;
    const bool first = line.starts_with("neighborly_extender_decisions_total{");
    if (!first && !line.starts_with("neighborly_extender_least_harm_decisions_total{")) continue;
    if (line.find("how=\"reused\"") != std::string::npos) (first ? reused : harm_reused) = value;
    if (line.find("how=\"evaluated\"") != std::string::npos) {
      (first ? evaluated : harm_evaluated) = value;
    }
  }
  if (harm_reused >= 0 && harm_evaluated >= 0 && harm_requests >= 0) {
    std::printf(
        "server side least-harm fallback: %.0f requests; second looks %.0f evaluated, %.0f "
        "reused; per request of the client: %.1f evaluated, %.1f reused\n",
        harm_requests, harm_evaluated, harm_reused,
        requests > 0 ? harm_evaluated / static_cast<double>(requests) : 0.0,
        requests > 0 ? harm_reused / static_cast<double>(requests) : 0.0);
  }
  if (reused >= 0 && evaluated >= 0 && reused + evaluated > 0) {
    std::printf(
        "server side decisions: %.0f evaluated, %.0f reused (%.1f %%); per request of the "
        "client: %.1f evaluated (reuse misses), %.1f reused (hits)\n",
        evaluated, reused, 100 * reused / (reused + evaluated),
        requests > 0 ? evaluated / static_cast<double>(requests) : 0.0,
        requests > 0 ? reused / static_cast<double>(requests) : 0.0);
  }
}

int Run(int argc, char** argv) {
  Options o = ParseFlags(argc, argv);
  g_lc_refused = o.lc_refused;
  g_fleet_nice = o.fleet_nice;
  g_fleet_idle = o.fleet_idle;
  pid_t pid = o.pid;
  const bool own_extender = !o.extender.empty();
  if (own_extender) pid = StartExtender(o);
  std::printf(
      "soak%s: extender pid %d http=%s grpc=%s; %d nodes x %d pods at %.0f Hz over %d "
      "channels; %.0f pods/s x (filter + prioritize) with %d candidates; %s\n",
      o.lc_refused ? " (case lc-refused: latency-critical Guaranteed pods, refused on 9 nodes "
                     "in 10)"
                   : "",
      pid, o.http.c_str(), o.grpc.c_str(), o.nodes, o.pods_per_node, o.report_hz, o.channels,
      o.pods_per_second, o.candidates, absl::FormatDuration(o.duration).c_str());
  std::fflush(stdout);

  // Channels: distinct arguments and a local subchannel pool give each its own
  // TCP connection; streams are spread round-robin over them.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<tv1::Telemetry::Stub>> stubs;
  for (int c = 0; c < o.channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("neighborly.soak.channel", c);
    channels.push_back(grpc::CreateCustomChannel(o.grpc, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(tv1::Telemetry::NewStub(channels.back()));
  }
  std::vector<tv1::NodeReport> reports;
  reports.reserve(static_cast<size_t>(o.nodes));
  for (int n = 0; n < o.nodes; ++n) reports.push_back(MakeReport(n, o.pods_per_node));
  StreamCounters counters;
  std::vector<std::unique_ptr<NodeStream>> streams(static_cast<size_t>(o.nodes));
  std::vector<std::unique_ptr<NodeStream>> ended;  // kept: gRPC may still be leaving OnDone
  for (int n = 0; n < o.nodes; ++n) {
    streams[static_cast<size_t>(n)] = std::make_unique<NodeStream>(
        *stubs[static_cast<size_t>(n % o.channels)], n, &reports[static_cast<size_t>(n)],
        counters);
  }

  std::atomic<bool> stop{false};
  const absl::Time start = absl::Now();
  const absl::Time end = start + o.duration;
  // Whether the fleet is paused now (--pause-fleet-every: every other period).
  auto fleet_paused = [&] {
    if (o.pause_fleet_every <= absl::ZeroDuration()) return false;
    return static_cast<int64_t>((absl::Now() - start) / o.pause_fleet_every) % 2 == 1;
  };

  // One pacing thread: node n reports at n/nodes of every period.
  std::thread pacer([&] {
    LowerThisThreadPriority(g_fleet_nice, g_fleet_idle);
    const double per_second = o.report_hz * o.nodes;
    uint64_t ticked = 0;
    while (!stop.load()) {
      const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
      const auto due = static_cast<uint64_t>(elapsed * per_second);
      if (fleet_paused()) ticked = due;  // the paused period's reports are never sent
      for (; ticked < due; ++ticked) {
        const size_t n = ticked % static_cast<size_t>(o.nodes);
        if (streams[n]->done()) {  // reopen an ended stream (extender restart, error)
          ended.push_back(std::move(streams[n]));
          streams[n] = std::make_unique<NodeStream>(*stubs[n % stubs.size()], static_cast<int>(n),
                                                    &reports[n], counters);
        }
        streams[n]->Tick(ticked / static_cast<uint64_t>(o.nodes),
                         absl::Seconds(1 / o.report_hz));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  // The scheduler: open loop at pods_per_second; a pod whose time has come
  // while the previous one is still in flight is sent late (counted).
  Latencies filter, prioritize;
  Latencies phase[2];  // both verbs, fleet running / paused (--pause-fleet-every)
  // Per request: the round trip and how long the client's own thread waited
  // for a CPU during it (per phase), to tell the machine's share of the tail.
  // With the extender's Server-Timing header (the benchmark turns
  // http.serverTiming on for an extender it starts), the server's own stages
  // of the same request: wake (kernel receive -> read), receive, handle.
  struct Sample {
    double us;
    double client_wait_us;
    double wake_us = -1;
    double receive_us = -1;
    double handle_us = -1;
    int kind = 0;  // verb * 3 + the pod's class (k % 3: latency-critical, batch, plain)
    size_t reply_bytes = 0;
  };
  std::vector<Sample> samples[2];
  // Samples per phase (and per kind, with the server's stages) are kept with
  // --pause-fleet-every and in --case lc-refused (one phase: streaming).
  const bool per_phase = o.pause_fleet_every > absl::ZeroDuration() || o.lc_refused;
  std::atomic<uint64_t> late{0};
  std::thread scheduler([&] {
    if (o.pods_per_second <= 0) return;
    const size_t colon = o.http.rfind(':');
    httplib::Client client(o.http.substr(0, colon), std::atoi(o.http.c_str() + colon + 1));
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    client.set_read_timeout(5);
    std::mt19937 random(7);
    for (uint64_t k = 0; !stop.load(); ++k) {
      const absl::Time due = start + absl::Seconds(static_cast<double>(k) / o.pods_per_second);
      const absl::Time now = absl::Now();
      if (due > now) {
        std::this_thread::sleep_for(absl::ToChronoMicroseconds(due - now));
      } else if (now - due > absl::Milliseconds(5)) {
        late.fetch_add(1, std::memory_order_relaxed);
      }
      const std::string body = PodBody(k, o.nodes, o.candidates, o.declared_pods, random);
      for (Latencies* verb : {&filter, &prioritize}) {
        const bool paused = fleet_paused();
        const double wait0 = ThreadRunDelayUs();
        const auto t0 = std::chrono::steady_clock::now();
        httplib::Result r =
            client.Post(verb == &filter ? "/filter" : "/prioritize", body, "application/json");
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        if (!r || r->status != 200) {
          std::lock_guard<std::mutex> lock(verb->mu);
          ++verb->errors;
        } else {
          verb->Add(us);
          if (per_phase) {
            Sample sample{us, ThreadRunDelayUs() - wait0};
            sample.kind = (verb == &filter ? 0 : 3) + PodClass(k);
            sample.reply_bytes = r->body.size();
            ParseServerTiming(r->get_header_value("Server-Timing"), sample.wake_us,
                              sample.receive_us, sample.handle_us);
            std::lock_guard<std::mutex> lock(phase[paused].mu);
            phase[paused].all_us.push_back(us);
            samples[paused].push_back(sample);
          }
        }
      }
    }
  });

  // Reporting.
  struct RssPoint {
    double t;
    double rss_mib;
  };
  std::vector<RssPoint> curve;
  double last_cpu = CpuSeconds(pid), last_self = SelfCpuSeconds();
  double last_delay = ProcessRunDelaySeconds(pid);
  uint64_t last_written = 0, last_acked = 0;
  absl::Time last = start;
  while (absl::Now() < end) {
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(
        std::min(o.print_every - (absl::Now() - last), end - absl::Now())));
    const absl::Time now = absl::Now();
    const double dt = absl::ToDoubleSeconds(now - last);
    last = now;
    std::vector<double> f, p;
    uint64_t errors;
    {
      std::scoped_lock lock(filter.mu, prioritize.mu);
      f.swap(filter.interval_us);
      p.swap(prioritize.interval_us);
      errors = filter.errors + prioritize.errors;
    }
    const uint64_t written = counters.written.load(), acked = counters.acked.load();
    const double cpu = CpuSeconds(pid), self = SelfCpuSeconds();
    const double delay = ProcessRunDelaySeconds(pid);
    const double rss = RssMiB(pid);
    const double t = absl::ToDoubleSeconds(now - start);
    curve.push_back({t, rss});
    std::printf(
        "t=%6.1fs filter %s | prioritize %s | http errors %d late %d | reports %.0f/s acked "
        "%.0f/s skipped %d streams %d failed %d slowed %d (asked up to %.1fs) | extender rss "
        "%.1f MiB cpu %.0f%% run-queue wait %.0f ms/s | generator cpu %.0f%%\n",
        t, Summary(std::move(f)).c_str(), Summary(std::move(p)).c_str(), static_cast<int>(errors),
        static_cast<int>(late.load()), static_cast<double>(written - last_written) / dt,
        static_cast<double>(acked - last_acked) / dt, static_cast<int>(counters.skipped.load()),
        static_cast<int>(counters.open.load()), static_cast<int>(counters.failed.load()),
        static_cast<int>(counters.slowed_nodes.load()),
        static_cast<double>(counters.asked_ns_max.load()) / 1e9, rss, 100 * (cpu - last_cpu) / dt, 1e3 * (delay - last_delay) / dt,
        100 * (self - last_self) / dt);
    std::fflush(stdout);
    last_written = written;
    last_acked = acked;
    last_cpu = cpu;
    last_self = self;
    last_delay = delay;
  }
  stop = true;
  scheduler.join();
  pacer.join();

  std::printf("total filter     %s\n", Summary(filter.all_us).c_str());
  std::printf("total prioritize %s\n", Summary(prioritize.all_us).c_str());
  if (per_phase) {
    for (int paused = 0; paused < (o.pause_fleet_every > absl::ZeroDuration() ? 2 : 1);
         ++paused) {
      std::lock_guard<std::mutex> lock(phase[paused].mu);
      std::printf("fleet %s both verbs %s\n",
                  paused ? "paused: " : "running:", Summary(phase[paused].all_us).c_str());
      if (!paused && !phase[0].all_us.empty()) {
        std::vector<double> sorted = phase[0].all_us;
        std::sort(sorted.begin(), sorted.end());
        const double p99_ms = sorted[sorted.size() * 99 / 100] / 1e3;
        std::printf(
            "  target (issue %s): client p99 <= 1 ms with the fleet streaming: %s (%.3f ms)\n",
            o.lc_refused ? "25, part 6" : "15", p99_ms <= 1.0 ? "met" : "MISSED", p99_ms);
      }
      // Where the slowest 1% lost their time: the client thread's own wait
      // for a CPU inside the round trip, beside the round trip itself.
      std::vector<Sample>& v = samples[paused];
      std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.us < b.us; });
      double tail_us = 0, tail_wait = 0, all_wait = 0;
      double tail_wake = 0, tail_receive = 0, tail_handle = 0, all_wake = 0, all_handle = 0;
      size_t tail_timed = 0, all_timed = 0;
      const size_t tail_from = v.size() * 99 / 100;
      for (size_t i = 0; i < v.size(); ++i) {
        all_wait += v[i].client_wait_us;
        const bool timed = v[i].handle_us >= 0;
        if (timed) {
          ++all_timed;
          all_wake += std::max(0.0, v[i].wake_us);
          all_handle += v[i].handle_us;
        }
        if (i >= tail_from) {
          tail_us += v[i].us;
          tail_wait += v[i].client_wait_us;
          if (timed) {
            ++tail_timed;
            tail_wake += std::max(0.0, v[i].wake_us);
            tail_receive += v[i].receive_us;
            tail_handle += v[i].handle_us;
          }
        }
      }
      const double tail_n = static_cast<double>(v.size() - tail_from);
      if (tail_n > 0) {
        std::printf(
            "  slowest 1%%: mean round trip %.3f ms, of which the client thread waited for a "
            "CPU %.3f ms; all requests: mean client wait %.1f us\n",
            tail_us / tail_n / 1e3, tail_wait / tail_n / 1e3,
            all_wait / static_cast<double>(v.size()));
      }
      if (tail_n > 0) {
        // Which requests the slowest 1% are: verb and the pod's class, with
        // the mean reply size of each kind over all requests.
        static constexpr const char* kKinds[6] = {"filter/lc",        "filter/batch",
                                                  "filter/plain",     "prioritize/lc",
                                                  "prioritize/batch", "prioritize/plain"};
        std::array<size_t, 6> tail_count{}, all_count{}, all_bytes{};
        std::array<double, 6> kind_round_trip{}, kind_handle{};
        for (size_t i = 0; i < v.size(); ++i) {
          ++all_count[v[i].kind];
          all_bytes[v[i].kind] += v[i].reply_bytes;
          kind_round_trip[v[i].kind] += v[i].us;
          kind_handle[v[i].kind] += std::max(0.0, v[i].handle_us);
          if (i >= tail_from) ++tail_count[v[i].kind];
        }
        std::printf(
            "  by kind: share of the slowest 1%%, mean reply size, mean round trip, mean "
            "handle\n");
        for (int kind = 0; kind < 6; ++kind) {
          if (all_count[kind] == 0) continue;
          const double n = static_cast<double>(all_count[kind]);
          std::printf("    %-17s %3.0f%% %6.1f KB %6.3f ms %6.3f ms\n", kKinds[kind],
                      100.0 * static_cast<double>(tail_count[kind]) / tail_n,
                      static_cast<double>(all_bytes[kind]) / n / 1e3,
                      kind_round_trip[kind] / n / 1e3, kind_handle[kind] / n / 1e3);
        }
      }
      if (tail_timed > 0) {
        // Server-Timing: where in the server the slowest 1% spent their time;
        // the rest of the round trip is outside it (the client's send and
        // read, loopback, the reply's write, the client's own wake-up).
        const double n = static_cast<double>(tail_timed);
        std::printf(
            "  slowest 1%%, server stages (mean): wake %.3f ms, receive %.3f ms, handle %.3f "
            "ms; outside the server %.3f ms | all requests: wake %.1f us, handle %.1f us\n",
            tail_wake / n / 1e3, tail_receive / n / 1e3, tail_handle / n / 1e3,
            (tail_us - tail_wake - tail_receive - tail_handle) / n / 1e3,
            all_wake / static_cast<double>(all_timed), all_handle / static_cast<double>(all_timed));
      }
    }
  }
  std::printf(
      "total reports written %d acked %d skipped %d failed streams %d; ticks skipped at the "
      "extender's request %d\n",
      static_cast<int>(counters.written.load()), static_cast<int>(counters.acked.load()),
      static_cast<int>(counters.skipped.load()), static_cast<int>(counters.failed.load()),
      static_cast<int>(counters.slowed_ticks.load()));
  std::printf("rss curve (t s, MiB):");
  for (const RssPoint& r : curve) std::printf(" %.0f:%.1f", r.t, r.rss_mib);
  std::printf("\n");
  std::fflush(stdout);

  PrintServerSide(o.http, filter.all_us.size() + prioritize.all_us.size());
  {
    // What an operator's tools and Prometheus fetch from this replica.
    const size_t colon = o.http.rfind(':');
    httplib::Client client(o.http.substr(0, colon), std::atoi(o.http.c_str() + colon + 1));
    client.set_read_timeout(120);
    for (const char* path : {"/v1/nodes", "/metrics"}) {
      const auto t0 = std::chrono::steady_clock::now();
      httplib::Result r = client.Get(path);
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      std::printf("GET %s: %zu bytes (%.0f per node) in %.1f ms\n", path,
                  r ? r->body.size() : size_t{0},
                  r ? static_cast<double>(r->body.size()) / o.nodes : 0.0, ms);
      // How the ingest kept up: reports late at ingest, the interval asked of the agents.
      for (const char* family : {"neighborly_ingest_late_reports_total ",
                                 "neighborly_ingest_reports_total{result=\"accepted\"} ",
                                 "neighborly_ingest_requested_interval_seconds "}) {
        const size_t at = r ? r->body.find(std::string("\n") + family) : std::string::npos;
        if (at == std::string::npos) continue;
        const size_t line_end = r->body.find('\n', at + 1);
        std::printf("  %s\n", r->body.substr(at + 1, line_end - at - 1).c_str());
      }
    }
  }

  for (auto& s : streams) s->Cancel();
  const absl::Time cancel_deadline = absl::Now() + absl::Seconds(10);
  while (counters.open.load() > 0 && absl::Now() < cancel_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int rc = 0;
  if (own_extender) {
    const absl::Time term = absl::Now();
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::printf("extender exited %d %.2f s after SIGTERM\n",
                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                absl::ToDoubleSeconds(absl::Now() - term));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
    std::error_code ec;
    if (!o.state_file.empty()) {
      const uintmax_t bytes = std::filesystem::file_size(o.state_file, ec);
      std::printf("state file %s: %ju bytes (%.0f per node)\n", o.state_file.c_str(),
                  ec ? uintmax_t{0} : bytes, ec ? 0.0 : static_cast<double>(bytes) / o.nodes);
    }
  }
  if (counters.open.load() > 0) {
    // Streams that never finished cancelling: leave without destroying them.
    std::fflush(stdout);
    ::_exit(rc);
  }
  return rc;
}

}  // namespace
}  // namespace neighborly::bench

int main(int argc, char** argv) { return neighborly::bench::Run(argc, argv); }
