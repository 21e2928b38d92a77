// Shared by the HTTP benchmarks: request bodies as kube-scheduler sends them
// and a Decider that is the real ExtenderCore filled with synthetic telemetry.
#ifndef NEIGHBORLY_BENCH_HTTP_BENCH_SUPPORT_H_
#define NEIGHBORLY_BENCH_HTTP_BENCH_SUPPORT_H_

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "extender/src/core/extender_core.h"
#include "extender/src/model/testing/report_builder.h"

namespace neighborly::bench {

inline std::string NodeName(int i) { return absl::StrFormat("node-%05d", i); }

// The Pod of the protocol notes' example (a): a Burstable trainer pod.
inline std::string PodJson() {
  return R"({"metadata":{"name":"trainer-7d9f8-x2kq4","generateName":"trainer-7d9f8-","namespace":"ml","uid":"5f0c1a52-3b7e-4c61-9d0e-2a8f1e6b9c01","resourceVersion":"918273","creationTimestamp":"2026-07-01T10:00:00Z","labels":{"app":"trainer","pod-template-hash":"7d9f8","workload-type":"batch"},"annotations":{"neighborly.io/llc-bytes":"24Mi"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"trainer-7d9f8","uid":"0b6c7e2a-1111-4d2e-9a61-3c2b5d7e8f90","controller":true,"blockOwnerDeletion":true}]},"spec":{"volumes":[{"name":"kube-api-access-x2kq4","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"trainer","image":"registry.example.com/trainer:1.4","args":["--epochs","40","--data","/data"],"env":[{"name":"OMP_NUM_THREADS","value":"2"}],"resources":{"limits":{"example.com/telemetry":"1"},"requests":{"cpu":"2","example.com/telemetry":"1","memory":"4Gi"}},"volumeMounts":[{"name":"kube-api-access-x2kq4","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Pending","qosClass":"Burstable"}})";
}

// ExtenderArgs with NodeNames (nodeCacheCapable: true).
inline std::string NamesBody(int n) {
  std::string body = absl::StrCat(R"({"Pod":)", PodJson(), R"(,"Nodes":null,"NodeNames":[)");
  for (int i = 0; i < n; ++i) absl::StrAppend(&body, i ? "," : "", "\"", NodeName(i), "\"");
  body += "]}";
  return body;
}

// A v1.Node as the scheduler's informer holds it: labels, annotations,
// managedFields, conditions, addresses, nodeInfo and `images` container images
// (the bulk of a real Node object).
inline std::string NodeJson(int i, int images) {
  const std::string name = NodeName(i);
  std::string s = absl::StrCat(
      R"({"metadata":{"name":")", name, R"(","uid":"8a1d6f0e-2c4b-4f7a-b1d3-)",
      absl::StrFormat("%012d", i),
      R"(","resourceVersion":"918001","creationTimestamp":"2026-06-01T08:00:00Z","labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":")",
      name,
      R"(","kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"m6i.4xlarge","topology.kubernetes.io/region":"eu-west-1","topology.kubernetes.io/zone":"eu-west-1a","node-role.kubernetes.io/worker":"","pool":"general"},"annotations":{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true","csi.volume.kubernetes.io/nodeid":"{\"ebs.csi.aws.com\":\"i-0123456789abcdef0\"}","kubeadm.alpha.kubernetes.io/cri-socket":"unix:///run/containerd/containerd.sock"},"managedFields":[)");
  for (int m = 0; m < 4; ++m) {
    absl::StrAppend(
        &s, m ? "," : "",
        R"({"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-07-01T09:59:40Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:node.alpha.kubernetes.io/ttl":{},"f:volumes.kubernetes.io/controller-managed-attach-detach":{}},"f:labels":{".":{},"f:beta.kubernetes.io/arch":{},"f:kubernetes.io/hostname":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:message":{},"f:reason":{},"f:status":{}}},"f:images":{}}},"subresource":"status"})");
  }
  absl::StrAppend(
      &s,
      R"(]},"spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],"providerID":"aws:///eu-west-1a/i-0123456789abcdef0","taints":[{"key":"example.com/maintenance","value":"soon","effect":"PreferNoSchedule"}]},"status":{"capacity":{"cpu":"16","ephemeral-storage":"102626232Ki","hugepages-1Gi":"0","hugepages-2Mi":"0","memory":"65842288Ki","pods":"110"},"allocatable":{"cpu":"15800m","ephemeral-storage":"94580335255","hugepages-1Gi":"0","hugepages-2Mi":"0","memory":"64690288Ki","pods":"110"},"conditions":[)");
  const char* conditions[][3] = {{"MemoryPressure", "False", "KubeletHasSufficientMemory"},
                                 {"DiskPressure", "False", "KubeletHasNoDiskPressure"},
                                 {"PIDPressure", "False", "KubeletHasSufficientPID"},
                                 {"NetworkUnavailable", "False", "RouteCreated"},
                                 {"Ready", "True", "KubeletReady"}};
  for (int c = 0; c < 5; ++c) {
    absl::StrAppend(
        &s, c ? "," : "", R"({"type":")", conditions[c][0], R"(","status":")", conditions[c][1],
        R"(","lastHeartbeatTime":"2026-07-01T09:59:40Z","lastTransitionTime":"2026-06-01T08:00:00Z","reason":")",
        conditions[c][2], R"(","message":"kubelet has no pressure \u003c threshold"})");
  }
  absl::StrAppend(
      &s, R"(],"addresses":[{"type":"InternalIP","address":"10.0.)", i / 250, ".", i % 250,
      R"("},{"type":"Hostname","address":")", name,
      R"j("},{"type":"InternalDNS","address":"ip-10-0-0-11.eu-west-1.compute.internal"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"machineID":"3f1c2b9a8d7e4f60a1b2c3d4e5f60718","systemUUID":"ec2a1b3c-4d5e-6f70-8192-a3b4c5d6e7f8","bootID":"6b2d7c1e-0f3a-4e59-8c7b-9a0d1e2f3a4b","kernelVersion":"6.1.0-21-amd64","osImage":"Debian GNU/Linux 12 (bookworm)","containerRuntimeVersion":"containerd://1.7.24","kubeletVersion":"v1.36.2","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"},"images":[)j");
  for (int m = 0; m < images; ++m) {
    absl::StrAppend(
        &s, m ? "," : "", R"({"names":["registry.example.com/team-)", m % 17, "/service-", m,
        R"(@sha256:9f2b0c1d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b","registry.example.com/team-)",
        m % 17, "/service-", m, R"(:v1.)", m, R"(.0"],"sizeBytes":)", 100000000 + m * 7919, "}");
  }
  absl::StrAppend(&s, R"(],"features":{"supplementalGroupsPolicy":true}}})");
  return s;
}

// ExtenderArgs with Nodes (nodeCacheCapable: false).
inline std::string FullNodesBody(int n, int images) {
  std::string body = absl::StrCat(R"({"Pod":)", PodJson(), R"(,"Nodes":{"metadata":{},"items":[)");
  for (int i = 0; i < n; ++i) absl::StrAppend(&body, i ? "," : "", NodeJson(i, images));
  body += "]},\"NodeNames\":null}";
  return body;
}

// Node `i` of the synthetic cluster: two sockets, six pods (every third node
// has a latency-critical pod, every fifth a batch pod), measured load varying
// with `i`.
inline telemetry::v1::NodeReport SyntheticReport(int i, uint64_t sequence = 1, int pods = 6) {
  telemetry::v1::NodeReport r = extender::testing::TwoSocketNode(NodeName(i), sequence);
  for (int p = 0; p < pods; ++p) {
    extender::testing::PodSpec pod;
    pod.uid = absl::StrCat("uid-", i, "-", p);
    pod.name = absl::StrCat("pod-", i, "-", p);
    // Pods belong to a handful of workloads, as in a real cluster; pod 2 is a
    // replica of the trainer Deployment the benchmark requests place, so its
    // workload profile is in play on every request.
    pod.labels = {{"app", absl::StrCat("service-", p)}};
    if (p == 2) {
      pod.namespace_name = "ml";
      pod.name = absl::StrCat("trainer-7d9f8-", std::string(1, "bcdfghjklm"[i % 10]), "x2kq");
      pod.labels = {{"app", "trainer"}, {"pod-template-hash", "7d9f8"}};
    }
    if (p == 0 && i % 3 == 0) pod.annotations = {{"neighborly.io/class", "latency-critical"}};
    if (p == 1 && i % 5 == 0) pod.labels["workload-type"] = "batch";
    pod.cpu_request_millicores = 1000;
    pod.memory_request_bytes = uint64_t{2} << 30;
    pod.llc_bytes = static_cast<uint64_t>(2 + (i + p) % 6) << 20;
    pod.membw_bytes_per_second = static_cast<uint64_t>(1 + (i * 7 + p) % 5) * 1'000'000'000;
    extender::testing::AddPod(r, pod);
  }
  extender::testing::SetMeasured(r, 0, static_cast<uint64_t>(8 + i % 12) << 20,
                                 static_cast<uint64_t>(5 + i % 30) * 1'000'000'000);
  extender::testing::SetMeasured(r, 1, static_cast<uint64_t>(4 + i % 9) << 20,
                                 static_cast<uint64_t>(3 + i % 20) * 1'000'000'000);
  return r;
}

// The real decision core with `nodes` two-socket nodes of fresh telemetry
// (SyntheticReport), so that filter and prioritize do their full work.
// `evaluation_threads` as http.evaluationThreads (1: the request's own only).
struct SyntheticCluster {
  explicit SyntheticCluster(int nodes, size_t evaluation_threads = 1,
                            extender::ModelConfig config = {}) {
    core = std::make_unique<extender::ExtenderCore>(
        std::move(config), clock,
        extender::ExtenderCore::Options{.evaluation_threads = evaluation_threads});
    clock.Set(absl::FromUnixSeconds(1'700'000'001));
    for (int i = 0; i < nodes; ++i) {
      if (absl::Status s = core->Ingest(SyntheticReport(i)); !s.ok()) {
        std::fprintf(stderr, "synthetic report rejected: %s\n", std::string(s.message()).c_str());
        std::abort();
      }
    }
  }
  FakeClock clock;
  std::unique_ptr<extender::ExtenderCore> core;
};

}  // namespace neighborly::bench

#endif  // NEIGHBORLY_BENCH_HTTP_BENCH_SUPPORT_H_
