#include "extender/src/state/workload_store.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "nlohmann/json.hpp"

namespace neighborly::extender {
namespace {

int64_t TimeToJson(absl::Time t) {
  return t == absl::InfinitePast() ? INT64_MIN : absl::ToUnixNanos(t);
}
absl::Time TimeFromJson(int64_t ns) {
  return ns == INT64_MIN ? absl::InfinitePast() : absl::FromUnixNanos(ns);
}

}  // namespace

WorkloadStore::WorkloadStore(size_t capacity)
    : capacity_(std::max<size_t>(1, capacity)),
      // Small stores keep one exact LRU order; large ones spread the locks.
      shard_count_(capacity_ >= 1024 ? kMaxShards : 1),
      shard_capacity_((capacity_ + shard_count_ - 1) / shard_count_) {}

WorkloadStore::Shard& WorkloadStore::ShardOf(std::string_view key) const {
  return shards_[std::hash<std::string_view>()(key) % shard_count_];
}

void WorkloadStore::Observe(std::string_view key, const WorkloadObservation& observation,
                            uint64_t node_hash, absl::Time now, const ModelConfig& config) {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.by_key.find(Av(key));
  if (it == shard.by_key.end()) {
    if (shard.lru.size() >= shard_capacity_) {
      shard.by_key.erase(shard.lru.back().key);
      shard.lru.pop_back();
    }
    shard.lru.push_front(Entry{std::string(key), {}});
    it = shard.by_key.emplace(shard.lru.front().key, shard.lru.begin()).first;
  } else {
    shard.lru.splice(shard.lru.begin(), shard.lru, it->second);
  }
  it->second->profile.Add(observation, node_hash, now, config);
}

std::optional<WorkloadPrediction> WorkloadStore::Predict(std::string_view key, absl::Time now,
                                                         const ModelConfig& config,
                                                         bool count_use) const {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.by_key.find(Av(key));
  if (it == shard.by_key.end()) return std::nullopt;
  shard.lru.splice(shard.lru.begin(), shard.lru, it->second);  // a use keeps it
  if (count_use) used_.fetch_add(1, std::memory_order_relaxed);
  return it->second->profile.Predict(now, config);
}

std::optional<WorkloadStore::Verdict> WorkloadStore::VerdictOf(std::string_view key) const {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.by_key.find(Av(key));
  if (it == shard.by_key.end()) return std::nullopt;
  const WorkloadProfile& p = it->second->profile;
  return Verdict{p.aggressor(), p.aggressor_why()};
}

bool WorkloadStore::MarkAntagonist(std::string_view key, std::string why, absl::Time now) {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.by_key.find(Av(key));
  if (it == shard.by_key.end()) return false;
  WorkloadProfile& p = it->second->profile;
  if (p.aggressor() && p.aggressor_why() == why) return true;
  p.MarkAntagonist(std::move(why), now);
  return true;
}

WorkloadView WorkloadStore::ViewOf(const Entry& e, absl::Time now,
                                   const ModelConfig& config) const {
  WorkloadView v;
  v.key = e.key;
  v.prediction = e.profile.Predict(now, config);
  for (int m = 0; m < kWorkloadMetrics; ++m) {
    v.metrics[m] = e.profile.Summary(static_cast<WorkloadMetric>(m), config);
  }
  v.last_update = e.profile.last_update();
  v.aggressor_since = e.profile.aggressor() ? e.profile.aggressor_since() : absl::InfinitePast();
  return v;
}

std::vector<WorkloadView> WorkloadStore::List(absl::Time now, const ModelConfig& config) const {
  std::vector<WorkloadView> out;
  for (size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    for (const Entry& e : shards_[i].lru) out.push_back(ViewOf(e, now, config));
  }
  std::sort(out.begin(), out.end(),
            [](const WorkloadView& a, const WorkloadView& b) { return a.key < b.key; });
  return out;
}

std::optional<WorkloadView> WorkloadStore::Get(std::string_view key, absl::Time now,
                                               const ModelConfig& config) const {
  Shard& shard = ShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.by_key.find(Av(key));
  if (it == shard.by_key.end()) return std::nullopt;
  return ViewOf(*it->second, now, config);
}

size_t WorkloadStore::size() const {
  size_t n = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    n += shards_[i].lru.size();
  }
  return n;
}

std::string WorkloadStore::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    // Least recently used first: FromJson replays in order, so the LRU order survives.
    for (auto it = shards_[i].lru.rbegin(); it != shards_[i].lru.rend(); ++it) {
      const WorkloadProfile::Saved s = it->profile.Save();
      nlohmann::json stats = nlohmann::json::array();
      for (const DecayedStat& stat : s.stats) {
        nlohmann::json buckets = nlohmann::json::array();
        for (float b : stat.buckets()) buckets.push_back(b);
        nlohmann::json sums = nlohmann::json::array();
        for (float b : stat.sums()) sums.push_back(b);
        stats.push_back(
            {{"buckets", std::move(buckets)}, {"sums", std::move(sums)}, {"mean", stat.Mean()}});
      }
      nlohmann::json nodes = nlohmann::json::array();
      for (const auto& [hash, weight] : s.nodes) {
        if (weight > 0) nodes.push_back({hash, weight});
      }
      out.push_back({{"key", it->key},
                     {"origin_unix_ns", TimeToJson(s.origin)},
                     {"last_update_unix_ns", TimeToJson(s.last_update)},
                     {"windows_weight", s.windows_weight},
                     {"membw_estimated_weight", s.membw_estimated_weight},
                     {"stats", std::move(stats)},
                     {"peak_membw_share", s.peak_membw_share},
                     {"peak_membw_at_unix_ns", TimeToJson(s.peak_membw_at)},
                     {"peak_l3_share", s.peak_l3_share},
                     {"peak_l3_at_unix_ns", TimeToJson(s.peak_l3_at)},
                     {"aggressor", s.aggressor},
                     {"aggressor_why", s.aggressor_why},
                     {"aggressor_since_unix_ns", TimeToJson(s.aggressor_since)},
                     {"last_above_unix_ns", TimeToJson(s.last_above)},
                     {"nodes", std::move(nodes)},
                     {"fit", s.fit}});
    }
  }
  return out.dump();
}

absl::Status WorkloadStore::FromJson(std::string_view json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::DataLossError("workloads: not valid JSON");
  if (!doc.is_array()) return absl::DataLossError("workloads: not an array");
  std::vector<Entry> entries;
  size_t index = 0;
  for (const nlohmann::json& w : doc) {
    const std::string where = absl::StrCat("workloads[", index++, "]");
    auto bad = [&](std::string_view what) {
      return absl::DataLossError(absl::StrCat(where, ": ", Av(what)));
    };
    if (!w.is_object()) return bad("not an object");
    auto number = [&](const char* key, double& out) {
      auto it = w.find(key);
      if (it == w.end() || !it->is_number()) return false;
      out = it->get<double>();
      return std::isfinite(out) && out >= 0;
    };
    auto time = [&](const char* key, absl::Time& out) {
      auto it = w.find(key);
      if (it == w.end() || !it->is_number_integer()) return false;
      out = TimeFromJson(it->get<int64_t>());
      return true;
    };
    WorkloadProfile::Saved s;
    auto key = w.find("key");
    if (key == w.end() || !key->is_string() || key->get<std::string>().empty()) {
      return bad("key missing");
    }
    if (!number("windows_weight", s.windows_weight) ||
        !number("membw_estimated_weight", s.membw_estimated_weight) ||
        !number("peak_membw_share", s.peak_membw_share) ||
        !number("peak_l3_share", s.peak_l3_share) || !time("origin_unix_ns", s.origin) ||
        !time("last_update_unix_ns", s.last_update) ||
        !time("peak_membw_at_unix_ns", s.peak_membw_at) ||
        !time("peak_l3_at_unix_ns", s.peak_l3_at) ||
        !time("aggressor_since_unix_ns", s.aggressor_since) ||
        !time("last_above_unix_ns", s.last_above)) {
      return bad("a number or time is missing or malformed");
    }
    auto aggressor = w.find("aggressor");
    auto why = w.find("aggressor_why");
    if (aggressor == w.end() || !aggressor->is_boolean() || why == w.end() || !why->is_string()) {
      return bad("aggressor verdict missing");
    }
    s.aggressor = aggressor->get<bool>();
    s.aggressor_why = why->get<std::string>();
    // The interference fit's sums (issue 22; absent in older state files).
    if (auto fit = w.find("fit"); fit != w.end()) {
      if (!fit->is_array() || fit->size() != s.fit.size()) return bad("fit malformed");
      for (size_t i = 0; i < s.fit.size(); ++i) {
        if (!(*fit)[i].is_number()) return bad("fit malformed");
        s.fit[i] = (*fit)[i].get<double>();
        if (!std::isfinite(s.fit[i])) return bad("fit malformed");
      }
    }
    auto stats = w.find("stats");
    if (stats == w.end() || !stats->is_array() || stats->size() != kWorkloadMetrics) {
      return bad(absl::StrCat("stats must be an array of ", kWorkloadMetrics));
    }
    for (int m = 0; m < kWorkloadMetrics; ++m) {
      const nlohmann::json& st = (*stats)[m];
      std::array<float, DecayedStat::kBuckets> restored{}, sums{};
      for (const auto& [name, out] :
           {std::pair<const char*, std::array<float, DecayedStat::kBuckets>*>{"buckets", &restored},
            {"sums", &sums}}) {
        auto it = st.find(name);
        if (!st.is_object() || it == st.end() || !it->is_array() ||
            it->size() != DecayedStat::kBuckets) {
          return bad(absl::StrCat("stats[", m, "].", name, " malformed"));
        }
        for (int b = 0; b < DecayedStat::kBuckets; ++b) {
          const nlohmann::json& v = (*it)[b];
          if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
              v.get<double>() > 1e30) {
            return bad(absl::StrCat("stats[", m, "].", name, "[", b, "] malformed"));
          }
          (*out)[b] = static_cast<float>(v.get<double>());
        }
      }
      auto mean = st.find("mean");
      if (mean == st.end() || !mean->is_number() || !std::isfinite(mean->get<double>()) ||
          mean->get<double>() < 0) {
        return bad(absl::StrCat("stats[", m, "].mean malformed"));
      }
      s.stats[m] = DecayedStat::Restore(restored, sums, mean->get<double>());
    }
    auto nodes = w.find("nodes");
    if (nodes == w.end() || !nodes->is_array() || nodes->size() > s.nodes.size()) {
      return bad("nodes malformed");
    }
    for (size_t n = 0; n < nodes->size(); ++n) {
      const nlohmann::json& pair = (*nodes)[n];
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() ||
          !pair[1].is_number()) {
        return bad("nodes malformed");
      }
      s.nodes[n] = {pair[0].get<uint64_t>(), pair[1].get<double>()};
    }
    entries.push_back(Entry{key->get<std::string>(), WorkloadProfile::Restore(s)});
  }
  for (size_t i = 0; i < shard_count_; ++i) {
    std::lock_guard<std::mutex> lock(shards_[i].mu);
    shards_[i].lru.clear();
    shards_[i].by_key.clear();
  }
  for (Entry& e : entries) {
    Shard& shard = ShardOf(e.key);
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.by_key.contains(e.key)) continue;
    if (shard.lru.size() >= shard_capacity_) {
      shard.by_key.erase(shard.lru.back().key);
      shard.lru.pop_back();
    }
    shard.lru.push_front(std::move(e));
    shard.by_key.emplace(shard.lru.front().key, shard.lru.begin());
  }
  return absl::OkStatus();
}

}  // namespace neighborly::extender
