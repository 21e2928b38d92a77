// End to end on loopback: the real neighborly-agent measuring this host (and a
// captured fixture host) streams to the real neighborly-extender, and the node
// appears in the extender's /v1/nodes with what the agent measured and the
// reasons for what it could not; the agent's own /metrics passes promtool.
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/sys/test_tree.h"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

using nlohmann::json;
using testing::BinaryPath;
using ::testing::HasSubstr;
using testing::Subprocess;

// "... listening http=127.0.0.1:41233 grpc=127.0.0.1:39411" -> the value after `key`.
std::string WordAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  const size_t end = line.find_first_of(" \t/", start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class AgentHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::RunningExtender> e = testing::StartExtender();
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = std::move(e->process);
    http_ = e->addresses.http;
    grpc_ = e->addresses.grpc;
    client_ = std::make_unique<httplib::Client>(absl::StrCat("http://", http_));
    client_->set_read_timeout(5);
  }

  void TearDown() override {
    if (agent_) {
      EXPECT_EQ(agent_->Terminate(), 0) << agent_->Stderr();
    }
    if (extender_) {
      EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
    }
  }

  void StartAgent(const std::string& host_root, const std::string& node) {
    auto p = Subprocess::Start({BinaryPath("node-agent/neighborly-agent"), "--host-root", host_root,
                                "--node-name", node, "--extender", grpc_, "--interval", "200ms",
                                "--metrics-address", "127.0.0.1:0", "--insecure-plaintext",
                                // The operator's figure: no measurement here (that is
                                // agent_host_test's and agent_cli_test's), and it must
                                // reach the extender with its source.
                                "--peak-membw-bytes-per-second", "80G"});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
  }

  // The node's detail once the extender knows it (polled with a deadline).
  json WaitForNode(const std::string& node) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      httplib::Result r = client_->Get(absl::StrCat("/v1/nodes/", node));
      if (r && r->status == 200) return json::parse(r->body);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << node << " never appeared in /v1/nodes\n"
                  << agent_->Stderr() << extender_->Stderr();
    return json::object();
  }

  std::unique_ptr<Subprocess> extender_;
  std::unique_ptr<Subprocess> agent_;
  std::string http_;
  std::string grpc_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(AgentHostTest, ThisHostAppearsInTheExtenderWithItsCapabilities) {
  StartAgent("/", "it-node");
  const json node = WaitForNode("it-node");
  ASSERT_TRUE(node.contains("capabilities")) << node.dump();
  const json& caps = node["capabilities"];
  // Every capability is either available or says why not.
  for (const char* name : {"resctrl_occupancy", "perf_hardware_counters", "psi", "pod_metadata",
                           "kubelet_pod_resources", "cpu_manager_state", "peak_membw"}) {
    ASSERT_TRUE(caps.contains(name)) << name << " " << caps.dump();
    EXPECT_FALSE(caps[name].get<std::string>().empty()) << name;
    EXPECT_NE(caps[name], "unavailable") << name << ": no reason given";
  }
  if (!std::ifstream("/run/containerd/containerd.sock") &&
      !std::ifstream("/var/run/crio/crio.sock")) {
    EXPECT_THAT(caps["pod_metadata"].get<std::string>(), HasSubstr("no CRI socket"));
  }
  EXPECT_EQ(caps["peak_membw"], "available");
  ASSERT_TRUE(node.contains("numaNodes")) << node.dump();
  EXPECT_EQ(node["numaNodes"][0]["peakMembwBytesPerSecond"], 80'000'000'000ull);
  EXPECT_EQ(node["numaNodes"][0]["peakMembwSource"], "override");

  json list;
  httplib::Result r = client_->Get("/v1/nodes");
  ASSERT_TRUE(r && r->status == 200);
  list = json::parse(r->body);
  bool listed = false;
  for (const json& n : list) listed = listed || n["name"] == "it-node";
  EXPECT_TRUE(listed) << list.dump();

  // The agent's own /metrics (the server starts with the first window).
  std::optional<std::string> line = agent_->WaitForLine("metrics on http://", absl::Seconds(20));
  ASSERT_TRUE(line.has_value()) << agent_->Stderr();
  const std::string address = WordAfter(*line, "http://");
  httplib::Client metrics(absl::StrCat("http://", address));
  metrics.set_read_timeout(5);
  httplib::Result m = metrics.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_THAT(m->body, HasSubstr("neighborly_agent_windows_total "));
  EXPECT_THAT(m->body, HasSubstr("neighborly_agent_capability_available{capability=\"psi\""));
  EXPECT_THAT(m->body, HasSubstr("neighborly_agent_stream_connected{node=\"it-node\""));
  // The build info, once (two merges once left it out entirely, once doubled it).
  const std::string build_info = "neighborly_agent_build_info{version=\"";
  const size_t first = m->body.find(build_info);
  EXPECT_NE(first, std::string::npos) << m->body;
  EXPECT_EQ(m->body.find(build_info, first + 1), std::string::npos) << m->body;
  EXPECT_THAT(m->body, HasSubstr("process_resident_memory_bytes "));
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    char path[] = "/tmp/neighborly-agent-host-metrics-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << m->body;
    const int status = std::system(absl::StrCat("promtool check metrics < ", path).c_str());
    std::remove(path);
    EXPECT_EQ(status, 0) << m->body;
  }
  httplib::Result health = metrics.Get("/healthz");
  ASSERT_TRUE(health && health->status == 200);
}

TEST_F(AgentHostTest, FixtureHostReportsItsPodsToTheExtender) {
  // A captured Intel host with kubelet pods. (Its resctrl is a plain directory
  // here, so the pods' MON groups lack counter files: they arrive unmeasured,
  // with the reason.)
  agent::TestTree tree;
  tree.CopyFrom(NEIGHBORLY_SOURCE_DIR "/test/testdata/hosts/intel-mbm-v2-systemd-containerd");
  StartAgent(tree.root(), "it-fixture");
  const json node = WaitForNode("it-fixture");
  ASSERT_TRUE(node.contains("pods")) << node.dump();
  ASSERT_EQ(node["pods"].size(), 3u) << node.dump();
  std::set<std::string> names;
  for (const json& pod : node["pods"]) names.insert(pod["name"].get<std::string>());
  EXPECT_TRUE(names.contains("article-service-5d8f7-abcde")) << node.dump();
  EXPECT_EQ(node["capabilities"]["resctrl_occupancy"], "available");
  EXPECT_EQ(node["capabilities"]["cpu_manager_state"], "available");
}

// Issue 15, finding 5: a leftover pod cgroup whose pod has no CRI record and no
// /var/log/pods entry made the agent send a pod with an empty namespace, and
// the extender refused the whole report every second (the node's telemetry
// never arrived). Now the agent names what it can through
// /var/lib/kubelet/pods/<uid> and skips (and counts) the rest; the node arrives.
TEST_F(AgentHostTest, AnUnidentifiablePodIsSkippedAndTheNodeStillReports) {
  agent::TestTree tree;
  tree.CopyFrom(NEIGHBORLY_SOURCE_DIR "/test/testdata/hosts/intel-mbm-v2-systemd-containerd");
  const std::string burstable = "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/";
  const std::string template_pod =
      burstable + "kubepods-burstable-pod7a2b0e1a_0000_4000_8000_000000000002.slice";
  auto add_pod_cgroup = [&](const std::string& uid_underscored) {
    const std::string dir = burstable + "kubepods-burstable-pod" + uid_underscored + ".slice";
    std::filesystem::copy(tree.Path(template_pod), tree.Path(dir),
                          std::filesystem::copy_options::recursive);
  };
  // A leftover: nothing names it anywhere.
  add_pod_cgroup("9d4d0e1a_0000_4000_8000_000000000004");
  // Named only by the kubelet's pod directory.
  add_pod_cgroup("ae5e0e1a_0000_4000_8000_000000000005");
  const std::string kubelet_dir = "/var/lib/kubelet/pods/ae5e0e1a-0000-4000-8000-000000000005";
  tree.Write(kubelet_dir + "/volumes/kubernetes.io~projected/kube-api-access-x7k2p/namespace",
             "batch-jobs");
  tree.Write(kubelet_dir + "/etc-hosts",
             "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
             "::1\tlocalhost ip6-localhost ip6-loopback\n10.244.1.7\tnightly-report-28391\n");
  StartAgent(tree.root(), "it-unnamed");
  const json node = WaitForNode("it-unnamed");
  ASSERT_TRUE(node.contains("pods")) << node.dump();
  std::map<std::string, std::string> by_uid;
  for (const json& pod : node["pods"]) {
    by_uid[pod["uid"].get<std::string>()] =
        pod["namespace"].get<std::string>() + "/" + pod["name"].get<std::string>();
  }
  EXPECT_EQ(by_uid.size(), 4u) << node.dump();
  EXPECT_EQ(by_uid["ae5e0e1a-0000-4000-8000-000000000005"], "batch-jobs/nightly-report-28391");
  EXPECT_FALSE(by_uid.contains("9d4d0e1a-0000-4000-8000-000000000004")) << node.dump();
  EXPECT_THAT(extender_->Stderr(), ::testing::Not(HasSubstr("namespace: empty")));

  std::optional<std::string> line = agent_->WaitForLine("metrics on http://", absl::Seconds(20));
  ASSERT_TRUE(line.has_value()) << agent_->Stderr();
  httplib::Client metrics(absl::StrCat("http://", WordAfter(*line, "http://")));
  metrics.set_read_timeout(5);
  httplib::Result m = metrics.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  const size_t at = m->body.find("neighborly_agent_pods_skipped_total{reason=\"unidentified\"} ");
  ASSERT_NE(at, std::string::npos) << m->body;
  EXPECT_GE(std::stod(m->body.substr(at + 59)), 1.0) << m->body.substr(at, 80);
}

}  // namespace
}  // namespace neighborly
