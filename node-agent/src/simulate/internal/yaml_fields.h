// Typed, line-numbered access to the keys of one YAML mapping, for the scenario
// parser. yaml-cpp 0.7 neither resolves merge keys ("<<: *anchor") nor refuses
// duplicate keys, so Fields does both; every error names the source, the line,
// the key and the object it belongs to:
//
//   content-platform.yaml:42: unknown key "cpuRequestMilicores" in pod
//
//   YamlSource src{.name = "scenario.yaml"};
//   absl::StatusOr<Fields> pod = Fields::Of(src, node, "pod", {"uid", "name", ...});
//   absl::StatusOr<std::optional<uint64_t>> bytes = pod->Bytes("memoryRequestBytes");
#ifndef NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_INTERNAL_YAML_FIELDS_H_
#define NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_INTERNAL_YAML_FIELDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cpu_list.h"
#include "yaml-cpp/yaml.h"

namespace neighborly::agent::internal {

// The file name used in messages.
struct YamlSource {
  std::string name;
};

// "name:LINE: message" as an InvalidArgument status; `mark` is yaml-cpp's 0-based mark.
absl::Status ErrorAt(const YamlSource& source, const YAML::Mark& mark, std::string_view message);

// "list", "map", "string", "null" for messages.
std::string_view KindName(const YAML::Node& node);

class Fields {
 public:
  struct Entry {
    std::string key;
    YAML::Node value;
    YAML::Mark key_mark;
  };

  // Bounds on merge-key resolution for one mapping. Aliases share nodes, so a
  // small file can nest merges exponentially ("billion laughs": ten maps each
  // merging the previous one ten times) or make a map merge itself; both are
  // refused with an error instead of taking hours or overflowing the stack.
  static constexpr int kMaxMergeDepth = 16;
  static constexpr int kMaxMergedMaps = 256;

  // `node` must be a mapping; keys outside `allowed` are refused. Merge keys are
  // resolved (the mapping's own keys win over merged ones, earlier merged maps over
  // later ones, as YAML 1.1 specifies); a duplicate own key is refused, and so is
  // a merge that nests deeper than kMaxMergeDepth, reaches more than
  // kMaxMergedMaps maps, or merges a map into itself.
  static absl::StatusOr<Fields> Of(const YamlSource& source, const YAML::Node& node,
                                   std::string_view what, const std::vector<std::string>& allowed);

  const YAML::Mark& mark() const { return mark_; }
  const std::string& what() const { return what_; }
  const std::vector<Entry>& entries() const { return entries_; }

  // The entry for `key`, or nullptr when absent or null (`key:` with no value).
  const Entry* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Error at the line of `key` (or of this mapping when the key is absent).
  absl::Status ErrorFor(std::string_view key, std::string_view message) const;

  // Each getter returns nullopt when the key is absent and an error naming key and
  // line when the value has the wrong shape. Required* variants refuse absence.
  absl::StatusOr<std::optional<std::string>> String(std::string_view key) const;
  absl::StatusOr<std::string> RequiredString(std::string_view key) const;
  absl::StatusOr<std::optional<uint64_t>> Uint(std::string_view key) const;
  absl::StatusOr<uint64_t> RequiredUint(std::string_view key) const;
  absl::StatusOr<std::optional<int64_t>> Int(std::string_view key) const;
  // A non-negative integer or a Kubernetes quantity ("32Gi", "22.1G").
  absl::StatusOr<std::optional<uint64_t>> Bytes(std::string_view key) const;
  absl::StatusOr<uint64_t> RequiredBytes(std::string_view key) const;
  // A finite, non-negative number.
  absl::StatusOr<std::optional<double>> Double(std::string_view key) const;
  absl::StatusOr<std::optional<bool>> Bool(std::string_view key) const;
  // A Linux cpu list ("0-7,16"); an empty string is the empty set.
  absl::StatusOr<std::optional<CpuSet>> Cpus(std::string_view key) const;
  // A mapping of scalars (labels, annotations).
  absl::StatusOr<std::map<std::string, std::string>> StringMap(std::string_view key) const;
  // A list; nullopt when absent.
  absl::StatusOr<std::optional<YAML::Node>> List(std::string_view key) const;

 private:
  // Merge resolution in progress: the maps being resolved, outermost first,
  // how many maps have been merged so far, and the outermost merge key being
  // resolved (where limit errors point).
  struct MergeState {
    std::vector<YAML::Node> chain;
    int merged_maps = 0;
    YAML::Mark origin;
  };

  Fields(const YamlSource& source, YAML::Mark mark, std::string what)
      : source_(&source), mark_(mark), what_(std::move(what)) {}
  static absl::StatusOr<Fields> Resolve(const YamlSource& source, const YAML::Node& node,
                                        std::string_view what,
                                        const std::vector<std::string>& allowed, MergeState& state);
  absl::Status AddMergedChecked(const YAML::Node& merged, const YAML::Mark& at,
                                const std::vector<std::string>& allowed, MergeState& state);
  absl::StatusOr<const Entry*> Scalar(std::string_view key) const;

  const YamlSource* source_;
  YAML::Mark mark_;
  std::string what_;
  std::vector<Entry> entries_;
};

}  // namespace neighborly::agent::internal

#endif  // NEIGHBORLY_NODE_AGENT_SRC_SIMULATE_INTERNAL_YAML_FIELDS_H_
