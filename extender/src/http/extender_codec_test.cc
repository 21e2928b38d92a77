// Conformance tests: the upstream serialisation fixtures and the example bodies
// of the protocol notes (test/testdata/extender/), plus every class of bad input.
#include "extender/src/http/extender_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "extender/src/http/extender_handler.h"
#include "extender/src/http/json_writer.h"
#include "extender/src/http/testing/fake_decider.h"

namespace neighborly::extender {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/extender/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

class CodecTest : public ::testing::Test {
 protected:
  absl::Status Decode(std::string_view text) {
    body_.Clear();
    body_.Assign(text);
    body_.Seal();
    return codec_.Decode(body_, args_);
  }
  std::string DecodeError(std::string_view text) {
    absl::Status s = Decode(text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text.substr(0, 200);
    return std::string(s.message());
  }

  ExtenderCodec codec_;
  RequestBody body_;
  ExtenderArgs args_;
};

// --- upstream TestCompatibility fixtures ---

TEST_F(CodecTest, DecodesCompatibilityExtenderArgs) {
  const std::string text = Fixture("compat_extender_args.json");
  ASSERT_TRUE(Decode(text).ok());
  EXPECT_EQ(args_.pod.name, "podname");
  EXPECT_TRUE(args_.has_nodes);
  EXPECT_TRUE(args_.has_node_names);
  ASSERT_THAT(args_.node_names, ElementsAre("nodename"));
  ASSERT_EQ(args_.raw_nodes.size(), 1u);
  const std::string item =
      R"({"metadata":{"name":"nodename"},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}})";
  EXPECT_EQ(args_.raw_nodes[0], item);
}

TEST_F(CodecTest, DecodesLowerCasedCompatibilityExtenderArgs) {
  // Upstream decodes strings.ToLower(json) too: Go matches keys case-insensitively.
  const std::string text = Lower(Fixture("compat_extender_args.json"));
  ASSERT_TRUE(Decode(text).ok());
  EXPECT_EQ(args_.pod.name, "podname");
  EXPECT_TRUE(args_.has_nodes);
  EXPECT_TRUE(args_.has_node_names);
  EXPECT_THAT(args_.node_names, ElementsAre("nodename"));
  ASSERT_EQ(args_.raw_nodes.size(), 1u);
  EXPECT_THAT(args_.raw_nodes[0], HasSubstr(R"("kubeletendpoint":{"port":0})"));
}

TEST_F(CodecTest, EncodesCompatibilityFilterResultExactly) {
  ASSERT_TRUE(Decode(Fixture("compat_extender_args.json")).ok());
  const std::vector<std::string_view> names = {"node1"};
  const std::pair<std::string_view, std::string_view> failed[] = {{"foo", "bar"}};
  const std::pair<std::string_view, std::string_view> unresolvable[] = {{"baz", "qux"}};
  FilterResultView view;
  view.raw_nodes = &args_.raw_nodes;
  view.node_names = &names;
  view.failed = failed;
  view.failed_unresolvable = unresolvable;
  view.error = "myerror";
  std::string out;
  EncodeFilterResultView(view, out);
  EXPECT_EQ(out, Fixture("compat_filter_result.json"));
}

TEST_F(CodecTest, EncodesCompatibilityHostPriorityAndError) {
  NodeDecision d;
  d.score = 1;
  const std::vector<std::string_view> names = {"myhost"};
  const std::vector<NodeDecision> decisions = {d};
  std::string out;
  EncodePrioritizeResult(names, decisions, out);
  EXPECT_EQ(out, "[" + Fixture("compat_host_priority.json") + "]");
  std::string error;
  EncodeError("myerror", error);
  EXPECT_EQ(error, Fixture("compat_binding_result.json"));
}

TEST_F(CodecTest, OurRepliesDecodeAsTheirLowerCasedFormsDo) {
  // Every key we emit is the PascalCase Go field name; lower-casing our reply
  // gives the same keys the upstream lower-case test decodes.
  const std::vector<std::string_view> names = {"n1", "n2"};
  std::vector<NodeDecision> decisions(2);
  decisions[1].feasible = false;
  decisions[1].reason = "isolation: batch pod beside latency-critical";
  ExtenderArgs args;
  args.has_node_names = true;
  args.node_names = names;
  std::string out;
  EncodeFilterResult(args, decisions, out);
  const auto json = nlohmann::json::parse(out);
  std::vector<std::string> keys;
  for (const auto& [k, v] : json.items()) keys.push_back(k);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("Nodes", "NodeNames", "FailedNodes",
                                                    "FailedAndUnresolvableNodes", "Error"));
}

// --- example bodies (a), (b), (c) ---

void ExpectExamplePod(const IncomingPod& pod) {
  EXPECT_EQ(pod.uid, "5f0c1a52-3b7e-4c61-9d0e-2a8f1e6b9c01");
  EXPECT_EQ(pod.namespace_name, "ml");
  EXPECT_EQ(pod.name, "trainer-7d9f8-x2kq4");
  EXPECT_EQ(pod.labels.at("app"), "trainer");
  EXPECT_EQ(pod.labels.size(), 2u);
  EXPECT_EQ(pod.qos, QosClass::kBurstable);
  EXPECT_EQ(pod.cpu_request_millicores, 2000);
  EXPECT_EQ(pod.memory_request_bytes, int64_t{4} << 30);
  EXPECT_FALSE(pod.wants_exclusive_cpus);
}

TEST_F(CodecTest, ExampleAFullNodesComeBackByteForByte) {
  const std::string text = Fixture("example_a_filter_nodes.json");
  ASSERT_TRUE(Decode(text).ok());
  ExpectExamplePod(args_.pod);
  EXPECT_TRUE(args_.has_nodes);
  EXPECT_FALSE(args_.has_node_names);
  EXPECT_THAT(args_.node_names, ElementsAre("worker-1", "worker-2"));
  const std::string worker1 = Fixture("example_a_worker1.json");
  EXPECT_EQ(args_.raw_nodes[0], worker1);

  std::vector<NodeDecision> decisions(2);
  decisions[1].feasible = false;
  decisions[1].reason = "telemetry: cpu pressure 0.93";
  std::string out;
  EncodeFilterResult(args_, decisions, out);
  EXPECT_EQ(
      out,
      R"({"Nodes":{"metadata":{},"items":[)" + worker1 +
          R"(]},"NodeNames":null,"FailedNodes":{"worker-2":"telemetry: cpu pressure 0.93"},"FailedAndUnresolvableNodes":{},"Error":""})");
}

TEST_F(CodecTest, ExampleAPrettyPrintedItemsAreCopiedWithTheirWhitespace) {
  const std::string text = Fixture("example_a_filter_nodes.pretty.json");
  ASSERT_TRUE(Decode(text).ok());
  ASSERT_EQ(args_.raw_nodes.size(), 2u);
  for (std::string_view raw : args_.raw_nodes) {
    EXPECT_NE(text.find(raw), std::string::npos);  // a slice of the input
    EXPECT_EQ(raw.front(), '{');
    EXPECT_EQ(raw.back(), '}');
  }
  EXPECT_EQ(nlohmann::json::parse(args_.raw_nodes[0]),
            nlohmann::json::parse(Fixture("example_a_worker1.json")));
}

TEST_F(CodecTest, ExampleBNodeNames) {
  ASSERT_TRUE(Decode(Fixture("example_b_filter_names.json")).ok());
  ExpectExamplePod(args_.pod);
  EXPECT_FALSE(args_.has_nodes);
  EXPECT_TRUE(args_.has_node_names);
  EXPECT_THAT(args_.node_names, ElementsAre("worker-1", "worker-2"));
  std::vector<NodeDecision> decisions(2);
  decisions[1].feasible = false;
  decisions[1].reason = "telemetry stale";
  std::string out;
  EncodeFilterResult(args_, decisions, out);
  EXPECT_EQ(
      out,
      R"({"Nodes":null,"NodeNames":["worker-1"],"FailedNodes":{"worker-2":"telemetry stale"},"FailedAndUnresolvableNodes":{},"Error":""})");
}

TEST_F(CodecTest, ExampleCPrioritize) {
  ASSERT_TRUE(Decode(Fixture("example_c_prioritize_names.json")).ok());
  EXPECT_THAT(args_.node_names, ElementsAre("worker-1", "worker-3", "worker-7"));
  std::vector<NodeDecision> decisions(3);
  decisions[0].score = 7;
  decisions[1].score = 10;
  decisions[2].score = 0;
  std::string out;
  EncodePrioritizeResult(args_.node_names, decisions, out);
  EXPECT_EQ(
      out,
      R"([{"Host":"worker-1","Score":7},{"Host":"worker-3","Score":10},{"Host":"worker-7","Score":0}])");
}

TEST_F(CodecTest, AcceptsKeysInAnyCase) {
  std::string text = Fixture("example_b_filter_names.json");
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + 1)) {
      text.replace(pos, from.size(), to);
    }
  };
  replace("\"Pod\":", "\"pOD\":");
  replace("\"NodeNames\":", "\"NODENAMES\":");
  replace("\"Nodes\":", "\"nodes\":");
  replace("\"metadata\":", "\"Metadata\":");
  replace("\"labels\":", "\"LABELS\":");
  replace("\"qosClass\":", "\"QosClass\":");
  replace("\"containers\":", "\"Containers\":");
  replace("\"resources\":", "\"Resources\":");
  replace("\"requests\":", "\"REQUESTS\":");
  replace("\"uid\":", "\"UID\":");
  ASSERT_TRUE(Decode(text).ok());
  ExpectExamplePod(args_.pod);
  EXPECT_THAT(args_.node_names, ElementsAre("worker-1", "worker-2"));
}

TEST_F(CodecTest, ScoresAreClampedToZeroToTen) {
  std::vector<NodeDecision> decisions(2);
  decisions[0].score = -3;
  decisions[1].score = 42;
  const std::vector<std::string_view> names = {"a", "b"};
  std::string out;
  EncodePrioritizeResult(names, decisions, out);
  EXPECT_EQ(out, R"([{"Host":"a","Score":0},{"Host":"b","Score":10}])");
}

// Every score, plain and escaped names, and a reply long enough to grow the
// buffer several times: the same bytes as the entries written one by one.
TEST_F(CodecTest, PrioritizeRepliesMatchTheEntryByEntryEncoding) {
  std::vector<std::string> owned;
  for (int i = 0; i < 3000; ++i) {
    owned.push_back(i % 7 == 3 ? absl::StrCat("odd\"name\\", i) : absl::StrCat("worker-", i));
  }
  const std::vector<std::string_view> names(owned.begin(), owned.end());
  std::vector<NodeDecision> decisions(names.size());
  std::string expected = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    decisions[i].score = static_cast<int>(i % 13) - 1;  // -1 .. 11
    if (i > 0) expected += ',';
    expected += "{\"Host\":";
    AppendJsonString(names[i], expected);
    expected += ",\"Score\":";
    AppendInt(std::clamp(decisions[i].score, 0, 10), expected);
    expected += '}';
  }
  expected += ']';
  std::string out = "stale bytes from the last request";
  out.clear();
  EncodePrioritizeResult(names, decisions, out);
  EXPECT_EQ(out, expected);
  EXPECT_EQ(nlohmann::json::parse(out).size(), names.size());
}

TEST_F(CodecTest, ReasonsAreEscaped) {
  ExtenderArgs args;
  args.has_node_names = true;
  args.node_names = {"n\"1"};
  std::vector<NodeDecision> decisions(1);
  decisions[0].feasible = false;
  decisions[0].reason = "quote \" backslash \\ newline \n <tag>";
  std::string out;
  EncodeFilterResult(args, decisions, out);
  const auto json = nlohmann::json::parse(out);
  EXPECT_EQ(json["FailedNodes"]["n\"1"], "quote \" backslash \\ newline \n <tag>");
}

TEST_F(CodecTest, EscapedKeysAndNamesAreUnescaped) {
  ASSERT_TRUE(
      Decode(R"({"\u0050od":{"metadata":{"name":"p\u00e9"}},"NodeNames":["a\u002db"]})").ok());
  EXPECT_EQ(args_.pod.name, "p\xC3\xA9");
  EXPECT_THAT(args_.node_names, ElementsAre("a-b"));
}

// --- QoS and requests ---

TEST_F(CodecTest, DerivesGuaranteedWithIntegerCpuAsExclusive) {
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[
      {"resources":{"requests":{"cpu":"2","memory":"1Gi"},"limits":{"cpu":"2","memory":"1Gi"}}},
      {"resources":{"limits":{"cpu":"1","memory":"512Mi"}}}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kGuaranteed);
  EXPECT_EQ(args_.pod.cpu_request_millicores, 3000);
  EXPECT_EQ(args_.pod.memory_request_bytes, (int64_t{1} << 30) + (int64_t{512} << 20));
  EXPECT_TRUE(args_.pod.wants_exclusive_cpus);
}

TEST_F(CodecTest, GuaranteedWithFractionalCpuIsNotExclusive) {
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[
      {"resources":{"requests":{"cpu":"1500m","memory":"1Gi"},"limits":{"cpu":"1500m","memory":"1Gi"}}}]}},
      "NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kGuaranteed);
  EXPECT_FALSE(args_.pod.wants_exclusive_cpus);
}

TEST_F(CodecTest, DerivesBestEffortAndBurstable) {
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[{"name":"a"}]}},"NodeNames":[]})").ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kBestEffort);
  ASSERT_TRUE(
      Decode(
          R"({"Pod":{"spec":{"containers":[{"resources":{"requests":{"cpu":"100m"}}}]}},"NodeNames":[]})")
          .ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kBurstable);
  EXPECT_EQ(args_.pod.cpu_request_millicores, 100);
}

TEST_F(CodecTest, StatusQosClassWinsOverDerivation) {
  ASSERT_TRUE(
      Decode(R"({"Pod":{"spec":{"containers":[{"resources":{"limits":{"cpu":"4","memory":"1Gi"}}}]},
      "status":{"qosClass":"Guaranteed"}},"NodeNames":[]})")
          .ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kGuaranteed);
  EXPECT_EQ(args_.pod.cpu_request_millicores, 4000);  // requests default to limits
  EXPECT_TRUE(args_.pod.wants_exclusive_cpus);
}

TEST_F(CodecTest, InitContainersCountAsTheirMaximum) {
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{
      "initContainers":[{"resources":{"requests":{"cpu":"4","memory":"1Gi"}}},
                        {"resources":{"requests":{"cpu":"1","memory":"3Gi"}}}],
      "containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}},
                    {"resources":{"requests":{"cpu":1,"memory":"1Gi"}}}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.cpu_request_millicores, 4000);
  EXPECT_EQ(args_.pod.memory_request_bytes, int64_t{3} << 30);
  // Per container too, init containers flagged (issue 14: the topology manager
  // emulation pins containers, not pods).
  ASSERT_EQ(args_.pod.containers.size(), 4u);
  EXPECT_EQ(args_.pod.containers[0].cpu_request_millicores, 1000);
  EXPECT_FALSE(args_.pod.containers[0].init);
  EXPECT_EQ(args_.pod.containers[2].cpu_request_millicores, 4000);
  EXPECT_TRUE(args_.pod.containers[2].init);
  EXPECT_EQ(args_.pod.containers[3].memory_request_bytes, int64_t{3} << 30);
}

TEST_F(CodecTest, ContainersKeepTheirOwnRequests) {
  // A Guaranteed pod of 1500m + 500m: 2 CPUs in all, none per container whole.
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[
      {"resources":{"requests":{"cpu":"1500m","memory":"1Gi"},"limits":{"cpu":"1500m","memory":"1Gi"}}},
      {"resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.qos, QosClass::kGuaranteed);
  EXPECT_EQ(args_.pod.cpu_request_millicores, 2000);
  ASSERT_EQ(args_.pod.containers.size(), 2u);
  EXPECT_EQ(args_.pod.containers[0].cpu_request_millicores, 1500);
  EXPECT_EQ(args_.pod.containers[1].cpu_request_millicores, 500);  // requests default to limits
  // A reused request object starts empty again.
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[]}},"NodeNames":[]})").ok());
  EXPECT_TRUE(args_.pod.containers.empty());
}

// --- workload identity ---

TEST_F(CodecTest, ReadsTheControllerOwnerReference) {
  ASSERT_TRUE(Decode(R"({"Pod":{"metadata":{"name":"scan-7d9f8c6b5-x2k4q","ownerReferences":[
      {"apiVersion":"v1","kind":"ConfigMap","name":"not-the-controller","uid":"u1"},
      {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"scan-7d9f8c6b5","uid":"u2",
       "controller":true,"blockOwnerDeletion":true}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.owner_kind, "ReplicaSet");
  EXPECT_EQ(args_.pod.owner_name, "scan-7d9f8c6b5");
  // Without a controller flag, the first owner stands in.
  ASSERT_TRUE(Decode(R"({"Pod":{"metadata":{"ownerReferences":[{"kind":"Job","name":"a"},
      {"kind":"Job","name":"b","controller":null}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.owner_name, "a");
  EXPECT_THAT(
      DecodeError(
          R"({"Pod":{"metadata":{"ownerReferences":[{"kind":"Job","controller":"yes"}]}},"NodeNames":[]})"),
      HasSubstr("Pod.metadata.ownerReferences[0].controller: expected boolean"));
  EXPECT_THAT(
      DecodeError(R"({"Pod":{"metadata":{"ownerReferences":{"kind":"Job"}}},"NodeNames":[]})"),
      HasSubstr("Pod.metadata.ownerReferences"));
}

TEST_F(CodecTest, SumsCpuLimitsOnlyWhenEveryContainerHasOne) {
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[
      {"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"4"}}},
      {"resources":{"limits":{"cpu":"12"}}}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.cpu_limit_millicores, 16000);
  ASSERT_TRUE(Decode(R"({"Pod":{"spec":{"containers":[
      {"resources":{"limits":{"cpu":"4"}}},{"resources":{"requests":{"cpu":"1"}}}]}},"NodeNames":[]})")
                  .ok());
  EXPECT_EQ(args_.pod.cpu_limit_millicores, 0) << "one unbounded container: no limit";
}

TEST_F(CodecTest, NullFieldsReadAsEmpty) {
  ASSERT_TRUE(Decode(R"({"Pod":{"metadata":{"name":null,"labels":null},"spec":{"containers":null},
      "status":null},"Nodes":null,"NodeNames":["a"]})")
                  .ok());
  EXPECT_TRUE(args_.pod.labels.empty());
  EXPECT_FALSE(args_.has_nodes);
}

// Issue 15: a Pod with millions of tiny labels took seconds and ~800 MB to
// decode. Labels and annotations are bounded by what the API server stores.
TEST_F(CodecTest, RefusesLabelMapsLargerThanAnyStoredPod) {
  auto pod_with_labels = [](size_t bytes) {
    std::string body = R"({"Pod":{"metadata":{"labels":{)";
    for (int i = 0; body.size() < bytes; ++i) body += absl::StrCat("\"k", i, "\":\"v\",");
    return body + R"("last":"v"}}},"NodeNames":["a"]})";
  };
  EXPECT_TRUE(Decode(pod_with_labels(1 << 20)).ok());
  const absl::Status s = Decode(pod_with_labels(4 << 20));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("Pod.metadata.labels: more than 1572864 bytes of keys and values"));
}

TEST_F(CodecTest, AcceptsNullAndOmittedCreationTimestamps) {
  ASSERT_TRUE(Decode(R"({"Pod":{"metadata":{"name":"p","creationTimestamp":null}},
      "Nodes":{"metadata":{},"items":[{"metadata":{"name":"n","creationTimestamp":null}},{"metadata":{"name":"m"}}]}})")
                  .ok());
  EXPECT_THAT(args_.node_names, ElementsAre("n", "m"));
}

TEST_F(CodecTest, NodeItemNameFoundWhereverMetadataIs) {
  ASSERT_TRUE(Decode(R"({"Pod":{},"Nodes":{"items":[
      {"spec":{"name":"decoy"},"status":{},"metadata":{"labels":{"name":"x"},"name":"real"}} ,
      {"metadata":{"name":"second"}}]}})")
                  .ok());
  EXPECT_THAT(args_.node_names, ElementsAre("real", "second"));
  EXPECT_EQ(
      args_.raw_nodes[0],
      R"({"spec":{"name":"decoy"},"status":{},"metadata":{"labels":{"name":"x"},"name":"real"}})");
  EXPECT_EQ(args_.raw_nodes[1], R"({"metadata":{"name":"second"}})");
}

// --- bad input ---

TEST_F(CodecTest, RejectsEmptyBody) {
  EXPECT_THAT(DecodeError(""), HasSubstr("empty request body"));
  EXPECT_THAT(DecodeError(" \n\t"), HasSubstr("empty request body"));
}

TEST_F(CodecTest, RejectsTruncatedJson) {
  const std::string text = Fixture("example_b_filter_names.json");
  for (size_t cut : {size_t{1}, size_t{10}, text.size() / 2, text.size() - 1}) {
    EXPECT_THAT(DecodeError(text.substr(0, cut)), HasSubstr("truncated")) << cut;
  }
}

TEST_F(CodecTest, RejectsMalformedJsonAnywhere) {
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a"],"Extra":[1,,2]})"),
              HasSubstr("malformed JSON"));
  EXPECT_THAT(DecodeError(R"({"Pod":{"spec":{"x":tru}},"NodeNames":["a"]})"),
              HasSubstr("malformed JSON"));
  EXPECT_THAT(DecodeError(R"({"Pod" {}})"), HasSubstr("malformed JSON"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a\q"]})"), HasSubstr("malformed JSON"));
}

TEST_F(CodecTest, RejectsTrailingGarbage) {
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a"]} x)"), HasSubstr("trailing data"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a"]}{"Pod":{}})"), HasSubstr("trailing data"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a"]}})"), HasSubstr("trailing data"));
}

TEST_F(CodecTest, RejectsInvalidUtf8) {
  EXPECT_THAT(DecodeError("{\"Pod\":{\"metadata\":{\"name\":\"\xC3\x28\"}},\"NodeNames\":[]}"),
              HasSubstr("UTF-8"));
  EXPECT_THAT(DecodeError("{\"Pod\":{},\"NodeNames\":[],\"x\":\"\xFF\"}"), HasSubstr("UTF-8"));
}

TEST_F(CodecTest, RejectsPathologicalNesting) {
  std::string deep = R"({"Pod":{},"NodeNames":[],"x":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(DecodeError(deep), HasSubstr("nested deeper than"));
}

TEST_F(CodecTest, RejectsNonObjectBodies) {
  EXPECT_THAT(DecodeError("[1,2]"), HasSubstr("must be a JSON object"));
  EXPECT_THAT(DecodeError("\"text\""), HasSubstr("must be a JSON object"));
  EXPECT_THAT(DecodeError("null"), HasSubstr("must be a JSON object"));
}

TEST_F(CodecTest, RejectsWrongTypesNamingThePath) {
  EXPECT_THAT(DecodeError(R"({"Pod":[],"NodeNames":[]})"),
              HasSubstr("wrong type at Pod: expected object"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":"worker-1"})"),
              HasSubstr("wrong type at NodeNames: expected array"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"NodeNames":["a",7]})"),
              HasSubstr("wrong type at NodeNames[1]: expected string, got number"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"Nodes":[]})"), HasSubstr("wrong type at Nodes"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"Nodes":{"items":{}}})"),
              HasSubstr("wrong type at Nodes.items: expected array"));
  EXPECT_THAT(DecodeError(R"({"Pod":{},"Nodes":{"items":[7]}})"),
              HasSubstr("wrong type at Nodes.items[0]"));
  EXPECT_THAT(DecodeError(R"({"Pod":{"metadata":{"labels":{"app":1}}},"NodeNames":[]})"),
              HasSubstr("Pod.metadata.labels.app"));
  EXPECT_THAT(DecodeError(R"({"Pod":{"metadata":{"uid":false}},"NodeNames":[]})"),
              HasSubstr("Pod.metadata.uid"));
  EXPECT_THAT(DecodeError(R"({"Pod":{"spec":{"containers":{}}},"NodeNames":[]})"),
              HasSubstr("Pod.spec.containers"));
}

TEST_F(CodecTest, RejectsBadQuantities) {
  EXPECT_THAT(
      DecodeError(
          R"({"Pod":{"spec":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}},"NodeNames":[]})"),
      HasSubstr("Pod.spec.containers[0].resources.requests.cpu"));
  EXPECT_THAT(
      DecodeError(
          R"({"Pod":{"spec":{"containers":[{},{"resources":{"limits":{"memory":[]}}}]}},"NodeNames":[]})"),
      HasSubstr("Pod.spec.containers[1].resources.limits.memory"));
}

TEST_F(CodecTest, RejectsMissingPodAndNamelessNodes) {
  EXPECT_THAT(DecodeError(R"({"NodeNames":["a"]})"), HasSubstr("Pod is missing"));
  EXPECT_THAT(DecodeError(R"({"Pod":null,"NodeNames":["a"]})"), HasSubstr("Pod is missing"));
  EXPECT_THAT(
      DecodeError(R"({"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a"}},{"spec":{}}]}})"),
      HasSubstr("Nodes.items[1]: metadata.name is missing"));
}

TEST_F(CodecTest, SurvivesEverySingleByteCorruption) {
  // Never a crash (the ASan preset runs this too): each byte of a real request
  // replaced by each of a few troublemakers decodes or fails cleanly.
  const std::string original = Fixture("example_a_filter_nodes.json");
  ASSERT_TRUE(Decode(original).ok());
  const char replacements[] = {'{', '}', '[', ']', '"', '\\', ',', ':', 'x', '\0', '\xff'};
  int failures = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    for (char c : replacements) {
      std::string text = original;
      text[i] = c;
      absl::Status s = Decode(text);
      if (!s.ok()) {
        ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << i;
        ASSERT_FALSE(s.message().empty());
        ++failures;
      }
    }
  }
  EXPECT_GT(failures, 0);
  EXPECT_LT(failures, static_cast<int>(original.size() * std::size(replacements)));
}

// --- the two decode kernels (AVX2 and portable) ---

TEST(DecodeKernelTest, DefaultCodecUsesTheBestKernelThisCpuRuns) {
  EXPECT_EQ(ExtenderCodec().kernel(), BestDecodeKernel());
  EXPECT_EQ(ExtenderCodec(DecodeKernel::kPortable).kernel(), DecodeKernel::kPortable);
  // Asking for AVX2 on a CPU without it falls back instead of crashing later.
  EXPECT_EQ(ExtenderCodec(DecodeKernel::kAvx2).kernel(), BestDecodeKernel());
  EXPECT_EQ(DecodeKernelName(DecodeKernel::kAvx2), "avx2");
  EXPECT_EQ(DecodeKernelName(DecodeKernel::kPortable), "portable");
}

// Everything the decoder extracts, as text, to compare two decodes.
std::string Describe(const absl::Status& status, const ExtenderArgs& a) {
  if (!status.ok()) return "error: " + std::string(status.message());
  std::ostringstream out;
  const IncomingPod& p = a.pod;
  out << p.uid << "|" << p.namespace_name << "|" << p.name << "|" << static_cast<int>(p.qos) << "|"
      << p.cpu_request_millicores << "|" << p.memory_request_bytes << "|" << p.wants_exclusive_cpus
      << "|" << a.has_nodes << a.has_node_names;
  for (const auto& [k, v] : p.labels) out << "|l:" << k << "=" << v;
  for (const auto& [k, v] : p.annotations) out << "|a:" << k << "=" << v;
  for (std::string_view n : a.node_names) out << "|n:" << n;
  for (std::string_view n : a.raw_nodes) out << "|r:" << n.size() << ":" << n;
  return out.str();
}

TEST(DecodeKernelTest, BothKernelsDecodeEveryFixtureAndCorruptionAlike) {
  if (BestDecodeKernel() != DecodeKernel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2: only the portable kernel can run";
  }
  ExtenderCodec avx2(DecodeKernel::kAvx2), portable(DecodeKernel::kPortable);
  ASSERT_EQ(avx2.kernel(), DecodeKernel::kAvx2);
  auto both = [&](const std::string& text) {
    RequestBody body;
    body.Assign(text);
    body.Seal();
    ExtenderArgs a, b;
    const absl::Status sa = avx2.Decode(body, a);
    const absl::Status sb = portable.Decode(body, b);
    return std::make_pair(Describe(sa, a), Describe(sb, b));
  };
  int decoded = 0;
  for (const char* name : {"compat_extender_args.json", "example_a_filter_nodes.json",
                           "example_a_filter_nodes.pretty.json", "example_b_filter_names.json",
                           "example_c_prioritize_names.json", "compat_binding_args.json"}) {
    const auto [a, b] = both(Fixture(name));
    EXPECT_EQ(a, b) << name;
    decoded += a.starts_with("error") ? 0 : 1;
  }
  EXPECT_GE(decoded, 5);
  const std::string original = Fixture("example_b_filter_names.json");
  const char replacements[] = {'{', '}', '"', '\\', ',', ':', 'x', '1', '\0', '\xff'};
  for (size_t i = 0; i < original.size(); ++i) {
    for (char c : replacements) {
      std::string text = original;
      text[i] = c;
      const auto [a, b] = both(text);
      ASSERT_EQ(a, b) << "byte " << i << " replaced by " << static_cast<int>(c);
    }
  }
}

// --- the handler's shape checks ---

TEST(ExtenderHandlerTest, RejectsBothAndNeitherNodeLists) {
  FakeDecider decider;
  ExtenderHandler handler(decider, nullptr);
  ScratchPool::Lease scratch = handler.scratch().Acquire();
  auto run = [&](std::string_view text) {
    scratch->body.Clear();
    scratch->body.Assign(text);
    scratch->body.Seal();
    return handler.Handle(Verb::kFilter, *scratch);
  };
  EXPECT_EQ(run(Fixture("compat_extender_args.json")), 400);
  EXPECT_THAT(scratch->reply, HasSubstr("both Nodes and NodeNames"));
  EXPECT_EQ(run(R"({"Pod":{},"Nodes":null,"NodeNames":null})"), 400);
  EXPECT_THAT(scratch->reply, HasSubstr("neither Nodes nor NodeNames"));
  EXPECT_EQ(nlohmann::json::parse(scratch->reply).size(), 1u);
  EXPECT_EQ(decider.filter_calls.load(), 0);
  EXPECT_EQ(run(R"({"Pod":{},"NodeNames":[]})"), 200);
  EXPECT_EQ(
      scratch->reply,
      R"({"Nodes":null,"NodeNames":[],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""})");
}

TEST(ExtenderHandlerTest, PrioritizeAnswersEveryNodeInOrder) {
  FakeDecider decider;
  decider.SetScore("b", 9);
  ExtenderHandler handler(decider, nullptr);
  ScratchPool::Lease scratch = handler.scratch().Acquire();
  scratch->body.Assign(R"({"Pod":{"metadata":{"name":"p"}},"NodeNames":["c","b","a"]})");
  scratch->body.Seal();
  ASSERT_EQ(handler.Handle(Verb::kPrioritize, *scratch), 200);
  EXPECT_EQ(scratch->reply,
            R"([{"Host":"c","Score":5},{"Host":"b","Score":9},{"Host":"a","Score":5}])");
  EXPECT_EQ(decider.last_pod().name, "p");
}

}  // namespace
}  // namespace neighborly::extender
