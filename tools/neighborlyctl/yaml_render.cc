// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/yaml_render.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace neighborly::ctl {
namespace {

using nlohmann::json;

// A plain scalar only when it is unmistakably a string to a YAML 1.1 or 1.2
// reader: letters, digits and a few safe punctuation marks, starting with a
// letter or '/', and not one of the words YAML gives another type.
bool PlainSafe(const std::string& s) {
  static const std::regex kSafe(R"([A-Za-z/][A-Za-z0-9_./@-]*)");
  static const std::regex kSpecial(
      R"(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL)");
  return std::regex_match(s, kSafe) && !std::regex_match(s, kSpecial);
}

std::string Scalar(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    // A JSON string literal is a valid YAML double-quoted scalar.
    return PlainSafe(s) ? s : json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (v.is_null()) return "null";
  return v.dump();  // numbers, booleans
}

bool Inline(const json& v) { return !v.is_structured() || v.empty(); }

void Emit(const json& v, int indent, std::string& out);

void EmitInline(const json& v, std::string& out) {
  if (v.is_array()) {
    out += "[]";
  } else if (v.is_object()) {
    out += "{}";
  } else {
    out += Scalar(v);
  }
}

void Emit(const json& v, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      absl::StrAppend(&out, pad, Scalar(json(key)), ":");
      if (Inline(value)) {
        out += ' ';
        EmitInline(value, out);
        out += '\n';
      } else {
        out += '\n';
        // Sequences under a key are indented like kubectl's (two spaces).
        Emit(value, indent + 2, out);
      }
    }
  } else if (v.is_array()) {
    for (const json& item : v) {
      absl::StrAppend(&out, pad, "-");
      if (Inline(item)) {
        out += ' ';
        EmitInline(item, out);
        out += '\n';
      } else {
        // The item's first line goes beside the dash, the rest under it.
        std::string nested;
        Emit(item, indent + 2, nested);
        out += ' ';
        out.append(nested, static_cast<size_t>(indent) + 2, std::string::npos);
      }
    }
  } else {
    absl::StrAppend(&out, pad);
    EmitInline(v, out);
    out += '\n';
  }
}

}  // namespace

absl::StatusOr<std::string> RenderYaml(std::string_view text) {
  const json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return absl::InvalidArgumentError("the answer is not JSON");
  std::string out;
  if (Inline(v)) {
    EmitInline(v, out);
    out += '\n';
  } else {
    Emit(v, 0, out);
  }
  return out;
}

}  // namespace neighborly::ctl
