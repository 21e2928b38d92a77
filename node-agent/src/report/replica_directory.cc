#include "node-agent/src/report/replica_directory.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

std::chrono::nanoseconds ToChrono(absl::Duration d) {
  return std::chrono::nanoseconds(absl::ToInt64Nanoseconds(d));
}

std::vector<std::string> Minus(const std::vector<std::string>& a,
                               const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaDirectory>> ReplicaDirectory::Create(
    Options options, std::unique_ptr<AddressResolver> resolver) {
  if (options.targets.empty()) return absl::InvalidArgumentError("no extender target");
  std::vector<Target> targets;
  for (const std::string& text : options.targets) {
    absl::StatusOr<HostPort> hp = ParseHostPort(text);
    if (!hp.ok() || hp->host.empty() || hp->port == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("extender target \"", text, "\" is not HOST:PORT with a non-zero port"));
    }
    Target t{.text = text, .host_port = *hp, .addresses = {}, .stats = {}};
    t.stats.target = text;
    targets.push_back(std::move(t));
  }
  return std::unique_ptr<ReplicaDirectory>(
      new ReplicaDirectory(std::move(options), std::move(targets), std::move(resolver)));
}

ReplicaDirectory::ReplicaDirectory(Options options, std::vector<Target> targets,
                                   std::unique_ptr<AddressResolver> resolver)
    : options_(std::move(options)), resolver_(std::move(resolver)), targets_(std::move(targets)) {}

ReplicaDirectory::~ReplicaDirectory() { Stop(); }

void ReplicaDirectory::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || stopping_) return;
    started_ = true;
  }
  ResolveAll();
  worker_ = std::thread([this] { Run(); });
}

void ReplicaDirectory::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void ReplicaDirectory::ResolveSoon() {
  std::lock_guard<std::mutex> lock(mu_);
  soon_ = true;
  cv_.notify_all();
}

std::vector<Replica> ReplicaDirectory::Replicas() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ReplicasLocked();
}

std::vector<Replica> ReplicaDirectory::ReplicasLocked() const {
  std::vector<Replica> out;
  for (const Target& t : targets_) {
    const std::string server_name = IsIpLiteral(t.host_port.host) ? "" : t.host_port.host;
    for (const std::string& address : t.addresses) {
      out.push_back({.target = t.text, .address = address, .server_name = server_name});
    }
  }
  std::sort(out.begin(), out.end(), [](const Replica& a, const Replica& b) {
    return std::tie(a.target, a.address) < std::tie(b.target, b.address);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<ReplicaDirectory::TargetStats> ReplicaDirectory::target_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TargetStats> out;
  for (const Target& t : targets_) out.push_back(t.stats);
  return out;
}

uint64_t ReplicaDirectory::Subscribe(Listener listener) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  const uint64_t id = next_listener_++;
  listener(Replicas());
  listeners_.emplace(id, std::move(listener));
  return id;
}

void ReplicaDirectory::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.erase(id);
}

void ReplicaDirectory::ResolveAll() {
  std::vector<HostPort> hosts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Target& t : targets_) hosts.push_back(t.host_port);
  }
  // getaddrinfo may block on DNS for seconds: no lock held meanwhile.
  std::vector<absl::StatusOr<std::vector<std::string>>> results;
  for (const HostPort& hp : hosts) results.push_back(resolver_->Resolve(hp));

  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_resolve_ = std::chrono::steady_clock::now();
    for (size_t i = 0; i < targets_.size(); ++i) {
      Target& t = targets_[i];
      ++t.stats.resolves;
      if (!results[i].ok()) {
        ++t.stats.resolve_failures;
        const std::string error(results[i].status().message());
        if (error != t.stats.last_error) {
          spdlog::warn("extender target {}: {}; keeping its {} known replica(s)", t.text, error,
                       t.addresses.size());
        }
        t.stats.last_error = error;
        continue;
      }
      if (!t.stats.last_error.empty()) {
        spdlog::info("extender target {} resolves again", t.text);
        t.stats.last_error.clear();
      }
      std::vector<std::string>& now = *results[i];
      std::sort(now.begin(), now.end());
      now.erase(std::unique(now.begin(), now.end()), now.end());
      if (now == t.addresses) continue;
      const std::vector<std::string> added = Minus(now, t.addresses);
      const std::vector<std::string> removed = Minus(t.addresses, now);
      spdlog::info("extender target {}: {} replica(s) [{}]{}{}", t.text, now.size(),
                   absl::StrJoin(now, ", "),
                   added.empty() || t.addresses.empty()
                       ? ""
                       : absl::StrCat("; added ", absl::StrJoin(added, ", ")),
                   removed.empty() ? "" : absl::StrCat("; removed ", absl::StrJoin(removed, ", ")));
      t.addresses = std::move(now);
      t.stats.replicas = t.addresses.size();
      changed = true;
    }
  }
  if (!changed) return;
  std::lock_guard<std::mutex> lock(listeners_mu_);
  const std::vector<Replica> replicas = Replicas();
  for (auto& [id, listener] : listeners_) listener(replicas);
}

void ReplicaDirectory::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stopping_) return;
    const bool any_empty = std::any_of(targets_.begin(), targets_.end(),
                                       [](const Target& t) { return t.addresses.empty(); });
    const auto gap = ToChrono(options_.min_resolve_gap);
    auto due = last_resolve_ + (any_empty ? gap : ToChrono(options_.resolve_interval));
    if (soon_) due = std::min(due, last_resolve_ + gap);
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lock, due);  // woken early (Stop, ResolveSoon): decide again
      continue;
    }
    soon_ = false;
    lock.unlock();
    ResolveAll();
    lock.lock();
  }
}

}  // namespace neighborly::agent
