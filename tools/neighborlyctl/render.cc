// SPDX-License-Identifier: Apache-2.0
#include "tools/neighborlyctl/render.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/strings.h"

namespace neighborly::ctl {
namespace {

using nlohmann::json;
using Row = std::vector<std::string>;

absl::StatusOr<json> Parse(std::string_view body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError("the answer is not JSON");
  }
  return doc;
}

std::string Camel(std::string_view snake) {
  std::string out;
  bool upper = false;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return out;
}

// The member `snake_key` of an object, or its camelCase spelling; nullptr if
// neither is there (or `obj` is not an object). Keys are written snake_case
// here; the API may spell them either way.
const json* Field(const json& obj, const char* snake_key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(snake_key);
  if (it != obj.end()) return &*it;
  it = obj.find(Camel(snake_key));
  return it != obj.end() ? &*it : nullptr;
}

// The list under `key` of a wrapped answer, or the answer itself when bare.
absl::StatusOr<json> List(const json& doc, const char* key) {
  if (doc.is_array()) return doc;
  if (doc.is_object()) {
    auto it = doc.find(key);
    if (it != doc.end() && it->is_array()) return *it;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a JSON list or an object with a \"", key, "\" list"));
}

std::optional<double> Number(const json& obj, const char* key) {
  const json* it = Field(obj, key);
  if (it == nullptr || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string String(const json& obj, const char* key, std::string fallback = "-") {
  const json* it = Field(obj, key);
  if (it == nullptr) return fallback;
  if (it->is_string()) return it->get<std::string>().empty() ? fallback : it->get<std::string>();
  if (it->is_number_integer()) return absl::StrCat(it->get<int64_t>());
  if (it->is_boolean()) return it->get<bool>() ? "true" : "false";
  return fallback;
}

std::string Fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

template <typename F>
std::string OrDash(std::optional<double> v, F format) {
  return v ? format(*v) : "-";
}

// Telemetry age in seconds: `telemetry_age_seconds`, else `telemetry_age`
// as a number of seconds or a duration string ("1.5s").
std::optional<double> TelemetryAge(const json& node) {
  if (auto v = Number(node, "telemetry_age_seconds")) return v;
  if (auto v = Number(node, "telemetry_age")) return v;
  std::string text = String(node, "telemetry_age", "");
  if (text.size() > 1 && text.back() == 's') {
    return ParseDouble(std::string_view(text).substr(0, text.size() - 1));
  }
  return std::nullopt;
}

std::string Table(const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    out += line;
    out += '\n';
  }
  return out;
}

// The worst entry of a list by `ratio_key`: "73% (L3 1)".
std::string Worst(const json& node, const char* list_key, const char* ratio_key,
                  const char* label) {
  const json* it = Field(node, list_key);
  if (it == nullptr || !it->is_array() || it->empty()) return "-";
  const json* worst = nullptr;
  double worst_ratio = -1;
  for (const json& entry : *it) {
    std::optional<double> r = Number(entry, ratio_key);
    if (r && *r > worst_ratio) {
      worst_ratio = *r;
      worst = &entry;
    }
  }
  if (worst == nullptr) return "-";
  return absl::StrCat(FormatPercent(worst_ratio), " (", label, " ", String(*worst, "id"), ")");
}

std::string PodsByClass(const json& node) {
  const json* it = Field(node, "pods_by_class");
  if (it == nullptr || !it->is_object()) return "-";
  std::vector<std::string> parts;
  // Fixed order, the classes that matter first.
  for (const char* cls : {"latency-critical", "batch", "standard"}) {
    auto c = it->find(cls);
    if (c != it->end() && c->is_number()) parts.push_back(absl::StrCat(cls, "=", c->get<int>()));
  }
  for (auto& [cls, n] : it->items()) {
    if (cls != "latency-critical" && cls != "batch" && cls != "standard" && n.is_number()) {
      parts.push_back(absl::StrCat(cls, "=", n.get<int>()));
    }
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

std::string StringList(const json& obj, const char* key) {
  const json* it = Field(obj, key);
  if (it == nullptr || !it->is_array() || it->empty()) return "-";
  std::vector<std::string> parts;
  for (const json& v : *it) {
    if (v.is_string()) parts.push_back(v.get<std::string>());
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

// A decision's fields, whether nested under "decision" or flattened.
const json& DecisionOf(const json& entry) {
  const json* it = Field(entry, "decision");
  return (it != nullptr && it->is_object()) ? *it : entry;
}

std::string Terms(const json& d) {
  const json* it = Field(d, "terms");
  std::vector<std::string> parts;
  if (it != nullptr && it->is_array()) {
    for (const json& t : *it) {
      std::string name = String(t, "name", "?");
      std::string detail = String(t, "detail", "");
      parts.push_back(detail.empty() ? absl::StrCat(name, "=",
                                                    OrDash(Number(t, "value"),
                                                           [](double v) { return Fixed(v, 2); }))
                                     : absl::StrCat(name, ": ", detail));
    }
    return parts.empty() ? "-" : absl::StrJoin(parts, "; ");
  }
  for (const char* key : {"l3_pressure", "membw_utilisation", "harm_to_incoming",
                          "harm_to_residents", "numa_penalty"}) {
    if (std::optional<double> v = Number(d, key))
      parts.push_back(absl::StrCat(key, "=", Fixed(*v, 2)));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

}  // namespace

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(static_cast<int64_t>(bytes), "B")
                   : absl::StrCat(Fixed(bytes, 1), kUnits[unit]);
}

std::string FormatBytesPerSecond(double bytes) {
  if (bytes >= 1e9) return absl::StrCat(Fixed(bytes / 1e9, 2), "GB/s");
  if (bytes >= 1e6) return absl::StrCat(Fixed(bytes / 1e6, 1), "MB/s");
  return absl::StrCat(Fixed(bytes / 1e3, 1), "kB/s");
}

std::string FormatPercent(double ratio) { return absl::StrCat(Fixed(ratio * 100, 0), "%"); }

std::string FormatSeconds(double seconds) {
  if (seconds < 60) return absl::StrCat(Fixed(seconds, 1), "s");
  const int64_t total = static_cast<int64_t>(seconds);
  if (total < 3600) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
    return buf;
  }
  return absl::StrCat(total / 3600, "h", (total % 3600) / 60, "m");
}

absl::StatusOr<std::string> RenderJson(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  return doc->dump(2) + "\n";
}

absl::StatusOr<std::string> RenderNodesTable(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<json> nodes = List(*doc, "nodes");
  if (!nodes.ok()) return nodes.status();
  std::vector<const json*> sorted;
  for (const json& n : *nodes) {
    if (!n.is_object() || String(n, "name", "").empty()) {
      return absl::InvalidArgumentError("a node entry has no \"name\"");
    }
    sorted.push_back(&n);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const json* a, const json* b) {
    const double sa = Number(*a, "contention_score").value_or(-1);
    const double sb = Number(*b, "contention_score").value_or(-1);
    if (sa != sb) return sa > sb;
    return String(*a, "name") < String(*b, "name");
  });
  if (sorted.empty()) return std::string("No nodes reported yet (are the agents running?)\n");
  std::vector<Row> rows = {{"NODE", "SCORE", "L3", "MEMBW", "PODS", "AGGRESSORS", "AGE", "CONF"}};
  for (const json* n : sorted) {
    rows.push_back({String(*n, "name"),
                    OrDash(Number(*n, "contention_score"), [](double v) { return Fixed(v, 2); }),
                    Worst(*n, "l3_domains", "pressure", "L3"),
                    Worst(*n, "numa_nodes", "membw_utilisation", "NUMA"), PodsByClass(*n),
                    StringList(*n, "aggressors"), OrDash(TelemetryAge(*n), FormatSeconds),
                    OrDash(Number(*n, "confidence"), [](double v) { return Fixed(v, 2); })});
  }
  return Table(rows);
}

absl::StatusOr<std::string> RenderNodeDetail(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  const json* node = &*doc;
  if (const json* it = Field(*doc, "node"); it != nullptr && it->is_object()) node = it;
  if (!node->is_object() || String(*node, "name", "").empty()) {
    return absl::InvalidArgumentError("expected a node object with a \"name\"");
  }
  const json& n = *node;
  std::string out = absl::StrCat(
      "Node:         ", String(n, "name"), "\n",
      "Contention:   ", OrDash(Number(n, "contention_score"), [](double v) { return Fixed(v, 2); }),
      "\n", "Telemetry:    ", OrDash(TelemetryAge(n), FormatSeconds), " old, confidence ",
      OrDash(Number(n, "confidence"), [](double v) { return Fixed(v, 2); }), ", agent ",
      String(n, "agent_version"), ", sequence ", String(n, "sequence"), "\n",
      "Kubelet:      cpuManagerPolicy ", String(n, "cpu_manager_policy"),
      ", topologyManagerPolicy ", String(n, "topology_manager_policy"), "\n",
      "Pods:         ", PodsByClass(n), "; aggressors ", StringList(n, "aggressors"),
      "; in-flight bookings ", String(n, "bookings", "0"), "\n");
  if (const json* caps = Field(n, "capabilities");
      caps != nullptr && caps->is_object() && !caps->empty()) {
    out += "Capabilities:\n";
    for (auto& [name, state] : caps->items()) {
      absl::StrAppend(&out, "  ", name, ": ",
                      state.is_string() ? state.get<std::string>() : state.dump(), "\n");
    }
  }
  if (const json* l3 = Field(n, "l3_domains"); l3 != nullptr && l3->is_array() && !l3->empty()) {
    std::vector<Row> rows = {{"L3 DOMAIN", "NUMA", "SIZE", "OCCUPANCY", "PRESSURE"}};
    for (const json& d : *l3) {
      rows.push_back({String(d, "id"), String(d, "numa_node"),
                      OrDash(Number(d, "size_bytes"), FormatBytes),
                      OrDash(Number(d, "occupancy_bytes"), FormatBytes),
                      OrDash(Number(d, "pressure"), FormatPercent)});
    }
    out += "\n" + Table(rows);
  }
  if (const json* numa = Field(n, "numa_nodes");
      numa != nullptr && numa->is_array() && !numa->empty()) {
    std::vector<Row> rows = {
        {"NUMA NODE", "CPUS", "MEMORY", "FREE MEMORY", "FREE EXCL CPUS", "MEMBW", "PEAK", "UTIL"}};
    for (const json& d : *numa) {
      rows.push_back(
          {String(d, "id"), String(d, "cpus"), OrDash(Number(d, "memory_bytes"), FormatBytes),
           OrDash(Number(d, "free_memory_bytes"), FormatBytes), String(d, "free_exclusive_cpus"),
           OrDash(Number(d, "membw_bytes_per_second"), FormatBytesPerSecond),
           OrDash(Number(d, "peak_membw_bytes_per_second"), FormatBytesPerSecond),
           OrDash(Number(d, "membw_utilisation"), FormatPercent)});
    }
    out += "\n" + Table(rows);
  }
  if (const json* pods = Field(n, "pods"); pods != nullptr && pods->is_array() && !pods->empty()) {
    std::vector<Row> rows = {{"POD", "QOS", "CLASS", "SOURCE", "AGGRESSOR", "EXCL CPUS", "CPU",
                              "LLC", "MEMBW", "IPC", "MPKI"}};
    for (const json& p : *pods) {
      rows.push_back(
          {absl::StrCat(String(p, "namespace", String(p, "namespace_name")), "/",
                        String(p, "name")),
           String(p, "qos_class"), String(p, "contention_class"), String(p, "class_source"),
           String(p, "aggressor", "false") == "true" ? "yes" : "no", String(p, "exclusive_cpus"),
           OrDash(Number(p, "cpu_usage_millicores"),
                  [](double v) { return absl::StrCat(static_cast<int64_t>(v), "m"); }),
           OrDash(Number(p, "llc_occupancy_bytes"), FormatBytes),
           OrDash(Number(p, "membw_total_bytes_per_second"), FormatBytesPerSecond),
           OrDash(Number(p, "ipc"), [](double v) { return Fixed(v, 2); }),
           OrDash(Number(p, "llc_misses_per_kilo_instructions"),
                  [](double v) { return Fixed(v, 1); })});
    }
    out += "\n" + Table(rows);
  }
  return out;
}

absl::StatusOr<std::string> RenderDecisions(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<json> decisions = List(*doc, "decisions");
  if (!decisions.ok()) return decisions.status();
  if (decisions->empty()) return std::string("No recorded decisions for this pod.\n");
  std::string out;
  for (const json& rec : *decisions) {
    if (!out.empty()) out += "\n";
    absl::StrAppend(&out, String(rec, "at"), "  ", String(rec, "verb"), "  ", String(rec, "pod"),
                    "  class ", String(rec, "contention_class"), " (", String(rec, "class_source"),
                    ")");
    const std::string booked = String(rec, "booked_node", "");
    if (!booked.empty()) absl::StrAppend(&out, "  booked on ", booked);
    out += "\n";
    const std::string prediction = String(rec, "prediction", "");
    if (!prediction.empty()) absl::StrAppend(&out, "footprint: ", prediction, "\n");
    const json* nodes = Field(rec, "nodes");
    if (nodes == nullptr || !nodes->is_array()) continue;
    std::vector<Row> rows = {{"NODE", "VERDICT", "SCORE", "COST", "CONF", "TERMS / REASON"}};
    for (const json& entry : *nodes) {
      const json& d = DecisionOf(entry);
      const bool feasible = String(d, "feasible", "true") == "true";
      rows.push_back({String(entry, "node", String(entry, "name")), feasible ? "pass" : "rejected",
                      feasible ? String(d, "score") : "-",
                      OrDash(Number(d, "cost"), [](double v) { return Fixed(v, 2); }),
                      OrDash(Number(d, "confidence"), [](double v) { return Fixed(v, 2); }),
                      feasible ? Terms(d) : String(d, "reason")});
    }
    out += Table(rows);
    if (const std::optional<double> omitted = Number(rec, "omitted_nodes");
        omitted && *omitted > 0) {
      absl::StrAppend(&out, "(", static_cast<int64_t>(*omitted),
                      " more feasible nodes with lower scores not kept)\n");
    }
  }
  return out;
}

namespace {

// "mean / p95" of one metric of a workload, formatted by `format`.
template <typename F>
std::string MeanHigh(const json& w, const char* metric, F format) {
  const json* metrics = Field(w, "metrics");
  const json* m = metrics != nullptr ? Field(*metrics, metric) : nullptr;
  if (m == nullptr) return "-";
  return absl::StrCat(OrDash(Number(*m, "mean"), format), " / ", OrDash(Number(*m, "p95"), format));
}

std::string Verdict(const json& w) {
  if (String(w, "aggressor", "false") != "true") return "-";
  return absl::StrCat("aggressor (", String(w, "aggressor_why", "measured"), ")");
}

}  // namespace

absl::StatusOr<std::string> RenderWorkloadsTable(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<json> workloads = List(*doc, "workloads");
  if (!workloads.ok()) return workloads.status();
  if (workloads->empty())
    return std::string("No workload profiles yet: no replica has been measured.\n");
  std::vector<Row> rows = {{"WORKLOAD", "REPLICAS", "NODES", "WINDOWS", "CONF", "MEMBW mean / p95",
                            "L3 mean / p95", "MPKI", "VERDICT"}};
  for (const json& w : *workloads) {
    rows.push_back(
        {String(w, "workload"), String(w, "replicas"), String(w, "nodes"),
         OrDash(Number(w, "windows"), [](double v) { return Fixed(v, 0); }),
         OrDash(Number(w, "confidence"), [](double v) { return Fixed(v, 2); }),
         MeanHigh(w, "membw_total_bytes_per_second", FormatBytesPerSecond),
         MeanHigh(w, "llc_occupancy_bytes", FormatBytes),
         MeanHigh(w, "llc_misses_per_kilo_instructions", [](double v) { return Fixed(v, 1); }),
         Verdict(w)});
  }
  return Table(rows);
}

absl::StatusOr<std::string> RenderWorkloadDetail(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return absl::InvalidArgumentError("expected a JSON object");
  const json& w = *doc;
  std::string out = absl::StrCat(
      "Workload ", String(w, "workload"), "\n", "  replicas ", String(w, "replicas"), " on ",
      String(w, "nodes"), " node(s), ",
      OrDash(Number(w, "windows"), [](double v) { return Fixed(v, 0); }),
      " replica-windows (confidence ",
      OrDash(Number(w, "confidence"), [](double v) { return Fixed(v, 2); }), ")\n",
      "  predicted: ", OrDash(Number(w, "predicted_membw_bytes_per_second"), FormatBytesPerSecond),
      String(w, "membw_estimated", "false") == "true" ? " (estimated from LLC misses)" : "", ", ",
      OrDash(Number(w, "predicted_llc_bytes"), FormatBytes), " of L3\n",
      "  verdict: ", Verdict(w) == "-" ? "not an aggressor" : Verdict(w));
  const std::string since = String(w, "aggressor_since", "");
  if (!since.empty()) absl::StrAppend(&out, " since ", since);
  absl::StrAppend(&out, "\n  last measured: ", String(w, "last_update"), "\n");
  // Issue 22: the fitted demand and sensitivities, and how much data decided them.
  if (const json* fit = Field(w, "interference"); fit != nullptr && fit->is_object()) {
    auto two = [](double v) { return Fixed(v, 2); };
    absl::StrAppend(
        &out, "  needs: ", OrDash(Number(*fit, "llc_demand_bytes"), FormatBytes),
        " of L3 (working set), ",
        OrDash(Number(*fit, "solo_membw_bytes_per_second"), FormatBytesPerSecond), " alone\n",
        "  fitted: cache sensitivity ", OrDash(Number(*fit, "cache_sensitivity"), two),
        ", bandwidth sensitivity ", OrDash(Number(*fit, "membw_sensitivity"), two),
        " (fit confidence ", OrDash(Number(*fit, "fit_confidence"), two), "; baseline IPC ",
        OrDash(Number(*fit, "baseline_ipc"), two), ", MPKI ",
        OrDash(Number(*fit, "baseline_mpki"), two), ")\n");
  }
  absl::StrAppend(&out, "\n");
  std::vector<Row> rows = {{"METRIC", "MEAN", "P95"}};
  const json* metrics = Field(w, "metrics");
  if (metrics != nullptr && metrics->is_object()) {
    for (const auto& [name, m] : metrics->items()) {
      auto format = [&name](double v) {
        if (name.find("bytes_per_second") != std::string::npos) return FormatBytesPerSecond(v);
        if (name.find("bytes") != std::string::npos) return FormatBytes(v);
        return Fixed(v, 2);
      };
      rows.push_back({name, OrDash(Number(m, "mean"), format), OrDash(Number(m, "p95"), format)});
    }
  }
  out += Table(rows);
  return out;
}

}  // namespace neighborly::ctl

// Issue 26: memory pressure and eviction (/v1/nodes/NAME/memory) and who is
// hurting whom (/v1/interference).
namespace neighborly::ctl {
namespace {

std::string SignedBytes(std::optional<double> v) {
  if (!v) return "-";
  return *v < 0 ? absl::StrCat("-", FormatBytes(-*v)) : FormatBytes(*v);
}

std::string IntList(const json* list) {
  if (list == nullptr || !list->is_array() || list->empty()) return "-";
  std::vector<std::string> parts;
  for (const json& v : *list) {
    if (v.is_number_integer()) parts.push_back(absl::StrCat(v.get<int64_t>()));
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace

absl::StatusOr<std::string> RenderNodeMemory(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return absl::InvalidArgumentError("expected a JSON object");
  const json& m = *doc;
  std::string out = absl::StrCat("Node:        ", String(m, "node"), "\n");
  absl::StrAppend(&out, "Capacity:    ", OrDash(Number(m, "capacity_bytes"), FormatBytes), " (",
                  String(m, "capacity_source"), ")\n");
  absl::StrAppend(&out, "Available:   ", OrDash(Number(m, "available_bytes"), FormatBytes),
                  String(m, "under_pressure") == "true" ? "  UNDER MEMORY PRESSURE" : "", "\n");
  if (const json* t = Field(m, "thresholds"); t != nullptr && t->is_array()) {
    for (const json& th : *t) {
      absl::StrAppend(&out, "Threshold:   ", String(th, "kind"), " memory.available<",
                      String(th, "value"), " (", OrDash(Number(th, "bytes"), FormatBytes),
                      ", ", String(th, "source"), "): distance ",
                      SignedBytes(Number(th, "distance_bytes")), "\n");
    }
  }
  absl::StrAppend(&out, "OOM score:   ", String(m, "oom_score_adj_mismatches", "0"),
                  " mismatch(es)\n\nEviction order (the kubelet's, under memory pressure):\n");
  std::vector<Row> rows = {{"#", "POD", "QOS", "PRIO", "WORKING SET", "REQUEST", "LIMIT",
                            "ABOVE REQUEST", "OOM_SCORE_ADJ", "EXPECTED", "CHECK"}};
  std::vector<std::string> notes;
  if (const json* pods = Field(m, "eviction_order"); pods != nullptr && pods->is_array()) {
    for (const json& p : *pods) {
      std::string expected = IntList(Field(p, "expected_oom_score_adj"));
      if (String(p, "expected_is_lower_bound") == "true") expected += "..999";
      const bool mismatch = String(p, "oom_score_adj_mismatch") == "true";
      const std::string pod = absl::StrCat(String(p, "namespace"), "/", String(p, "name"));
      rows.push_back({String(p, "eviction_rank"), pod, String(p, "qos_class"),
                      String(p, "priority"), OrDash(Number(p, "working_set_bytes"), FormatBytes),
                      OrDash(Number(p, "request_bytes"), FormatBytes),
                      OrDash(Number(p, "limit_bytes"), FormatBytes),
                      SignedBytes(Number(p, "usage_above_request_bytes")),
                      IntList(Field(p, "oom_score_adj")), expected,
                      mismatch ? "MISMATCH" : (String(p, "oom_note", "") .empty() ? "ok" : "-")});
      if (mismatch) notes.push_back(absl::StrCat(pod, ": ", String(p, "oom_note")));
    }
  }
  out += Table(rows);
  if (const json* n = Field(m, "notes"); n != nullptr && n->is_array()) {
    for (const json& note : *n) {
      if (note.is_string()) notes.push_back(note.get<std::string>());
    }
  }
  for (const std::string& note : notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

absl::StatusOr<std::string> RenderInterference(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return absl::InvalidArgumentError("expected a JSON object");
  const json& v = *doc;
  std::string out;
  const json* victims = Field(v, "victims");
  if (victims == nullptr || !victims->is_array() || victims->empty()) {
    absl::StrAppend(&out, "No victims: every latency-critical replica runs within its workload's "
                          "CPI baseline (", String(v, "windows_observed", "0"),
                    " windows observed).\n");
  } else {
    std::vector<Row> rows = {{"NODE", "VICTIM", "CPI", "BASELINE", "ABOVE", "SUSPECT", "SCORE",
                              "R(BW)", "R(L3)", "BW", "SHARES"}};
    for (const json& victim : *victims) {
      Row head = {String(victim, "node"), String(victim, "pod"),
                  OrDash(Number(victim, "cpi"), [](double x) { return Fixed(x, 2); }),
                  absl::StrCat(OrDash(Number(victim, "baseline_cpi"),
                                      [](double x) { return Fixed(x, 2); }),
                               "±",
                               OrDash(Number(victim, "baseline_stddev"),
                                      [](double x) { return Fixed(x, 2); })),
                  absl::StrCat(String(victim, "windows_above"), "/",
                               String(victim, "recent_windows"))};
      const json* suspects = Field(victim, "suspects");
      if (suspects == nullptr || !suspects->is_array() || suspects->empty()) {
        Row row = head;
        row.insert(row.end(), {"(none correlated)", "-", "-", "-", "-", "-"});
        rows.push_back(row);
        continue;
      }
      bool first = true;
      for (const json& s : *suspects) {
        Row row = first ? head : Row{"", "", "", "", ""};
        first = false;
        std::string name = String(s, "pod");
        if (String(s, "repeat_antagonist") == "true") name += " (repeat)";
        row.insert(row.end(),
                   {name, OrDash(Number(s, "score"), [](double x) { return Fixed(x, 2); }),
                    OrDash(Number(s, "bandwidth_correlation"), [](double x) { return Fixed(x, 2); }),
                    OrDash(Number(s, "occupancy_correlation"), [](double x) { return Fixed(x, 2); }),
                    OrDash(Number(s, "mean_membw_bytes_per_second"), FormatBytesPerSecond),
                    String(s, "shares")});
        rows.push_back(row);
      }
    }
    out += Table(rows);
  }
  if (const json* repeat = Field(v, "repeat_antagonists");
      repeat != nullptr && repeat->is_array() && !repeat->empty()) {
    std::vector<std::string> names;
    for (const json& r : *repeat) {
      if (r.is_string()) names.push_back(r.get<std::string>());
    }
    absl::StrAppend(&out, "Repeat antagonists (placed as aggressors): ", absl::StrJoin(names, ", "),
                    "\n");
  }
  return out;
}

absl::StatusOr<std::string> RenderAdvice(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return absl::InvalidArgumentError("expected a JSON object");
  const json& a = *doc;
  std::string out = absl::StrCat("Workload: ", String(a, "workload"), " (",
                                 String(a, "replicas"), " replica(s), ",
                                 String(a, "contention_class"), ")",
                                 String(a, "victim") == "true" ? ", a replica is a victim now" : "",
                                 "\n\n");
  std::vector<Row> rows = {{"LAYER", "NEEDED", "IN PLACE", "WHY", "COST"}};
  if (const json* layers = Field(a, "layers"); layers != nullptr && layers->is_array()) {
    for (const json& l : *layers) {
      rows.push_back({String(l, "layer"), String(l, "needed") == "true" ? "yes" : "no",
                      String(l, "present") == "true" ? "yes" : "no", String(l, "why"),
                      String(l, "cost")});
    }
  }
  out += Table(rows);
  if (const json* n = Field(a, "notes"); n != nullptr && n->is_array()) {
    for (const json& note : *n) {
      if (note.is_string()) absl::StrAppend(&out, "note: ", note.get<std::string>(), "\n");
    }
  }
  const std::string patch = String(a, "patch", "");
  absl::StrAppend(&out, patch.empty() ? "\nNo change to its pod template.\n"
                                      : absl::StrCat("\nPatch:\n", patch));
  return out;
}

absl::StatusOr<std::string> RenderRebalance(std::string_view body) {
  absl::StatusOr<json> doc = Parse(body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<json> list = List(*doc, "proposals");
  if (!list.ok()) return list.status();
  if (list->empty()) {
    return std::string("No moves proposed: no victim has persisted long enough.\n");
  }
  std::string out;
  for (const json& m : *list) {
    absl::StrAppend(&out, "Victim ", String(m, "victim"), " on ", String(m, "victim_node"), " (",
                    String(m, "persisting_windows"), " windows)\n  move ", String(m, "move"),
                    ": ", String(m, "from_node"), " -> ", String(m, "to_node", "(no node)"),
                    "\n  why: ", String(m, "why"), "\n");
    if (const json* refused = Field(m, "refused"); refused != nullptr && refused->is_array()) {
      for (const json& r : *refused) {
        if (r.is_string()) absl::StrAppend(&out, "  not ", r.get<std::string>(), "\n");
      }
    }
  }
  absl::StrAppend(&out,
                  "Advice only: the extender evicts nothing; neighborly-rebalancer acts on it "
                  "where enabled (docs/operations.md, \"Rebalancing\").\n");
  return out;
}

}  // namespace neighborly::ctl
