#include "extender/src/state/pod_registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "nlohmann/json.hpp"

namespace neighborly::extender {
namespace {

constexpr int kFormatVersion = 1;

std::optional<ClassSource> ParseClassSource(std::string_view s) {
  for (ClassSource c : {ClassSource::kAnnotation, ClassSource::kLabelRule, ClassSource::kMeasured,
                        ClassSource::kRemembered, ClassSource::kOwner, ClassSource::kQos,
                        ClassSource::kDefault}) {
    if (ClassSourceName(c) == s) return c;
  }
  return std::nullopt;
}

absl::Status ErrnoStatus(std::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(Av(what), " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

PodRegistry::PodRegistry(size_t capacity, size_t max_per_owner)
    : capacity_(capacity == 0 ? 1 : capacity),
      shard_count_(std::clamp<size_t>(capacity_ / kMinPerShard, 1, kMaxShards)),
      shard_capacity_((capacity_ + shard_count_ - 1) / shard_count_),
      shard_owner_quota_(
          max_per_owner == SIZE_MAX
              ? SIZE_MAX
              : std::max<size_t>(1, (max_per_owner + shard_count_ - 1) / shard_count_)) {}

PodRegistry::Shard& PodRegistry::ShardOf(std::string_view uid) const {
  return shards_[shard_count_ == 1 ? 0 : std::hash<std::string_view>()(uid) % shard_count_];
}

uint32_t PodRegistry::OwnerId(std::string_view owner) {
  std::lock_guard<std::mutex> lock(owners_mu_);
  auto it = owner_ids_.find(Av(owner));
  if (it != owner_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(owner_names_.size());
  owner_names_.emplace_back(owner);
  owner_ids_.emplace(owner_names_.back(), id);
  return id;
}

std::string_view PodRegistry::OwnerName(uint32_t id) const {
  std::lock_guard<std::mutex> lock(owners_mu_);
  return id < owner_names_.size() ? std::string_view(owner_names_[id]) : std::string_view();
}

void PodRegistry::EvictOldestLocked(Shard& shard, uint32_t owner) {
  auto it = shard.by_owner.find(owner);
  if (it == shard.by_owner.end() || it->second.empty()) return;
  shard.by_uid.erase(it->second.back().uid);
  it->second.pop_back();
  --shard.size;
  if (it->second.empty()) shard.by_owner.erase(it);
}

void PodRegistry::InsertLocked(Shard& shard, Entry entry) {
  if (auto it = shard.by_uid.find(entry.uid); it != shard.by_uid.end()) {
    Entry& e = *it->second;
    e.pod = entry.pod;
    e.last_seen = entry.last_seen;
    if (e.owner == entry.owner) {
      Lru& lru = shard.by_owner[e.owner];
      lru.splice(lru.begin(), lru, it->second);
      return;
    }
    // Taught by a new owner: move it to that owner's partition.
    Lru& to = shard.by_owner[entry.owner];  // may rehash: find `from` after it
    auto from = shard.by_owner.find(e.owner);
    e.owner = entry.owner;
    to.splice(to.begin(), from->second, it->second);
    if (from->second.empty()) shard.by_owner.erase(from);
    while (entry.owner != 0 && to.size() > shard_owner_quota_) {
      EvictOldestLocked(shard, entry.owner);
    }
    return;
  }
  const uint32_t owner = entry.owner;
  Lru& lru = shard.by_owner[owner];
  if (owner != 0 && lru.size() >= shard_owner_quota_) {
    EvictOldestLocked(shard, owner);  // a node's full partition forgets its own
  } else if (shard.size >= shard_capacity_) {
    const size_t fair = std::max<size_t>(1, shard_capacity_ / shard.by_owner.size());
    uint32_t victim = owner;
    if (lru.size() < fair) {
      size_t most = 0;
      for (const auto& [id, list] : shard.by_owner) {
        if (list.size() > most) {
          most = list.size();
          victim = id;
        }
      }
    }
    EvictOldestLocked(shard, victim);
  }
  Lru& target = shard.by_owner[owner];  // EvictOldestLocked may have erased it
  target.push_front(std::move(entry));
  shard.by_uid.emplace(target.front().uid, target.begin());
  ++shard.size;
}

void PodRegistry::Remember(std::string_view uid, const RememberedPod& pod, absl::Time now) {
  Remember(kScheduler, uid, pod, now);
}

void PodRegistry::Remember(std::string_view owner, std::string_view uid, const RememberedPod& pod,
                           absl::Time now) {
  if (uid.empty()) return;
  const uint32_t owner_id = OwnerId(owner);
  Shard& shard = ShardOf(uid);
  std::unique_lock lock(shard.mu);
  InsertLocked(shard, Entry{std::string(uid), pod, now, owner_id});
}

std::optional<RememberedPod> PodRegistry::Lookup(std::string_view uid) const {
  return Lookup(uid, nullptr);
}

std::optional<RememberedPod> PodRegistry::Lookup(std::string_view uid,
                                                 std::string_view* owner) const {
  const Shard& shard = ShardOf(uid);
  uint32_t owner_id = 0;
  std::optional<RememberedPod> out;
  {
    std::shared_lock lock(shard.mu);
    auto it = shard.by_uid.find(Av(uid));
    if (it == shard.by_uid.end()) return std::nullopt;
    out = it->second->pod;
    owner_id = it->second->owner;
  }
  if (owner != nullptr) *owner = OwnerName(owner_id);
  return out;
}

void PodRegistry::LookupMany(const std::vector<std::string_view>& uids,
                             std::vector<std::optional<RememberedPod>>& out,
                             std::vector<std::string_view>* owners) const {
  out.assign(uids.size(), std::nullopt);
  std::vector<uint32_t> owner_ids(owners != nullptr ? uids.size() : 0, 0);
  // One short hold per UID: never one lock across a whole report.
  for (size_t i = 0; i < uids.size(); ++i) {
    const Shard& shard = ShardOf(uids[i]);
    std::shared_lock lock(shard.mu);
    auto it = shard.by_uid.find(Av(uids[i]));
    if (it == shard.by_uid.end()) continue;
    out[i] = it->second->pod;
    if (owners != nullptr) owner_ids[i] = it->second->owner;
  }
  if (owners == nullptr) return;
  owners->assign(uids.size(), std::string_view());
  std::lock_guard<std::mutex> lock(owners_mu_);
  for (size_t i = 0; i < uids.size(); ++i) {
    if (out[i]) (*owners)[i] = owner_names_[owner_ids[i]];
  }
}

size_t PodRegistry::size() const {
  size_t n = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    std::shared_lock lock(shards_[i].mu);
    n += shards_[i].size;
  }
  return n;
}

size_t PodRegistry::size_of(std::string_view owner) const {
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(owners_mu_);
    auto it = owner_ids_.find(Av(owner));
    if (it == owner_ids_.end()) return 0;
    id = it->second;
  }
  size_t n = 0;
  for (size_t i = 0; i < shard_count_; ++i) {
    std::shared_lock lock(shards_[i].mu);
    auto it = shards_[i].by_owner.find(id);
    if (it != shards_[i].by_owner.end()) n += it->second.size();
  }
  return n;
}

absl::Status PodRegistry::Save(const std::string& path, const StateSections& sections) const {
  // Copy under the lock, serialise without it: Remember() (on the scheduler's
  // request path) waits for the copy only, not for JSON encoding and disk I/O.
  std::vector<Entry> entries;
  for (size_t i = 0; i < shard_count_; ++i) {
    std::shared_lock lock(shards_[i].mu);
    for (const auto& [owner, lru] : shards_[i].by_owner) {
      entries.insert(entries.end(), lru.rbegin(), lru.rend());
    }
  }
  // Oldest first, across shards: Load replays in order.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.last_seen < b.last_seen; });
  nlohmann::json pods = nlohmann::json::array();
  for (const Entry& e : entries) {
    nlohmann::json p = {{"uid", e.uid},
                        {"class", std::string(ContentionClassName(e.pod.contention_class))},
                        {"source", std::string(ClassSourceName(e.pod.source))},
                        {"last_seen_unix_ns", absl::ToUnixNanos(e.last_seen)}};
    if (!e.pod.workload.empty()) p["workload"] = e.pod.workload;
    if (e.owner != 0) p["node"] = std::string(OwnerName(e.owner));
    if (e.pod.hints.llc_bytes) p["llc_bytes"] = *e.pod.hints.llc_bytes;
    if (e.pod.hints.membw_bytes_per_second) {
      p["membw_bytes_per_second"] = *e.pod.hints.membw_bytes_per_second;
    }
    pods.push_back(std::move(p));
  }
  nlohmann::json doc{{"version", kFormatVersion}, {"pods", std::move(pods)}};
  for (const auto& [name, json] : sections) {
    nlohmann::json section = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (section.is_discarded() || name == "version" || name == "pods") {
      return absl::InternalError(absl::StrCat("state section \"", name, "\" is not valid JSON"));
    }
    doc[name] = std::move(section);
  }
  const std::string data = doc.dump() + "\n";

  // The temporary is always a new file of ours (issue 24): O_EXCL|O_NOFOLLOW
  // never writes through a symlink someone put there (nor opens a FIFO,
  // which blocked every save), and whatever is in the way (a leftover of this
  // pid, a symlink, a FIFO) is unlinked, never followed, and the create tried
  // once more.
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  constexpr int kCreate = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), kCreate, 0644);
  if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0) {
    fd = ::open(tmp.c_str(), kCreate, 0644);
  }
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  absl::Status status = WriteAll(fd, data, tmp);
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoStatus("cannot fsync", tmp);
  if (::close(fd) != 0 && status.ok()) status = ErrnoStatus("cannot close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoStatus(absl::StrCat("cannot rename ", tmp, " to"), path);
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);  // best effort: the rename is already visible
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

absl::Status PodRegistry::Load(const std::string& path, StateSections* sections) {
  std::error_code ec;
  // Temporaries of writers killed mid-save ("<file>.tmp.<pid>") are never
  // renamed; remove them so that crash loops do not fill the disk.
  const std::filesystem::path file(path);
  const std::string tmp_prefix = file.filename().string() + ".tmp.";
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code ignored;
    if (it->path().filename().string().starts_with(tmp_prefix)) {
      std::filesystem::remove(it->path(), ignored);
    }
  }
  ec.clear();
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) return absl::OkStatus();  // nothing yet
  // Opening a FIFO would wait for a writer forever; a directory or device is
  // no state file either.
  if (!ec && st.type() != std::filesystem::file_type::regular) {
    return absl::FailedPreconditionError(
        absl::StrCat("pod registry file ", path, " is not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus("cannot open pod registry file", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto corrupt = [&](std::string_view why) {
    return absl::DataLossError(
        absl::StrCat("pod registry file ", path, " is corrupt (", Av(why), ")"));
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    return corrupt(e.what());
  }
  if (!doc.is_object() || !doc.contains("version") || !doc["version"].is_number_integer()) {
    return corrupt("no integer \"version\"");
  }
  if (doc["version"].get<int64_t>() != kFormatVersion) {
    return corrupt(absl::StrCat("unsupported version ", doc["version"].get<int64_t>()));
  }
  if (!doc.contains("pods") || !doc["pods"].is_array()) return corrupt("no \"pods\" array");
  std::vector<Entry> entries;
  entries.reserve(doc["pods"].size());
  size_t i = 0;
  for (const nlohmann::json& p : doc["pods"]) {
    const std::string where = absl::StrCat("pods[", i++, "]");
    if (!p.is_object()) return corrupt(absl::StrCat(where, " is not an object"));
    auto str = [&](const char* key) -> std::optional<std::string> {
      auto it = p.find(key);
      if (it == p.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto int64 = [&](const char* key, std::optional<int64_t>& out) -> bool {
      auto it = p.find(key);
      if (it == p.end()) return true;
      if (!it->is_number_integer()) return false;
      out = it->get<int64_t>();
      return *out >= 0 || std::string_view(key) == "last_seen_unix_ns";
    };
    Entry e;
    std::optional<std::string> uid = str("uid"), cls = str("class"), source = str("source");
    std::optional<std::string> node = str("node");
    if (p.contains("node") && (!node || node->empty() || node->size() > 253)) {
      return corrupt(absl::StrCat(where, ".node invalid"));
    }
    if (!uid || uid->empty()) return corrupt(absl::StrCat(where, ".uid missing"));
    std::optional<ContentionClass> c = cls ? ParseContentionClass(*cls) : std::nullopt;
    if (!c) return corrupt(absl::StrCat(where, ".class invalid"));
    std::optional<ClassSource> s = source ? ParseClassSource(*source) : std::nullopt;
    if (!s) return corrupt(absl::StrCat(where, ".source invalid"));
    std::optional<int64_t> last_seen;
    if (!int64("llc_bytes", e.pod.hints.llc_bytes) ||
        !int64("membw_bytes_per_second", e.pod.hints.membw_bytes_per_second) ||
        !int64("last_seen_unix_ns", last_seen)) {
      return corrupt(absl::StrCat(where, " has a malformed number"));
    }
    if (auto it = p.find("workload"); it != p.end()) {
      if (!it->is_string()) return corrupt(absl::StrCat(where, ".workload is not a string"));
      e.pod.workload = it->get<std::string>();
    }
    e.uid = *std::move(uid);
    e.pod.contention_class = *c;
    e.pod.source = *s;
    e.last_seen = absl::FromUnixNanos(last_seen.value_or(0));
    if (node) e.owner = OwnerId(*node);
    entries.push_back(std::move(e));
  }
  if (sections != nullptr) {
    sections->clear();
    for (const auto& [name, value] : doc.items()) {
      if (name != "version" && name != "pods") (*sections)[name] = value.dump();
    }
  }
  for (size_t k = 0; k < shard_count_; ++k) {
    std::unique_lock lock(shards_[k].mu);
    shards_[k].by_owner.clear();
    shards_[k].by_uid.clear();
    shards_[k].size = 0;
  }
  for (Entry& e : entries) {
    Shard& shard = ShardOf(e.uid);
    std::unique_lock lock(shard.mu);
    InsertLocked(shard, std::move(e));
  }
  return absl::OkStatus();
}

}  // namespace neighborly::extender
