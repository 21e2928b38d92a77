#include "node-agent/src/sys/filesystem.h"

#include <cerrno>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RealFilesystemTest, ReadsUnderTheHostRoot) {
  TestTree tree;
  tree.Write("/sys/devices/system/cpu/online", "0-3\n");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root() + "/");
  absl::StatusOr<std::string> text = fs->ReadFile("/sys/devices/system/cpu/online");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "0-3\n");
  EXPECT_EQ(fs->HostPath("/sys"), tree.root() + "/sys");
  EXPECT_TRUE(fs->IsDirectory("/sys/devices"));
  EXPECT_FALSE(fs->IsDirectory("/sys/devices/system/cpu/online"));
  EXPECT_TRUE(fs->Exists("/sys/devices/system/cpu/online"));
}

TEST(RealFilesystemTest, MissingFileNamesThePathAndCarriesErrno) {
  TestTree tree;
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  absl::StatusOr<std::string> text = fs->ReadFile("/proc/mounts");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(absl::IsNotFound(text.status()));
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("/proc/mounts"));
  EXPECT_EQ(ErrnoOf(text.status()), ENOENT);
  EXPECT_EQ(ErrnoOf(absl::InternalError("x")), 0);
}

TEST(RealFilesystemTest, ListsDirectoriesSortedWithKinds) {
  TestTree tree;
  tree.Write("/d/b", "");
  tree.MkDir("/d/a");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  absl::StatusOr<std::vector<DirEntry>> entries = fs->ListDir("/d");
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "a");
  EXPECT_TRUE((*entries)[0].is_dir);
  EXPECT_EQ((*entries)[1].name, "b");
  EXPECT_FALSE((*entries)[1].is_dir);
  EXPECT_FALSE(fs->ListDir("/nope").ok());
}

TEST(RealFilesystemTest, WritesOnlyExistingFilesAndManagesDirectories) {
  TestTree tree;
  tree.Write("/g/tasks", "");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  ASSERT_TRUE(fs->WriteFile("/g/tasks", "42").ok());
  EXPECT_EQ(*fs->ReadFile("/g/tasks"), "42");
  const absl::Status missing = fs->WriteFile("/g/absent", "1");
  EXPECT_EQ(ErrnoOf(missing), ENOENT);
  ASSERT_TRUE(fs->MakeDir("/g/child").ok());
  EXPECT_EQ(ErrnoOf(fs->MakeDir("/g/child")), EEXIST);
  ASSERT_TRUE(fs->RemoveDir("/g/child").ok());
  EXPECT_FALSE(fs->IsDirectory("/g/child"));
}

TEST(RealFilesystemTest, ReplacesFilesWholeAndLeavesNoTemporary) {
  TestTree tree;
  tree.MkDir("/var/lib/neighborly");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  ASSERT_TRUE(fs->ReplaceFile("/var/lib/neighborly/x.json", "first").ok());
  ASSERT_TRUE(fs->ReplaceFile("/var/lib/neighborly/x.json", "second, longer").ok());
  EXPECT_EQ(*fs->ReadFile("/var/lib/neighborly/x.json"), "second, longer");
  absl::StatusOr<std::vector<DirEntry>> entries = fs->ListDir("/var/lib/neighborly");
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ(entries->front().name, "x.json");
  const absl::Status no_dir = fs->ReplaceFile("/absent/x.json", "1");
  EXPECT_EQ(ErrnoOf(no_dir), ENOENT);
  EXPECT_THAT(no_dir.message(), HasSubstr("/absent/x.json"));
}

TEST(RealFilesystemTest, RejectsHugeFiles) {
  TestTree tree;
  tree.Write("/big", std::string(kMaxFileBytes + 1, 'x'));
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  absl::StatusOr<std::string> text = fs->ReadFile("/big");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("larger than"));
}

TEST(RealFilesystemTest, ReadsRealKernelFilesAtTheRootPrefix) {
  std::unique_ptr<Filesystem> fs = NewRealFilesystem("/");
  absl::StatusOr<std::string> online = fs->ReadFile("/sys/devices/system/cpu/online");
  ASSERT_TRUE(online.ok()) << online.status();
  EXPECT_FALSE(online->empty());
}

TEST(JoinPathTest, AvoidsDoubleSlashes) {
  EXPECT_EQ(JoinPath("/a/", "/b"), "/a/b");
  EXPECT_EQ(JoinPath("/a", ""), "/a");
  EXPECT_EQ(JoinPath("", "b"), "/b");
}

TEST(ErrnoStatusTest, MapsCodes) {
  EXPECT_TRUE(absl::IsResourceExhausted(ErrnoStatus(ENOSPC, "mkdir", "/x")));
  EXPECT_TRUE(absl::IsUnavailable(ErrnoStatus(EBUSY, "mkdir", "/x")));
  EXPECT_EQ(ErrnoOf(ErrnoStatus(EOPNOTSUPP, "read", "/x")), EOPNOTSUPP);
  EXPECT_THAT(std::string(ErrnoStatus(EOPNOTSUPP, "read", "/x").message()), HasSubstr("read /x"));
}

}  // namespace
}  // namespace neighborly::agent
