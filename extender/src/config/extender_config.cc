#include "extender/src/config/extender_config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/host_port.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace neighborly::extender {
namespace {

// Applies one YAML value to a config field; `path` is its dotted key path.
using Setter = std::function<absl::Status(const YAML::Node& value, const std::string& path)>;
using Schema = std::vector<std::pair<std::string, Setter>>;

class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}

  absl::Status Error(const YAML::Node& at, std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(source_), ":", at.Mark().line + 1, ": ", Av(message)));
  }

  // A mapping whose keys must all be in `schema`.
  absl::Status Map(const YAML::Node& node, const std::string& path, const Schema& schema) const {
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) {
      return Error(node, absl::StrCat(path.empty() ? "the file" : path,
                                      " must be a mapping of keys to values"));
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      if (!key.IsScalar()) return Error(key, "keys must be plain strings");
      const std::string& name = key.Scalar();
      const std::string key_path = path.empty() ? name : absl::StrCat(path, ".", name);
      const Setter* setter = nullptr;
      for (const auto& [field, s] : schema) {
        if (field == name) setter = &s;
      }
      if (setter == nullptr) {
        std::vector<std::string> known;
        for (const auto& [field, s] : schema) known.push_back(field);
        return Error(key, absl::StrCat("unknown key \"", key_path, "\" (known",
                                       path.empty() ? "" : absl::StrCat(" in ", path), ": ",
                                       absl::StrJoin(known, ", "), ")"));
      }
      if (!seen.insert(name).second) {
        return Error(key, absl::StrCat("duplicate key \"", key_path, "\""));
      }
      if (absl::Status s = (*setter)(value, key_path); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& node, const std::string& path,
                                     std::string_view want) const {
    if (!node.IsScalar()) {
      return Error(node, absl::StrCat(path, ": expected ", Av(want), ", got ",
                                      node.IsMap()        ? "a mapping"
                                      : node.IsSequence() ? "a list"
                                                          : "nothing"));
    }
    return node.Scalar();
  }

  Setter String(std::string& out) const {
    return [this, &out](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "a string");
      if (!s.ok()) return s.status();
      out = *s;
      return absl::OkStatus();
    };
  }

  Setter Bool(bool& out) const {
    return [this, &out](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "true or false");
      if (!s.ok()) return s.status();
      if (EqualsIgnoreCase(*s, "true")) {
        out = true;
      } else if (EqualsIgnoreCase(*s, "false")) {
        out = false;
      } else {
        return Error(v, absl::StrCat(path, ": expected true or false, got \"", *s, "\""));
      }
      return absl::OkStatus();
    };
  }

  template <typename Int>
  Setter Integer(Int& out, int64_t min, int64_t max) const {
    return [this, &out, min, max](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "an integer");
      if (!s.ok()) return s.status();
      const std::optional<int64_t> parsed = ParseInt<int64_t>(Trim(*s));
      if (!parsed) return Error(v, absl::StrCat(path, ": expected an integer, got \"", *s, "\""));
      if (*parsed < min || *parsed > max) {
        return Error(v, absl::StrCat(path, ": ", *parsed, " is outside ", min, "..", max));
      }
      out = static_cast<Int>(*parsed);
      return absl::OkStatus();
    };
  }

  // An integer or a Kubernetes quantity ("64Mi", "2G").
  Setter Bytes(int64_t& out, int64_t min) const {
    return [this, &out, min](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "a byte quantity");
      if (!s.ok()) return s.status();
      absl::StatusOr<int64_t> parsed = ParseByteQuantity(Trim(*s));
      if (!parsed.ok()) {
        return Error(v,
                     absl::StrCat(path, ": expected a byte quantity like 64Mi, got \"", *s, "\""));
      }
      if (*parsed < min) return Error(v, absl::StrCat(path, ": must be at least ", min));
      out = *parsed;
      return absl::OkStatus();
    };
  }

  Setter Double(double& out, double min, double max) const {
    return [this, &out, min, max](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "a number");
      if (!s.ok()) return s.status();
      const std::optional<double> parsed = ParseDouble(Trim(*s));
      if (!parsed) return Error(v, absl::StrCat(path, ": expected a number, got \"", *s, "\""));
      if (!(*parsed >= min && *parsed <= max)) {
        return Error(v, absl::StrCat(path, ": ", *parsed, " is outside ", min, "..", max));
      }
      out = *parsed;
      return absl::OkStatus();
    };
  }

  Setter Duration(absl::Duration& out, absl::Duration min) const {
    return [this, &out, min](const YAML::Node& v, const std::string& path) -> absl::Status {
      absl::StatusOr<std::string> s = Scalar(v, path, "a duration");
      if (!s.ok()) return s.status();
      absl::Duration d;
      if (!absl::ParseDuration(std::string(Trim(*s)), &d)) {
        return Error(
            v, absl::StrCat(path, ": expected a duration like \"30s\" or \"500ms\", got \"", *s,
                            "\""));
      }
      if (d < min) {
        return Error(v, absl::StrCat(path, ": must be at least ", absl::FormatDuration(min)));
      }
      out = d;
      return absl::OkStatus();
    };
  }

  Setter Strings(std::vector<std::string>& out) const {
    return [this, &out](const YAML::Node& v, const std::string& path) -> absl::Status {
      if (v.IsNull()) {
        out.clear();
        return absl::OkStatus();
      }
      if (!v.IsSequence()) return Error(v, absl::StrCat(path, ": expected a list of strings"));
      std::vector<std::string> values;
      for (size_t i = 0; i < v.size(); ++i) {
        absl::StatusOr<std::string> value =
            Scalar(v[i], absl::StrCat(path, "[", i, "]"), "a string");
        if (!value.ok()) return value.status();
        values.push_back(*value);
      }
      out = std::move(values);
      return absl::OkStatus();
    };
  }

  Setter FootprintOf(Footprint& out) const {
    return [this, &out](const YAML::Node& v, const std::string& path) {
      return Map(v, path,
                 {{"llcBytes", Bytes(out.llc_bytes, 0)},
                  {"membwBytesPerSecond", Bytes(out.membw_bytes_per_second, 0)}});
    };
  }

  Setter LabelRules(std::vector<LabelRule>& out) const {
    return [this, &out](const YAML::Node& v, const std::string& path) -> absl::Status {
      if (v.IsNull()) {
        out.clear();
        return absl::OkStatus();
      }
      if (!v.IsSequence()) return Error(v, absl::StrCat(path, ": expected a list of rules"));
      std::vector<LabelRule> rules;
      for (size_t i = 0; i < v.size(); ++i) {
        const YAML::Node& item = v[i];
        const std::string item_path = absl::StrCat(path, "[", i, "]");
        LabelRule rule;
        rule.values.clear();
        std::string class_name;
        bool have_class = false;
        if (absl::Status s = Map(
                item, item_path,
                {{"key", String(rule.key)},
                 {"values",
                  [&](const YAML::Node& values, const std::string& values_path) -> absl::Status {
                    if (!values.IsSequence()) {
                      return Error(values,
                                   absl::StrCat(values_path, ": expected a list of strings"));
                    }
                    for (size_t j = 0; j < values.size(); ++j) {
                      absl::StatusOr<std::string> value =
                          Scalar(values[j], absl::StrCat(values_path, "[", j, "]"), "a string");
                      if (!value.ok()) return value.status();
                      rule.values.push_back(*value);
                    }
                    return absl::OkStatus();
                  }},
                 {"class",
                  [&](const YAML::Node& c, const std::string& class_path) -> absl::Status {
                    absl::StatusOr<std::string> name = Scalar(c, class_path, "a class name");
                    if (!name.ok()) return name.status();
                    if (*name == "batch") {
                      rule.contention_class = ContentionClass::kBatch;
                    } else if (*name == "latency-critical") {
                      rule.contention_class = ContentionClass::kLatencyCritical;
                    } else if (*name == "standard") {
                      rule.contention_class = ContentionClass::kStandard;
                    } else {
                      return Error(c, absl::StrCat(class_path,
                                                   ": expected batch, latency-critical or "
                                                   "standard, got \"",
                                                   *name, "\""));
                    }
                    have_class = true;
                    return absl::OkStatus();
                  }}});
            !s.ok()) {
          return s;
        }
        if (rule.key.empty() || rule.values.empty() || !have_class) {
          return Error(item, absl::StrCat(item_path, ": a rule needs key, values and class"));
        }
        rules.push_back(std::move(rule));
      }
      out = std::move(rules);
      return absl::OkStatus();
    };
  }

 private:
  std::string source_;
};

}  // namespace

absl::StatusOr<ExtenderConfig> ParseExtenderConfig(std::string_view yaml, std::string_view source) {
  ExtenderConfig config;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(source), ":", e.mark.line + 1, ": YAML syntax error: ", e.msg));
  }
  const Parser p(source);
  ModelConfig& m = config.model;
  const Schema schema = {
      {"http",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(
             v, path,
             {{"address", p.String(config.http_address)},
              {"bodyLimitBytes", p.Bytes(config.http.body_limit_bytes, 1024)},
              {"maxNamesPerRequest", p.Integer(config.http.max_names_per_request, 1, 10'000'000)},
              {"readTimeout", p.Duration(config.http.read_timeout, absl::Milliseconds(1))},
              {"writeTimeout", p.Duration(config.http.write_timeout, absl::Milliseconds(1))},
              {"keepAliveTimeout", p.Duration(config.http.keep_alive_timeout, absl::Seconds(1))},
              {"requestTimeout", p.Duration(config.http.request_timeout, absl::Milliseconds(1))},
              {"workerThreads", p.Integer(config.http.worker_threads, 1, 4096)},
              {"maxConnections", p.Integer(config.http.max_connections, 1, 65536)},
              {"evaluationThreads", p.Integer(config.evaluation_threads, 0, 64)},
              {"tls", [&](const YAML::Node& t, const std::string& tpath) {
                 return p.Map(t, tpath,
                              {{"certFile", p.String(config.http.tls_cert_file)},
                               {"keyFile", p.String(config.http.tls_key_file)},
                               {"clientCaFile", p.String(config.http.tls_client_ca_file)},
                               {"reloadInterval",
                                p.Duration(config.http.tls_reload_interval, absl::Seconds(1))}});
               }}});
       }},
      {"operator",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(
             v, path,
             {{"address", p.String(config.operator_address)},
              {"tokenFile", p.String(config.operator_token_file)},
              {"tokenReloadInterval",
               p.Duration(config.operator_token_reload_interval, absl::Seconds(1))},
              {"tls", [&](const YAML::Node& t, const std::string& tpath) {
                 return p.Map(
                     t, tpath,
                     {{"certFile", p.String(config.operator_http.tls_cert_file)},
                      {"keyFile", p.String(config.operator_http.tls_key_file)},
                      {"reloadInterval",
                       p.Duration(config.operator_http.tls_reload_interval, absl::Seconds(1))}});
               }}});
       }},
      {"grpc",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(
             v, path,
             {{"address", p.String(config.grpc_address)},
              {"insecurePlaintext", p.Bool(config.grpc_insecure_plaintext)},
              {"maxReportBytes", p.Bytes(config.grpc_max_report_bytes, 4096)},
              {"maxReportsPerSecond", p.Double(config.grpc_max_reports_per_second, 0, 1e6)},
              {"reportBurst", p.Double(config.grpc_report_burst, 1, 1e6)},
              {"maxStreams", p.Integer(config.grpc_max_streams, 1, 10'000'000)},
              {"ingestScheduling",
               [&](const YAML::Node& s, const std::string& spath) -> absl::Status {
                 absl::StatusOr<std::string> value = p.Scalar(s, spath, "idle or nice");
                 if (!value.ok()) return value.status();
                 if (*value != "idle" && *value != "nice") {
                   return p.Error(
                       s, absl::StrCat(spath, ": expected idle or nice, got \"", *value, "\""));
                 }
                 config.grpc_idle_ingest_threads = *value == "idle";
                 return absl::OkStatus();
               }},
              {"tls",
               [&](const YAML::Node& t, const std::string& tpath) {
                 return p.Map(t, tpath,
                              {{"caFile", p.String(config.grpc_tls_ca_file)},
                               {"certFile", p.String(config.grpc_tls_cert_file)},
                               {"keyFile", p.String(config.grpc_tls_key_file)},
                               {"requireClientCert", p.Bool(config.grpc_tls_require_client_cert)},
                               {"reloadInterval",
                                p.Duration(config.grpc_tls_reload_interval, absl::Seconds(1))}});
               }},
              {"identity", [&](const YAML::Node& i, const std::string& ipath) {
                 return p.Map(i, ipath,
                              {{"issuer", p.String(config.identity_issuer)},
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
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(
             v, path,
             {{"file", p.String(config.state_file)},
              {"saveInterval", p.Duration(config.state_save_interval, absl::Seconds(1))},
              {"maxPods", p.Integer(config.state_max_pods, 1000, 10'000'000)},
              {"maxPodsPerNode", p.Integer(config.state_max_pods_per_node, 100, 10'000'000)},
              {"learnFromUnauthenticatedScheduler",
               p.Bool(config.state_learn_from_unauthenticated_scheduler)},
              {"maxWorkloads", p.Integer(config.state_max_workloads, 1, 1'000'000)}});
       }},
      {"metrics",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(v, path, {{"perNodeSeries", p.Bool(config.metrics_per_node_series)}});
       }},
      {"log",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(v, path, {{"level", p.String(config.log_level)}});
       }},
      {"model",
       [&](const YAML::Node& v, const std::string& path) {
         return p.Map(
             v, path,
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
              {"defaultFootprints",
               [&](const YAML::Node& f, const std::string& fpath) {
                 return p.Map(f, fpath,
                              {{"latencyCritical", p.FootprintOf(m.default_latency_critical)},
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
               [&](const YAML::Node& f, const std::string& fpath) {
                 WorkloadConfig& w = m.workloads;
                 return p.Map(f, fpath,
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
               [&](const YAML::Node& f, const std::string& fpath) {
                 return p.Map(f, fpath,
                              {{"scaleWithCpus", p.Bool(m.priors.scale_with_cpus)},
                               {"membwBytesPerSecondPerCpu",
                                p.Bytes(m.priors.membw_bytes_per_second_per_cpu, 0)},
                               {"llcBytesPerCpu", p.Bytes(m.priors.llc_bytes_per_cpu, 0)},
                               {"maxCpus", p.Double(m.priors.max_cpus, 1, 100000)}});
               }},
              {"guaranteedExclusiveIsLatencyCritical",
               p.Bool(m.guaranteed_exclusive_is_latency_critical)},
              {"aggregateStreamers", p.Bool(m.aggregate_streamers)},
              {"streamerMinMembwShare", p.Double(m.streamer_min_membw_share, 0, 1)},
              {"unmeasuredPenalty", p.Double(m.unmeasured_penalty, 0, 1)},
              {"residentsMaxAge", p.Duration(m.residents_max_age, absl::ZeroDuration())},
              {"latencyCriticalBlindScore", p.Integer(m.latency_critical_blind_score, 0, 10)}});
       }},
  };
  if (absl::Status s = p.Map(root, "", schema); !s.ok()) return s;
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
  if (command_line.log_level) config.log_level = *command_line.log_level;
  if (command_line.grpc_insecure_plaintext) config.grpc_insecure_plaintext = true;
  if (absl::Status s = ValidateExtenderConfig(config); !s.ok()) return s;
  return config;
}

std::string ExtenderUsage() {
  return "Usage: neighborly-extender [--config FILE] [--http-address HOST:PORT]\n"
         "                          [--grpc-address HOST:PORT] [--operator-address HOST:PORT]\n"
         "                          [--log-level LEVEL]\n"
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
         "  --log-level LEVEL         trace|debug|info|warn|error|off (default info)\n"
         "  --grpc-insecure-plaintext  accept telemetry without TLS (tests and demos only;\n"
         "                            same as grpc.insecurePlaintext: true)\n"
         "  --help                    this text\n"
         "  --version                 print the version\n"
         "\n"
         "Telemetry needs TLS (grpc.tls in the config) or --grpc-insecure-plaintext.\n"
         "Prints \"listening http=HOST:PORT grpc=HOST:PORT\" (plus \" operator=HOST:PORT\"\n"
         "with an operator port) once the servers accept.\n";
}

}  // namespace neighborly::extender
