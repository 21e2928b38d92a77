#include "node-agent/src/podresources/pod_resources.h"

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"
#include "podresources/v1/api_subset.grpc.pb.h"

namespace neighborly::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

::v1::ListPodResourcesResponse TwoPods() {
  ::v1::ListPodResourcesResponse response;
  ::v1::PodResources* article = response.add_pod_resources();
  article->set_namespace_("content");
  article->set_name("article-service-abc");
  ::v1::ContainerResources* app = article->add_containers();
  app->set_name("app");
  app->add_cpu_ids(3);
  app->add_cpu_ids(2);
  ::v1::ContainerMemory* memory = app->add_memory();
  memory->set_memory_type("memory");
  memory->set_size(4ull << 30);
  memory->mutable_topology()->add_nodes()->set_id(0);
  ::v1::ContainerMemory* huge = app->add_memory();
  huge->set_memory_type("hugepages-2Mi");
  huge->set_size(1 << 30);
  huge->mutable_topology()->add_nodes()->set_id(1);
  ::v1::ContainerResources* sidecar = article->add_containers();
  sidecar->set_name("sidecar");
  sidecar->add_cpu_ids(8);
  ::v1::PodResources* batch = response.add_pod_resources();
  batch->set_namespace_("analytics");
  batch->set_name("scan-job");
  batch->add_containers()->set_name("scan");  // shared pool: no cpu_ids
  return response;
}

TEST(DecodePodResourcesTest, UnionOfContainerCpusAndPinnedMemory) {
  absl::StatusOr<std::vector<PodAllocation>> pods = DecodePodResources(TwoPods());
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].namespace_name, "content");
  EXPECT_EQ((*pods)[0].name, "article-service-abc");
  EXPECT_EQ(FormatCpuList((*pods)[0].exclusive_cpus), "2-3,8");
  EXPECT_THAT((*pods)[0].memory_bytes_by_numa, ElementsAre(Pair(0u, 4ull << 30)));
  EXPECT_THAT((*pods)[1].exclusive_cpus, IsEmpty());
}

TEST(DecodePodResourcesTest, PodLevelCpusJoinTheContainerOnes) {
  ::v1::ListPodResourcesResponse response = TwoPods();
  response.mutable_pod_resources(1)->add_cpu_ids(5);
  absl::StatusOr<std::vector<PodAllocation>> pods = DecodePodResources(response);
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(FormatCpuList((*pods)[1].exclusive_cpus), "5");
}

TEST(DecodePodResourcesTest, HostileIdsAreRefusedNamingThePod) {
  ::v1::ListPodResourcesResponse response = TwoPods();
  response.mutable_pod_resources(1)->mutable_containers(0)->add_cpu_ids(-1);
  absl::StatusOr<std::vector<PodAllocation>> pods = DecodePodResources(response);
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("analytics/scan-job"));
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("-1"));

  ::v1::AllocatableResourcesResponse allocatable;
  allocatable.add_cpu_ids(1ll << 40);
  EXPECT_FALSE(DecodeAllocatable(allocatable).ok());
}

TEST(DecodeAllocatableTest, CpusAndMemoryPerNumaNode) {
  ::v1::AllocatableResourcesResponse response;
  for (int64_t cpu : {7, 1, 2, 3}) response.add_cpu_ids(cpu);
  ::v1::ContainerMemory* m = response.add_memory();
  m->set_memory_type("memory");
  m->set_size(64ull << 30);
  m->mutable_topology()->add_nodes()->set_id(0);
  m->mutable_topology()->add_nodes()->set_id(1);
  absl::StatusOr<Allocatable> a = DecodeAllocatable(response);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(FormatCpuList(a->cpus), "1-3,7");
  EXPECT_THAT(a->memory_bytes_by_numa, ElementsAre(Pair(0u, 32ull << 30), Pair(1u, 32ull << 30)));
}

// The kubelet's PodResources server on a unix socket.
class FakeKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* response) override {
    *response = pods;
    return grpc::Status::OK;
  }
  grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                       const ::v1::AllocatableResourcesRequest*,
                                       ::v1::AllocatableResourcesResponse* response) override {
    if (!allocatable_enabled) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "PodResources API GetAllocatableResources disabled");
    }
    response->add_cpu_ids(1);
    response->add_cpu_ids(2);
    return grpc::Status::OK;
  }
  ::v1::ListPodResourcesResponse pods = TwoPods();
  bool allocatable_enabled = true;
};

class PodResourcesClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.MkDir("/var/lib/kubelet/pod-resources");
    socket_ = tree_.Path(kPodResourcesSocket);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&kubelet_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }
  TestTree tree_;
  std::string socket_;
  FakeKubelet kubelet_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(PodResourcesClientTest, ListAndAllocatableOverTheSocket) {
  std::unique_ptr<PodResourcesSource> client = NewPodResourcesClient(socket_);
  absl::StatusOr<std::vector<PodAllocation>> pods = client->List();
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ(FormatCpuList((*pods)[0].exclusive_cpus), "2-3,8");
  absl::StatusOr<Allocatable> allocatable = client->GetAllocatableResources();
  ASSERT_TRUE(allocatable.ok()) << allocatable.status();
  EXPECT_EQ(FormatCpuList(allocatable->cpus), "1-2");
}

TEST_F(PodResourcesClientTest, DisabledAllocatableIsAnErrorWithTheKubeletsMessage) {
  kubelet_.allocatable_enabled = false;
  absl::StatusOr<Allocatable> allocatable =
      NewPodResourcesClient(socket_)->GetAllocatableResources();
  ASSERT_FALSE(allocatable.ok());
  EXPECT_THAT(std::string(allocatable.status().message()),
              HasSubstr("GetAllocatableResources disabled"));
}

TEST(PodResourcesClientNoServerTest, NothingListeningIsAnError) {
  TestTree tree;
  tree.Write(kPodResourcesSocket, "");
  absl::StatusOr<std::vector<PodAllocation>> pods =
      NewPodResourcesClient(tree.Path(kPodResourcesSocket))->List();
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(std::string(pods.status().message()), HasSubstr("PodResources List on"));
}

}  // namespace
}  // namespace neighborly::agent
