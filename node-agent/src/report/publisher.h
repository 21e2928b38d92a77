// All of one node's streams: the same report goes to every extender address
// (several extender replicas each keep the whole cluster's state).
//
//   ReportPublisher publisher("node-1", {"10.0.0.5:9090", "10.0.0.6:9090"}, nullptr);
//   publisher.Start();
//   publisher.Publish(report);                        // every window
//   absl::Duration next = publisher.Interval(absl::Seconds(1));
#ifndef NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_
#define NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "node-agent/src/report/report_stream.h"

namespace neighborly::agent {

class ReportPublisher {
 public:
  // `credentials` nullptr: plaintext.
  ReportPublisher(const std::string& node_name, const std::vector<std::string>& targets,
                  std::shared_ptr<grpc::ChannelCredentials> credentials);
  // Every stream gets `common` (credentials, server name, identity token, backoff)
  // with its own target and `node_name`.
  ReportPublisher(const std::string& node_name, const std::vector<std::string>& targets,
                  const ReportStreamOptions& common);

  void Start();
  void Publish(const telemetry::v1::NodeReport& report);
  void Stop();

  // The shortest interval any extender asked for, else `configured`.
  absl::Duration Interval(absl::Duration configured) const;

  std::vector<const ReportStream*> streams() const;

 private:
  std::vector<std::unique_ptr<ReportStream>> streams_;
};

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_REPORT_PUBLISHER_H_
