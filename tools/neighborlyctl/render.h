// SPDX-License-Identifier: Apache-2.0
// File: render.h
//
// Turns the extender's /v1 JSON answers into what an operator reads: a table
// of nodes sorted by contention, one node's L3 domains, NUMA nodes and pods,
// and the latest decisions for a pod with the terms behind each verdict.
// Pure functions of the JSON text, so each is tested with one literal.
//
// The shapes are the operator API's (docs/http.md): the structs of
// extender/src/core/extender_core.h, keys in camelCase or snake_case (both
// are read). Lists may come bare or wrapped ({"nodes": [...]},
// {"decisions": [...]}); a missing measurement shows as "-", never as zero.
//
// Example:
//   absl::StatusOr<std::string> table = RenderNodesTable(body);
#ifndef NEIGHBORLY_TOOLS_NEIGHBORLYCTL_RENDER_H_
#define NEIGHBORLY_TOOLS_NEIGHBORLYCTL_RENDER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace neighborly::ctl {

// RenderNodesTable: NODE, SCORE, L3 (worst domain), MEMBW (worst NUMA node),
// PODS by class, AGGRESSORS, AGE; highest contention first.
absl::StatusOr<std::string> RenderNodesTable(std::string_view body);

// RenderNodeDetail: summary lines, then per L3 domain, per NUMA node, per pod.
absl::StatusOr<std::string> RenderNodeDetail(std::string_view body);

// RenderDecisions: per decision a header line, then per node the verdict and
// the terms (or the rejection reason).
absl::StatusOr<std::string> RenderDecisions(std::string_view body);

// RenderJson: the answer re-indented (for -o json); INVALID_ARGUMENT if it is
// not JSON.
absl::StatusOr<std::string> RenderJson(std::string_view body);

// /v1/workloads as a table: per workload replicas, nodes, evidence, bandwidth
// and L3 (mean / p95), MPKI and the aggressor verdict.
absl::StatusOr<std::string> RenderWorkloadsTable(std::string_view body);
// /v1/workloads/{ns}/{kind}/{name}: the prediction, the verdict and every metric.
absl::StatusOr<std::string> RenderWorkloadDetail(std::string_view body);

// Issue 26. /v1/nodes/{name}/memory: capacity, memory.available, distance to
// each eviction threshold, then the pods in the kubelet's eviction order with
// their oom_score_adj against the expected value.
absl::StatusOr<std::string> RenderNodeMemory(std::string_view body);
// /v1/interference: per victim its CPI against the baseline and the suspects
// with their scores.
absl::StatusOr<std::string> RenderInterference(std::string_view body);
// /v1/advice/{ns}/{kind}/{name}: per layer needed / in place / why / cost, then the patch.
absl::StatusOr<std::string> RenderAdvice(std::string_view body);
// /v1/rebalance: per proposal the victim, the pod to move, from and to, why.
absl::StatusOr<std::string> RenderRebalance(std::string_view body);

// Formatting helpers, exposed for tests.
std::string FormatBytes(double bytes);           // "18.3MiB"
std::string FormatBytesPerSecond(double bytes);  // "2.80GB/s"
std::string FormatPercent(double ratio);         // "73%"
std::string FormatSeconds(double seconds);       // "1.2s", "3m05s"

}  // namespace neighborly::ctl

#endif  // NEIGHBORLY_TOOLS_NEIGHBORLYCTL_RENDER_H_
