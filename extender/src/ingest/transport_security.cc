#include "extender/src/ingest/transport_security.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace neighborly::extender {
namespace {

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioDeleter> OpenFile(const std::string& path) {
  return std::unique_ptr<BIO, BioDeleter>(BIO_new_file(path.c_str(), "r"));
}

absl::StatusOr<std::unique_ptr<X509, X509Deleter>> ReadCertificate(const std::string& what,
                                                                   const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is not set"));
  std::unique_ptr<BIO, BioDeleter> bio = OpenFile(path);
  if (bio == nullptr) {
    ERR_clear_error();
    return absl::NotFoundError(absl::StrCat(what, " ", path, ": cannot read the file"));
  }
  std::unique_ptr<X509, X509Deleter> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": no PEM certificate (BEGIN CERTIFICATE) in it"));
  }
  return cert;
}

}  // namespace

absl::Status CheckTlsFiles(const std::string& ca_file, const std::string& cert_file,
                           const std::string& key_file) {
  if (!ca_file.empty()) {
    if (auto ca = ReadCertificate("CA file", ca_file); !ca.ok()) return ca.status();
  }
  absl::StatusOr<std::unique_ptr<X509, X509Deleter>> cert =
      ReadCertificate("certificate file", cert_file);
  if (!cert.ok()) return cert.status();
  if (key_file.empty()) return absl::InvalidArgumentError("key file is not set");
  std::unique_ptr<BIO, BioDeleter> bio = OpenFile(key_file);
  if (bio == nullptr) {
    ERR_clear_error();
    return absl::NotFoundError(absl::StrCat("key file ", key_file, ": cannot read the file"));
  }
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", key_file, ": no unencrypted PEM private key in it"));
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", key_file, " does not belong to certificate ", cert_file));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (files.require_client_cert && files.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "a CA file is needed to verify client certificates (or do not require them)");
  }
  if (absl::Status s = CheckTlsFiles(files.ca_file, files.cert_file, files.key_file); !s.ok()) {
    return s;
  }
  const unsigned interval_s =
      static_cast<unsigned>(std::max<int64_t>(1, absl::ToInt64Seconds(files.reload_interval)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_file, files.cert_file, files.ca_file, interval_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!files.ca_file.empty()) options.watch_root_certs();
  options.set_cert_request_type(
      files.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
      : files.ca_file.empty()   ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC refused the TLS options");
  return credentials;
}

}  // namespace neighborly::extender
