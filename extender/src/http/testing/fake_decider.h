// A Decider for transport tests: rejects the nodes it is told to, with the
// reason it is told, and scores nodes from a table (default 5).
//
//   FakeDecider decider;
//   decider.Reject("worker-2", "membw 84% > 80% on NUMA node 1");
//   decider.SetScore("worker-1", 7);
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_FAKE_DECIDER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_FAKE_DECIDER_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "extender/src/http/decider.h"

namespace neighborly::extender {

class FakeDecider final : public Decider {
 public:
  void Reject(const std::string& node, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    rejected_[node] = reason;
  }
  void SetScore(const std::string& node, int score) {
    std::lock_guard<std::mutex> lock(mu_);
    scores_[node] = score;
  }

  void Filter(const IncomingPod& pod, std::span<const std::string_view> nodes,
              std::vector<NodeDecision>& out) override {
    Decide(pod, nodes, out);
    ++filter_calls;
  }
  void Prioritize(const IncomingPod& pod, std::span<const std::string_view> nodes,
                  std::vector<NodeDecision>& out) override {
    Decide(pod, nodes, out);
    ++prioritize_calls;
  }

  IncomingPod last_pod() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_pod_;
  }

  std::atomic<int> filter_calls{0};
  std::atomic<int> prioritize_calls{0};

 private:
  void Decide(const IncomingPod& pod, std::span<const std::string_view> nodes,
              std::vector<NodeDecision>& out) {
    std::lock_guard<std::mutex> lock(mu_);
    last_pod_ = pod;
    out.assign(nodes.size(), NodeDecision());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string name(nodes[i]);
      if (auto it = rejected_.find(name); it != rejected_.end()) {
        out[i].feasible = false;
        out[i].reason = it->second;
      }
      if (auto it = scores_.find(name); it != scores_.end()) out[i].score = it->second;
    }
  }

  std::mutex mu_;
  std::map<std::string, std::string> rejected_;
  std::map<std::string, int> scores_;
  IncomingPod last_pod_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_FAKE_DECIDER_H_
