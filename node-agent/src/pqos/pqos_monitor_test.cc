#include "node-agent/src/pqos/pqos_monitor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/pqos/fake_pqos.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::UnorderedElementsAre;

std::unique_ptr<PqosMonitor> Make(std::shared_ptr<FakePqos> pqos) {
  absl::StatusOr<std::unique_ptr<PqosMonitor>> m = PqosMonitor::Create(pqos, 0, nullptr);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(PqosMonitorTest, InitFailureIsTheReason) {
  auto pqos = std::make_shared<FakePqos>();
  pqos->init = absl::FailedPreconditionError("libpqos pqos_init failed (PQOS_RETVAL_ERROR)");
  absl::StatusOr<std::unique_ptr<PqosMonitor>> m = PqosMonitor::Create(pqos, 0, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("pqos_init"));
}

TEST(PqosMonitorTest, OneGroupPerPodResyncedEachWindow) {
  auto pqos = std::make_shared<FakePqos>();
  std::unique_ptr<PqosMonitor> m = Make(pqos);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->info().num_rmids, 8u);
  EXPECT_TRUE(m->info().mbm_local);
  EXPECT_THAT(m->Sync({{"a", 0, {10, 11}}, {"b", 0, {20}}}), IsEmpty());
  EXPECT_THAT(m->monitored(), ElementsAre("a", "b"));
  const int a = pqos->GroupOf(10);
  EXPECT_NE(a, 0);
  EXPECT_EQ(pqos->GroupOf(11), a);
  EXPECT_NE(pqos->GroupOf(20), a);
  EXPECT_EQ(m->rmids_free(), 8u - 1 - 2);

  // a: thread 11 ended, 12 started; b is gone.
  EXPECT_THAT(m->Sync({{"a", 0, {10, 12}}}), IsEmpty());
  EXPECT_EQ(pqos->GroupOf(10), a);
  EXPECT_EQ(pqos->GroupOf(12), a);
  EXPECT_EQ(pqos->GroupOf(11), 0);
  EXPECT_EQ(pqos->GroupOf(20), 0);
  EXPECT_THAT(m->monitored(), ElementsAre("a"));
}

TEST(PqosMonitorTest, CountersArePerPodUnderOneDomain) {
  auto pqos = std::make_shared<FakePqos>();
  std::unique_ptr<PqosMonitor> m = Make(pqos);
  ASSERT_NE(m, nullptr);
  m->Sync({{"a", 0, {10}}});
  pqos->values[pqos->GroupOf(10)] = {18'000'000, 4'000'000'000, 3'000'000'000};
  std::map<std::string, GroupCounters> read = m->ReadPods();
  EXPECT_EQ(pqos->polls, 1);
  ASSERT_THAT(read, ElementsAre(Key("a")));
  ASSERT_THAT(read["a"], ElementsAre(Key(0u)));
  EXPECT_EQ(read["a"][0].occupancy_bytes, 18'000'000u);
  EXPECT_EQ(read["a"][0].mbm_total_bytes, 4'000'000'000u);
  EXPECT_EQ(read["a"][0].mbm_local_bytes, 3'000'000'000u);
  absl::StatusOr<GroupCounters> node = m->ReadNode();
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(std::string(node.status().message()), HasSubstr("resctrl"));
}

TEST(PqosMonitorTest, PriorityOrderAndExhaustion) {
  auto pqos = std::make_shared<FakePqos>();
  pqos->max_groups = 1;  // pqos says RESOURCE after one group
  std::unique_ptr<PqosMonitor> m = Make(pqos);
  ASSERT_NE(m, nullptr);
  std::map<std::string, std::string> left =
      m->Sync({{"low", 0, {1}}, {"high", 2, {2}}, {"mid", 1, {3}}});
  EXPECT_THAT(m->monitored(), ElementsAre("high"));
  EXPECT_THAT(left, UnorderedElementsAre(Key("low"), Key("mid")));
  EXPECT_THAT(left["mid"], HasSubstr("PQOS_RETVAL_RESOURCE"));
  EXPECT_THAT(left["low"], HasSubstr("no RMID left"));

  // Budget from max_rmid: 8 RMIDs, 7 for pods.
  auto roomy = std::make_shared<FakePqos>();
  std::unique_ptr<PqosMonitor> r = Make(roomy);
  std::vector<ResctrlPod> pods;
  for (int i = 0; i < 9; ++i) pods.push_back({"p" + std::to_string(i), 0, {100 + i}});
  left = r->Sync(pods);
  EXPECT_EQ(r->monitored().size(), 7u);
  EXPECT_THAT(left, UnorderedElementsAre(Key("p7"), Key("p8")));
  EXPECT_THAT(left["p7"], HasSubstr("RMID budget exhausted"));
  EXPECT_EQ(r->rmids_free(), 0u);
}

TEST(PqosMonitorTest, RefusedThreadsAreReported) {
  auto pqos = std::make_shared<FakePqos>();
  std::unique_ptr<PqosMonitor> m = Make(pqos);
  ASSERT_NE(m, nullptr);
  m->Sync({{"a", 0, {10}}});
  pqos->rejected.insert(11);
  std::map<std::string, std::string> left = m->Sync({{"a", 0, {10, 11}}});
  EXPECT_THAT(left["a"], HasSubstr("1 of 2 threads not monitored"));
  EXPECT_THAT(m->monitored(), ElementsAre("a"));
  pqos->rejected.clear();
  EXPECT_THAT(m->Sync({{"a", 0, {10, 11}}}), IsEmpty());  // retried next window
  EXPECT_NE(pqos->GroupOf(11), 0);
}

TEST(PqosMonitorTest, NodeReaderSuppliesDomainTotals) {
  auto pqos = std::make_shared<FakePqos>();
  absl::StatusOr<std::unique_ptr<PqosMonitor>> m = PqosMonitor::Create(pqos, 0, [] {
    GroupCounters node;
    node[0].occupancy_bytes = 5;
    return absl::StatusOr<GroupCounters>(node);
  });
  ASSERT_TRUE(m.ok());
  absl::StatusOr<GroupCounters> node = (*m)->ReadNode();
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)[0].occupancy_bytes, 5u);
}

}  // namespace
}  // namespace neighborly::agent
