// Issue 26 end to end on loopback: the real neighborly-extender, the real
// neighborly-agent --simulate on the seed's incident over time
// (deploy/examples/content-platform-incident.yaml) and the real neighborlyctl.
// Attribution names the analytics job beside the article service from
// telemetry alone and nobody on the quiet node; the memory view ranks the
// pods as the kubelet would evict them and flags the tampered oom_score_adj.
#include <httplib.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/support/command.h"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"
#include "test/support/wait_for.h"

namespace neighborly {
namespace {

using nlohmann::json;
using testing::BinaryPath;
using testing::RunCommand;
using ::testing::HasSubstr;
using testing::Subprocess;

const char kScenario[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform-incident.yaml";


class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::RunningExtender> e = testing::StartExtender();
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = std::move(e->process);
    addresses_ = e->addresses;
    client_ = std::make_unique<httplib::Client>(absl::StrCat("http://", addresses_.http));
    client_->set_read_timeout(5);
    auto p = Subprocess::Start({BinaryPath("node-agent/neighborly-agent"), "--simulate", kScenario,
                                "--extender", addresses_.grpc, "--interval", "300ms",
                                "--insecure-plaintext"});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
  }

  json Get(const std::string& path) {
    httplib::Result r = client_->Get(path);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  std::string Ctl(const std::string& args) {
    auto [status, out] = RunCommand(absl::StrCat(BinaryPath("tools/neighborlyctl/neighborlyctl"),
                                          " --server http://", addresses_.http, " ", args));
    EXPECT_EQ(status, 0) << args;
    return out;
  }

  std::unique_ptr<Subprocess> extender_;
  std::unique_ptr<Subprocess> agent_;
  testing::ExtenderAddresses addresses_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(IsolationTest, AttributionNamesTheAnalyticsJobAndNobodyOnTheQuietNode) {
  json view;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        view = Get("/v1/interference");
        return view.is_object() && view["victims"].size() == 1 &&
               !view["victims"][0]["suspects"].empty();
      },
      absl::Seconds(60), absl::Milliseconds(200)))
      << view.dump() << agent_->Stderr() << extender_->Stderr();
  const json& victim = view["victims"][0];
  EXPECT_EQ(victim["node"], "node-1");
  EXPECT_EQ(victim["pod"], "content/article-service-5d8f7-abcde");
  EXPECT_EQ(victim["workload"], "content/Deployment/article-service");
  ASSERT_EQ(victim["suspects"].size(), 1u) << victim.dump();  // not fluent-bit
  EXPECT_EQ(victim["suspects"][0]["pod"], "analytics/event-ingest-5b7c9-qwert");
  EXPECT_GT(victim["suspects"][0]["score"].get<double>(), 0.5);
  json quiet = Get("/v1/interference?node=node-6");
  EXPECT_TRUE(quiet["victims"].empty()) << quiet.dump();
  EXPECT_EQ(quiet["nodes"][0]["victims"], 0);

  const std::string table = Ctl("interference");
  EXPECT_THAT(table, HasSubstr("content/article-service-5d8f7-abcde"));
  EXPECT_THAT(table, HasSubstr("analytics/event-ingest-5b7c9-qwert"));
  EXPECT_THAT(Ctl("interference node-6"), HasSubstr("No victims"));

  // Advice for the article service: it already has every layer (Guaranteed,
  // pinned, single-numa-node nodes) and is a victim now.
  const json advice = Get("/v1/advice/content/Deployment/article-service");
  ASSERT_TRUE(advice.is_object());
  EXPECT_EQ(advice["replicas"], 2);
  EXPECT_EQ(advice["victim"], true);
  for (const json& layer : advice["layers"]) EXPECT_EQ(layer["present"], true) << layer.dump();
  EXPECT_THAT(Ctl("advise content/Deployment/article-service"),
              HasSubstr("No change to its pod template."));

  // Rebalancing: once the victim has persisted (10 windows), move the
  // analytics job (the cheaper to move) to the batch node with room, not to
  // node-6 beside the other article-service replica.
  json moves;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        moves = Get("/v1/rebalance");
        return moves.is_object() && !moves["proposals"].empty();
      },
      absl::Seconds(60), absl::Milliseconds(200)))
      << moves.dump();
  const json& move = moves["proposals"][0];
  EXPECT_EQ(move["victim"], "content/article-service-5d8f7-abcde");
  EXPECT_EQ(move["move"], "analytics/event-ingest-5b7c9-qwert");
  EXPECT_EQ(move["fromNode"], "node-1");
  EXPECT_EQ(move["toNode"], "node-3") << move.dump();
  EXPECT_THAT(Ctl("rebalance"), HasSubstr("move analytics/event-ingest-5b7c9-qwert: node-1 -> node-3"));

  httplib::Result metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_node_interference_victims{node=\"node-1\"} 1"));
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_node_interference_victims{node=\"node-6\"} 0"));
  EXPECT_THAT(metrics->body, HasSubstr("neighborly_node_interference_suspects{node=\"node-1\"} 1"));
}

TEST_F(IsolationTest, MemoryViewRanksAsTheKubeletAndFlagsTheTamperedProcess) {
  json memory;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        memory = Get("/v1/nodes/node-1/memory");
        return memory.is_object();
      },
      absl::Seconds(30), absl::Milliseconds(100)))
      << extender_->Stderr();
  EXPECT_EQ(memory["availableBytes"], 7516192768u);
  EXPECT_EQ(memory["thresholds"][0]["value"], "500Mi");
  EXPECT_EQ(memory["thresholds"][0]["distanceBytes"], 7516192768 - 524288000);
  ASSERT_EQ(memory["evictionOrder"].size(), 3u);
  EXPECT_EQ(memory["evictionOrder"][0]["name"], "event-ingest-5b7c9-qwert");  // 4 GiB over
  EXPECT_EQ(memory["evictionOrder"][1]["name"], "fluent-bit-x7d2k");          // BestEffort
  EXPECT_EQ(memory["evictionOrder"][2]["name"], "article-service-5d8f7-abcde");
  EXPECT_EQ(memory["oomScoreAdjMismatches"], 1);
  EXPECT_EQ(memory["evictionOrder"][1]["oomScoreAdjMismatch"], true);
  EXPECT_EQ(memory["evictionOrder"][0]["expectedOomScoreAdj"], json::array({875}));

  const std::string table = Ctl("memory node-1");
  EXPECT_THAT(table, HasSubstr("MISMATCH"));
  EXPECT_THAT(table, HasSubstr("distance 6.5GiB"));
  auto [status, json_out] = RunCommand(absl::StrCat(BinaryPath("tools/neighborlyctl/neighborlyctl"),
                                             " --server http://", addresses_.http,
                                             " -o json memory node-1"));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(json::parse(json_out)["podsOverRequest"], 2);
  // An unknown node: 404 with a message, exit 1.
  auto [missing, _] = RunCommand(absl::StrCat(BinaryPath("tools/neighborlyctl/neighborlyctl"),
                                       " --server http://", addresses_.http,
                                       " memory node-9 2>/dev/null"));
  EXPECT_NE(missing, 0);
  httplib::Result r = client_->Get("/v1/nodes/node-9/memory");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["Error"], "unknown node \"node-9\": no telemetry received");
}

}  // namespace
}  // namespace neighborly
