// The one typed layer over yaml-cpp that every YAML reader of the project uses
// (the extender's config, the agent's scenario files, the kubelet's config),
// so that they read YAML the same way:
//
//  - every error names the file, the line and the key path from the document's
//    root:  extender.yaml:12: model.l3Weight: expected a number, got "abc"
//  - merge keys ("<<: *anchor", "<<: [*a, *b]") are resolved, with YAML 1.1's
//    precedence (a map's own keys win over merged ones, earlier merged maps
//    over later ones) and bounds against alias bombs and self-merges;
//  - duplicate keys are refused (yaml-cpp 0.7 keeps both silently);
//  - unknown keys are refused when the reader lists its keys (files we define)
//    and tolerated when it does not (files others define: the kubelet's);
//  - a key with no value (`key:` or `key: ~`) reads as absent;
//  - numbers, byte quantities ("64Mi"), durations ("30s") and cpu lists
//    ("0-3,8") are parsed by the same functions everywhere.
//
//   yaml::Source source{"extender.yaml"};
//   absl::StatusOr<YAML::Node> doc = yaml::Load(source, text);
//   absl::StatusOr<yaml::Map> root = yaml::Map::Of(yaml::Value(source, *doc), {"http", "model"});
//   absl::StatusOr<yaml::Map> model = yaml::Map::Of(root->Get("model"), {"l3Weight"});
//   absl::StatusOr<double> weight = model->Get("l3Weight").Double(0, 1000);
#ifndef NEIGHBORLY_COMMON_YAML_FIELDS_H_
#define NEIGHBORLY_COMMON_YAML_FIELDS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cpu_list.h"
#include "yaml-cpp/yaml.h"

namespace neighborly::yaml {

// Where the text came from, for messages (a file name, or "kubelet config").
// Values keep a pointer to it: it must outlive them.
struct Source {
  std::string name;
};

// Parses one YAML (or JSON) document. Empty text is a null document. Syntax
// errors, more than one document, and nesting deeper than yaml-cpp's parser
// allows (2,000 levels) are errors naming the line.
absl::StatusOr<YAML::Node> Load(const Source& source, std::string_view text);

// "name:LINE: message" (just "name: message" when the mark has no line).
absl::Status ErrorAt(const Source& source, const YAML::Mark& mark, std::string_view message);

// "a map", "a list", "a scalar", "nothing": for messages.
std::string_view KindName(const YAML::Node& node);

// One YAML value with its key path from the document root ("" for the root,
// "model.labelRules[0].class"). Reading it as a type gives that type or an
// error "SOURCE:LINE: PATH: expected ..., got ...".
class Value {
 public:
  Value(const Source& source, YAML::Node node, std::string path = "",
        YAML::Mark fallback_mark = YAML::Mark::null_mark());

  const Source& source() const { return *source_; }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  // The value's line, or where it would have been (its key, its map).
  YAML::Mark mark() const;
  // Not in the document, or null (`key:` / `key: ~`).
  bool absent() const { return !node_.IsDefined() || node_.IsNull(); }

  // "SOURCE:LINE: PATH: message" ("SOURCE:LINE: top level: message" at the root).
  absl::Status Error(std::string_view message) const;

  // Any scalar, as written.
  absl::StatusOr<std::string> String() const;
  // true or false, in any case.
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<int64_t> Int(int64_t min = std::numeric_limits<int64_t>::min(),
                              int64_t max = std::numeric_limits<int64_t>::max()) const;
  absl::StatusOr<uint64_t> Uint(uint64_t max = std::numeric_limits<uint64_t>::max()) const;
  // A finite number within [min, max].
  absl::StatusOr<double> Double(double min = -std::numeric_limits<double>::infinity(),
                                double max = std::numeric_limits<double>::infinity()) const;
  // An integer or a Kubernetes quantity ("64Mi", "2G", "22.1G"), at least `min`.
  absl::StatusOr<int64_t> Bytes(int64_t min = 0) const;
  // "30s", "500ms", "1h30m" (Go's duration syntax), at least `min`.
  absl::StatusOr<absl::Duration> Duration(absl::Duration min = absl::ZeroDuration()) const;
  // A Linux cpu list ("0-7,16"); an empty string is the empty set.
  absl::StatusOr<CpuSet> Cpus() const;
  // The items of a list, each with its path ("nodes[3]"). Absent: no items.
  absl::StatusOr<std::vector<Value>> List() const;
  // A list of scalars. Absent: empty.
  absl::StatusOr<std::vector<std::string>> Strings() const;
  // A map of scalars (labels, policy options); merge keys resolved, duplicate
  // keys refused, a null value is "". Absent: empty.
  absl::StatusOr<std::map<std::string, std::string>> StringMap() const;

 private:
  absl::StatusOr<std::string> Scalar(std::string_view want) const;

  const Source* source_;
  YAML::Node node_;
  std::string path_;
  YAML::Mark fallback_mark_;
};

// The keys of one YAML map, merge keys resolved.
class Map {
 public:
  struct Entry {
    std::string key;
    Value value;
    YAML::Mark key_mark;
  };

  // Bounds on merge-key resolution for one map. Aliases share nodes, so a
  // small file can nest merges exponentially ("billion laughs": ten maps each
  // merging the previous one ten times) or make a map merge itself; both are
  // refused with an error instead of taking hours or overflowing the stack.
  static constexpr int kMaxMergeDepth = 16;
  static constexpr int kMaxMergedMaps = 256;

  // `value` must be a map (absent reads as an empty one). Keys outside
  // `allowed` are refused with an error that lists the known ones.
  static absl::StatusOr<Map> Of(const Value& value, const std::vector<std::string>& allowed);
  // Any key is accepted (files whose schema belongs to someone else).
  static absl::StatusOr<Map> OfAnyKeys(const Value& value);

  const Value& self() const { return self_; }
  const std::string& path() const { return self_.path(); }
  // Own keys in document order, then merged keys.
  const std::vector<Entry>& entries() const { return entries_; }

  // The entry for `key`, or nullptr when absent or null.
  const Entry* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  // The value of `key` (an absent Value at this map's line when missing).
  Value Get(std::string_view key) const;
  // The path of `key` in this map ("model.l3Weight").
  std::string PathOf(std::string_view key) const;

  // Get(key).Error(message): at the key's line, prefixed with its path.
  absl::Status ErrorFor(std::string_view key, std::string_view message) const;
  // `missing required key "PATH.key"` (plus `detail`), at the key (present but
  // empty) or at this map.
  absl::Status Missing(std::string_view key, std::string_view detail = "") const;

  // Optional getters: nullopt when the key is absent or null; an error naming
  // the path and line when the value has the wrong type.
  absl::StatusOr<std::optional<std::string>> String(std::string_view key) const;
  absl::StatusOr<std::optional<bool>> Bool(std::string_view key) const;
  absl::StatusOr<std::optional<int64_t>> Int(std::string_view key) const;
  absl::StatusOr<std::optional<uint64_t>> Uint(std::string_view key) const;
  absl::StatusOr<std::optional<double>> Double(
      std::string_view key, double min = -std::numeric_limits<double>::infinity(),
      double max = std::numeric_limits<double>::infinity()) const;
  absl::StatusOr<std::optional<uint64_t>> Bytes(std::string_view key) const;
  absl::StatusOr<std::optional<CpuSet>> Cpus(std::string_view key) const;
  // Required variants: Missing() when absent (an empty string counts as absent).
  absl::StatusOr<std::string> RequiredString(std::string_view key) const;
  absl::StatusOr<uint64_t> RequiredUint(std::string_view key) const;
  absl::StatusOr<uint64_t> RequiredBytes(std::string_view key) const;

 private:
  // Merge resolution in progress: the maps being resolved, outermost first,
  // how many maps have been merged so far, and the outermost merge key being
  // resolved (where limit errors point).
  struct MergeState {
    std::vector<YAML::Node> chain;
    int merged_maps = 0;
    YAML::Mark origin;
  };

  explicit Map(Value self) : self_(std::move(self)) {}
  static absl::StatusOr<Map> Resolve(const Value& value, const std::vector<std::string>* allowed,
                                     MergeState& state);
  absl::Status Merge(const YAML::Node& merged, const YAML::Mark& at,
                     const std::vector<std::string>* allowed, MergeState& state);
  std::string Where() const;

  Value self_;
  std::vector<Entry> entries_;
};

}  // namespace neighborly::yaml

#endif  // NEIGHBORLY_COMMON_YAML_FIELDS_H_
