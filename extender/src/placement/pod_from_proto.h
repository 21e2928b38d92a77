// The placement service's protobuf Pod -> the model's IncomingPod, validated
// and bounded: the same derivation as the HTTP path's JSON decoder
// (model/pod_spec.h), so one pod gives one IncomingPod on either path.
//
//   IncomingPod pod;
//   absl::Status s = PodFromProto(request.pod(), limits, pod);
//   // INVALID_ARGUMENT naming the field: "pod.uid is empty",
//   // "pod.containers[1].cpu_request_millicores is negative (-5)"
#ifndef NEIGHBORLY_EXTENDER_SRC_PLACEMENT_POD_FROM_PROTO_H_
#define NEIGHBORLY_EXTENDER_SRC_PLACEMENT_POD_FROM_PROTO_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "extender/src/model/types.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "neighborly/placement/v1/placement.pb.h"

namespace neighborly::extender {

// What one placement request may carry. Kubernetes' own bounds where it has
// them (object names, 256 KiB of annotations); the node-name count is the
// HTTP path's http.maxNamesPerRequest.
struct PlacementLimits {
  size_t max_node_names = 50'000;
  size_t max_name_bytes = 253;  // node, pod and namespace names (DNS subdomain)
  size_t max_uid_bytes = 128;
  size_t max_label_bytes = 256 << 10;       // keys + values, all labels
  size_t max_annotation_bytes = 256 << 10;  // keys + values, all annotations
  size_t max_containers = 1024;             // containers + init containers
  size_t max_owner_references = 256;
};

// Replaces `out` (its containers' capacity is reused).
absl::Status PodFromProto(const placement::v1::Pod& in, const PlacementLimits& limits,
                          IncomingPod& out);

// Checks a request's node names (count, each non-empty and at most
// max_name_bytes) and views them in `out`, which stays valid while `names` does.
// `field` names the field in errors ("node_names").
absl::Status NodeNamesFromProto(const google::protobuf::RepeatedPtrField<std::string>& names,
                                std::string_view field, const PlacementLimits& limits,
                                std::vector<std::string_view>& out);

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_PLACEMENT_POD_FROM_PROTO_H_
