// Tests of the cluster state: lock-free snapshots under concurrent ingest, the
// pod registry (eviction, persistence, corrupt files), bookings, decision log.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "extender/src/model/testing/report_builder.h"
#include "extender/src/state/booking_ledger.h"
#include "extender/src/state/cluster_state.h"
#include "extender/src/state/decision_log.h"
#include "extender/src/state/pod_registry.h"
#include "extender/src/state/workload_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<const NodeSnapshot> Snapshot(const std::string& node, uint64_t sequence) {
  auto snap = std::make_unique<NodeSnapshot>();
  snap->report = testing::TwoSocketNode(node, sequence);
  snap->profile = BuildNodeProfile(snap->report, ModelConfig{}, nullptr, absl::UnixEpoch());
  return snap;
}

std::string TempPath(const std::string& name) {
  const std::string dir = std::string(NEIGHBORLY_BINARY_DIR) + "/state_test_tmp";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::filesystem::remove(path);
  return path;
}

// --- cluster state ---

TEST(ClusterStateTest, EntriesAreStableAndFoundByName) {
  ClusterState state(2);
  ClusterState::Entry* a = state.GetOrCreate("node-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(state.GetOrCreate("node-a"), a);
  EXPECT_EQ(state.view().Find("node-a"), a);
  EXPECT_EQ(state.view().Find("node-b"), nullptr);
  ClusterState::View before = state.view();
  ASSERT_NE(state.GetOrCreate("node-b"), nullptr);
  EXPECT_EQ(before.Find("node-b"), nullptr);  // a view is a consistent snapshot
  EXPECT_NE(state.view().Find("node-b"), nullptr);
  EXPECT_EQ(state.GetOrCreate("node-c"), nullptr);  // bounded
  EXPECT_EQ(a->snapshot.load(), nullptr);
}

TEST(ClusterStateTest, ReadersSeeWholeSnapshotsWhileIngestPublishes) {
  ClusterState state;
  constexpr int kNodes = 8;
  constexpr uint64_t kReports = 300;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<int> inconsistencies{0};

  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      std::vector<uint64_t> last(kNodes, 0);
      while (!done.load()) {
        ClusterState::View view = state.view();
        for (int n = 0; n < kNodes; ++n) {
          const std::string name = "node-" + std::to_string(n);
          ClusterState::Entry* e = view.Find(name);
          if (e == nullptr) continue;
          const NodeSnapshot* snap = e->snapshot.load();
          if (snap == nullptr) continue;
          // A snapshot is whole: profile and report agree, and never go backwards.
          if (snap->profile.name != name || snap->report.node_name() != name ||
              snap->profile.numa.size() != 2 || snap->report.sequence() < last[n]) {
            inconsistencies.fetch_add(1);
          }
          last[n] = snap->report.sequence();
          reads.fetch_add(1);
        }
      }
    });
  }
  for (uint64_t seq = 1; seq <= kReports; ++seq) {
    for (int n = 0; n < kNodes; ++n) {
      const std::string name = "node-" + std::to_string(n);
      ClusterState::Entry* e = state.GetOrCreate(name);
      std::lock_guard<std::mutex> lock(e->ingest_mu);
      state.PublishSnapshot(*e, Snapshot(name, seq));
    }
  }
  // Let readers observe the final state at least once before stopping.
  const uint64_t target = reads.load() + kNodes;
  while (reads.load() < target) std::this_thread::yield();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(inconsistencies.load(), 0);
  EXPECT_EQ(state.view().Find("node-3")->snapshot.load()->report.sequence(), kReports);
}

TEST(ClusterStateTest, ReplacedSnapshotsLiveAsLongAsAViewThatCouldSeeThem) {
  ClusterState state;
  ClusterState::Entry* e = state.GetOrCreate("node-1");
  state.PublishSnapshot(*e, Snapshot("node-1", 1));
  {
    ClusterState::View view = state.view();
    const NodeSnapshot* first = view.Find("node-1")->snapshot.load();
    for (uint64_t seq = 2; seq <= 100; ++seq) state.PublishSnapshot(*e, Snapshot("node-1", seq));
    // Nothing retired after `view` began may go, and `first` is still whole.
    EXPECT_EQ(state.retired(), 99u);
    EXPECT_EQ(first->report.sequence(), 1u);
    EXPECT_EQ(view.Find("node-1")->snapshot.load()->report.sequence(), 100u);
  }
  // With no reader left, the next retirements free the backlog.
  for (uint64_t seq = 101; seq <= 164; ++seq) state.PublishSnapshot(*e, Snapshot("node-1", seq));
  EXPECT_LT(state.retired(), 64u);
}

// Freeing retired snapshots is ingest's job: a booking published by a
// scheduler request never pays for it (below a large backlog).
TEST(ClusterStateTest, PublishingBookingsLeavesTheFreeingToIngest) {
  ClusterState state;
  ClusterState::Entry* e = state.GetOrCreate("node-1");
  {
    ClusterState::View view = state.view();
    for (uint64_t seq = 1; seq <= 100; ++seq) state.PublishSnapshot(*e, Snapshot("node-1", seq));
  }
  EXPECT_EQ(state.retired(), 99u);
  for (int i = 0; i < 200; ++i) state.PublishBookings(*e, std::make_unique<const BookingList>());
  // (the first replaces no list: 199 retired lists)
  EXPECT_EQ(state.retired(), 99u + 199u) << "a booking freed the backlog";
  state.PublishSnapshot(*e, Snapshot("node-1", 101));
  EXPECT_EQ(state.retired(), 0u);
}

TEST(ClusterStateTest, ManyNodesAreFoundAndViewsListThemInCreationOrder) {
  ClusterState state(5000);
  for (int i = 0; i < 5000; ++i) ASSERT_NE(state.GetOrCreate("n" + std::to_string(i)), nullptr);
  EXPECT_EQ(state.GetOrCreate("one-too-many"), nullptr);
  ClusterState::View view = state.view();
  ASSERT_EQ(view.entries().size(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    const std::string name = "n" + std::to_string(i);
    ASSERT_NE(view.Find(name), nullptr) << name;
    EXPECT_EQ(view.Find(name)->name, name);
    EXPECT_EQ(view.entries()[i]->name, name);
  }
  EXPECT_EQ(view.Find("n5000"), nullptr);
  EXPECT_EQ(view.Find(""), nullptr);
}

// The change journal (issue 25): every replaced snapshot and booking list,
// in order, from any cursor still within its reach; an overrun or a cursor
// from the future is said so rather than answered in part.
TEST(ClusterStateTest, TheJournalListsWhatChangedSinceACursor) {
  ClusterState state(8);
  ClusterState::Entry* a = state.GetOrCreate("node-a");
  ClusterState::Entry* b = state.GetOrCreate("node-b");
  ClusterState::Entry* c = state.GetOrCreate("node-c");
  const uint64_t start = state.journal_end();
  EXPECT_EQ(start, 0u);
  state.PublishSnapshot(*b, Snapshot("node-b", 1));
  const uint64_t after_b = state.journal_end();
  state.PublishBookings(*a, std::make_unique<const BookingList>());
  state.PublishSnapshot(*b, Snapshot("node-b", 2));
  state.PublishBookings(*c, nullptr);
  std::vector<uint64_t> changed;
  std::optional<uint64_t> next = state.ChangedSince(start, changed);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, state.journal_end());
  EXPECT_EQ(changed, (std::vector<uint64_t>{b->ordinal, a->ordinal, b->ordinal, c->ordinal}));
  changed.clear();
  ASSERT_TRUE(state.ChangedSince(after_b, changed).has_value());
  EXPECT_EQ(changed, (std::vector<uint64_t>{a->ordinal, b->ordinal, c->ordinal}));
  changed.clear();
  ASSERT_EQ(state.ChangedSince(*next, changed), next) << "nothing new";
  EXPECT_TRUE(changed.empty());
  EXPECT_FALSE(state.ChangedSince(*next + 1, changed).has_value()) << "a cursor from the future";
  // More changes than the journal holds since `next`: an overrun, nothing appended.
  for (size_t i = 0; i <= ClusterState::kJournal; ++i) {
    state.PublishBookings(*a, std::make_unique<const BookingList>());
  }
  EXPECT_FALSE(state.ChangedSince(*next, changed).has_value());
  EXPECT_TRUE(changed.empty());
  // The newest kJournal changes are still there.
  ASSERT_TRUE(state.ChangedSince(state.journal_end() - ClusterState::kJournal, changed));
  EXPECT_EQ(changed.size(), ClusterState::kJournal);
}

// --- pod registry ---

RememberedPod Remembered(ContentionClass c, std::optional<int64_t> llc = std::nullopt) {
  RememberedPod p;
  p.contention_class = c;
  p.source = ClassSource::kAnnotation;
  p.hints.llc_bytes = llc;
  return p;
}

TEST(PodRegistryTest, RemembersAndEvictsTheLeastRecentlySeen) {
  PodRegistry registry(2);
  const absl::Time t = absl::FromUnixSeconds(100);
  registry.Remember("a", Remembered(ContentionClass::kBatch), t);
  registry.Remember("b", Remembered(ContentionClass::kLatencyCritical), t + absl::Seconds(1));
  registry.Remember("a", Remembered(ContentionClass::kBatch), t + absl::Seconds(2));  // refresh a
  registry.Remember("c", Remembered(ContentionClass::kStandard), t + absl::Seconds(3));
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_FALSE(registry.Lookup("b").has_value());
  ASSERT_TRUE(registry.Lookup("a").has_value());
  EXPECT_EQ(registry.Lookup("a")->contention_class, ContentionClass::kBatch);
  std::vector<std::optional<RememberedPod>> found;
  registry.LookupMany({"a", "b", "c"}, found);
  EXPECT_TRUE(found[0] && found[2]);
  EXPECT_FALSE(found[1]);
}

TEST(PodRegistryTest, SurvivesSaveAndLoad) {
  const std::string path = TempPath("registry.json");
  PodRegistry registry;
  registry.Remember("u1", Remembered(ContentionClass::kLatencyCritical, 19188940),
                    absl::FromUnixSeconds(5));
  RememberedPod measured = Remembered(ContentionClass::kBatch);
  measured.source = ClassSource::kLabelRule;
  measured.hints.membw_bytes_per_second = 22'100'000'000;
  registry.Remember("u2", measured, absl::FromUnixSeconds(6));
  ASSERT_TRUE(registry.Save(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  PodRegistry restored(1);  // smaller: keeps the most recent
  ASSERT_TRUE(restored.Load(path).ok());
  EXPECT_EQ(restored.size(), 1u);
  ASSERT_TRUE(restored.Lookup("u2").has_value());
  EXPECT_EQ(restored.Lookup("u2")->source, ClassSource::kLabelRule);
  EXPECT_EQ(restored.Lookup("u2")->hints.membw_bytes_per_second, 22'100'000'000);

  PodRegistry full;
  ASSERT_TRUE(full.Load(path).ok());
  ASSERT_TRUE(full.Lookup("u1").has_value());
  EXPECT_EQ(full.Lookup("u1")->contention_class, ContentionClass::kLatencyCritical);
  EXPECT_EQ(full.Lookup("u1")->hints.llc_bytes, 19188940);
}

TEST(PodRegistryTest, KeepsWorkloadKeysAndOtherSectionsOfTheStateFile) {
  const std::string path = TempPath("sections.json");
  PodRegistry registry;
  RememberedPod pod = Remembered(ContentionClass::kStandard);
  pod.workload = "shop/Deployment/web";
  registry.Remember("u1", pod, absl::FromUnixSeconds(5));
  ASSERT_TRUE(registry.Save(path, {{"workloads", R"([{"x":1}])"}}).ok());
  PodRegistry restored;
  PodRegistry::StateSections sections;
  ASSERT_TRUE(restored.Load(path, &sections).ok());
  EXPECT_EQ(restored.Lookup("u1")->workload, "shop/Deployment/web");
  ASSERT_TRUE(sections.contains("workloads"));
  EXPECT_EQ(sections["workloads"], R"([{"x":1}])");
  EXPECT_FALSE(registry.Save(path, {{"workloads", "{not json"}}).ok());
}

WorkloadObservation Observation(double membw, double share) {
  WorkloadObservation o;
  o.membw_bytes_per_second = membw;
  o.llc_bytes = 30e6;
  o.mpki = 25;
  o.ipc = 0.6;
  o.cpu_millicores = 1900;
  o.membw_share = share;
  o.l3_share = 0.2;
  o.pod_uid_hash = 42;
  return o;
}

TEST(WorkloadStoreTest, LearnsPredictsAndEvictsTheLeastRecentlyUsed) {
  ModelConfig config;
  WorkloadStore store(2);
  const absl::Time t = absl::FromUnixSeconds(1'790'000'000);
  store.Observe("a/Deployment/scan", Observation(22e9, 0.44), 1, t, config);
  store.Observe("a/Deployment/web", Observation(1e9, 0.02), 1, t, config);
  EXPECT_FALSE(store.Predict("a/Deployment/none", t, config));
  std::optional<WorkloadPrediction> scan = store.Predict("a/Deployment/scan", t, config);
  ASSERT_TRUE(scan);
  EXPECT_TRUE(scan->aggressor);
  EXPECT_EQ(store.predictions_used(), 1u);
  store.Observe("a/Deployment/new", Observation(1e9, 0.02), 1, t, config);  // evicts web
  EXPECT_EQ(store.size(), 2u);
  EXPECT_TRUE(store.Get("a/Deployment/scan", t, config));
  EXPECT_FALSE(store.Get("a/Deployment/web", t, config));
  ASSERT_TRUE(store.VerdictOf("a/Deployment/scan"));
  EXPECT_TRUE(store.VerdictOf("a/Deployment/scan")->aggressor);
}

TEST(WorkloadStoreTest, RoundTripsThroughJsonAndRefusesDamage) {
  ModelConfig config;
  WorkloadStore store;
  const absl::Time t = absl::FromUnixSeconds(1'790'000'000);
  for (int i = 0; i < 40; ++i) {
    store.Observe("a/Deployment/scan", Observation(22e9, 0.44), 7, t + absl::Seconds(i), config);
  }
  const std::string json = store.ToJson();
  WorkloadStore restored;
  ASSERT_TRUE(restored.FromJson(json).ok());
  const absl::Time later = t + absl::Minutes(1);
  std::optional<WorkloadView> a = store.Get("a/Deployment/scan", later, config);
  std::optional<WorkloadView> b = restored.Get("a/Deployment/scan", later, config);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(b->prediction.windows, a->prediction.windows, 1e-6);
  EXPECT_NEAR(*b->prediction.membw_bytes_per_second, *a->prediction.membw_bytes_per_second, 1e3);
  EXPECT_EQ(b->prediction.aggressor, a->prediction.aggressor);
  EXPECT_EQ(b->aggressor_since, a->aggressor_since);
  for (const std::string& bad :
       {std::string("{"), std::string("{}"), std::string(R"([{"key":""}])"),
        std::string(R"([{"key":"a/b/c","windows_weight":-1}])")}) {
    WorkloadStore untouched;
    untouched.Observe("x/Pod/y", Observation(1e9, 0.02), 1, t, config);
    const absl::Status s = untouched.FromJson(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_EQ(untouched.size(), 1u) << "a refused section changes nothing";
  }
}

// A production-sized registry is sharded: every UID is still found, the bound
// holds, Save/Load round-trips across shards, and concurrent writers and
// readers (a scheduler request and ingest) keep it whole.
TEST(PodRegistryTest, ShardedRegistryKeepsItsPromises) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  PodRegistry registry(65'536);  // 64 shards of 1,024
  const RememberedPod batch{ContentionClass::kBatch, ClassSource::kLabelRule, {}};
  for (int i = 0; i < 20'000; ++i) {
    registry.Remember("uid-" + std::to_string(i), batch, t0 + absl::Milliseconds(i));
  }
  EXPECT_EQ(registry.size(), 20'000u);
  std::vector<std::string> owned = {"uid-0", "uid-19999", "nope", "uid-777"};
  std::vector<std::string_view> uids(owned.begin(), owned.end());
  std::vector<std::optional<RememberedPod>> found;
  registry.LookupMany(uids, found);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_TRUE(found[0] && found[1] && found[3]);
  EXPECT_FALSE(found[2]);

  const std::string path = TempPath("sharded.json");
  ASSERT_TRUE(registry.Save(path).ok());
  PodRegistry loaded(65'536);
  ASSERT_TRUE(loaded.Load(path).ok());
  EXPECT_EQ(loaded.size(), 20'000u);
  EXPECT_EQ(loaded.Lookup("uid-12345")->contention_class, ContentionClass::kBatch);

  // Past capacity, the least recently seen go; never more than capacity stay.
  for (int i = 20'000; i < 200'000; ++i) {
    registry.Remember("uid-" + std::to_string(i), batch, t0 + absl::Milliseconds(i));
  }
  EXPECT_LE(registry.size(), 65'536u);
  EXPECT_GE(registry.size(), 60'000u);
  EXPECT_TRUE(registry.Lookup("uid-199999").has_value());
  EXPECT_FALSE(registry.Lookup("uid-0").has_value());

  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    std::vector<std::string> mine = {"uid-199998", "uid-199990", "uid-199000"};
    std::vector<std::string_view> views(mine.begin(), mine.end());
    std::vector<std::optional<RememberedPod>> out;
    while (!stop.load()) {
      registry.LookupMany(views, out);
      for (const auto& o : out) wrong += o.has_value() ? 0 : 1;
    }
  });
  for (int i = 0; i < 20'000; ++i) {
    registry.Remember("new-" + std::to_string(i), batch, t0 + absl::Seconds(1000));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(PodRegistryTest, MissingFileIsAnEmptyStart) {
  PodRegistry registry;
  EXPECT_TRUE(registry.Load(TempPath("never-written.json")).ok());
  EXPECT_EQ(registry.size(), 0u);
}

TEST(PodRegistryTest, CorruptFileIsRefusedClearlyAndChangesNothing) {
  PodRegistry registry;
  registry.Remember("keep", Remembered(ContentionClass::kBatch), absl::FromUnixSeconds(1));
  for (const std::string& content :
       {std::string("{\"version\": 1, \"pods\": [{\"uid\": \"x\""),  // truncated
        std::string("\x00\xff garbage", 10), std::string("[]"),
        std::string("{\"version\": 1, \"pods\": [{\"uid\": \"x\", \"class\": \"noisy\", "
                    "\"source\": \"annotation\"}]}"),
        std::string("{\"version\": 7, \"pods\": []}")}) {
    const std::string path = TempPath("corrupt.json");
    std::ofstream(path, std::ios::binary) << content;
    absl::Status s = registry.Load(path);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << content;
    EXPECT_THAT(std::string(s.message()), HasSubstr("corrupt"));
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_TRUE(registry.Lookup("keep").has_value());
  }
}

TEST(PodRegistryTest, SaveIntoMissingDirectoryFailsClearly) {
  PodRegistry registry;
  absl::Status s = registry.Save("/nonexistent-dir-neighborly/registry.json");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent-dir-neighborly"));
}

// --- bookings ---

Booking MakeTestBooking(const std::string& uid, absl::Time expires) {
  Booking b;
  b.pod_uid = uid;
  b.pod = "ns/" + uid;
  b.llc_bytes = 1 << 20;
  b.expires_at = expires;
  return b;
}

TEST(BookingLedgerTest, BookingsArePublishedPerNodeAndReleasedByReport) {
  ClusterState state;
  BookingLedger ledger(state);
  FakeClock clock;
  ASSERT_TRUE(ledger.Book("node-1", MakeTestBooking("p1", clock.Now() + absl::Seconds(30))));
  ASSERT_TRUE(ledger.Book("node-1", MakeTestBooking("p2", clock.Now() + absl::Seconds(30))));
  ClusterState::View view = state.view();
  const BookingList* bookings = view.Find("node-1")->bookings.load();
  ASSERT_NE(bookings, nullptr);
  EXPECT_EQ(bookings->size(), 2u);
  // Rebooking the same pod moves it.
  ASSERT_TRUE(ledger.Book("node-2", MakeTestBooking("p2", clock.Now() + absl::Seconds(30))));
  EXPECT_EQ(state.view().Find("node-1")->bookings.load()->size(), 1u);
  EXPECT_EQ(state.view().Find("node-2")->bookings.load()->size(), 1u);
  EXPECT_EQ(ledger.size(), 2u);
  // Only the node it is booked on releases it (issue 15: another node's
  // report naming the pod used to release it).
  EXPECT_EQ(ledger.Release("node-1", {"p2", "unrelated"}), 0u);
  EXPECT_EQ(ledger.size(), 2u);
  std::vector<bool> elsewhere;
  ledger.BookedElsewhere("node-1", {"p1", "p2", "unrelated"}, elsewhere);
  EXPECT_EQ(elsewhere, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(ledger.Release("node-2", {"p2", "unrelated"}), 1u);
  EXPECT_EQ(state.view().Find("node-2")->bookings.load(), nullptr);
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(BookingLedgerTest, ReleasePodTakesOneBookingOnItsNodeOrAnywhere) {
  ClusterState state;
  BookingLedger ledger(state);
  FakeClock clock;
  ASSERT_TRUE(ledger.Book("node-1", MakeTestBooking("p1", clock.Now() + absl::Seconds(30))));
  ASSERT_TRUE(ledger.Book("node-1", MakeTestBooking("p2", clock.Now() + absl::Seconds(30))));
  EXPECT_FALSE(ledger.ReleasePod("node-2", "p1").has_value());  // not booked there
  EXPECT_FALSE(ledger.ReleasePod("node-1", "unknown").has_value());
  std::optional<Booking> released = ledger.ReleasePod("node-1", "p1");
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->pod, "ns/p1");
  EXPECT_EQ(ledger.size(), 1u);
  EXPECT_EQ(state.view().Find("node-1")->bookings.load()->size(), 1u);
  // An empty node: wherever it is.
  ASSERT_TRUE(ledger.ReleasePod("", "p2").has_value());
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(state.view().Find("node-1")->bookings.load(), nullptr);
  // Its expiry entry finds nothing to expire later.
  EXPECT_EQ(ledger.Expire(clock.Now() + absl::Seconds(31)), 0u);
}

TEST(BookingLedgerTest, BookingsExpireAfterTheirTtl) {
  ClusterState state;
  BookingLedger ledger(state);
  FakeClock clock;
  ledger.Book("node-1", MakeTestBooking("p1", clock.Now() + absl::Seconds(30)));
  ledger.Book("node-1", MakeTestBooking("p2", clock.Now() + absl::Seconds(60)));
  clock.Advance(absl::Seconds(29));
  EXPECT_EQ(ledger.Expire(clock.Now()), 0u);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(ledger.Expire(clock.Now()), 1u);
  EXPECT_EQ(state.view().Find("node-1")->bookings.load()->front().pod_uid, "p2");
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(ledger.Expire(clock.Now()), 1u);
  EXPECT_EQ(state.view().Find("node-1")->bookings.load(), nullptr);
  EXPECT_EQ(ledger.size(), 0u);
}

// Thousands of bookings in flight (700 pods/s at a 30 s TTL): each Expire
// takes exactly the due ones, and a pod booked again keeps its new expiry.
// Issue 24: 5,000 made-up UIDs booked onto one node in 4 s took 1.7 GB.
TEST(BookingLedgerTest, BookingsAreCappedPerNodeAndInAllOldestFirst) {
  ClusterState state;
  BookingLedger ledger(state, {.max_per_node = 3, .max_total = 5});
  FakeClock clock;
  const absl::Time start = clock.Now();
  auto book = [&](const std::string& node, const std::string& uid, int expires_s) {
    return ledger.Book(node, MakeTestBooking(uid, start + absl::Seconds(expires_s)));
  };
  auto uids = [&](const std::string& node) {
    std::vector<std::string> out;
    const BookingList* list = state.view().Find(node)->bookings.load();
    if (list != nullptr) {
      for (const Booking& b : *list) out.push_back(b.pod_uid);
    }
    return out;
  };
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(book("node-1", "p" + std::to_string(i), 30 + i));
  // The node's oldest made room.
  EXPECT_EQ(uids("node-1"), (std::vector<std::string>{"p2", "p3", "p4"}));
  EXPECT_EQ(ledger.dropped_node_full(), 1u);
  // Booking a pod again replaces its booking: nothing dropped.
  ASSERT_TRUE(book("node-1", "p3", 40));
  EXPECT_EQ(uids("node-1"), (std::vector<std::string>{"p2", "p4", "p3"}));
  EXPECT_EQ(ledger.dropped_node_full(), 1u);
  ASSERT_TRUE(book("node-2", "q1", 50));
  ASSERT_TRUE(book("node-2", "q2", 51));
  EXPECT_EQ(ledger.size(), 5u);
  // Full in all: the booking due soonest anywhere (p2, on node-1) goes.
  ASSERT_TRUE(book("node-2", "q3", 52));
  EXPECT_EQ(ledger.size(), 5u);
  EXPECT_EQ(ledger.dropped_full(), 1u);
  EXPECT_EQ(uids("node-1"), (std::vector<std::string>{"p4", "p3"}));
  EXPECT_EQ(uids("node-2"), (std::vector<std::string>{"q1", "q2", "q3"}));
  // What was dropped does not expire a second time.
  EXPECT_EQ(ledger.Expire(start + absl::Seconds(100)), 5u);
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(BookingLedgerTest, AFloodOfBookingsKeepsFewListsAndFewDueEntries) {
  ClusterState state;
  BookingLedger ledger(state, {.max_per_node = 1024, .max_total = 65'536});
  FakeClock clock;
  for (int i = 0; i < 20'000; ++i) {
    ledger.Book("node-1", MakeTestBooking("6f1c0e1a-0000-4000-8000-" + std::to_string(i),
                                          clock.Now() + absl::Seconds(30)));
  }
  EXPECT_EQ(ledger.size(), 1024u);
  EXPECT_EQ(ledger.dropped_node_full(), 20'000u - 1024u);
  // Each booking replaced the node's list; without ingest the replaced lists
  // are freed once they hold 8 MiB, not after 4,096 of them (1,024 bookings
  // each: ~0.2 MB a list).
  EXPECT_LT(state.retired(), 200u);
  EXPECT_EQ(ledger.Expire(clock.Now() + absl::Seconds(31)), 1024u);
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(BookingLedgerTest, ExpiryTakesExactlyTheDueBookingsAmongMany) {
  ClusterState state;
  BookingLedger ledger(state);
  FakeClock clock;
  const absl::Time start = clock.Now();
  for (int i = 0; i < 3000; ++i) {
    ledger.Book("node-" + std::to_string(i % 50),
                MakeTestBooking("p" + std::to_string(i), start + absl::Milliseconds(10 * i + 10)));
  }
  // p0 is booked again (elsewhere) with a later expiry; p1 is released early.
  ledger.Book("node-7", MakeTestBooking("p0", start + absl::Seconds(100)));
  EXPECT_EQ(ledger.Release("node-1", {"p1"}), 1u);
  EXPECT_EQ(ledger.size(), 2999u);
  // At +1 s, p2..p99 are due (p0 moved, p1 gone): 98 bookings.
  EXPECT_EQ(ledger.Expire(start + absl::Seconds(1)), 98u);
  EXPECT_EQ(ledger.size(), 2901u);
  EXPECT_EQ(ledger.Expire(start + absl::Seconds(1)), 0u);  // nothing more due
  // At +30 s everything but the re-booked p0 is gone.
  EXPECT_EQ(ledger.Expire(start + absl::Seconds(30)), 2900u);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger.List()[0].first, "node-7");
  EXPECT_EQ(ledger.List()[0].second.pod_uid, "p0");
  for (int n = 0; n < 50; ++n) {
    const BookingList* list = state.view().Find("node-" + std::to_string(n))->bookings.load();
    EXPECT_EQ(list == nullptr ? 0u : list->size(), n == 7 ? 1u : 0u) << "node-" << n;
  }
  EXPECT_EQ(ledger.Expire(start + absl::Seconds(100)), 1u);
  EXPECT_EQ(ledger.size(), 0u);
}

// --- decision log ---

std::shared_ptr<const LoggedDecision> Logged(const std::string& uid, size_t nodes) {
  auto d = std::make_shared<LoggedDecision>();
  d->pod_uid = uid;
  d->pod_namespace = "ns";
  d->pod_name = "pod-" + uid;
  for (size_t i = 0; i < nodes; ++i) d->AddNode("n", NodeDecision());
  return d;
}

TEST(DecisionLogTest, FindsByUidNamespaceNameOrNameNewestFirst) {
  DecisionLog log(10, 1000);
  log.Record(Logged("a", 1));
  log.Record(Logged("b", 1));
  log.Record(Logged("a", 2));
  auto by_uid = log.Find("a", 10);
  ASSERT_EQ(by_uid.size(), 2u);
  EXPECT_EQ(by_uid[0]->node_count(), 2u);  // newest first
  EXPECT_EQ(log.Find("ns/pod-b", 10).size(), 1u);
  EXPECT_EQ(log.Find("pod-b", 10).size(), 1u);
  EXPECT_EQ(log.Find("other/pod-b", 10).size(), 0u);
  EXPECT_EQ(log.Find("", 2).size(), 2u);
}

TEST(DecisionLogTest, CompactRecordsGiveBackNamesAndDecisionsAsDecided) {
  NodeDecision rejected;
  rejected.feasible = false;
  rejected.score = 0;
  rejected.reason = "membw 84% > 80% on NUMA node 1";
  rejected.confidence = 1;
  rejected.has_telemetry = true;
  NodeDecision scored;
  scored.score = 7;
  scored.cost = 0.3125;
  scored.confidence = 0.5;
  scored.has_telemetry = true;
  scored.l3_pressure = 0.25;
  scored.membw_utilisation = 0.6;
  scored.harm_to_incoming = 0.1;
  scored.harm_to_residents = 0.2;
  scored.numa_penalty = 1;
  scored.numa_node = 1;
  scored.l3_domain = 3;
  const std::vector<std::string_view> names = {"node-a", "", "node-ccc"};
  const std::vector<NodeDecision> decisions = {rejected, scored, NodeDecision()};
  LoggedDecision d;
  d.AddNodes(names, decisions);
  ASSERT_EQ(d.node_count(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.node(i), names[i]);
    const NodeDecision got = d.decision(i);
    const NodeDecision& want = decisions[i];
    EXPECT_EQ(got.feasible, want.feasible);
    EXPECT_EQ(got.reason, want.reason);
    EXPECT_EQ(got.score, want.score);
    EXPECT_FLOAT_EQ(got.cost, want.cost);              // kept at float precision
    EXPECT_FLOAT_EQ(got.confidence, want.confidence);  // kept at float precision
    EXPECT_EQ(got.has_telemetry, want.has_telemetry);
    EXPECT_FLOAT_EQ(got.l3_pressure, want.l3_pressure);              // kept at float precision
    EXPECT_FLOAT_EQ(got.membw_utilisation, want.membw_utilisation);  // kept at float precision
    EXPECT_FLOAT_EQ(got.harm_to_incoming, want.harm_to_incoming);    // kept at float precision
    EXPECT_FLOAT_EQ(got.harm_to_residents, want.harm_to_residents);  // kept at float precision
    EXPECT_FLOAT_EQ(got.numa_penalty, want.numa_penalty);            // kept at float precision
    EXPECT_EQ(got.numa_node, want.numa_node);
    EXPECT_EQ(got.l3_domain, want.l3_domain);
  }
}

// A 5,000-name request keeps its rejections and its best nodes, not every node.
TEST(DecisionLogTest, KeepsEveryRejectionAndTheBestFeasibleNodesInInputOrder) {
  std::vector<std::string> owned;
  std::vector<NodeDecision> decisions;
  for (int i = 0; i < 200; ++i) {
    owned.push_back("node-" + std::to_string(i));
    NodeDecision d;
    d.feasible = i % 5 != 0;  // 40 rejected
    if (!d.feasible) d.reason = "isolation: " + owned.back();
    d.score = (i * 7) % 11;    // 0..10, many ties
    d.cost = (i % 13) / 13.0;  // ties broken by lower cost
    decisions.push_back(d);
  }
  const std::vector<std::string_view> names(owned.begin(), owned.end());
  LoggedDecision log;
  log.AddNodes(names, decisions);
  EXPECT_EQ(log.candidates, 200u);
  ASSERT_EQ(log.node_count(), 40u + LoggedDecision::kTopFeasible);

  // What a full sort would call the best kTopFeasible feasible nodes.
  std::vector<size_t> feasible;
  for (size_t i = 0; i < decisions.size(); ++i) {
    if (decisions[i].feasible) feasible.push_back(i);
  }
  std::stable_sort(feasible.begin(), feasible.end(), [&](size_t a, size_t b) {
    return decisions[a].score != decisions[b].score ? decisions[a].score > decisions[b].score
                                                    : decisions[a].cost < decisions[b].cost;
  });
  const NodeDecision& worst_kept = decisions[feasible[LoggedDecision::kTopFeasible - 1]];

  size_t rejected = 0;
  size_t last_index = 0;
  for (size_t k = 0; k < log.node_count(); ++k) {
    const std::string name(log.node(k));
    const size_t i = std::stoul(name.substr(5));
    EXPECT_TRUE(k == 0 || i > last_index) << "input order";
    last_index = i;
    const NodeDecision got = log.decision(k);
    EXPECT_EQ(got.feasible, decisions[i].feasible) << name;
    if (!got.feasible) {
      ++rejected;
      EXPECT_EQ(got.reason, "isolation: " + name);
      continue;
    }
    // Every kept feasible node is at least as good as the kTopFeasible-th best.
    EXPECT_TRUE(got.score > worst_kept.score ||
                (got.score == worst_kept.score && got.cost <= worst_kept.cost + 1e-6))
        << name << " score " << got.score << " cost " << got.cost;
  }
  EXPECT_EQ(rejected, 40u);
}

TEST(DecisionLogTest, NewRecordReusesEvictedRecordsNobodyHoldsAndClearsThem) {
  DecisionLog log(1, 1000);
  std::shared_ptr<LoggedDecision> first = log.NewRecord();
  first->pod_uid = "a";
  first->AddNode("node-1", NodeDecision());
  const LoggedDecision* first_address = first.get();
  log.Record(std::move(first));
  std::vector<std::shared_ptr<const LoggedDecision>> held = log.Find("a", 1);
  log.Record(Logged("b", 1));  // evicts "a", still held by `held`: not reused
  std::shared_ptr<LoggedDecision> fresh = log.NewRecord();
  EXPECT_NE(fresh.get(), first_address);
  EXPECT_EQ(held[0]->pod_uid, "a");
  EXPECT_EQ(held[0]->node(0), "node-1");
  log.Record(Logged("c", 1));  // evicts "b", held by nobody: reused
  std::shared_ptr<LoggedDecision> reused = log.NewRecord();
  EXPECT_EQ(reused->pod_uid, "");
  EXPECT_EQ(reused->node_count(), 0u);
}

TEST(DecisionLogTest, IsBoundedByRecordsAndNodeEntries) {
  DecisionLog by_records(2, 1000);
  for (int i = 0; i < 5; ++i) by_records.Record(Logged(std::to_string(i), 1));
  EXPECT_EQ(by_records.size(), 2u);
  EXPECT_EQ(by_records.Find("", 10)[0]->pod_uid, "4");
  DecisionLog by_entries(100, 10);
  for (int i = 0; i < 5; ++i) by_entries.Record(Logged(std::to_string(i), 4));
  EXPECT_EQ(by_entries.size(), 2u);  // 8 entries <= 10
}

}  // namespace
}  // namespace neighborly::extender
