#include "bench/fleet/kubelet_cpus.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace neighborly::fleet {

KubeletCpus::KubeletCpus(const NodeSpec& node)
    : sockets_(node.shape.sockets),
      cpus_per_socket_(node.cpus_per_socket()),
      threads_per_core_(node.threads_per_core),
      taken_(static_cast<size_t>(node.cpus()), false),
      exclusive_(static_cast<size_t>(node.cpus()), false) {
  for (int c = 0; c < node.reserved_cpus(); ++c) {
    reserved_.push_back(c);
    taken_[static_cast<size_t>(c)] = true;
  }
}

int KubeletCpus::FreeExclusive(int numa_node) const {
  int free = 0;
  for (int c = numa_node * cpus_per_socket_; c < (numa_node + 1) * cpus_per_socket_; ++c) {
    free += taken_[static_cast<size_t>(c)] ? 0 : 1;
  }
  return free;
}

std::optional<ExclusiveCpus> KubeletCpus::Allocate(int count) {
  for (int numa = 0; numa < sockets_; ++numa) {
    if (FreeExclusive(numa) < count) continue;
    ExclusiveCpus out;
    out.numa_node = numa;
    const int first = numa * cpus_per_socket_;
    const int cores = cpus_per_socket_ / threads_per_core_;
    auto take = [&](int cpu) {
      taken_[static_cast<size_t>(cpu)] = true;
      exclusive_[static_cast<size_t>(cpu)] = true;
      out.cpus.push_back(cpu);
      --count;
    };
    auto free_threads = [&](int core) {
      int n = 0;
      for (int t = 0; t < threads_per_core_; ++t) {
        n += taken_[static_cast<size_t>(first + core * threads_per_core_ + t)] ? 0 : 1;
      }
      return n;
    };
    // Whole free cores first.
    for (int core = 0; core < cores && count >= threads_per_core_; ++core) {
      if (free_threads(core) == threads_per_core_) {
        for (int t = 0; t < threads_per_core_; ++t) take(first + core * threads_per_core_ + t);
      }
    }
    // Then threads, from partly taken cores before splitting a free one.
    for (int pass = 0; pass < 2 && count > 0; ++pass) {
      for (int core = 0; core < cores && count > 0; ++core) {
        const int free = free_threads(core);
        if (free == 0 || (pass == 0 && free == threads_per_core_)) continue;
        for (int t = 0; t < threads_per_core_ && count > 0; ++t) {
          const int cpu = first + core * threads_per_core_ + t;
          if (!taken_[static_cast<size_t>(cpu)]) take(cpu);
        }
      }
    }
    std::sort(out.cpus.begin(), out.cpus.end());
    return out;
  }
  return std::nullopt;
}

void KubeletCpus::Release(const std::vector<int>& cpus) {
  for (int c : cpus) {
    taken_[static_cast<size_t>(c)] = false;
    exclusive_[static_cast<size_t>(c)] = false;
  }
}

std::vector<int> KubeletCpus::SharedPoolPerSocket() const {
  std::vector<int> out(static_cast<size_t>(sockets_), 0);
  for (size_t c = 0; c < exclusive_.size(); ++c) {
    if (!exclusive_[c]) ++out[c / static_cast<size_t>(cpus_per_socket_)];
  }
  return out;
}

std::string KubeletCpus::CpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace neighborly::fleet
