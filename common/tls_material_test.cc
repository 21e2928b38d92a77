// The TLS credential parser on certificates made at test time and on damaged
// PEM text.
#include "common/tls_material.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "test/support/test_pki.h"

namespace neighborly {
namespace {

using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;

TEST(TlsMaterialTest, ParsesAChainItsKeyAndACaBundle) {
  const std::string dir = ::testing::TempDir() + "/tls-material-" + std::to_string(getpid());
  TestPki pki(dir);
  ASSERT_TRUE(pki.MakeCa("ca").ok());
  ASSERT_TRUE(pki.MakeCa("ca2").ok());
  ASSERT_TRUE(pki.Issue("ca", "server", "server-1").ok());
  const std::string cert = TestPki::Read(pki.Path("server.crt"));
  const std::string key = TestPki::Read(pki.Path("server.key"));
  const std::string ca = TestPki::Read(pki.Path("ca.crt"));
  const TlsFileNames names{.ca_file = "ca.pem", .cert_file = "tls.crt", .key_file = "tls.key"};

  absl::StatusOr<std::shared_ptr<const TlsMaterial>> m =
      ParseTlsMaterial(names, cert + ca, key, ca + TestPki::Read(pki.Path("ca2.crt")));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NE((*m)->cert, nullptr);
  EXPECT_EQ(sk_X509_num((*m)->chain), 1);  // the CA after the leaf
  EXPECT_NE((*m)->key, nullptr);
  EXPECT_NE((*m)->cas, nullptr);

  // A CA bundle whose second certificate was cut off (a half-written file)
  // is refused, not read as a one-certificate bundle.
  const std::string cut = ca + TestPki::Read(pki.Path("ca2.crt")).substr(0, 100);
  EXPECT_THAT(ParseTlsMaterial(names, cert, key, cut).status().message(),
              HasSubstr("CA file ca.pem: certificate 2 cannot be decoded"));
  EXPECT_THAT(ParseTlsMaterial(names, cert, key, cut, "client CA file").status().message(),
              HasSubstr("client CA file ca.pem: certificate 2"));
  // Only a CA: no certificate or key needed.
  EXPECT_TRUE(
      ParseTlsMaterial({.ca_file = "ca.pem", .cert_file = "", .key_file = ""}, "", "", ca).ok());
  std::filesystem::remove_all(dir);
}

TEST(TlsMaterialTest, NamesTheFileAndTheProblem) {
  const TlsFileNames no_ca{.ca_file = "", .cert_file = "tls.crt", .key_file = "tls.key"};
  EXPECT_THAT(
      ParseTlsMaterial({.ca_file = "ca.pem", .cert_file = "", .key_file = ""}, "", "", "junk")
          .status()
          .message(),
      HasSubstr("CA file ca.pem: no PEM certificate"));
  EXPECT_THAT(ParseTlsMaterial(
                  no_ca, "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n", "", "")
                  .status()
                  .message(),
              HasSubstr("certificate file tls.crt: certificate 1 cannot be decoded"));
  EXPECT_THAT(ParseTlsMaterial({.ca_file = "", .cert_file = "tls.crt", .key_file = ""}, "", "", "")
                  .status()
                  .message(),
              HasSubstr("needs both a certificate file and a key file"));
  EXPECT_TRUE(ParseTlsMaterial({}, "", "", "").ok());  // nothing configured, nothing to check
}

}  // namespace
}  // namespace neighborly
