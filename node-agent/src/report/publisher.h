// All of one node's streams: the same report goes to every extender replica
// the directory lists (several replicas each keep the whole cluster's state),
// one independent stream each, so a slow or dead replica never delays the
// others. Streams follow the directory: a replica that appears gets one, a
// replica that disappears loses its own.
//
//   std::shared_ptr<ReplicaDirectory> directory = ...;   // replica_directory.h, started
//   ReportPublisher publisher("node-1", directory, {.credentials = nullptr});
//   publisher.Start();
//   publisher.Publish(report);                        // every window
//   absl::Duration next = publisher.Interval(absl::Seconds(1));
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "node-agent/src/report/metrics.h"
#include "node-agent/src/report/replica_directory.h"
#include "node-agent/src/report/report_stream.h"

namespace neighborly::agent {

class ReportPublisher {
 public:
  // Every stream gets `common` (credentials, server name, identity token,
  // backoff) with its replica's address and certificate name (unless `common`
  // names one), `node_name`, and a failure hook that asks the directory to
  // resolve again.
  ReportPublisher(std::string node_name, std::shared_ptr<ReplicaDirectory> directory,
                  ReportStreamOptions common);
  ~ReportPublisher();  // Stop()
  ReportPublisher(const ReportPublisher&) = delete;
  ReportPublisher& operator=(const ReportPublisher&) = delete;

  void Start();
  void Publish(const telemetry::v1::NodeReport& report);
  void Stop();

  // The shortest interval any replica asked for, else `configured`.
  absl::Duration Interval(absl::Duration configured) const;
  // The allocation policy of the newest ack from any replica (nullopt: none yet,
  // or that ack carried none).
  std::optional<telemetry::v1::AllocationPolicy> AllocationPolicy() const;

  // The streams now, one per replica, for /metrics.
  void AppendViews(std::vector<StreamView>& out) const;
  size_t stream_count() const;

 private:
  // The directory's replicas changed: start and stop streams to match.
  void Follow(const std::vector<Replica>& replicas);

  const std::string node_name_;
  const std::shared_ptr<ReplicaDirectory> directory_;
  const ReportStreamOptions common_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<ReportStream>> streams_;  // by address, guarded by mu_
  bool stopped_ = false;                                          // guarded by mu_
  std::optional<uint64_t> subscription_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_
