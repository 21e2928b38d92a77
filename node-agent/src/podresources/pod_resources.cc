#include "node-agent/src/podresources/pod_resources.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "grpcpp/grpcpp.h"
#include "podresources/v1/api_subset.grpc.pb.h"

namespace neighborly::agent {
namespace {

constexpr int kMaxReceiveBytes = 16 << 20;  // the kubelet's own client raises it too

absl::Status AddCpus(const google::protobuf::RepeatedField<int64_t>& ids, std::string_view owner,
                     CpuSet& out) {
  for (int64_t id : ids) {
    if (id < 0 || id > kMaxCpuId) {
      return absl::InvalidArgumentError(
          absl::StrCat("PodResources: CPU id ", id, " of ", Av(owner), " is out of range"));
    }
    out.push_back(static_cast<uint32_t>(id));
  }
  return absl::OkStatus();
}

absl::Status AddMemory(const google::protobuf::RepeatedPtrField<::v1::ContainerMemory>& blocks,
                       std::string_view owner, std::map<uint32_t, uint64_t>& out) {
  for (const ::v1::ContainerMemory& block : blocks) {
    if (block.memory_type() != "memory") continue;  // hugepages are not page-cache pressure
    const auto& nodes = block.topology().nodes();
    if (nodes.empty()) continue;
    for (const ::v1::NUMANode& node : nodes) {
      if (node.id() < 0 || node.id() > kMaxCpuId) {
        return absl::InvalidArgumentError(absl::StrCat("PodResources: NUMA node ", node.id(),
                                                       " of ", Av(owner), " is out of range"));
      }
      out[static_cast<uint32_t>(node.id())] += block.size() / static_cast<uint64_t>(nodes.size());
    }
  }
  return absl::OkStatus();
}

void Normalise(CpuSet& cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
}

std::string GrpcError(const grpc::Status& status) {
  return absl::StrCat("gRPC code ", static_cast<int>(status.error_code()), ": ",
                      status.error_message());
}

class PodResourcesClient final : public PodResourcesSource {
 public:
  PodResourcesClient(std::string socket_path, absl::Duration timeout)
      : socket_path_(std::move(socket_path)), timeout_(timeout) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
    stub_ = ::v1::PodResourcesLister::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("unix:", socket_path_), grpc::InsecureChannelCredentials(), args));
  }

  absl::StatusOr<std::vector<PodAllocation>> List() override {
    grpc::ClientContext context;
    SetDeadline(context);
    ::v1::ListPodResourcesResponse response;
    const grpc::Status status = stub_->List(&context, ::v1::ListPodResourcesRequest(), &response);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("PodResources List on ", socket_path_, " failed (", GrpcError(status), ")"));
    }
    return DecodePodResources(response);
  }

  absl::StatusOr<Allocatable> GetAllocatableResources() override {
    grpc::ClientContext context;
    SetDeadline(context);
    ::v1::AllocatableResourcesResponse response;
    const grpc::Status status =
        stub_->GetAllocatableResources(&context, ::v1::AllocatableResourcesRequest(), &response);
    if (!status.ok()) {
      return absl::UnavailableError(absl::StrCat("PodResources GetAllocatableResources on ",
                                                 socket_path_, " failed (", GrpcError(status),
                                                 ")"));
    }
    return DecodeAllocatable(response);
  }

  std::string Describe() const override { return absl::StrCat("PodResources at ", socket_path_); }

 private:
  void SetDeadline(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout_));
  }

  std::string socket_path_;
  absl::Duration timeout_;
  std::unique_ptr<::v1::PodResourcesLister::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::vector<PodAllocation>> DecodePodResources(
    const ::v1::ListPodResourcesResponse& response) {
  std::vector<PodAllocation> pods;
  for (const ::v1::PodResources& in : response.pod_resources()) {
    PodAllocation& pod = pods.emplace_back();
    pod.namespace_name = in.namespace_();
    pod.name = in.name();
    const std::string owner = absl::StrCat("pod ", in.namespace_(), "/", in.name());
    if (absl::Status s = AddCpus(in.cpu_ids(), owner, pod.exclusive_cpus); !s.ok()) return s;
    for (const ::v1::ContainerResources& c : in.containers()) {
      if (absl::Status s = AddCpus(c.cpu_ids(), owner, pod.exclusive_cpus); !s.ok()) return s;
      if (absl::Status s = AddMemory(c.memory(), owner, pod.memory_bytes_by_numa); !s.ok()) {
        return s;
      }
    }
    Normalise(pod.exclusive_cpus);
  }
  return pods;
}

absl::StatusOr<Allocatable> DecodeAllocatable(const ::v1::AllocatableResourcesResponse& response) {
  Allocatable out;
  if (absl::Status s = AddCpus(response.cpu_ids(), "the node", out.cpus); !s.ok()) return s;
  if (absl::Status s = AddMemory(response.memory(), "the node", out.memory_bytes_by_numa);
      !s.ok()) {
    return s;
  }
  Normalise(out.cpus);
  return out;
}

std::unique_ptr<PodResourcesSource> NewPodResourcesClient(std::string socket_path,
                                                          absl::Duration timeout) {
  return std::make_unique<PodResourcesClient>(std::move(socket_path), timeout);
}

}  // namespace neighborly::agent
