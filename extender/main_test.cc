// The neighborly-extender binary end to end: flags, config errors, the
// "listening" line, a real request, SIGTERM with state saved.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using ::testing::HasSubstr;
using testing::Subprocess;

std::unique_ptr<Subprocess> Start(std::vector<std::string> args) {
  args.insert(args.begin(), NEIGHBORLY_EXTENDER_BINARY);
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(args);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

std::string TempDir(const std::string& name) {
  const std::string dir = std::string(NEIGHBORLY_BINARY_DIR) + "/extender_main_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ExtenderMainTest, VersionAndHelp) {
  auto version = Start({"--version"});
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->Wait(absl::Seconds(20)), 0);
  auto help = Start({"--help"});
  ASSERT_NE(help, nullptr);
  EXPECT_EQ(help->Wait(absl::Seconds(20)), 0);
}

TEST(ExtenderMainTest, BadFlagOrConfigExitsTwoWithOneLine) {
  auto bad_flag = Start({"--http-adress", "x"});
  ASSERT_NE(bad_flag, nullptr);
  EXPECT_EQ(bad_flag->Wait(absl::Seconds(20)), 2);
  EXPECT_EQ(bad_flag->Stderr(),
            "neighborly-extender: unknown flag \"--http-adress\" (see --help)\n");

  const std::string dir = TempDir("bad_config");
  std::ofstream(dir + "/extender.yaml")
      << "http:\n  address: 127.0.0.1:0\nmodel:\n  maxAge: soon\n";
  auto bad_config = Start({"--config", dir + "/extender.yaml"});
  ASSERT_NE(bad_config, nullptr);
  EXPECT_EQ(bad_config->Wait(absl::Seconds(20)), 2);
  EXPECT_THAT(bad_config->Stderr(),
              HasSubstr("extender.yaml:4: model.maxAge: expected a duration"));
}

TEST(ExtenderMainTest, ServesAndShutsDownCleanlyOnSigterm) {
  const std::string dir = TempDir("serve");
  const std::string state = dir + "/state.json";
  std::ofstream(dir + "/extender.yaml")
      << "state:\n  file: " << state << "\n  saveInterval: 1s\nlog:\n  level: info\n";
  auto p = Start({"--config", dir + "/extender.yaml", "--http-address", "127.0.0.1:0",
                  "--grpc-address", "127.0.0.1:0"});
  ASSERT_NE(p, nullptr);
  std::optional<std::string> line = p->WaitForLine("listening http=", absl::Seconds(30));
  ASSERT_TRUE(line.has_value()) << p->Stderr();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*line, m,
                                std::regex(R"(listening http=127\.0\.0\.1:(\d+) grpc=\S+:(\d+))")))
      << *line;
  const int http_port = std::stoi(m[1]);
  EXPECT_GT(http_port, 0);
  EXPECT_GT(std::stoi(m[2]), 0);

  httplib::Client client("127.0.0.1", http_port);
  client.set_read_timeout(20, 0);
  std::ifstream in(std::string(NEIGHBORLY_SOURCE_DIR) +
                   "/test/testdata/extender/example_b_filter_names.json");
  std::stringstream body;
  body << in.rdbuf();
  httplib::Result filter = client.Post("/filter", body.str(), "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 200);
  // No telemetry at all: every node passes (fail open).
  EXPECT_EQ(nlohmann::json::parse(filter->body)["NodeNames"],
            nlohmann::json::parse(R"(["worker-1","worker-2"])"));
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  httplib::Result nodes = client.Get("/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->body, "[]");

  EXPECT_EQ(p->Terminate(absl::Seconds(30)), 0) << p->Stderr();
  EXPECT_TRUE(std::filesystem::exists(state));
}

}  // namespace
}  // namespace neighborly
