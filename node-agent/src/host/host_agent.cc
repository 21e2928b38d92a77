#include "node-agent/src/host/host_agent.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/strings.h"
#include "google/protobuf/util/time_util.h"
#include "node-agent/src/cri/pod_metadata.h"
#include "node-agent/src/kubelet/kubelet_state.h"
#include "node-agent/src/perf/perf_events.h"
#include "node-agent/src/podresources/pod_resources.h"
#include "node-agent/src/pods/cgroup_mounts.h"
#include "node-agent/src/pods/pod_cgroups.h"
#include "node-agent/src/pods/pod_names.h"
#include "node-agent/src/pqos/pqos_monitor.h"
#include "node-agent/src/resctrl/resctrl.h"
#include "node-agent/src/resctrl/resctrl_alloc.h"
#include "node-agent/src/resctrl/resctrl_allocator.h"
#include "node-agent/src/sys/filesystem.h"
#include "node-agent/src/sys/text.h"
#include "node-agent/src/topology/topology.h"
#include "spdlog/spdlog.h"

namespace neighborly::agent {
namespace {

namespace tv1 = telemetry::v1;
using google::protobuf::util::TimeUtil;

void SetCapability(tv1::Capability* capability, bool available, std::string_view reason) {
  capability->set_available(available);
  if (!available) capability->set_reason(std::string(reason));
}

// Latency-critical pods (annotation `neighborly.io/class`, from CRI), then
// Guaranteed ones, get RMIDs first. Without pod metadata the QoS class is all
// the agent knows.
int Priority(tv1::QosClass qos, const PodMetadata* metadata) {
  if (metadata != nullptr) {
    auto it = metadata->annotations.find("neighborly.io/class");
    if (it != metadata->annotations.end() && it->second == "latency-critical") return 3;
  }
  switch (qos) {
    case tv1::QOS_CLASS_GUARANTEED:
      return 2;
    case tv1::QOS_CLASS_BURSTABLE:
      return 1;
    default:
      return 0;
  }
}

// The shared resctrl group a pod joins when RMIDs run out.
std::string QosGroup(tv1::QosClass qos) {
  switch (qos) {
    case tv1::QOS_CLASS_GUARANTEED:
      return "guaranteed";
    case tv1::QOS_CLASS_BURSTABLE:
      return "burstable";
    case tv1::QOS_CLASS_BEST_EFFORT:
      return "besteffort";
    default:
      return "";
  }
}

// What the kubelet's PodResources API said this window.
struct PodResourcesView {
  absl::StatusOr<std::map<std::string, PodAllocation>> pods =  // "namespace/name" ->
      absl::UnavailableError("not asked");
  absl::StatusOr<Allocatable> allocatable = absl::UnavailableError("not asked");
};

struct PodPerf {
  std::unique_ptr<CgroupCounters> counters;
  std::string error;  // why the pod has no counters
};

std::string ReadBootId(const Filesystem& fs) {
  absl::StatusOr<std::string> boot = fs.ReadFile("/proc/sys/kernel/random/boot_id");
  return boot.ok() ? std::string(Trim(*boot)) : std::string();
}

PeakMembwReport ResolvePeak(const HostAgentOptions& options, const HostAgentEnvironment& env,
                            const Topology& topology, Filesystem& fs, const Clock& clock,
                            const std::string& boot_id) {
  std::shared_ptr<BandwidthMeter> meter =
      env.bandwidth_meter ? env.bandwidth_meter
                          : std::shared_ptr<BandwidthMeter>(NewStreamTriadMeter());
  return ResolvePeakMembw(topology, options.peak_membw,
                          {.fs = &fs, .meter = meter.get(), .clock = &clock, .boot_id = boot_id});
}

class HostAgentImpl final : public HostAgent {
 public:
  HostAgentImpl(const HostAgentOptions& options, HostAgentEnvironment environment)
      : options_(options), env_(std::move(environment)) {}
  // Every CTRL_MON group the allocator made goes with the agent (SIGTERM).
  ~HostAgentImpl() override {
    if (allocator_) allocator_->Stop();
  }

  void SetAllocationPolicy(const std::optional<tv1::AllocationPolicy>& policy) override {
    if (!policy) {
      policy_.reset();
      return;
    }
    AllocationPolicyView view;
    for (const tv1::ClassAllocation& c : policy->classes()) {
      view.classes.push_back({.workload_class = c.workload_class(),
                              .l3_ways_fraction = c.l3_ways_fraction(),
                              .mba_percent = c.mba_percent(),
                              .mba_mbps = c.mba_mbps()});
    }
    for (const tv1::PodClass& pod : policy->pods()) {
      if (!pod.uid().empty() && !pod.workload_class().empty()) {
        view.pod_classes[pod.uid()] = absl::AsciiStrToLower(pod.workload_class());
      }
    }
    policy_ = std::move(view);
  }

  absl::Status Init() {
    fs_ = env_.filesystem ? env_.filesystem
                          : std::shared_ptr<Filesystem>(NewRealFilesystem(options_.host_root));
    clock_ = env_.clock ? env_.clock : std::make_shared<RealClock>();
    perf_syscalls_ = env_.perf ? env_.perf : std::shared_ptr<PerfSyscalls>(NewRealPerfSyscalls());
    if (options_.rdt_backend != "resctrl" && options_.rdt_backend != "pqos" &&
        options_.rdt_backend != "none") {
      return absl::InvalidArgumentError(
          absl::StrCat("--rdt-backend \"", options_.rdt_backend,
                       "\" is not offered by this agent (use resctrl, pqos or none)"));
    }
    absl::StatusOr<Topology> topology = ReadTopology(*fs_);
    if (!topology.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("cannot read the CPU topology under ",
                                                        options_.host_root, ": ",
                                                        topology.status().message()));
    }
    topology_ = std::move(*topology);

    node_name_ = options_.node_name;
    if (node_name_.empty()) {
      absl::StatusOr<std::string> hostname = fs_->ReadFile("/proc/sys/kernel/hostname");
      node_name_ = hostname.ok() ? std::string(Trim(*hostname)) : std::string();
      if (node_name_.empty()) {
        return absl::FailedPreconditionError(
            "no node name: pass --node-name (proc/sys/kernel/hostname is unreadable)");
      }
    }
    boot_id_ = ReadBootId(*fs_);
    peak_ = ResolvePeak(options_, env_, topology_, *fs_, *clock_, boot_id_);

    const uint64_t page_size = env_.page_size_bytes != 0
                                   ? env_.page_size_bytes
                                   : static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    absl::StatusOr<CgroupMounts> mounts = DetectCgroupMounts(*fs_, options_.host_root);
    if (mounts.ok()) {
      cgroups_.emplace(*fs_, *mounts, page_size);
    } else {
      cgroups_error_ = std::string(mounts.status().message());
      spdlog::warn("pods: {}", cgroups_error_);
    }

    ProbePerf(mounts);
    if (absl::StatusOr<std::string> cpuinfo = fs_->ReadFile("/proc/cpuinfo"); cpuinfo.ok()) {
      arch_ = ParseCpuInfo(*cpuinfo);
    }
    SetupResctrl();
    DetectAllocation();
    ProbePsi();
    SetupKubeletClients();
    return absl::OkStatus();
  }

  absl::Duration last_sample_cost() const override { return cost_; }
  const PeakMembwReport& peak_membw() const override { return peak_; }

  absl::StatusOr<tv1::NodeReport> MeasureWindow(absl::Duration window) override {
    const absl::Time work_start = absl::Now();
    KubeletState kubelet = ReadKubeletState(*fs_);
    std::vector<PodCgroup> pods;
    if (cgroups_) {
      absl::StatusOr<std::vector<PodCgroup>> found = cgroups_->Discover();
      if (found.ok()) {
        pods = std::move(*found);
      } else if (std::string(found.status().message()) != pods_error_) {
        pods_error_ = std::string(found.status().message());
        spdlog::warn("pods: {}", pods_error_);  // logged once per distinct reason
      }
    }
    const absl::StatusOr<std::map<std::string, PodMetadata>> metadata = ListPodMetadata();
    const PodResourcesView resources = AskPodResources();
    std::map<std::string, std::string> unmonitored;
    if (rdt_monitor_ || allocator_) {
      std::vector<ResctrlPod> targets;
      std::vector<AllocPod> alloc_pods;
      for (const PodCgroup& pod : pods) {
        absl::StatusOr<std::vector<int>> tids = cgroups_->Threads(pod);
        if (!tids.ok()) continue;  // vanished; Sample drops it below
        const PodMetadata* m =
            metadata.ok() && metadata->contains(pod.uid) ? &metadata->at(pod.uid) : nullptr;
        if (allocator_) alloc_pods.push_back(AllocPodOf(pod, m, *tids, kubelet, resources));
        targets.emplace_back(pod.uid, Priority(pod.qos, m), std::move(*tids), QosGroup(pod.qos));
      }
      if (allocator_) {
        allocator_->Sync(policy_, alloc_pods, l3_numa_);
        for (ResctrlPod& target : targets) target.ctrl_group = allocator_->GroupOf(target.uid);
      }
      if (rdt_monitor_) unmonitored = rdt_monitor_->Sync(targets);
    }
    SyncPerf(pods);

    // Start of the window: stamped with the wall clock, timed with the
    // monotonic one (an NTP step mid-window must not skew the rates).
    const absl::Time start_time = clock_->Now();
    const absl::Duration start_monotonic = clock_->Monotonic();
    std::map<std::string, PodSample> start;
    for (const PodCgroup& pod : pods) {
      absl::StatusOr<PodSample> sample = cgroups_->Sample(pod, /*counters_only=*/true);
      if (sample.ok()) start.emplace(pod.uid, std::move(*sample));
    }
    std::map<std::string, GroupCounters> rdt_start;
    absl::StatusOr<GroupCounters> node_start = absl::UnavailableError("no resctrl");
    if (rdt_monitor_) {
      rdt_start = rdt_monitor_->ReadPods();
      node_start = rdt_monitor_->ReadNode();
    }
    std::map<std::string, CounterSnapshot> perf_start;
    for (auto& [uid, p] : perf_) {
      if (p.counters) perf_start[uid] = p.counters->Read();
    }

    const absl::Duration before_wait = absl::Now() - work_start;
    if (env_.wait) {
      env_.wait(window);
    } else {
      absl::SleepFor(window);
    }
    const absl::Time work_resume = absl::Now();

    // End of the window.
    const absl::Duration elapsed = clock_->Monotonic() - start_monotonic;
    const double seconds = absl::ToDoubleSeconds(elapsed);
    std::map<std::string, PodSample> end;
    for (const PodCgroup& pod : pods) {
      if (!start.contains(pod.uid)) continue;
      absl::StatusOr<PodSample> sample = cgroups_->Sample(pod);
      if (sample.ok()) end.emplace(pod.uid, std::move(*sample));  // vanished: dropped
    }
    std::map<std::string, GroupCounters> rdt_end;
    absl::StatusOr<GroupCounters> node_end = absl::UnavailableError("no resctrl");
    if (rdt_monitor_) {
      rdt_end = rdt_monitor_->ReadPods();
      node_end = rdt_monitor_->ReadNode();
    }
    std::map<std::string, CounterSnapshot> perf_end;
    for (auto& [uid, p] : perf_) {
      if (p.counters && perf_start.contains(uid)) perf_end[uid] = p.counters->Read();
    }

    tv1::NodeReport report;
    report.set_node_name(node_name_);
    report.set_agent_version(NEIGHBORLY_VERSION);
    report.set_boot_id(boot_id_);
    report.set_sequence(++sequence_);
    *report.mutable_window_start() =
        TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(start_time));
    *report.mutable_window_duration() =
        TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(elapsed));
    FillCapabilities(kubelet, metadata, resources, unmonitored, report.mutable_capabilities());
    FillTopology(node_start, node_end, seconds, report.mutable_topology());
    FillNotMeasured(report);
    FillKubelet(kubelet, resources, report.mutable_kubelet());

    absl::StatusOr<std::map<std::string, PodName>> names = ReadPodNames(*fs_);
    for (const PodCgroup& pod : pods) {
      auto e = end.find(pod.uid);
      if (e == end.end()) continue;
      const PodSample& a = start.at(pod.uid);
      const PodSample& b = e->second;
      const PodMetadata* m =
          metadata.ok() && metadata->contains(pod.uid) ? &metadata->at(pod.uid) : nullptr;
      // Identity: CRI, else /var/log/pods, else /var/lib/kubelet/pods/<uid>.
      // A pod none of them names is not reported (the extender would drop the
      // record); it is listed in capabilities.skipped_pods and counted.
      PodName identity;
      if (m != nullptr && !m->name.empty() && !m->namespace_name.empty()) {
        identity = {m->namespace_name, m->name, pod.uid};
      } else if (names.ok() && names->contains(pod.uid)) {
        identity = names->at(pod.uid);
      } else if (absl::StatusOr<PodName> dir = ReadKubeletPodDirName(*fs_, pod.uid); dir.ok()) {
        identity = *std::move(dir);
      } else {
        (*report.mutable_capabilities()->mutable_skipped_pods())[pod.uid] = absl::StrCat(
            "unidentified: no name from the container runtime (",
            metadata.ok() ? absl::string_view("no sandbox for this pod")
                          : metadata.status().message(),
            "), /var/log/pods (",
            names.ok() ? absl::string_view("no entry for the pod") : names.status().message(),
            ") or /var/lib/kubelet/pods (", dir.status().message(), ")");
        continue;
      }
      tv1::PodReport* out = report.add_pods();
      out->set_uid(pod.uid);
      out->set_qos_class(pod.qos);
      auto& unavailable = *out->mutable_unavailable();
      out->set_namespace_(identity.namespace_name);
      out->set_name(identity.name);
      for (const auto& [metric, reason] : b.unavailable) unavailable[metric] = reason;
      if (m != nullptr) {
        out->mutable_labels()->insert(m->labels.begin(), m->labels.end());
        out->mutable_annotations()->insert(m->annotations.begin(), m->annotations.end());
      } else {
        unavailable["labels"] = unavailable["annotations"] =
            !metadata.ok() ? std::string(metadata.status().message())
                           : "the container runtime lists no sandbox for this pod";
      }
      unavailable["memory_request_bytes"] =
          "memory requests are not visible in cgroups or CRI sandboxes (no API server client)";
      if (b.cpu_request_millicores) out->set_cpu_request_millicores(*b.cpu_request_millicores);
      if (allocator_ && allocator_->caps().contains(pod.uid)) {
        const PodCap& cap = allocator_->caps().at(pod.uid);
        tv1::ResctrlCap* c = out->mutable_resctrl_cap();
        c->set_group(cap.group);
        if (cap.l3_fraction) c->set_l3_fraction(*cap.l3_fraction);
        if (cap.mba_fraction) c->set_mba_fraction(*cap.mba_fraction);
        if (cap.mba_bytes_per_second) c->set_mba_bytes_per_second(*cap.mba_bytes_per_second);
        for (uint32_t d : cap.l3_domains) c->add_l3_domains(d);
      }
      const std::string key = absl::StrCat(out->namespace_(), "/", out->name());
      if (resources.pods.ok() && !out->name().empty() && resources.pods->contains(key)) {
        out->set_exclusive_cpus(FormatCpuList(resources.pods->at(key).exclusive_cpus));
      } else if (kubelet.cpu_manager.ok()) {
        out->set_exclusive_cpus(FormatCpuList(kubelet.cpu_manager->ExclusiveCpus(pod.uid)));
      }
      if (a.cpu_usage_ns && b.cpu_usage_ns && seconds > 0) {
        if (*b.cpu_usage_ns >= *a.cpu_usage_ns) {
          out->set_cpu_usage_millicores(static_cast<int64_t>(
              static_cast<double>(*b.cpu_usage_ns - *a.cpu_usage_ns) / 1e6 / seconds));
        } else {
          unavailable["cpu_usage_millicores"] = "CPU time went backwards (cgroup recreated)";
        }
      }
      for (const auto& [node, bytes] : b.memory_bytes_by_numa) {
        (*out->mutable_memory_bytes_by_numa())[node] = bytes;
      }
      if (b.psi_cpu_some_avg10) out->set_psi_cpu_some_avg10(*b.psi_cpu_some_avg10);
      if (b.psi_memory_some_avg10) out->set_psi_memory_some_avg10(*b.psi_memory_some_avg10);
      if (b.psi_memory_full_avg10) out->set_psi_memory_full_avg10(*b.psi_memory_full_avg10);
      FillRdt(pod.uid, rdt_start, rdt_end, unmonitored, seconds, *out);
      FillPerf(pod.uid, perf_start, perf_end, seconds, *out);
      FillPodMemory(pod, b, *out);
    }
    FillNodeMemory(report);
    cost_ = before_wait + (absl::Now() - work_resume);
    return report;
  }

 private:
  void ProbePerf(const absl::StatusOr<CgroupMounts>& mounts) {
    if (!mounts.ok()) {
      pmu_.reason = "no cgroup hierarchy to count per pod";
      return;
    }
    const std::string dir =
        !mounts->V1Dir("perf_event").empty() ? mounts->V1Dir("perf_event") : mounts->unified;
    if (dir.empty()) {
      pmu_.reason = "cgroup v1 without a perf_event hierarchy";
      return;
    }
    events_ = EncodeHardwareEvents();
    const bool cpu_pmu = fs_->Exists("/sys/bus/event_source/devices/cpu") ||
                         fs_->Exists("/sys/bus/event_source/devices/cpu_core");
    pmu_ = ProbePmu(*perf_syscalls_, events_, fs_->HostPath(dir),
                    static_cast<int>(topology_.cpus_online.front()), cpu_pmu);
    if (!pmu_.hardware) {
      spdlog::info("perf: hardware counters unavailable: {}", pmu_.reason);
    }
    if (!pmu_.software_cgroup) spdlog::info("perf: {}", pmu_.software_reason);
  }

  ResctrlInfo DetectHostResctrl() {
    absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*fs_, options_.host_root);
    ResctrlInfo info = DetectResctrl(*fs_, table.ok() ? *table : std::vector<MountEntry>{});
    // The generic reason names Intel RDT / AMD PQoS; an Arm host needs MPAM.
    if (arch_.vendor == CpuVendor::kArm && !info.usable && info.reason.starts_with("no resctrl")) {
      info.reason =
          "no resctrl on this Arm CPU: RDT is x86 only, and Arm's MPAM reaches resctrl only "
          "with a kernel that wires its MPAM driver (Linux 6.19 has the driver) to resctrl";
    } else if (arch_.vendor == CpuVendor::kArm && !info.usable &&
               info.reason.find("info/L3_MON") != std::string::npos) {
      info.reason = absl::StrCat(info.reason,
                                 " (Arm MPAM: this kernel exposes no MPAM monitors (CSU/MBWU) "
                                 "through resctrl)");
    }
    return info;
  }

  void DetectAllocation() {
    absl::StatusOr<std::vector<MountEntry>> table = ReadMountTable(*fs_, options_.host_root);
    alloc_ = DetectResctrlAllocation(*fs_, table.ok() ? *table : std::vector<MountEntry>{},
                                     arch_.vendor);
    for (const L3DomainInfo& domain : topology_.l3_domains) {
      std::set<uint32_t>& nodes = l3_numa_[domain.id];
      nodes.insert(domain.numa_node);
      nodes.insert(domain.numa_nodes.begin(), domain.numa_nodes.end());
    }
    if (!alloc_.mounted) {
      allocation_reason_ = absl::StrCat("unavailable: ", alloc_.l3_reason);
      return;
    }
    // Made even with the flag off: it removes the groups an earlier agent left.
    allocator_ = std::make_unique<ResctrlAllocator>(*fs_, alloc_, options_.resctrl_allocation,
                                                    env_.resctrl_group_prefix);
    if (absl::Status s = allocator_->Start(); !s.ok()) {
      spdlog::warn("resctrl allocation: removing stale groups: {}", std::string(s.message()));
    }
  }

  // The allocator's view of a pod: its class (annotation) and the L3 domains
  // of its exclusive CPUs (every domain for the shared pool).
  AllocPod AllocPodOf(const PodCgroup& pod, const PodMetadata* m, const std::vector<int>& tids,
                      const KubeletState& kubelet, const PodResourcesView& resources) const {
    AllocPod out{.uid = pod.uid, .tids = tids};
    if (m != nullptr) {
      if (auto it = m->annotations.find("neighborly.io/class"); it != m->annotations.end()) {
        out.workload_class = absl::AsciiStrToLower(it->second);
      }
    }
    CpuSet exclusive;
    const std::string key = m != nullptr ? absl::StrCat(m->namespace_name, "/", m->name) : "";
    if (m != nullptr && resources.pods.ok() && resources.pods->contains(key)) {
      exclusive = resources.pods->at(key).exclusive_cpus;
    } else if (kubelet.cpu_manager.ok()) {
      exclusive = kubelet.cpu_manager->ExclusiveCpus(pod.uid);
    }
    for (const L3DomainInfo& domain : topology_.l3_domains) {
      const bool any = exclusive.empty() ||
                       std::any_of(exclusive.begin(), exclusive.end(), [&](uint32_t cpu) {
                         return std::binary_search(domain.cpus.begin(), domain.cpus.end(), cpu);
                       });
      if (any) out.l3_domains.insert(domain.id);
    }
    return out;
  }

  // What this node cannot measure, one line per gap (capabilities.not_measured).
  void FillNotMeasured(tv1::NodeReport& report) {
    tv1::Capabilities* caps = report.mutable_capabilities();
    if (!rdt_.usable) {
      caps->add_not_measured(absl::StrCat(
          "L3 occupancy and memory bandwidth (per pod, per L3 domain): ", rdt_.reason));
    } else {
      if (!rdt_.occupancy) caps->add_not_measured("L3 occupancy: llc_occupancy not monitored");
      if (!rdt_.mbm_total) {
        caps->add_not_measured("memory bandwidth: mbm_total_bytes not monitored (CMT-only CPU)");
      }
    }
    if (!pmu_.hardware) {
      caps->add_not_measured(absl::StrCat("IPC and LLC misses: ", pmu_.reason));
    }
    if (!psi_available_) caps->add_not_measured(absl::StrCat("PSI: ", psi_reason_));
    for (const tv1::L3Domain& domain : report.topology().l3_domains()) {
      if (domain.numa_nodes_size() > 1 && domain.monitor_parts_size() == 0 && rdt_.usable) {
        caps->add_not_measured(absl::StrCat(
            "memory bandwidth per NUMA node inside L3 domain ", domain.id(), " (NUMA nodes ",
            absl::StrJoin(domain.numa_nodes(), ","),
            "): resctrl gives no mon_sub_L3 parts, so those NUMA nodes report no bandwidth"));
      }
    }
    const auto& l3 = report.topology().l3_domains();
    if (!l3.empty() && l3[0].size_bytes() == 0) {
      caps->add_not_measured("L3 size: not in the sysfs cache information");
    }
  }

  // libpqos works on this machine's own /sys and /proc; in OS mode it drives
  // resctrl, whose root group then gives the per-domain node totals.
  void SetupPqos() {
    if (!env_.pqos && options_.host_root != "/") {
      rdt_.reason = absl::StrCat(
          "--rdt-backend pqos reads this machine's own /sys and /proc, not --host-root ",
          options_.host_root, "; use --rdt-backend resctrl there");
      spdlog::warn("pqos: {}", rdt_.reason);
      return;
    }
    std::shared_ptr<PqosLibrary> library =
        env_.pqos ? env_.pqos : std::shared_ptr<PqosLibrary>(NewLibpqos());
    const uint32_t pod_domain = topology_.l3_domains.empty() ? 0 : topology_.l3_domains.front().id;
    absl::StatusOr<std::unique_ptr<PqosMonitor>> monitor =
        PqosMonitor::Create(library, pod_domain, [this]() -> absl::StatusOr<GroupCounters> {
          if (!node_resctrl_) {
            return absl::UnavailableError(
                "the pqos backend measures pods only and resctrl is not mounted for node totals");
          }
          return node_resctrl_->ReadNode();
        });
    if (!monitor.ok()) {
      rdt_.reason = absl::StrCat("--rdt-backend pqos: ", monitor.status().message());
      spdlog::info("pqos: {}", rdt_.reason);
      return;
    }
    rdt_ = (*monitor)->info();
    rdt_monitor_ = std::move(*monitor);
    if (ResctrlInfo host = DetectHostResctrl(); host.usable) {
      node_resctrl_ = std::make_unique<ResctrlMonitor>(*fs_, host, env_.resctrl_group_prefix);
    }
    spdlog::info("pqos: monitoring pods through libpqos ({} RMIDs)", rdt_.num_rmids);
  }

  void SetupResctrl() {
    if (options_.rdt_backend == "none") {
      rdt_.reason = "RDT disabled (--rdt-backend none)";
      return;
    }
    if (options_.rdt_backend == "pqos") {
      SetupPqos();
      return;
    }
    rdt_ = DetectHostResctrl();
    if (!rdt_.usable) {
      spdlog::info("resctrl: {}", rdt_.reason);
      return;
    }
    rdt_monitor_ = std::make_unique<ResctrlMonitor>(*fs_, rdt_, env_.resctrl_group_prefix);
    std::set<std::string> running;
    if (cgroups_) {
      if (absl::StatusOr<std::vector<PodCgroup>> pods = cgroups_->Discover(); pods.ok()) {
        for (const PodCgroup& pod : *pods) running.insert(pod.uid);
      }
    }
    if (absl::Status s = rdt_monitor_->Start(running); !s.ok()) {
      spdlog::warn("resctrl: collecting stale groups: {}", std::string(s.message()));
    }
  }

  void SetupKubeletClients() {
    if (env_.pod_metadata) {
      cri_ = env_.pod_metadata;
    } else if (std::optional<std::string> socket = FindCriSocket(*fs_, options_.cri_sockets)) {
      PodMetadataFilter filter;
      filter.label_keys = options_.pod_label_keys;
      cri_ = NewCriPodMetadataSource(*socket, filter);
      spdlog::info("pod metadata: {}", cri_->Describe());
    } else {
      std::vector<std::string> tried = options_.cri_sockets;
      if (tried.empty()) tried.assign(std::begin(kDefaultCriSockets), std::end(kDefaultCriSockets));
      cri_reason_ =
          absl::StrCat("no CRI socket under the host root (looked for ", absl::StrJoin(tried, ", "),
                       "): pods are reported without labels/annotations");
      spdlog::info("pod metadata: {}", cri_reason_);
    }
    if (env_.pod_resources) {
      pod_resources_ = env_.pod_resources;
    } else if (fs_->Exists(kPodResourcesSocket)) {
      pod_resources_ = NewPodResourcesClient(fs_->HostPath(kPodResourcesSocket));
      spdlog::info("exclusive CPUs: {}", pod_resources_->Describe());
    }
  }

  // Logs a source's error once per distinct message.
  void LogOnce(std::string& last, const absl::Status& status, std::string_view what) {
    if (status.ok() || std::string(status.message()) == last) return;
    last = std::string(status.message());
    spdlog::warn("{}: {}", what, last);
  }

  absl::StatusOr<std::map<std::string, PodMetadata>> ListPodMetadata() {
    if (!cri_) return absl::UnavailableError(cri_reason_);
    absl::StatusOr<std::map<std::string, PodMetadata>> listed = cri_->List();
    LogOnce(cri_error_, listed.status(), "pod metadata");
    if (listed.ok()) cri_error_.clear();
    return listed;
  }

  PodResourcesView AskPodResources() {
    PodResourcesView view;
    if (!pod_resources_) return view;
    absl::StatusOr<std::vector<PodAllocation>> pods = pod_resources_->List();
    LogOnce(podres_error_, pods.status(), "PodResources");
    if (pods.ok()) {
      podres_error_.clear();
      std::map<std::string, PodAllocation> by_name;
      for (PodAllocation& pod : *pods) {
        const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
        by_name[key] = std::move(pod);
      }
      view.pods = std::move(by_name);
      view.allocatable = pod_resources_->GetAllocatableResources();
      LogOnce(allocatable_error_, view.allocatable.status(), "PodResources");
    } else {
      view.pods = pods.status();
    }
    return view;
  }

  void ProbePsi() {
    absl::StatusOr<std::string> text = fs_->ReadFile("/proc/pressure/cpu");
    if (text.ok()) {
      psi_available_ = true;
      return;
    }
    psi_reason_ = ErrnoOf(text.status()) == EOPNOTSUPP
                      ? "PSI disabled in the kernel (psi=0; reading gives EOPNOTSUPP)"
                      : absl::StrCat("no PSI: ", text.status().message());
  }

  void SyncPerf(const std::vector<PodCgroup>& pods) {
    if (!pmu_.hardware || !events_.ok()) return;
    std::set<std::string> seen;
    std::vector<perf_event_attr> attrs = {events_->cycles.attr, events_->instructions.attr};
    if (events_->llc_misses) attrs.push_back(events_->llc_misses->attr);
    for (const PodCgroup& pod : pods) {
      seen.insert(pod.uid);
      if (perf_.contains(pod.uid)) continue;
      PodPerf& p = perf_[pod.uid];
      absl::StatusOr<std::string> dir = cgroups_->PerfEventDir(pod);
      if (!dir.ok()) {
        p.error = std::string(dir.status().message());
        continue;
      }
      absl::StatusOr<std::unique_ptr<CgroupCounters>> counters =
          CgroupCounters::Open(*perf_syscalls_, fs_->HostPath(*dir), topology_.cpus_online, attrs);
      if (counters.ok()) {
        p.counters = std::move(*counters);
      } else {
        p.error = std::string(counters.status().message());
      }
    }
    std::erase_if(perf_, [&](const auto& entry) { return !seen.contains(entry.first); });
  }

  void FillCapabilities(const KubeletState& kubelet,
                        const absl::StatusOr<std::map<std::string, PodMetadata>>& metadata,
                        const PodResourcesView& resources,
                        const std::map<std::string, std::string>& unmonitored,
                        tv1::Capabilities* caps) {
    const std::string no_rdt = rdt_.usable ? "" : rdt_.reason;
    const std::string where = options_.rdt_backend == "pqos"
                                  ? "not among libpqos's monitoring events"
                                  : "not in info/L3_MON/mon_features";
    SetCapability(caps->mutable_resctrl_occupancy(), rdt_.usable && rdt_.occupancy,
                  rdt_.usable ? absl::StrCat("llc_occupancy ", where) : no_rdt);
    SetCapability(caps->mutable_resctrl_mbm_total(), rdt_.usable && rdt_.mbm_total,
                  rdt_.usable ? absl::StrCat("mbm_total_bytes ", where) : no_rdt);
    SetCapability(caps->mutable_resctrl_mbm_local(), rdt_.usable && rdt_.mbm_local,
                  rdt_.usable ? absl::StrCat("mbm_local_bytes ", where) : no_rdt);
    if (rdt_monitor_) {
      caps->set_rmids_total(rdt_.num_rmids);
      caps->set_rmids_free(rdt_monitor_->rmids_free());
    }
    SetCapability(caps->mutable_perf_hardware_counters(), pmu_.hardware, pmu_.reason);
    SetCapability(caps->mutable_psi(), psi_available_, psi_reason_);
    if (!pod_resources_) {
      SetCapability(
          caps->mutable_kubelet_pod_resources(), false,
          absl::StrCat("no ", Av(kPodResourcesSocket),
                       " under the host root: exclusive CPUs come from cpu_manager_state"));
    } else {
      SetCapability(caps->mutable_kubelet_pod_resources(), resources.pods.ok(),
                    resources.pods.ok()
                        ? ""
                        : absl::StrCat(resources.pods.status().message(),
                                       "; exclusive CPUs come from cpu_manager_state"));
    }
    SetCapability(caps->mutable_cpu_manager_state(), kubelet.cpu_manager.ok(),
                  kubelet.cpu_manager.ok() ? "" : Sv(kubelet.cpu_manager.status().message()));
    if (kubelet.cpu_manager.ok() && kubelet.cpu_manager->legacy_container_keys) {
      SetCapability(caps->mutable_cpu_manager_state(), false,
                    "cpu_manager_state is format v1 (keyed by container id): exclusive CPUs "
                    "cannot be tied to pods");
    }
    SetCapability(caps->mutable_pod_metadata(), metadata.ok(),
                  metadata.ok() ? "" : Sv(metadata.status().message()));
    SetCapability(caps->mutable_peak_membw(), peak_.calibrated, peak_.reason);
    caps->set_cpu_architecture(arch_.description);
    tv1::ResctrlAllocation* alloc = caps->mutable_resctrl_allocation();
    SetCapability(alloc->mutable_l3_cat(), alloc_.l3_cat, alloc_.l3_reason);
    SetCapability(alloc->mutable_mba(), alloc_.mba, alloc_.mba_reason);
    if (alloc_.l3_cat || alloc_.mba) {
      alloc->set_num_closids(alloc_.num_closids);
      alloc->set_closids_used(alloc_.closids_used);
    }
    if (alloc_.l3_cat) {
      alloc->set_l3_cbm_mask(alloc_.cbm_mask);
      alloc->set_l3_min_cbm_bits(alloc_.min_cbm_bits);
      alloc->set_l3_sparse_masks(alloc_.sparse_masks);
    }
    if (alloc_.mba) {
      alloc->set_mba_min(alloc_.mba_min);
      alloc->set_mba_granularity(alloc_.mba_granularity);
      alloc->set_mba_max(alloc_.mba_max);
      alloc->set_mba_unit(std::string(MbaUnitName(alloc_.mba_unit)));
    }
    if (allocator_) {
      const AllocatorStatus& status = allocator_->status();
      alloc->set_allocating(status.allocating);
      alloc->set_allocation_reason(status.reason);
      for (const std::string& group : status.groups) alloc->add_groups(group);
      alloc->set_changes_total(status.changes_total);
      alloc->set_closid_exhausted_total(status.closid_exhausted_total);
      alloc->set_write_errors_total(status.write_errors_total);
      alloc->set_last_write_error(status.last_write_error);
    } else {
      alloc->set_allocation_reason(allocation_reason_);
    }
    for (const auto& [uid, reason] : unmonitored) (*caps->mutable_unmonitored_pods())[uid] = reason;
  }

  void FillTopology(const absl::StatusOr<GroupCounters>& start,
                    const absl::StatusOr<GroupCounters>& end, double seconds, tv1::Topology* out) {
    ToProto(topology_, out);
    for (tv1::NumaNode& node : *out->mutable_numa_nodes()) {
      for (const NodePeak& peak : peak_.nodes) {
        if (peak.numa_node != node.id()) continue;
        if (peak.bytes_per_second) node.set_peak_membw_bytes_per_second(*peak.bytes_per_second);
        node.set_peak_membw_source(peak.source);
        node.set_peak_membw_detail(peak.detail);
      }
    }
    if (!start.ok() || !end.ok()) return;
    ResctrlRates rates = ComputeRates(*start, *end, seconds, rdt_);
    std::map<uint32_t, uint64_t> numa_bw;
    std::set<uint32_t> numa_incomplete;
    for (tv1::L3Domain& domain : *out->mutable_l3_domains()) {
      auto it = rates.domains.find(domain.id());
      if (it == rates.domains.end()) {
        numa_incomplete.insert(domain.numa_node());
        for (uint32_t node : domain.numa_nodes()) numa_incomplete.insert(node);
        continue;
      }
      if (it->second.occupancy_bytes) domain.set_occupancy_bytes(*it->second.occupancy_bytes);
      for (const auto& [node, part] : it->second.parts) {
        tv1::L3MonitorPart* p = domain.add_monitor_parts();
        p->set_numa_node(node);
        if (part.occupancy_bytes) p->set_occupancy_bytes(*part.occupancy_bytes);
        if (part.mbm_total_bytes_per_second) {
          p->set_membw_total_bytes_per_second(*part.mbm_total_bytes_per_second);
        }
        if (part.mbm_local_bytes_per_second) {
          p->set_membw_local_bytes_per_second(*part.mbm_local_bytes_per_second);
        }
      }
      if (domain.numa_nodes_size() > 1) {
        // One L3 over several NUMA nodes (SNC): only its per-node parts say
        // which node's memory controller carried the traffic.
        for (uint32_t node : domain.numa_nodes()) {
          auto part = it->second.parts.find(node);
          if (part == it->second.parts.end() || !part->second.mbm_total_bytes_per_second) {
            numa_incomplete.insert(node);
          } else {
            numa_bw[node] += *part->second.mbm_total_bytes_per_second;
          }
        }
        if (it->second.mbm_total_bytes_per_second) {
          domain.set_membw_total_bytes_per_second(*it->second.mbm_total_bytes_per_second);
        }
      } else if (it->second.mbm_total_bytes_per_second) {
        domain.set_membw_total_bytes_per_second(*it->second.mbm_total_bytes_per_second);
        numa_bw[domain.numa_node()] += *it->second.mbm_total_bytes_per_second;
      } else {
        numa_incomplete.insert(domain.numa_node());
      }
      if (it->second.mbm_local_bytes_per_second) {
        domain.set_membw_local_bytes_per_second(*it->second.mbm_local_bytes_per_second);
      }
    }
    for (tv1::NumaNode& node : *out->mutable_numa_nodes()) {
      if (numa_bw.contains(node.id()) && !numa_incomplete.contains(node.id())) {
        node.set_membw_bytes_per_second(numa_bw[node.id()]);
      }
    }
  }

  void FillKubelet(const KubeletState& kubelet, const PodResourcesView& resources,
                   tv1::KubeletPolicies* out) {
    CpuSet reserved;
    if (kubelet.config.ok()) {
      const KubeletConfig& c = *kubelet.config;
      out->set_cpu_manager_policy(c.cpu_manager_policy.empty() ? "none" : c.cpu_manager_policy);
      out->set_topology_manager_policy(
          c.topology_manager_policy.empty() ? "none" : c.topology_manager_policy);
      out->set_topology_manager_scope(c.topology_manager_scope.empty() ? "container"
                                                                       : c.topology_manager_scope);
      out->set_reserved_cpus(c.reserved_system_cpus);
      reserved = ParseCpuList(c.reserved_system_cpus).value_or(CpuSet{});
      out->mutable_cpu_manager_policy_options()->insert(c.cpu_manager_policy_options.begin(),
                                                        c.cpu_manager_policy_options.end());
      out->mutable_topology_manager_policy_options()->insert(
          c.topology_manager_policy_options.begin(), c.topology_manager_policy_options.end());
      out->set_memory_manager_policy(c.memory_manager_policy.empty() ? "none"
                                                                     : c.memory_manager_policy);
      out->mutable_reserved_memory_bytes_by_numa()->insert(c.reserved_memory_bytes.begin(),
                                                           c.reserved_memory_bytes.end());
      out->mutable_eviction_hard()->insert(c.eviction_hard.begin(), c.eviction_hard.end());
      out->mutable_eviction_soft()->insert(c.eviction_soft.begin(), c.eviction_soft.end());
      if (!c.eviction_hard.empty() || !c.eviction_soft.empty()) {
        out->set_eviction_source(kubelet.config_source);
      }
    }
    std::string source = kubelet.config_source;
    if (kubelet.memory_manager.ok()) {
      out->set_memory_manager_policy(kubelet.memory_manager->policy);
      absl::StrAppend(&source, source.empty() ? "" : "; ", "memory_manager_state");
    }
    {
      CpuSet allocatable;
      for (uint32_t cpu : topology_.cpus_online) {
        if (!std::binary_search(reserved.begin(), reserved.end(), cpu)) allocatable.push_back(cpu);
      }
      out->set_allocatable_cpus(FormatCpuList(allocatable));
    }
    if (kubelet.cpu_manager.ok()) {
      // The checkpoint is what the kubelet actually runs with.
      out->set_cpu_manager_policy(kubelet.cpu_manager->policy);
      absl::StrAppend(&source, source.empty() ? "" : "; ", "cpu_manager_state");
      out->set_source(source);
      if (kubelet.cpu_manager->policy == "static") {
        out->set_shared_pool_cpus(FormatCpuList(kubelet.cpu_manager->default_cpu_set));
        return;
      }
    }
    out->set_source(source);
    if (resources.pods.ok() && resources.allocatable.ok()) {
      // PodResources: allocatable = online - reserved; the shared pool is what
      // no pod holds exclusively.
      const CpuSet& allocatable = resources.allocatable->cpus;
      if (out->reserved_cpus().empty()) {
        CpuSet held_back;
        for (uint32_t cpu : topology_.cpus_online) {
          if (!std::binary_search(allocatable.begin(), allocatable.end(), cpu)) {
            held_back.push_back(cpu);
          }
        }
        out->set_reserved_cpus(FormatCpuList(held_back));
      }
      out->set_allocatable_cpus(FormatCpuList(allocatable));
      std::set<uint32_t> exclusive;
      for (const auto& [key, pod] : *resources.pods) {
        exclusive.insert(pod.exclusive_cpus.begin(), pod.exclusive_cpus.end());
      }
      CpuSet shared;
      for (uint32_t cpu : allocatable) {
        if (!exclusive.contains(cpu)) shared.push_back(cpu);
      }
      out->set_shared_pool_cpus(FormatCpuList(shared));
      return;
    }
    CpuSet shared;
    for (uint32_t cpu : topology_.cpus_online) {
      if (!std::binary_search(reserved.begin(), reserved.end(), cpu)) shared.push_back(cpu);
    }
    out->set_shared_pool_cpus(FormatCpuList(shared));
  }

  void FillRdt(const std::string& uid, const std::map<std::string, GroupCounters>& start,
               const std::map<std::string, GroupCounters>& end,
               const std::map<std::string, std::string>& unmonitored, double seconds,
               tv1::PodReport& out) {
    auto& unavailable = *out.mutable_unavailable();
    std::string reason;
    if (!rdt_monitor_) {
      reason = rdt_.reason;
    } else if (unmonitored.contains(uid) && !rdt_monitor_->monitored().contains(uid)) {
      reason = unmonitored.at(uid);
    } else if (!start.contains(uid) || !end.contains(uid)) {
      reason = "the pod's resctrl group could not be read";
    }
    if (!reason.empty()) {
      unavailable["llc_occupancy_bytes"] = reason;
      unavailable["membw_total_bytes_per_second"] = reason;
      unavailable["membw_local_bytes_per_second"] = reason;
      return;
    }
    ResctrlRates rates = ComputeRates(start.at(uid), end.at(uid), seconds, rdt_);
    if (rates.occupancy_bytes) out.set_llc_occupancy_bytes(*rates.occupancy_bytes);
    if (rates.mbm_total_bytes_per_second) {
      out.set_membw_total_bytes_per_second(*rates.mbm_total_bytes_per_second);
    }
    if (rates.mbm_local_bytes_per_second) {
      out.set_membw_local_bytes_per_second(*rates.mbm_local_bytes_per_second);
    }
    for (const auto& [metric, why] : rates.unavailable) unavailable[metric] = why;
    if (unmonitored.contains(uid)) unavailable["resctrl_threads"] = unmonitored.at(uid);
  }

  // Issue 26: working set, limit and the containers' oom_score_adj.
  void FillPodMemory(const PodCgroup& pod, const PodSample& sample, tv1::PodReport& out) {
    if (sample.memory_working_set_bytes) {
      out.set_memory_working_set_bytes(*sample.memory_working_set_bytes);
    }
    if (sample.memory_limit_bytes) out.set_memory_limit_bytes(*sample.memory_limit_bytes);
    absl::StatusOr<std::vector<int>> pids = cgroups_->Processes(pod);
    if (!pids.ok()) {
      (*out.mutable_unavailable())["oom_score_adj"] = std::string(pids.status().message());
      return;
    }
    std::set<int32_t> seen;
    std::string problem;
    for (int pid : *pids) {
      absl::StatusOr<std::string> text =
          fs_->ReadFile(absl::StrCat("/proc/", pid, "/oom_score_adj"));
      if (!text.ok()) continue;  // exited between the two reads
      std::optional<int32_t> adj = ParseInt<int32_t>(Trim(*text));
      if (!adj || *adj < -1000 || *adj > 1000) {
        problem = absl::StrCat("/proc/", pid, "/oom_score_adj: \"", Av(Trim(*text)),
                               "\" is not in -1000..1000");
        continue;
      }
      // The sandbox (pause) process gets -998 from the runtime, not the kubelet.
      if (*adj != -998) seen.insert(*adj);
    }
    for (int32_t adj : seen) out.add_oom_score_adj(adj);
    if (seen.empty()) {
      (*out.mutable_unavailable())["oom_score_adj"] =
          problem.empty() ? "no readable /proc/PID/oom_score_adj for the pod's processes" : problem;
    }
  }

  // The node's memory.available as the kubelet computes it: capacity minus the
  // working set, i.e. MemTotal - (MemTotal - MemFree - Inactive(file)).
  void FillNodeMemory(tv1::NodeReport& report) {
    absl::StatusOr<std::string> text = fs_->ReadFile("/proc/meminfo");
    if (!text.ok()) return;
    std::optional<uint64_t> total, free, inactive_file;
    for (std::string_view line : SplitLines(*text)) {
      std::vector<std::string_view> f = SplitFields(line);
      if (f.size() < 2) continue;
      std::optional<uint64_t> kib = ParseInt<uint64_t>(f[1]);
      if (!kib || *kib > (UINT64_MAX >> 10)) continue;
      if (f[0] == "MemTotal:") total = *kib << 10;
      if (f[0] == "MemFree:") free = *kib << 10;
      if (f[0] == "Inactive(file):") inactive_file = *kib << 10;
    }
    if (!total || !free || !inactive_file) return;
    tv1::NodeMemory* memory = report.mutable_memory();
    memory->set_capacity_bytes(*total);
    memory->set_available_bytes(std::min(*total, *free + *inactive_file));
    memory->set_source("/proc/meminfo");
  }

  void FillPerf(const std::string& uid, const std::map<std::string, CounterSnapshot>& start,
                const std::map<std::string, CounterSnapshot>& end, double seconds,
                tv1::PodReport& out) {
    auto& unavailable = *out.mutable_unavailable();
    std::string reason;
    if (!pmu_.hardware) {
      reason = pmu_.reason;
    } else if (auto it = perf_.find(uid); it == perf_.end() || !it->second.counters) {
      reason = it == perf_.end() ? "no perf counters for the pod" : it->second.error;
    } else if (!start.contains(uid) || !end.contains(uid)) {
      reason = "perf counters unreadable";
    }
    if (reason.empty()) {
      PerfWindow w = ComputePerfWindow(start.at(uid), end.at(uid));
      // -1: no sample (the event never ran during the window).
      auto value = [&](size_t i) {
        return i < w.values.size() && w.values[i] ? *w.values[i] : -1.0;
      };
      const double cycles = value(0), instructions = value(1), misses = value(2);
      if (cycles > 0 && instructions >= 0) {
        out.set_ipc(instructions / cycles);
      } else {
        unavailable["ipc"] = "the pod did not run during the window";
      }
      if (misses >= 0 && seconds > 0) {
        // Where MBM is missing the extender bounds bandwidth by misses x 64 B.
        out.set_llc_misses_per_second(static_cast<uint64_t>(misses / seconds));
      } else {
        unavailable["llc_misses_per_second"] = events_.ok() && !events_->llc_misses
                                                   ? "no LLC-miss event encodes on this CPU"
                                                   : "the pod did not run during the window";
      }
      if (misses >= 0 && instructions > 0) {
        out.set_llc_misses_per_kilo_instructions(misses * 1000 / instructions);
      } else {
        unavailable["llc_misses_per_kilo_instructions"] =
            events_.ok() && !events_->llc_misses ? "no LLC-miss event encodes on this CPU"
                                                 : "the pod did not run during the window";
      }
      return;
    }
    unavailable["ipc"] = reason;
    unavailable["llc_misses_per_kilo_instructions"] = reason;
    unavailable["llc_misses_per_second"] = reason;
  }

  HostAgentOptions options_;
  HostAgentEnvironment env_;
  std::shared_ptr<Filesystem> fs_;
  std::shared_ptr<const Clock> clock_;
  std::shared_ptr<PerfSyscalls> perf_syscalls_;
  Topology topology_;
  std::string node_name_;
  std::string boot_id_;
  PeakMembwReport peak_;
  uint64_t sequence_ = 0;
  absl::Duration cost_;
  std::optional<PodCgroups> cgroups_;
  std::string cgroups_error_;
  std::string pods_error_;
  absl::StatusOr<HardwareEvents> events_ = absl::UnavailableError("not probed");
  PmuProbe pmu_;
  ResctrlInfo rdt_;
  CpuArchitecture arch_;
  ResctrlAllocInfo alloc_;
  std::unique_ptr<ResctrlAllocator> allocator_;  // null: resctrl not mounted
  std::string allocation_reason_;                // why there is no allocator
  std::optional<AllocationPolicyView> policy_;   // from the extender's latest ack
  std::map<uint32_t, std::set<uint32_t>> l3_numa_;  // L3 domain id -> its NUMA nodes
  std::unique_ptr<RdtMonitor> rdt_monitor_;       // resctrl or libpqos
  std::unique_ptr<ResctrlMonitor> node_resctrl_;  // pqos backend: node totals only
  std::map<std::string, PodPerf> perf_;
  bool psi_available_ = false;
  std::string psi_reason_;
  std::shared_ptr<PodMetadataSource> cri_;
  std::string cri_reason_;  // why there is no CRI client
  std::string cri_error_;   // last List error, logged once
  std::shared_ptr<PodResourcesSource> pod_resources_;
  std::string podres_error_;
  std::string allocatable_error_;
};

}  // namespace

absl::StatusOr<PeakMembwReport> CalibratePeakMembw(const HostAgentOptions& options,
                                                   HostAgentEnvironment environment) {
  std::shared_ptr<Filesystem> fs =
      environment.filesystem ? environment.filesystem
                             : std::shared_ptr<Filesystem>(NewRealFilesystem(options.host_root));
  std::shared_ptr<const Clock> clock =
      environment.clock ? environment.clock : std::make_shared<RealClock>();
  absl::StatusOr<Topology> topology = ReadTopology(*fs);
  if (!topology.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot read the CPU topology under ",
                                                      options.host_root, ": ",
                                                      topology.status().message()));
  }
  return ResolvePeak(options, environment, *topology, *fs, *clock, ReadBootId(*fs));
}

absl::StatusOr<std::unique_ptr<HostAgent>> HostAgent::Create(const HostAgentOptions& options) {
  return Create(options, HostAgentEnvironment{});
}

absl::StatusOr<std::unique_ptr<HostAgent>> HostAgent::Create(const HostAgentOptions& options,
                                                             HostAgentEnvironment environment) {
  auto agent = std::make_unique<HostAgentImpl>(options, std::move(environment));
  if (absl::Status s = agent->Init(); !s.ok()) return s;
  return agent;
}

}  // namespace neighborly::agent
