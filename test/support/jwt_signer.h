// Signs JSON Web Tokens in tests (RS256 and ES256) with a PEM private key, as
// the cluster's service-account issuer would; and renders the public keys as a
// JWKS document. Header-only; link OpenSSL::Crypto and nlohmann_json.
//
//   std::string token = SignJwt(TestPki::Read(pki.Path("sa.key")), "RS256",
//                               {{"iss", "https://k8s"}, {"aud", {"neighborly"}}, ...});
#ifndef NEIGHBORLY_TEST_SUPPORT_JWT_SIGNER_H_
#define NEIGHBORLY_TEST_SUPPORT_JWT_SIGNER_H_

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace neighborly::testing {

inline std::string Base64UrlEncode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (const char c : bytes) {
    buffer = (buffer << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(buffer >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(buffer << (6 - bits)) & 0x3f]);
  return out;
}

inline EVP_PKEY* ReadPrivateKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

// Signs header.payload; `alg` "RS256" or "ES256" (the key must match), anything
// else (e.g. "none") yields an empty signature part. Returns "" on failure.
inline std::string SignJwt(const std::string& private_key_pem, const std::string& alg,
                           const nlohmann::json& payload, nlohmann::json header = nullptr) {
  if (header.is_null()) header = {{"alg", alg}, {"typ", "JWT"}};
  const std::string signing_input =
      Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(payload.dump());
  if (alg != "RS256" && alg != "ES256") return signing_input + ".";
  EVP_PKEY* key = ReadPrivateKey(private_key_pem);
  if (key == nullptr) return "";
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t length = 0;
  std::string signature;
  if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestSign(ctx, nullptr, &length,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) == 1) {
    signature.resize(length);
    if (EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &length,
                       reinterpret_cast<const unsigned char*>(signing_input.data()),
                       signing_input.size()) == 1) {
      signature.resize(length);
    } else {
      signature.clear();
    }
  }
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  if (signature.empty()) return "";
  if (alg == "ES256") {  // DER ECDSA-Sig-Value -> R || S, 32 bytes each
    const unsigned char* p = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(signature.size()));
    if (sig == nullptr) return "";
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(sig);
    signature = raw;
  }
  return signing_input + "." + Base64UrlEncode(signature);
}

// One JWK for the public half of a PEM private key (RSA or P-256).
inline nlohmann::json PublicJwk(const std::string& private_key_pem, const std::string& kid) {
  EVP_PKEY* key = ReadPrivateKey(private_key_pem);
  if (key == nullptr) return nullptr;
  auto bn_bytes = [&](const char* name, int pad) {
    BIGNUM* bn = nullptr;
    std::string out;
    if (EVP_PKEY_get_bn_param(key, name, &bn) == 1) {
      out.resize(pad > 0 ? static_cast<size_t>(pad) : static_cast<size_t>(BN_num_bytes(bn)));
      BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
    }
    BN_free(bn);
    return Base64UrlEncode(out);
  };
  nlohmann::json jwk;
  if (EVP_PKEY_is_a(key, "RSA")) {
    jwk = {{"kty", "RSA"},
           {"alg", "RS256"},
           {"use", "sig"},
           {"kid", kid},
           {"n", bn_bytes(OSSL_PKEY_PARAM_RSA_N, 0)},
           {"e", bn_bytes(OSSL_PKEY_PARAM_RSA_E, 0)}};
  } else {
    jwk = {{"kty", "EC"},
           {"alg", "ES256"},
           {"use", "sig"},
           {"kid", kid},
           {"crv", "P-256"},
           {"x", bn_bytes(OSSL_PKEY_PARAM_EC_PUB_X, 32)},
           {"y", bn_bytes(OSSL_PKEY_PARAM_EC_PUB_Y, 32)}};
  }
  EVP_PKEY_free(key);
  return jwk;
}

}  // namespace neighborly::testing

#endif  // NEIGHBORLY_TEST_SUPPORT_JWT_SIGNER_H_
