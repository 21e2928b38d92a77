// Node identity for telemetry streams: verifies the agent pod's projected
// ServiceAccount token (a JWT the cluster's service-account issuer signs) and
// returns the node the pod is bound to, so that an agent may report only for
// its own node (docs/security.md).
//
// Accepted: RS256 (RSA >= 2048 bits) and ES256 (P-256) signatures, checked
// against the issuer's public keys from a JWKS document and/or PEM files
// (SubjectPublicKeyInfo or certificates). Checked claims: iss, aud, exp and nbf
// (with a small leeway), optionally sub against a list of allowed service
// accounts, and kubernetes.io.node.name (Kubernetes >= 1.30 puts the node of
// the pod into bound tokens).
//
// Keys read from files are reloaded when the files change (the issuer's
// signing keys rotate): at most once per reload_interval, the first Verify
// after it stats the files and, only if they changed, reads and parses them;
// verifications meanwhile use the current keys and never wait for that I/O.
// A reload that fails keeps the previous keys, logs a warning and is counted
// (reload_failures(), on_reload).
//
//   absl::StatusOr<std::unique_ptr<TokenVerifier>> v = TokenVerifier::Create(
//       {.issuer = "https://kubernetes.default.svc", .jwks_file = "/keys/jwks.json"}, clock);
//   absl::StatusOr<NodeIdentity> id = (*v)->Verify(bearer);   // UNAUTHENTICATED + reason
//   if (id.ok() && id->node_name != report.node_name()) -> PERMISSION_DENIED
#ifndef NEIGHBORLY_EXTENDER_SRC_INGEST_NODE_IDENTITY_H_
#define NEIGHBORLY_EXTENDER_SRC_INGEST_NODE_IDENTITY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/reloading_files.h"

namespace neighborly::extender {

struct NodeIdentityOptions {
  std::string issuer;                         // required: the token's "iss" must equal it
  std::string audience = "neighborly";        // "aud" must be or contain it
  std::string jwks_file;                      // JWKS ({"keys":[...]}), e.g. from /openid/v1/jwks
  std::vector<std::string> public_key_files;  // PEM public keys or certificates
  // When not empty, "sub" must be one of these ("system:serviceaccount:NS:NAME").
  std::vector<std::string> allowed_subjects;
  absl::Duration leeway = absl::Seconds(30);  // clock skew allowed on exp and nbf
  // A token whose "exp" is further than this from now is refused: a stolen
  // long-lived token (one minted for year 2999) must not be usable forever.
  // Projected ServiceAccount tokens last one hour (the chart) to 48 hours.
  absl::Duration max_lifetime = absl::Hours(48);
  // How often the key files are checked for changes (Create only); zero: at every Verify.
  absl::Duration reload_interval = absl::Seconds(10);
  // Told of every reload of changed key files: done (true) or refused (false);
  // the extender counts them in /metrics (ExtenderMetrics::RecordIdentityKeyReload).
  std::function<void(bool ok)> on_reload;
};

struct NodeIdentity {
  std::string node_name;
  std::string node_uid;
  std::string subject;   // "system:serviceaccount:NS:NAME"
  std::string pod_name;  // "namespace/name" when the token names the pod
  absl::Time expires;
};

inline constexpr size_t kMaxTokenBytes = 16 * 1024;

// Decodes unpadded base64url (RFC 4648 section 5) strictly: any other byte, a
// '=' or an impossible length is an error.
std::optional<std::string> DecodeBase64Url(std::string_view text);

class TokenVerifier {
 public:
  struct Key;     // a parsed public key (opaque)
  struct KeySet;  // all keys of one load

  // Loads the keys (at least one) from the files, and reloads them when the
  // files change; errors name the file and the problem.
  static absl::StatusOr<std::unique_ptr<TokenVerifier>> Create(NodeIdentityOptions options,
                                                               const Clock& clock);
  // From key material given as text (tests; the files' contents); never reloaded.
  static absl::StatusOr<std::unique_ptr<TokenVerifier>> FromKeyText(
      NodeIdentityOptions options, const Clock& clock, std::string_view jwks_json,
      const std::vector<std::string>& pem_texts);
  ~TokenVerifier();

  // `token` is the compact JWT (without "Bearer "). UNAUTHENTICATED naming the
  // problem when it is not a valid token for this audience and issuer.
  // Thread-safe.
  absl::StatusOr<NodeIdentity> Verify(std::string_view token) const;

  // The keys in use now (after checking the files when due).
  size_t key_count() const;
  // Key-file reloads since Create: done, and refused (previous keys kept).
  uint64_t reloads() const;
  uint64_t reload_failures() const;

 private:
  TokenVerifier(NodeIdentityOptions options, const Clock& clock);
  std::shared_ptr<const KeySet> Keys() const;

  NodeIdentityOptions options_;
  const Clock& clock_;
  std::shared_ptr<const KeySet> fixed_keys_;           // FromKeyText
  std::unique_ptr<ReloadingFiles<KeySet>> key_files_;  // Create
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_INGEST_NODE_IDENTITY_H_
