// The simulated fleet's node reports, shared by bench/soak_load (over gRPC)
// and model_bench's BM_CoreSoakMix (in-process): two sockets and `pods` pods,
// one in ten latency-critical, on every fourth node one in ten batch.
#ifndef NEIGHBORLY_BENCH_SOAK_FLEET_H_
#define NEIGHBORLY_BENCH_SOAK_FLEET_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "extender/src/model/testing/report_builder.h"

namespace neighborly::bench {

inline telemetry::v1::NodeReport SoakReport(int node, int pods) {
  telemetry::v1::NodeReport r =
      extender::testing::TwoSocketNode(absl::StrFormat("node-%05d", node));
  for (int p = 0; p < pods; ++p) {
    extender::testing::PodSpec pod;
    pod.uid = absl::StrFormat("%08x-soak-4000-8000-%012d", node, p);
    pod.namespace_name = absl::StrCat("team-", p % 7);
    pod.name = absl::StrFormat("svc-%d-%05d-%02d", p % 11, node, p);
    pod.labels = {{"app", absl::StrCat("svc-", p % 11)}};
    if (p % 10 == 0) pod.annotations = {{"neighborly.io/class", "latency-critical"}};
    if (p % 10 == 5 && node % 4 == 0) pod.labels["workload-type"] = "batch";
    pod.cpu_request_millicores = 250;
    pod.memory_request_bytes = uint64_t{512} << 20;
    pod.llc_bytes = static_cast<uint64_t>(64 + (node + p) % 256) << 10;
    pod.membw_bytes_per_second = static_cast<uint64_t>(20 + (node * 7 + p) % 180) * 1'000'000;
    extender::testing::AddPod(r, pod);
  }
  return r;
}

}  // namespace neighborly::bench

#endif  // NEIGHBORLY_BENCH_SOAK_FLEET_H_
