// neighborly-extender's configuration: a YAML file (every key in
// docs/configuration.md; unknown keys are errors naming the key and its line)
// plus command-line overrides.
//
//   absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv);
//   absl::StatusOr<ExtenderConfig> config = LoadExtenderConfig(*cl);
//   // bad flag or config: print config.status().message() on one line, exit 2
#ifndef NEIGHBORLY_EXTENDER_SRC_CONFIG_EXTENDER_CONFIG_H_
#define NEIGHBORLY_EXTENDER_SRC_CONFIG_EXTENDER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "extender/src/http/http_server_options.h"
#include "extender/src/model/model_config.h"

namespace neighborly::extender {

struct ExtenderConfig {
  // http: kube-scheduler verbs and the operator API.
  std::string http_address = "0.0.0.0:8888";
  // http.*: limits, timeouts, workers and TLS (host and port come from http_address).
  HttpServerOptions http;
  // operator: a second HTTP(S) port serving /metrics, /healthz, /readyz and
  // the operator API (bearer tokens from operator.tokenFile) to clients without
  // the scheduler's client certificate: Prometheus, probes, neighborlyctl.
  // Empty address: no operator port. operator_http carries its TLS files (no
  // client CA) and shares the limits of `http`.
  std::string operator_address;
  HttpServerOptions operator_http;
  std::string operator_token_file;
  absl::Duration operator_token_reload_interval = absl::Seconds(10);
  // placement: the placement service (neighborly.placement.v1) for the
  // scheduler framework plugin, on its own gRPC port. Empty address: off.
  // Mutual TLS (client certificates required) or, explicitly, plaintext;
  // requests are bounded by http.maxNamesPerRequest and http.bodyLimitBytes.
  std::string placement_address;
  std::string placement_tls_ca_file;
  std::string placement_tls_cert_file;
  std::string placement_tls_key_file;
  absl::Duration placement_tls_reload_interval = absl::Seconds(10);
  // placement.tls.allowedClientNames: the scheduler's names (URI SAN, DNS SAN
  // or subject CN); empty: any certificate the CA signed (a warning at start).
  std::vector<std::string> placement_tls_allowed_client_names;
  bool placement_insecure_plaintext = false;
  // Threads that answer placement calls at most.
  int placement_max_threads = 64;
  // grpc: telemetry ingest from the agents.
  std::string grpc_address = "0.0.0.0:9090";
  // grpc.tls: (mutual) TLS for the agents' streams. Without it the extender
  // starts only with grpc_insecure_plaintext (CheckTransportSecurity).
  std::string grpc_tls_ca_file;
  std::string grpc_tls_cert_file;
  std::string grpc_tls_key_file;
  bool grpc_tls_require_client_cert = true;
  absl::Duration grpc_tls_reload_interval = absl::Seconds(10);
  // grpc.tls.allowedClientNames: the agents' names; empty: any certificate
  // the CA signed.
  std::vector<std::string> grpc_tls_allowed_client_names;
  bool grpc_insecure_plaintext = false;
  // Limits per stream (docs/security.md).
  int64_t grpc_max_report_bytes = 8 << 20;
  double grpc_max_reports_per_second = 5;
  // Agent streams open at once on this extender (one per node; a node's new
  // stream supersedes its old one).
  int64_t grpc_max_streams = 50'000;
  double grpc_report_burst = 10;
  // grpc.adaptiveInterval: ask the agents for a longer interval while more
  // than 10 % of the reports are older than maxLag when ingested
  // (extender/src/ingest/ingest_pacer.h).
  bool grpc_adaptive_interval = true;
  absl::Duration grpc_adaptive_max_lag = absl::Seconds(1);
  absl::Duration grpc_adaptive_max_interval = absl::Seconds(30);
  // grpc.ingestScheduling: "idle" (SCHED_IDLE) or "nice" (nice +10 only).
  bool grpc_idle_ingest_threads = true;
  // grpc.identity: bind each stream to the node of the agent's ServiceAccount
  // token. Enabled when issuer is set.
  std::string identity_issuer;
  std::string identity_audience = "neighborly";
  std::string identity_jwks_file;
  std::vector<std::string> identity_public_key_files;
  std::vector<std::string> identity_allowed_subjects;
  absl::Duration identity_leeway = absl::Seconds(30);
  absl::Duration identity_max_token_lifetime = absl::Hours(48);
  // How often the key files are checked for changes (rotated issuer keys).
  absl::Duration identity_reload_interval = absl::Seconds(10);
  // http.evaluationThreads: threads (the request's own included) that evaluate
  // a request of 1,024 names or more. 0: auto, min(4, the CPUs usable).
  int evaluation_threads = 0;
  // http.reuseDecisions: a node's decision is reused for the next pod of the
  // same shape while the node's snapshot and bookings are unchanged.
  bool reuse_decisions = true;
  // state: learned knowledge that survives restarts. Empty file: not persisted.
  std::string state_file;
  absl::Duration state_save_interval = absl::Seconds(60);
  int64_t state_max_pods = 200'000;  // pod UIDs remembered; least recently seen forgotten
  // At most this many of them taught by one node's reports (docs/security.md).
  int64_t state_max_pods_per_node = 4096;
  // In-flight bookings kept, in all and per node (state/booking_ledger.h).
  int64_t state_max_bookings = 65'536;
  int64_t state_max_bookings_per_node = 1024;
  // Learn pod classes and hints from /filter and /prioritize requests even when
  // the HTTP port does not require client certificates (anyone who can reach
  // it could teach). Off: only with http.tls.clientCaFile.
  bool state_learn_from_unauthenticated_scheduler = false;
  int64_t state_max_workloads = 10'000;  // workload profiles kept; least recently used dropped
  // Nodes the cluster state holds (a report from one more is refused); sized
  // at start (docs/operations.md, "Sizing").
  int64_t state_max_nodes = 50'000;
  // readiness: /readyz answers 200 once the replica has heard from the agents
  // (docs/operations.md, "When a replica is ready"). With a state file that
  // knew N nodes: once ceil(known_node_share * N) of them reported since
  // start, or after max_wait; without: report_interval + grace after start.
  absl::Duration readiness_report_interval = absl::Seconds(1);  // the agents' --interval
  absl::Duration readiness_grace = absl::Seconds(6);  // their reconnect backoff (5 s) + re-resolve
  double readiness_known_node_share = 0.9;
  absl::Duration readiness_max_wait = absl::Seconds(60);
  // metrics.perNodeSeries: /metrics carries the neighborly_node_* gauges
  // (about 11 series per node, on every replica); off: only the
  // neighborly_fleet_* aggregates (docs/metrics.md).
  bool metrics_per_node_series = true;
  // attribution: who is hurting whom (issue 26; docs/operations.md "Who is
  // hurting whom"); main.cc maps these onto InterferenceOptions, whose
  // defaults they repeat.
  int64_t attribution_history_windows = 30;
  int64_t attribution_recent_windows = 5;
  int64_t attribution_victim_windows = 3;
  double attribution_sigma = 2.0;
  double attribution_min_relative_spread = 0.05;
  int64_t attribution_min_correlation_windows = 6;
  double attribution_min_correlation = 0.5;
  double attribution_min_score = 0.3;
  int64_t attribution_min_baseline_samples = 5;
  int64_t attribution_repeat_antagonist_count = 3;
  absl::Duration attribution_observe_interval = absl::Milliseconds(500);
  // rebalance: the advice of GET /v1/rebalance (RebalanceOptions).
  int64_t rebalance_min_persisting_windows = 10;
  int64_t rebalance_max_moves = 5;
  // allocation: the cache/bandwidth caps every ack carries to the agents
  // (telemetry AllocationPolicy), which apply them only with
  // --resctrl-allocation and where the node has CAT/MBA. Off by default.
  bool allocation_enabled = false;
  // allocation.batch: batch pods beside latency-critical ones get this share
  // of the L3 ways (0: no cache cap) and this MBA cap, in percent (Intel, AMD,
  // MPAM; 0: none) or MB/s where a node runs the MBA Software Controller
  // (mba_MBps; 0: none there).
  double allocation_batch_l3_ways_fraction = 0.5;
  int64_t allocation_batch_mba_percent = 50;
  int64_t allocation_batch_mba_mbps = 0;
  // log
  std::string log_level = "info";
  // model: the contention model's parameters (docs/scoring.md).
  ModelConfig model;
};

// Parses YAML text; `source_name` names it in errors ("extender.yaml"). Keys
// not given keep their defaults; merge keys ("<<: *defaults") work as in any
// YAML file read through common/yaml_fields.h.
absl::StatusOr<ExtenderConfig> ParseExtenderConfig(std::string_view text,
                                                   std::string_view source_name);

struct CommandLine {
  std::string config_file;  // empty: defaults only
  std::optional<std::string> http_address;
  std::optional<std::string> grpc_address;
  std::optional<std::string> operator_address;
  std::optional<std::string> placement_address;
  std::optional<std::string> log_level;
  bool grpc_insecure_plaintext = false;       // --grpc-insecure-plaintext
  bool placement_insecure_plaintext = false;  // --placement-insecure-plaintext
  bool help = false;
  bool version = false;
};

// --config FILE, --http-address HOST:PORT, --grpc-address HOST:PORT, --operator-address HOST:PORT,
// --placement-address HOST:PORT, --log-level LEVEL, --grpc-insecure-plaintext,
// --placement-insecure-plaintext, --help, --version; "--flag value" or "--flag=value".
absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv);

// Reads the file (if any), applies the flag overrides, validates the result.
absl::StatusOr<ExtenderConfig> LoadExtenderConfig(const CommandLine& command_line);

// Checks values that depend on each other or on formats (addresses, log level,
// TLS files given in pairs, identity settings complete).
absl::Status ValidateExtenderConfig(const ExtenderConfig& config);

// The telemetry port is either TLS (grpc.tls) or explicitly plaintext
// (grpc.insecurePlaintext / --grpc-insecure-plaintext); never plaintext by
// omission. The same for the placement port when it is on (placement.tls /
// placement.insecurePlaintext). main refuses to start otherwise.
absl::Status CheckTransportSecurity(const ExtenderConfig& config);

std::string ExtenderUsage();

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_CONFIG_EXTENDER_CONFIG_H_
