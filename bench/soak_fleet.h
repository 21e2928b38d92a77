// The simulated fleet's node reports, shared by bench/soak_load (over gRPC)
// and model_bench's BM_CoreSoakMix (in-process): two sockets and `pods` pods,
// one in ten latency-critical, on every fourth node one in ten batch.
//
// LcRefusedReport is the fleet of soak_load's `--case lc-refused` (issue 25,
// part 6): a latency-critical pod is refused on nine nodes in ten.
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

// The fleet of a latency-critical Guaranteed pod that most nodes refuse
// (issue 25, part 6): `pods` pods of mixed classes on every node, one in four
// latency-critical with two pinned CPUs, one in four batch, the rest
// standard. On nine nodes in ten the batch pods stream (3 GB/s each, missing
// often) and the sockets run busy (SetLcRefusedMeasured); on every tenth node
// the batch pods are small and the sockets quiet.
inline bool LcRefusedQuiet(int node) { return node % 10 == 0; }

inline telemetry::v1::NodeReport LcRefusedReport(int node, int pods) {
  telemetry::v1::NodeReport r =
      extender::testing::TwoSocketNode(absl::StrFormat("node-%05d", node));
  const bool quiet = LcRefusedQuiet(node);
  int pinned = 0;  // latency-critical pods pinned so far, two CPUs each
  for (int p = 0; p < pods; ++p) {
    extender::testing::PodSpec pod;
    pod.uid = absl::StrFormat("%08x-lcrf-4000-8000-%012d", node, p);
    pod.namespace_name = absl::StrCat("team-", p % 5);
    pod.name = absl::StrFormat("app-%d-%05d-%02d", p % 7, node, p);
    pod.labels = {{"app", absl::StrCat("app-", p % 7)}};
    pod.cpu_request_millicores = 250;
    pod.memory_request_bytes = uint64_t{512} << 20;
    pod.llc_bytes = static_cast<uint64_t>(128 + (node + p) % 512) << 10;
    pod.membw_bytes_per_second = static_cast<uint64_t>(50 + (node * 7 + p) % 200) * 1'000'000;
    if (p % 4 == 0 && pinned < 4) {
      // Pinned in turn on socket 0 and socket 1: CPUs 0-1, 8-9, 2-3, 10-11.
      pod.annotations = {{"neighborly.io/class", "latency-critical"}};
      pod.qos = telemetry::v1::QOS_CLASS_GUARANTEED;
      pod.cpu_request_millicores = 2000;
      const int first = (pinned % 2) * 8 + (pinned / 2) * 2;
      pod.exclusive_cpus = absl::StrCat(first, "-", first + 1);
      ++pinned;
    } else if (p % 4 == 1) {
      pod.labels["workload-type"] = "batch";
      if (!quiet) {
        pod.llc_bytes = uint64_t{4} << 20;
        pod.membw_bytes_per_second = 3'000'000'000 + static_cast<uint64_t>(node % 50) * 10'000'000;
        pod.mpki = 20;
      }
    }
    extender::testing::AddPod(r, pod);
  }
  return r;
}

// Measurements of one window of LcRefusedReport's node (`wobble` 0-7).
inline void SetLcRefusedMeasured(telemetry::v1::NodeReport& r, int node, uint64_t wobble) {
  if (LcRefusedQuiet(node)) {
    extender::testing::SetMeasured(r, 0, (6 + wobble) << 20, (4 + wobble) * 1'000'000'000);
    extender::testing::SetMeasured(r, 1, (4 + wobble) << 20, (3 + wobble) * 1'000'000'000);
  } else {
    extender::testing::SetMeasured(r, 0, (18 + wobble) << 20, (30 + wobble) * 1'000'000'000);
    extender::testing::SetMeasured(r, 1, (16 + wobble) << 20, (28 + wobble) * 1'000'000'000);
  }
}

}  // namespace neighborly::bench

#endif  // NEIGHBORLY_BENCH_SOAK_FLEET_H_
