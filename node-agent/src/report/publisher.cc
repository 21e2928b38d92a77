#include "node-agent/src/report/publisher.h"

#include <algorithm>
#include <set>
#include <utility>

namespace neighborly::agent {

ReportPublisher::ReportPublisher(std::string node_name,
                                 std::shared_ptr<ReplicaDirectory> directory,
                                 ReportStreamOptions common)
    : node_name_(std::move(node_name)),
      directory_(std::move(directory)),
      common_(std::move(common)) {}

ReportPublisher::~ReportPublisher() { Stop(); }

void ReportPublisher::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || subscription_.has_value()) return;
  }
  subscription_ = directory_->Subscribe([this](const std::vector<Replica>& replicas) {
    Follow(replicas);
  });
}

void ReportPublisher::Follow(const std::vector<Replica>& replicas) {
  std::vector<std::unique_ptr<ReportStream>> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    std::set<std::string> wanted;
    for (const Replica& replica : replicas) {
      // Two targets naming the same replica get one stream: the replica keeps
      // one stream per node and would end the other.
      if (!wanted.insert(replica.address).second) continue;
      if (streams_.contains(replica.address)) continue;
      ReportStreamOptions options = common_;
      options.target = replica.address;
      options.target_name = replica.target;
      options.node_name = node_name_;
      if (options.server_name.empty()) options.server_name = replica.server_name;
      options.on_failure = [directory = directory_.get()] { directory->ResolveSoon(); };
      auto stream = std::make_unique<ReportStream>(std::move(options));
      stream->Start();
      streams_.emplace(replica.address, std::move(stream));
    }
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      removed.push_back(std::move(it->second));
      it = streams_.erase(it);
    }
  }
  // Stopped outside the lock: Publish never waits on a replica's stream.
  for (auto& stream : removed) stream->Stop();
}

void ReportPublisher::Publish(const telemetry::v1::NodeReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [address, stream] : streams_) stream->Offer(report);
}

void ReportPublisher::Stop() {
  // Unsubscribed first: no Follow runs or starts after this.
  if (subscription_.has_value()) {
    directory_->Unsubscribe(*subscription_);
    subscription_.reset();
  }
  std::map<std::string, std::unique_ptr<ReportStream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    streams.swap(streams_);
  }
  for (auto& [address, stream] : streams) stream->Stop();
}

absl::Duration ReportPublisher::Interval(absl::Duration configured) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<absl::Duration> shortest;
  for (const auto& [address, stream] : streams_) {
    if (std::optional<absl::Duration> asked = stream->RequestedInterval()) {
      shortest = shortest ? std::min(*shortest, *asked) : *asked;
    }
  }
  return shortest.value_or(configured);
}

std::optional<telemetry::v1::AllocationPolicy> ReportPublisher::AllocationPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<ReportStream::AckedPolicy> newest;
  for (const auto& [address, stream] : streams_) {
    std::optional<ReportStream::AckedPolicy> acked = stream->LatestPolicy();
    if (acked && (!newest || acked->at > newest->at)) newest = std::move(acked);
  }
  return newest ? newest->policy : std::nullopt;
}

void ReportPublisher::AppendViews(std::vector<StreamView>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [address, stream] : streams_) out.push_back(ViewOf(*stream));
}

size_t ReportPublisher::stream_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

}  // namespace neighborly::agent
