#include "node-agent/src/report/publisher.h"

#include <algorithm>
#include <utility>

namespace neighborly::agent {
namespace {

ReportStreamOptions WithCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
  ReportStreamOptions options;
  options.credentials = std::move(credentials);
  return options;
}

}  // namespace

ReportPublisher::ReportPublisher(const std::string& node_name,
                                 const std::vector<std::string>& targets,
                                 std::shared_ptr<grpc::ChannelCredentials> credentials)
    : ReportPublisher(node_name, targets, WithCredentials(std::move(credentials))) {}

ReportPublisher::ReportPublisher(const std::string& node_name,
                                 const std::vector<std::string>& targets,
                                 const ReportStreamOptions& common) {
  for (const std::string& target : targets) {
    ReportStreamOptions options = common;
    options.target = target;
    options.node_name = node_name;
    streams_.push_back(std::make_unique<ReportStream>(std::move(options)));
  }
}

void ReportPublisher::Start() {
  for (auto& stream : streams_) stream->Start();
}

void ReportPublisher::Publish(const telemetry::v1::NodeReport& report) {
  for (auto& stream : streams_) stream->Offer(report);
}

void ReportPublisher::Stop() {
  for (auto& stream : streams_) stream->Stop();
}

absl::Duration ReportPublisher::Interval(absl::Duration configured) const {
  std::optional<absl::Duration> shortest;
  for (const auto& stream : streams_) {
    if (std::optional<absl::Duration> asked = stream->RequestedInterval()) {
      shortest = shortest ? std::min(*shortest, *asked) : *asked;
    }
  }
  return shortest.value_or(configured);
}

std::vector<const ReportStream*> ReportPublisher::streams() const {
  std::vector<const ReportStream*> out;
  for (const auto& stream : streams_) out.push_back(stream.get());
  return out;
}

}  // namespace neighborly::agent
