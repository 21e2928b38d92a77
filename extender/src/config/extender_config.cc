#include "extender/src/config/extender_config.h"

#include <fstream>
#include <functional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "common/strings.h"
#include "common/yaml_fields.h"

namespace neighborly::extender {
namespace {

// Applies one YAML value (with its path, for errors) to a config field.
using Setter = std::function<absl::Status(const yaml::Value& value)>;
using Schema = std::vector<std::pair<std::string, Setter>>;

// Setters for each kind of field, on common/yaml_fields.h (which resolves
// merge keys and refuses unknown and duplicate keys).
class Parser {
 public:
  // A map whose keys must all be in `schema`; absent or null: nothing to set.
  absl::Status Map(const yaml::Value& value, const Schema& schema) const {
    std::vector<std::string> keys;
    keys.reserve(schema.size());
    for (const auto& [field, setter] : schema) keys.push_back(field);
    absl::StatusOr<yaml::Map> map = yaml::Map::Of(value, keys);
    if (!map.ok()) return map.status();
    for (const yaml::Map::Entry& entry : map->entries()) {
      for (const auto& [field, setter] : schema) {
        if (field != entry.key) continue;
        if (absl::Status s = setter(entry.value); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // Reads with `read` and stores in `out`.
  template <typename T, typename Read>
  static Setter Store(T& out, Read read) {
    return [&out, read](const yaml::Value& v) -> absl::Status {
      auto value = read(v);
      if (!value.ok()) return value.status();
      out = static_cast<T>(*std::move(value));
      return absl::OkStatus();
    };
  }

  Setter String(std::string& out) const {
    return Store(out, [](const yaml::Value& v) { return v.String(); });
  }
  Setter Bool(bool& out) const {
    return Store(out, [](const yaml::Value& v) { return v.Bool(); });
  }
  template <typename Int>
  Setter Integer(Int& out, int64_t min, int64_t max) const {
    return Store(out, [min, max](const yaml::Value& v) { return v.Int(min, max); });
  }
  // An integer or a Kubernetes quantity ("64Mi", "2G").
  Setter Bytes(int64_t& out, int64_t min) const {
    return Store(out, [min](const yaml::Value& v) { return v.Bytes(min); });
  }
  Setter Double(double& out, double min, double max) const {
    return Store(out, [min, max](const yaml::Value& v) { return v.Double(min, max); });
  }
  Setter Duration(absl::Duration& out, absl::Duration min) const {
    return Store(out, [min](const yaml::Value& v) { return v.Duration(min); });
  }
  // A list of strings; null clears it.
  Setter Strings(std::vector<std::string>& out) const {
    return Store(out, [](const yaml::Value& v) { return v.Strings(); });
  }

  Setter FootprintOf(Footprint& out) const {
    return [this, &out](const yaml::Value& v) {
      return Map(v, {{"llcBytes", Bytes(out.llc_bytes, 0)},
                     {"membwBytesPerSecond", Bytes(out.membw_bytes_per_second, 0)}});
    };
  }

  // model.labelRules: a list of {key, values, class}; null clears it.
  Setter LabelRules(std::vector<LabelRule>& out) const {
    return [this, &out](const yaml::Value& v) -> absl::Status {
      absl::StatusOr<std::vector<yaml::Value>> items = v.List();
      if (!items.ok()) return items.status();
      std::vector<LabelRule> rules;
      for (const yaml::Value& item : *items) {
        LabelRule rule;
        rule.values.clear();
        bool have_class = false;
        const Setter class_setter = [&](const yaml::Value& c) -> absl::Status {
          absl::StatusOr<std::string> name = c.String();
          if (!name.ok()) return name.status();
          if (*name == "batch") {
            rule.contention_class = ContentionClass::kBatch;
          } else if (*name == "latency-critical") {
            rule.contention_class = ContentionClass::kLatencyCritical;
          } else if (*name == "standard") {
            rule.contention_class = ContentionClass::kStandard;
          } else {
            return c.Error(
                absl::StrCat("expected batch, latency-critical or standard, got \"", *name, "\""));
          }
          have_class = true;
          return absl::OkStatus();
        };
        if (absl::Status s = Map(item, {{"key", String(rule.key)},
                                        {"values", Strings(rule.values)},
                                        {"class", class_setter}});
            !s.ok()) {
          return s;
        }
        if (rule.key.empty() || rule.values.empty() || !have_class) {
          return item.Error("a rule needs key, values and class");
        }
        rules.push_back(std::move(rule));
      }
      out = std::move(rules);
      return absl::OkStatus();
    };
  }
};

}  // namespace

absl::StatusOr<ExtenderConfig> ParseExtenderConfig(std::string_view text,
                                                   std::string_view source_name) {
  ExtenderConfig config;
  const yaml::Source source{std::string(source_name)};
  absl::StatusOr<YAML::Node> root = yaml::Load(source, text);
  if (!root.ok()) return root.status();
  const Parser p;
  ModelConfig& m = config.model;
  const Schema schema = {
      {"http",
       [&](const yaml::Value& v) {
         return p.Map(
             v,
             {{"address", p.String(config.http_address)},
              {"bodyLimitBytes", p.Bytes(config.http.body_limit_bytes, 1024)},
              {"maxInFlightBytes", p.Bytes(config.http.max_in_flight_bytes, 0)},
              {"serverTiming", p.Bool(config.http.server_timing)},
              {"maxNamesPerRequest", p.Integer(config.http.max_names_per_request, 1, 10'000'000)},
              {"readTimeout", p.Duration(config.http.read_timeout, absl::Milliseconds(1))},
              {"writeTimeout", p.Duration(config.http.write_timeout, absl::Milliseconds(1))},
              {"keepAliveTimeout", p.Duration(config.http.keep_alive_timeout, absl::Seconds(1))},
              {"requestTimeout", p.Duration(config.http.request_timeout, absl::Milliseconds(1))},
              {"workerThreads", p.Integer(config.http.worker_threads, 1, 4096)},
              {"maxConnections", p.Integer(config.http.max_connections, 1, 65536)},
              {"evaluationThreads", p.Integer(config.evaluation_threads, 0, 64)},
              {"reuseDecisions", p.Bool(config.reuse_decisions)},
              {"tls", [&](const yaml::Value& t) {
                 return p.Map(t, {{"certFile", p.String(config.http.tls_cert_file)},
                                  {"keyFile", p.String(config.http.tls_key_file)},
                                  {"clientCaFile", p.String(config.http.tls_client_ca_file)},
                                  {"allowedClientNames",
                                   p.Strings(config.http.tls_allowed_client_names)},
                                  {"reloadInterval",
                                   p.Duration(config.http.tls_reload_interval, absl::Seconds(1))}});
               }}});
       }},
      {"operator",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"address", p.String(config.operator_address)},
                 {"tokenFile", p.String(config.operator_token_file)},
                 {"tokenReloadInterval",
                  p.Duration(config.operator_token_reload_interval, absl::Seconds(1))},
                 {"tls", [&](const yaml::Value& t) {
                    return p.Map(
                        t, {{"certFile", p.String(config.operator_http.tls_cert_file)},
                            {"keyFile", p.String(config.operator_http.tls_key_file)},
                            {"reloadInterval", p.Duration(config.operator_http.tls_reload_interval,
                                                          absl::Seconds(1))}});
                  }}});
       }},
      {"placement",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"address", p.String(config.placement_address)},
                 {"insecurePlaintext", p.Bool(config.placement_insecure_plaintext)},
                 {"maxThreads", p.Integer(config.placement_max_threads, 2, 4096)},
                 {"tls", [&](const yaml::Value& t) {
                    return p.Map(
                        t, {{"caFile", p.String(config.placement_tls_ca_file)},
                            {"certFile", p.String(config.placement_tls_cert_file)},
                            {"keyFile", p.String(config.placement_tls_key_file)},
                            {"allowedClientNames",
                             p.Strings(config.placement_tls_allowed_client_names)},
                            {"reloadInterval",
                             p.Duration(config.placement_tls_reload_interval, absl::Seconds(1))}});
                  }}});
       }},
      {"grpc",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"address", p.String(config.grpc_address)},
                 {"insecurePlaintext", p.Bool(config.grpc_insecure_plaintext)},
                 {"maxReportBytes", p.Bytes(config.grpc_max_report_bytes, 4096)},
                 {"maxReportsPerSecond", p.Double(config.grpc_max_reports_per_second, 0, 1e6)},
                 {"reportBurst", p.Double(config.grpc_report_burst, 1, 1e6)},
                 {"maxStreams", p.Integer(config.grpc_max_streams, 1, 10'000'000)},
                 {"adaptiveInterval",
                  [&](const yaml::Value& a) {
                    return p.Map(
                        a, {{"enabled", p.Bool(config.grpc_adaptive_interval)},
                            {"maxLag", p.Duration(config.grpc_adaptive_max_lag,
                                                  absl::Milliseconds(10))},
                            {"maxInterval", p.Duration(config.grpc_adaptive_max_interval,
                                                       absl::Seconds(1))}});
                  }},
                 {"ingestScheduling",
                  [&](const yaml::Value& s) -> absl::Status {
                    absl::StatusOr<std::string> value = s.String();
                    if (!value.ok()) return value.status();
                    if (*value != "idle" && *value != "nice") {
                      return s.Error(absl::StrCat("expected idle or nice, got \"", *value, "\""));
                    }
                    config.grpc_idle_ingest_threads = *value == "idle";
                    return absl::OkStatus();
                  }},
                 {"tls",
                  [&](const yaml::Value& t) {
                    return p.Map(
                        t, {{"caFile", p.String(config.grpc_tls_ca_file)},
                            {"certFile", p.String(config.grpc_tls_cert_file)},
                            {"keyFile", p.String(config.grpc_tls_key_file)},
                            {"requireClientCert", p.Bool(config.grpc_tls_require_client_cert)},
                            {"allowedClientNames", p.Strings(config.grpc_tls_allowed_client_names)},
                            {"reloadInterval",
                             p.Duration(config.grpc_tls_reload_interval, absl::Seconds(1))}});
                  }},
                 {"identity", [&](const yaml::Value& i) {
                    return p.Map(
                        i, {{"issuer", p.String(config.identity_issuer)},
                            {"audience", p.String(config.identity_audience)},
                            {"jwksFile", p.String(config.identity_jwks_file)},
                            {"publicKeyFiles", p.Strings(config.identity_public_key_files)},
                            {"allowedSubjects", p.Strings(config.identity_allowed_subjects)},
                            {"leeway", p.Duration(config.identity_leeway, absl::Seconds(0))},
                            {"maxTokenLifetime",
                             p.Duration(config.identity_max_token_lifetime, absl::Minutes(1))},
                            {"reloadInterval",
                             p.Duration(config.identity_reload_interval, absl::Seconds(1))}});
                  }}});
       }},
      {"state",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"file", p.String(config.state_file)},
                 {"saveInterval", p.Duration(config.state_save_interval, absl::Seconds(1))},
                 {"maxPods", p.Integer(config.state_max_pods, 1000, 10'000'000)},
                 {"maxPodsPerNode", p.Integer(config.state_max_pods_per_node, 100, 10'000'000)},
                 {"maxBookings", p.Integer(config.state_max_bookings, 100, 10'000'000)},
                 {"maxBookingsPerNode",
                  p.Integer(config.state_max_bookings_per_node, 10, 1'000'000)},
                 {"learnFromUnauthenticatedScheduler",
                  p.Bool(config.state_learn_from_unauthenticated_scheduler)},
                 {"maxWorkloads", p.Integer(config.state_max_workloads, 1, 1'000'000)},
                 {"maxNodes", p.Integer(config.state_max_nodes, 1, 1'000'000)}});
       }},
      {"readiness",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"reportInterval",
                  p.Duration(config.readiness_report_interval, absl::Milliseconds(10))},
                 {"grace", p.Duration(config.readiness_grace, absl::ZeroDuration())},
                 {"knownNodeShare", p.Double(config.readiness_known_node_share, 0, 1)},
                 {"maxWait", p.Duration(config.readiness_max_wait, absl::ZeroDuration())}});
       }},
      {"metrics",
       [&](const yaml::Value& v) {
         return p.Map(v, {{"perNodeSeries", p.Bool(config.metrics_per_node_series)}});
       }},
      {"attribution",
       [&](const yaml::Value& v) {
         return p.Map(
             v,
             {{"historyWindows", p.Integer(config.attribution_history_windows, 6, 10'000)},
              {"recentWindows", p.Integer(config.attribution_recent_windows, 1, 1000)},
              {"victimWindows", p.Integer(config.attribution_victim_windows, 1, 1000)},
              {"sigma", p.Double(config.attribution_sigma, 0, 100)},
              {"minRelativeSpread", p.Double(config.attribution_min_relative_spread, 0, 10)},
              {"minCorrelationWindows",
               p.Integer(config.attribution_min_correlation_windows, 3, 10'000)},
              {"minCorrelation", p.Double(config.attribution_min_correlation, 0, 1)},
              {"minScore", p.Double(config.attribution_min_score, 0, 1)},
              {"minBaselineSamples", p.Integer(config.attribution_min_baseline_samples, 1, 1'000'000)},
              {"repeatAntagonistCount",
               p.Integer(config.attribution_repeat_antagonist_count, 1, 1'000'000)},
              {"observeInterval",
               p.Duration(config.attribution_observe_interval, absl::Milliseconds(10))}});
       }},
      {"rebalance",
       [&](const yaml::Value& v) {
         return p.Map(v, {{"minPersistingWindows",
                           p.Integer(config.rebalance_min_persisting_windows, 1, 1'000'000)},
                          {"maxMoves", p.Integer(config.rebalance_max_moves, 1, 1000)}});
       }},
      {"allocation",
       [&](const yaml::Value& v) {
         return p.Map(
             v, {{"enabled", p.Bool(config.allocation_enabled)},
                 {"batch", [&](const yaml::Value& b) {
                    return p.Map(
                        b, {{"l3WaysFraction", p.Double(config.allocation_batch_l3_ways_fraction,
                                                        0, 1)},
                            {"mbaPercent", p.Integer(config.allocation_batch_mba_percent, 0, 100)},
                            {"mbaMBps",
                             p.Integer(config.allocation_batch_mba_mbps, 0, 4'294'967'295)}});
                  }}});
       }},
      {"log",
       [&](const yaml::Value& v) {
         return p.Map(v, {{"level", p.String(config.log_level)}});
       }},
      {"model",
       [&](const yaml::Value& v) {
         return p.Map(
             v,
             {{"labelRules", p.LabelRules(m.label_rules)},
              {"aggressorMembwShare", p.Double(m.aggressor_membw_share, 0, 1)},
              {"aggressorL3Share", p.Double(m.aggressor_l3_share, 0, 1)},
              {"aggressorMinMpki", p.Double(m.aggressor_min_mpki, 0, 1e6)},
              {"isolateLatencyCritical", p.Bool(m.isolate_latency_critical)},
              {"isolateBatch", p.Bool(m.isolate_batch)},
              {"membwHeadroom", p.Double(m.membw_headroom, 0, 1)},
              {"numaAdmission", p.Bool(m.numa_admission)},
              {"socketIsolation", p.Bool(m.socket_isolation)},
              {"isolationFloorLlcBytes", p.Bytes(m.isolation_floor_llc_bytes, 0)},
              {"isolationFloorMembwBytesPerSecond",
               p.Bytes(m.isolation_floor_membw_bytes_per_second, 0)},
              {"leastHarmFallback", p.Bool(m.least_harm_fallback)},
              {"leastHarmMargin", p.Double(m.least_harm_margin, 0, 10)},
              {"interference",
               [&](const yaml::Value& f) {
                 InterferenceConfig& i = m.interference;
                 return p.Map(
                     f, {{"enabled", p.Bool(i.enabled)},
                         {"maxSlowdown", p.Double(i.max_slowdown, 1.0001, 100)},
                         {"minAddedSlowdown", p.Double(i.min_added_slowdown, 0, 100)},
                         {"reusePerSecond", p.Double(i.reuse_per_second, 0, 1e6)},
                         {"latencyScale", p.Double(i.latency_scale, 0, 100)},
                         {"maxUtilisation", p.Double(i.max_utilisation, 0.5, 0.999)},
                         {"maxLatencyFactor", p.Double(i.max_latency_factor, 1, 100)},
                         {"socketMembwCoupling", p.Double(i.socket_membw_coupling, 0, 1)},
                         {"latencyCriticalCacheSensitivity",
                          p.Double(i.latency_critical_cache_sensitivity, 0, 10)},
                         {"latencyCriticalMembwSensitivity",
                          p.Double(i.latency_critical_membw_sensitivity, 0, 10)},
                         {"standardCacheSensitivity", p.Double(i.standard_cache_sensitivity, 0, 10)},
                         {"standardMembwSensitivity", p.Double(i.standard_membw_sensitivity, 0, 10)},
                         {"batchCacheSensitivity", p.Double(i.batch_cache_sensitivity, 0, 10)},
                         {"batchMembwSensitivity", p.Double(i.batch_membw_sensitivity, 0, 10)},
                         {"scoreStep", p.Double(i.score_step, 1e-4, 10)},
                         {"maxTrackedResidents", p.Integer(i.max_tracked_residents, 0, 64)},
                         {"guessedAdmissionPenalty", p.Double(i.guessed_admission_penalty, 0, 10)},
                         {"guessedBookingsRefuse", p.Bool(i.guessed_bookings_refuse)},
                         {"bookSingleCandidate", p.Bool(i.book_single_candidate)},
                         {"pinnedGuessesElsewhere", p.Bool(i.pinned_guesses_elsewhere)}});
               }},
              {"defaultFootprints",
               [&](const yaml::Value& f) {
                 return p.Map(f, {{"latencyCritical", p.FootprintOf(m.default_latency_critical)},
                                  {"batch", p.FootprintOf(m.default_batch)},
                                  {"standard", p.FootprintOf(m.default_standard)}});
               }},
              {"defaultPeakMembwBytesPerSecond", p.Bytes(m.default_peak_membw_bytes_per_second, 1)},
              {"l3Weight", p.Double(m.l3_weight, 0, 1000)},
              {"membwWeight", p.Double(m.membw_weight, 0, 1000)},
              {"numaWeight", p.Double(m.numa_weight, 0, 1000)},
              {"smtWeight", p.Double(m.smt_weight, 0, 1000)},
              {"membwQueueScale", p.Double(m.membw_queue_scale, 1e-9, 1e9)},
              {"freshIntervals", p.Integer(m.fresh_intervals, 1, 1000)},
              {"maxAge", p.Duration(m.max_age, absl::Seconds(1))},
              {"bookingTtl", p.Duration(m.booking_ttl, absl::Seconds(1))},
              {"workloads",
               [&](const yaml::Value& f) {
                 WorkloadConfig& w = m.workloads;
                 return p.Map(f,
                              {{"enabled", p.Bool(w.enabled)},
                               {"halfLife", p.Duration(w.half_life, absl::Seconds(1))},
                               {"peakHalfLife", p.Duration(w.peak_half_life, absl::Seconds(1))},
                               {"confidentWindows", p.Double(w.confident_windows, 0, 1e9)},
                               {"percentile", p.Double(w.percentile, 0.5, 1)},
                               {"aggressorExitFraction", p.Double(w.aggressor_exit_fraction, 0, 1)},
                               {"aggressorMinDwell",
                                p.Duration(w.aggressor_min_dwell, absl::ZeroDuration())},
                               {"maxNodeShare", p.Double(w.max_node_share, 0.05, 1)},
                               {"replicaWindow", p.Duration(w.replica_window, absl::Seconds(1))}});
               }},
              {"priors",
               [&](const yaml::Value& f) {
                 return p.Map(f, {{"scaleWithCpus", p.Bool(m.priors.scale_with_cpus)},
                                  {"membwBytesPerSecondPerCpu",
                                   p.Bytes(m.priors.membw_bytes_per_second_per_cpu, 0)},
                                  {"llcBytesPerCpu", p.Bytes(m.priors.llc_bytes_per_cpu, 0)},
                                  {"maxCpus", p.Double(m.priors.max_cpus, 1, 100000)}});
               }},
              {"jobsAreBatch", p.Bool(m.jobs_are_batch)},
              {"guaranteedExclusiveIsLatencyCritical",
               p.Bool(m.guaranteed_exclusive_is_latency_critical)},
              {"aggregateStreamers", p.Bool(m.aggregate_streamers)},
              {"streamerMinMembwShare", p.Double(m.streamer_min_membw_share, 0, 1)},
              {"unmeasuredPenalty", p.Double(m.unmeasured_penalty, 0, 1)},
              {"residentsMaxAge", p.Duration(m.residents_max_age, absl::ZeroDuration())},
              {"latencyCriticalBlindScore", p.Integer(m.latency_critical_blind_score, 0, 10)}});
       }},
  };
  if (absl::Status s = p.Map(yaml::Value(source, *root), schema); !s.ok()) return s;
  return config;
}

absl::Status ValidateExtenderConfig(const ExtenderConfig& config) {
  if (absl::StatusOr<HostPort> hp = ParseHostPort(config.http_address); !hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("http address: ", hp.status().message()));
  }
  if (!config.operator_address.empty()) {
    if (absl::StatusOr<HostPort> hp = ParseHostPort(config.operator_address); !hp.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("operator address: ", hp.status().message()));
    }
  }
  if (config.operator_http.tls_cert_file.empty() != config.operator_http.tls_key_file.empty()) {
    return absl::InvalidArgumentError("operator.tls: certFile and keyFile go together");
  }
  if (absl::StatusOr<HostPort> hp = ParseHostPort(config.grpc_address); !hp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("grpc address: ", hp.status().message()));
  }
  if (!config.placement_address.empty()) {
    if (absl::StatusOr<HostPort> hp = ParseHostPort(config.placement_address); !hp.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("placement address: ", hp.status().message()));
    }
  }
  const bool placement_tls = !config.placement_tls_cert_file.empty() ||
                             !config.placement_tls_key_file.empty() ||
                             !config.placement_tls_ca_file.empty();
  if (placement_tls &&
      (config.placement_tls_cert_file.empty() || config.placement_tls_key_file.empty() ||
       config.placement_tls_ca_file.empty())) {
    return absl::InvalidArgumentError(
        "placement.tls needs certFile, keyFile and caFile (the CA of the scheduler's client "
        "certificate): client certificates are required");
  }
  if (placement_tls && config.placement_insecure_plaintext) {
    return absl::InvalidArgumentError(
        "placement.insecurePlaintext contradicts placement.tls (choose one)");
  }
  if (config.attribution_victim_windows > config.attribution_recent_windows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribution.victimWindows (", config.attribution_victim_windows,
        ") must not exceed attribution.recentWindows (", config.attribution_recent_windows,
        "): a victim is above its baseline in victimWindows of the last recentWindows"));
  }
  if (config.attribution_recent_windows > config.attribution_history_windows ||
      config.attribution_min_correlation_windows > config.attribution_history_windows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribution.recentWindows (", config.attribution_recent_windows,
        ") and attribution.minCorrelationWindows (", config.attribution_min_correlation_windows,
        ") must not exceed attribution.historyWindows (", config.attribution_history_windows,
        "), the windows kept per node"));
  }
  static constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool level_ok = false;
  for (std::string_view level : kLevels) level_ok = level_ok || level == config.log_level;
  if (!level_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "log level \"", config.log_level, "\" is not one of trace, debug, info, warn, error, off"));
  }
  if (config.grpc_max_report_bytes > (1 << 30)) {
    return absl::InvalidArgumentError("grpc.maxReportBytes must be at most 1Gi");
  }
  if (config.grpc_tls_cert_file.empty() != config.grpc_tls_key_file.empty()) {
    return absl::InvalidArgumentError("grpc.tls: certFile and keyFile go together");
  }
  if (!config.grpc_tls_ca_file.empty() && config.grpc_tls_cert_file.empty()) {
    return absl::InvalidArgumentError("grpc.tls.caFile needs grpc.tls.certFile and keyFile");
  }
  if (!config.grpc_tls_cert_file.empty() && config.grpc_tls_require_client_cert &&
      config.grpc_tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "grpc.tls.requireClientCert needs grpc.tls.caFile (the CA of the agents' certificates)");
  }
  if (!config.grpc_tls_cert_file.empty() && config.grpc_insecure_plaintext) {
    return absl::InvalidArgumentError("grpc.insecurePlaintext contradicts grpc.tls (choose one)");
  }
  const bool identity_keys = !config.identity_jwks_file.empty() ||
                             !config.identity_public_key_files.empty() ||
                             !config.identity_allowed_subjects.empty();
  if (identity_keys && config.identity_issuer.empty()) {
    return absl::InvalidArgumentError(
        "grpc.identity needs issuer (the cluster's service-account issuer URL)");
  }
  if (!config.identity_issuer.empty() && config.identity_jwks_file.empty() &&
      config.identity_public_key_files.empty()) {
    return absl::InvalidArgumentError(
        "grpc.identity needs jwksFile or publicKeyFiles (the issuer's public keys)");
  }
  if (!config.identity_issuer.empty() && config.identity_audience.empty()) {
    return absl::InvalidArgumentError("grpc.identity.audience is empty");
  }
  if (config.http.tls_cert_file.empty() != config.http.tls_key_file.empty()) {
    return absl::InvalidArgumentError("http.tls: certFile and keyFile go together");
  }
  if (!config.http.tls_client_ca_file.empty() && config.http.tls_cert_file.empty()) {
    return absl::InvalidArgumentError("http.tls.clientCaFile needs http.tls.certFile and keyFile");
  }
  // Names without a CA would check nothing: say so rather than run open.
  if (!config.http.tls_allowed_client_names.empty() && config.http.tls_client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "http.tls.allowedClientNames needs http.tls.clientCaFile (client certificates)");
  }
  if (!config.grpc_tls_allowed_client_names.empty() &&
      (config.grpc_tls_ca_file.empty() || !config.grpc_tls_require_client_cert)) {
    return absl::InvalidArgumentError(
        "grpc.tls.allowedClientNames needs grpc.tls.caFile and requireClientCert");
  }
  if (!config.placement_tls_allowed_client_names.empty() && config.placement_tls_ca_file.empty()) {
    return absl::InvalidArgumentError("placement.tls.allowedClientNames needs placement.tls");
  }
  for (const auto* names : {&config.http.tls_allowed_client_names,
                            &config.grpc_tls_allowed_client_names,
                            &config.placement_tls_allowed_client_names}) {
    for (const std::string& name : *names) {
      if (name.empty()) return absl::InvalidArgumentError("an allowedClientNames entry is empty");
    }
  }
  if (config.http.max_in_flight_bytes != 0 &&
      config.http.max_in_flight_bytes < config.http.body_limit_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("http.maxInFlightBytes (", config.http.max_in_flight_bytes,
                     ") must be 0 (twice http.bodyLimitBytes) or at least http.bodyLimitBytes (",
                     config.http.body_limit_bytes,
                     "): a request of the largest allowed size could never be read"));
  }
  if (config.http.max_connections < config.http.worker_threads) {
    return absl::InvalidArgumentError(
        absl::StrCat("http.maxConnections (", config.http.max_connections,
                     ") must be at least http.workerThreads (", config.http.worker_threads, ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckTransportSecurity(const ExtenderConfig& config) {
  if (config.grpc_tls_cert_file.empty() && !config.grpc_insecure_plaintext) {
    return absl::FailedPreconditionError(
        "telemetry needs TLS (grpc.tls.certFile, keyFile and caFile) or an explicit "
        "grpc.insecurePlaintext: true / --grpc-insecure-plaintext");
  }
  if (!config.placement_address.empty() && config.placement_tls_cert_file.empty() &&
      !config.placement_insecure_plaintext) {
    return absl::FailedPreconditionError(
        "the placement port needs TLS (placement.tls.certFile, keyFile and caFile) or an "
        "explicit placement.insecurePlaintext: true / --placement-insecure-plaintext");
  }
  return absl::OkStatus();
}

absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg == "--version") {
      out.version = true;
      continue;
    }
    if (arg == "--grpc-insecure-plaintext") {
      out.grpc_insecure_plaintext = true;
      continue;
    }
    if (arg == "--placement-insecure-plaintext") {
      out.placement_insecure_plaintext = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string> value;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = std::string(arg.substr(eq + 1));
    }
    std::string* target_string = nullptr;
    std::optional<std::string>* target_optional = nullptr;
    if (name == "--config") {
      target_string = &out.config_file;
    } else if (name == "--http-address") {
      target_optional = &out.http_address;
    } else if (name == "--grpc-address") {
      target_optional = &out.grpc_address;
    } else if (name == "--operator-address") {
      target_optional = &out.operator_address;
    } else if (name == "--placement-address") {
      target_optional = &out.placement_address;
    } else if (name == "--log-level") {
      target_optional = &out.log_level;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag \"", Av(arg), "\" (see --help)"));
    }
    if (!value.has_value()) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat("flag ", Av(name), " needs a value"));
      }
      value = std::string(argv[++i]);
    }
    if (value->empty()) {
      return absl::InvalidArgumentError(absl::StrCat("flag ", Av(name), " needs a value"));
    }
    if (target_string != nullptr) *target_string = *value;
    if (target_optional != nullptr) *target_optional = *value;
  }
  return out;
}

absl::StatusOr<ExtenderConfig> LoadExtenderConfig(const CommandLine& command_line) {
  ExtenderConfig config;
  if (!command_line.config_file.empty()) {
    std::ifstream in(command_line.config_file);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("cannot read config file ", command_line.config_file));
    }
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<ExtenderConfig> parsed =
        ParseExtenderConfig(text.str(), command_line.config_file);
    if (!parsed.ok()) return parsed.status();
    config = std::move(*parsed);
  }
  if (command_line.http_address) config.http_address = *command_line.http_address;
  if (command_line.grpc_address) config.grpc_address = *command_line.grpc_address;
  if (command_line.operator_address) config.operator_address = *command_line.operator_address;
  if (command_line.placement_address) config.placement_address = *command_line.placement_address;
  if (command_line.placement_insecure_plaintext) config.placement_insecure_plaintext = true;
  if (command_line.log_level) config.log_level = *command_line.log_level;
  if (command_line.grpc_insecure_plaintext) config.grpc_insecure_plaintext = true;
  if (absl::Status s = ValidateExtenderConfig(config); !s.ok()) return s;
  return config;
}

std::string ExtenderUsage() {
  return "Usage: neighborly-extender [--config FILE] [--http-address HOST:PORT]\n"
         "                          [--grpc-address HOST:PORT] [--operator-address HOST:PORT]\n"
         "                          [--placement-address HOST:PORT] [--log-level LEVEL]\n"
         "\n"
         "Contention-aware kube-scheduler extender (filter/prioritize over HTTP) with\n"
         "telemetry ingest over gRPC and the operator API on the HTTP port.\n"
         "\n"
         "  --config FILE             YAML config (keys: docs/configuration.md)\n"
         "  --http-address HOST:PORT  scheduler verbs + operator API (default 0.0.0.0:8888;\n"
         "                            port 0 picks a free port)\n"
         "  --grpc-address HOST:PORT  telemetry ingest (default 0.0.0.0:9090)\n"
         "  --operator-address HOST:PORT  /metrics, /healthz, /readyz and the operator API\n"
         "                            without the scheduler's client certificate (tokens:\n"
         "                            operator.tokenFile); default none\n"
         "  --placement-address HOST:PORT  the placement service for the scheduler plugin\n"
         "                            (gRPC, neighborly.placement.v1); default none (off)\n"
         "  --log-level LEVEL         trace|debug|info|warn|error|off (default info)\n"
         "  --grpc-insecure-plaintext  accept telemetry without TLS (tests and demos only;\n"
         "                            same as grpc.insecurePlaintext: true)\n"
         "  --placement-insecure-plaintext  accept placement calls without TLS (tests and\n"
         "                            demos only; same as placement.insecurePlaintext: true)\n"
         "  --help                    this text\n"
         "  --version                 print the version\n"
         "\n"
         "Telemetry needs TLS (grpc.tls in the config) or --grpc-insecure-plaintext; the\n"
         "placement port, when on, placement.tls or --placement-insecure-plaintext.\n"
         "Prints \"listening http=HOST:PORT grpc=HOST:PORT\" (plus \" operator=HOST:PORT\"\n"
         "with an operator port and \" placement=HOST:PORT\" with a placement port) once\n"
         "the servers accept.\n";
}

}  // namespace neighborly::extender
