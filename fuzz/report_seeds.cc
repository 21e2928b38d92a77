// Writes valid NodeReports as serialized protobuf, one file each, to seed the
// report fuzzers: the test builder's two-socket node with pods, and every node
// of the scenario files given, stamped as the simulator stamps them.
//
//   neighborly_fuzz_report_seeds OUT_DIR [SCENARIO.yaml ...]
//
// Exit status 1 with one line when a scenario does not parse or a seed would
// not pass ValidateReport (a seed the validator refuses covers little).
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/time/time.h"
#include "extender/src/core/report_validation.h"
#include "extender/src/model/testing/report_builder.h"
#include "node-agent/src/simulate/node_report.h"
#include "node-agent/src/simulate/scenario.h"

namespace {

namespace tv1 = neighborly::telemetry::v1;
namespace testing = neighborly::extender::testing;

bool Write(const std::string& dir, const std::string& name, const tv1::NodeReport& report) {
  if (absl::Status s = neighborly::extender::ValidateReport(report); !s.ok()) {
    std::fprintf(stderr, "seed %s is not valid: %s\n", name.c_str(),
                 std::string(s.message()).c_str());
    return false;
  }
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  return report.SerializeToOstream(&out) && out.good();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [SCENARIO ...]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;

  tv1::NodeReport builder = testing::TwoSocketNode("node-1");
  testing::AddPod(builder, {.uid = "u1",
                            .name = "article",
                            .labels = {{"app", "article"}},
                            .annotations = {{"neighborly.io/class", "latency-critical"}},
                            .cpu_request_millicores = 2000,
                            .exclusive_cpus = "2-3",
                            .llc_bytes = 19188940,
                            .membw_bytes_per_second = 1'000'000'000,
                            .mpki = 1.5});
  testing::AddPod(builder, {.uid = "u2", .name = "batch", .qos = tv1::QOS_CLASS_BEST_EFFORT});
  testing::SetMeasured(builder, 0, 20'000'000, 2'000'000'000);
  ok = Write(dir, "builder-two-socket.pb", builder) && ok;

  for (int i = 2; i < argc; ++i) {
    absl::StatusOr<neighborly::agent::Scenario> scenario =
        neighborly::agent::LoadScenarioFile(argv[i]);
    if (!scenario.ok()) {
      std::fprintf(stderr, "%s\n", std::string(scenario.status().message()).c_str());
      ok = false;
      continue;
    }
    const std::string base = std::string(argv[i]).substr(std::string(argv[i]).rfind('/') + 1);
    for (size_t n = 0; n < scenario->nodes.size(); ++n) {
      neighborly::agent::SimulatedNode node(
          scenario->nodes[n], "8f0c7c5e-4b7a-4d8e-9a51-" + std::to_string(100000000000 + n));
      const tv1::NodeReport report =
          node.NextReport(absl::FromUnixSeconds(1'700'000'000), absl::Seconds(1));
      ok = Write(dir, base + "-" + std::to_string(n) + ".pb", report) && ok;
    }
  }
  return ok ? 0 : 1;
}
