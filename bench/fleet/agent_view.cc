#include "bench/fleet/agent_view.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace neighborly::fleet {
namespace {

// Names and values here are generated (no quotes or backslashes), so they are
// written as JSON strings without escaping.
std::string Quoted(const std::string& s) { return absl::StrCat("\"", s, "\""); }

std::string Map(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", Quoted(k), ":", Quoted(v));
  }
  return out + "}";
}

std::string Cpus(int from, int to) { return absl::StrCat(from, "-", to); }

// FNV-1a: the same on every platform (std::hash is not).
uint64_t Fnv(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

const char* QosClassOf(const Workload& w) {
  if (w.guaranteed) return "Guaranteed";
  return w.cpu_request_millicores > 0 || w.memory_request_bytes > 0 ? "Burstable" : "BestEffort";
}

PodIdentity IdentityOf(const Workload& w, int replica, uint64_t seed) {
  PodIdentity id;
  // Its own generator per pod, so that a pod's name and uid do not depend on
  // the others'.
  Rng rng(seed ^ Fnv(w.name) ^ (static_cast<uint64_t>(replica) << 48));
  const std::string suffix = RandomSuffix(rng, 5);
  id.uid = RandomUid(rng);
  if (w.is_job) {
    id.name = absl::StrCat(w.name, "-", suffix);
    id.labels = {{"job-name", w.name},
                 {"batch.kubernetes.io/job-name", w.name},
                 {"controller-uid", w.owner_uid},
                 {"batch.kubernetes.io/controller-uid", w.owner_uid}};
  } else {
    id.name = absl::StrCat(w.name, "-", w.template_hash, "-", suffix);
    id.labels = {{"app", w.name}, {"pod-template-hash", w.template_hash}};
  }
  if (w.labelled_batch) id.labels["workload-type"] = "batch";
  if (w.annotated_latency_critical) id.annotations["neighborly.io/class"] = "latency-critical";
  return id;
}

void AnnotateTrueFootprint(const Workload& w, const GroundTruthParams& truth,
                           PodIdentity& identity) {
  const double bytes = std::min(Scaled(w.behaviour, truth).footprint_bytes, kTrueFootprintCapBytes);
  identity.annotations["neighborly.io/llc-bytes"] = absl::StrCat(static_cast<int64_t>(bytes));
}

std::string NodeScenarioJson(const NodeSpec& node, const KubeletCpus& cpus,
                             const std::vector<MeasuredPod>& pods) {
  const int per_socket = node.cpus_per_socket();
  std::string out = absl::StrCat(
      R"({"apiVersion":"neighborly.io/v1alpha1","kind":"Scenario","nodes":[{"name":")", node.name,
      R"(","threadsPerCore":)", node.threads_per_core, R"(,"kubelet":{"cpuManagerPolicy":")",
      node.static_cpu_manager ? "static" : "none", R"(","topologyManagerPolicy":")",
      node.static_cpu_manager ? "single-numa-node" : "none",
      R"(","topologyManagerScope":"container","reservedCpus":")",
      KubeletCpus::CpuList(cpus.reserved()), R"("},"numaNodes":[)");
  for (int s = 0; s < node.shape.sockets; ++s) {
    absl::StrAppend(&out, s ? "," : "", R"({"id":)", s, R"(,"cpus":")",
                    Cpus(s * per_socket, (s + 1) * per_socket - 1), R"(","memoryBytes":)",
                    node.memory_bytes_per_socket, R"(,"peakMembwBytesPerSecond":)",
                    static_cast<int64_t>(node.shape.peak_membw_bytes_per_second_per_socket), "}");
  }
  absl::StrAppend(&out, R"(],"l3Domains":[)");
  for (int s = 0; s < node.shape.sockets; ++s) {
    absl::StrAppend(&out, s ? "," : "", R"({"id":)", s, R"(,"cpus":")",
                    Cpus(s * per_socket, (s + 1) * per_socket - 1), R"(","sizeBytes":)",
                    static_cast<int64_t>(node.shape.l3_bytes_per_socket), R"(,"numaNode":)", s,
                    "}");
  }
  absl::StrAppend(&out, R"(],"pods":[)");
  bool first = true;
  for (const MeasuredPod& p : pods) {
    const Workload& w = *p.workload;
    const PodOutcome& t = p.truth;
    const auto bandwidth = static_cast<int64_t>(t.membw_bytes_per_second);
    absl::StrAppend(&out, first ? "" : ",", R"({"uid":")", p.identity->uid, R"(","namespace":")",
                    w.namespace_name, R"(","name":")", p.identity->name, R"(","qosClass":")",
                    QosClassOf(w), R"(","labels":)", Map(p.identity->labels), R"(,"annotations":)",
                    Map(p.identity->annotations), R"(,"cpuRequestMillicores":)",
                    w.cpu_request_millicores, R"(,"memoryRequestBytes":)", w.memory_request_bytes);
    first = false;
    if (!p.exclusive_cpus.empty()) {
      absl::StrAppend(&out, R"(,"exclusiveCpus":")", KubeletCpus::CpuList(p.exclusive_cpus),
                      R"(","memoryBytesByNuma":{")", p.numa_node, R"(":)", w.memory_request_bytes,
                      "}");
    }
    absl::StrAppend(&out, R"(,"cpuUsageMillicores":)", std::llround(p.cpu_usage_cores * 1000),
                    R"(,"llcOccupancyBytes":)", static_cast<int64_t>(t.llc_occupancy_bytes),
                    R"(,"membwTotalBytesPerSecond":)", bandwidth, R"(,"membwLocalBytesPerSecond":)",
                    static_cast<int64_t>(static_cast<double>(bandwidth) * t.membw_local_fraction),
                    R"(,"ipc":)", absl::StrFormat("%.4f", std::min(t.ipc, 64.0)),
                    R"(,"llcMissesPerKiloInstructions":)",
                    absl::StrFormat("%.4f", std::min(t.mpki, 1000.0)), "}");
  }
  absl::StrAppend(&out, "]}]}");
  return out;
}

std::string PodJson(const Workload& w, const PodIdentity& id) {
  std::string owner;
  if (w.is_job) {
    owner =
        absl::StrCat(R"({"apiVersion":"batch/v1","kind":"Job","name":")", w.name, R"(","uid":")",
                     w.owner_uid, R"(","controller":true,"blockOwnerDeletion":true})");
  } else {
    owner = absl::StrCat(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","name":")", w.name, "-",
                         w.template_hash, R"(","uid":")", w.owner_uid,
                         R"(","controller":true,"blockOwnerDeletion":true})");
  }
  std::string limits = "{";
  if (w.cpu_limit_millicores > 0)
    absl::StrAppend(&limits, R"("cpu":")", w.cpu_limit_millicores, "m\"");
  if (w.memory_limit_bytes > 0) {
    absl::StrAppend(&limits, limits.size() > 1 ? "," : "", R"("memory":")", w.memory_limit_bytes,
                    "\"");
  }
  limits += "}";
  return absl::StrCat(
      R"({"metadata":{"name":")", id.name, R"(","generateName":")",
      id.name.substr(0, id.name.size() - 5), R"(","namespace":")", w.namespace_name, R"(","uid":")",
      id.uid, R"(","resourceVersion":"1","creationTimestamp":"2026-12-01T10:00:00Z","labels":)",
      Map(id.labels), R"(,"annotations":)", Map(id.annotations), R"(,"ownerReferences":[)", owner,
      R"(]},"spec":{"containers":[{"name":")", w.name, R"(","image":"registry.example.com/)",
      w.name, R"(:1.0","resources":{"requests":{"cpu":")", w.cpu_request_millicores,
      R"(m","memory":")", w.memory_request_bytes, R"("},"limits":)", limits,
      R"(},"terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":")",
      w.is_job ? "Never" : "Always",
      R"(","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler","priority":0},"status":{"phase":"Pending","qosClass":")",
      QosClassOf(w), R"("}})");
}

}  // namespace neighborly::fleet
