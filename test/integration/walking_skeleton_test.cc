// End to end on loopback: the real neighborly-extender and the real
// neighborly-agent --simulate on the reference scenario, driven over real HTTP
// the way kube-scheduler drives it. Checks the design's acceptance criteria.
#include <httplib.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using nlohmann::json;
using testing::BinaryPath;
using ::testing::HasSubstr;
using testing::Subprocess;

const char kScenario[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform.yaml";
const char kIncoming[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform-incoming.json";

json LoadIncoming(std::string_view name_prefix) {
  std::ifstream in(kIncoming);
  const json all = json::parse(in);
  for (const json& pod : all["pods"]) {
    if (pod["metadata"]["name"].get<std::string>().starts_with(name_prefix)) return pod;
  }
  ADD_FAILURE() << "no incoming pod " << name_prefix;
  return json::object();
}

class WalkingSkeletonTest : public ::testing::Test {
 protected:
  void StartExtender(const std::string& grpc = "127.0.0.1:0") {
    absl::StatusOr<testing::RunningExtender> e = testing::StartExtender(grpc);
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = std::move(e->process);
    addresses_ = e->addresses;
    client_ = std::make_unique<httplib::Client>(absl::StrCat("http://", addresses_.http));
    client_->set_read_timeout(5);
  }

  void StartFleet() {
    auto p = Subprocess::Start({BinaryPath("node-agent/neighborly-agent"), "--simulate", kScenario,
                                "--extender", addresses_.grpc, "--interval", "1s",
                                "--insecure-plaintext"});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
    // Wait (with a deadline) until every scenario node is known to the extender.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      if (Nodes().size() == 6) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "fleet did not appear in /v1/nodes\n" << agent_->Stderr() << extender_->Stderr();
  }

  json Nodes() {
    httplib::Result r = client_->Get("/v1/nodes");
    if (!r || r->status != 200) return json::array();
    return json::parse(r->body);
  }

  json NodeDetail(const std::string& name) {
    httplib::Result r = client_->Get(absl::StrCat("/v1/nodes/", name));
    EXPECT_TRUE(r && r->status == 200);
    return r ? json::parse(r->body) : json::object();
  }

  json Call(const std::string& verb, const json& pod, const std::vector<std::string>& names) {
    const json body = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
    httplib::Result r = client_->Post("/" + verb, body.dump(), "application/json");
    EXPECT_TRUE(r) << verb;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }

  std::vector<std::string> AllNames() {
    std::vector<std::string> names;
    for (const json& n : Nodes()) names.push_back(n["name"].get<std::string>());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::unique_ptr<Subprocess> extender_;
  std::unique_ptr<Subprocess> agent_;
  testing::ExtenderAddresses addresses_;
  std::unique_ptr<httplib::Client> client_;
};

// Without telemetry every node passes with the blind score: neutral 5 for the
// batch job, 3 for the latency-critical article service.
TEST_F(WalkingSkeletonTest, NoTelemetryPassesEveryNodeWithTheBlindScore) {
  StartExtender();
  const std::vector<std::string> names = {"node-1", "node-2", "node-3"};
  for (const auto& [prefix, blind] :
       {std::pair<const char*, int>{"article-service", 3}, {"analytics-ingest", 5}}) {
    const json pod = LoadIncoming(prefix);
    const json filter = Call("filter", pod, names);
    EXPECT_EQ(filter["NodeNames"], json(names));
    EXPECT_TRUE(filter["FailedNodes"].empty()) << filter.dump();
    const json prio = Call("prioritize", pod, names);
    ASSERT_EQ(prio.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      EXPECT_EQ(prio[i]["Host"], names[i]);
      EXPECT_EQ(prio[i]["Score"], blind) << prefix;
    }
  }
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

TEST_F(WalkingSkeletonTest, ReferenceScenarioAcceptance) {
  StartExtender();
  StartFleet();
  const std::vector<std::string> names = AllNames();
  ASSERT_EQ(names.size(), 6u);

  // What the agents reported, per node: latency-critical residents, aggressors,
  // and whether any NUMA node can still hold 4 exclusive CPUs.
  std::set<std::string> with_latency_critical, with_aggressor, numa_full;
  for (const std::string& name : names) {
    const json detail = NodeDetail(name);
    for (const json& pod : detail["pods"]) {
      // The cache-sensitive article service (18 MB working set): predicted
      // harm, not class, refuses (issue 22), and a small latency-critical API
      // on the other socket may share a node with a batch job within its 1.2x.
      if (pod["contentionClass"] == "latency-critical" &&
          pod["name"].get<std::string>().starts_with("article-service")) {
        with_latency_critical.insert(name);
      }
      // A bandwidth-heavy batch job or a measured aggressor (10 GB/s is a fifth
      // of a NUMA node's 50 GB/s peak in this scenario).
      const bool heavy = pod["membwTotalBytesPerSecond"].is_number() &&
                         pod["membwTotalBytesPerSecond"].get<double>() >= 10e9;
      if (pod["aggressor"] == true || (pod["contentionClass"] == "batch" && heavy)) {
        with_aggressor.insert(name);
      }
    }
    bool fits = false;
    for (const json& numa : detail["numaNodes"]) {
      if (numa["freeExclusiveCpus"].get<int>() >= 4) fits = true;
    }
    if (!fits) numa_full.insert(name);
  }
  // The scenario must exercise every filter, or this test proves nothing.
  ASSERT_FALSE(with_latency_critical.empty());
  ASSERT_FALSE(with_aggressor.empty());
  ASSERT_FALSE(numa_full.empty());

  // 1. The batch job is never placed beside the article service.
  const json batch = LoadIncoming("analytics-ingest");
  const json batch_filter = Call("filter", batch, names);
  for (const std::string& node : with_latency_critical) {
    EXPECT_TRUE(batch_filter["FailedNodes"].contains(node)) << node << " " << batch_filter.dump();
  }
  const json batch_survivors = batch_filter["NodeNames"];
  ASSERT_FALSE(batch_survivors.empty()) << batch_filter.dump();
  const json batch_scores =
      Call("prioritize", batch, batch_survivors.get<std::vector<std::string>>());
  ASSERT_EQ(batch_scores.size(), batch_survivors.size());

  // 2. The article service is never placed on a node with a bandwidth-saturating
  //    batch job, and 3. never where no NUMA node can hold its 4 exclusive CPUs.
  const json article = LoadIncoming("article-service");
  const json article_filter = Call("filter", article, names);
  for (const std::string& node : with_aggressor) {
    EXPECT_TRUE(article_filter["FailedNodes"].contains(node)) << node << article_filter.dump();
  }
  for (const std::string& node : numa_full) {
    ASSERT_TRUE(article_filter["FailedNodes"].contains(node)) << node << article_filter.dump();
    EXPECT_THAT(article_filter["FailedNodes"][node].get<std::string>(), HasSubstr("NUMA"));
  }
  for (const json& survivor : article_filter["NodeNames"]) {
    EXPECT_FALSE(with_aggressor.count(survivor.get<std::string>()));
  }

  // Every decision is explainable through the operator API.
  httplib::Result explain = client_->Get(
      absl::StrCat("/v1/decisions?pod=", article["metadata"]["uid"].get<std::string>()));
  ASSERT_TRUE(explain);
  EXPECT_EQ(explain->status, 200);
  EXPECT_THAT(explain->body, HasSubstr("NUMA"));

  EXPECT_EQ(agent_->Terminate(), 0) << agent_->Stderr();
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

TEST_F(WalkingSkeletonTest, AgentReconnectsAfterExtenderRestart) {
  StartExtender();
  StartFleet();
  const std::string grpc = addresses_.grpc;
  ASSERT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
  // Same gRPC port, new process: the fleet must come back on its own.
  StartExtender(grpc);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  size_t seen = 0;
  while (absl::Now() < deadline && (seen = Nodes().size()) < 6) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(seen, 6u) << agent_->Stderr();
}

}  // namespace
}  // namespace neighborly
