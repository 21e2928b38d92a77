// Placement service round trip on loopback: one gRPC channel doing, per pod,
// what the scheduler plugin does at 5,000 nodes: Filter with no names (the
// extender judges all 5,000 nodes it knows and answers the refusals), Score
// with 500 names (the feasible nodes kube-scheduler scores), Reserve on one
// node; then Unreserve, so the state does not fill with bookings. Against the
// real PlacementServer and ExtenderCore, with the HTTP benchmarks' synthetic
// cluster and pod. Prints p50/p90/p99 per call (docs/performance.md).
//
//   build/default/bench/placement_roundtrip_bench [pods, default 2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/http_bench_support.h"
#include "extender/src/placement/placement_service.h"
#include "extender/src/placement/pod_from_proto.h"

namespace {

namespace pv1 = ::neighborly::placement::v1;

// The HTTP benchmarks' Burstable trainer pod, as the plugin sends it.
pv1::Pod TrainerPod() {
  pv1::Pod pod;
  pod.set_uid("5f0c1a52-3b7e-4c61-9d0e-2a8f1e6b9c01");
  pod.set_namespace_("ml");
  pod.set_name("trainer-7d9f8-x2kq4");
  (*pod.mutable_labels())["app"] = "trainer";
  (*pod.mutable_labels())["pod-template-hash"] = "7d9f8";
  (*pod.mutable_labels())["workload-type"] = "batch";
  (*pod.mutable_annotations())["neighborly.io/llc-bytes"] = "24Mi";
  pv1::OwnerReference* owner = pod.add_owner_references();
  owner->set_kind("ReplicaSet");
  owner->set_name("trainer-7d9f8");
  owner->set_controller(true);
  pv1::Container* c = pod.add_containers();
  c->set_name("trainer");
  c->set_cpu_request_millicores(2000);
  c->set_memory_request_bytes(4ll << 30);
  pod.set_qos_class("Burstable");
  return pod;
}

template <typename Fn>
double Timed(Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!fn()) {
    std::fprintf(stderr, "call failed\n");
    std::exit(1);
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void Report(const char* call, std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  std::printf("%-22s n=%zu  p50 %.0f us  p90 %.0f us  p99 %.0f us  max %.0f us\n", call, v.size(),
              v[v.size() / 2], v[v.size() * 90 / 100], v[v.size() * 99 / 100], v.back());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace neighborly;
  const int pods = argc > 1 ? std::atoi(argv[1]) : 2000;
  bench::SyntheticCluster cluster(5000);
  extender::PlacementMetrics metrics;
  extender::PlacementServer::Options options;
  options.address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<extender::PlacementServer>> server =
      extender::PlacementServer::Start(*cluster.core, options, &metrics);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  auto stub = pv1::Placement::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));

  pv1::FilterRequest filter;
  *filter.mutable_pod() = TrainerPod();
  pv1::ScoreRequest score;
  *score.mutable_pod() = TrainerPod();
  for (int i = 0; i < 500; ++i) score.add_node_names(bench::NodeName(i * 10));
  pv1::ReserveRequest reserve;
  *reserve.mutable_pod() = TrainerPod();
  pv1::UnreserveRequest unreserve;
  unreserve.set_pod_uid(TrainerPod().uid());

  std::vector<double> filter_us, score_us, reserve_us, pod_us;
  uint32_t judged = 0;
  int refused = 0;
  for (int i = -200; i < pods; ++i) {  // 200 warm-up pods
    const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);
    pv1::FilterResponse filtered;
    const double f = Timed([&] {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      return stub->Filter(&context, filter, &filtered).ok();
    });
    judged = filtered.nodes_judged();
    refused = filtered.refused_size();
    pv1::ScoreResponse scored;
    const double s = Timed([&] {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      return stub->Score(&context, score, &scored).ok();
    });
    reserve.set_node_name(bench::NodeName((i + 200) % 5000));
    pv1::ReserveResponse reserved;
    const double r = Timed([&] {
      grpc::ClientContext context;
      context.set_deadline(deadline);
      return stub->Reserve(&context, reserve, &reserved).ok();
    });
    unreserve.set_node_name(reserve.node_name());
    pv1::UnreserveResponse released;
    grpc::ClientContext context;
    if (!stub->Unreserve(&context, unreserve, &released).ok() || !released.released()) {
      std::fprintf(stderr, "Unreserve did not release the booking\n");
      return 1;
    }
    if (i < 0) continue;
    filter_us.push_back(f);
    score_us.push_back(s);
    reserve_us.push_back(r);
    pod_us.push_back(f + s + r);
    if (i % 100 == 0) cluster.clock.Advance(absl::Milliseconds(100));
  }
  (*server)->Shutdown();

  // The same calls on the core alone (no gRPC, no protobuf): what the
  // transport adds is the difference.
  extender::IncomingPod pod;
  if (!extender::PodFromProto(TrainerPod(), extender::PlacementLimits(), pod).ok()) return 1;
  std::vector<std::string_view> names, score_names;
  for (const std::string& n : score.node_names()) score_names.push_back(n);
  std::vector<extender::NodeDecision> decisions;
  std::vector<double> core_filter_us, core_score_us, core_reserve_us;
  for (int i = -200; i < pods; ++i) {
    const double f = Timed([&] {
      cluster.core->FilterKnownNodes(pod, false, names, decisions);
      return true;
    });
    const double s = Timed([&] {
      cluster.core->Score(pod, score_names, false, decisions);
      return true;
    });
    const std::string node = bench::NodeName((i + 200) % 5000);
    const double r = Timed([&] { return cluster.core->Reserve(pod, node, false); });
    cluster.core->Unreserve(pod.uid, node);
    if (i < 0) continue;
    core_filter_us.push_back(f);
    core_score_us.push_back(s);
    core_reserve_us.push_back(r);
  }
  std::printf(
      "placement round trip, one channel, 5,000 nodes known (Filter judged %u, refused %d), "
      "Score of 500 names, %d pods:\n",
      judged, refused, pods);
  Report("Filter (all nodes)", filter_us);
  Report("Score (500 names)", score_us);
  Report("Reserve", reserve_us);
  Report("per pod (F + S + R)", pod_us);
  std::printf("the same calls on ExtenderCore in-process (no gRPC, no protobuf):\n");
  Report("core Filter (all)", core_filter_us);
  Report("core Score (500)", core_score_us);
  Report("core Reserve", core_reserve_us);
  return 0;
}
