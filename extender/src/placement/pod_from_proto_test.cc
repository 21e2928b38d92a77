// The protobuf Pod and the JSON v1.Pod of the same pod give the same
// IncomingPod (one derivation, model/pod_spec.h), and bad protobuf pods are
// refused naming the field.
#include "extender/src/placement/pod_from_proto.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "extender/src/http/extender_codec.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;
namespace pv1 = ::neighborly::placement::v1;

IncomingPod FromJson(const std::string& pod_json) {
  ExtenderCodec codec;
  RequestBody body;
  body.Assign(R"({"Pod":)" + pod_json + R"(,"NodeNames":["n"]})");
  body.Seal();
  ExtenderArgs args;
  const absl::Status s = codec.Decode(body, args);
  EXPECT_TRUE(s.ok()) << s;
  return args.pod;
}

IncomingPod FromProto(const std::string& text) {
  pv1::Pod pod;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &pod)) << text;
  IncomingPod out;
  const absl::Status s = PodFromProto(pod, PlacementLimits(), out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

absl::Status ProtoError(const std::string& text, PlacementLimits limits = {}) {
  pv1::Pod pod;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &pod)) << text;
  IncomingPod out;
  return PodFromProto(pod, limits, out);
}

void ExpectSame(const IncomingPod& a, const IncomingPod& b) {
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.namespace_name, b.namespace_name);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.qos, b.qos) << QosClassName(a.qos) << " vs " << QosClassName(b.qos);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.annotations, b.annotations);
  EXPECT_EQ(a.owner_kind, b.owner_kind);
  EXPECT_EQ(a.owner_name, b.owner_name);
  EXPECT_EQ(a.cpu_request_millicores, b.cpu_request_millicores);
  EXPECT_EQ(a.cpu_limit_millicores, b.cpu_limit_millicores);
  EXPECT_EQ(a.memory_request_bytes, b.memory_request_bytes);
  EXPECT_EQ(a.wants_exclusive_cpus, b.wants_exclusive_cpus);
  ASSERT_EQ(a.containers.size(), b.containers.size());
  for (size_t i = 0; i < a.containers.size(); ++i) {
    EXPECT_EQ(a.containers[i].cpu_request_millicores, b.containers[i].cpu_request_millicores) << i;
    EXPECT_EQ(a.containers[i].memory_request_bytes, b.containers[i].memory_request_bytes) << i;
    EXPECT_EQ(a.containers[i].init, b.containers[i].init) << i;
  }
}

struct SamePod {
  std::string name;
  std::string json;
  std::string proto;
};

class SamePodTest : public ::testing::TestWithParam<SamePod> {};

TEST_P(SamePodTest, JsonAndProtoGiveTheSameIncomingPod) {
  const IncomingPod json = FromJson(GetParam().json);
  const IncomingPod proto = FromProto(GetParam().proto);
  ExpectSame(json, proto);
}

INSTANTIATE_TEST_SUITE_P(
    Pods, SamePodTest,
    ::testing::Values(
        // Guaranteed by its status, integer CPUs: pinned.
        SamePod{"pinned_guaranteed",
                R"({"metadata":{"uid":"u1","namespace":"content","name":"article-1",
                    "labels":{"app":"article"},"annotations":{"neighborly.io/class":"latency-critical"},
                    "ownerReferences":[{"kind":"ReplicaSet","name":"article-5d8f7","controller":true}]},
                    "spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"4","memory":"4Gi"},
                    "limits":{"cpu":"4","memory":"4Gi"}}}]},"status":{"qosClass":"Guaranteed"}})",
                R"pb(uid: "u1"
                     namespace: "content"
                     name: "article-1"
                     labels { key: "app" value: "article" }
                     annotations { key: "neighborly.io/class" value: "latency-critical" }
                     owner_references { kind: "ReplicaSet" name: "article-5d8f7" controller: true }
                     containers {
                       name: "a"
                       cpu_request_millicores: 4000
                       cpu_limit_millicores: 4000
                       memory_request_bytes: 4294967296
                       memory_limit_bytes: 4294967296
                     }
                     qos_class: "Guaranteed")pb"},
        // No status: Guaranteed derived from limits alone (requests default to them).
        SamePod{"derived_guaranteed_from_limits",
                R"({"metadata":{"uid":"u2","namespace":"ns","name":"p"},
                    "spec":{"containers":[{"resources":{"limits":{"cpu":"2","memory":"1Gi"}}}]}})",
                R"pb(uid: "u2"
                     namespace: "ns"
                     name: "p"
                     containers { cpu_limit_millicores: 2000 memory_limit_bytes: 1073741824 })pb"},
        // Burstable, with a larger init container and a second container without limits.
        SamePod{"burstable_with_init",
                R"({"metadata":{"uid":"u3","namespace":"ns","name":"p",
                    "ownerReferences":[{"kind":"Job","name":"first"},{"kind":"CronJob","name":"c","controller":true},
                                       {"kind":"Other","name":"late","controller":true}]},
                    "spec":{"containers":[{"resources":{"requests":{"cpu":"500m","memory":"256Mi"},"limits":{"cpu":"1"}}},
                                          {"resources":{"requests":{"cpu":"250m"}}}],
                            "initContainers":[{"resources":{"requests":{"cpu":"3","memory":"1Gi"}}}]}})",
                R"pb(uid: "u3"
                     namespace: "ns"
                     name: "p"
                     owner_references { kind: "Job" name: "first" }
                     owner_references { kind: "CronJob" name: "c" controller: true }
                     owner_references { kind: "Other" name: "late" controller: true }
                     containers {
                       cpu_request_millicores: 500
                       memory_request_bytes: 268435456
                       cpu_limit_millicores: 1000
                     }
                     containers { cpu_request_millicores: 250 }
                     init_containers {
                       cpu_request_millicores: 3000
                       memory_request_bytes: 1073741824
                     })pb"},
        // Nothing set: BestEffort; the first owner without a controller.
        SamePod{"best_effort",
                R"({"metadata":{"uid":"u4","namespace":"ns","name":"p",
                    "ownerReferences":[{"kind":"Node","name":"n1"},{"kind":"X","name":"y"}]},
                    "spec":{"containers":[{"name":"c"}]}})",
                R"pb(uid: "u4"
                     namespace: "ns"
                     name: "p"
                     owner_references { kind: "Node" name: "n1" }
                     owner_references { kind: "X" name: "y" }
                     containers { name: "c" })pb"},
        // Guaranteed with fractional CPUs: not pinned.
        SamePod{"guaranteed_fractional",
                R"({"metadata":{"uid":"u5","namespace":"ns","name":"p"},
                    "spec":{"containers":[{"resources":{"requests":{"cpu":"1500m","memory":"1Gi"},
                    "limits":{"cpu":"1500m","memory":"1Gi"}}}]}})",
                R"pb(uid: "u5"
                     namespace: "ns"
                     name: "p"
                     containers {
                       cpu_request_millicores: 1500
                       cpu_limit_millicores: 1500
                       memory_request_bytes: 1073741824
                       memory_limit_bytes: 1073741824
                     })pb"}),
    [](const ::testing::TestParamInfo<SamePod>& param_info) { return param_info.param.name; });

TEST(PodFromProtoTest, RefusesMissingIdentityNamingTheField) {
  EXPECT_THAT(ProtoError(R"pb(namespace: "ns" name: "p")pb").message(),
              HasSubstr("pod.uid is empty"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u" name: "p")pb").message(),
              HasSubstr("pod.namespace is empty"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u" namespace: "ns")pb").message(),
              HasSubstr("pod.name is empty"));
  EXPECT_EQ(ProtoError(R"pb(namespace: "ns" name: "p")pb").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PodFromProtoTest, RefusesNegativeQuantitiesAndUnknownQos) {
  EXPECT_THAT(ProtoError(R"pb(uid: "u"
                              namespace: "ns"
                              name: "p"
                              containers {}
                              containers { memory_limit_bytes: -1 })pb")
                  .message(),
              HasSubstr("pod.containers[1].memory_limit_bytes is negative (-1)"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u"
                              namespace: "ns"
                              name: "p"
                              init_containers { cpu_request_millicores: -5 })pb")
                  .message(),
              HasSubstr("pod.init_containers[0].cpu_request_millicores is negative"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u" namespace: "ns" name: "p" qos_class: "Gold")pb").message(),
              HasSubstr("pod.qos_class is \"Gold\""));
}

TEST(PodFromProtoTest, BoundsSizes) {
  PlacementLimits limits;
  limits.max_label_bytes = 16;
  limits.max_annotation_bytes = 16;
  limits.max_containers = 2;
  EXPECT_THAT(ProtoError(R"pb(uid: "u"
                              namespace: "ns"
                              name: "p"
                              labels { key: "app" value: "a-very-long-label-value" })pb",
                         limits)
                  .message(),
              HasSubstr("pod.labels hold 26 bytes of keys and values, at most 16"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u"
                              namespace: "ns"
                              name: "p"
                              annotations { key: "neighborly.io/class" value: "batch" })pb",
                         limits)
                  .message(),
              HasSubstr("pod.annotations hold"));
  EXPECT_THAT(ProtoError(R"pb(uid: "u"
                              namespace: "ns"
                              name: "p"
                              containers {}
                              containers {}
                              init_containers {})pb",
                         limits)
                  .message(),
              HasSubstr("hold 3 containers, at most 2"));
  EXPECT_THAT(
      ProtoError(absl::StrCat("uid: '", std::string(129, 'u'), "' namespace: 'ns' name: 'p'"))
          .message(),
      HasSubstr("pod.uid is 129 bytes, at most 128"));
}

TEST(PodFromProtoTest, NodeNamesAreBoundedAndNonEmpty) {
  google::protobuf::RepeatedPtrField<std::string> names;
  names.Add("node-1");
  names.Add("");
  PlacementLimits limits;
  std::vector<std::string_view> out;
  EXPECT_THAT(NodeNamesFromProto(names, "node_names", limits, out).message(),
              HasSubstr("node_names[1] is empty"));
  limits.max_node_names = 1;
  EXPECT_THAT(NodeNamesFromProto(names, "node_names", limits, out).message(),
              HasSubstr("names 2 nodes, at most 1 (http.maxNamesPerRequest)"));
  names.Mutable(1)->assign("node-2");
  limits.max_node_names = 2;
  ASSERT_TRUE(NodeNamesFromProto(names, "node_names", limits, out).ok());
  EXPECT_THAT(out, ::testing::ElementsAre("node-1", "node-2"));
}

}  // namespace
}  // namespace neighborly::extender
