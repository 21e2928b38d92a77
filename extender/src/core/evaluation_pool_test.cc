#include "extender/src/core/evaluation_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace neighborly::extender {
namespace {

TEST(EvaluationPoolTest, EveryChunkRunsExactlyOnce) {
  EvaluationPool pool(4);
  EXPECT_EQ(pool.threads(), 4u);
  for (size_t count : {0u, 1u, 2u, 7u, 20u, 1000u}) {
    std::vector<std::atomic<int>> calls(count);
    pool.Run(count, [&](size_t i) { calls[i].fetch_add(1); });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(calls[i].load(), 1) << i << " of " << count;
  }
}

TEST(EvaluationPoolTest, OneThreadRunsEverythingOnTheCaller) {
  EvaluationPool pool(1);
  EXPECT_EQ(pool.threads(), 1u);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ran(50);
  pool.Run(ran.size(), [&](size_t i) { ran[i] = std::this_thread::get_id(); });
  for (const std::thread::id& id : ran) EXPECT_EQ(id, caller);
  EXPECT_EQ(pool.shared_runs(), 0u);
}

// The caller's first chunk waits until a helper has run a chunk: only a
// helper can run the others meanwhile, so the Run finishes only if helpers
// join (and a helper never waits: no order of wake-ups can deadlock it).
TEST(EvaluationPoolTest, HelpersTakeChunksWhileTheCallerWorks) {
  EvaluationPool pool(3);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> helper_ran{false};
  bool caller_waited = false;  // touched by the caller only
  pool.Run(16, [&](size_t) {
    if (std::this_thread::get_id() != caller) {
      helper_ran.store(true);
    } else if (!caller_waited) {
      caller_waited = true;
      while (!helper_ran.load()) std::this_thread::yield();
    }
  });
  EXPECT_TRUE(helper_ran.load());
  EXPECT_EQ(pool.shared_runs(), 1u);
}

// A prewake before the Run (the request still being parsed) changes nothing
// the Run does; one with no Run after it, or before the pool goes away, only
// costs the helpers' spin.
TEST(EvaluationPoolTest, PrewakeIsOnlyAHint) {
  {
    EvaluationPool pool(3);
    for (int round = 0; round < 50; ++round) {
      pool.Prewake();
      std::vector<std::atomic<int>> calls(40);
      pool.Run(calls.size(), [&](size_t i) { calls[i].fetch_add(1); });
      for (const auto& c : calls) ASSERT_EQ(c.load(), 1) << "round " << round;
    }
    pool.Prewake();  // and none after it
  }
  EvaluationPool alone(1);
  alone.Prewake();  // no helpers: nothing to wake
  int ran = 0;
  alone.Run(3, [&](size_t) { ++ran; });
  EXPECT_EQ(ran, 3);
}

// Requests arrive on many HTTP workers at once: a Run that finds the helpers
// busy runs its chunks itself, and none is lost or run twice.
TEST(EvaluationPoolTest, ConcurrentRunsEachCompleteTheirOwnChunks) {
  EvaluationPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        std::vector<std::atomic<int>> calls(37);
        pool.Run(calls.size(), [&](size_t i) { calls[i].fetch_add(1); });
        for (const auto& c : calls) {
          if (c.load() != 1) failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

class UsableCpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("usable-cpus-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "cpu");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& file, const std::string& text) {
    std::ofstream(root_ / file) << text;
  }
  size_t Cpus() { return EvaluationPool::UsableCpus(root_.c_str()); }

  std::filesystem::path root_;
  const size_t all_ = EvaluationPool::UsableCpus("/nonexistent");
};

TEST_F(UsableCpusTest, WithoutAQuotaTheAffinityMaskCounts) {
  EXPECT_GE(all_, 1u);
  EXPECT_EQ(Cpus(), all_);
  Write("cpu.max", "max 100000\n");
  EXPECT_EQ(Cpus(), all_);
}

TEST_F(UsableCpusTest, ACgroupV2QuotaCapsTheCountRoundingUp) {
  Write("cpu.max", "50000 100000\n");
  EXPECT_EQ(Cpus(), 1u);
  Write("cpu.max", "150000 100000\n");
  EXPECT_EQ(Cpus(), std::min<size_t>(all_, 2));
}

TEST_F(UsableCpusTest, ACgroupV1QuotaCapsTheCount) {
  Write("cpu/cpu.cfs_quota_us", "-1\n");
  Write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(Cpus(), all_);
  Write("cpu/cpu.cfs_quota_us", "20000\n");
  EXPECT_EQ(Cpus(), 1u);
}

TEST_F(UsableCpusTest, UnreadableQuotasAreIgnored) {
  Write("cpu.max", "lots of cpus\n");
  EXPECT_EQ(Cpus(), all_);
  std::filesystem::remove(root_ / "cpu.max");
  Write("cpu/cpu.cfs_quota_us", "many\n");
  Write("cpu/cpu.cfs_period_us", "0\n");
  EXPECT_EQ(Cpus(), all_);
}

}  // namespace
}  // namespace neighborly::extender
