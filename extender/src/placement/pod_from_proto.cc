#include "extender/src/placement/pod_from_proto.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "extender/src/model/pod_spec.h"

namespace neighborly::extender {
namespace {

namespace pv1 = ::neighborly::placement::v1;

absl::Status Invalid(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(Av(field), " ", Av(problem)));
}

absl::Status CheckName(std::string_view field, const std::string& value, size_t max_bytes,
                       bool required) {
  if (required && value.empty()) return Invalid(field, "is empty");
  if (value.size() > max_bytes) {
    return Invalid(field, absl::StrCat("is ", value.size(), " bytes, at most ", max_bytes));
  }
  return absl::OkStatus();
}

absl::Status CopyMap(const google::protobuf::Map<std::string, std::string>& in,
                     std::string_view field, size_t max_bytes,
                     std::map<std::string, std::string>& out) {
  size_t bytes = 0;
  for (const auto& [key, value] : in) bytes += key.size() + value.size();
  if (bytes > max_bytes) {
    return Invalid(field,
                   absl::StrCat("hold ", bytes, " bytes of keys and values, at most ", max_bytes));
  }
  out.clear();
  for (const auto& [key, value] : in) {
    if (key.empty()) return Invalid(field, "have an empty key");
    out.emplace(key, value);
  }
  return absl::OkStatus();
}

// One quantity: absent stays absent (an unset request is not a zero one).
absl::Status Quantity(bool has, int64_t value, std::string_view list, size_t index,
                      std::string_view name, std::optional<int64_t>& out) {
  if (!has) return absl::OkStatus();
  if (value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod.", Av(list), "[", index, "].", Av(name), " is negative (", value, ")"));
  }
  out = value;
  return absl::OkStatus();
}

absl::Status Containers(const google::protobuf::RepeatedPtrField<pv1::Container>& in,
                        std::string_view list, std::vector<ContainerResources>& out) {
  out.clear();
  out.reserve(static_cast<size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    const pv1::Container& c = in.Get(i);
    const size_t index = static_cast<size_t>(i);
    ContainerResources& r = out.emplace_back();
    if (absl::Status s = Quantity(c.has_cpu_request_millicores(), c.cpu_request_millicores(), list,
                                  index, "cpu_request_millicores", r.request_cpu_millicores);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Quantity(c.has_cpu_limit_millicores(), c.cpu_limit_millicores(), list,
                                  index, "cpu_limit_millicores", r.limit_cpu_millicores);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Quantity(c.has_memory_request_bytes(), c.memory_request_bytes(), list,
                                  index, "memory_request_bytes", r.request_memory_bytes);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Quantity(c.has_memory_limit_bytes(), c.memory_limit_bytes(), list, index,
                                  "memory_limit_bytes", r.limit_memory_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PodFromProto(const pv1::Pod& in, const PlacementLimits& limits, IncomingPod& out) {
  if (absl::Status s = CheckName("pod.uid", in.uid(), limits.max_uid_bytes, true); !s.ok())
    return s;
  if (absl::Status s = CheckName("pod.namespace", in.namespace_(), limits.max_name_bytes, true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckName("pod.name", in.name(), limits.max_name_bytes, true); !s.ok()) {
    return s;
  }
  const size_t containers = static_cast<size_t>(in.containers_size() + in.init_containers_size());
  if (containers > limits.max_containers) {
    return Invalid("pod.containers", absl::StrCat("and pod.init_containers hold ", containers,
                                                  " containers, at most ", limits.max_containers));
  }
  if (static_cast<size_t>(in.owner_references_size()) > limits.max_owner_references) {
    return Invalid("pod.owner_references",
                   absl::StrCat("has ", in.owner_references_size(), " entries, at most ",
                                limits.max_owner_references));
  }
  if (!in.qos_class().empty() && ParseQosClass(in.qos_class()) == QosClass::kUnknown) {
    return Invalid("pod.qos_class", absl::StrCat("is \"", in.qos_class().substr(0, 64),
                                                 "\", expected Guaranteed, Burstable, BestEffort "
                                                 "or empty (derived)"));
  }
  out.uid = in.uid();
  out.namespace_name = in.namespace_();
  out.name = in.name();
  if (absl::Status s = CopyMap(in.labels(), "pod.labels", limits.max_label_bytes, out.labels);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CopyMap(in.annotations(), "pod.annotations", limits.max_annotation_bytes,
                               out.annotations);
      !s.ok()) {
    return s;
  }
  out.owner_kind.clear();
  out.owner_name.clear();
  ControllerOwner owner;
  for (const pv1::OwnerReference& ref : in.owner_references()) {
    owner.Offer(ref.kind(), ref.name(), ref.controller(), out);
  }
  std::vector<ContainerResources> main, init;
  if (absl::Status s = Containers(in.containers(), "containers", main); !s.ok()) return s;
  if (absl::Status s = Containers(in.init_containers(), "init_containers", init); !s.ok()) {
    return s;
  }
  DerivePodResources(main, init, in.qos_class(), out);
  return absl::OkStatus();
}

absl::Status NodeNamesFromProto(const google::protobuf::RepeatedPtrField<std::string>& names,
                                std::string_view field, const PlacementLimits& limits,
                                std::vector<std::string_view>& out) {
  if (static_cast<size_t>(names.size()) > limits.max_node_names) {
    return Invalid(field, absl::StrCat("names ", names.size(), " nodes, at most ",
                                       limits.max_node_names, " (http.maxNamesPerRequest)"));
  }
  out.clear();
  out.reserve(static_cast<size_t>(names.size()));
  for (int i = 0; i < names.size(); ++i) {
    const std::string& name = names.Get(i);
    if (name.empty() || name.size() > limits.max_name_bytes) {
      return Invalid(absl::StrCat(Av(field), "[", i, "]"),
                     name.empty() ? "is empty"
                                  : absl::StrCat("is ", name.size(), " bytes, at most ",
                                                 limits.max_name_bytes));
    }
    out.push_back(name);
  }
  return absl::OkStatus();
}

}  // namespace neighborly::extender
