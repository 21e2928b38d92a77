#include "extender/src/http/tls_reloader.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace neighborly::extender {
namespace {

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioCloser>;

Bio MemoryBio(std::string_view text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
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

}  // namespace

TlsMaterial::~TlsMaterial() {
  X509_free(cert);
  if (chain != nullptr) sk_X509_pop_free(chain, X509_free);
  EVP_PKEY_free(key);
  X509_STORE_free(client_cas);
}

absl::StatusOr<std::shared_ptr<const TlsMaterial>> ParseTlsMaterial(const TlsFiles& files,
                                                                    std::string_view cert_pem,
                                                                    std::string_view key_pem,
                                                                    std::string_view ca_pem) {
  auto material = std::make_shared<TlsMaterial>();
  material->chain = sk_X509_new_null();
  if (material->chain == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  const std::string cert_what = absl::StrCat("certificate file ", files.cert_file);
  if (absl::Status s = ReadCertificates(cert_pem, cert_what,
                                        [&](X509* cert) {
                                          if (material->cert == nullptr) {
                                            material->cert = cert;
                                          } else if (sk_X509_push(material->chain, cert) == 0) {
                                            X509_free(cert);
                                          }
                                        });
      !s.ok()) {
    return s;
  }

  Bio key_bio = MemoryBio(key_pem);
  if (key_bio == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  material->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassword, nullptr);
  ERR_clear_error();
  if (material->key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", files.key_file, ": no unencrypted PEM private key in it"));
  }
  if (X509_check_private_key(material->cert, material->key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "key file ", files.key_file, " does not belong to certificate ", files.cert_file));
  }

  if (!files.client_ca_file.empty()) {
    material->client_cas = X509_STORE_new();
    if (material->client_cas == nullptr) {
      return absl::ResourceExhaustedError("OpenSSL: out of memory");
    }
    X509_STORE* store = material->client_cas;
    if (absl::Status s =
            ReadCertificates(ca_pem, absl::StrCat("client CA file ", files.client_ca_file),
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

absl::StatusOr<std::unique_ptr<TlsReloader>> TlsReloader::Create(
    TlsFiles files, const Clock& clock, std::function<void(bool ok)> on_reload) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("HTTPS needs both a certificate file and a key file");
  }
  ReloadingFilesOptions options{.what = "http.tls",
                                .paths = {files.cert_file, files.key_file},
                                .labels = {},
                                .interval = files.reload_interval,
                                .on_reload = std::move(on_reload)};
  if (!files.client_ca_file.empty()) options.paths.push_back(files.client_ca_file);
  absl::StatusOr<std::unique_ptr<ReloadingFiles<TlsMaterial>>> reloading =
      ReloadingFiles<TlsMaterial>::Create(
          std::move(options), clock, [files](std::span<const std::string> contents) {
            return ParseTlsMaterial(files, contents[0], contents[1],
                                    contents.size() > 2 ? std::string_view(contents[2]) : "");
          });
  if (!reloading.ok()) return reloading.status();
  return std::unique_ptr<TlsReloader>(new TlsReloader(std::move(files), std::move(*reloading)));
}

bool TlsReloader::Configure(SSL_CTX& ctx) {
  // No session resumption: a resumed session skips the client-certificate
  // check, which must be made against the client CA of the moment (a rotated
  // CA refuses the old one's certificates at once). kube-scheduler keeps its
  // connections alive, so full handshakes are rare.
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(&ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(&ctx, 0);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
  SSL_CTX_set_cert_cb(&ctx, &TlsReloader::CertCallback, this);
  if (!files_config_.client_ca_file.empty()) {
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

// Runs in the handshake, after the ClientHello: installs the current
// certificate, key, chain and client-CA store on this connection only.
int TlsReloader::CertCallback(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsReloader*>(arg);
  const std::shared_ptr<const TlsMaterial> material = self->files_->Current();
  if (SSL_use_cert_and_key(ssl, material->cert, material->key, material->chain,
                           /*override=*/1) != 1) {
    return 0;
  }
  if (material->client_cas != nullptr &&
      SSL_set1_verify_cert_store(ssl, material->client_cas) != 1) {
    return 0;
  }
  return 1;
}

}  // namespace neighborly::extender
