#include "common/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace neighborly {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// HELP text: backslash and newline escaped (quotes stay as they are).
std::string HelpText(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string PrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PrometheusNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";                            // also -0
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kExactIntegers && std::trunc(value) == value) {
    return absl::StrCat(static_cast<int64_t>(value));  // 11200000000, not 1.12e+10
  }
  char buf[32];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip
  return std::string(buf, static_cast<size_t>(ptr - buf));
}

bool IsPrometheusMetricName(std::string_view name) {
  if (name.empty() || !(IsLetter(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsLetter(c) && !IsDigit(c) && c != ':') return false;
  }
  return true;
}

bool IsPrometheusLabelName(std::string_view name) {
  if (name.empty() || !IsLetter(name[0]) || name.starts_with("__")) return false;
  for (char c : name) {
    if (!IsLetter(c) && !IsDigit(c)) return false;
  }
  return true;
}

PrometheusWriter::Family* PrometheusWriter::FamilyFor(std::string_view name, std::string_view type,
                                                      std::string_view help) {
  if (!IsPrometheusMetricName(name)) {
    problems_.push_back(absl::StrCat("\"", Av(name), "\" is not a valid metric name"));
    return nullptr;
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{std::string(type), std::string(help), {}})
             .first;
  } else if (it->second.type != type) {
    problems_.push_back(absl::StrCat(Av(name), " is a ", it->second.type, ", not a ", Av(type)));
    return nullptr;
  } else if (it->second.help != help) {
    problems_.push_back(absl::StrCat(Av(name), " has two HELP texts"));
    return nullptr;
  }
  return &it->second;
}

bool PrometheusWriter::LabelSet(std::string_view name, const Labels& labels, std::string& out) {
  std::set<std::string_view> seen;
  out.clear();
  for (const auto& [label, value] : labels) {
    if (!IsPrometheusLabelName(label)) {
      problems_.push_back(
          absl::StrCat(Av(name), ": \"", Av(label), "\" is not a valid label name"));
      return false;
    }
    if (!seen.insert(label).second) {
      problems_.push_back(absl::StrCat(Av(name), ": label ", Av(label), " given twice"));
      return false;
    }
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, Av(label), "=\"", PrometheusLabelValue(value), "\"");
  }
  return true;
}

void PrometheusWriter::Sample(std::string_view name, std::string_view type, std::string_view help,
                              const Labels& labels, double value) {
  Family* family = FamilyFor(name, type, help);
  std::string key;
  if (family == nullptr || !LabelSet(name, labels, key)) return;
  std::string line(name);
  if (!key.empty()) absl::StrAppend(&line, "{", key, "}");
  absl::StrAppend(&line, " ", PrometheusNumber(value), "\n");
  if (!family->series.emplace(key, std::move(line)).second) {
    problems_.push_back(
        absl::StrCat(Av(name), key.empty() ? "" : absl::StrCat("{", key, "}"), " given twice"));
  }
}

void PrometheusWriter::Counter(std::string_view name, std::string_view help, const Labels& labels,
                               double value) {
  Sample(name, "counter", help, labels, value);
}

void PrometheusWriter::Gauge(std::string_view name, std::string_view help, const Labels& labels,
                             double value) {
  Sample(name, "gauge", help, labels, value);
}

void PrometheusWriter::Declare(std::string_view name, std::string_view type,
                               std::string_view help) {
  if (type != "counter" && type != "gauge" && type != "histogram") {
    problems_.push_back(absl::StrCat(Av(name), ": unknown type \"", Av(type), "\""));
    return;
  }
  FamilyFor(name, type, help);
}

void PrometheusWriter::Histogram(std::string_view name, std::string_view help, const Labels& labels,
                                 std::span<const double> upper_bounds,
                                 std::span<const uint64_t> counts, double sum) {
  Family* family = FamilyFor(name, "histogram", help);
  std::string key;
  if (family == nullptr || !LabelSet(name, labels, key)) return;
  for (const auto& [label, value] : labels) {
    if (label == "le") {
      problems_.push_back(absl::StrCat(Av(name), ": le is the histogram's own label"));
      return;
    }
  }
  if (counts.size() != upper_bounds.size() && counts.size() != upper_bounds.size() + 1) {
    problems_.push_back(absl::StrCat(Av(name), ": ", counts.size(), " counts for ",
                                     upper_bounds.size(), " bucket bounds"));
    return;
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (std::isnan(upper_bounds[i]) || (i > 0 && upper_bounds[i] <= upper_bounds[i - 1])) {
      problems_.push_back(absl::StrCat(Av(name), ": bucket bounds must increase"));
      return;
    }
  }
  const std::string prefix = key.empty() ? std::string("{") : absl::StrCat("{", key, ",");
  const std::string suffix = key.empty() ? std::string() : absl::StrCat("{", key, "}");
  std::string lines;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (std::isinf(upper_bounds[i]) && upper_bounds[i] > 0) break;  // +Inf is written below
    cumulative += counts[i];
    absl::StrAppend(&lines, Av(name), "_bucket", prefix, "le=\"", PrometheusNumber(upper_bounds[i]),
                    "\"} ", cumulative, "\n");
  }
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  absl::StrAppend(&lines, Av(name), "_bucket", prefix, "le=\"+Inf\"} ", total, "\n");
  absl::StrAppend(&lines, Av(name), "_sum", suffix, " ", PrometheusNumber(sum), "\n");
  absl::StrAppend(&lines, Av(name), "_count", suffix, " ", total, "\n");
  if (!family->series.emplace(key, std::move(lines)).second) {
    problems_.push_back(
        absl::StrCat(Av(name), key.empty() ? "" : absl::StrCat("{", key, "}"), " given twice"));
  }
}

std::string PrometheusWriter::Render() const {
  std::string out;
  for (const auto& [name, family] : families_) {
    if (family.series.empty()) continue;
    absl::StrAppend(&out, "# HELP ", name, " ", HelpText(family.help), "\n# TYPE ", name, " ",
                    family.type, "\n");
    for (const auto& [key, lines] : family.series) out += lines;
  }
  return out;
}

}  // namespace neighborly
