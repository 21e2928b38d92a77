#include "test/support/test_pki.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace neighborly::testing {

TestPki::TestPki(std::string dir) : dir_(std::move(dir)) {
  std::error_code ignored;
  std::filesystem::create_directories(dir_, ignored);
}

absl::Status TestPki::Run(const std::string& command) const {
  // openssl's chatter goes to a log file beside the keys, read back on failure.
  const std::string log = Path("openssl.log");
  const std::string full = absl::StrCat("cd '", dir_, "' && ", command, " >'", log, "' 2>&1");
  const int rc = std::system(full.c_str());
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("openssl failed (", rc, "): ", command, "\n", Read(log)));
  }
  return absl::OkStatus();
}

absl::Status TestPki::MakeCa(const std::string& name) {
  return Run(absl::StrCat(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ", name,
      ".key -out ", name, ".crt -days 2 -subj /CN=", name,
      " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign"));
}

absl::Status TestPki::Issue(const std::string& ca, const std::string& name,
                            const std::string& common_name, const std::vector<std::string>& sans) {
  std::string ext = "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n";
  if (!sans.empty()) absl::StrAppend(&ext, "subjectAltName=", absl::StrJoin(sans, ","), "\n");
  if (absl::Status s = Write(Path(name + ".ext"), ext); !s.ok()) return s;
  // A random serial: two certificates of one CA must never share one.
  return Run(
      absl::StrCat("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ",
                   name, ".key -out ", name, ".csr -subj /CN=", common_name,
                   " && openssl x509 -req -in ", name, ".csr -CA ", ca, ".crt -CAkey ", ca,
                   ".key -CAcreateserial -out ", name, ".crt -days 2 -extfile ", name, ".ext"));
}

absl::Status TestPki::MakeSigningKey(const std::string& name, const std::string& type) {
  const std::string algorithm = type == "rsa" ? "-algorithm RSA -pkeyopt rsa_keygen_bits:2048"
                                              : "-algorithm EC -pkeyopt ec_paramgen_curve:P-256";
  return Run(absl::StrCat("openssl genpkey ", algorithm, " -out ", name,
                          ".key && openssl pkey -in ", name, ".key -pubout -out ", name, ".pub"));
}

std::string TestPki::Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::Status TestPki::Write(const std::string& path, const std::string& content) {
  // Written beside and renamed, as a Secret volume update would appear.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot rename to ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace neighborly::testing
