// The one parser of TLS credential files (PEM), shared by the HTTPS server's
// reloader and the checked files handed to gRPC: every certificate of a chain
// or CA bundle is decoded (a damaged block, such as the last certificate of a
// half-written file, is an error, not the end of the file), the key must be an
// unencrypted private key that belongs to the leaf. Errors name the file.
//
//   absl::StatusOr<std::shared_ptr<const TlsMaterial>> m = ParseTlsMaterial(
//       {.ca_file = "ca.crt", .cert_file = "tls.crt", .key_file = "tls.key"},
//       cert_pem, key_pem, ca_pem);
#ifndef NEIGHBORLY_COMMON_TLS_MATERIAL_H_
#define NEIGHBORLY_COMMON_TLS_MATERIAL_H_

#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neighborly {

struct TlsFileNames {
  std::string ca_file;    // CA bundle; empty: none
  std::string cert_file;  // certificate chain, leaf first; empty together with key_file: none
  std::string key_file;   // unencrypted private key of the leaf
};

// One consistent set: a certificate chain, its key, and the CAs that peers'
// certificates must chain to. Each part is null where its file is not configured.
struct TlsMaterial {
  TlsMaterial() = default;
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;
  ~TlsMaterial();

  X509* cert = nullptr;              // the leaf
  STACK_OF(X509) * chain = nullptr;  // intermediates after the leaf in the file
  EVP_PKEY* key = nullptr;           // matches cert
  X509_STORE* cas = nullptr;
};

// Parses the files' contents (`names` only names them in errors, where the CA
// file is called `ca_label`). A file whose name is empty is not parsed;
// a certificate needs its key and the key its certificate.
absl::StatusOr<std::shared_ptr<const TlsMaterial>> ParseTlsMaterial(
    const TlsFileNames& names, std::string_view cert_pem, std::string_view key_pem,
    std::string_view ca_pem, std::string_view ca_label = "CA file");

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_TLS_MATERIAL_H_
