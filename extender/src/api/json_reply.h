// JSON helpers shared by the operator API's handlers (operator_api.cc,
// isolation_api.cc): nulls for what is unknown, and the reply itself.
#ifndef NEIGHBORLY_EXTENDER_SRC_API_JSON_REPLY_H_
#define NEIGHBORLY_EXTENDER_SRC_API_JSON_REPLY_H_

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace neighborly::extender::api_json {

// The value, or null when unknown.
template <typename T>
nlohmann::json Optional(const std::optional<T>& v) {
  return v.has_value() ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value, or null when not finite (JSON has no NaN or infinity).
inline nlohmann::json Finite(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Compact; invalid UTF-8 in names replaced rather than throwing.
inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline void Reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

inline void ReplyError(httplib::Response& res, int status, std::string_view message) {
  Reply(res, status, nlohmann::json{{"Error", std::string(message)}});
}

}  // namespace neighborly::extender::api_json

#endif  // NEIGHBORLY_EXTENDER_SRC_API_JSON_REPLY_H_
