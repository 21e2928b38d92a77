// neighborly-agent: measures a node (or simulates a fleet from a scenario file)
// and streams one NodeReport per window to every extender address.
//
//   neighborly-agent --node-name worker-1 --extender extender:9090
//   neighborly-agent --once --output json --host-root /host
//   neighborly-agent --simulate deploy/examples/content-platform.yaml --extender 127.0.0.1:9090
//   neighborly-agent --simulate FILE --once --output json
//   neighborly-agent --calibrate --host-root /host     (peak bandwidth only, then exit)
//
// Exit codes: 0 done (or stopped by SIGTERM/SIGINT), 1 runtime failure, 2 bad
// flags or bad scenario (one line on stderr naming the problem).
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/host_port.h"
#include "common/logging.h"
#include "common/process_metrics.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "google/protobuf/util/json_util.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/host/host_agent.h"
#include "node-agent/src/membw/peak_membw.h"
#include "node-agent/src/report/agent_metrics.h"
#include "node-agent/src/report/channel_security.h"
#include "node-agent/src/report/metrics.h"
#include "node-agent/src/report/address_resolver.h"
#include "node-agent/src/report/publisher.h"
#include "node-agent/src/report/replica_directory.h"
#include "node-agent/src/simulate/fleet.h"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"
#include "node-agent/src/sys/limits.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
constexpr uint64_t kWantedOpenFiles = 1 << 20;

constexpr char kUsage[] = R"(Usage: neighborly-agent [flags]

Measures this node's L3 cache, memory bandwidth and NUMA placement per pod and
streams one NodeReport per window to the Neighborly extender(s). With
--simulate, streams every node of a scenario file instead (docs/simulation.md).

  --node-name NAME          node to report as (default: the host's name; with
                            --simulate: only this node of the scenario)
  --extender HOST:PORT      extender telemetry address; repeat or comma-separate
                            for several (required unless --once). A name is
                            resolved to all its addresses (a headless Service:
                            one per replica) and each gets its own stream
  --extender-resolve-interval DURATION  how often the names of --extender are
                            resolved again (default 10s; also soon after a
                            stream fails)
  --interval DURATION       sampling window, e.g. 1s, 500ms (default 1s)
  --once                    measure one window, print it and exit
  --output json             format for --once (the protobuf JSON mapping, one
                            report per line)
  --host-root DIR           where the host's sys/, proc/ and var/lib/kubelet/
                            are mounted (default /)
  --simulate FILE           stream the nodes of a scenario file (YAML or JSON)
  --metrics-address HOST:PORT  Prometheus /metrics and /healthz (default
                            0.0.0.0:9101; empty to disable)
  --rdt-backend resctrl|pqos|none  how to read Intel RDT (default resctrl)
  --resctrl-allocation      cap batch pods' L3 ways (CAT) and memory bandwidth
                            (MBA) where they share an L3 domain or NUMA node
                            with latency-critical pods, as the extender's
                            policy says (off by default; needs --rdt-backend
                            resctrl or none). Groups left by an earlier agent
                            are removed either way
  --cri-socket PATH         container runtime socket under --host-root; repeat
                            or comma-separate to try several (default:
                            /run/containerd/containerd.sock, then CRI-O's)
  --pod-label-keys K1,K2    pod labels to report (default workload-type,app;
                            annotations: every neighborly.io/ key)
  --tls-ca FILE             CA that signed the extender's certificate (PEM);
                            streaming needs TLS or --insecure-plaintext
  --tls-cert FILE           this agent's client certificate (PEM; mutual TLS)
  --tls-key FILE            its private key (PEM); all three files are re-read
                            when they change
  --tls-server-name NAME    name the extender's certificate must carry (default:
                            the host of --extender)
  --insecure-plaintext      stream without TLS (loopback tests and demos only;
                            logs a warning)
  --identity-token-file FILE  projected ServiceAccount token (audience
                            neighborly) proving this node's identity; re-read
                            for every connection
  --peak-membw-bytes-per-second SPEC  the operator's peak memory bandwidth per
                            NUMA node, which wins over measuring: 200G (every
                            node), 0=200G,1=180G, or 150G,1=180G
  --peak-membw-measure auto|cached|off  measure the nodes without an override
                            at start (auto, default; the result is cached per
                            boot), only use this boot's cached result (cached),
                            or never (off); then SMBIOS, then the extender's
                            default
  --peak-membw-measure-seconds DURATION  bound per NUMA node (default 2s)
  --peak-membw-measure-max-bytes QUANTITY  largest working set (three arrays)
                            per NUMA node (default 1Gi; wanted: 12x its L3)
  --peak-membw-cache PATH   the cache file, under --host-root (default
                            /var/lib/neighborly/peak-membw.json)
  --calibrate               decide the peak bandwidth (measuring if needed,
                            writing the cache), print it as JSON and exit; for
                            an init container
  --log-level LEVEL         trace|debug|info|warn|error|off (default info)
  --help                    this text
  --version                 the version
)";

struct Flags {
  std::string node_name;
  std::vector<std::string> extenders;
  absl::Duration resolve_interval = absl::Seconds(10);
  absl::Duration interval = absl::Seconds(1);
  bool once = false;
  std::string output;
  std::string host_root = "/";
  std::string simulate;
  std::string metrics_address = "0.0.0.0:9101";
  std::string rdt_backend = "resctrl";
  bool resctrl_allocation = false;
  std::vector<std::string> cri_sockets;
  std::optional<std::vector<std::string>> pod_label_keys;
  std::string log_level = "info";
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  bool insecure_plaintext = false;
  std::string identity_token_file;
  PeakMembwOptions peak_membw;
  bool calibrate = false;
  bool help = false;
  bool version = false;
};

absl::Status Usage(std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Av(message), " (see --help)"));
}

absl::Status SetValue(Flags& flags, std::string_view name, const std::string& value) {
  if (name == "node-name") {
    flags.node_name = value;
  } else if (name == "extender") {
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      const std::string_view address = Trim(Sv(part));
      absl::StatusOr<HostPort> parsed = ParseHostPort(address);
      if (address.empty() || !parsed.ok() || parsed->port == 0) {
        return Usage(absl::StrCat("--extender \"", value, "\": \"", Av(address),
                                  "\" is not HOST:PORT with a non-zero port"));
      }
      flags.extenders.emplace_back(address);
    }
  } else if (name == "extender-resolve-interval") {
    absl::Duration d;
    if (!absl::ParseDuration(value, &d) || d < absl::Milliseconds(100) || d > absl::Hours(1)) {
      return Usage(absl::StrCat("--extender-resolve-interval \"", value,
                                "\" is not a duration between 100ms and 1h (e.g. 10s)"));
    }
    flags.resolve_interval = d;
  } else if (name == "interval") {
    absl::Duration d;
    if (!absl::ParseDuration(value, &d) || d < absl::Milliseconds(10) || d > absl::Hours(1)) {
      return Usage(absl::StrCat("--interval \"", value,
                                "\" is not a duration between 10ms and 1h (e.g. 1s, 500ms)"));
    }
    flags.interval = d;
  } else if (name == "output") {
    if (value != "json") return Usage(absl::StrCat("--output \"", value, "\": only json exists"));
    flags.output = value;
  } else if (name == "host-root") {
    if (value.empty()) return Usage("--host-root is empty");
    flags.host_root = value;
  } else if (name == "simulate") {
    if (value.empty()) return Usage("--simulate needs a scenario file");
    flags.simulate = value;
  } else if (name == "metrics-address") {
    if (!value.empty() && !ParseHostPort(value).ok()) {
      return Usage(absl::StrCat("--metrics-address \"", value, "\" is not HOST:PORT"));
    }
    flags.metrics_address = value;
  } else if (name == "rdt-backend") {
    if (value != "resctrl" && value != "pqos" && value != "none") {
      return Usage(absl::StrCat("--rdt-backend \"", value, "\" is not resctrl, pqos or none"));
    }
    flags.rdt_backend = value;
  } else if (name == "cri-socket") {
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      const std::string_view path = Trim(Sv(part));
      if (!path.starts_with('/')) {
        return Usage(absl::StrCat("--cri-socket \"", value, "\": \"", Av(path),
                                  "\" is not an absolute path (it is taken under --host-root)"));
      }
      flags.cri_sockets.emplace_back(path);
    }
  } else if (name == "pod-label-keys") {
    std::vector<std::string> keys;
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      const std::string_view key = Trim(Sv(part));
      if (key.empty())
        return Usage(absl::StrCat("--pod-label-keys \"", value, "\" has an empty key"));
      keys.emplace_back(key);
    }
    flags.pod_label_keys = std::move(keys);
  } else if (name == "peak-membw-bytes-per-second") {
    absl::StatusOr<PeakOverride> peak = ParsePeakOverride(value);
    if (!peak.ok()) {
      return Usage(absl::StrCat("--peak-membw-bytes-per-second: ", peak.status().message()));
    }
    flags.peak_membw.override_peak = *peak;
  } else if (name == "peak-membw-measure") {
    absl::StatusOr<MeasureMode> mode = ParseMeasureMode(value);
    if (!mode.ok()) return Usage(absl::StrCat("--peak-membw-measure ", mode.status().message()));
    flags.peak_membw.measure = *mode;
  } else if (name == "peak-membw-measure-seconds") {
    absl::Duration d;
    if (!absl::ParseDuration(value, &d) || d < absl::Milliseconds(100) || d > absl::Seconds(30)) {
      return Usage(absl::StrCat("--peak-membw-measure-seconds \"", value,
                                "\" is not a duration between 100ms and 30s"));
    }
    flags.peak_membw.budget_per_node = d;
  } else if (name == "peak-membw-measure-max-bytes") {
    absl::StatusOr<int64_t> bytes = ParseByteQuantity(value);
    if (!bytes.ok() || *bytes < (16 << 20) || *bytes > (int64_t{64} << 30)) {
      return Usage(absl::StrCat("--peak-membw-measure-max-bytes \"", value,
                                "\" is not a size between 16Mi and 64Gi"));
    }
    flags.peak_membw.max_working_set_bytes = static_cast<uint64_t>(*bytes);
  } else if (name == "peak-membw-cache") {
    if (!value.starts_with('/')) {
      return Usage(absl::StrCat("--peak-membw-cache \"", value,
                                "\" is not an absolute path (it is taken under --host-root)"));
    }
    flags.peak_membw.cache_path = value;
  } else if (name == "log-level") {
    flags.log_level = value;
  } else if (name == "tls-ca" || name == "tls-cert" || name == "tls-key" ||
             name == "identity-token-file" || name == "tls-server-name") {
    if (value.empty()) return Usage(absl::StrCat("--", Av(name), " is empty"));
    std::string& target = name == "tls-ca"            ? flags.tls_ca
                          : name == "tls-cert"        ? flags.tls_cert
                          : name == "tls-key"         ? flags.tls_key
                          : name == "tls-server-name" ? flags.tls_server_name
                                                      : flags.identity_token_file;
    target = value;
  } else {
    return Usage(absl::StrCat("unknown flag --", Av(name)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (!arg.starts_with("--") || arg.size() == 2) {
      return Usage(absl::StrCat("unexpected argument \"", Av(arg), "\""));
    }
    arg.remove_prefix(2);
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string_view::npos) value = std::string(arg.substr(eq + 1));

    bool* boolean = name == "once"                 ? &flags.once
                    : name == "help"               ? &flags.help
                    : name == "version"            ? &flags.version
                    : name == "insecure-plaintext" ? &flags.insecure_plaintext
                    : name == "calibrate"          ? &flags.calibrate
                    : name == "resctrl-allocation" ? &flags.resctrl_allocation
                                                   : nullptr;
    if (boolean != nullptr) {
      if (value && *value != "true" && *value != "false") {
        return Usage(absl::StrCat("--", Av(name), " takes no value, got \"", *value, "\""));
      }
      *boolean = !value || *value == "true";
      continue;
    }
    constexpr std::string_view kValueFlags[] = {"node-name",
                                                "extender",
                                                "extender-resolve-interval",
                                                "interval",
                                                "output",
                                                "host-root",
                                                "simulate",
                                                "metrics-address",
                                                "rdt-backend",
                                                "cri-socket",
                                                "pod-label-keys",
                                                "log-level",
                                                "tls-ca",
                                                "tls-cert",
                                                "tls-key",
                                                "tls-server-name",
                                                "identity-token-file",
                                                "peak-membw-bytes-per-second",
                                                "peak-membw-measure",
                                                "peak-membw-measure-seconds",
                                                "peak-membw-measure-max-bytes",
                                                "peak-membw-cache"};
    if (std::find(std::begin(kValueFlags), std::end(kValueFlags), name) == std::end(kValueFlags)) {
      return Usage(absl::StrCat("unknown flag --", Av(name)));
    }
    if (!value) {
      if (i + 1 >= argc) return Usage(absl::StrCat("flag --", Av(name), " needs a value"));
      value = argv[++i];
    }
    if (absl::Status s = SetValue(flags, name, *value); !s.ok()) return s;
  }
  if (flags.help || flags.version) return flags;
  if (flags.calibrate) {
    if (flags.once || !flags.extenders.empty() || !flags.simulate.empty()) {
      return Usage(
          "--calibrate decides the peak bandwidth and exits: drop --once, --extender, --simulate");
    }
    if (flags.peak_membw.measure == MeasureMode::kCached) {
      return Usage(
          "--calibrate is what writes the cache: --peak-membw-measure cached makes no sense with "
          "it");
    }
    return flags;
  }
  if (!flags.output.empty() && !flags.once) return Usage("--output needs --once");
  if (flags.resctrl_allocation && flags.rdt_backend == "pqos") {
    return Usage(
        "--resctrl-allocation moves pods between resctrl groups, which the pqos backend does not "
        "follow: use --rdt-backend resctrl (or none)");
  }
  if (flags.once && !flags.extenders.empty()) {
    return Usage("--once prints one report and exits; it does not stream, so drop --extender");
  }
  if (!flags.once && flags.extenders.empty()) {
    return Usage("--extender HOST:PORT is required unless --once is given");
  }
  const bool tls = !flags.tls_ca.empty() || !flags.tls_cert.empty() || !flags.tls_key.empty();
  if (tls && flags.insecure_plaintext) {
    return Usage("--insecure-plaintext contradicts --tls-ca/--tls-cert/--tls-key");
  }
  if (!flags.once && !tls && !flags.insecure_plaintext) {
    return Usage(
        "streaming needs TLS (--tls-ca, and --tls-cert/--tls-key for mutual TLS) or an explicit "
        "--insecure-plaintext");
  }
  if (tls && flags.tls_ca.empty()) return Usage("--tls-cert/--tls-key need --tls-ca");
  return flags;
}

// What every stream shares: TLS credentials (files checked now), the extender's
// certificate name, the identity token file.
absl::StatusOr<ReportStreamOptions> StreamOptions(const Flags& flags) {
  ReportStreamOptions options;
  if (!flags.identity_token_file.empty()) {
    // Checked now so that a wrong path is one clear line at start; re-read per connection.
    if (absl::StatusOr<std::string> token = ReadIdentityToken(flags.identity_token_file);
        !token.ok()) {
      return token.status();
    }
    options.identity_token_file = flags.identity_token_file;
  }
  if (flags.insecure_plaintext) {
    spdlog::warn(
        "--insecure-plaintext: telemetry goes to the extender unencrypted and unauthenticated; "
        "anyone on the network path can read or forge it");
    return options;
  }
  absl::StatusOr<ClientTls> tls = MakeChannelCredentials({.ca_file = flags.tls_ca,
                                                          .cert_file = flags.tls_cert,
                                                          .key_file = flags.tls_key,
                                                          .on_reload = {}});
  if (!tls.ok()) return tls.status();
  options.credentials = tls->credentials;
  options.tls_files = tls->files;
  options.server_name = flags.tls_server_name;
  return options;
}

// The replicas behind --extender, resolved once now and then in the background.
absl::StatusOr<std::shared_ptr<ReplicaDirectory>> StartDirectory(const Flags& flags) {
  absl::StatusOr<std::unique_ptr<ReplicaDirectory>> directory = ReplicaDirectory::Create(
      {.targets = flags.extenders,
       .resolve_interval = flags.resolve_interval,
       .min_resolve_gap = std::min(absl::Seconds(1), flags.resolve_interval)},
      std::make_unique<SystemResolver>());
  if (!directory.ok()) return directory.status();
  std::shared_ptr<ReplicaDirectory> shared = std::move(*directory);
  shared->Start();
  return shared;
}

// /metrics families of the publishers' streams and of the directory.
std::function<void(PrometheusWriter&)> StreamFamilies(
    const std::vector<std::unique_ptr<ReportPublisher>>* publishers,
    const ReplicaDirectory* directory) {
  return [publishers, directory](PrometheusWriter& page) {
    std::vector<StreamView> views;
    for (const auto& publisher : *publishers) publisher->AppendViews(views);
    AppendStreamMetrics(views, page);
    AppendReplicaMetrics(*directory, page);
  };
}

// The protobuf JSON mapping (lowerCamelCase keys, 64-bit integers as strings),
// one report per line.
int PrintJson(const tv1::NodeReport& report) {
  std::string json;
  const google::protobuf::util::Status status =
      google::protobuf::util::MessageToJsonString(report, &json);
  if (!status.ok()) {
    std::cerr << "neighborly-agent: cannot encode report as JSON: " << status.message() << "\n";
    return kExitRuntime;
  }
  std::cout << json << "\n";
  return 0;
}

// Blocks SIGINT/SIGTERM in every thread and turns them into `stop`. Call before
// starting any thread.
class SignalWaiter {
 public:
  SignalWaiter() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] {
      int signal = 0;
      sigwait(&set_, &signal);
      spdlog::info("received signal {}; stopping", signal);
      stop_.Notify();
    });
  }
  ~SignalWaiter() {
    if (!stop_.HasBeenNotified()) pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
  absl::Notification& stop() { return stop_; }

 private:
  sigset_t set_;
  absl::Notification stop_;
  std::thread thread_;
};

// /metrics and /healthz on --metrics-address, for as long as it lives. A port
// that cannot be bound is logged and skipped: telemetry matters more.
class MetricsServer {
 public:
  // `append_streams` adds the streams' and replicas' families (it runs on the
  // server's thread while streams come and go).
  MetricsServer(const std::string& address,
                std::function<void(PrometheusWriter&)> append_streams,
                const AgentMetrics* agent = nullptr)
      : append_streams_(std::move(append_streams)), agent_(agent) {
    if (address.empty()) return;
    const absl::StatusOr<HostPort> hp = ParseHostPort(address);
    if (!hp.ok()) return;
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      PrometheusWriter page;
      append_streams_(page);
      if (agent_ != nullptr) agent_->AppendTo(page);
      AppendBuildInfo("neighborly_agent", NEIGHBORLY_VERSION, page);
      AppendProcessMetrics(ReadSelfProcess(), page);
      for (const std::string& problem : page.problems()) spdlog::error("/metrics: {}", problem);
      res.set_content(page.Render(), "text/plain; version=0.0.4; charset=utf-8");
    });
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    const int port = hp->port == 0 ? server_.bind_to_any_port(hp->host)
                                   : (server_.bind_to_port(hp->host, hp->port) ? hp->port : -1);
    if (port <= 0) {
      spdlog::warn("metrics disabled: cannot listen on {}", address);
      return;
    }
    spdlog::info("metrics on http://{}:{}/metrics", hp->host, port);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~MetricsServer() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }

 private:
  std::function<void(PrometheusWriter&)> append_streams_;
  const AgentMetrics* agent_;
  httplib::Server server_;
  std::thread thread_;
};

int RunSimulation(const Flags& flags) {
  absl::StatusOr<Scenario> scenario = LoadScenarioFile(flags.simulate);
  if (!scenario.ok()) {
    std::cerr << "neighborly-agent: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<SimulatedNode> nodes;
  const std::string boot_id = NewBootId();
  for (size_t i = 0; i < scenario->nodes.size(); ++i) {
    tv1::NodeReport& node = scenario->nodes[i];
    if (!flags.node_name.empty() && node.node_name() != flags.node_name) continue;
    nodes.emplace_back(std::move(node), boot_id, std::move(scenario->timelines[i]));
  }
  if (nodes.empty()) {
    std::cerr << "neighborly-agent: node \"" << flags.node_name << "\" is not in " << flags.simulate
              << "\n";
    return kExitUsage;
  }
  if (flags.once) {
    const absl::Time now = absl::Now();
    for (SimulatedNode& node : nodes) {
      if (int rc = PrintJson(node.NextReport(now - flags.interval, flags.interval)); rc != 0) {
        return rc;
      }
    }
    return 0;
  }

  absl::StatusOr<ReportStreamOptions> stream_options = StreamOptions(flags);
  if (!stream_options.ok()) {
    std::cerr << "neighborly-agent: " << stream_options.status().message() << "\n";
    return kExitUsage;
  }
  SignalWaiter signals;
  absl::StatusOr<std::shared_ptr<ReplicaDirectory>> directory = StartDirectory(flags);
  if (!directory.ok()) {
    std::cerr << "neighborly-agent: " << directory.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::unique_ptr<ReportPublisher>> publishers;
  for (const SimulatedNode& node : nodes) {
    publishers.push_back(std::make_unique<ReportPublisher>(node.name(), *directory,
                                                           *stream_options));
  }
  MetricsServer metrics(flags.metrics_address, StreamFamilies(&publishers, directory->get()));
  for (auto& publisher : publishers) publisher->Start();
  spdlog::info("simulating {} node(s) from {}, streaming to {} every {}", nodes.size(),
               flags.simulate, absl::StrJoin(flags.extenders, ","),
               absl::FormatDuration(flags.interval));
  RunFleet(nodes, publishers, flags.interval, signals.stop());
  for (auto& publisher : publishers) publisher->Stop();
  (*directory)->Stop();
  spdlog::info("stopped");
  return 0;
}

// --calibrate: the peak bandwidth step alone, printed as one JSON object.
int RunCalibrate(const HostAgentOptions& options) {
  absl::StatusOr<PeakMembwReport> peak = CalibratePeakMembw(options);
  if (!peak.ok()) {
    std::cerr << "neighborly-agent: " << peak.status().message() << "\n";
    return kExitRuntime;
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodePeak& node : peak->nodes) {
    nlohmann::json n = {
        {"numaNode", node.numa_node}, {"source", node.source}, {"detail", node.detail}};
    if (node.bytes_per_second) n["peakMembwBytesPerSecond"] = *node.bytes_per_second;
    nodes.push_back(std::move(n));
  }
  nlohmann::json out = {{"numaNodes", std::move(nodes)},
                        {"calibrated", peak->calibrated},
                        {"measuredNow", peak->measured_now},
                        {"cache", options.peak_membw.cache_path}};
  if (!peak->calibrated) out["reason"] = peak->reason;
  std::cout << out.dump() << "\n";
  return 0;
}

// Host mode: measures this machine through HostAgent (node-agent/src/host).
int RunHost(const Flags& flags) {
  HostAgentOptions options{.host_root = flags.host_root,
                           .node_name = flags.node_name,
                           .rdt_backend = flags.rdt_backend,
                           .cri_sockets = flags.cri_sockets,
                           .pod_label_keys = {"workload-type", "app"},
                           .peak_membw = flags.peak_membw,
                           .resctrl_allocation = flags.resctrl_allocation};
  if (flags.pod_label_keys) options.pod_label_keys = *flags.pod_label_keys;
  if (flags.calibrate) return RunCalibrate(options);
  // perf takes one descriptor per event, CPU and pod.
  if (absl::StatusOr<uint64_t> files = RaiseOpenFileLimit(kWantedOpenFiles); !files.ok()) {
    spdlog::warn("{}", std::string(files.status().message()));
  } else {
    spdlog::debug("RLIMIT_NOFILE {}", *files);
  }
  absl::StatusOr<ReportStreamOptions> stream_options;
  if (!flags.once) {
    stream_options = StreamOptions(flags);
    if (!stream_options.ok()) {
      std::cerr << "neighborly-agent: " << stream_options.status().message() << "\n";
      return kExitUsage;
    }
  }
  absl::StatusOr<std::unique_ptr<HostAgent>> agent = HostAgent::Create(options);
  if (!agent.ok()) {
    std::cerr << "neighborly-agent: " << agent.status().message() << "\n";
    return kExitRuntime;
  }
  if (flags.once) {
    absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(flags.interval);
    if (!report.ok()) {
      std::cerr << "neighborly-agent: " << report.status().message() << "\n";
      return kExitRuntime;
    }
    return PrintJson(*report);
  }
  SignalWaiter signals;
  absl::StatusOr<std::shared_ptr<ReplicaDirectory>> directory = StartDirectory(flags);
  if (!directory.ok()) {
    std::cerr << "neighborly-agent: " << directory.status().message() << "\n";
    return kExitUsage;
  }
  // One publisher, made with the first report (it names the node); a vector
  // for StreamFamilies.
  std::vector<std::unique_ptr<ReportPublisher>> publishers;
  std::unique_ptr<MetricsServer> metrics;
  AgentMetrics agent_metrics;
  std::string last_error;
  while (!signals.stop().HasBeenNotified()) {
    const absl::Duration window =
        publishers.empty() ? flags.interval : publishers.front()->Interval(flags.interval);
    (*agent)->SetAllocationPolicy(publishers.empty() ? std::nullopt
                                                     : publishers.front()->AllocationPolicy());
    absl::StatusOr<tv1::NodeReport> report = (*agent)->MeasureWindow(window);
    if (!report.ok()) {
      agent_metrics.RecordFailure();
      if (std::string(report.status().message()) != last_error) {
        last_error = std::string(report.status().message());
        spdlog::error("measurement failed: {}", last_error);
      }
      continue;
    }
    if (publishers.empty()) {
      publishers.push_back(
          std::make_unique<ReportPublisher>(report->node_name(), *directory, *stream_options));
      metrics = std::make_unique<MetricsServer>(
          flags.metrics_address, StreamFamilies(&publishers, directory->get()), &agent_metrics);
      publishers.front()->Start();
    }
    agent_metrics.RecordWindow(*report, (*agent)->last_sample_cost());
    publishers.front()->Publish(*report);
  }
  metrics.reset();
  for (auto& publisher : publishers) publisher->Stop();
  (*directory)->Stop();
  return 0;
}

int Main(int argc, char** argv) {
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "neighborly-agent: " << flags.status().message() << "\n";
    return kExitUsage;
  }
  if (flags->help) {
    std::cout << kUsage;
    return 0;
  }
  if (flags->version) {
    std::cout << "neighborly-agent " << NEIGHBORLY_VERSION << "\n";
    return 0;
  }
  if (absl::Status s = SetupLogging(flags->log_level, "neighborly-agent"); !s.ok()) {
    std::cerr << "neighborly-agent: --log-level: " << s.message() << "\n";
    return kExitUsage;
  }
  return flags->simulate.empty() ? RunHost(*flags) : RunSimulation(*flags);
}

}  // namespace
}  // namespace neighborly::agent

int main(int argc, char** argv) { return neighborly::agent::Main(argc, argv); }
