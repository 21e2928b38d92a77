#include "node-agent/src/report/channel_security.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace neighborly::agent {
namespace {

// Reads the first PEM object of `path` with `read`; the error names the file.
template <typename T, typename Read>
absl::StatusOr<T*> ReadPem(const std::string& what, const std::string& path, Read read,
                           const char* expected) {
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) {
    ERR_clear_error();
    return absl::NotFoundError(absl::StrCat(what, " ", path, ": cannot read the file"));
  }
  T* object = read(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (object == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": no ", expected, " in it"));
  }
  return object;
}

absl::Status CheckFiles(const ClientTlsFiles& files) {
  if (files.ca_file.empty()) return absl::InvalidArgumentError("TLS needs a CA file (--tls-ca)");
  absl::StatusOr<X509*> ca = ReadPem<X509>("CA file", files.ca_file, PEM_read_bio_X509,
                                           "PEM certificate (BEGIN CERTIFICATE)");
  if (!ca.ok()) return ca.status();
  X509_free(*ca);
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both --tls-cert and --tls-key (or neither)");
  }
  if (files.cert_file.empty()) return absl::OkStatus();
  absl::StatusOr<X509*> cert = ReadPem<X509>("certificate file", files.cert_file, PEM_read_bio_X509,
                                             "PEM certificate (BEGIN CERTIFICATE)");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<EVP_PKEY*> key = ReadPem<EVP_PKEY>(
      "key file", files.key_file, PEM_read_bio_PrivateKey, "unencrypted PEM private key");
  if (!key.ok()) {
    X509_free(*cert);
    return key.status();
  }
  const bool match = X509_check_private_key(*cert, *key) == 1;
  ERR_clear_error();
  X509_free(*cert);
  EVP_PKEY_free(*key);
  if (!match) {
    return absl::InvalidArgumentError(absl::StrCat(
        "key file ", files.key_file, " does not belong to certificate ", files.cert_file));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files) {
  if (absl::Status s = CheckFiles(files); !s.ok()) return s;
  const unsigned interval_s =
      static_cast<unsigned>(std::max<int64_t>(1, absl::ToInt64Seconds(files.reload_interval)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key_file, files.cert_file, files.ca_file, interval_s);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  if (!files.cert_file.empty()) options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  // The extender's name must be in its certificate (not only a chain to the CA).
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::experimental::TlsCredentials(options);
  if (credentials == nullptr) return absl::InternalError("gRPC refused the TLS options");
  return credentials;
}

absl::StatusOr<std::string> ReadIdentityToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("identity token file ", path, ": cannot read it"));
  std::string token;
  token.resize(kMaxIdentityTokenBytes + 1);
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<size_t>(in.gcount()));
  if (token.size() > kMaxIdentityTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat("identity token file ", path, ": larger than ",
                                                   kMaxIdentityTokenBytes, " bytes"));
  }
  absl::string_view trimmed = absl::StripAsciiWhitespace(token);
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("identity token file ", path, " is empty"));
  }
  return std::string(trimmed);
}

}  // namespace neighborly::agent
