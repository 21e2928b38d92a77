// ReplicaDirectory with a scripted resolver, and SystemResolver on literals.
#include "node-agent/src/report/replica_directory.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/support/wait_for.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kDeadline = absl::Seconds(30);

// Answers from a table the test edits; a host set to fail returns UNAVAILABLE.
class ScriptedResolver final : public AddressResolver {
 public:
  struct Table {
    std::mutex mu;
    std::map<std::string, std::vector<std::string>> hosts;
    std::map<std::string, int> calls;
  };
  explicit ScriptedResolver(std::shared_ptr<Table> table) : table_(std::move(table)) {}
  absl::StatusOr<std::vector<std::string>> Resolve(const HostPort& target) override {
    std::lock_guard<std::mutex> lock(table_->mu);
    ++table_->calls[target.host];
    auto it = table_->hosts.find(target.host);
    if (it == table_->hosts.end()) return absl::UnavailableError("no such host " + target.host);
    std::vector<std::string> out;
    for (const std::string& ip : it->second) out.push_back(JoinHostPort(ip, target.port));
    return out;
  }

 private:
  std::shared_ptr<Table> table_;
};

bool Eventually(const std::function<bool()>& pred) {
  return ::neighborly::testing::WaitFor(pred, kDeadline);
}

std::vector<std::string> Addresses(const std::vector<Replica>& replicas) {
  std::vector<std::string> out;
  for (const Replica& r : replicas) out.push_back(r.address);
  return out;
}

std::unique_ptr<ReplicaDirectory> Make(std::shared_ptr<ScriptedResolver::Table> table,
                                       std::vector<std::string> targets,
                                       absl::Duration interval = absl::Hours(1)) {
  absl::StatusOr<std::unique_ptr<ReplicaDirectory>> d = ReplicaDirectory::Create(
      {.targets = std::move(targets),
       .resolve_interval = interval,
       .min_resolve_gap = absl::Milliseconds(10)},
      std::make_unique<ScriptedResolver>(std::move(table)));
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? std::move(*d) : nullptr;
}

TEST(ReplicaDirectoryTest, EveryAddressOfEveryTargetWithTheNameToVerify) {
  auto table = std::make_shared<ScriptedResolver::Table>();
  table->hosts["agents.neighborly.svc"] = {"10.0.0.6", "10.0.0.5"};
  table->hosts["192.168.1.9"] = {"192.168.1.9"};
  auto directory = Make(table, {"agents.neighborly.svc:9090", "192.168.1.9:9091"});
  directory->Start();
  const std::vector<Replica> replicas = directory->Replicas();
  ASSERT_EQ(replicas.size(), 3u);
  EXPECT_EQ(replicas[0], (Replica{"192.168.1.9:9091", "192.168.1.9:9091", ""}));
  EXPECT_EQ(replicas[1],
            (Replica{"agents.neighborly.svc:9090", "10.0.0.5:9090", "agents.neighborly.svc"}));
  EXPECT_EQ(replicas[2],
            (Replica{"agents.neighborly.svc:9090", "10.0.0.6:9090", "agents.neighborly.svc"}));
}

TEST(ReplicaDirectoryTest, ListenersFollowAddedAndRemovedReplicasInOrder) {
  auto table = std::make_shared<ScriptedResolver::Table>();
  table->hosts["svc"] = {"10.0.0.1", "10.0.0.2"};
  auto directory = Make(table, {"svc:9090"});
  directory->Start();
  std::mutex mu;
  std::vector<std::vector<std::string>> seen;
  const uint64_t id = directory->Subscribe([&](const std::vector<Replica>& now) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(Addresses(now));
  });
  {
    std::lock_guard<std::mutex> lock(table->mu);
    table->hosts["svc"] = {"10.0.0.2", "10.0.0.3"};
  }
  directory->ResolveSoon();
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() == 2;
  }));
  directory->Unsubscribe(id);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(seen, ElementsAre(ElementsAre("10.0.0.1:9090", "10.0.0.2:9090"),
                                ElementsAre("10.0.0.2:9090", "10.0.0.3:9090")));
}

TEST(ReplicaDirectoryTest, ResolvesAgainEveryIntervalWithoutBeingAsked) {
  auto table = std::make_shared<ScriptedResolver::Table>();
  table->hosts["svc"] = {"10.0.0.1"};
  auto directory = Make(table, {"svc:9090"}, absl::Milliseconds(20));
  directory->Start();
  {
    std::lock_guard<std::mutex> lock(table->mu);
    table->hosts["svc"] = {"10.0.0.1", "10.0.0.9"};
  }
  ASSERT_TRUE(Eventually([&] { return directory->Replicas().size() == 2; }));
  EXPECT_GE(directory->target_stats()[0].resolves, 2u);
}

TEST(ReplicaDirectoryTest, AFailedResolutionKeepsTheLastReplicas) {
  auto table = std::make_shared<ScriptedResolver::Table>();
  table->hosts["svc"] = {"10.0.0.1", "10.0.0.2"};
  auto directory = Make(table, {"svc:9090"});
  directory->Start();
  {
    std::lock_guard<std::mutex> lock(table->mu);
    table->hosts.erase("svc");
  }
  directory->ResolveSoon();
  ASSERT_TRUE(Eventually([&] { return directory->target_stats()[0].resolve_failures == 1; }));
  EXPECT_THAT(Addresses(directory->Replicas()), ElementsAre("10.0.0.1:9090", "10.0.0.2:9090"));
  EXPECT_THAT(directory->target_stats()[0].last_error, HasSubstr("no such host svc"));
  EXPECT_EQ(directory->target_stats()[0].replicas, 2u);
}

TEST(ReplicaDirectoryTest, ATargetWithoutReplicasIsRetriedSoonAfterwards) {
  auto table = std::make_shared<ScriptedResolver::Table>();
  auto directory = Make(table, {"late:9090"});  // resolve_interval 1 h
  directory->Start();
  EXPECT_TRUE(directory->Replicas().empty());
  {
    std::lock_guard<std::mutex> lock(table->mu);
    table->hosts["late"] = {"10.0.0.4"};
  }
  ASSERT_TRUE(Eventually([&] { return directory->Replicas().size() == 1; }));
}

TEST(ReplicaDirectoryTest, ATargetThatIsNotHostPortIsRefusedByName) {
  for (const char* bad : {"no-port", "svc:0", ":9090"}) {
    absl::StatusOr<std::unique_ptr<ReplicaDirectory>> d = ReplicaDirectory::Create(
        {.targets = {bad}}, std::make_unique<ScriptedResolver>(
                                std::make_shared<ScriptedResolver::Table>()));
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr(bad));
  }
}

TEST(SystemResolverTest, LiteralsResolveToThemselves) {
  SystemResolver resolver;
  absl::StatusOr<std::vector<std::string>> v4 = resolver.Resolve({.host = "127.0.0.12", .port = 9});
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_THAT(*v4, ElementsAre("127.0.0.12:9"));
  absl::StatusOr<std::vector<std::string>> v6 = resolver.Resolve({.host = "::1", .port = 9});
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_THAT(*v6, ElementsAre("[::1]:9"));
  EXPECT_TRUE(IsIpLiteral("::1"));
  EXPECT_TRUE(IsIpLiteral("10.1.2.3"));
  EXPECT_FALSE(IsIpLiteral("neighborly-extender-agents.neighborly.svc"));
}

TEST(SystemResolverTest, AnUnknownNameIsAnErrorNamingIt) {
  SystemResolver resolver;
  // RFC 6761: .invalid never resolves.
  absl::StatusOr<std::vector<std::string>> r =
      resolver.Resolve({.host = "no-such-extender.invalid", .port = 9090});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("no-such-extender.invalid"));
}

}  // namespace
}  // namespace neighborly::agent
