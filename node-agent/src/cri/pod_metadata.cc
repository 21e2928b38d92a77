#include "node-agent/src/cri/pod_metadata.h"

#include <chrono>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "grpcpp/grpcpp.h"
#include "runtime/v1/api_subset.grpc.pb.h"

namespace neighborly::agent {
namespace {

namespace cri = ::runtime::v1;

// Sandboxes carry every label and annotation of the pod; a hostile or huge pod
// must not make the agent's reply large, so values are kept bounded.
constexpr size_t kMaxValueBytes = 4096;
constexpr int kMaxReceiveBytes = 64 << 20;  // a node with many pods and big annotations

std::string Bounded(const std::string& value) { return value.substr(0, kMaxValueBytes); }

// Ready beats not ready; then the later attempt; then the later creation.
auto Rank(const cri::PodSandbox& s) {
  return std::make_tuple(s.state() == cri::SANDBOX_READY, s.metadata().attempt(), s.created_at());
}

class CriPodMetadataSource final : public PodMetadataSource {
 public:
  CriPodMetadataSource(std::string socket_path, PodMetadataFilter filter, absl::Duration timeout)
      : socket_path_(std::move(socket_path)), filter_(std::move(filter)), timeout_(timeout) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("unix:", socket_path_),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = cri::RuntimeService::NewStub(channel_);
  }

  absl::StatusOr<std::map<std::string, PodMetadata>> List() override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout_));
    cri::ListPodSandboxRequest request;
    cri::ListPodSandboxResponse response;
    const grpc::Status status = stub_->ListPodSandbox(&context, request, &response);
    if (!status.ok()) {
      return absl::UnavailableError(absl::StrCat("ListPodSandbox on ", socket_path_, " failed (",
                                                 GrpcCodeName(status.error_code()),
                                                 "): ", status.error_message()));
    }
    return SelectPodMetadata(response, filter_);
  }

  std::string Describe() const override { return absl::StrCat("CRI at ", socket_path_); }

 private:
  static std::string GrpcCodeName(grpc::StatusCode code) {
    switch (code) {
      case grpc::StatusCode::UNAVAILABLE:
        return "UNAVAILABLE";
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return "DEADLINE_EXCEEDED";
      case grpc::StatusCode::UNIMPLEMENTED:
        return "UNIMPLEMENTED";
      case grpc::StatusCode::PERMISSION_DENIED:
        return "PERMISSION_DENIED";
      default:
        return absl::StrCat("code ", static_cast<int>(code));
    }
  }

  std::string socket_path_;
  PodMetadataFilter filter_;
  absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<cri::RuntimeService::Stub> stub_;
};

}  // namespace

std::optional<std::string> FindCriSocket(const Filesystem& fs,
                                         const std::vector<std::string>& candidates) {
  std::vector<std::string> paths = candidates;
  if (paths.empty()) {
    for (std::string_view p : kDefaultCriSockets) paths.emplace_back(p);
  }
  for (const std::string& path : paths) {
    if (fs.Exists(path)) return fs.HostPath(path);
  }
  return std::nullopt;
}

std::map<std::string, PodMetadata> SelectPodMetadata(const cri::ListPodSandboxResponse& response,
                                                     const PodMetadataFilter& filter) {
  std::map<std::string, const cri::PodSandbox*> best;
  for (const cri::PodSandbox& sandbox : response.items()) {
    const std::string& uid = sandbox.metadata().uid();
    if (uid.empty()) continue;
    auto [it, inserted] = best.emplace(uid, &sandbox);
    if (!inserted && Rank(sandbox) > Rank(*it->second)) it->second = &sandbox;
  }
  std::map<std::string, PodMetadata> pods;
  for (const auto& [uid, sandbox] : best) {
    PodMetadata& pod = pods[uid];
    pod.namespace_name = sandbox->metadata().namespace_();
    pod.name = sandbox->metadata().name();
    for (const std::string& key : filter.label_keys) {
      auto label = sandbox->labels().find(key);
      if (label != sandbox->labels().end()) pod.labels[key] = Bounded(label->second);
    }
    for (const auto& [key, value] : sandbox->annotations()) {
      if (key.starts_with(filter.annotation_prefix)) pod.annotations[key] = Bounded(value);
    }
  }
  return pods;
}

std::unique_ptr<PodMetadataSource> NewCriPodMetadataSource(std::string socket_path,
                                                           PodMetadataFilter filter,
                                                           absl::Duration timeout) {
  return std::make_unique<CriPodMetadataSource>(std::move(socket_path), std::move(filter), timeout);
}

}  // namespace neighborly::agent
