#include "extender/src/ingest/node_identity.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <array>
#include <nlohmann/json.hpp>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly::extender {

enum class KeyType { kRsa, kEc };

struct TokenVerifier::Key {
  ~Key() { EVP_PKEY_free(pkey); }
  EVP_PKEY* pkey = nullptr;
  KeyType type = KeyType::kRsa;
  std::string kid;
};

struct TokenVerifier::KeySet {
  std::vector<std::unique_ptr<Key>> keys;
};

namespace {

using Key = TokenVerifier::Key;
using KeySet = TokenVerifier::KeySet;

absl::Status Unauthenticated(std::string_view why) {
  return absl::UnauthenticatedError(absl::StrCat("identity token refused: ", Av(why)));
}

// -1 for bytes outside the base64url alphabet.
int Base64UrlValue(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// Checks the key's algorithm and size, and wraps it. Takes ownership of `pkey`.
absl::StatusOr<std::unique_ptr<Key>> WrapKey(EVP_PKEY* pkey, std::string kid,
                                             std::string_view where) {
  auto key = std::make_unique<Key>();
  key->pkey = pkey;
  key->kid = std::move(kid);
  if (EVP_PKEY_is_a(pkey, "RSA")) {
    key->type = KeyType::kRsa;
    if (EVP_PKEY_get_bits(pkey) < 2048) {
      return absl::InvalidArgumentError(absl::StrCat(
          Av(where), ": RSA key of ", EVP_PKEY_get_bits(pkey), " bits (at least 2048 needed)"));
    }
  } else if (EVP_PKEY_is_a(pkey, "EC")) {
    key->type = KeyType::kEc;
    std::array<char, 64> group{};
    size_t length = 0;
    if (EVP_PKEY_get_group_name(pkey, group.data(), group.size(), &length) != 1 ||
        std::string_view(group.data(), length) != "prime256v1") {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          absl::StrCat(Av(where), ": EC key not on P-256 (only ES256 is accepted)"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(Av(where), ": neither an RSA nor an EC key"));
  }
  return key;
}

struct ParamBuild {
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM* params = nullptr;
  std::vector<BIGNUM*> bns;
  ~ParamBuild() {
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    for (BIGNUM* b : bns) BN_free(b);
  }
  BIGNUM* Bn(const std::string& bytes) {
    bns.push_back(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                            static_cast<int>(bytes.size()), nullptr));
    return bns.back();
  }
};

EVP_PKEY* FromData(const char* type, OSSL_PARAM* params) {
  EVP_PKEY* pkey = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  if (ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
    if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  ERR_clear_error();
  return pkey;
}

std::optional<std::string> StringMember(const nlohmann::json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

absl::StatusOr<std::unique_ptr<Key>> JwkToKey(const nlohmann::json& jwk, std::string_view where) {
  if (!jwk.is_object())
    return absl::InvalidArgumentError(absl::StrCat(Av(where), ": not an object"));
  const std::string kty = StringMember(jwk, "kty").value_or("");
  const std::string kid = StringMember(jwk, "kid").value_or("");
  if (const std::optional<std::string> use = StringMember(jwk, "use"); use && *use != "sig") {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(where), ": \"use\" is \"", *use, "\", not sig"));
  }
  ParamBuild build;
  if (build.bld == nullptr) return absl::InternalError("OpenSSL: out of memory");
  if (kty == "RSA") {
    const std::optional<std::string> n = DecodeBase64Url(StringMember(jwk, "n").value_or(""));
    const std::optional<std::string> e = DecodeBase64Url(StringMember(jwk, "e").value_or(""));
    if (!n || !e || n->empty() || e->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(where), ": RSA key needs base64url \"n\" and \"e\""));
    }
    OSSL_PARAM_BLD_push_BN(build.bld, OSSL_PKEY_PARAM_RSA_N, build.Bn(*n));
    OSSL_PARAM_BLD_push_BN(build.bld, OSSL_PKEY_PARAM_RSA_E, build.Bn(*e));
    build.params = OSSL_PARAM_BLD_to_param(build.bld);
    EVP_PKEY* pkey = build.params ? FromData("RSA", build.params) : nullptr;
    if (pkey == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(Av(where), ": OpenSSL rejects the RSA key"));
    }
    return WrapKey(pkey, kid, where);
  }
  if (kty == "EC") {
    if (StringMember(jwk, "crv").value_or("") != "P-256") {
      return absl::InvalidArgumentError(absl::StrCat(Av(where), ": EC key must have crv P-256"));
    }
    const std::optional<std::string> x = DecodeBase64Url(StringMember(jwk, "x").value_or(""));
    const std::optional<std::string> y = DecodeBase64Url(StringMember(jwk, "y").value_or(""));
    if (!x || !y || x->size() != 32 || y->size() != 32) {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(where), ": EC key needs 32-byte base64url \"x\" and \"y\""));
    }
    const std::string point = absl::StrCat("\x04", *x, *y);
    OSSL_PARAM_BLD_push_utf8_string(build.bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
    OSSL_PARAM_BLD_push_octet_string(build.bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                     point.size());
    build.params = OSSL_PARAM_BLD_to_param(build.bld);
    EVP_PKEY* pkey = build.params ? FromData("EC", build.params) : nullptr;
    if (pkey == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(where), ": OpenSSL rejects the EC key (point not on P-256?)"));
    }
    return WrapKey(pkey, kid, where);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Av(where), ": kty \"", kty, "\" is not RSA or EC"));
}

absl::Status AddJwks(std::string_view text, std::string_view source,
                     std::vector<std::unique_ptr<Key>>& keys) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(Av(source), ": not valid JSON"));
  }
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(source), ": not a JWKS document (an object with a \"keys\" list)"));
  }
  const nlohmann::json& list = doc["keys"];
  for (size_t i = 0; i < list.size(); ++i) {
    absl::StatusOr<std::unique_ptr<Key>> key =
        JwkToKey(list[i], absl::StrCat(Av(source), ": keys[", i, "]"));
    if (!key.ok()) return key.status();
    keys.push_back(std::move(*key));
  }
  return absl::OkStatus();
}

absl::Status AddPem(std::string_view text, std::string_view source,
                    std::vector<std::unique_ptr<Key>>& keys) {
  BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
  if (bio == nullptr) return absl::InternalError("OpenSSL: out of memory");
  size_t found = 0;
  absl::Status status;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long length = 0;
    if (PEM_read_bio(bio, &name, &header, &data, &length) != 1) break;
    const std::string block = name;
    const unsigned char* p = data;
    EVP_PKEY* pkey = nullptr;
    if (block == "PUBLIC KEY") {
      pkey = d2i_PUBKEY(nullptr, &p, length);
    } else if (block == "RSA PUBLIC KEY") {
      pkey = d2i_PublicKey(EVP_PKEY_RSA, nullptr, &p, length);
    } else if (block == "CERTIFICATE") {
      if (X509* cert = d2i_X509(nullptr, &p, length); cert != nullptr) {
        pkey = X509_get_pubkey(cert);
        X509_free(cert);
      }
    }
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    if (block != "PUBLIC KEY" && block != "RSA PUBLIC KEY" && block != "CERTIFICATE") continue;
    const std::string where = absl::StrCat(Av(source), ": PEM block ", found + 1, " (", block, ")");
    if (pkey == nullptr) {
      status = absl::InvalidArgumentError(absl::StrCat(where, ": cannot be decoded"));
      break;
    }
    absl::StatusOr<std::unique_ptr<Key>> key = WrapKey(pkey, "", where);
    if (!key.ok()) {
      status = key.status();
      break;
    }
    keys.push_back(std::move(*key));
    ++found;
  }
  BIO_free(bio);
  ERR_clear_error();
  if (!status.ok()) return status;
  if (found == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(source), ": no PEM public key (BEGIN PUBLIC KEY) or certificate in it"));
  }
  return absl::OkStatus();
}

bool VerifySignature(const Key& key, std::string_view signed_part, const std::string& signature) {
  std::string der;
  const std::string* sig = &signature;
  if (key.type == KeyType::kEc) {
    // JWS carries R || S (32 bytes each); OpenSSL wants a DER ECDSA-Sig-Value.
    if (signature.size() != 64) return false;
    const auto* raw = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* ecdsa = ECDSA_SIG_new();
    BIGNUM* r = BN_bin2bn(raw, 32, nullptr);
    BIGNUM* s = BN_bin2bn(raw + 32, 32, nullptr);
    if (ecdsa == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(ecdsa, r, s) != 1) {
      BN_free(r);
      BN_free(s);
      ECDSA_SIG_free(ecdsa);
      return false;
    }
    unsigned char* out = nullptr;
    const int length = i2d_ECDSA_SIG(ecdsa, &out);
    ECDSA_SIG_free(ecdsa);
    if (length <= 0) return false;
    der.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(length));
    OPENSSL_free(out);
    sig = &der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr &&
            EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key.pkey) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig->data()), sig->size(),
                             reinterpret_cast<const unsigned char*>(signed_part.data()),
                             signed_part.size()) == 1;
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

std::optional<absl::Time> NumericDate(const nlohmann::json& payload, const char* name) {
  auto it = payload.find(name);
  if (it == payload.end() || !it->is_number()) return std::nullopt;
  const double seconds = it->get<double>();
  if (!(seconds >= 0 && seconds < 1e11)) return std::nullopt;
  return absl::FromUnixSeconds(static_cast<int64_t>(seconds));
}

}  // namespace

std::optional<std::string> DecodeBase64Url(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  for (const char c : text) {
    const int value = Base64UrlValue(static_cast<unsigned char>(c));
    if (value < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  // Leftover bits must be zero (the canonical encoding), else the text was not produced by
  // an encoder and two texts would decode alike.
  if (bits > 0 && (buffer & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

TokenVerifier::TokenVerifier(NodeIdentityOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

TokenVerifier::~TokenVerifier() = default;

namespace {

// Parses the JWKS text (may be empty) and the PEM texts; `options` names the files.
absl::StatusOr<std::shared_ptr<const KeySet>> ParseKeySet(const NodeIdentityOptions& options,
                                                          std::string_view jwks_json,
                                                          std::span<const std::string> pem_texts) {
  auto set = std::make_shared<KeySet>();
  if (!options.jwks_file.empty() && Trim(jwks_json).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(options.jwks_file, ": empty file"));
  }
  if (!jwks_json.empty()) {
    const std::string source = options.jwks_file.empty() ? "JWKS" : options.jwks_file;
    if (absl::Status s = AddJwks(jwks_json, source, set->keys); !s.ok()) return s;
  }
  for (size_t i = 0; i < pem_texts.size(); ++i) {
    const std::string source = i < options.public_key_files.size() ? options.public_key_files[i]
                                                                   : absl::StrCat("PEM text ", i);
    if (absl::Status s = AddPem(pem_texts[i], source, set->keys); !s.ok()) return s;
  }
  if (set->keys.empty()) {
    return absl::InvalidArgumentError(
        "node identity needs the issuer's public keys (jwksFile or publicKeyFiles); none found");
  }
  return std::shared_ptr<const KeySet>(std::move(set));
}

absl::Status CheckOptions(const NodeIdentityOptions& options) {
  if (options.issuer.empty()) {
    return absl::InvalidArgumentError("node identity needs the service-account issuer (issuer)");
  }
  if (options.audience.empty()) return absl::InvalidArgumentError("node identity: empty audience");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenVerifier>> TokenVerifier::FromKeyText(
    NodeIdentityOptions options, const Clock& clock, std::string_view jwks_json,
    const std::vector<std::string>& pem_texts) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const KeySet>> keys = ParseKeySet(options, jwks_json, pem_texts);
  if (!keys.ok()) return keys.status();
  std::unique_ptr<TokenVerifier> verifier(new TokenVerifier(std::move(options), clock));
  verifier->fixed_keys_ = std::move(*keys);
  return verifier;
}

absl::StatusOr<std::unique_ptr<TokenVerifier>> TokenVerifier::Create(NodeIdentityOptions options,
                                                                     const Clock& clock) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (options.jwks_file.empty() && options.public_key_files.empty()) {
    return absl::InvalidArgumentError(
        "node identity needs the issuer's public keys (jwksFile or publicKeyFiles); none given");
  }
  ReloadingFilesOptions files{.what = "grpc.identity keys",
                              .paths = options.public_key_files,
                              .labels = {},
                              .interval = options.reload_interval,
                              .on_reload = options.on_reload};
  const bool has_jwks = !options.jwks_file.empty();
  if (has_jwks) files.paths.insert(files.paths.begin(), options.jwks_file);
  absl::StatusOr<std::unique_ptr<ReloadingFiles<KeySet>>> key_files =
      ReloadingFiles<KeySet>::Create(
          std::move(files), clock, [options, has_jwks](std::span<const std::string> contents) {
            return has_jwks ? ParseKeySet(options, contents[0], contents.subspan(1))
                            : ParseKeySet(options, "", contents);
          });
  if (!key_files.ok()) return key_files.status();
  std::unique_ptr<TokenVerifier> verifier(new TokenVerifier(std::move(options), clock));
  verifier->key_files_ = std::move(*key_files);
  return verifier;
}

std::shared_ptr<const KeySet> TokenVerifier::Keys() const {
  return key_files_ != nullptr ? key_files_->Current() : fixed_keys_;
}

size_t TokenVerifier::key_count() const { return Keys()->keys.size(); }

uint64_t TokenVerifier::reloads() const {
  return key_files_ != nullptr ? key_files_->reloads() : 0;
}

uint64_t TokenVerifier::reload_failures() const {
  return key_files_ != nullptr ? key_files_->failures() : 0;
}

absl::StatusOr<NodeIdentity> TokenVerifier::Verify(std::string_view token) const {
  if (token.empty()) return Unauthenticated("no token");
  if (token.size() > kMaxTokenBytes) {
    return Unauthenticated(
        absl::StrCat("token of ", token.size(), " bytes (at most ", kMaxTokenBytes, ")"));
  }
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return Unauthenticated("not a compact JWS (three base64url parts separated by dots)");
  }
  const std::optional<std::string> header_text = DecodeBase64Url(token.substr(0, dot1));
  const std::optional<std::string> payload_text =
      DecodeBase64Url(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const std::optional<std::string> signature = DecodeBase64Url(token.substr(dot2 + 1));
  if (!header_text || !payload_text || !signature) {
    return Unauthenticated("a part is not valid unpadded base64url");
  }
  const nlohmann::json header = nlohmann::json::parse(*header_text, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return Unauthenticated("header is not a JSON object");
  }
  const std::string alg = StringMember(header, "alg").value_or("");
  KeyType type;
  if (alg == "RS256") {
    type = KeyType::kRsa;
  } else if (alg == "ES256") {
    type = KeyType::kEc;
  } else {
    return Unauthenticated(absl::StrCat("alg \"", alg, "\" is not accepted (RS256 or ES256)"));
  }
  if (header.contains("crit")) return Unauthenticated("header has \"crit\" extensions");
  const std::string kid = StringMember(header, "kid").value_or("");
  const std::string_view signed_part = token.substr(0, dot2);
  bool verified = false;
  bool candidate = false;
  const std::shared_ptr<const KeySet> keys = Keys();
  for (const std::unique_ptr<Key>& key : keys->keys) {
    if (key->type != type) continue;
    if (!kid.empty() && !key->kid.empty() && key->kid != kid) continue;
    candidate = true;
    if (VerifySignature(*key, signed_part, *signature)) {
      verified = true;
      break;
    }
  }
  if (!candidate) {
    return Unauthenticated(absl::StrCat("no ", alg, " issuer key",
                                        kid.empty() ? "" : " with kid \"", kid,
                                        kid.empty() ? "" : "\""));
  }
  if (!verified) return Unauthenticated("signature does not verify against the issuer's keys");

  const nlohmann::json payload = nlohmann::json::parse(*payload_text, nullptr, false);
  if (payload.is_discarded() || !payload.is_object()) {
    return Unauthenticated("payload is not a JSON object");
  }
  const std::string iss = StringMember(payload, "iss").value_or("");
  if (iss != options_.issuer) {
    return Unauthenticated(absl::StrCat("issuer \"", iss, "\" is not \"", options_.issuer, "\""));
  }
  bool audience_ok = false;
  if (auto aud = payload.find("aud"); aud != payload.end()) {
    if (aud->is_string()) audience_ok = aud->get<std::string>() == options_.audience;
    if (aud->is_array()) {
      for (const nlohmann::json& a : *aud) {
        audience_ok = audience_ok || (a.is_string() && a.get<std::string>() == options_.audience);
      }
    }
  }
  if (!audience_ok) {
    return Unauthenticated(absl::StrCat("audience is not \"", options_.audience, "\""));
  }
  const absl::Time now = clock_.Now();
  const std::optional<absl::Time> exp = NumericDate(payload, "exp");
  if (!exp) return Unauthenticated("no numeric \"exp\" (expiry)");
  if (now > *exp + options_.leeway) {
    return Unauthenticated(absl::StrCat("expired at ", absl::FormatTime(*exp)));
  }
  if (*exp - now > options_.max_lifetime + options_.leeway) {
    return Unauthenticated(absl::StrCat("expires at ", absl::FormatTime(*exp), ", more than ",
                                        absl::FormatDuration(options_.max_lifetime),
                                        " from now (grpc.identity.maxTokenLifetime)"));
  }
  if (payload.contains("nbf")) {
    const std::optional<absl::Time> nbf = NumericDate(payload, "nbf");
    if (!nbf) return Unauthenticated("\"nbf\" is not a date");
    if (now + options_.leeway < *nbf) {
      return Unauthenticated(absl::StrCat("not valid before ", absl::FormatTime(*nbf)));
    }
  }
  NodeIdentity identity;
  identity.expires = *exp;
  identity.subject = StringMember(payload, "sub").value_or("");
  if (!options_.allowed_subjects.empty()) {
    bool allowed = false;
    for (const std::string& s : options_.allowed_subjects)
      allowed = allowed || s == identity.subject;
    if (!allowed) {
      return Unauthenticated(absl::StrCat("subject \"", identity.subject,
                                          "\" is not an allowed agent service account"));
    }
  }
  auto k8s = payload.find("kubernetes.io");
  if (k8s == payload.end() || !k8s->is_object()) {
    return Unauthenticated("no \"kubernetes.io\" claims (not a bound service-account token)");
  }
  if (auto node = k8s->find("node"); node != k8s->end() && node->is_object()) {
    identity.node_name = StringMember(*node, "name").value_or("");
    identity.node_uid = StringMember(*node, "uid").value_or("");
  }
  if (identity.node_name.empty()) {
    return Unauthenticated(
        "token names no node (kubernetes.io.node.name; Kubernetes >= 1.30 adds it to tokens "
        "of pods bound to a node)");
  }
  if (auto pod = k8s->find("pod"); pod != k8s->end() && pod->is_object()) {
    identity.pod_name = absl::StrCat(StringMember(*k8s, "namespace").value_or(""), "/",
                                     StringMember(*pod, "name").value_or(""));
  }
  return identity;
}

}  // namespace neighborly::extender
