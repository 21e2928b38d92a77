// The extender replicas an agent streams to: every address of every --extender
// target (a headless Service's name returns one per replica), re-resolved every
// resolve_interval and soon after a stream fails, so a replica that appears is
// streamed to within one re-resolve and one that disappears is dropped. A
// failed resolution keeps the target's last known replicas (a DNS hiccup must
// not silence every stream); a target without any is retried every
// min_resolve_gap.
//
//   absl::StatusOr<std::unique_ptr<ReplicaDirectory>> directory = ReplicaDirectory::Create(
//       {.targets = {"neighborly-extender-agents.neighborly.svc:9090"}},
//       std::make_unique<SystemResolver>());
//   (*directory)->Start();   // resolves once now, then in the background
//   uint64_t id = (*directory)->Subscribe([](const std::vector<Replica>& now) { ... });
//   (*directory)->Unsubscribe(id);
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPLICA_DIRECTORY_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPLICA_DIRECTORY_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/host_port.h"
#include "node-agent/src/report/address_resolver.h"

namespace neighborly::agent {

struct Replica {
  std::string target;   // the --extender value it was resolved from
  std::string address;  // "10.244.1.7:9090"
  // The name the replica's certificate must carry: the target's host when it
  // is a name (every address of a headless Service is verified by the
  // Service's name), empty for an IP literal (verified as itself).
  std::string server_name;

  bool operator==(const Replica&) const = default;
};

class ReplicaDirectory {
 public:
  struct Options {
    std::vector<std::string> targets;  // "host:port" each, port non-zero
    absl::Duration resolve_interval = absl::Seconds(10);
    // Resolutions are at least this far apart, whatever asks for them.
    absl::Duration min_resolve_gap = absl::Seconds(1);
  };
  struct TargetStats {
    std::string target;
    size_t replicas = 0;
    uint64_t resolves = 0;
    uint64_t resolve_failures = 0;
    std::string last_error;  // of the latest resolution; empty when it succeeded
  };
  using Listener = std::function<void(const std::vector<Replica>&)>;

  // A target that is not HOST:PORT with a non-zero port is an error naming it.
  static absl::StatusOr<std::unique_ptr<ReplicaDirectory>> Create(
      Options options, std::unique_ptr<AddressResolver> resolver);
  ~ReplicaDirectory();  // Stop()
  ReplicaDirectory(const ReplicaDirectory&) = delete;
  ReplicaDirectory& operator=(const ReplicaDirectory&) = delete;

  // Resolves every target now, then keeps doing so on its own thread.
  void Start();
  void Stop();
  // A stream failed: resolve again soon (within min_resolve_gap of the last).
  void ResolveSoon();

  // Sorted by target, then address.
  std::vector<Replica> Replicas() const;
  std::vector<TargetStats> target_stats() const;

  // Calls `listener` with the replicas now, on this thread, then on the
  // directory's thread after every change, in order. Unsubscribe returns once
  // no call to it is in progress.
  uint64_t Subscribe(Listener listener);
  void Unsubscribe(uint64_t id);

 private:
  struct Target {
    std::string text;
    HostPort host_port;
    std::vector<std::string> addresses;
    TargetStats stats;
  };
  ReplicaDirectory(Options options, std::vector<Target> targets,
                   std::unique_ptr<AddressResolver> resolver);
  void Run();
  // Resolves every target; notifies the listeners when the replicas changed.
  void ResolveAll();
  std::vector<Replica> ReplicasLocked() const;

  const Options options_;
  const std::unique_ptr<AddressResolver> resolver_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Target> targets_;  // guarded by mu_
  bool stopping_ = false;
  bool started_ = false;
  bool soon_ = false;
  std::chrono::steady_clock::time_point last_resolve_{};
  std::thread worker_;
  // Held while listeners are added, removed or called.
  std::mutex listeners_mu_;
  std::map<uint64_t, Listener> listeners_;
  uint64_t next_listener_ = 1;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_REPLICA_DIRECTORY_H_
