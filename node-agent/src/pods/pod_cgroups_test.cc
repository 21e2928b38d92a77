#include "node-agent/src/pods/pod_cgroups.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/pods/pod_names.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kUid[] = "6f1c0e1a-0000-4000-8000-000000000001";
constexpr char kUidSystemd[] = "6f1c0e1a_0000_4000_8000_000000000001";
constexpr char kUid2[] = "7a2b0e1a-0000-4000-8000-000000000002";
const std::string kCid(64, 'a');

CgroupMounts V2Mounts() {
  CgroupMounts m;
  m.mode = CgroupMode::kV2;
  m.unified = "/sys/fs/cgroup";
  return m;
}

CgroupMounts V1Mounts(bool with_unified) {
  CgroupMounts m;
  m.mode = with_unified ? CgroupMode::kHybrid : CgroupMode::kV1;
  if (with_unified) m.unified = "/sys/fs/cgroup/unified";
  for (const char* c : {"cpu", "cpuacct", "cpuset", "memory"}) {
    m.v1[c] = std::string("/sys/fs/cgroup/") + c;
  }
  return m;
}

TEST(PodNameParsingTest, SystemdAndCgroupfsPodDirs) {
  std::optional<PodDirName> g =
      ParsePodDirName(std::string("kubepods-pod") + kUidSystemd + ".slice");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->uid, kUid);
  EXPECT_EQ(g->qos, telemetry::v1::QOS_CLASS_GUARANTEED);
  EXPECT_EQ(ParsePodDirName(std::string("kubepods-besteffort-pod") + kUidSystemd + ".slice")->qos,
            telemetry::v1::QOS_CLASS_BEST_EFFORT);
  EXPECT_EQ(ParsePodDirName(std::string("pod") + kUid)->uid, kUid);
  EXPECT_FALSE(ParsePodDirName("kubepods-burstable.slice"));
  EXPECT_FALSE(ParsePodDirName("pod1234"));
  EXPECT_FALSE(ParsePodDirName(std::string("pod") + kUidSystemd));  // wrong separator
}

TEST(PodNameParsingTest, ContainerScopes) {
  EXPECT_EQ(ParseContainerDirName("cri-containerd-" + kCid + ".scope")->runtime, "containerd");
  EXPECT_EQ(ParseContainerDirName("crio-" + kCid + ".scope")->runtime, "cri-o");
  EXPECT_EQ(ParseContainerDirName("docker-" + kCid + ".scope")->id, kCid);
  EXPECT_EQ(ParseContainerDirName(kCid)->runtime, "");
  EXPECT_EQ(ParseContainerDirName("crio-" + kCid)->runtime, "cri-o");
  EXPECT_FALSE(ParseContainerDirName("crio-conmon-" + kCid + ".scope"));
  EXPECT_FALSE(ParseContainerDirName("init.scope"));
}

TEST(PodNameParsingTest, LogDirectories) {
  std::optional<PodName> name =
      ParsePodLogDirName(std::string("content_article-service-5d8f7-abcde_") + kUid);
  ASSERT_TRUE(name);
  EXPECT_EQ(name->namespace_name, "content");
  EXPECT_EQ(name->name, "article-service-5d8f7-abcde");
  EXPECT_EQ(name->uid, kUid);
  EXPECT_FALSE(ParsePodLogDirName("content_x"));
  EXPECT_FALSE(ParsePodLogDirName("__"));
}

TEST(CgroupTextTest, Parsers) {
  EXPECT_EQ(*ParseCpuStatUsageUsec("usage_usec 1500\nuser_usec 1000\n"), 1500u);
  EXPECT_FALSE(ParseCpuStatUsageUsec("user_usec 1\n").ok());
  EXPECT_FALSE(ParseCpuStatUsageUsec("usage_usec -1\n").ok());
  EXPECT_THAT(
      *ParseNumaStatV2("anon N0=100 N1=200\nfile N0=1 N1=2\nworkingset_refault_anon N0=9\n"),
      UnorderedElementsAre(Pair(0u, 101u), Pair(1u, 202u)));
  EXPECT_FALSE(ParseNumaStatV2("anon N0=abc\n").ok());
  EXPECT_THAT(*ParseNumaStatV1("total=3 N0=1 N1=2\nhierarchical_total=30 N0=10 N1=20\n", 4096),
              UnorderedElementsAre(Pair(0u, 40960u), Pair(1u, 81920u)));
  EXPECT_THAT(*ParseNumaStatV1("total=3 N0=3\n", 4096), ElementsAre(Pair(0u, 12288u)));
  absl::StatusOr<Pressure> p = ParsePressure(
      "some avg10=1.50 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.25 avg60=0 avg300=0 "
      "total=1\n");
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->some_avg10, 1.5);
  EXPECT_DOUBLE_EQ(*p->full_avg10, 0.25);
  EXPECT_FALSE(ParsePressure("some avg10=abc\n").ok());
  EXPECT_FALSE(ParsePressure("").ok());
  EXPECT_THAT(*ParseTids("1\n22\n"), ElementsAre(1, 22));
  EXPECT_FALSE(ParseTids("1\nx\n").ok());
}

TEST(PodCgroupsTest, V2SystemdContainerd) {
  TestTree tree;
  const std::string pod = std::string(
                              "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                              "kubepods-burstable-pod") +
                          kUidSystemd + ".slice";
  const std::string container = pod + "/cri-containerd-" + kCid + ".scope";
  tree.Write("/sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
  tree.Write(pod + "/cpu.stat", "usage_usec 2000\nuser_usec 1000\n");
  tree.Write(pod + "/cpu.weight", "79\n");  // 2 cpus requested
  tree.Write(pod + "/memory.numa_stat", "anon N0=4096 N1=0\nfile N0=0 N1=8192\n");
  tree.Write(pod + "/cpu.pressure", "some avg10=2.00 avg60=0 avg300=0 total=1\n");
  tree.Write(
      pod + "/memory.pressure",
      "some avg10=0.50 avg60=0 avg300=0 total=1\nfull avg10=0.10 avg60=0 avg300=0 total=1\n");
  tree.Write(pod + "/cgroup.threads", "");
  tree.Write(container + "/cgroup.threads", "101\n102\n");
  // Issue 26: working set = usage - inactive_file; limit from memory.max.
  tree.Write(pod + "/memory.current", "10485760\n");
  tree.Write(pod + "/memory.stat", "anon 6291456\nfile 4194304\ninactive_file 2097152\n");
  tree.Write(pod + "/memory.max", "16777216\n");
  tree.Write(container + "/cgroup.procs", "101\n");
  tree.MkDir(pod + "/crio-conmon-" + kCid + ".scope");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  PodCgroups cgroups(*fs, V2Mounts());
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  const PodCgroup& p = (*pods)[0];
  EXPECT_EQ(p.uid, kUid);
  EXPECT_EQ(p.qos, telemetry::v1::QOS_CLASS_BURSTABLE);
  EXPECT_EQ(p.driver, CgroupDriver::kSystemd);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].runtime, "containerd");

  absl::StatusOr<PodSample> s = cgroups.Sample(p);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cpu_usage_ns, 2'000'000u);
  EXPECT_THAT(s->memory_bytes_by_numa, UnorderedElementsAre(Pair(0u, 4096u), Pair(1u, 8192u)));
  EXPECT_EQ(s->psi_cpu_some_avg10, 2.0);
  EXPECT_EQ(s->psi_memory_full_avg10, 0.1);
  ASSERT_TRUE(s->cpuset);
  EXPECT_THAT(*s->cpuset, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  ASSERT_TRUE(s->cpu_request_millicores);
  EXPECT_NEAR(*s->cpu_request_millicores, 2000, 30);
  EXPECT_EQ(s->memory_working_set_bytes, 10485760u - 2097152u);
  EXPECT_EQ(s->memory_limit_bytes, 16777216u);
  EXPECT_THAT(s->unavailable, ::testing::IsEmpty());
  EXPECT_THAT(*cgroups.Threads(p), ElementsAre(101, 102));
  EXPECT_THAT(*cgroups.Processes(p), ElementsAre(101));
  EXPECT_EQ(*cgroups.PerfEventDir(p), pod);
}

TEST(PodCgroupsTest, PsiDisabledAndVanishingCgroups) {
  TestTree tree;
  const std::string pod = std::string("/sys/fs/cgroup/kubepods/besteffort/pod") + kUid;
  tree.Write(pod + "/cpu.stat", "usage_usec 1\n");
  tree.MkDir(std::string("/sys/fs/cgroup/kubepods/pod") + kUid2);
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  PodCgroups cgroups(*fs, V2Mounts());
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].qos, telemetry::v1::QOS_CLASS_BEST_EFFORT);
  EXPECT_EQ((*pods)[0].driver, CgroupDriver::kCgroupfs);
  EXPECT_EQ((*pods)[1].qos, telemetry::v1::QOS_CLASS_GUARANTEED);

  absl::StatusOr<PodSample> s = cgroups.Sample((*pods)[0]);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->unavailable.at("psi_cpu_some_avg10"), HasSubstr("cpu.pressure"));
  EXPECT_THAT(s->unavailable.at("memory_bytes_by_numa"), HasSubstr("memory.numa_stat"));

  tree.Remove(pod);
  absl::StatusOr<PodSample> gone = cgroups.Sample((*pods)[0]);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(absl::IsNotFound(gone.status()));
  EXPECT_THAT(std::string(gone.status().message()), HasSubstr("vanished"));
}

TEST(PodCgroupsTest, HybridV1CgroupfsDockerWithPsiMirror) {
  TestTree tree;
  const std::string rel = std::string("kubepods/pod") + kUid;
  tree.Write("/sys/fs/cgroup/cpuacct/" + rel + "/cpuacct.usage", "5000000\n");
  tree.Write("/sys/fs/cgroup/cpuacct/" + rel + "/tasks", "7\n");
  tree.Write("/sys/fs/cgroup/cpuacct/" + rel + "/" + kCid + "/tasks", "8\n9\n");
  tree.Write("/sys/fs/cgroup/cpu/" + rel + "/cpu.shares", "1024\n");
  tree.Write("/sys/fs/cgroup/memory/" + rel + "/memory.numa_stat",
             "total=2 N0=2\nhierarchical_total=3 N0=3\n");
  tree.Write("/sys/fs/cgroup/cpuset/" + rel + "/cpuset.effective_cpus", "2-3\n");
  tree.Write("/sys/fs/cgroup/unified/" + rel + "/cpu.pressure",
             "some avg10=0.00 avg60=0 avg300=0 total=0\n");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  PodCgroups cgroups(*fs, V1Mounts(true));
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_FALSE((*pods)[0].on_unified);
  ASSERT_EQ((*pods)[0].containers.size(), 1u);
  absl::StatusOr<PodSample> s = cgroups.Sample((*pods)[0]);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->cpu_usage_ns, 5'000'000u);
  EXPECT_THAT(s->memory_bytes_by_numa, ElementsAre(Pair(0u, 3u * 4096)));
  EXPECT_EQ(s->cpu_request_millicores, 1000);
  EXPECT_THAT(*s->cpuset, ElementsAre(2, 3));
  EXPECT_EQ(s->psi_cpu_some_avg10, 0.0);
  EXPECT_THAT(*cgroups.Threads((*pods)[0]), ElementsAre(7, 8, 9));
  // No v1 perf_event hierarchy: perf goes through the cgroup2 mirror.
  EXPECT_EQ(*cgroups.PerfEventDir((*pods)[0]), "/sys/fs/cgroup/unified/" + rel);

  PodCgroups v1_only(*fs, V1Mounts(false));
  absl::StatusOr<PodSample> no_psi = v1_only.Sample((*pods)[0]);
  ASSERT_TRUE(no_psi.ok());
  EXPECT_THAT(no_psi->unavailable.at("psi_cpu_some_avg10"), HasSubstr("cgroup v2"));
  EXPECT_FALSE(v1_only.PerfEventDir((*pods)[0]).ok());
}

TEST(PodCgroupsTest, NoKubeletSaysWhereItLooked) {
  TestTree tree;
  tree.MkDir("/sys/fs/cgroup");
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  PodCgroups cgroups(*fs, V2Mounts());
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("/sys/fs/cgroup/kubepods.slice"));
}

TEST(PodNamesTest, ReadsLogDirectories) {
  TestTree tree;
  tree.MkDir(std::string("/var/log/pods/content_article-1_") + kUid);
  tree.MkDir("/var/log/pods/not-a-pod");
  absl::StatusOr<std::map<std::string, PodName>> names =
      ReadPodNames(*NewRealFilesystem(tree.root()));
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ(names->at(kUid).name, "article-1");
}

}  // namespace
}  // namespace neighborly::agent
