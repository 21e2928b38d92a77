#include "common/client_identity.h"

#include <openssl/asn1.h>
#include <openssl/objects.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace neighborly {
namespace {

constexpr absl::Duration kLogInterval = absl::Seconds(10);
constexpr size_t kMaxNameBytes = 256;

std::string FromAsn1(const ASN1_STRING* s) {
  if (s == nullptr) return {};
  const unsigned char* data = ASN1_STRING_get0_data(s);
  const int length = ASN1_STRING_length(s);
  if (data == nullptr || length <= 0) return {};
  return std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(length));
}

std::string Clip(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, kMaxNameBytes)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');  // names come from the peer
  }
  if (s.size() > kMaxNameBytes) out += "...";
  return out;
}

}  // namespace

CertificateNames NamesOf(X509* cert) {
  CertificateNames names;
  if (cert == nullptr) return names;
  if (X509_NAME* subject = X509_get_subject_name(cert); subject != nullptr) {
    const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index >= 0) {
      names.common_name = FromAsn1(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
    }
  }
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type == GEN_DNS) names.dns_names.push_back(FromAsn1(name->d.dNSName));
    if (name->type == GEN_URI) {
      names.uris.push_back(FromAsn1(name->d.uniformResourceIdentifier));
    }
  }
  GENERAL_NAMES_free(sans);
  return names;
}

std::string DescribeNames(const CertificateNames& names) {
  std::vector<std::string> parts;
  if (!names.common_name.empty()) parts.push_back(absl::StrCat("CN=", Clip(names.common_name)));
  for (const std::string& dns : names.dns_names) parts.push_back(absl::StrCat("DNS:", Clip(dns)));
  for (const std::string& uri : names.uris) parts.push_back(absl::StrCat("URI:", Clip(uri)));
  if (parts.empty()) return "no subject CN, DNS or URI name";
  if (parts.size() > 8) {
    const size_t more = parts.size() - 8;
    parts.resize(8);
    parts.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::StrJoin(parts, ", ");
}

bool ClientRole::Admits(const CertificateNames& names) const {
  if (allowed_names.empty()) return true;
  auto allowed = [this](const std::string& name) {
    return !name.empty() &&
           std::find(allowed_names.begin(), allowed_names.end(), name) != allowed_names.end();
  };
  return allowed(names.common_name) || std::any_of(names.uris.begin(), names.uris.end(), allowed) ||
         std::any_of(names.dns_names.begin(), names.dns_names.end(), allowed);
}

void ClientRole::LogRefusal(const CertificateNames& names, std::string_view peer) const {
  refusals->refused.fetch_add(1, std::memory_order_relaxed);
  const int64_t now_ns = absl::ToUnixNanos(absl::Now());
  int64_t last = refusals->last_log_ns.load(std::memory_order_relaxed);
  if ((last != INT64_MIN && now_ns - last < absl::ToInt64Nanoseconds(kLogInterval)) ||
      !refusals->last_log_ns.compare_exchange_strong(last, now_ns)) {
    refusals->unlogged.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t held = refusals->unlogged.exchange(0);
  spdlog::warn(
      "{}: refused the client certificate of {} ({}): {} accepts only the {}'s identity, a "
      "certificate naming one of [{}] ({}){}",
      listener, Clip(peer), DescribeNames(names), listener, role,
      absl::StrJoin(allowed_names, ", "), config_key,
      held == 0 ? std::string()
                : absl::StrCat(" (", held, " more refusals not logged since the last line)"));
}

}  // namespace neighborly
