// Reloading of file-backed material, paced by a FakeClock: files in a
// per-process temporary directory, a parser that refuses text starting "bad".
#include "common/reloading_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace neighborly {
namespace {

using ::testing::HasSubstr;

class ReloadingFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/reloading-files-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Written beside and renamed, as a Secret volume update appears.
  void Write(const std::string& name, const std::string& text) const {
    {
      std::ofstream out(Path(name) + ".tmp", std::ios::trunc);
      out << text;
    }
    std::filesystem::rename(Path(name) + ".tmp", Path(name));
  }

  absl::StatusOr<std::unique_ptr<ReloadingFiles<std::string>>> Create(
      std::vector<std::string> names, absl::Duration interval = absl::Seconds(10)) {
    ReloadingFilesOptions options;
    options.what = "test material";
    options.interval = interval;
    for (const std::string& n : names) options.paths.push_back(Path(n));
    options.on_reload = [this](bool ok) { (ok ? reported_ok_ : reported_failed_)++; };
    return ReloadingFiles<std::string>::Create(
        std::move(options), clock_,
        [](std::span<const std::string> contents)
            -> absl::StatusOr<std::shared_ptr<const std::string>> {
          std::string joined;
          for (const std::string& c : contents) {
            if (c.starts_with("bad")) return absl::InvalidArgumentError("parser refuses " + c);
            joined += c;
          }
          return std::make_shared<const std::string>(joined);
        });
  }

  std::string dir_;
  FakeClock clock_;
  int reported_ok_ = 0;
  int reported_failed_ = 0;
};

TEST_F(ReloadingFilesTest, ChangedFilesAreLoadedOncePerInterval) {
  Write("a", "v1");
  auto files = Create({"a"});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*(*files)->Current(), "v1");
  Write("a", "v2");
  clock_.Advance(absl::Seconds(9));
  EXPECT_EQ(*(*files)->Current(), "v1");  // not checked before the interval passed
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(*(*files)->Current(), "v2");
  EXPECT_EQ((*files)->reloads(), 1u);
  EXPECT_EQ(reported_ok_, 1);
  // The same bytes written again are not a reload.
  Write("a", "v2");
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(*(*files)->Current(), "v2");
  EXPECT_EQ((*files)->reloads(), 1u);
}

TEST_F(ReloadingFilesTest, FailedReloadKeepsTheLastGoodMaterialAndIsReportedOnce) {
  Write("a", "v1");
  Write("b", "+x");
  auto files = Create({"a", "b"}, absl::ZeroDuration());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*(*files)->Current(), "v1+x");
  Write("b", "bad half-written");
  EXPECT_EQ(*(*files)->Current(), "v1+x");
  EXPECT_EQ((*files)->failures(), 1u);
  EXPECT_EQ(*(*files)->Current(), "v1+x");
  EXPECT_EQ((*files)->failures(), 1u);  // the same broken content is not counted again
  // A vanished file (a Secret being swapped) is a failure too, reported once.
  std::filesystem::remove(Path("b"));
  EXPECT_EQ(*(*files)->Current(), "v1+x");
  EXPECT_EQ(*(*files)->Current(), "v1+x");
  EXPECT_EQ((*files)->failures(), 2u);
  EXPECT_EQ(reported_failed_, 2);
  Write("b", "+y");
  EXPECT_EQ(*(*files)->Current(), "v1+y");
  EXPECT_EQ((*files)->reloads(), 1u);
  // Broken again with the earlier content: reported again.
  Write("b", "bad half-written");
  EXPECT_EQ(*(*files)->Current(), "v1+y");
  EXPECT_EQ((*files)->failures(), 3u);
}

// Readers on several threads while the file is rewritten: each sees only whole
// versions, never an older one after a newer, and none waits for another's check.
TEST_F(ReloadingFilesTest, ConcurrentReadersSeeWholeVersionsInOrder) {
  Write("a", "v0");
  auto files = Create({"a"}, absl::ZeroDuration());
  ASSERT_TRUE(files.ok()) << files.status();
  ReloadingFiles<std::string>& shared = **files;
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      int last = 0;
      while (!stop.load()) {
        const std::shared_ptr<const std::string> now = shared.Current();
        const int version = now->starts_with("v") ? std::stoi(now->substr(1)) : -1;
        if (version < last) ++bad;
        last = version;
      }
    });
  }
  for (int v = 1; v <= 50; ++v) Write("a", "v" + std::to_string(v));
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(*shared.Current(), "v50");
  EXPECT_EQ(shared.failures(), 0u);
}

TEST_F(ReloadingFilesTest, ProblemsAtCreationAreErrorsNamingTheFile) {
  auto missing = Create({"nope"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(Path("nope") + ": cannot read"));
  Write("a", "bad");
  auto refused = Create({"a"});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("parser refuses bad"));
}

}  // namespace
}  // namespace neighborly
