// Encoding half of the extender codec: exact PascalCase keys, no omitempty,
// written by hand into a reused buffer.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "extender/src/http/extender_codec.h"
#include "extender/src/http/json_writer.h"

namespace neighborly::extender {
namespace {

void AppendFailedMap(std::span<const std::pair<std::string_view, std::string_view>> entries,
                     std::string& out) {
  out.push_back('{');
  bool first = true;
  for (const auto& [node, reason] : entries) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(node, out);
    out.push_back(':');
    AppendJsonString(reason, out);
  }
  out.push_back('}');
}

void AppendNodeList(const std::vector<std::string_view>& items, std::string& out) {
  out += "{\"metadata\":{},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(items[i]);
  }
  out += "]}";
}

void AppendNameArray(const std::vector<std::string_view>& names, std::string& out) {
  out.push_back('[');
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(names[i], out);
  }
  out.push_back(']');
}

constexpr std::string_view kDefaultReason = "rejected by neighborly";

}  // namespace

void EncodeFilterResultView(const FilterResultView& view, std::string& out) {
  out += "{\"Nodes\":";
  if (view.raw_nodes != nullptr) {
    AppendNodeList(*view.raw_nodes, out);
  } else {
    out += "null";
  }
  out += ",\"NodeNames\":";
  if (view.node_names != nullptr) {
    AppendNameArray(*view.node_names, out);
  } else {
    out += "null";
  }
  out += ",\"FailedNodes\":";
  AppendFailedMap(view.failed, out);
  out += ",\"FailedAndUnresolvableNodes\":";
  AppendFailedMap(view.failed_unresolvable, out);
  out += ",\"Error\":";
  AppendJsonString(view.error, out);
  out.push_back('}');
}

void EncodeFilterResult(const ExtenderArgs& args, std::span<const NodeDecision> decisions,
                        std::string& out) {
  const size_t n = std::min(args.node_names.size(), decisions.size());
  JsonAppender json(out);
  if (args.has_nodes) {
    json.Raw("{\"Nodes\":{\"metadata\":{},\"items\":[");
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (!decisions[i].feasible) continue;
      if (!first) json.Char(',');
      first = false;
      json.Raw(args.raw_nodes[i]);
    }
    json.Raw("]},\"NodeNames\":null");
  } else {
    json.Raw("{\"Nodes\":null,\"NodeNames\":[");
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (!decisions[i].feasible) continue;
      if (!first) json.Char(',');
      first = false;
      json.String(args.node_names[i]);
    }
    json.Char(']');
  }
  json.Raw(",\"FailedNodes\":{");
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    if (decisions[i].feasible) continue;
    if (!first) json.Char(',');
    first = false;
    json.String(args.node_names[i]);
    json.Char(':');
    json.String(decisions[i].reason.empty() ? kDefaultReason : decisions[i].reason);
  }
  json.Raw("},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
}

void EncodePrioritizeResult(std::span<const std::string_view> names,
                            std::span<const NodeDecision> decisions, std::string& out) {
  const size_t n = std::min(names.size(), decisions.size());
  JsonAppender json(out);
  json.Char('[');
  constexpr std::string_view kHost = "{\"Host\":\"";
  constexpr std::string_view kScore = "\",\"Score\":";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) json.Char(',');
    const std::string_view name = names[i];
    if (internal::JsonPlainPrefix(name) == name.size()) {
      // The usual name, with the keys around it in one piece: {"Host":"name","Score":
      char* p = json.Room(kHost.size() + name.size() + kScore.size());
      std::memcpy(p, kHost.data(), kHost.size());
      std::memcpy(p + kHost.size(), name.data(), name.size());
      std::memcpy(p + kHost.size() + name.size(), kScore.data(), kScore.size());
      json.Advance(kHost.size() + name.size() + kScore.size());
    } else {
      json.Raw("{\"Host\":");
      json.String(name);
      json.Raw(",\"Score\":");
    }
    json.SmallScore(std::clamp(decisions[i].score, 0, 10));
    json.Char('}');
  }
  json.Char(']');
}

void EncodeError(std::string_view message, std::string& out) {
  out += "{\"Error\":";
  AppendJsonString(message, out);
  out.push_back('}');
}

}  // namespace neighborly::extender
