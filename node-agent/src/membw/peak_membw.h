// Each NUMA node's peak memory bandwidth, and where it came from, decided once
// at agent start in this order:
//   1. "override": the operator's figure (--peak-membw-bytes-per-second);
//   2. "measured": a bounded STREAM-triad measurement (stream_triad.h), cached
//      under the host root keyed by boot id and CPU model so that restarts
//      reuse it instead of disturbing the node again;
//   3. "smbios": the memory configuration (smbios_memory.h), derated to a
//      sustainable figure and split over the nodes by their memory;
//   4. "default": no figure; the extender applies its configured default.
//
//   PeakMembwOptions options;  // measure: auto, cache /var/lib/neighborly/peak-membw.json
//   PeakMembwEnvironment env{.fs = &fs, .meter = meter.get(), .clock = &clock,
//                            .boot_id = boot_id};
//   PeakMembwReport report = ResolvePeakMembw(topology, options, env);
//   report.nodes[0].source   // "measured"
//
// Never fails: whatever is missing is explained in the node's detail and in
// the capability's reason. A corrupt cache file is ignored with a warning.
#ifndef NEIGHBORLY_NODE_AGENT_SRC_MEMBW_PEAK_MEMBW_H_
#define NEIGHBORLY_NODE_AGENT_SRC_MEMBW_PEAK_MEMBW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "node-agent/src/membw/stream_triad.h"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/topology/topology.h"

namespace neighborly::agent {

enum class MeasureMode {
  kAuto,    // use this boot's cached result, else measure now and cache it
  kCached,  // use this boot's cached result only (an init container measured)
  kOff,     // never measure
};

// "auto" | "cached" | "off".
absl::StatusOr<MeasureMode> ParseMeasureMode(std::string_view text);

struct PeakOverride {
  std::optional<uint64_t> all_nodes_bytes_per_second;
  std::map<uint32_t, uint64_t> by_node_bytes_per_second;  // wins over all_nodes
  bool empty() const { return !all_nodes_bytes_per_second && by_node_bytes_per_second.empty(); }
};

// "200G" (every NUMA node) or "0=200G,1=180G" or "150G,1=180G" (node 1 180G,
// the others 150G); Kubernetes quantities in bytes per second ("200G" is
// 200e9, "190Gi" 190 * 2^30). Zero is refused.
absl::StatusOr<PeakOverride> ParsePeakOverride(std::string_view text);

inline constexpr std::string_view kDefaultCachePath = "/var/lib/neighborly/peak-membw.json";
// The STREAM rule: each of the three arrays at least 4x the caches.
inline constexpr uint64_t kWorkingSetPerL3Byte = 12;
inline constexpr uint64_t kMinWorkingSetBytes = 96ull << 20;
// SMBIOS gives the theoretical peak; STREAM triad sustains about this much of it.
inline constexpr double kSmbiosSustainedFraction = 0.8;

struct PeakMembwOptions {
  PeakOverride override_peak;
  MeasureMode measure = MeasureMode::kAuto;
  absl::Duration budget_per_node = absl::Seconds(2);
  uint64_t max_working_set_bytes = 1ull << 30;
  std::string cache_path = std::string(kDefaultCachePath);  // host path, under the host root
};

struct PeakMembwEnvironment {
  Filesystem* fs = nullptr;         // the host root (cache, SMBIOS, cpuinfo)
  BandwidthMeter* meter = nullptr;  // may be null when measure is kOff
  const Clock* clock = nullptr;     // for the cache's timestamps
  std::string boot_id;
};

struct NodePeak {
  uint32_t numa_node = 0;
  std::optional<uint64_t> bytes_per_second;
  std::string source;  // "override" | "measured" | "smbios" | "default"
  std::string detail;  // how it was obtained, or why there is no figure
};

struct PeakMembwReport {
  std::vector<NodePeak> nodes;  // in the topology's order
  bool calibrated = false;      // every node overridden or measured
  std::string reason;           // when !calibrated: what fell back and why
  bool measured_now = false;    // a measurement ran in this call
};

PeakMembwReport ResolvePeakMembw(const Topology& topology, const PeakMembwOptions& options,
                                 const PeakMembwEnvironment& env);

// The cache file (JSON): one measurement attempt per boot and CPU model.
struct CachedNode {
  uint32_t numa_node = 0;
  std::optional<double> bytes_per_second;  // absent: the attempt failed
  std::string detail;                      // how it was measured, or the error
  bool retry = false;  // failed for busy CPUs or a CPU quota: the next start measures again
  absl::Time measured_at;
};
struct CalibrationCache {
  int version = 1;
  std::string boot_id;
  std::string cpu_model;
  bool finished = false;  // false: "running", written before measuring
  absl::Time started;
  std::vector<CachedNode> nodes;
};

absl::StatusOr<CalibrationCache> ParseCalibrationCache(std::string_view text);
std::string FormatCalibrationCache(const CalibrationCache& cache);

// The CPU model from /proc/cpuinfo text: "model name" (x86), else "CPU
// implementer"/"CPU part" (Arm), else "unknown".
std::string CpuModelFromCpuinfo(std::string_view cpuinfo);

}  // namespace neighborly::agent

#endif  // NEIGHBORLY_NODE_AGENT_SRC_MEMBW_PEAK_MEMBW_H_
