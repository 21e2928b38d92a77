// Real-kernel tests: builds a kubelet-shaped pod cgroup on this machine's own
// hierarchies (below a private directory treated as the mount point, so no real
// kubepods tree is touched), runs a busy child in it and reads it back.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/pods/pod_cgroups.h"

namespace neighborly::agent {
namespace {

constexpr char kUidSystemd[] = "0badc0de_0000_4000_8000_00000000c0de";

class KernelCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = NewRealFilesystem("/");
    absl::StatusOr<CgroupMounts> real = DetectCgroupMounts(*fs_, "/");
    if (!real.ok()) GTEST_SKIP() << "no cgroups here: " << real.status();
    real_ = *real;
    base_ = absl::StrCat("neighborly-test-", getpid());
    rel_ = absl::StrCat("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod",
                        kUidSystemd, ".slice");
    container_ = absl::StrCat(rel_, "/cri-containerd-", std::string(64, 'b'), ".scope");
    fake_ = real_;
    std::vector<std::string> roots;
    if (!real_.unified.empty()) {
      fake_.unified = JoinPath(real_.unified, base_);
      roots.push_back(fake_.unified);
    }
    for (auto& [controller, dir] : fake_.v1) {
      if (controller != "cpu" && controller != "cpuacct" && controller != "memory") continue;
      dir = JoinPath(dir, base_);
      roots.push_back(dir);
    }
    for (auto it = fake_.v1.begin(); it != fake_.v1.end();) {
      if (it->first != "cpu" && it->first != "cpuacct" && it->first != "memory") {
        it = fake_.v1.erase(it);
      } else {
        ++it;
      }
    }
    for (const std::string& root : roots) {
      std::error_code error;
      std::filesystem::create_directories(JoinPath(root, container_), error);
      if (error) GTEST_SKIP() << "cannot create cgroup under " << root << ": " << error.message();
      created_.push_back(root);
    }
    child_ = fork();
    if (child_ == 0) {
      while (true) {
      }
    }
    for (const std::string& root : roots) {
      std::ofstream(JoinPath(JoinPath(root, container_), "cgroup.procs")) << child_ << "\n";
    }
  }

  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    for (const std::string& root : created_) RemoveTree(root);
  }

  // rmdir bottom-up (cgroup directories cannot be removed recursively).
  static void RemoveTree(const std::string& dir) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (entry.is_directory()) RemoveTree(entry.path());
    }
    rmdir(dir.c_str());
  }

  // Waits (with a deadline) until the pod has used some CPU time.
  static std::optional<uint64_t> WaitForCpu(const PodCgroups& cgroups, const PodCgroup& pod,
                                            uint64_t above) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      absl::StatusOr<PodSample> s = cgroups.Sample(pod);
      if (s.ok() && s->cpu_usage_ns && *s->cpu_usage_ns > above) return s->cpu_usage_ns;
    }
    return std::nullopt;
  }

  std::unique_ptr<Filesystem> fs_;
  CgroupMounts real_, fake_;
  std::string base_, rel_, container_;
  std::vector<std::string> created_;
  pid_t child_ = -1;
};

TEST_F(KernelCgroupTest, HierarchyTheKubeletWouldUseReadsRealCounters) {
  PodCgroups cgroups(*fs_, fake_);
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  const PodCgroup& pod = (*pods)[0];
  EXPECT_EQ(pod.uid, "0badc0de-0000-4000-8000-00000000c0de");
  ASSERT_EQ(pod.containers.size(), 1u);

  absl::StatusOr<PodSample> first = cgroups.Sample(pod);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->cpu_usage_ns) << first->unavailable["cpu_usage_millicores"];
  EXPECT_TRUE(WaitForCpu(cgroups, pod, *first->cpu_usage_ns).has_value());

  absl::StatusOr<std::vector<int>> threads = cgroups.Threads(pod);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_THAT(*threads, ::testing::Contains(child_));

  if (!fake_.V1Dir("memory").empty() || fake_.mode == CgroupMode::kV2) {
    absl::StatusOr<PodSample> s = cgroups.Sample(pod);
    ASSERT_TRUE(s.ok());
    if (!pod.on_unified) {
      EXPECT_FALSE(s->memory_bytes_by_numa.empty()) << s->unavailable["memory_bytes_by_numa"];
    }
  }

  // The pod goes away: the next sample says so instead of reporting zeros.
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
  child_ = -1;
  for (const std::string& root : created_) RemoveTree(JoinPath(root, "kubepods.slice"));
  absl::StatusOr<PodSample> gone = cgroups.Sample(pod);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(absl::IsNotFound(gone.status())) << gone.status();
}

TEST_F(KernelCgroupTest, TheCgroup2MountAloneReadsUsageUsec) {
  if (fake_.unified.empty()) GTEST_SKIP() << "no cgroup2 mount on this machine";
  CgroupMounts v2;
  v2.mode = CgroupMode::kV2;
  v2.unified = fake_.unified;
  PodCgroups cgroups(*fs_, v2);
  absl::StatusOr<std::vector<PodCgroup>> pods = cgroups.Discover();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_TRUE((*pods)[0].on_unified);
  absl::StatusOr<PodSample> s = cgroups.Sample((*pods)[0]);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->cpu_usage_ns) << s->unavailable["cpu_usage_millicores"];
  EXPECT_TRUE(WaitForCpu(cgroups, (*pods)[0], *s->cpu_usage_ns).has_value());
  EXPECT_EQ(*cgroups.PerfEventDir((*pods)[0]), JoinPath(v2.unified, rel_));
}

}  // namespace
}  // namespace neighborly::agent
