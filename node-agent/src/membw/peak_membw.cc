#include "node-agent/src/membw/peak_membw.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/membw/smbios_memory.h"
#include "node-agent/src/sys/text.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

constexpr int kCacheVersion = 1;
constexpr size_t kMaxReasonBytes = 1000;

std::string Rate(double bytes_per_second) {
  return absl::StrFormat("%.1f GB/s", bytes_per_second / 1e9);
}

std::string MiB(uint64_t bytes) { return absl::StrCat(bytes >> 20, " MiB"); }

std::string Timestamp(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string ParentDir(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos || slash == 0 ? "/" : std::string(path.substr(0, slash));
}

// mkdir -p under the host root.
absl::Status MakeDirs(Filesystem& fs, std::string_view dir) {
  if (dir.empty() || dir == "/" || fs.IsDirectory(dir)) return absl::OkStatus();
  if (absl::Status s = MakeDirs(fs, ParentDir(dir)); !s.ok()) return s;
  absl::Status made = fs.MakeDir(dir);
  if (!made.ok() && !fs.IsDirectory(dir)) return made;
  return absl::OkStatus();
}

// Bytes of L3 on the node (sum of its domains); else the largest domain.
uint64_t NodeL3Bytes(const Topology& topology, uint32_t node) {
  uint64_t on_node = 0, largest = 0;
  for (const L3DomainInfo& d : topology.l3_domains) {
    const uint64_t size = d.size_bytes.value_or(0);
    largest = std::max(largest, size);
    if (d.numa_node == node) on_node += size;
  }
  return on_node != 0 ? on_node : largest;
}

struct NodeOutcome {
  std::optional<double> bytes_per_second;
  std::string detail;  // how, or why not
  bool retry = false;  // a disturbed run: worth measuring again
};

class Resolver {
 public:
  Resolver(const Topology& topology, const PeakMembwOptions& options,
           const PeakMembwEnvironment& env)
      : topology_(topology), options_(options), env_(env) {}

  PeakMembwReport Run() {
    PeakMembwReport report;
    std::vector<const NumaNodeInfo*> pending;
    for (const NumaNodeInfo& node : topology_.numa_nodes) {
      NodePeak peak;
      peak.numa_node = node.id;
      const auto by_node = options_.override_peak.by_node_bytes_per_second.find(node.id);
      if (by_node != options_.override_peak.by_node_bytes_per_second.end()) {
        peak.bytes_per_second = by_node->second;
      } else if (options_.override_peak.all_nodes_bytes_per_second) {
        peak.bytes_per_second = *options_.override_peak.all_nodes_bytes_per_second;
      }
      if (peak.bytes_per_second) {
        peak.source = "override";
        peak.detail = "set by the operator (--peak-membw-bytes-per-second)";
      } else {
        pending.push_back(&node);
      }
      report.nodes.push_back(std::move(peak));
    }
    if (pending.empty()) {
      report.calibrated = true;
      return report;
    }

    std::map<uint32_t, NodeOutcome> measured = Measurements(pending, report.measured_now);
    std::map<std::string, std::vector<uint32_t>> reasons;  // why -> nodes
    std::optional<absl::StatusOr<SmbiosPeak>> smbios;
    for (NodePeak& peak : report.nodes) {
      if (peak.bytes_per_second) continue;
      const NodeOutcome& outcome = measured[peak.numa_node];
      if (outcome.bytes_per_second && *outcome.bytes_per_second >= 1) {
        peak.bytes_per_second = static_cast<uint64_t>(std::llround(*outcome.bytes_per_second));
        peak.source = "measured";
        peak.detail = outcome.detail;
        continue;
      }
      if (!smbios) smbios = ReadSmbiosPeak(*env_.fs);
      if (smbios->ok()) {
        const double share = MemoryShare(peak.numa_node);
        const double sustained =
            (*smbios)->theoretical_bytes_per_second * kSmbiosSustainedFraction * share;
        if (sustained >= 1) {
          peak.bytes_per_second = static_cast<uint64_t>(std::llround(sustained));
          peak.source = "smbios";
          peak.detail = absl::StrCat(
              "SMBIOS: ", (*smbios)->description, "; ",
              static_cast<int>(std::lround(kSmbiosSustainedFraction * 100)), "% sustainable",
              share < 1 ? absl::StrFormat(", %.0f%% of it on this node by memory", share * 100)
                        : "",
              " = ", Rate(sustained), " (not measured: ", outcome.detail, ")");
          reasons[absl::StrCat("not measured (", outcome.detail,
                               "); SMBIOS memory configuration used")]
              .push_back(peak.numa_node);
          continue;
        }
      }
      const std::string smbios_why = smbios->ok()
                                         ? "the node holds no memory to share the SMBIOS figure by"
                                         : std::string(smbios->status().message());
      peak.source = "default";
      peak.detail = absl::StrCat("no figure: not measured (", outcome.detail, "); no SMBIOS (",
                                 smbios_why, "); the extender's default applies");
      reasons[peak.detail].push_back(peak.numa_node);
    }
    report.calibrated = reasons.empty();
    std::vector<std::string> parts;
    for (const auto& [why, nodes] : reasons) {
      parts.push_back(absl::StrCat(nodes.size() == 1 ? "node " : "nodes ",
                                   absl::StrJoin(nodes, ","), ": ", why));
    }
    report.reason = absl::StrJoin(parts, "; ");
    // The extender accepts capability reasons up to 1024 bytes.
    if (report.reason.size() > kMaxReasonBytes) {
      report.reason.resize(kMaxReasonBytes - 3);
      report.reason += "...";
    }
    return report;
  }

 private:
  double MemoryShare(uint32_t node) const {
    uint64_t total = 0, mine = 0;
    bool unknown = false;
    for (const NumaNodeInfo& n : topology_.numa_nodes) {
      if (!n.memory_bytes) {
        unknown = true;
        continue;
      }
      total += *n.memory_bytes;
      if (n.id == node) mine = *n.memory_bytes;
    }
    if (unknown || total == 0) return 1.0 / static_cast<double>(topology_.numa_nodes.size());
    return static_cast<double>(mine) / static_cast<double>(total);
  }

  std::string CpuModel() const {
    absl::StatusOr<std::string> cpuinfo = env_.fs->ReadFile("/proc/cpuinfo");
    return cpuinfo.ok() ? CpuModelFromCpuinfo(*cpuinfo) : "unknown";
  }

  // The cached attempt of this boot when there is one, else a fresh one (mode
  // auto), else each pending node's reason.
  std::map<uint32_t, NodeOutcome> Measurements(const std::vector<const NumaNodeInfo*>& pending,
                                               bool& measured_now) {
    std::map<uint32_t, NodeOutcome> out;
    auto all = [&](const std::string& why) {
      for (const NumaNodeInfo* node : pending) out[node->id].detail = why;
      return out;
    };
    if (options_.measure == MeasureMode::kOff) {
      return all("measurement disabled (--peak-membw-measure off)");
    }
    const std::string cpu_model = CpuModel();
    const std::string& path = options_.cache_path;
    std::optional<CalibrationCache> cached;
    if (env_.boot_id.empty()) {
      spdlog::warn(
          "peak membw: no boot id (proc/sys/kernel/random/boot_id): the cache at {} is "
          "neither read nor written",
          path);
    } else if (absl::StatusOr<std::string> text = env_.fs->ReadFile(path); text.ok()) {
      absl::StatusOr<CalibrationCache> parsed = ParseCalibrationCache(*text);
      if (!parsed.ok()) {
        spdlog::warn("peak membw: ignoring the cache {}: {}", path,
                     std::string(parsed.status().message()));
      } else if (parsed->boot_id != env_.boot_id || parsed->cpu_model != cpu_model) {
        spdlog::info("peak membw: the cache {} is from another boot or CPU ({} / {}); not used",
                     path, parsed->boot_id, parsed->cpu_model);
      } else {
        cached = std::move(*parsed);
      }
    } else if (ErrnoOf(text.status()) != ENOENT) {
      spdlog::warn("peak membw: cannot read the cache: {}", std::string(text.status().message()));
    }

    if (cached && !cached->finished) {
      return all(absl::StrCat("a measurement started on this boot at ", Timestamp(cached->started),
                              " never finished (the agent was killed during it, for example "
                              "OOM-killed under its memory limit); not retried until the next "
                              "boot: delete ",
                              path, " to retry"));
    }
    // Cached outcomes stand, except failures of a disturbed run, which the
    // next start (mode auto) measures again.
    auto from_cache = [&](const CachedNode& c) {
      const std::string at = Timestamp(c.measured_at);
      NodeOutcome o{c.bytes_per_second, c.detail, c.retry};
      if (c.bytes_per_second) {
        absl::StrAppend(&o.detail, "; cached at ", at);
      } else if (c.retry) {
        absl::StrAppend(&o.detail, " (at ", at, "; measured again at the next calibration)");
      } else {
        absl::StrAppend(&o.detail, " (cached at ", at, "; delete ", path, " to retry)");
      }
      return o;
    };
    std::vector<const NumaNodeInfo*> to_measure;
    for (const NumaNodeInfo* node : pending) {
      const CachedNode* c = nullptr;
      if (cached) {
        for (const CachedNode& entry : cached->nodes) {
          if (entry.numa_node == node->id) c = &entry;
        }
      }
      if (c != nullptr && !(c->retry && options_.measure == MeasureMode::kAuto)) {
        out[node->id] = from_cache(*c);
      } else {
        to_measure.push_back(node);
      }
    }
    if (to_measure.empty()) return out;
    if (options_.measure == MeasureMode::kCached) {
      for (const NumaNodeInfo* node : to_measure) {
        out[node->id].detail =
            cached ? absl::StrCat("the measurement cached in ", path, " has no entry for this node")
                   : absl::StrCat("no measurement of this boot cached at ", path,
                                  " (--peak-membw-measure cached: the calibration init container "
                                  "writes it)");
      }
      return out;
    }
    if (env_.meter == nullptr) return all("no bandwidth meter");

    // Measure, with a "running" marker first: if the agent dies during the
    // measurement (OOM), the next start does not try again and crash-loop.
    CalibrationCache fresh = cached ? *cached
                                    : CalibrationCache{.version = kCacheVersion,
                                                       .boot_id = env_.boot_id,
                                                       .cpu_model = cpu_model,
                                                       .finished = false,
                                                       .started = env_.clock->Now(),
                                                       .nodes = {}};
    fresh.finished = false;
    fresh.started = env_.clock->Now();
    std::string cache_error;
    if (!env_.boot_id.empty()) {
      absl::Status dir = MakeDirs(*env_.fs, ParentDir(path));
      absl::Status marker =
          dir.ok() ? env_.fs->ReplaceFile(path, FormatCalibrationCache(fresh)) : dir;
      if (!marker.ok()) {
        cache_error = std::string(marker.message());
        spdlog::warn(
            "peak membw: cannot write the cache ({}); the measurement will run again at "
            "the next start",
            cache_error);
      }
    }
    measured_now = true;
    for (const NumaNodeInfo* node : to_measure) {
      NodeOutcome outcome = MeasureNode(*node);
      std::erase_if(fresh.nodes, [&](const CachedNode& c) { return c.numa_node == node->id; });
      fresh.nodes.push_back({.numa_node = node->id,
                             .bytes_per_second = outcome.bytes_per_second,
                             .detail = outcome.detail,
                             .retry = outcome.retry,
                             .measured_at = env_.clock->Now()});
      out[node->id] = std::move(outcome);
    }
    std::sort(fresh.nodes.begin(), fresh.nodes.end(),
              [](const CachedNode& a, const CachedNode& b) { return a.numa_node < b.numa_node; });
    fresh.finished = true;
    if (!env_.boot_id.empty() && cache_error.empty()) {
      if (absl::Status s = env_.fs->ReplaceFile(path, FormatCalibrationCache(fresh)); !s.ok()) {
        spdlog::warn("peak membw: cannot write the cache: {}", std::string(s.message()));
      }
    }
    return out;
  }

  NodeOutcome MeasureNode(const NumaNodeInfo& node) {
    NodeOutcome outcome;
    if (node.cpus.empty()) {
      outcome.detail = "the node has no CPUs to measure from";
      return outcome;
    }
    if (node.memory_bytes && *node.memory_bytes == 0) {
      outcome.detail = "the node has no memory";
      return outcome;
    }
    const uint64_t l3 = NodeL3Bytes(topology_, node.id);
    uint64_t working_set = std::max(kMinWorkingSetBytes, l3 * kWorkingSetPerL3Byte);
    working_set = std::min(working_set, options_.max_working_set_bytes);
    if (node.memory_bytes) working_set = std::min(working_set, *node.memory_bytes / 4);
    TriadRequest request{.numa_node = node.id,
                         .cpus = node.cpus,
                         .working_set_bytes = working_set,
                         .budget = options_.budget_per_node};
    absl::StatusOr<TriadResult> r = env_.meter->Measure(request);
    if (!r.ok()) {
      // Out of time is the load of the moment (touching the arrays on busy
      // CPUs); the others (pinning, mmap) would fail again.
      outcome.retry = r.status().code() == absl::StatusCode::kDeadlineExceeded;
      outcome.detail = absl::StrCat("measurement failed: ", r.status().message());
      spdlog::warn("peak membw: node {}: {}", node.id, outcome.detail);
      return outcome;
    }
    std::string cache_note;
    if (l3 > 0 && r->working_set_bytes < l3 * kWorkingSetPerL3Byte) {
      cache_note = absl::StrFormat(
          "; the working set is only %.1fx the node's L3 (--peak-membw-measure-max-bytes), so "
          "caches may inflate the figure",
          static_cast<double>(r->working_set_bytes) / static_cast<double>(l3));
    }
    if (r->clean_passes == 0) {
      outcome.retry = true;
      outcome.detail = absl::StrFormat(
          "measurement failed: no undisturbed pass in %.2f s (the threads were on their CPUs "
          "only %.0f%% of the time: a CPU limit or busy CPUs); the best of %d passes gave %s",
          absl::ToDoubleSeconds(r->elapsed), r->cpu_share * 100, r->passes,
          Rate(r->best_any_bytes_per_second));
      spdlog::warn("peak membw: node {}: {}", node.id, outcome.detail);
      return outcome;
    }
    outcome.bytes_per_second = r->bytes_per_second;
    outcome.detail = absl::StrCat(
        "STREAM triad: ", r->threads, " thread(s) on CPUs ", FormatCpuList(r->cpus),
        r->cpus.size() < node.cpus.size()
            ? absl::StrCat(" (of the node's ", FormatCpuList(node.cpus), ")")
            : "",
        ", ", MiB(r->working_set_bytes), " ", r->placement, ", best of ", r->clean_passes,
        " undisturbed pass(es) (", r->passes, " in ",
        absl::StrFormat("%.2f s", absl::ToDoubleSeconds(r->elapsed)),
        absl::StrFormat("; threads on their CPUs %.0f%% of the best", r->cpu_share * 100), ")",
        cache_note);
    spdlog::info("peak membw: node {}: {} ({})", node.id, Rate(r->bytes_per_second),
                 outcome.detail);
    return outcome;
  }

  const Topology& topology_;
  const PeakMembwOptions& options_;
  const PeakMembwEnvironment& env_;
};

}  // namespace

absl::StatusOr<MeasureMode> ParseMeasureMode(std::string_view text) {
  if (text == "auto") return MeasureMode::kAuto;
  if (text == "cached") return MeasureMode::kCached;
  if (text == "off") return MeasureMode::kOff;
  return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not auto, cached or off"));
}

absl::StatusOr<PeakOverride> ParsePeakOverride(std::string_view text) {
  PeakOverride out;
  for (absl::string_view raw : absl::StrSplit(Av(text), ',')) {
    const std::string_view part = Trim(Sv(raw));
    if (part.empty())
      return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" has an empty entry"));
    const size_t eq = part.find('=');
    const std::string_view value = Trim(eq == std::string_view::npos ? part : part.substr(eq + 1));
    absl::StatusOr<int64_t> bytes = ParseByteQuantity(value);
    if (!bytes.ok() || *bytes <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", Av(value), "\" is not a positive bandwidth in bytes per second (e.g. 200G)"));
    }
    if (eq == std::string_view::npos) {
      if (out.all_nodes_bytes_per_second) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", Av(text), "\" gives two figures for every node"));
      }
      out.all_nodes_bytes_per_second = static_cast<uint64_t>(*bytes);
      continue;
    }
    std::optional<uint32_t> node = ParseInt<uint32_t>(Trim(part.substr(0, eq)));
    if (!node) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", Av(part), "\": \"", Av(part.substr(0, eq)), "\" is not a NUMA node id"));
    }
    if (!out.by_node_bytes_per_second.emplace(*node, static_cast<uint64_t>(*bytes)).second) {
      return absl::InvalidArgumentError(absl::StrCat("NUMA node ", *node, " given twice"));
    }
  }
  return out;
}

std::string CpuModelFromCpuinfo(std::string_view cpuinfo) {
  std::string implementer, part;
  for (std::string_view line : SplitLines(cpuinfo)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "model name" && !value.empty()) return std::string(value);
    if (key == "CPU implementer" && implementer.empty()) implementer = std::string(value);
    if (key == "CPU part" && part.empty()) part = std::string(value);
  }
  if (!implementer.empty() || !part.empty()) {
    return absl::StrCat("implementer ", implementer, " part ", part);
  }
  return "unknown";
}

absl::StatusOr<CalibrationCache> ParseCalibrationCache(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  auto str = [&](const char* key) -> absl::StatusOr<std::string> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" missing or not a string"));
    }
    return it->get<std::string>();
  };
  CalibrationCache cache;
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer()) {
    return absl::InvalidArgumentError("\"version\" missing or not an integer");
  }
  cache.version = version->get<int>();
  if (cache.version != kCacheVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("version ", cache.version, ", this agent reads ", kCacheVersion));
  }
  absl::StatusOr<std::string> boot = str("bootId"), model = str("cpuModel"), state = str("state"),
                              started = str("started");
  for (const auto* s : {&boot, &model, &state, &started}) {
    if (!s->ok()) return s->status();
  }
  cache.boot_id = *boot;
  cache.cpu_model = *model;
  if (*state != "running" && *state != "finished") {
    return absl::InvalidArgumentError(
        absl::StrCat("\"state\" is \"", *state, "\", not running or finished"));
  }
  cache.finished = *state == "finished";
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, *started, &cache.started, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("\"started\": ", error));
  }
  auto nodes = j.find("nodes");
  if (nodes == j.end() || !nodes->is_array()) {
    return absl::InvalidArgumentError("\"nodes\" missing or not an array");
  }
  for (const nlohmann::json& n : *nodes) {
    if (!n.is_object()) return absl::InvalidArgumentError("a \"nodes\" entry is not an object");
    CachedNode node;
    auto id = n.find("numaNode");
    if (id == n.end() || !id->is_number_unsigned() || id->get<uint64_t>() > kMaxCpuId) {
      return absl::InvalidArgumentError("a node's \"numaNode\" is missing or not a node id");
    }
    node.numa_node = id->get<uint32_t>();
    if (auto bw = n.find("bytesPerSecond"); bw != n.end()) {
      if (!bw->is_number() || !std::isfinite(bw->get<double>()) || bw->get<double>() <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", node.numa_node, ": \"bytesPerSecond\" is not a positive number"));
      }
      node.bytes_per_second = bw->get<double>();
    }
    if (auto detail = n.find("detail"); detail != n.end() && detail->is_string()) {
      node.detail = detail->get<std::string>();
    }
    if (auto retry = n.find("retry"); retry != n.end() && retry->is_boolean()) {
      node.retry = retry->get<bool>();
    }
    node.measured_at = cache.started;
    if (auto at = n.find("measuredAt"); at != n.end()) {
      if (!at->is_string() ||
          !absl::ParseTime(absl::RFC3339_full, at->get<std::string>(), &node.measured_at, &error)) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", node.numa_node, ": \"measuredAt\" is not an RFC 3339 time"));
      }
    }
    cache.nodes.push_back(std::move(node));
  }
  return cache;
}

std::string FormatCalibrationCache(const CalibrationCache& cache) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const CachedNode& n : cache.nodes) {
    nlohmann::json node = {
        {"numaNode", n.numa_node}, {"detail", n.detail}, {"measuredAt", Timestamp(n.measured_at)}};
    if (n.bytes_per_second) node["bytesPerSecond"] = *n.bytes_per_second;
    if (n.retry) node["retry"] = true;
    nodes.push_back(std::move(node));
  }
  const nlohmann::json j = {{"version", cache.version},
                            {"bootId", cache.boot_id},
                            {"cpuModel", cache.cpu_model},
                            {"state", cache.finished ? "finished" : "running"},
                            {"started", Timestamp(cache.started)},
                            {"nodes", std::move(nodes)}};
  return j.dump(2) + "\n";
}

PeakMembwReport ResolvePeakMembw(const Topology& topology, const PeakMembwOptions& options,
                                 const PeakMembwEnvironment& env) {
  return Resolver(topology, options, env).Run();
}

}  // namespace neighborly::agent
