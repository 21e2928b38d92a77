#include "extender/src/config/extender_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(yaml, "extender.yaml");
  EXPECT_FALSE(c.ok()) << yaml;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ExtenderConfigTest, EmptyFileGivesDefaults) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig("", "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http_address, "0.0.0.0:8888");
  EXPECT_EQ(c->grpc_address, "0.0.0.0:9090");
  EXPECT_EQ(c->http.body_limit_bytes, 64 << 20);
  EXPECT_EQ(c->http.worker_threads, 64);
  EXPECT_EQ(c->http.max_connections, 1024);
  EXPECT_EQ(c->http.max_in_flight_bytes, 0);  // twice bodyLimitBytes
  EXPECT_FALSE(c->http.server_timing);
  EXPECT_EQ(c->http.read_timeout, absl::Seconds(5));
  EXPECT_EQ(c->state_file, "");
  EXPECT_EQ(c->state_max_pods, 200'000);
  EXPECT_EQ(c->evaluation_threads, 0);
  EXPECT_TRUE(c->grpc_idle_ingest_threads);
  EXPECT_EQ(c->log_level, "info");
  EXPECT_TRUE(c->metrics_per_node_series);
  EXPECT_DOUBLE_EQ(c->model.membw_headroom, ModelConfig().membw_headroom);
  EXPECT_EQ(c->model.label_rules.size(), 1u);
  EXPECT_TRUE(ValidateExtenderConfig(*c).ok());
}

TEST(ExtenderConfigTest, ReadsEveryKey) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(R"(
http:
  address: 127.0.0.1:0
  bodyLimitBytes: 8Mi
  readTimeout: 2s
  writeTimeout: 3s
  keepAliveTimeout: 4s
  requestTimeout: 500ms
  workerThreads: 16
  evaluationThreads: 2
  maxConnections: 32
  maxInFlightBytes: 24Mi
  serverTiming: true
grpc:
  address: "[::1]:0"
  adaptiveInterval:
    enabled: false
    maxLag: 2s
    maxInterval: 1m
state:
  file: /tmp/neighborly-state.json
  saveInterval: 15s
  maxPods: 50000
  maxNodes: 60000
readiness:
  reportInterval: 10s
  grace: 8s
  knownNodeShare: 0.75
  maxWait: 2m
metrics:
  perNodeSeries: false
log:
  level: debug
model:
  labelRules:
  - {key: tier, values: [frontend], class: latency-critical}
  - key: workload-type
    values: [batch, etl]
    class: batch
  aggressorMembwShare: 0.3
  aggressorL3Share: 0.6
  aggressorMinMpki: 4
  isolateLatencyCritical: false
  isolateBatch: false
  membwHeadroom: 0.7
  numaAdmission: false
  defaultFootprints:
    latencyCritical: {llcBytes: 10Mi, membwBytesPerSecond: 3G}
    batch: {llcBytes: 30Mi, membwBytesPerSecond: 20G}
    standard: {llcBytes: 2Mi, membwBytesPerSecond: 500M}
  defaultPeakMembwBytesPerSecond: 40G
  l3Weight: 0.5
  membwWeight: 0.4
  numaWeight: 0.1
  membwQueueScale: 4
  freshIntervals: 5
  maxAge: 2m
  bookingTtl: 45s
)",
                                                         "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http_address, "127.0.0.1:0");
  EXPECT_EQ(c->http.body_limit_bytes, 8 << 20);
  EXPECT_EQ(c->http.max_in_flight_bytes, 24 << 20);
  EXPECT_TRUE(c->http.server_timing);
  EXPECT_EQ(c->http.read_timeout, absl::Seconds(2));
  EXPECT_EQ(c->http.write_timeout, absl::Seconds(3));
  EXPECT_EQ(c->http.keep_alive_timeout, absl::Seconds(4));
  EXPECT_EQ(c->http.request_timeout, absl::Milliseconds(500));
  EXPECT_EQ(c->http.worker_threads, 16);
  EXPECT_EQ(c->evaluation_threads, 2);
  EXPECT_EQ(c->http.max_connections, 32);
  EXPECT_EQ(c->grpc_address, "[::1]:0");
  EXPECT_EQ(c->state_file, "/tmp/neighborly-state.json");
  EXPECT_EQ(c->state_save_interval, absl::Seconds(15));
  EXPECT_EQ(c->state_max_pods, 50'000);
  EXPECT_EQ(c->state_max_nodes, 60'000);
  EXPECT_FALSE(c->grpc_adaptive_interval);
  EXPECT_EQ(c->grpc_adaptive_max_lag, absl::Seconds(2));
  EXPECT_EQ(c->grpc_adaptive_max_interval, absl::Minutes(1));
  EXPECT_EQ(c->readiness_report_interval, absl::Seconds(10));
  EXPECT_EQ(c->readiness_grace, absl::Seconds(8));
  EXPECT_DOUBLE_EQ(c->readiness_known_node_share, 0.75);
  EXPECT_EQ(c->readiness_max_wait, absl::Minutes(2));
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_FALSE(c->metrics_per_node_series);
  const ModelConfig& m = c->model;
  ASSERT_EQ(m.label_rules.size(), 2u);
  EXPECT_EQ(m.label_rules[0].key, "tier");
  EXPECT_EQ(m.label_rules[0].contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(m.label_rules[1].values, (std::vector<std::string>{"batch", "etl"}));
  EXPECT_DOUBLE_EQ(m.aggressor_membw_share, 0.3);
  EXPECT_DOUBLE_EQ(m.aggressor_l3_share, 0.6);
  EXPECT_DOUBLE_EQ(m.aggressor_min_mpki, 4);
  EXPECT_FALSE(m.isolate_latency_critical);
  EXPECT_FALSE(m.isolate_batch);
  EXPECT_DOUBLE_EQ(m.membw_headroom, 0.7);
  EXPECT_FALSE(m.numa_admission);
  EXPECT_EQ(m.default_latency_critical.llc_bytes, 10 << 20);
  EXPECT_EQ(m.default_latency_critical.membw_bytes_per_second, 3'000'000'000);
  EXPECT_EQ(m.default_batch.membw_bytes_per_second, 20'000'000'000);
  EXPECT_EQ(m.default_standard.llc_bytes, 2 << 20);
  EXPECT_EQ(m.default_peak_membw_bytes_per_second, 40'000'000'000);
  EXPECT_DOUBLE_EQ(m.l3_weight, 0.5);
  EXPECT_DOUBLE_EQ(m.membw_weight, 0.4);
  EXPECT_DOUBLE_EQ(m.numa_weight, 0.1);
  EXPECT_DOUBLE_EQ(m.membw_queue_scale, 4);
  EXPECT_EQ(m.fresh_intervals, 5);
  EXPECT_EQ(m.max_age, absl::Minutes(2));
  EXPECT_EQ(m.booking_ttl, absl::Seconds(45));
}

TEST(ExtenderConfigTest, UnknownKeysAreNamedWithTheirLine) {
  EXPECT_THAT(ErrorOf("http:\n  address: 1.2.3.4:1\nmodle:\n  x: 1\n"),
              HasSubstr("extender.yaml:3: unknown key \"modle\""));
  EXPECT_THAT(ErrorOf("model:\n  isolateBatch: true\n  isolateBatchh: true\n"),
              HasSubstr("extender.yaml:3: unknown key \"model.isolateBatchh\""));
  EXPECT_THAT(ErrorOf("model:\n  defaultFootprints:\n    batch:\n      llc: 1\n"),
              HasSubstr("extender.yaml:4: unknown key \"model.defaultFootprints.batch.llc\""));
  EXPECT_THAT(ErrorOf("model:\n  labelRules:\n  - {key: a, values: [b], class: batch, x: 1}\n"),
              HasSubstr("unknown key \"model.labelRules[0].x\""));
}

TEST(ExtenderConfigTest, WrongTypesAreNamedWithTheirLine) {
  EXPECT_THAT(ErrorOf("http:\n  workerThreads: many\n"),
              HasSubstr("extender.yaml:2: http.workerThreads: expected an integer, got \"many\""));
  EXPECT_THAT(ErrorOf("http:\n  workerThreads: 0\n"), HasSubstr("outside 1..4096"));
  EXPECT_THAT(ErrorOf("grpc:\n  ingestScheduling: realtime\n"),
              HasSubstr("extender.yaml:2: grpc.ingestScheduling: expected idle or nice, got "
                        "\"realtime\""));
  EXPECT_THAT(ErrorOf("http:\n  evaluationThreads: 65\n"),
              HasSubstr("http.evaluationThreads: 65 is outside 0..64"));
  EXPECT_THAT(ErrorOf("state:\n  maxPods: 10\n"),
              HasSubstr("extender.yaml:2: state.maxPods: 10 is outside 1000..10000000"));
  EXPECT_THAT(ErrorOf("\n\nmodel:\n  maxAge: 60\n"),
              HasSubstr("extender.yaml:4: model.maxAge: expected a duration"));
  EXPECT_THAT(ErrorOf("model:\n  isolateBatch: maybe\n"),
              HasSubstr("model.isolateBatch: expected true or false"));
  EXPECT_THAT(ErrorOf("model:\n  membwHeadroom: 1.5\n"), HasSubstr("outside 0..1"));
  EXPECT_THAT(ErrorOf("readiness:\n  knownNodeShare: 1.2\n"),
              HasSubstr("readiness.knownNodeShare: 1.2 is outside 0..1"));
  EXPECT_THAT(ErrorOf("readiness:\n  grace: soon\n"),
              HasSubstr("extender.yaml:2: readiness.grace: expected a duration"));
  EXPECT_THAT(ErrorOf("http: [1, 2]\n"),
              HasSubstr("extender.yaml:1: http: expected a map, got a list"));
  EXPECT_THAT(ErrorOf("http:\n  address: {a: 1}\n"),
              HasSubstr("extender.yaml:2: http.address: expected a string, got a map"));
  EXPECT_THAT(ErrorOf("http:\n  bodyLimitBytes: lots\n"),
              HasSubstr("http.bodyLimitBytes: expected a byte quantity"));
  EXPECT_THAT(ErrorOf("model:\n  labelRules:\n  - {key: a, values: [b], class: noisy}\n"),
              HasSubstr("model.labelRules[0].class: expected batch, latency-critical or standard"));
  EXPECT_THAT(ErrorOf("model:\n  labelRules:\n  - {key: a}\n"),
              HasSubstr("needs key, values and class"));
  EXPECT_THAT(ErrorOf("- a\n- b\n"),
              HasSubstr("extender.yaml:1: top level: expected a map, got a list"));
  EXPECT_THAT(ErrorOf("http:\n  address: a\n  address: b\n"), HasSubstr("duplicate key"));
}

TEST(ExtenderConfigTest, YamlSyntaxErrorsNameTheLine) {
  EXPECT_THAT(ErrorOf("http:\n  address: [1, 2\n"), HasSubstr("extender.yaml:3: not valid YAML"));
}

// Merge keys ("<<") are resolved (common/yaml_fields.h); before, the
// extender refused them as an unknown key "<<".
TEST(ExtenderConfigTest, MergeKeysShareSettings) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(R"(
http:
  tls: &tls {certFile: /tls/tls.crt, keyFile: /tls/tls.key, reloadInterval: 1m}
operator:
  tls:
    <<: *tls
    reloadInterval: 30s
model:
  <<: [{l3Weight: 2, numaWeight: 3}, {l3Weight: 9, smtWeight: 4}]
  numaWeight: 5
)",
                                                         "extender.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->operator_http.tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(c->operator_http.tls_key_file, "/tls/tls.key");
  EXPECT_EQ(c->operator_http.tls_reload_interval, absl::Seconds(30));  // own key wins
  EXPECT_EQ(c->http.tls_reload_interval, absl::Minutes(1));
  EXPECT_DOUBLE_EQ(c->model.l3_weight, 2);  // the first merged map wins
  EXPECT_DOUBLE_EQ(c->model.smt_weight, 4);
  EXPECT_DOUBLE_EQ(c->model.numa_weight, 5);
  // Merged keys are checked like the map's own: http.tls has a clientCaFile,
  // operator.tls does not.
  EXPECT_THAT(ErrorOf("http:\n  tls: &t {clientCaFile: /ca.crt}\noperator:\n  tls: {<<: *t}\n"),
              HasSubstr("extender.yaml:2: unknown key \"operator.tls.clientCaFile\""));
  EXPECT_THAT(ErrorOf("model: {<<: {l3Weight: heavy}}\n"),
              HasSubstr("extender.yaml:1: model.l3Weight: expected a number, got \"heavy\""));
}

std::vector<const char*> Argv(std::initializer_list<const char*> args) {
  std::vector<const char*> v = {"neighborly-extender"};
  v.insert(v.end(), args);
  return v;
}

TEST(CommandLineTest, ParsesFlagsInBothForms) {
  auto argv = Argv({"--config", "a.yaml", "--http-address=127.0.0.1:0", "--grpc-address",
                    "127.0.0.1:0", "--log-level=debug"});
  absl::StatusOr<CommandLine> cl = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->config_file, "a.yaml");
  EXPECT_EQ(cl->http_address, "127.0.0.1:0");
  EXPECT_EQ(cl->grpc_address, "127.0.0.1:0");
  EXPECT_EQ(cl->log_level, "debug");
  auto help = Argv({"--help", "--version"});
  cl = ParseCommandLine(static_cast<int>(help.size()), help.data());
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->help);
  EXPECT_TRUE(cl->version);
}

TEST(CommandLineTest, BadFlagsAreNamed) {
  auto unknown = Argv({"--http-adress", "x"});
  absl::StatusOr<CommandLine> cl =
      ParseCommandLine(static_cast<int>(unknown.size()), unknown.data());
  ASSERT_FALSE(cl.ok());
  EXPECT_THAT(std::string(cl.status().message()), HasSubstr("unknown flag \"--http-adress\""));
  auto missing = Argv({"--config"});
  cl = ParseCommandLine(static_cast<int>(missing.size()), missing.data());
  ASSERT_FALSE(cl.ok());
  EXPECT_THAT(std::string(cl.status().message()), HasSubstr("--config needs a value"));
}

TEST(CommandLineTest, FlagsOverrideTheFileAndAreValidated) {
  const std::string path = std::string(NEIGHBORLY_BINARY_DIR) + "/extender_config_test.yaml";
  {
    std::ofstream out(path);
    out << "http:\n  address: 0.0.0.0:1234\ngrpc:\n  address: 0.0.0.0:5678\n";
  }
  CommandLine cl;
  cl.config_file = path;
  cl.http_address = "127.0.0.1:0";
  absl::StatusOr<ExtenderConfig> c = LoadExtenderConfig(cl);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http_address, "127.0.0.1:0");
  EXPECT_EQ(c->grpc_address, "0.0.0.0:5678");

  cl.http_address = "no-port";
  c = LoadExtenderConfig(cl);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("http address"));
  cl.http_address.reset();
  cl.log_level = "loud";
  EXPECT_FALSE(LoadExtenderConfig(cl).ok());
  cl.log_level.reset();
  cl.config_file = path + ".missing";
  c = LoadExtenderConfig(cl);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("cannot read config file"));
  std::remove(path.c_str());
}

TEST(ExtenderConfigTest, ReadsTransportSecurityAndLimits) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(R"(
http:
  tls:
    certFile: /tls/http.crt
    keyFile: /tls/http.key
    clientCaFile: /tls/scheduler-ca.crt
    reloadInterval: 1m
grpc:
  maxReportBytes: 4Mi
  maxReportsPerSecond: 2.5
  reportBurst: 6
  ingestScheduling: nice
  tls:
    caFile: /tls/ca.crt
    certFile: /tls/tls.crt
    keyFile: /tls/tls.key
    requireClientCert: false
    reloadInterval: 30s
  identity:
    issuer: https://kubernetes.default.svc.cluster.local
    audience: neighborly-test
    jwksFile: /keys/jwks.json
    publicKeyFiles: [/keys/sa.pub, /keys/sa2.pub]
    allowedSubjects: ["system:serviceaccount:neighborly:neighborly-agent"]
    leeway: 10s
    reloadInterval: 5s
)",
                                                         "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->grpc_idle_ingest_threads);
  EXPECT_EQ(c->http.tls_cert_file, "/tls/http.crt");
  EXPECT_EQ(c->http.tls_key_file, "/tls/http.key");
  EXPECT_EQ(c->http.tls_client_ca_file, "/tls/scheduler-ca.crt");
  EXPECT_EQ(c->http.tls_reload_interval, absl::Minutes(1));
  EXPECT_EQ(c->grpc_max_report_bytes, 4 << 20);
  EXPECT_DOUBLE_EQ(c->grpc_max_reports_per_second, 2.5);
  EXPECT_DOUBLE_EQ(c->grpc_report_burst, 6);
  EXPECT_EQ(c->grpc_tls_ca_file, "/tls/ca.crt");
  EXPECT_EQ(c->grpc_tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(c->grpc_tls_key_file, "/tls/tls.key");
  EXPECT_FALSE(c->grpc_tls_require_client_cert);
  EXPECT_EQ(c->grpc_tls_reload_interval, absl::Seconds(30));
  EXPECT_EQ(c->identity_issuer, "https://kubernetes.default.svc.cluster.local");
  EXPECT_EQ(c->identity_audience, "neighborly-test");
  EXPECT_EQ(c->identity_jwks_file, "/keys/jwks.json");
  EXPECT_EQ(c->identity_public_key_files,
            (std::vector<std::string>{"/keys/sa.pub", "/keys/sa2.pub"}));
  EXPECT_EQ(c->identity_allowed_subjects,
            (std::vector<std::string>{"system:serviceaccount:neighborly:neighborly-agent"}));
  EXPECT_EQ(c->identity_leeway, absl::Seconds(10));
  EXPECT_EQ(c->identity_reload_interval, absl::Seconds(5));
  EXPECT_TRUE(ValidateExtenderConfig(*c).ok());
  EXPECT_TRUE(CheckTransportSecurity(*c).ok());
}

TEST(ExtenderConfigTest, CredentialReloadIntervalsDefaultAndAreChecked) {
  absl::StatusOr<ExtenderConfig> defaults = ParseExtenderConfig("", "x.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->http.tls_reload_interval, absl::Seconds(10));
  EXPECT_EQ(defaults->identity_reload_interval, absl::Seconds(10));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http:\n  tls:\n    reloadInterval: 100ms\n",
       "x.yaml:3: http.tls.reloadInterval: must be at least 1s"},
      {"grpc:\n  identity:\n    reloadInterval: soon\n", "grpc.identity.reloadInterval"},
      {"http:\n  tls:\n    reloadIntervall: 10s\n", "unknown key \"http.tls.reloadIntervall\""},
  };
  for (const auto& [yaml, message] : cases) {
    absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(yaml, "x.yaml");
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(message)) << yaml;
  }
}

TEST(ExtenderConfigTest, TelemetryIsNeverPlaintextByOmission) {
  ExtenderConfig c;
  absl::Status s = CheckTransportSecurity(c);
  EXPECT_THAT(std::string(s.message()), HasSubstr("telemetry needs TLS"));
  c.grpc_insecure_plaintext = true;
  EXPECT_TRUE(CheckTransportSecurity(c).ok());
  const char* argv[] = {"neighborly-extender", "--grpc-insecure-plaintext"};
  absl::StatusOr<CommandLine> cl = ParseCommandLine(2, argv);
  ASSERT_TRUE(cl.ok()) << cl.status();
  absl::StatusOr<ExtenderConfig> loaded = LoadExtenderConfig(*cl);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->grpc_insecure_plaintext);
}

TEST(ExtenderConfigTest, PlacementPortIsOffByDefaultAndNeverPlaintextByOmission) {
  ExtenderConfig c;
  c.grpc_insecure_plaintext = true;
  EXPECT_EQ(c.placement_address, "");
  EXPECT_TRUE(CheckTransportSecurity(c).ok());
  const char* argv[] = {"neighborly-extender", "--placement-address=127.0.0.1:0",
                        "--grpc-insecure-plaintext"};
  absl::StatusOr<CommandLine> cl = ParseCommandLine(3, argv);
  ASSERT_TRUE(cl.ok()) << cl.status();
  absl::StatusOr<ExtenderConfig> loaded = LoadExtenderConfig(*cl);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->placement_address, "127.0.0.1:0");
  EXPECT_THAT(std::string(CheckTransportSecurity(*loaded).message()),
              HasSubstr("the placement port needs TLS"));
  const char* plaintext[] = {"neighborly-extender", "--placement-address", "127.0.0.1:0",
                             "--placement-insecure-plaintext", "--grpc-insecure-plaintext"};
  cl = ParseCommandLine(5, plaintext);
  ASSERT_TRUE(cl.ok()) << cl.status();
  loaded = LoadExtenderConfig(*cl);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->placement_insecure_plaintext);
  EXPECT_TRUE(CheckTransportSecurity(*loaded).ok());

  absl::StatusOr<ExtenderConfig> parsed = ParseExtenderConfig(R"(
placement:
  address: 0.0.0.0:9091
  maxThreads: 8
  tls:
    caFile: /tls/ca.crt
    certFile: /tls/tls.crt
    keyFile: /tls/tls.key
    reloadInterval: 30s
grpc:
  insecurePlaintext: true
)",
                                                              "x.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->placement_address, "0.0.0.0:9091");
  EXPECT_EQ(parsed->placement_max_threads, 8);
  EXPECT_EQ(parsed->placement_tls_ca_file, "/tls/ca.crt");
  EXPECT_EQ(parsed->placement_tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(parsed->placement_tls_key_file, "/tls/tls.key");
  EXPECT_EQ(parsed->placement_tls_reload_interval, absl::Seconds(30));
  EXPECT_TRUE(ValidateExtenderConfig(*parsed).ok());
  EXPECT_TRUE(CheckTransportSecurity(*parsed).ok());
  EXPECT_THAT(ErrorOf("placement:\n  adress: x\n"), HasSubstr("unknown key"));
  EXPECT_THAT(ErrorOf("placement:\n  maxThreads: 1\n"),
              HasSubstr("placement.maxThreads: 1 is outside 2..4096"));
}

TEST(ExtenderConfigTest, InconsistentSecuritySettingsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"grpc:\n  tls:\n    certFile: /a\n", "certFile and keyFile go together"},
      {"grpc:\n  tls:\n    caFile: /ca\n", "caFile needs grpc.tls.certFile"},
      {"grpc:\n  tls:\n    certFile: /a\n    keyFile: /b\n", "requireClientCert needs"},
      {"grpc:\n  insecurePlaintext: true\n  tls:\n    caFile: /c\n    certFile: /a\n    keyFile: "
       "/b\n",
       "contradicts"},
      {"grpc:\n  identity:\n    jwksFile: /k\n", "needs issuer"},
      {"grpc:\n  identity:\n    issuer: https://k8s\n", "needs jwksFile or publicKeyFiles"},
      {"http:\n  tls:\n    keyFile: /b\n", "http.tls: certFile and keyFile"},
      {"http:\n  tls:\n    clientCaFile: /c\n", "clientCaFile needs"},
      {"http:\n  bodyLimitBytes: 64Mi\n  maxInFlightBytes: 32Mi\n",
       "http.maxInFlightBytes (33554432) must be 0 (twice http.bodyLimitBytes) or at least"},
      {"placement:\n  address: 0.0.0.0:9091\n  tls:\n    certFile: /a\n    keyFile: /b\n",
       "placement.tls needs certFile, keyFile and caFile"},
      {"placement:\n  insecurePlaintext: true\n  tls:\n    caFile: /c\n    certFile: /a\n"
       "    keyFile: /b\n",
       "placement.insecurePlaintext contradicts placement.tls"},
      {"placement:\n  address: nowhere\n", "placement address"},
  };
  for (const auto& [yaml, message] : cases) {
    absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(yaml, "x.yaml");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_THAT(std::string(ValidateExtenderConfig(*c).message()), HasSubstr(message)) << yaml;
  }
  EXPECT_THAT(ErrorOf("grpc:\n  identity:\n    publicKeyFiles: /one.pub\n"),
              HasSubstr("grpc.identity.publicKeyFiles: expected a list of strings"));
  EXPECT_THAT(ErrorOf("grpc:\n  tls:\n    requireClientCert: maybe\n"),
              HasSubstr("expected true or false"));
  EXPECT_THAT(ErrorOf("grpc:\n  maxReportBytes: 10\n"), HasSubstr("at least 4096"));
}

}  // namespace
}  // namespace neighborly::extender

namespace neighborly::extender {
namespace {

TEST(ExtenderConfigTest, ReadsTheOperatorPort) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(
      "operator:\n  address: 127.0.0.1:8889\n  tokenFile: /etc/ops/tokens\n"
      "  tokenReloadInterval: 30s\n  tls:\n    certFile: /t/tls.crt\n    keyFile: /t/tls.key\n"
      "    reloadInterval: 5s\n",
      "extender.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->operator_address, "127.0.0.1:8889");
  EXPECT_EQ(c->operator_token_file, "/etc/ops/tokens");
  EXPECT_EQ(c->operator_token_reload_interval, absl::Seconds(30));
  EXPECT_EQ(c->operator_http.tls_cert_file, "/t/tls.crt");
  EXPECT_EQ(c->operator_http.tls_key_file, "/t/tls.key");
  EXPECT_EQ(c->operator_http.tls_reload_interval, absl::Seconds(5));
  EXPECT_TRUE(ParseExtenderConfig("", "x.yaml")->operator_address.empty());
  EXPECT_THAT(ErrorOf("operator:\n  clientCaFile: /ca.crt\n"), HasSubstr("clientCaFile"));
  EXPECT_THAT(ErrorOf("operator:\n  tokenReloadInterval: 10ms\n"),
              HasSubstr("operator.tokenReloadInterval"));
}

TEST(ExtenderConfigTest, OperatorPortSettingsAreValidated) {
  ExtenderConfig config;
  config.operator_address = "no-port";
  EXPECT_THAT(ValidateExtenderConfig(config).message(), HasSubstr("operator address"));
  config.operator_address = "0.0.0.0:8889";
  config.operator_http.tls_cert_file = "/t/tls.crt";
  EXPECT_THAT(ValidateExtenderConfig(config).message(),
              HasSubstr("operator.tls: certFile and keyFile go together"));
  config.operator_http.tls_key_file = "/t/tls.key";
  EXPECT_TRUE(ValidateExtenderConfig(config).ok());
}

TEST(CommandLineTest, OperatorAddressFlagOverridesTheFile) {
  const char* argv[] = {"neighborly-extender", "--operator-address=127.0.0.1:0"};
  absl::StatusOr<CommandLine> cl = ParseCommandLine(2, argv);
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->operator_address, "127.0.0.1:0");
  absl::StatusOr<ExtenderConfig> c = LoadExtenderConfig(*cl);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->operator_address, "127.0.0.1:0");
}

// Issue 26: the attribution's and the rebalancing advice's thresholds.
TEST(ExtenderConfigTest, AttributionAndRebalanceThresholds) {
  absl::StatusOr<ExtenderConfig> defaults = ParseExtenderConfig("", "x.yaml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->attribution_history_windows, 30);
  EXPECT_EQ(defaults->attribution_victim_windows, 3);
  EXPECT_DOUBLE_EQ(defaults->attribution_sigma, 2.0);
  EXPECT_EQ(defaults->attribution_observe_interval, absl::Milliseconds(500));
  EXPECT_EQ(defaults->rebalance_min_persisting_windows, 10);
  EXPECT_EQ(defaults->rebalance_max_moves, 5);

  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(R"(
attribution:
  historyWindows: 60
  recentWindows: 8
  victimWindows: 6
  sigma: 3
  minRelativeSpread: 0.1
  minCorrelationWindows: 12
  minCorrelation: 0.6
  minScore: 0.4
  minBaselineSamples: 10
  repeatAntagonistCount: 5
  observeInterval: 2s
rebalance:
  minPersistingWindows: 30
  maxMoves: 2
)",
                                                         "x.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->attribution_history_windows, 60);
  EXPECT_EQ(c->attribution_recent_windows, 8);
  EXPECT_EQ(c->attribution_victim_windows, 6);
  EXPECT_DOUBLE_EQ(c->attribution_sigma, 3);
  EXPECT_DOUBLE_EQ(c->attribution_min_relative_spread, 0.1);
  EXPECT_EQ(c->attribution_min_correlation_windows, 12);
  EXPECT_DOUBLE_EQ(c->attribution_min_correlation, 0.6);
  EXPECT_DOUBLE_EQ(c->attribution_min_score, 0.4);
  EXPECT_EQ(c->attribution_min_baseline_samples, 10);
  EXPECT_EQ(c->attribution_repeat_antagonist_count, 5);
  EXPECT_EQ(c->attribution_observe_interval, absl::Seconds(2));
  EXPECT_EQ(c->rebalance_min_persisting_windows, 30);
  EXPECT_EQ(c->rebalance_max_moves, 2);
  EXPECT_TRUE(ValidateExtenderConfig(*c).ok());

  EXPECT_THAT(ErrorOf("attribution:\n  minCorrelation: 1.5\n"),
              HasSubstr("attribution.minCorrelation"));
  EXPECT_THAT(ErrorOf("rebalance:\n  maxMoves: 0\n"), HasSubstr("rebalance.maxMoves"));
  EXPECT_THAT(ErrorOf("attribution:\n  sigmaa: 2\n"), HasSubstr("unknown key \"attribution.sigmaa\""));
  absl::StatusOr<ExtenderConfig> crossed =
      ParseExtenderConfig("attribution:\n  recentWindows: 4\n  victimWindows: 5\n", "x.yaml");
  ASSERT_TRUE(crossed.ok());
  EXPECT_THAT(ValidateExtenderConfig(*crossed).message(),
              HasSubstr("attribution.victimWindows (5) must not exceed attribution.recentWindows (4)"));
  crossed = ParseExtenderConfig("attribution:\n  historyWindows: 8\n  minCorrelationWindows: 9\n",
                                "x.yaml");
  ASSERT_TRUE(crossed.ok());
  EXPECT_THAT(ValidateExtenderConfig(*crossed).message(),
              HasSubstr("must not exceed attribution.historyWindows (8)"));
}

}  // namespace
}  // namespace neighborly::extender


namespace neighborly::extender {
namespace {

// Issue 27: the allocation policy for the agents, off by default.
TEST(ExtenderConfigTest, AllocationIsOffByDefaultAndValidated) {
  absl::StatusOr<ExtenderConfig> defaults = ParseExtenderConfig("", "extender.yaml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_FALSE(defaults->allocation_enabled);
  absl::StatusOr<ExtenderConfig> on = ParseExtenderConfig(
      "allocation:\n  enabled: true\n  batch:\n    l3WaysFraction: 0.25\n    mbaPercent: 30\n"
      "    mbaMBps: 4000\n",
      "extender.yaml");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->allocation_enabled);
  EXPECT_DOUBLE_EQ(on->allocation_batch_l3_ways_fraction, 0.25);
  EXPECT_EQ(on->allocation_batch_mba_percent, 30);
  EXPECT_EQ(on->allocation_batch_mba_mbps, 4000);
  EXPECT_THAT(ErrorOf("allocation:\n  batch:\n    l3WaysFraction: 2\n"),
              HasSubstr("extender.yaml:3: allocation.batch.l3WaysFraction: 2 is outside 0..1"));
  EXPECT_THAT(ErrorOf("allocation:\n  batch:\n    mbaPercent: 150\n"),
              HasSubstr("allocation.batch.mbaPercent: 150 is outside 0..100"));
  EXPECT_THAT(ErrorOf("allocation:\n  latencyCritical: {}\n"),
              HasSubstr("unknown key \"allocation.latencyCritical\""));
}

}  // namespace
}  // namespace neighborly::extender
