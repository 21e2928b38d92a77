// Certificates and keys made at test time with the openssl command-line tool,
// for tests of mutual TLS and of signed tokens. Everything lives in one
// directory the test owns; nothing is checked in.
//
//   TestPki pki(::testing::TempDir() + "/pki");
//   ASSERT_TRUE(pki.MakeCa("ca").ok());                         // ca.crt, ca.key
//   ASSERT_TRUE(pki.Issue("ca", "server", "neighborly").ok());   // server.crt, server.key
//   std::string pem = TestPki::Read(pki.Path("server.crt"));
#ifndef NEIGHBORLY_TEST_SUPPORT_TEST_PKI_H_
#define NEIGHBORLY_TEST_SUPPORT_TEST_PKI_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace neighborly::testing {

class TestPki {
 public:
  // Creates `dir` (and its parents) if needed.
  explicit TestPki(std::string dir);

  // A self-signed P-256 CA: <name>.crt and <name>.key.
  absl::Status MakeCa(const std::string& name);
  // A P-256 leaf signed by CA `ca`, valid for serverAuth and clientAuth, with
  // subject CN=`common_name` and the SANs (default DNS:localhost, IP:127.0.0.1):
  // <name>.crt and <name>.key.
  absl::Status Issue(const std::string& ca, const std::string& name, const std::string& common_name,
                     const std::vector<std::string>& sans = {"DNS:localhost", "IP:127.0.0.1"});
  // A private key for signing tokens: "rsa" (2048 bits) or "ec" (P-256), in
  // <name>.key (PKCS#8 PEM) and its public key in <name>.pub (SPKI PEM).
  absl::Status MakeSigningKey(const std::string& name, const std::string& type);

  std::string Path(const std::string& file) const { return dir_ + "/" + file; }
  const std::string& dir() const { return dir_; }

  static std::string Read(const std::string& path);  // "" when unreadable
  static absl::Status Write(const std::string& path, const std::string& content);

 private:
  absl::Status Run(const std::string& command) const;
  std::string dir_;
};

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_TEST_PKI_H_
