// The prescan over wire bytes: what it reads (node_name, pod count), the
// counts it refuses before parsing, and how its estimate compares with what
// the parsed message really holds.
#include "extender/src/ingest/report_prescan.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "extender/src/model/testing/report_builder.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using testing::AddPod;
using testing::TwoSocketNode;
using ::testing::HasSubstr;
namespace tv1 = ::neighborly::telemetry::v1;

absl::StatusOr<Prescan> ScanBytes(const std::string& wire, PrescanLimits limits = {}) {
  ReportPrescanner prescanner(limits);
  google::protobuf::io::ArrayInputStream input(wire.data(), static_cast<int>(wire.size()));
  return prescanner.Scan(&input, wire.size());
}

// What an agent sends: 100 pods with a few labels, annotations and measurements.
tv1::NodeReport RealisticReport() {
  tv1::NodeReport r = TwoSocketNode("node-7");
  for (int i = 0; i < 100; ++i) {
    AddPod(r, {.uid = absl::StrCat("6f1c0e1a-0000-4000-8000-", 100000000000 + i),
               .namespace_name = "content",
               .name = absl::StrCat("article-service-5d8f7-", i),
               .labels = {{"app", "article-service"}, {"pod-template-hash", "5d8f7"}},
               .annotations = {{"neighborly.io/class", "latency-critical"}},
               .cpu_request_millicores = 2000,
               .memory_request_bytes = 4ll << 30,
               .llc_bytes = 19188940,
               .membw_bytes_per_second = 2800000000,
               .mpki = 1.5});
  }
  return r;
}

TEST(ReportPrescanTest, ReadsTheNodeAndEstimatesWhatTheParseHolds) {
  const tv1::NodeReport report = RealisticReport();
  const std::string wire = report.SerializeAsString();
  absl::StatusOr<Prescan> scan = ScanBytes(wire);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->refusal.ok()) << scan->refusal;
  EXPECT_EQ(scan->node_name, "node-7");
  EXPECT_EQ(scan->pods, 100u);
  tv1::NodeReport parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  const double held = static_cast<double>(parsed.SpaceUsedLong());
  // The estimate is of the right size: neither far below what the parse holds
  // (it would let a costly report through) nor far above (it would refuse
  // real ones).
  EXPECT_GE(static_cast<double>(scan->estimated_bytes), 0.5 * held);
  EXPECT_LE(static_cast<double>(scan->estimated_bytes), 3 * held);
  // Sparse pods: 8.8x since issue 26's PodReport fields (ReportLimits::memory_factor).
  EXPECT_LT(static_cast<double>(scan->estimated_bytes), 10.0 * static_cast<double>(wire.size()));
}

TEST(ReportPrescanTest, EmptyPodRecordsAreCountedNotParsed) {
  // Issue 24: 4.19 M empty records in 8 MiB peaked at 2.86 GB when parsed.
  std::string wire = tv1::NodeReport().SerializeAsString();
  tv1::NodeReport head;
  head.set_node_name("node-1");
  wire = head.SerializeAsString();
  const std::string empty_pod("\x52\x00", 2);  // field 10, length 0
  for (int i = 0; i < 200'000; ++i) wire += empty_pod;
  tv1::NodeReport tail;
  tail.set_node_name("node-2");  // the last occurrence wins, as in the parse
  wire += tail.SerializeAsString();
  absl::StatusOr<Prescan> scan = ScanBytes(wire);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->node_name, "node-2");
  EXPECT_EQ(scan->pods, 200'000u);
  EXPECT_EQ(scan->refusal.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(scan->refusal.message(),
              HasSubstr("NodeReport.pods: more than 1000 entries, at most 1000 (counted before "
                        "parsing)"));
}

TEST(ReportPrescanTest, LabelsAndAnnotationsPerPodAreCounted) {
  tv1::NodeReport r = TwoSocketNode("node-1");
  tv1::PodReport* pod = r.add_pods();
  pod->set_uid("u");
  // Up to 1,024 labels the report is parsed (validation drops the record of
  // more than 256 and keeps the rest); beyond, it is not parsed at all.
  for (int i = 0; i < 1024; ++i) (*pod->mutable_labels())[absl::StrCat("k", i)] = "v";
  absl::StatusOr<Prescan> scan = ScanBytes(r.SerializeAsString());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->refusal.ok()) << scan->refusal;
  (*pod->mutable_labels())["one-more"] = "v";
  scan = ScanBytes(r.SerializeAsString());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_THAT(scan->refusal.message(), HasSubstr("PodReport.labels: more than 1024 entries"));
  pod->clear_labels();
  for (int i = 0; i < 1025; ++i) (*pod->mutable_annotations())[absl::StrCat("k", i)] = "v";
  scan = ScanBytes(r.SerializeAsString());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_THAT(scan->refusal.message(), HasSubstr("PodReport.annotations: more than 1024 entries"));
  // Any other list: CPU cores of the topology.
  pod->clear_annotations();
  for (int i = 0; i < 4097; ++i) r.mutable_topology()->add_cores()->set_core_id(i);
  scan = ScanBytes(r.SerializeAsString());
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_THAT(scan->refusal.message(), HasSubstr("Topology.cores: more than 4096 entries"));
}

TEST(ReportPrescanTest, ManySmallRecordsWithinTheCountsAreTooCostlyToParse) {
  // 1,000 pods of 200 labels each with short keys and empty values: every
  // count within its limit, but ~7-byte entries of a map node with two
  // strings each once parsed.
  tv1::NodeReport r;
  r.set_node_name("node-1");
  for (int p = 0; p < 1000; ++p) {
    tv1::PodReport* pod = r.add_pods();
    for (int i = 0; i < 200; ++i) (*pod->mutable_labels())[absl::StrCat("k", i)] = "";
  }
  const std::string wire = r.SerializeAsString();
  absl::StatusOr<Prescan> scan = ScanBytes(wire);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->pods, 1000u);
  EXPECT_EQ(scan->refusal.code(), absl::StatusCode::kResourceExhausted) << scan->refusal;
  EXPECT_THAT(scan->refusal.message(), HasSubstr("times its size (refused before parsing)"));
  // What the parse would really have held (protobuf's own count).
  EXPECT_GT(r.SpaceUsedLong(), 8 * wire.size());
}

TEST(ReportPrescanTest, MalformedBytesAreAnError) {
  for (const std::string& wire :
       {std::string("\x52\x05\x0a", 3),        // a pod longer than the message
        std::string("\x0a\xff\xff\xff\xff\x0f"),  // a length past the end
        std::string("\x00\x01", 2)}) {           // field number 0
    absl::StatusOr<Prescan> scan = ScanBytes(wire);
    EXPECT_EQ(scan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(scan.status().message(), HasSubstr("malformed NodeReport"));
    tv1::NodeReport parsed;
    EXPECT_FALSE(parsed.ParseFromString(wire));  // the parser agrees
  }
}

TEST(ReportPrescanTest, UnknownFieldsCountInTheEstimate) {
  tv1::NodeReport r;
  r.set_node_name("node-1");
  std::string wire = r.SerializeAsString();
  const size_t before = ScanBytes(wire)->estimated_bytes;
  for (int i = 0; i < 1000; ++i) wire += std::string("\xf8\x01\x01", 3);  // field 31, varint 1
  absl::StatusOr<Prescan> scan = ScanBytes(wire);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_GE(scan->estimated_bytes, before + 1000 * 16);
}

}  // namespace
}  // namespace neighborly::extender
