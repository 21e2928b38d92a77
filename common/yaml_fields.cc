#include "common/yaml_fields.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quantity.h"
#include "common/strings.h"

namespace neighborly::yaml {
namespace {

// What a value looks like in a message: the scalar in quotes, else its kind.
std::string Shown(const YAML::Node& node) {
  if (node.IsScalar()) return absl::StrCat("\"", node.Scalar(), "\"");
  return std::string(KindName(node));
}

std::string Child(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(Av(path), ".", Av(key));
}

}  // namespace

absl::StatusOr<YAML::Node> Load(const Source& source, std::string_view text) {
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    if (docs.empty()) return YAML::Node(YAML::NodeType::Null);
    if (docs.size() > 1) {
      return ErrorAt(source, docs[1].Mark(),
                     absl::StrCat("holds ", docs.size(), " YAML documents; expected one"));
    }
    return docs[0];
  } catch (const YAML::Exception& e) {
    // DeepRecursion (nesting beyond yaml-cpp's 2,000 levels) is one of these.
    return ErrorAt(source, e.mark, absl::StrCat("not valid YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source.name, ": not valid YAML: ", e.what()));
  }
}

absl::Status ErrorAt(const Source& source, const YAML::Mark& mark, std::string_view message) {
  if (mark.line < 0) {
    return absl::InvalidArgumentError(absl::StrCat(source.name, ": ", Av(message)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source.name, ":", mark.line + 1, ": ", Av(message)));
}

std::string_view KindName(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
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

// ---- Value ----

Value::Value(const Source& source, YAML::Node node, std::string path, YAML::Mark fallback_mark)
    : source_(&source),
      node_(std::move(node)),
      path_(std::move(path)),
      fallback_mark_(fallback_mark) {}

YAML::Mark Value::mark() const {
  // A null value's own mark is where the parser noticed it was missing (often
  // the next line); its key's line is the useful one.
  if (node_.IsDefined() && !node_.IsNull()) {
    const YAML::Mark own = node_.Mark();
    if (own.line >= 0) return own;
  }
  return fallback_mark_;
}

absl::Status Value::Error(std::string_view message) const {
  return ErrorAt(*source_, mark(),
                 absl::StrCat(path_.empty() ? "top level" : path_, ": ", Av(message)));
}

absl::StatusOr<std::string> Value::Scalar(std::string_view want) const {
  if (!node_.IsScalar()) {
    return Error(absl::StrCat("expected ", Av(want), ", got ", Av(KindName(node_))));
  }
  return node_.Scalar();
}

absl::StatusOr<std::string> Value::String() const { return Scalar("a string"); }

absl::StatusOr<bool> Value::Bool() const {
  absl::StatusOr<std::string> s = Scalar("true or false");
  if (!s.ok()) return s.status();
  if (EqualsIgnoreCase(*s, "true")) return true;
  if (EqualsIgnoreCase(*s, "false")) return false;
  return Error(absl::StrCat("expected true or false, got \"", *s, "\""));
}

absl::StatusOr<int64_t> Value::Int(int64_t min, int64_t max) const {
  absl::StatusOr<std::string> s = Scalar("an integer");
  if (!s.ok()) return s.status();
  const std::optional<int64_t> v = ParseInt<int64_t>(Trim(*s));
  if (!v) return Error(absl::StrCat("expected an integer, got \"", *s, "\""));
  if (*v < min || *v > max) return Error(absl::StrCat(*v, " is outside ", min, "..", max));
  return *v;
}

absl::StatusOr<uint64_t> Value::Uint(uint64_t max) const {
  absl::StatusOr<std::string> s = Scalar("a non-negative integer");
  if (!s.ok()) return s.status();
  const std::optional<uint64_t> v = ParseInt<uint64_t>(Trim(*s));
  if (!v) return Error(absl::StrCat("expected a non-negative integer, got \"", *s, "\""));
  if (*v > max) return Error(absl::StrCat(*v, " is above ", max));
  return *v;
}

absl::StatusOr<double> Value::Double(double min, double max) const {
  absl::StatusOr<std::string> s = Scalar("a number");
  if (!s.ok()) return s.status();
  const std::optional<double> v = ParseDouble(Trim(*s));
  if (!v) return Error(absl::StrCat("expected a number, got \"", *s, "\""));
  if (*v >= min && *v <= max) return *v;
  if (std::isfinite(min) && std::isfinite(max)) {
    return Error(absl::StrCat(*v, " is outside ", min, "..", max));
  }
  return Error(*v < min ? absl::StrCat(*v, " is below ", min)
                        : absl::StrCat(*v, " is above ", max));
}

absl::StatusOr<int64_t> Value::Bytes(int64_t min) const {
  absl::StatusOr<std::string> s = Scalar("a byte quantity");
  if (!s.ok()) return s.status();
  absl::StatusOr<int64_t> v = ParseByteQuantity(Trim(*s));
  if (!v.ok()) {
    return Error(absl::StrCat("expected a byte quantity like 64Mi, got \"", *s, "\" (",
                              v.status().message(), ")"));
  }
  if (*v < min) return Error(absl::StrCat("must be at least ", min, ", got \"", *s, "\""));
  return *v;
}

absl::StatusOr<absl::Duration> Value::Duration(absl::Duration min) const {
  absl::StatusOr<std::string> s = Scalar("a duration");
  if (!s.ok()) return s.status();
  absl::Duration d;
  if (!absl::ParseDuration(std::string(Trim(*s)), &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    return Error(absl::StrCat("expected a duration like \"30s\" or \"500ms\", got \"", *s, "\""));
  }
  if (d < min) {
    return Error(
        absl::StrCat("must be at least ", absl::FormatDuration(min), ", got \"", *s, "\""));
  }
  return d;
}

absl::StatusOr<CpuSet> Value::Cpus() const {
  absl::StatusOr<std::string> s = Scalar("a cpu list");
  if (!s.ok()) return s.status();
  absl::StatusOr<CpuSet> cpus = ParseCpuList(*s);
  if (!cpus.ok()) {
    return Error(absl::StrCat("expected a cpu list like \"0-3,8\", got \"", *s, "\" (",
                              cpus.status().message(), ")"));
  }
  return *std::move(cpus);
}

absl::StatusOr<std::vector<Value>> Value::List() const {
  std::vector<Value> items;
  if (absent()) return items;
  if (!node_.IsSequence()) return Error(absl::StrCat("expected a list, got ", Shown(node_)));
  items.reserve(node_.size());
  for (size_t i = 0; i < node_.size(); ++i) {
    items.emplace_back(*source_, node_[i], absl::StrCat(path_, "[", i, "]"), mark());
  }
  return items;
}

absl::StatusOr<std::vector<std::string>> Value::Strings() const {
  std::vector<std::string> out;
  if (absent()) return out;
  if (!node_.IsSequence()) {
    return Error(absl::StrCat("expected a list of strings, got ", Shown(node_)));
  }
  absl::StatusOr<std::vector<Value>> items = List();
  if (!items.ok()) return items.status();
  for (const Value& item : *items) {
    absl::StatusOr<std::string> s = item.String();
    if (!s.ok()) return s.status();
    out.push_back(*std::move(s));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> Value::StringMap() const {
  std::map<std::string, std::string> out;
  absl::StatusOr<Map> map = Map::OfAnyKeys(*this);
  if (!map.ok()) return map.status();
  for (const Map::Entry& entry : map->entries()) {
    if (entry.value.absent()) {
      out.emplace(entry.key, "");
      continue;
    }
    absl::StatusOr<std::string> s = entry.value.String();
    if (!s.ok()) return s.status();
    out.emplace(entry.key, *std::move(s));
  }
  return out;
}

// ---- Map ----

absl::StatusOr<Map> Map::Of(const Value& value, const std::vector<std::string>& allowed) {
  MergeState state;
  return Resolve(value, &allowed, state);
}

absl::StatusOr<Map> Map::OfAnyKeys(const Value& value) {
  MergeState state;
  return Resolve(value, nullptr, state);
}

std::string Map::Where() const { return path().empty() ? "the top level" : path(); }

std::string Map::PathOf(std::string_view key) const { return Child(path(), key); }

absl::StatusOr<Map> Map::Resolve(const Value& value, const std::vector<std::string>* allowed,
                                 MergeState& state) {
  Map map(value);
  if (value.absent()) return map;
  const YAML::Node& node = value.node();
  if (!node.IsMap()) return value.Error(absl::StrCat("expected a map, got ", Shown(node)));
  std::vector<std::pair<YAML::Node, YAML::Mark>> merges;
  for (const auto& kv : node) {
    const YAML::Node& key_node = kv.first;
    if (!key_node.IsScalar()) {
      return ErrorAt(value.source(), key_node.Mark(),
                     absl::StrCat("a key in ", map.Where(), " must be a string, got ",
                                  Av(KindName(key_node))));
    }
    const std::string& key = key_node.Scalar();
    // A quoted "<<" (tag "!") is an ordinary key; a plain one merges.
    if (key == "<<" && key_node.Tag() != "!") {
      merges.emplace_back(kv.second, key_node.Mark());
      continue;
    }
    if (allowed != nullptr && std::find(allowed->begin(), allowed->end(), key) == allowed->end()) {
      return ErrorAt(value.source(), key_node.Mark(),
                     absl::StrCat("unknown key \"", map.PathOf(key), "\" (known",
                                  value.path().empty() ? "" : absl::StrCat(" in ", value.path()),
                                  ": ", absl::StrJoin(*allowed, ", "), ")"));
    }
    if (std::any_of(map.entries_.begin(), map.entries_.end(),
                    [&](const Entry& e) { return e.key == key; })) {
      return ErrorAt(value.source(), key_node.Mark(),
                     absl::StrCat("duplicate key \"", map.PathOf(key), "\""));
    }
    map.entries_.push_back(Entry{
        key, Value(value.source(), kv.second, map.PathOf(key), key_node.Mark()), key_node.Mark()});
  }
  if (merges.empty()) return map;
  state.chain.push_back(node);
  for (const auto& [merged, at] : merges) {
    if (merged.IsSequence()) {
      for (const YAML::Node& item : merged) {
        if (absl::Status s = map.Merge(item, at, allowed, state); !s.ok()) return s;
      }
    } else if (absl::Status s = map.Merge(merged, at, allowed, state); !s.ok()) {
      return s;
    }
  }
  state.chain.pop_back();
  return map;
}

absl::Status Map::Merge(const YAML::Node& merged, const YAML::Mark& at,
                        const std::vector<std::string>* allowed, MergeState& state) {
  const Source& source = self_.source();
  if (!merged.IsMap()) {
    return ErrorAt(
        source, at,
        absl::StrCat("merge key \"<<\" in ", Where(), " must refer to a map, got ", Shown(merged)));
  }
  if (std::any_of(state.chain.begin(), state.chain.end(),
                  [&](const YAML::Node& outer) { return outer.is(merged); })) {
    return ErrorAt(source, at,
                   absl::StrCat("merge key \"<<\" in ", Where(),
                                " refers to a map that contains it (a map cannot merge itself)"));
  }
  if (state.chain.size() == 1) state.origin = at;
  if (static_cast<int>(state.chain.size()) >= kMaxMergeDepth) {
    return ErrorAt(
        source, state.origin,
        absl::StrCat("merge keys in ", Where(), " are nested more than ", kMaxMergeDepth, " deep"));
  }
  if (++state.merged_maps > kMaxMergedMaps) {
    return ErrorAt(source, state.origin,
                   absl::StrCat("merge keys in ", Where(), " expand to more than ", kMaxMergedMaps,
                                " maps (aliases of aliases?)"));
  }
  // The merged map may itself merge others; resolve it the same way, under
  // this map's path (its keys become this map's keys).
  absl::StatusOr<Map> inner = Resolve(Value(source, merged, path(), at), allowed, state);
  if (!inner.ok()) return inner.status();
  for (Entry& entry : inner->entries_) {
    const bool present = std::any_of(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.key == entry.key; });
    if (!present) entries_.push_back(std::move(entry));
  }
  return absl::OkStatus();
}

const Map::Entry* Map::Find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return entry.value.absent() ? nullptr : &entry;
  }
  return nullptr;
}

Value Map::Get(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.key == key) return entry.value;
  }
  return Value(self_.source(), YAML::Node(), PathOf(key), self_.mark());
}

absl::Status Map::ErrorFor(std::string_view key, std::string_view message) const {
  return Get(key).Error(message);
}

absl::Status Map::Missing(std::string_view key, std::string_view detail) const {
  // At the key when it is there with an empty value, else at this map.
  return ErrorAt(self_.source(), Get(key).mark(),
                 absl::StrCat("missing required key \"", PathOf(key), "\"",
                              detail.empty() ? "" : " ", Av(detail)));
}

namespace {

// Runs `read` on the value of `key` unless it is absent.
template <typename T, typename Read>
absl::StatusOr<std::optional<T>> Optional(const Map& map, std::string_view key, Read read) {
  const Map::Entry* entry = map.Find(key);
  if (entry == nullptr) return std::nullopt;
  absl::StatusOr<T> value = read(entry->value);
  if (!value.ok()) return value.status();
  return std::optional<T>(*std::move(value));
}

}  // namespace

absl::StatusOr<std::optional<std::string>> Map::String(std::string_view key) const {
  return Optional<std::string>(*this, key, [](const Value& v) { return v.String(); });
}

absl::StatusOr<std::optional<bool>> Map::Bool(std::string_view key) const {
  return Optional<bool>(*this, key, [](const Value& v) { return v.Bool(); });
}

absl::StatusOr<std::optional<int64_t>> Map::Int(std::string_view key) const {
  return Optional<int64_t>(*this, key, [](const Value& v) { return v.Int(); });
}

absl::StatusOr<std::optional<uint64_t>> Map::Uint(std::string_view key) const {
  return Optional<uint64_t>(*this, key, [](const Value& v) { return v.Uint(); });
}

absl::StatusOr<std::optional<double>> Map::Double(std::string_view key, double min,
                                                  double max) const {
  return Optional<double>(*this, key, [&](const Value& v) { return v.Double(min, max); });
}

absl::StatusOr<std::optional<uint64_t>> Map::Bytes(std::string_view key) const {
  return Optional<uint64_t>(*this, key, [](const Value& v) -> absl::StatusOr<uint64_t> {
    absl::StatusOr<int64_t> bytes = v.Bytes(0);
    if (!bytes.ok()) return bytes.status();
    return static_cast<uint64_t>(*bytes);
  });
}

absl::StatusOr<std::optional<CpuSet>> Map::Cpus(std::string_view key) const {
  return Optional<CpuSet>(*this, key, [](const Value& v) { return v.Cpus(); });
}

absl::StatusOr<std::string> Map::RequiredString(std::string_view key) const {
  absl::StatusOr<std::optional<std::string>> value = String(key);
  if (!value.ok()) return value.status();
  if (!value->has_value() || (*value)->empty()) return Missing(key);
  return **value;
}

absl::StatusOr<uint64_t> Map::RequiredUint(std::string_view key) const {
  absl::StatusOr<std::optional<uint64_t>> value = Uint(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return Missing(key);
  return **value;
}

absl::StatusOr<uint64_t> Map::RequiredBytes(std::string_view key) const {
  absl::StatusOr<std::optional<uint64_t>> value = Bytes(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return Missing(key);
  return **value;
}

}  // namespace neighborly::yaml
