#include "node-agent/src/cri/pod_metadata.h"

#include <memory>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"
#include "runtime/v1/api_subset.grpc.pb.h"

namespace neighborly::agent {
namespace {

namespace cri = ::runtime::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

cri::PodSandbox Sandbox(const std::string& uid, const std::string& name, uint32_t attempt,
                        cri::PodSandboxState state, int64_t created_at) {
  cri::PodSandbox s;
  s.set_id("sandbox-" + name + "-" + std::to_string(attempt));
  s.mutable_metadata()->set_uid(uid);
  s.mutable_metadata()->set_name(name);
  s.mutable_metadata()->set_namespace_("content");
  s.mutable_metadata()->set_attempt(attempt);
  s.set_state(state);
  s.set_created_at(created_at);
  return s;
}

TEST(SelectPodMetadataTest, KeepsOnlyNeighborlyAnnotationsAndConfiguredLabels) {
  cri::ListPodSandboxResponse response;
  cri::PodSandbox* s = response.add_items();
  *s = Sandbox("uid-1", "article-service-abc", 0, cri::SANDBOX_READY, 10);
  (*s->mutable_labels())["app"] = "article-service";
  (*s->mutable_labels())["pod-template-hash"] = "5d8f7";
  (*s->mutable_labels())["io.kubernetes.pod.uid"] = "uid-1";
  (*s->mutable_annotations())["neighborly.io/class"] = "latency-critical";
  (*s->mutable_annotations())["neighborly.io/llc-bytes"] = "18Mi";
  (*s->mutable_annotations())["kubernetes.io/config.seen"] = "2024-01-01T00:00:00Z";

  const std::map<std::string, PodMetadata> pods = SelectPodMetadata(response, PodMetadataFilter{});
  ASSERT_EQ(pods.size(), 1u);
  const PodMetadata& pod = pods.at("uid-1");
  EXPECT_EQ(pod.namespace_name, "content");
  EXPECT_EQ(pod.name, "article-service-abc");
  EXPECT_THAT(pod.labels, ElementsAre(Pair("app", "article-service")));
  EXPECT_THAT(pod.annotations, ElementsAre(Pair("neighborly.io/class", "latency-critical"),
                                           Pair("neighborly.io/llc-bytes", "18Mi")));
}

TEST(SelectPodMetadataTest, ConfiguredLabelKeysReplaceTheDefaults) {
  cri::ListPodSandboxResponse response;
  cri::PodSandbox* s = response.add_items();
  *s = Sandbox("uid-1", "etl", 0, cri::SANDBOX_READY, 10);
  (*s->mutable_labels())["app"] = "etl";
  (*s->mutable_labels())["team"] = "data";
  PodMetadataFilter filter;
  filter.label_keys = {"team"};
  EXPECT_THAT(SelectPodMetadata(response, filter).at("uid-1").labels,
              ElementsAre(Pair("team", "data")));
}

TEST(SelectPodMetadataTest, ReadySandboxWinsThenLatestAttempt) {
  cri::ListPodSandboxResponse response;
  *response.add_items() = Sandbox("uid-1", "old-ready", 0, cri::SANDBOX_READY, 10);
  *response.add_items() = Sandbox("uid-1", "new-notready", 1, cri::SANDBOX_NOTREADY, 20);
  *response.add_items() = Sandbox("uid-2", "a", 0, cri::SANDBOX_NOTREADY, 10);
  *response.add_items() = Sandbox("uid-2", "b", 1, cri::SANDBOX_NOTREADY, 20);
  *response.add_items() = Sandbox("", "no-uid", 0, cri::SANDBOX_READY, 10);
  const std::map<std::string, PodMetadata> pods = SelectPodMetadata(response, PodMetadataFilter{});
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods.at("uid-1").name, "old-ready");
  EXPECT_EQ(pods.at("uid-2").name, "b");
}

TEST(SelectPodMetadataTest, HugeValuesAreBounded) {
  cri::ListPodSandboxResponse response;
  cri::PodSandbox* s = response.add_items();
  *s = Sandbox("uid-1", "p", 0, cri::SANDBOX_READY, 10);
  (*s->mutable_annotations())["neighborly.io/class"] = std::string(1 << 20, 'x');
  EXPECT_EQ(SelectPodMetadata(response, PodMetadataFilter{})
                .at("uid-1")
                .annotations.at("neighborly.io/class")
                .size(),
            4096u);
}

TEST(FindCriSocketTest, FirstExistingCandidateUnderTheHostRoot) {
  TestTree tree;
  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree.root());
  EXPECT_EQ(FindCriSocket(*fs, {}), std::nullopt);
  tree.Write("/var/run/crio/crio.sock", "");
  EXPECT_EQ(FindCriSocket(*fs, {}), tree.Path("/var/run/crio/crio.sock"));
  tree.Write("/run/containerd/containerd.sock", "");
  EXPECT_EQ(FindCriSocket(*fs, {}), tree.Path("/run/containerd/containerd.sock"));
  EXPECT_EQ(FindCriSocket(*fs, {"/custom/cri.sock"}), std::nullopt);
}

// A container runtime answering ListPodSandbox on a unix socket.
class FakeRuntime final : public cri::RuntimeService::Service {
 public:
  grpc::Status ListPodSandbox(grpc::ServerContext*, const cri::ListPodSandboxRequest*,
                              cri::ListPodSandboxResponse* response) override {
    if (!error.ok()) return error;
    *response = reply;
    return grpc::Status::OK;
  }
  cri::ListPodSandboxResponse reply;
  grpc::Status error = grpc::Status::OK;
};

class CriClientTest : public ::testing::Test {
 protected:
  void StartServer() {
    tree_.MkDir("/run/containerd");
    socket_ = tree_.Path("/run/containerd/containerd.sock");
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&runtime_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  TestTree tree_;
  std::string socket_;
  FakeRuntime runtime_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(CriClientTest, ListsPodsOverTheUnixSocket) {
  StartServer();
  cri::PodSandbox* s = runtime_.reply.add_items();
  *s =
      Sandbox("6f1c0e1a-0000-4000-8000-000000000001", "article-service", 0, cri::SANDBOX_READY, 10);
  (*s->mutable_labels())["workload-type"] = "latency";
  (*s->mutable_annotations())["neighborly.io/class"] = "latency-critical";

  std::unique_ptr<Filesystem> fs = NewRealFilesystem(tree_.root());
  std::optional<std::string> found = FindCriSocket(*fs, {});
  ASSERT_EQ(found, socket_);
  std::unique_ptr<PodMetadataSource> source = NewCriPodMetadataSource(*found, PodMetadataFilter{});
  EXPECT_THAT(source->Describe(), HasSubstr(socket_));
  absl::StatusOr<std::map<std::string, PodMetadata>> pods = source->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 1u);
  const PodMetadata& pod = pods->at("6f1c0e1a-0000-4000-8000-000000000001");
  EXPECT_EQ(pod.name, "article-service");
  EXPECT_THAT(pod.labels, ElementsAre(Pair("workload-type", "latency")));
  EXPECT_THAT(pod.annotations, ElementsAre(Pair("neighborly.io/class", "latency-critical")));
}

TEST_F(CriClientTest, RuntimeErrorIsReportedWithTheSocket) {
  StartServer();
  runtime_.error = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "runtime.v1 not served");
  absl::StatusOr<std::map<std::string, PodMetadata>> pods =
      NewCriPodMetadataSource(socket_, PodMetadataFilter{})->List();
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("UNIMPLEMENTED"));
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("runtime.v1 not served"));
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr(socket_));
}

TEST_F(CriClientTest, NothingListeningIsAnErrorNotAHang) {
  const std::string socket = tree_.Path("/run/containerd/containerd.sock");
  tree_.Write("/run/containerd/containerd.sock", "");  // a stale file, no listener
  absl::StatusOr<std::map<std::string, PodMetadata>> pods =
      NewCriPodMetadataSource(socket, PodMetadataFilter{}, absl::Seconds(5))->List();
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("ListPodSandbox on " + socket));
}

TEST_F(CriClientTest, EmptyRuntimeListsNoPods) {
  StartServer();
  absl::StatusOr<std::map<std::string, PodMetadata>> pods =
      NewCriPodMetadataSource(socket_, PodMetadataFilter{})->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_THAT(*pods, IsEmpty());
}

}  // namespace
}  // namespace neighborly::agent
