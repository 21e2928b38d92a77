// neighborly-extender: wiring only. Config and flags -> logging -> ExtenderCore
// (learned state loaded) -> gRPC telemetry ingest -> gRPC placement service
// (when placement.address is set) -> HTTP (scheduler verbs and operator API).
// Prints "listening http=HOST:PORT grpc=HOST:PORT" (plus " operator=..." and
// " placement=..." when those ports are on; stdout and stderr) once all accept. SIGTERM/SIGINT:
// stop accepting, finish in-flight requests, save state, exit 0. Bad flags or config: one line on
// stderr, exit 2.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/logging.h"
#include "common/memory_release.h"
#include "common/process_metrics.h"
#include "common/strings.h"
#include "extender/src/api/core_operator_source.h"
#include "extender/src/api/interference_observer.h"
#include "extender/src/api/operator_api.h"
#include "extender/src/api/operator_auth.h"
#include "extender/src/api/readiness.h"
#include "extender/src/config/extender_config.h"
#include "extender/src/core/evaluation_pool.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/http/http_server.h"
#include "extender/src/ingest/node_identity.h"
#include "extender/src/ingest/telemetry_server.h"
#include "extender/src/ingest/transport_security.h"
#include "extender/src/placement/placement_service.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

constexpr std::string_view kProgram = "neighborly-extender";

int Fail(int code, std::string_view message) {
  std::fprintf(stderr, "%s: %.*s\n", kProgram.data(), static_cast<int>(message.size()),
               message.data());
  return code;
}

// neighborly_state_save_failures_total (the NeighborlyStateSaveFailing alert).
std::atomic<uint64_t> state_save_failures{0};

void SaveState(const ExtenderCore& core, const std::string& path) {
  if (path.empty()) return;
  if (absl::Status s = core.SaveState(path); !s.ok()) {
    state_save_failures.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("saving state to {} failed: {}", path, std::string(s.message()));
  } else {
    spdlog::debug("state saved to {}", path);
  }
}

void AppendStateMetrics(const ExtenderCore& core, PrometheusWriter& page) {
  page.Counter("neighborly_state_save_failures_total",
               "Saves of the state file that failed (full disk, unwritable directory); the log "
               "says why.",
               {}, static_cast<double>(state_save_failures.load(std::memory_order_relaxed)));
  page.Counter("neighborly_ingest_foreign_pod_records_total",
               "Pod records a node reported that it may not teach about (the pod belongs to "
               "another node, or is booked on one); nothing was learned from them.",
               {}, static_cast<double>(core.foreign_pod_claims()));
  constexpr std::string_view kDroppedHelp =
      "In-flight bookings dropped, the oldest first, to stay within state.maxBookingsPerNode "
      "(reason node_full) or state.maxBookings (full); a real cluster never reaches either.";
  page.Counter("neighborly_bookings_dropped_total", kDroppedHelp, {{"reason", "node_full"}},
               static_cast<double>(core.bookings_dropped_node_full()));
  page.Counter("neighborly_bookings_dropped_total", kDroppedHelp, {{"reason", "full"}},
               static_cast<double>(core.bookings_dropped_full()));
  const ExtenderCore::ReuseStats reuse = core.reuse_stats();
  constexpr std::string_view kDecisionsHelp =
      "Candidate nodes with telemetry decided by filter and prioritize requests: evaluated, or "
      "reused from the same node's decision for a pod of the same shape while its snapshot and "
      "bookings were unchanged (http.reuseDecisions).";
  page.Counter("neighborly_extender_decisions_total", kDecisionsHelp, {{"how", "evaluated"}},
               static_cast<double>(reuse.evaluated));
  page.Counter("neighborly_extender_decisions_total", kDecisionsHelp, {{"how", "reused"}},
               static_cast<double>(reuse.reused));
  constexpr std::string_view kLeastHarmDecisionsHelp =
      "Second looks of the least-harm fallback at candidates the soft filters refused: "
      "evaluated, or reused as decisions are (http.reuseDecisions).";
  page.Counter("neighborly_extender_least_harm_decisions_total", kLeastHarmDecisionsHelp,
               {{"how", "evaluated"}}, static_cast<double>(reuse.least_harm_evaluated));
  page.Counter("neighborly_extender_least_harm_decisions_total", kLeastHarmDecisionsHelp,
               {{"how", "reused"}}, static_cast<double>(reuse.least_harm_reused));
  const ExtenderCore::VerdictRefreshStats refreshes = core.verdict_refresh_stats();
  constexpr std::string_view kRefreshesHelp =
      "Refreshes of the placement plugin's streamed verdict tables: incremental (only the nodes "
      "that changed since the last) or full (every node: a new or changed shape, a changed "
      "pinned guess, a journal overrun).";
  page.Counter("neighborly_placement_verdict_refreshes_total", kRefreshesHelp,
               {{"kind", "full"}}, static_cast<double>(refreshes.full));
  page.Counter("neighborly_placement_verdict_refreshes_total", kRefreshesHelp,
               {{"kind", "incremental"}}, static_cast<double>(refreshes.incremental));
  constexpr std::string_view kRefreshNodesHelp =
      "Nodes the verdict tables' refreshes decided (evaluated, or reused unchanged), by why: "
      "changed (the change journal listed it; every node of a full refresh), expired (its "
      "decision's telemetry aged or a booking in its fold ended), regiven (the least-harm "
      "fallback's pass moved without a change of its own).";
  for (const auto& [why, nodes] : {std::pair{"changed", refreshes.nodes_changed},
                                    std::pair{"expired", refreshes.nodes_expired},
                                    std::pair{"regiven", refreshes.nodes_regiven}}) {
    page.Counter("neighborly_placement_verdict_nodes_total", kRefreshNodesHelp, {{"why", why}},
                 static_cast<double>(nodes));
  }
  page.Counter("neighborly_placement_reports_unchanged_total",
               "Telemetry reports that changed nothing the model reads (the same residents, "
               "measurements and knowledge as the node's last, while that is fresh): published "
               "without re-evaluating the node in the verdict tables.",
               {}, static_cast<double>(refreshes.reports_unchanged));
  page.Counter("neighborly_extender_least_harm_total",
               "Filter and prioritize requests in which predicted interference refused every "
               "candidate and the least-harm fallback passed the least harmful ones "
               "(model.leastHarmFallback) instead of leaving the pod Pending.",
               {}, static_cast<double>(core.least_harm_requests()));
}

// A listener that verifies client certificates but checks no role accepts any
// certificate its CA signed: with the chart's one CA, an agent's as the
// scheduler's (docs/security.md, "Roles").
void WarnAboutUncheckedRoles(const ExtenderConfig& config) {
  auto warn = [](std::string_view listener, std::string_view role, std::string_view key) {
    spdlog::warn(
        "{} accepts any client certificate its CA signed as the {}'s: set {} to the names of "
        "the {}'s certificate (docs/security.md, \"Roles\")",
        listener, role, key, role);
  };
  if (!config.http.tls_client_ca_file.empty() && config.http.tls_allowed_client_names.empty()) {
    warn("the scheduler port", "scheduler", "http.tls.allowedClientNames");
  }
  if (!config.placement_address.empty() && !config.placement_tls_ca_file.empty() &&
      config.placement_tls_allowed_client_names.empty()) {
    warn("the placement port", "scheduler", "placement.tls.allowedClientNames");
  }
  if (!config.grpc_tls_ca_file.empty() && config.grpc_tls_require_client_cert &&
      config.grpc_tls_allowed_client_names.empty()) {
    warn("the telemetry port", "agent", "grpc.tls.allowedClientNames");
  }
}

int Run(int argc, char** argv) {
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex (gRPC's
  // among them) records lock order for deadlock detection: 0.7 % of the
  // extender's CPU in a scheduler_perf plugin round (docs/performance.md).
  // The unit tests, which link the libraries without this main, keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::StatusOr<CommandLine> command_line = ParseCommandLine(argc, argv);
  if (!command_line.ok()) return Fail(2, Sv(command_line.status().message()));
  if (command_line->help) {
    std::fputs(ExtenderUsage().c_str(), stdout);
    return 0;
  }
  if (command_line->version) {
    std::printf("%s %s\n", kProgram.data(), NEIGHBORLY_VERSION);
    return 0;
  }
  absl::StatusOr<ExtenderConfig> config = LoadExtenderConfig(*command_line);
  if (!config.ok()) return Fail(2, Sv(config.status().message()));
  if (absl::Status s = SetupLogging(config->log_level, kProgram); !s.ok()) {
    return Fail(2, Sv(s.message()));
  }
  const absl::StatusOr<HostPort> http_address = ParseHostPort(config->http_address);
  if (!http_address.ok()) return Fail(2, Sv(http_address.status().message()));
  if (absl::Status s = CheckTransportSecurity(*config); !s.ok()) return Fail(2, Sv(s.message()));
  WarnAboutUncheckedRoles(*config);

  // Transport security and identity, all checked before anything listens (docs/security.md).
  RealClock clock;
  ExtenderMetrics metrics;  // counts certificate and identity-key reloads too
  ServerTls grpc_tls;       // the telemetry port's checked certificate files
  TelemetryServer::Options telemetry_options;
  telemetry_options.address = config->grpc_address;
  telemetry_options.max_receive_message_bytes = static_cast<int>(config->grpc_max_report_bytes);
  telemetry_options.policy.max_reports_per_second = config->grpc_max_reports_per_second;
  telemetry_options.policy.max_streams = static_cast<size_t>(config->grpc_max_streams);
  telemetry_options.policy.report_burst = config->grpc_report_burst;
  telemetry_options.policy.idle_ingest_threads = config->grpc_idle_ingest_threads;
  telemetry_options.policy.pacing.enabled = config->grpc_adaptive_interval;
  telemetry_options.policy.pacing.max_lag = config->grpc_adaptive_max_lag;
  telemetry_options.policy.pacing.max_interval = config->grpc_adaptive_max_interval;
  if (config->allocation_enabled) {
    telemetry::v1::ClassAllocation* batch =
        telemetry_options.policy.allocation_policy.emplace().add_classes();
    batch->set_workload_class("batch");
    batch->set_l3_ways_fraction(config->allocation_batch_l3_ways_fraction);
    batch->set_mba_percent(static_cast<uint32_t>(config->allocation_batch_mba_percent));
    batch->set_mba_mbps(static_cast<uint32_t>(config->allocation_batch_mba_mbps));
  }
  if (config->grpc_insecure_plaintext) {
    spdlog::warn(
        "grpc.insecurePlaintext: telemetry is accepted without TLS; anyone who can reach {} can "
        "read and forge node reports",
        config->grpc_address);
  } else {
    absl::StatusOr<ServerTls> tls = MakeServerCredentials(
        {.ca_file = config->grpc_tls_ca_file,
         .cert_file = config->grpc_tls_cert_file,
         .key_file = config->grpc_tls_key_file,
         .require_client_cert = config->grpc_tls_require_client_cert,
         .reload_interval = config->grpc_tls_reload_interval,
         .on_reload = [&metrics](bool ok) { metrics.RecordTlsReload(TlsListener::kGrpc, ok); },
         .client_role = {.role = "agent",
                         .listener = "the telemetry port",
                         .config_key = "grpc.tls.allowedClientNames",
                         .allowed_names = config->grpc_tls_allowed_client_names,
                         .refusals = metrics.role_refusals(RoleListener::kGrpc)}});
    if (!tls.ok()) return Fail(2, absl::StrCat("grpc.tls: ", tls.status().message()));
    telemetry_options.credentials = tls->credentials;
    grpc_tls = std::move(*tls);
  }
  // The placement port's checked certificate files (client certificates required).
  PlacementMetrics placement_metrics;
  ServerTls placement_tls;
  if (!config->placement_address.empty() && !config->placement_insecure_plaintext) {
    absl::StatusOr<ServerTls> tls = MakeServerCredentials(
        {.ca_file = config->placement_tls_ca_file,
         .cert_file = config->placement_tls_cert_file,
         .key_file = config->placement_tls_key_file,
         .require_client_cert = true,
         .reload_interval = config->placement_tls_reload_interval,
         .on_reload = [&placement_metrics](bool ok) { placement_metrics.RecordTlsReload(ok); },
         .client_role = {.role = "scheduler",
                         .listener = "the placement port",
                         .config_key = "placement.tls.allowedClientNames",
                         .allowed_names = config->placement_tls_allowed_client_names,
                         .refusals = metrics.role_refusals(RoleListener::kPlacement)}});
    if (!tls.ok()) return Fail(2, absl::StrCat("placement.tls: ", tls.status().message()));
    placement_tls = std::move(*tls);
  } else if (!config->placement_address.empty()) {
    spdlog::warn(
        "placement.insecurePlaintext: placement calls are accepted without TLS; anyone who can "
        "reach {} can book and release in-flight pods",
        config->placement_address);
  }
  std::unique_ptr<TokenVerifier> identity;
  if (!config->identity_issuer.empty()) {
    absl::StatusOr<std::unique_ptr<TokenVerifier>> verifier = TokenVerifier::Create(
        {.issuer = config->identity_issuer,
         .audience = config->identity_audience,
         .jwks_file = config->identity_jwks_file,
         .public_key_files = config->identity_public_key_files,
         .allowed_subjects = config->identity_allowed_subjects,
         .leeway = config->identity_leeway,
         .max_lifetime = config->identity_max_token_lifetime,
         .reload_interval = config->identity_reload_interval,
         .on_reload = [&metrics](bool ok) { metrics.RecordIdentityKeyReload(ok); }},
        clock);
    if (!verifier.ok())
      return Fail(2, absl::StrCat("grpc.identity: ", verifier.status().message()));
    identity = std::move(*verifier);
    telemetry_options.policy.identity = identity.get();
    if (config->grpc_insecure_plaintext) {
      spdlog::warn("grpc.identity over plaintext: tokens can be read on the wire and replayed");
    }
    spdlog::info("node identity: streams bound to the node of their {} token ({} issuer keys)",
                 config->identity_audience, identity->key_count());
  }
  // Signals are taken synchronously by this thread (sigtimedwait below); block
  // them before any other thread exists so that every thread inherits the mask.
  // A peer that closes mid-reply must cost that connection, not the process
  // (OpenSSL writes with write(2), which raises SIGPIPE).
  signal(SIGPIPE, SIG_IGN);
  // Allocations of 1 MiB and more (request bodies, parsers, name lists of
  // large requests) get their own mappings, returned to the system when
  // freed. Setting the threshold also stops glibc from raising it after such
  // a free, which put the next large request in the heap for good (issue 15:
  // +600 MB of RSS stayed after one 54 MiB request).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  // Every connection is a descriptor (http.maxConnections on each port, as
  // many again being answered 503, gRPC streams): the soft limit is raised to
  // the hard one, as Go programs do, instead of failing at a container's 1024.
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const size_t evaluation_threads = config->evaluation_threads > 0
                                        ? static_cast<size_t>(config->evaluation_threads)
                                        : std::min<size_t>(4, EvaluationPool::UsableCpus());
  ExtenderCore core(
      config->model, clock,
      {.max_remembered_pods = static_cast<size_t>(config->state_max_pods),
       .max_workloads = static_cast<size_t>(config->state_max_workloads),
       .max_remembered_pods_per_node = static_cast<size_t>(config->state_max_pods_per_node),
       .max_bookings = static_cast<size_t>(config->state_max_bookings),
       .max_bookings_per_node = static_cast<size_t>(config->state_max_bookings_per_node),
       // Only an authenticated scheduler teaches (docs/security.md).
       .learn_from_scheduler = !config->http.tls_client_ca_file.empty() ||
                               config->state_learn_from_unauthenticated_scheduler,
       .max_nodes = static_cast<size_t>(config->state_max_nodes),
       .evaluation_threads = evaluation_threads,
       .reuse_decisions = config->reuse_decisions});
  if (config->http.tls_client_ca_file.empty() &&
      config->state_learn_from_unauthenticated_scheduler) {
    spdlog::warn(
        "state.learnFromUnauthenticatedScheduler: anyone who can reach the HTTP port can teach "
        "pod classes (set http.tls.clientCaFile instead)");
  }
  spdlog::info("requests of 1,024 names or more are evaluated by {} thread(s)", evaluation_threads);
  if (!config->state_file.empty()) {
    if (std::filesystem::exists(config->state_file)) {
      if (absl::Status s = core.LoadState(config->state_file); !s.ok()) {
        return Fail(1, absl::StrCat("cannot load state file ", config->state_file, ": ",
                                    s.message(), " (move it away to start without learned state)"));
      }
      spdlog::info("learned state loaded from {}", config->state_file);
    } else {
      spdlog::info("no state file at {} yet; starting without learned state", config->state_file);
    }
  }

  // The HTTPS files are read and checked here, once, before anything listens.
  HttpServerOptions http_options = config->http;
  http_options.host = http_address->host;
  http_options.port = http_address->port;
  HttpServer http(http_options, core, metrics);
  if (!http.tls_status().ok())
    return Fail(2, absl::StrCat("http.tls: ", http.tls_status().message()));

  absl::StatusOr<std::unique_ptr<TelemetryServer>> telemetry =
      TelemetryServer::Start(core, telemetry_options);
  if (!telemetry.ok()) return Fail(1, Sv(telemetry.status().message()));
  TelemetryServer& ingest = **telemetry;
  std::unique_ptr<PlacementServer> placement;
  if (!config->placement_address.empty()) {
    absl::StatusOr<std::unique_ptr<PlacementServer>> started = PlacementServer::Start(
        core,
        {.address = config->placement_address,
         .credentials = placement_tls.credentials,
         .max_receive_message_bytes =
             static_cast<int>(std::min<int64_t>(config->http.body_limit_bytes, INT32_MAX)),
         .max_threads = config->placement_max_threads,
         .service = {.limits = {.max_node_names =
                                    static_cast<size_t>(config->http.max_names_per_request)},
                     .learn_from_unauthenticated =
                         config->state_learn_from_unauthenticated_scheduler}},
        &placement_metrics);
    if (!started.ok()) return Fail(1, Sv(started.status().message()));
    placement = std::move(*started);
    spdlog::info(
        "placement service on {} ({})", placement->address(),
        placement_tls.credentials ? "mutual TLS, client certificates required" : "plaintext");
  }
  CoreOperatorSource source(core, [&ingest] { return ingest.stats(); });
  // Who is hurting whom (issue 26, docs/operations.md), from the newest windows.
  // Thresholds: the config's attribution.* and rebalance.* keys.
  InterferenceTracker interference(InterferenceOptions{
      .history_windows = static_cast<size_t>(config->attribution_history_windows),
      .recent_windows = static_cast<size_t>(config->attribution_recent_windows),
      .victim_windows = static_cast<size_t>(config->attribution_victim_windows),
      .sigma = config->attribution_sigma,
      .min_relative_spread = config->attribution_min_relative_spread,
      .min_correlation_windows = static_cast<size_t>(config->attribution_min_correlation_windows),
      .min_correlation = config->attribution_min_correlation,
      .min_score = config->attribution_min_score,
      .min_baseline_samples = static_cast<size_t>(config->attribution_min_baseline_samples),
      .repeat_offender_count = static_cast<size_t>(config->attribution_repeat_antagonist_count)});
  source.set_interference(
      &interference, &core,
      {.min_persisting_windows = static_cast<size_t>(config->rebalance_min_persisting_windows),
       .max_moves = static_cast<size_t>(config->rebalance_max_moves)});
  const InterferenceObserver interference_observer(core, interference,
                                                   config->attribution_observe_interval);
  std::atomic<bool> stopping{false};
  // /metrics is the operator API's page plus the ingest refusals by reason,
  // the state counters, build info and process_*. Registered on both ports.
  MetricsPage metrics_page{.per_node_series = config->metrics_per_node_series,
                           .append = [&ingest, &core, &placement_metrics](PrometheusWriter& page) {
                             AppendIngestRefusals(ingest.counters(), page);
                             ingest.pacer().AppendPrometheus(page);
                             placement_metrics.AppendPrometheus(page);
                             AppendStateMetrics(core, page);
                             AppendBuildInfo("neighborly_extender", NEIGHBORLY_VERSION, page);
                             AppendProcessMetrics(ReadSelfProcess(), page);
                           }};
  // Ready once it has heard from the agents (extender/src/api/readiness.h).
  const Readiness readiness({.report_interval = config->readiness_report_interval,
                             .grace = config->readiness_grace,
                             .known_node_share = config->readiness_known_node_share,
                             .max_wait = config->readiness_max_wait},
                            core.nodes_in_loaded_state(), clock);
  if (readiness.nodes_needed() > 0) {
    spdlog::info("not ready until {} of the {} node(s) in the state file report (or {})",
                 readiness.nodes_needed(), core.nodes_in_loaded_state(),
                 absl::FormatDuration(config->readiness_max_wait));
  }
  auto register_operator_routes = [&source, &metrics, &stopping, &metrics_page, &readiness,
                                   &core](HttpRoutes& server) {
    RegisterOperatorApi(
        server, source, metrics,
        [&stopping, &readiness, &core]() -> std::string {
          if (stopping.load()) return "shutting down";
          return readiness.Check(core.node_count());
        },
        metrics_page);
  };
  register_operator_routes(http.routes());

  // The operator port (docs/security.md): the same routes without the
  // scheduler's client certificate and without the scheduler verbs; /v1 behind
  // bearer tokens.
  std::unique_ptr<OperatorAuth> operator_auth;  // outlives operator_http, whose filter uses it
  std::unique_ptr<HttpServer> operator_http;
  std::string operator_listen;
  std::string address_host;
  if (!config->operator_address.empty()) {
    const absl::StatusOr<HostPort> address = ParseHostPort(config->operator_address);
    if (!address.ok()) return Fail(2, Sv(address.status().message()));
    absl::StatusOr<std::unique_ptr<OperatorAuth>> auth =
        OperatorAuth::Create({.token_file = config->operator_token_file,
                              .reload_interval = config->operator_token_reload_interval},
                             clock);
    if (!auth.ok()) return Fail(2, absl::StrCat("operator.tokenFile: ", auth.status().message()));
    operator_auth = std::move(*auth);
    HttpServerOptions options = config->http;  // limits and timeouts as the scheduler port's
    options.host = address_host = address->host;
    options.port = address->port;
    options.tls_cert_file = config->operator_http.tls_cert_file;
    options.tls_key_file = config->operator_http.tls_key_file;
    options.tls_client_ca_file.clear();
    options.tls_reload_interval = config->operator_http.tls_reload_interval;
    options.scheduler_verbs = false;
    operator_http = std::make_unique<HttpServer>(options, core, metrics);
    if (!operator_http->tls_status().ok())
      return Fail(2, absl::StrCat("operator.tls: ", operator_http->tls_status().message()));
    operator_http->SetRequestFilter(
        [auth = operator_auth.get()](const httplib::Request& req, httplib::Response& res) {
          return auth->Refuse(req, res);
        });
    register_operator_routes(operator_http->routes());
    if (config->operator_token_file.empty()) {
      spdlog::warn("operator port without operator.tokenFile: /v1 is refused there");
    }
  }
  absl::StatusOr<int> http_port = http.Start();
  if (!http_port.ok()) return Fail(1, Sv(http_port.status().message()));
  if (operator_http != nullptr) {
    absl::StatusOr<int> port = operator_http->Start();
    if (!port.ok()) return Fail(1, absl::StrCat("operator: ", port.status().message()));
    operator_listen = JoinHostPort(address_host, *port);
    spdlog::info("operator port on {} ({}; /v1 needs a bearer token)", operator_listen,
                 operator_http->tls() ? "HTTPS, no client certificate" : "plain HTTP");
  }

  const std::string http_listen = JoinHostPort(http_address->host, *http_port);
  if (http.tls()) {
    spdlog::info("HTTPS on {}{}", http_listen,
                 config->http.tls_client_ca_file.empty() ? "" : " (client certificates required)");
  }
  // The parseable line, on stdout for scripts and on stderr beside the logs.
  const std::string listening = absl::StrCat(
      "listening http=", http_listen, " grpc=", ingest.address(),
      operator_listen.empty() ? "" : absl::StrCat(" operator=", operator_listen),
      placement == nullptr ? "" : absl::StrCat(" placement=", placement->address()), "\n");
  std::fputs(listening.c_str(), stdout);
  std::fflush(stdout);
  std::fputs(listening.c_str(), stderr);
  spdlog::info("serving kube-scheduler and operator API on {}, telemetry ingest on {}", http_listen,
               ingest.address());

  const int64_t save_ms = absl::ToInt64Milliseconds(config->state_save_interval);
  for (;;) {
    timespec timeout{static_cast<time_t>(save_ms / 1000),
                     static_cast<long>(save_ms % 1000) * 1000000L};
    const int signal_number = sigtimedwait(&signals, nullptr, &timeout);
    if (signal_number == SIGTERM || signal_number == SIGINT) {
      spdlog::info("received {}; shutting down", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
    }
    SaveState(core, config->state_file);  // the periodic save (timeout or EINTR)
    // What the last interval freed and nothing purged yet goes back to the
    // system: the pages of streams that closed in a burst after the
    // ingest's own purge (it purges at most every 10 s), of reports replaced,
    // of the decision log's recycled records (common/memory_release.h).
    ReleaseFreeMemory();
  }
  stopping = true;
  http.Stop();  // no new connections; returns once in-flight requests are answered
  if (placement != nullptr) placement->Shutdown(absl::Seconds(2));  // unary calls: short
  if (operator_http != nullptr) operator_http->Stop();
  // Agent streams never end on their own, so any grace would only be waited
  // out; cancel them now (agents reconnect, to another replica if there is one).
  ingest.Shutdown(absl::ZeroDuration());
  SaveState(core, config->state_file);
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace neighborly::extender

int main(int argc, char** argv) { return neighborly::extender::Run(argc, argv); }
