#include "node-agent/src/simulate/internal/yaml_fields.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace neighborly::agent::internal {
namespace {

bool IsAbsent(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

}  // namespace

absl::Status ErrorAt(const YamlSource& source, const YAML::Mark& mark, std::string_view message) {
  if (mark.line < 0) {
    return absl::InvalidArgumentError(absl::StrCat(source.name, ": ", Av(message)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source.name, ":", mark.line + 1, ": ", Av(message)));
}

std::string_view KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    default:
      return "nothing";
  }
}

absl::StatusOr<Fields> Fields::Of(const YamlSource& source, const YAML::Node& node,
                                  std::string_view what, const std::vector<std::string>& allowed) {
  MergeState state;
  return Resolve(source, node, what, allowed, state);
}

absl::StatusOr<Fields> Fields::Resolve(const YamlSource& source, const YAML::Node& node,
                                       std::string_view what,
                                       const std::vector<std::string>& allowed, MergeState& state) {
  if (!node.IsMap()) {
    return ErrorAt(source, node.Mark(),
                   absl::StrCat(Av(what), " must be a map, got ", Av(KindName(node))));
  }
  Fields fields(source, node.Mark(), std::string(what));
  std::vector<std::pair<YAML::Node, YAML::Mark>> merges;
  for (const auto& kv : node) {
    const YAML::Node& key_node = kv.first;
    if (!key_node.IsScalar()) {
      return ErrorAt(
          source, key_node.Mark(),
          absl::StrCat("a key in ", Av(what), " must be a string, got ", Av(KindName(key_node))));
    }
    const std::string& key = key_node.Scalar();
    if (key == "<<" && key_node.Tag() != "!") {
      merges.emplace_back(kv.second, key_node.Mark());
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return ErrorAt(source, key_node.Mark(),
                     absl::StrCat("unknown key \"", key, "\" in ", Av(what)));
    }
    if (std::any_of(fields.entries_.begin(), fields.entries_.end(),
                    [&](const Entry& e) { return e.key == key; })) {
      return ErrorAt(source, key_node.Mark(),
                     absl::StrCat("duplicate key \"", key, "\" in ", Av(what)));
    }
    fields.entries_.push_back(Entry{key, kv.second, key_node.Mark()});
  }
  if (merges.empty()) return fields;
  state.chain.push_back(node);
  for (const auto& [merged, at] : merges) {
    if (merged.IsSequence()) {
      for (const YAML::Node& item : merged) {
        if (absl::Status s = fields.AddMergedChecked(item, at, allowed, state); !s.ok()) return s;
      }
    } else if (absl::Status s = fields.AddMergedChecked(merged, at, allowed, state); !s.ok()) {
      return s;
    }
  }
  state.chain.pop_back();
  return fields;
}

absl::Status Fields::AddMergedChecked(const YAML::Node& merged, const YAML::Mark& at,
                                      const std::vector<std::string>& allowed, MergeState& state) {
  if (!merged.IsMap()) {
    return ErrorAt(*source_, at,
                   absl::StrCat("merge key \"<<\" in ", what_, " must refer to a map, got ",
                                Av(KindName(merged))));
  }
  if (std::any_of(state.chain.begin(), state.chain.end(),
                  [&](const YAML::Node& outer) { return outer.is(merged); })) {
    return ErrorAt(*source_, at,
                   absl::StrCat("merge key \"<<\" in ", what_,
                                " refers to a map that contains it (a map cannot merge itself)"));
  }
  if (state.chain.size() == 1) state.origin = at;
  if (static_cast<int>(state.chain.size()) >= kMaxMergeDepth) {
    return ErrorAt(
        *source_, state.origin,
        absl::StrCat("merge keys in ", what_, " are nested more than ", kMaxMergeDepth, " deep"));
  }
  if (++state.merged_maps > kMaxMergedMaps) {
    return ErrorAt(*source_, state.origin,
                   absl::StrCat("merge keys in ", what_, " expand to more than ", kMaxMergedMaps,
                                " maps (aliases of aliases?)"));
  }
  // The merged map may itself merge others; resolve it the same way.
  absl::StatusOr<Fields> inner = Resolve(*source_, merged, what_, allowed, state);
  if (!inner.ok()) return inner.status();
  for (Entry& entry : inner->entries_) {
    const bool present = std::any_of(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.key == entry.key; });
    if (!present) entries_.push_back(std::move(entry));
  }
  return absl::OkStatus();
}

const Fields::Entry* Fields::Find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return IsAbsent(entry.value) ? nullptr : &entry;
  }
  return nullptr;
}

absl::Status Fields::ErrorFor(std::string_view key, std::string_view message) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) {
      const YAML::Mark mark = entry.value.Mark().line >= 0 ? entry.value.Mark() : entry.key_mark;
      return ErrorAt(*source_, mark, message);
    }
  }
  return ErrorAt(*source_, mark_, message);
}

absl::StatusOr<const Fields::Entry*> Fields::Scalar(std::string_view key) const {
  const Entry* entry = Find(key);
  if (entry == nullptr) return nullptr;
  if (!entry->value.IsScalar()) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_, " must be a scalar, got ",
                                      Av(KindName(entry->value))));
  }
  return entry;
}

absl::StatusOr<std::optional<std::string>> Fields::String(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  return (*entry)->value.Scalar();
}

absl::StatusOr<std::string> Fields::RequiredString(std::string_view key) const {
  absl::StatusOr<std::optional<std::string>> value = String(key);
  if (!value.ok()) return value.status();
  if (!value->has_value() || (*value)->empty()) {
    return ErrorFor(key, absl::StrCat("missing required key \"", Av(key), "\" in ", what_));
  }
  return **value;
}

absl::StatusOr<std::optional<uint64_t>> Fields::Uint(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  const std::string& text = (*entry)->value.Scalar();
  const std::optional<uint64_t> value = ParseInt<uint64_t>(text);
  if (!value) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_,
                                      " must be a non-negative integer, got \"", text, "\""));
  }
  return *value;
}

absl::StatusOr<uint64_t> Fields::RequiredUint(std::string_view key) const {
  absl::StatusOr<std::optional<uint64_t>> value = Uint(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) {
    return ErrorFor(key, absl::StrCat("missing required key \"", Av(key), "\" in ", what_));
  }
  return **value;
}

absl::StatusOr<std::optional<int64_t>> Fields::Int(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  const std::string& text = (*entry)->value.Scalar();
  const std::optional<int64_t> value = ParseInt<int64_t>(text);
  if (!value) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_,
                                      " must be an integer, got \"", text, "\""));
  }
  return *value;
}

absl::StatusOr<std::optional<uint64_t>> Fields::Bytes(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  const std::string& text = (*entry)->value.Scalar();
  if (const std::optional<uint64_t> plain = ParseInt<uint64_t>(text)) return *plain;
  absl::StatusOr<int64_t> quantity = ParseByteQuantity(text);
  if (!quantity.ok()) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_,
                                      ": bad quantity: ", quantity.status().message()));
  }
  return static_cast<uint64_t>(*quantity);
}

absl::StatusOr<uint64_t> Fields::RequiredBytes(std::string_view key) const {
  absl::StatusOr<std::optional<uint64_t>> value = Bytes(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) {
    return ErrorFor(key, absl::StrCat("missing required key \"", Av(key), "\" in ", what_));
  }
  return **value;
}

absl::StatusOr<std::optional<double>> Fields::Double(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  const std::string& text = (*entry)->value.Scalar();
  const std::optional<double> value = ParseDouble(Trim(text));
  if (!value || *value < 0) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_,
                                      " must be a non-negative number, got \"", text, "\""));
  }
  return *value;
}

absl::StatusOr<std::optional<bool>> Fields::Bool(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  const std::string& text = (*entry)->value.Scalar();
  if (text == "true") return true;
  if (text == "false") return false;
  return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_,
                                    " must be true or false, got \"", text, "\""));
}

absl::StatusOr<std::optional<CpuSet>> Fields::Cpus(std::string_view key) const {
  absl::StatusOr<const Entry*> entry = Scalar(key);
  if (!entry.ok()) return entry.status();
  if (*entry == nullptr) return std::nullopt;
  absl::StatusOr<CpuSet> cpus = ParseCpuList((*entry)->value.Scalar());
  if (!cpus.ok()) {
    return ErrorFor(
        key, absl::StrCat("key \"", Av(key), "\" in ", what_, ": ", cpus.status().message()));
  }
  return *std::move(cpus);
}

absl::StatusOr<std::map<std::string, std::string>> Fields::StringMap(std::string_view key) const {
  std::map<std::string, std::string> out;
  const Entry* entry = Find(key);
  if (entry == nullptr) return out;
  if (!entry->value.IsMap()) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_, " must be a map, got ",
                                      Av(KindName(entry->value))));
  }
  for (const auto& kv : entry->value) {
    if (!kv.first.IsScalar() || !(kv.second.IsScalar() || kv.second.IsNull())) {
      return ErrorAt(
          *source_, kv.first.Mark(),
          absl::StrCat("key \"", Av(key), "\" in ", what_, " must map strings to strings"));
    }
    const std::string& name = kv.first.Scalar();
    if (!out.emplace(name, kv.second.IsNull() ? "" : kv.second.Scalar()).second) {
      return ErrorAt(*source_, kv.first.Mark(),
                     absl::StrCat("duplicate key \"", name, "\" in ", Av(key)));
    }
  }
  return out;
}

absl::StatusOr<std::optional<YAML::Node>> Fields::List(std::string_view key) const {
  const Entry* entry = Find(key);
  if (entry == nullptr) return std::nullopt;
  if (!entry->value.IsSequence()) {
    return ErrorFor(key, absl::StrCat("key \"", Av(key), "\" in ", what_, " must be a list, got ",
                                      Av(KindName(entry->value))));
  }
  return entry->value;
}

}  // namespace neighborly::agent::internal
