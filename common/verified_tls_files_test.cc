// TLS files checked before gRPC sees them: certificates made at test time, the
// published in-memory copies read back through their /proc/self/fd paths.
#include "common/verified_tls_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Whether the files at `paths` load as a TLS library would load them.
absl::Status Loads(const TlsFileNames& paths) {
  return ParseTlsMaterial(paths, TestPki::Read(paths.cert_file), TestPki::Read(paths.key_file),
                          TestPki::Read(paths.ca_file))
      .status();
}

class VerifiedTlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = std::make_unique<TestPki>(
        ::testing::TempDir() + "/verified-tls-" + std::to_string(getpid()) + "-" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(pki_->MakeCa("ca").ok());
    ASSERT_TRUE(pki_->MakeCa("ca2").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server", "server-1").ok());
    ASSERT_TRUE(pki_->Issue("ca", "server2", "server-2").ok());
  }
  void TearDown() override { std::filesystem::remove_all(pki_->dir()); }

  TlsFileNames Names() const {
    return {.ca_file = pki_->Path("ca.crt"),
            .cert_file = pki_->Path("server.crt"),
            .key_file = pki_->Path("server.key")};
  }
  std::unique_ptr<VerifiedTlsFiles> Make(bool watch_thread = false,
                                         absl::Duration interval = absl::Seconds(10)) {
    absl::StatusOr<std::unique_ptr<VerifiedTlsFiles>> files = VerifiedTlsFiles::Create(
        {.files = Names(),
         .what = "grpc.tls",
         .reload_interval = interval,
         .watch_thread = watch_thread,
         .on_reload = [this](bool ok) { (ok ? reloads_ : failures_).fetch_add(1); }});
    EXPECT_TRUE(files.ok()) << files.status();
    return files.ok() ? std::move(*files) : nullptr;
  }
  // Replaces a file's content (written beside and renamed, as a Secret volume update appears).
  void Replace(const std::string& file, const std::string& from) const {
    ASSERT_TRUE(TestPki::Write(pki_->Path(file) + ".new", TestPki::Read(pki_->Path(from))).ok());
    std::filesystem::rename(pki_->Path(file) + ".new", pki_->Path(file));
  }
  std::string Pair(const std::string& name) const {
    return TestPki::Read(pki_->Path(name + ".crt")) + TestPki::Read(pki_->Path(name + ".key"));
  }
  static time_t Mtime(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? st.st_mtime : 0;
  }

  std::unique_ptr<TestPki> pki_;
  std::atomic<int> reloads_{0};
  std::atomic<int> failures_{0};
};

TEST_F(VerifiedTlsFilesTest, GrpcReadsInMemoryCopiesOfTheCheckedFiles) {
  std::unique_ptr<VerifiedTlsFiles> files = Make();
  ASSERT_NE(files, nullptr);
  const TlsFileNames& paths = files->paths();
  EXPECT_THAT(paths.cert_file, StartsWith("/proc/self/fd/"));
  EXPECT_EQ(paths.key_file, paths.cert_file);  // one file: the pair cannot be read half-rotated
  EXPECT_THAT(paths.ca_file, StartsWith("/proc/self/fd/"));
  EXPECT_NE(paths.ca_file, paths.cert_file);
  EXPECT_EQ(TestPki::Read(paths.cert_file), Pair("server"));
  EXPECT_EQ(TestPki::Read(paths.ca_file), TestPki::Read(pki_->Path("ca.crt")));
  // The copies are what a TLS library needs: the pair checks out.
  EXPECT_TRUE(Loads(paths).ok()) << Loads(paths);
}

TEST_F(VerifiedTlsFilesTest, AHalfRotatedPairIsNeverPublishedAndTheWholeOneIs) {
  std::unique_ptr<VerifiedTlsFiles> files = Make();
  ASSERT_NE(files, nullptr);
  const std::string path = files->paths().cert_file;
  const time_t first_mtime = Mtime(path);
  const std::string first_pair = Pair("server");

  Replace("server.key", "server2.key");  // the certificate has not followed yet
  files->Check();
  EXPECT_EQ(TestPki::Read(path), first_pair);  // gRPC still sees the old, matching pair
  EXPECT_EQ(files->failures(), 1u);
  EXPECT_EQ(failures_.load(), 1);
  files->Check();  // the same broken set is not counted twice
  EXPECT_EQ(files->failures(), 1u);

  Replace("server.crt", "server2.crt");
  files->Check();
  EXPECT_EQ(TestPki::Read(path), Pair("server2"));
  EXPECT_EQ(files->reloads(), 1u);
  EXPECT_EQ(reloads_.load(), 1);
  EXPECT_GT(Mtime(path), first_mtime);  // gRPC's straddled-read check sees every swap
  EXPECT_TRUE(Loads(files->paths()).ok());
}

TEST_F(VerifiedTlsFilesTest, ARotatedCaIsPublishedAndADamagedOneIsNot) {
  std::unique_ptr<VerifiedTlsFiles> files = Make();
  ASSERT_NE(files, nullptr);
  const std::string first_ca = TestPki::Read(pki_->Path("ca.crt"));
  // A bundle cut off inside its second certificate (a half-written file).
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("ca.crt"), first_ca + "-----BEGIN CERTIFICATE-----\nMIIB").ok());
  files->Check();
  EXPECT_EQ(TestPki::Read(files->paths().ca_file), first_ca);
  EXPECT_EQ(files->failures(), 1u);
  Replace("ca.crt", "ca2.crt");
  files->Check();
  EXPECT_EQ(TestPki::Read(files->paths().ca_file), TestPki::Read(pki_->Path("ca2.crt")));
  EXPECT_EQ(TestPki::Read(files->paths().cert_file), Pair("server"));  // untouched
  EXPECT_EQ(files->reloads(), 1u);
}

TEST_F(VerifiedTlsFilesTest, TheWatchThreadPublishesWithoutBeingAsked) {
  std::unique_ptr<VerifiedTlsFiles> files = Make(/*watch_thread=*/true, absl::Milliseconds(100));
  ASSERT_NE(files, nullptr);
  Replace("server.key", "server2.key");
  Replace("server.crt", "server2.crt");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (TestPki::Read(files->paths().cert_file) != Pair("server2") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(TestPki::Read(files->paths().cert_file), Pair("server2"));
}

TEST_F(VerifiedTlsFilesTest, BadFilesAtStartAreErrorsNamingTheFile) {
  auto missing = VerifiedTlsFiles::Create(
      {.files = {.ca_file = pki_->Path("nope.crt"), .cert_file = "", .key_file = ""}});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("CA file " + pki_->Path("nope.crt") + ": cannot read"));

  TlsFileNames mismatch = Names();
  mismatch.key_file = pki_->Path("server2.key");
  auto mismatched = VerifiedTlsFiles::Create({.files = mismatch});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(),
              HasSubstr("server2.key does not belong to certificate " + pki_->Path("server.crt")));

  TlsFileNames half = Names();
  half.key_file.clear();
  EXPECT_FALSE(VerifiedTlsFiles::Create({.files = half}).ok());
  EXPECT_FALSE(VerifiedTlsFiles::Create({.files = {}}).ok());
}

}  // namespace
}  // namespace neighborly
