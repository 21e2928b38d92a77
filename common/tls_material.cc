#include "common/tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly {
namespace {

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioCloser>;

Bio MemoryBio(std::string_view text) {
  return Bio(
      BIO_new_mem_buf(text.data(), static_cast<int>(std::min<size_t>(text.size(), INT32_MAX))));
}

// Never prompts: an encrypted key is refused (a server has nobody to ask).
int NoPassword(char*, int, int, void*) { return 0; }

// Whether the last PEM read stopped at the end of the text (rather than at a
// damaged block, such as a half-written file's last certificate).
bool AtEndOfPem() {
  const unsigned long error = ERR_peek_last_error();
  const bool end =
      ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  return end;
}

// Reads every certificate of a PEM text. `what` names the file in errors.
absl::Status ReadCertificates(std::string_view pem, const std::string& what,
                              const std::function<void(X509*)>& take) {
  ERR_clear_error();
  Bio bio = MemoryBio(pem);
  if (bio == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  size_t count = 0;
  for (;;) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr);
    if (cert == nullptr) break;
    take(cert);
    ++count;
  }
  if (!AtEndOfPem()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": certificate ", count + 1, " cannot be decoded (damaged PEM)"));
  }
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no PEM certificate (BEGIN CERTIFICATE) in it"));
  }
  return absl::OkStatus();
}

// The certificate chain and its key into `material`.
absl::Status ReadIdentity(const TlsFileNames& names, std::string_view cert_pem,
                          std::string_view key_pem, TlsMaterial& material) {
  material.chain = sk_X509_new_null();
  if (material.chain == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  if (absl::Status s =
          ReadCertificates(cert_pem, absl::StrCat("certificate file ", names.cert_file),
                           [&material](X509* cert) {
                             if (material.cert == nullptr) {
                               material.cert = cert;
                             } else if (sk_X509_push(material.chain, cert) == 0) {
                               X509_free(cert);
                             }
                           });
      !s.ok()) {
    return s;
  }
  Bio key_bio = MemoryBio(key_pem);
  if (key_bio == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  material.key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassword, nullptr);
  ERR_clear_error();
  if (material.key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", names.key_file, ": no unencrypted PEM private key in it"));
  }
  if (X509_check_private_key(material.cert, material.key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "key file ", names.key_file, " does not belong to certificate ", names.cert_file));
  }
  return absl::OkStatus();
}

}  // namespace

TlsMaterial::~TlsMaterial() {
  X509_free(cert);
  if (chain != nullptr) sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
  X509_STORE_free(cas);
}

absl::StatusOr<std::shared_ptr<const TlsMaterial>> ParseTlsMaterial(const TlsFileNames& names,
                                                                    std::string_view cert_pem,
                                                                    std::string_view key_pem,
                                                                    std::string_view ca_pem,
                                                                    std::string_view ca_label) {
  if (names.cert_file.empty() != names.key_file.empty()) {
    return absl::InvalidArgumentError("a certificate needs both a certificate file and a key file");
  }
  auto material = std::make_shared<TlsMaterial>();
  if (!names.cert_file.empty()) {
    if (absl::Status s = ReadIdentity(names, cert_pem, key_pem, *material); !s.ok()) return s;
  }
  if (!names.ca_file.empty()) {
    material->cas = X509_STORE_new();
    if (material->cas == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
    X509_STORE* store = material->cas;
    if (absl::Status s = ReadCertificates(ca_pem, absl::StrCat(Av(ca_label), " ", names.ca_file),
                                          [store](X509* cert) {
                                            X509_STORE_add_cert(store, cert);  // takes a reference
                                            X509_free(cert);
                                          });
        !s.ok()) {
      return s;
    }
    ERR_clear_error();  // a duplicate certificate in the bundle is not an error
  }
  return std::shared_ptr<const TlsMaterial>(std::move(material));
}

}  // namespace neighborly
