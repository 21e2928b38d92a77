// ServiceAccount token verification with keys made at test time (openssl CLI)
// and tokens signed here with OpenSSL.
#include "extender/src/ingest/node_identity.h"

#include <unistd.h>

#include <string>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/support/jwt_signer.h"
#include "test/support/test_pki.h"

namespace neighborly::extender {
namespace {

using ::neighborly::testing::Base64UrlEncode;
using ::neighborly::testing::PublicJwk;
using ::neighborly::testing::SignJwt;
using ::neighborly::testing::TestPki;
using ::testing::HasSubstr;

constexpr char kIssuer[] = "https://kubernetes.default.svc.cluster.local";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

class NodeIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs each test as its own process, two at
    // a time, and a shared directory was regenerated under a concurrent reader.
    pki_ = new TestPki(::testing::TempDir() + "/node-identity-pki-" + std::to_string(getpid()));
    ASSERT_TRUE(pki_->MakeSigningKey("rsa", "rsa").ok());
    ASSERT_TRUE(pki_->MakeSigningKey("ec", "ec").ok());
    ASSERT_TRUE(pki_->MakeSigningKey("other", "rsa").ok());
    ASSERT_TRUE(pki_->MakeSigningKey("ec2", "ec").ok());
  }
  static void TearDownTestSuite() { delete pki_; }

  static std::string Key(const std::string& name) { return TestPki::Read(pki_->Path(name)); }

  nlohmann::json Claims(const std::string& node = "worker-1") const {
    const int64_t now = absl::ToUnixSeconds(clock_.Now());
    return {{"iss", kIssuer},
            {"aud", {"neighborly"}},
            {"exp", now + 3600},
            {"iat", now},
            {"nbf", now},
            {"sub", "system:serviceaccount:neighborly:neighborly-agent"},
            {"kubernetes.io",
             {{"namespace", "neighborly"},
              {"node", {{"name", node}, {"uid", "n-uid"}}},
              {"pod", {{"name", "neighborly-agent-x"}, {"uid", "p-uid"}}},
              {"serviceaccount", {{"name", "neighborly-agent"}, {"uid", "sa-uid"}}}}}};
  }

  // A verifier over the RSA key as PEM and the EC key as JWKS.
  std::unique_ptr<TokenVerifier> Verifier(NodeIdentityOptions options = {}) const {
    options.issuer = options.issuer.empty() ? kIssuer : options.issuer;
    const nlohmann::json jwks = {{"keys", {PublicJwk(Key("ec.key"), "ec-1")}}};
    absl::StatusOr<std::unique_ptr<TokenVerifier>> v =
        TokenVerifier::FromKeyText(options, clock_, jwks.dump(), {Key("rsa.pub")});
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? std::move(*v) : nullptr;
  }

  static TestPki* pki_;
  FakeClock clock_;
  std::vector<bool> reported_;  // on_reload calls
};

TestPki* NodeIdentityTest::pki_ = nullptr;

TEST(Base64UrlTest, DecodesStrictly) {
  EXPECT_EQ(DecodeBase64Url(""), "");
  EXPECT_EQ(DecodeBase64Url("Zg"), "f");
  EXPECT_EQ(DecodeBase64Url("Zm8"), "fo");
  EXPECT_EQ(DecodeBase64Url("Zm9v"), "foo");
  EXPECT_EQ(DecodeBase64Url("-_8"), std::string("\xfb\xff", 2));
  EXPECT_EQ(DecodeBase64Url("Zg=="), std::nullopt);   // padding is not base64url in JWS
  EXPECT_EQ(DecodeBase64Url("Z+8"), std::nullopt);    // '+' is standard base64, not url
  EXPECT_EQ(DecodeBase64Url("Zm9vY"), std::nullopt);  // impossible length
  EXPECT_EQ(DecodeBase64Url("Zh"), std::nullopt);     // non-zero leftover bits
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(DecodeBase64Url(Base64UrlEncode(s)), s);
  }
}

TEST_F(NodeIdentityTest, AcceptsRs256AndEs256TokensAndReadsTheNode) {
  std::unique_ptr<TokenVerifier> v = Verifier();
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->key_count(), 2u);
  absl::StatusOr<NodeIdentity> rs = v->Verify(SignJwt(Key("rsa.key"), "RS256", Claims()));
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ(rs->node_name, "worker-1");
  EXPECT_EQ(rs->node_uid, "n-uid");
  EXPECT_EQ(rs->subject, "system:serviceaccount:neighborly:neighborly-agent");
  EXPECT_EQ(rs->pod_name, "neighborly/neighborly-agent-x");

  nlohmann::json header = {{"alg", "ES256"}, {"kid", "ec-1"}};
  absl::StatusOr<NodeIdentity> es =
      v->Verify(SignJwt(Key("ec.key"), "ES256", Claims("worker-2"), header));
  ASSERT_TRUE(es.ok()) << es.status();
  EXPECT_EQ(es->node_name, "worker-2");
  // "aud" may also be a plain string.
  nlohmann::json claims = Claims();
  claims["aud"] = "neighborly";
  EXPECT_TRUE(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).ok());
}

TEST_F(NodeIdentityTest, RefusesExpiredAndNotYetValidTokensBeyondTheLeeway) {
  std::unique_ptr<TokenVerifier> v = Verifier({.leeway = absl::Seconds(30)});
  const std::string token = SignJwt(Key("rsa.key"), "RS256", Claims());
  clock_.Advance(absl::Seconds(3600 + 29));
  EXPECT_TRUE(v->Verify(token).ok());  // within the leeway
  clock_.Advance(absl::Seconds(2));
  absl::StatusOr<NodeIdentity> expired = v->Verify(token);
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(Message(expired.status()), HasSubstr("expired"));

  nlohmann::json future = Claims();
  future["nbf"] = absl::ToUnixSeconds(clock_.Now()) + 120;
  absl::StatusOr<NodeIdentity> early = v->Verify(SignJwt(Key("rsa.key"), "RS256", future));
  EXPECT_THAT(Message(early.status()), HasSubstr("not valid before"));

  nlohmann::json no_exp = Claims();
  no_exp.erase("exp");
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", no_exp)).status()),
              HasSubstr("exp"));
}

TEST_F(NodeIdentityTest, RefusesWrongAudienceIssuerAndSubject) {
  std::unique_ptr<TokenVerifier> v =
      Verifier({.allowed_subjects = {"system:serviceaccount:neighborly:neighborly-agent"}});
  nlohmann::json claims = Claims();
  claims["aud"] = {"https://kubernetes.default.svc"};  // the API server's own audience
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).status()),
              HasSubstr("audience is not \"neighborly\""));
  claims = Claims();
  claims["iss"] = "https://other-cluster";
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).status()),
              HasSubstr("issuer \"https://other-cluster\""));
  claims = Claims();
  claims["sub"] = "system:serviceaccount:default:rogue";
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).status()),
              HasSubstr("not an allowed agent service account"));
}

TEST_F(NodeIdentityTest, RefusesBadSignaturesAndAlgorithms) {
  std::unique_ptr<TokenVerifier> v = Verifier();
  // Signed by a key the issuer does not have.
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("other.key"), "RS256", Claims())).status()),
              HasSubstr("signature does not verify"));
  // A genuine signature over different claims.
  const std::string genuine = SignJwt(Key("rsa.key"), "RS256", Claims("worker-1"));
  const std::string forged_claims = Base64UrlEncode(Claims("worker-9").dump());
  const size_t dot1 = genuine.find('.');
  const size_t dot2 = genuine.find('.', dot1 + 1);
  const std::string forged = genuine.substr(0, dot1 + 1) + forged_claims + genuine.substr(dot2);
  EXPECT_THAT(Message(v->Verify(forged).status()), HasSubstr("signature does not verify"));
  // alg none, HS256 (the public key as an HMAC secret), and an RS256 header over an EC signature.
  absl::Status none = v->Verify(SignJwt(Key("rsa.key"), "none", Claims())).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(Message(none), HasSubstr("alg \"none\" is not accepted"));
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "HS256", Claims())).status()),
              HasSubstr("alg \"HS256\""));
  const std::string es = SignJwt(Key("ec.key"), "ES256", Claims());
  const std::string mixed = Base64UrlEncode(R"({"alg":"RS256"})") + es.substr(es.find('.'));
  EXPECT_THAT(Message(v->Verify(mixed).status()), HasSubstr("signature does not verify"));
  // Garbage of every shape.
  for (const std::string& bad : std::vector<std::string>{"", "abc", "a.b", "a.b.c.d", "!!.??.**",
                                                         "e30.e30.", "e30.e30.AA"}) {
    EXPECT_EQ(v->Verify(bad).status().code(), absl::StatusCode::kUnauthenticated) << bad;
  }
  EXPECT_THAT(Message(v->Verify(std::string(kMaxTokenBytes + 1, 'a')).status()),
              HasSubstr("at most"));
}

TEST_F(NodeIdentityTest, RefusesTokensWithoutANode) {
  std::unique_ptr<TokenVerifier> v = Verifier();
  nlohmann::json claims = Claims();
  claims["kubernetes.io"].erase("node");
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).status()),
              HasSubstr("names no node"));
  claims.erase("kubernetes.io");
  EXPECT_THAT(Message(v->Verify(SignJwt(Key("rsa.key"), "RS256", claims)).status()),
              HasSubstr("kubernetes.io"));
}

TEST_F(NodeIdentityTest, KeyFilesAreCheckedAtStart) {
  FakeClock clock;
  auto missing = TokenVerifier::Create(
      {.issuer = kIssuer, .public_key_files = {pki_->Path("nope.pub")}}, clock);
  EXPECT_THAT(Message(missing.status()), HasSubstr("nope.pub: cannot read"));
  auto no_keys = TokenVerifier::Create({.issuer = kIssuer}, clock);
  EXPECT_THAT(Message(no_keys.status()), HasSubstr("public keys"));
  auto no_issuer = TokenVerifier::Create({.public_key_files = {pki_->Path("rsa.pub")}}, clock);
  EXPECT_THAT(Message(no_issuer.status()), HasSubstr("issuer"));
  // A private key file is not a public key file.
  auto wrong_pem = TokenVerifier::Create(
      {.issuer = kIssuer, .public_key_files = {pki_->Path("rsa.key")}}, clock);
  EXPECT_THAT(Message(wrong_pem.status()), HasSubstr("no PEM public key"));
  ASSERT_TRUE(
      TestPki::Write(pki_->Path("bad.jwks"), R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})").ok());
  auto oct = TokenVerifier::Create({.issuer = kIssuer, .jwks_file = pki_->Path("bad.jwks")}, clock);
  EXPECT_THAT(Message(oct.status()), HasSubstr("kty \"oct\""));
  ASSERT_TRUE(TestPki::Write(pki_->Path("list.jwks"), "[1,2]").ok());
  auto list =
      TokenVerifier::Create({.issuer = kIssuer, .jwks_file = pki_->Path("list.jwks")}, clock);
  EXPECT_THAT(Message(list.status()), HasSubstr("not a JWKS document"));
  // Both sources from files, as the extender loads them.
  const nlohmann::json jwks = {{"keys", {PublicJwk(Key("ec.key"), "")}}};
  ASSERT_TRUE(TestPki::Write(pki_->Path("good.jwks"), jwks.dump()).ok());
  auto good = TokenVerifier::Create({.issuer = kIssuer,
                                     .jwks_file = pki_->Path("good.jwks"),
                                     .public_key_files = {pki_->Path("rsa.pub")}},
                                    clock);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ((*good)->key_count(), 2u);
}

TEST_F(NodeIdentityTest, RotatedPemKeysAreLoadedOncePerInterval) {
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.pub"), Key("rsa.pub")).ok());
  auto v = TokenVerifier::Create({.issuer = kIssuer,
                                  .public_key_files = {pki_->Path("rotating.pub")},
                                  .reload_interval = absl::Seconds(10),
                                  .on_reload = [this](bool ok) { reported_.push_back(ok); }},
                                 clock_);
  ASSERT_TRUE(v.ok()) << v.status();
  const std::string by_new_key = SignJwt(Key("other.key"), "RS256", Claims());
  EXPECT_THAT(Message((*v)->Verify(by_new_key).status()), HasSubstr("signature does not verify"));

  // The issuer adds its new key beside the old one (as a rotation does).
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.pub"), Key("rsa.pub") + Key("other.pub")).ok());
  clock_.Advance(absl::Seconds(9));
  EXPECT_FALSE((*v)->Verify(by_new_key).ok());  // not checked again before the interval
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE((*v)->Verify(by_new_key).ok());
  EXPECT_TRUE((*v)->Verify(SignJwt(Key("rsa.key"), "RS256", Claims())).ok());
  EXPECT_EQ((*v)->key_count(), 2u);
  EXPECT_EQ((*v)->reloads(), 1u);

  // The old key retired.
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.pub"), Key("other.pub")).ok());
  clock_.Advance(absl::Seconds(10));
  EXPECT_THAT(Message((*v)->Verify(SignJwt(Key("rsa.key"), "RS256", Claims())).status()),
              HasSubstr("signature does not verify"));

  // A damaged file keeps the keys that were good.
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.pub"), "-----BEGIN PUBLIC KEY-----\nAAAA").ok());
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE((*v)->Verify(SignJwt(Key("other.key"), "RS256", Claims())).ok());
  EXPECT_EQ((*v)->key_count(), 1u);
  EXPECT_EQ((*v)->reload_failures(), 1u);
  EXPECT_EQ((*v)->reloads(), 2u);
  EXPECT_EQ(reported_, (std::vector<bool>{true, true, false}));
}

TEST_F(NodeIdentityTest, RotatedJwksIsLoadedAndAHalfWrittenOneIgnored) {
  const nlohmann::json old_jwks = {{"keys", {PublicJwk(Key("ec.key"), "ec-1")}}};
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.jwks"), old_jwks.dump()).ok());
  auto v = TokenVerifier::Create({.issuer = kIssuer,
                                  .jwks_file = pki_->Path("rotating.jwks"),
                                  .reload_interval = absl::ZeroDuration()},
                                 clock_);
  ASSERT_TRUE(v.ok()) << v.status();
  const nlohmann::json header = {{"alg", "ES256"}, {"kid", "ec-2"}};
  const std::string by_new_key = SignJwt(Key("ec2.key"), "ES256", Claims(), header);
  EXPECT_THAT(Message((*v)->Verify(by_new_key).status()), HasSubstr("no ES256 issuer key"));

  const nlohmann::json new_jwks = {{"keys", {PublicJwk(Key("ec2.key"), "ec-2")}}};
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.jwks"), new_jwks.dump()).ok());
  EXPECT_TRUE((*v)->Verify(by_new_key).ok());

  const std::string dump = new_jwks.dump();
  ASSERT_TRUE(TestPki::Write(pki_->Path("rotating.jwks"), dump.substr(0, dump.size() / 2)).ok());
  EXPECT_TRUE((*v)->Verify(by_new_key).ok());
  EXPECT_EQ((*v)->reload_failures(), 1u);
}

}  // namespace
}  // namespace neighborly::extender
