// Known-answer tests of the token verifier's signature check against the
// published examples of RFC 7515 (JSON Web Signature), Appendix A.2 (RS256)
// and A.3 (ES256), the algorithms of RFC 7518 sections 3.3 and 3.4. The
// project's own signer (test/support/jwt_signer.h) cannot catch an error that
// signer and verifier share; these keys and signatures were made by others.
//
// The examples' payload is {"iss":"joe","exp":1300819380,
// "http://example.com/is_root":true}: no audience and no Kubernetes claims,
// so a token whose signature verifies is then refused for its audience; one
// whose signature does not is refused for the signature. Which of the two
// reasons comes back is what these tests check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "extender/src/ingest/node_identity.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

// RFC 7515 A.2.1: the header {"alg":"RS256"} and the payload, base64url.
constexpr char kRs256Header[] = "eyJhbGciOiJSUzI1NiJ9";
// RFC 7515 A.3.1: {"alg":"ES256"}.
constexpr char kEs256Header[] = "eyJhbGciOiJFUzI1NiJ9";
constexpr char kPayload[] =
    "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlf"
    "Q";

// RFC 7515 A.2.1: the RSA public key (n, e).
constexpr char kRsaN[] =
    "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-"
    "4qPCJrcS2mJPMEzP1Pt0Bm4d4Ql"
    "L-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-"
    "bSf63kpaSHSXndS5z5rexMdbBYUs"
    "LA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-"
    "DWNmoud"
    "F8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";
// RFC 7515 A.2.1: the RS256 signature.
constexpr char kRs256Signature[] =
    "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_"
    "O8W2Fp5jujG"
    "bds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_"
    "nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K"
    "0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-"
    "eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6"
    "LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";
// RFC 7515 A.3.1: the P-256 public key (x, y).
constexpr char kEcX[] = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
constexpr char kEcY[] = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
// RFC 7515 A.3.1: the ES256 signature, R || S (64 octets).
constexpr char kEs256Signature[] =
    "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";

std::string Jwks() {
  nlohmann::json keys = nlohmann::json::array();
  keys.push_back({{"kty", "RSA"}, {"kid", "rfc7515-a2"}, {"n", kRsaN}, {"e", "AQAB"}});
  keys.push_back(
      {{"kty", "EC"}, {"kid", "rfc7515-a3"}, {"crv", "P-256"}, {"x", kEcX}, {"y", kEcY}});
  return nlohmann::json{{"keys", keys}}.dump();
}

// Flips one bit of the base64url text's first character's value (still valid base64url).
std::string Tampered(std::string b64) {
  b64[0] = b64[0] == 'A' ? 'B' : 'A';
  return b64;
}

class RfcVectorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TokenVerifier>> v =
        TokenVerifier::FromKeyText({.issuer = "joe", .audience = "neighborly"}, clock_, Jwks(), {});
    ASSERT_TRUE(v.ok()) << v.status();
    verifier_ = std::move(*v);
  }
  std::string Reason(std::string_view header, std::string_view payload,
                     std::string_view signature) {
    const std::string token =
        std::string(header) + "." + std::string(payload) + "." + std::string(signature);
    absl::StatusOr<NodeIdentity> id = verifier_->Verify(token);
    EXPECT_FALSE(id.ok());
    return id.ok() ? "" : std::string(id.status().message());
  }
  // Before the examples' exp (2011-03-22), so expiry is not what refuses them.
  FakeClock clock_{absl::FromUnixSeconds(1'300'000'000)};
  std::unique_ptr<TokenVerifier> verifier_;
};

TEST_F(RfcVectorsTest, Rs256ExampleSignatureVerifies) {
  // Past the signature and the issuer "joe": refused only for the audience.
  EXPECT_THAT(Reason(kRs256Header, kPayload, kRs256Signature), HasSubstr("audience"));
}

TEST_F(RfcVectorsTest, Es256ExampleSignatureVerifies) {
  EXPECT_THAT(Reason(kEs256Header, kPayload, kEs256Signature), HasSubstr("audience"));
}

TEST_F(RfcVectorsTest, AlteredSignaturesPayloadsOrAlgorithmsDoNotVerify) {
  const std::string bad = "signature does not verify";
  EXPECT_THAT(Reason(kRs256Header, kPayload, Tampered(kRs256Signature)), HasSubstr(bad));
  EXPECT_THAT(Reason(kEs256Header, kPayload, Tampered(kEs256Signature)), HasSubstr(bad));
  // The payload is signed too: one character changed, nothing verifies.
  const std::string payload = std::string(kPayload).replace(10, 1, "A");
  EXPECT_THAT(Reason(kRs256Header, payload, kRs256Signature), HasSubstr(bad));
  EXPECT_THAT(Reason(kEs256Header, payload, kEs256Signature), HasSubstr(bad));
  // Each signature under the other algorithm's header.
  EXPECT_THAT(Reason(kEs256Header, kPayload, kRs256Signature), HasSubstr(bad));
  EXPECT_THAT(Reason(kRs256Header, kPayload, kEs256Signature), HasSubstr(bad));
}

TEST_F(RfcVectorsTest, EachExampleNeedsItsOwnKey) {
  absl::StatusOr<std::unique_ptr<TokenVerifier>> rsa_only = TokenVerifier::FromKeyText(
      {.issuer = "joe", .audience = "neighborly"}, clock_,
      nlohmann::json{{"keys", {{{"kty", "RSA"}, {"n", kRsaN}, {"e", "AQAB"}}}}}.dump(), {});
  ASSERT_TRUE(rsa_only.ok()) << rsa_only.status();
  absl::StatusOr<NodeIdentity> id =
      (*rsa_only)->Verify(absl::StrCat(kEs256Header, ".", kPayload, ".", kEs256Signature));
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(id.status().message(), HasSubstr("no ES256 issuer key"));
}

}  // namespace
}  // namespace neighborly::extender
