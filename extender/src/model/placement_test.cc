// Issue 14 part 3, on the model: the pod is evaluated where the kubelet will
// put it (NUMA node, L3 domain, cores), isolation is per socket for pinned pods
// and by footprint for tiny batch pods, and a latency-critical pod prefers
// whole cores. The HTTP-path versions of the cases are in
// test/integration/topology_placement_test.cc.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "extender/src/model/evaluate.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

namespace tv1 = ::neighborly::telemetry::v1;
using testing::AddPod;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::TwoSocketNode;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr int64_t kGi = 1ll << 30;

IncomingPod Pod(const std::string& name, const std::string& contention_class, int cpus,
                int64_t memory, std::vector<std::pair<std::string, std::string>> hints = {}) {
  IncomingPod pod;
  pod.uid = "uid-" + name;
  pod.namespace_name = "ns";
  pod.name = name;
  pod.qos = cpus > 0 ? QosClass::kGuaranteed : QosClass::kBurstable;
  if (!contention_class.empty()) pod.annotations["neighborly.io/class"] = contention_class;
  for (auto& [k, v] : hints) pod.annotations[k] = v;
  pod.cpu_request_millicores = cpus * 1000;
  pod.memory_request_bytes = memory;
  pod.containers.push_back({cpus * 1000, memory, false});
  return pod;
}

IncomingPod ArticleReplica(const std::string& name) {
  return Pod(
      name, "latency-critical", 2, 4 * kGi,
      {{"neighborly.io/llc-bytes", "18.8M"}, {"neighborly.io/membw-bytes-per-second", "2.8G"}});
}

class PlacementTest : public ::testing::Test {
 protected:
  NodeProfile Profile(const tv1::NodeReport& r) {
    return BuildNodeProfile(r, config_, nullptr, kT0);
  }
  NodeDecision Eval(const IncomingPod& pod, const NodeProfile& p,
                    std::span<const Booking> bookings = {}) {
    NodeDecision d;
    EvaluateNode(MakePodRequest(pod, nullptr, config_), &p, bookings, kT0, config_, d);
    return d;
  }
  ModelConfig config_ = PressureModelConfig();  // the strict pressure model these tests pin down
};

TEST_F(PlacementTest, PinnedPodIsEvaluatedOnTheNumaNodeTheKubeletPicks) {
  // Issue 14, case 1: NUMA 1 idle, NUMA 0 at 81.6 % beside four streaming
  // workers. Both NUMA nodes give equally narrow preferred hints; the kubelet
  // takes the lowest mask, NUMA 0, where the replica would push it past 80 %.
  tv1::NodeReport busy = TwoSocketNode("busy");
  for (int i = 0; i < 4; ++i) {
    AddPod(busy, {.uid = "w" + std::to_string(i),
                  .name = "stream-" + std::to_string(i),
                  .qos = tv1::QOS_CLASS_GUARANTEED,
                  .exclusive_cpus = std::to_string(2 * i) + "-" + std::to_string(2 * i + 1),
                  .membw_bytes_per_second = 10'200'000'000});
  }
  busy.mutable_topology()->mutable_numa_nodes(0)->set_membw_bytes_per_second(40'800'000'000);
  busy.mutable_topology()->mutable_numa_nodes(1)->set_membw_bytes_per_second(0);
  const NodeProfile p = Profile(busy);
  // All of NUMA 0's CPUs are taken by the workers: the kubelet must use NUMA 1.
  NodeDecision full = Eval(ArticleReplica("a"), p);
  EXPECT_TRUE(full.feasible) << full.reason;
  EXPECT_EQ(full.numa_node, 1);

  // Workers on 0-5 leave two CPUs on NUMA 0: the kubelet picks NUMA 0.
  tv1::NodeReport six = TwoSocketNode("six");
  for (int i = 0; i < 3; ++i) {
    AddPod(six, {.uid = "w" + std::to_string(i),
                 .name = "stream-" + std::to_string(i),
                 .qos = tv1::QOS_CLASS_GUARANTEED,
                 .exclusive_cpus = std::to_string(2 * i) + "-" + std::to_string(2 * i + 1),
                 .membw_bytes_per_second = 10'200'000'000});
  }
  six.mutable_topology()->mutable_numa_nodes(0)->set_membw_bytes_per_second(40'800'000'000);
  six.mutable_topology()->mutable_numa_nodes(1)->set_membw_bytes_per_second(0);
  NodeDecision d = Eval(ArticleReplica("a"), Profile(six));
  EXPECT_FALSE(d.feasible);
  // Where the kubelet pins it, the streamers pinned there are one aggressor
  // group (issue 12's aggregate streaming load) before the headroom is judged.
  EXPECT_THAT(d.reason,
              AnyOf(HasSubstr("membw 87% > 80% on NUMA node 0 (where the kubelet will pin it)"),
                    HasSubstr("isolation (socket): latency-critical pod the kubelet will "
                              "pin to NUMA node 0")));

  // The truly quiet node is where it goes.
  NodeDecision quiet = Eval(ArticleReplica("a"), Profile(TwoSocketNode("quiet")));
  EXPECT_TRUE(quiet.feasible);
  EXPECT_EQ(quiet.numa_node, 0);
  EXPECT_EQ(quiet.l3_domain, 0);
  EXPECT_EQ(quiet.exclusive_cpus, 2);
  EXPECT_EQ(quiet.first_cpu, 0);
  // The explanation names node, L3 domain, cores and why.
  bool named = false;
  for (const Term& t : ExplainTerms(quiet)) {
    if (t.name != "placement") continue;
    named = true;
    EXPECT_THAT(t.detail, HasSubstr("kubelet will pin 2 CPUs on NUMA node 0, L3 domain 0, cores "
                                    "from CPU 0 up"));
    EXPECT_THAT(t.detail, HasSubstr("lowest NUMA node on ties"));
  }
  EXPECT_TRUE(named);
}

TEST_F(PlacementTest, InFlightReplicasLandWhereTheKubeletPutsThem) {
  // Issue 14, case 2: two replicas "on separate sockets" would share one L3.
  const NodeProfile p = Profile(TwoSocketNode("n"));
  NodeDecision first = Eval(ArticleReplica("a"), p);
  ASSERT_TRUE(first.feasible);
  const PodRequest req = MakePodRequest(ArticleReplica("a"), nullptr, config_);
  std::vector<Booking> booked = {MakeBooking("uid-a", req, first, kT0 + absl::Seconds(30))};
  EXPECT_EQ(booked[0].numa_node, 0);
  EXPECT_EQ(booked[0].exclusive_cpus, 2);
  NodeDecision second = Eval(ArticleReplica("b"), p, booked);
  ASSERT_TRUE(second.feasible) << second.reason;
  EXPECT_EQ(second.numa_node, 0);  // NUMA 0 still has 6 free CPUs: lowest mask again
  EXPECT_EQ(second.l3_domain, 0);
  EXPECT_GT(second.l3_pressure, 1.0);  // 37.6 MB of working set on a 25 MiB cache
  EXPECT_LT(second.score, first.score);
}

TEST_F(PlacementTest, SocketLevelIsolation) {
  // Issue 14, case 4: a Guaranteed single-NUMA batch job beside a
  // latency-critical pod pinned to the *other* socket.
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "lc",
             .namespace_name = "content",
             .name = "article",
             .qos = tv1::QOS_CLASS_GUARANTEED,
             .annotations = {{"neighborly.io/class", "latency-critical"}},
             .exclusive_cpus = "8-9"});
  const IncomingPod job = Pod("scan", "batch", 4, 8 * kGi);
  NodeDecision d = Eval(job, Profile(r));
  EXPECT_TRUE(d.feasible) << d.reason;
  EXPECT_EQ(d.numa_node, 0);

  // The node-wide rule stays available.
  config_.socket_isolation = false;
  EXPECT_FALSE(Eval(job, Profile(r)).feasible);
  config_.socket_isolation = true;

  // Beside it on the same socket: refused, naming the socket.
  tv1::NodeReport same = TwoSocketNode("same");
  AddPod(same, {.uid = "lc",
                .name = "article",
                .qos = tv1::QOS_CLASS_GUARANTEED,
                .annotations = {{"neighborly.io/class", "latency-critical"}},
                .exclusive_cpus = "0-1"});
  d = Eval(job, Profile(same));
  EXPECT_FALSE(d.feasible);
  EXPECT_EQ(d.reason,
            "isolation (socket): batch pod the kubelet will pin to NUMA node 0 would share it "
            "with 1 latency-critical pod(s) pinned there");

  // Shared-pool pods stay node-wide.
  tv1::NodeReport shared = TwoSocketNode("shared");
  AddPod(shared, {.uid = "lc",
                  .name = "article",
                  .annotations = {{"neighborly.io/class", "latency-critical"}}});
  d = Eval(job, Profile(shared));
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("beside latency-critical pod default/article"));
  // A shared-pool batch pod is refused node-wide as before.
  EXPECT_FALSE(Eval(Pod("scan", "batch", 0, kGi), Profile(r)).feasible);

  // In flight: a latency-critical pod booked on NUMA 0 blocks the job there.
  const NodeProfile clean = Profile(TwoSocketNode("clean"));
  NodeDecision lc = Eval(ArticleReplica("a"), clean);
  std::vector<Booking> booked = {MakeBooking(
      "uid-a", MakePodRequest(ArticleReplica("a"), nullptr, config_), lc, kT0 + absl::Seconds(30))};
  d = Eval(job, clean, booked);
  EXPECT_FALSE(d.feasible);
  EXPECT_THAT(d.reason, HasSubstr("an in-flight latency-critical pod pinned there"));
}

TEST_F(PlacementTest, TinyBatchPodsBlockNothing) {
  // Issue 14, case 5: a 50 MB/s log-rotate CronJob labelled batch.
  tv1::NodeReport r = TwoSocketNode("n");
  AddPod(r, {.uid = "rot",
             .namespace_name = "ops",
             .name = "log-rotate",
             .labels = {{"workload-type", "batch"}},
             .annotations = {{"neighborly.io/llc-bytes", "1Mi"},
                             {"neighborly.io/membw-bytes-per-second", "50M"}}});
  const NodeProfile p = Profile(r);
  EXPECT_EQ(p.batch_pods, 0);
  EXPECT_EQ(p.tiny_batch_pods, 1);
  NodeDecision d = Eval(ArticleReplica("a"), p);
  EXPECT_TRUE(d.feasible) << d.reason;
  // A measured footprint counts too: the same job streaming 5 GB/s blocks.
  r.mutable_pods(0)->set_membw_total_bytes_per_second(5'000'000'000);
  EXPECT_FALSE(Eval(ArticleReplica("a"), Profile(r)).feasible);
  // Incoming: a tiny batch pod is not kept away from latency-critical pods.
  tv1::NodeReport lc = TwoSocketNode("lc");
  AddPod(lc, {.uid = "lc",
              .name = "article",
              .annotations = {{"neighborly.io/class", "latency-critical"}}});
  const IncomingPod rotate =
      Pod("rotate", "batch", 0, kGi,
          {{"neighborly.io/llc-bytes", "1Mi"}, {"neighborly.io/membw-bytes-per-second", "50M"}});
  EXPECT_TRUE(Eval(rotate, Profile(lc)).feasible);
  EXPECT_FALSE(Eval(Pod("scan", "batch", 0, kGi), Profile(lc)).feasible);
}

TEST_F(PlacementTest, LatencyCriticalPodPrefersWholeCores) {
  // Issue 14, case 6: SMT siblings. Two nodes, 2 threads per core; on one, the
  // free CPUs of NUMA 0 are the siblings of a compression job's threads.
  auto with_cores = [](tv1::NodeReport r) {
    for (uint32_t c = 0; c < 8; ++c) {
      tv1::CpuCore* core = r.mutable_topology()->add_cores();
      core->set_socket(c / 4);
      core->set_core_id(c % 4);
      core->set_cpus(std::to_string(2 * c) + "-" + std::to_string(2 * c + 1));
      core->set_numa_node(c / 4);
    }
    return r;
  };
  tv1::NodeReport split = with_cores(TwoSocketNode("split"));
  AddPod(split, {.uid = "zip",
                 .name = "compress",
                 .qos = tv1::QOS_CLASS_GUARANTEED,
                 .exclusive_cpus = "0,2,4,6"});
  tv1::NodeReport whole = with_cores(TwoSocketNode("whole"));
  AddPod(whole, {.uid = "zip",
                 .name = "compress",
                 .qos = tv1::QOS_CLASS_GUARANTEED,
                 .exclusive_cpus = "0-3"});
  NodeDecision on_split = Eval(ArticleReplica("a"), Profile(split));
  NodeDecision on_whole = Eval(ArticleReplica("a"), Profile(whole));
  ASSERT_TRUE(on_split.feasible && on_whole.feasible);
  EXPECT_EQ(on_split.numa_node, 0);  // 4 loose threads on NUMA 0: still the lowest mask
  EXPECT_FALSE(on_split.full_cores);
  EXPECT_TRUE(on_whole.full_cores);
  EXPECT_GT(on_split.harm_to_incoming, on_whole.harm_to_incoming);
  EXPECT_GT(on_split.cost, on_whole.cost);

  // full-pcpus-only: admission counts whole cores (NUMA 1 still has them) and
  // refuses requests that are not whole cores.
  split.mutable_kubelet()->mutable_cpu_manager_policy_options()->insert(
      {"full-pcpus-only", "true"});
  NodeDecision full = Eval(ArticleReplica("a"), Profile(split));
  EXPECT_TRUE(full.feasible) << full.reason;
  NodeDecision odd = Eval(Pod("odd", "latency-critical", 3, kGi), Profile(split));
  EXPECT_FALSE(odd.feasible);
  EXPECT_THAT(odd.reason, HasSubstr("SMTAlignmentError"));
}

}  // namespace
}  // namespace neighborly::extender
