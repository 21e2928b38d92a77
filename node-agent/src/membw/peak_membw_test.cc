#include "node-agent/src/membw/peak_membw.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node-agent/src/sys/test_tree.h"

namespace neighborly::agent {
namespace {

using ::testing::HasSubstr;

constexpr char kBoot[] = "0b5e55ed-0000-4000-8000-00000000b007";
constexpr char kCpuinfo[] =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
constexpr char kCache[] = "/var/lib/neighborly/peak-membw.json";

std::string Testdata(const std::string& path) {
  return std::string(NEIGHBORLY_SOURCE_DIR) + "/test/testdata/" + path;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Answers with fixed figures per node and counts its calls.
class FakeMeter final : public BandwidthMeter {
 public:
  absl::StatusOr<TriadResult> Measure(const TriadRequest& request) override {
    requests.push_back(request);
    if (!error.ok()) return error;
    TriadResult r;
    r.threads = static_cast<int>(request.cpus.size());
    r.cpus = request.cpus;
    r.working_set_bytes = request.working_set_bytes;
    r.passes = 12;
    r.clean_passes = disturbed ? 0 : 10;
    r.best_any_bytes_per_second = 100e9 + request.numa_node * 1e9;
    r.bytes_per_second = disturbed ? 0 : r.best_any_bytes_per_second;
    r.cpu_share = disturbed ? 0.2 : 0.99;
    r.elapsed = absl::Milliseconds(800);
    r.placement = "bound to node (fake)";
    return r;
  }
  std::vector<TriadRequest> requests;
  absl::Status error;
  bool disturbed = false;
};

Topology TwoNodes() {
  Topology t;
  t.cpus_online = {0, 1, 2, 3};
  t.numa_nodes = {{.id = 0, .cpus = {0, 1}, .memory_bytes = 64ull << 30, .distances = {10, 21}},
                  {.id = 1, .cpus = {2, 3}, .memory_bytes = 64ull << 30, .distances = {21, 10}}};
  t.l3_domains = {
      {.id = 0, .cpus = {0, 1}, .size_bytes = 32ull << 20, .numa_node = 0, .numa_nodes = {0}},
      {.id = 1, .cpus = {2, 3}, .size_bytes = 32ull << 20, .numa_node = 1, .numa_nodes = {1}}};
  return t;
}

struct Host {
  explicit Host(const char* smbios_fixture = nullptr) {
    if (smbios_fixture != nullptr) tree.CopyFrom(Testdata(std::string("smbios/") + smbios_fixture));
    tree.Write("/proc/cpuinfo", kCpuinfo);
    fs = NewRealFilesystem(tree.root());
    env = {.fs = fs.get(), .meter = &meter, .clock = &clock, .boot_id = kBoot};
  }
  PeakMembwReport Resolve() { return ResolvePeakMembw(topology, options, env); }

  TestTree tree;
  std::unique_ptr<Filesystem> fs;
  FakeMeter meter;
  FakeClock clock{absl::FromUnixSeconds(1'796'000'000)};
  Topology topology = TwoNodes();
  PeakMembwOptions options;
  PeakMembwEnvironment env;
};

TEST(PeakMembwTest, OverrideWinsPerNodeAndTheRestIsMeasured) {
  Host host;
  host.options.override_peak = *ParsePeakOverride("1=180G");
  PeakMembwReport r = host.Resolve();
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[1].source, "override");
  EXPECT_EQ(r.nodes[1].bytes_per_second, 180'000'000'000ull);
  EXPECT_EQ(r.nodes[0].source, "measured");
  EXPECT_EQ(r.nodes[0].bytes_per_second, 100'000'000'000ull);
  EXPECT_THAT(r.nodes[0].detail, HasSubstr("STREAM triad: 2 thread(s) on CPUs 0-1"));
  EXPECT_TRUE(r.calibrated);
  ASSERT_EQ(host.meter.requests.size(), 1u);  // node 1 is not disturbed
  EXPECT_EQ(host.meter.requests[0].numa_node, 0u);
  // 12 x the node's 32 MiB of L3 (each array 4x the cache), within the defaults.
  EXPECT_EQ(host.meter.requests[0].working_set_bytes, 384ull << 20);
  EXPECT_EQ(host.meter.requests[0].budget, absl::Seconds(2));

  Host all;
  all.options.override_peak = *ParsePeakOverride("200G");
  PeakMembwReport every = all.Resolve();
  EXPECT_TRUE(every.calibrated);
  EXPECT_EQ(every.nodes[0].bytes_per_second, 200'000'000'000ull);
  EXPECT_TRUE(all.meter.requests.empty());
  EXPECT_FALSE(all.tree.Path(kCache).empty());
  EXPECT_FALSE(all.fs->Exists(kCache));  // nothing measured, nothing cached
}

TEST(PeakMembwTest, MeasuresOncePerBootAndReusesTheCache) {
  Host host;
  host.options.max_working_set_bytes = 256ull << 20;
  PeakMembwReport first = host.Resolve();
  EXPECT_TRUE(first.measured_now);
  EXPECT_TRUE(first.calibrated) << first.reason;
  EXPECT_EQ(first.nodes[1].bytes_per_second, 101'000'000'000ull);
  EXPECT_THAT(first.nodes[0].detail, HasSubstr("only 8.0x the node's L3"));
  ASSERT_EQ(host.meter.requests.size(), 2u);
  EXPECT_EQ(host.meter.requests[0].working_set_bytes, 256ull << 20);

  absl::StatusOr<CalibrationCache> cache = ParseCalibrationCache(*host.fs->ReadFile(kCache));
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_TRUE(cache->finished);
  EXPECT_EQ(cache->boot_id, kBoot);
  EXPECT_EQ(cache->cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(cache->started, host.clock.Now());

  // A restart on the same boot: no second measurement.
  PeakMembwReport again = host.Resolve();
  EXPECT_FALSE(again.measured_now);
  EXPECT_EQ(host.meter.requests.size(), 2u);
  EXPECT_EQ(again.nodes[0].source, "measured");
  EXPECT_EQ(again.nodes[0].bytes_per_second, 100'000'000'000ull);
  EXPECT_THAT(again.nodes[0].detail, HasSubstr("cached at 2026-"));

  // After a reboot (new boot id) it measures again.
  host.env.boot_id = "another-boot";
  host.Resolve();
  EXPECT_EQ(host.meter.requests.size(), 4u);
}

TEST(PeakMembwTest, ACachedFileFromThisBootIsUsedAsIs) {
  Host host;
  host.tree.Write(kCache, ReadText(Testdata("peak-membw/finished.json")));
  PeakMembwReport r = host.Resolve();
  EXPECT_TRUE(host.meter.requests.empty());
  EXPECT_EQ(r.nodes[0].source, "measured");
  EXPECT_EQ(r.nodes[0].bytes_per_second, 231'500'000'000ull);
  // Node 1 failed on that attempt: not retried this boot; no SMBIOS here.
  EXPECT_EQ(r.nodes[1].source, "default");
  EXPECT_FALSE(r.nodes[1].bytes_per_second);
  EXPECT_THAT(r.nodes[1].detail, HasSubstr("cannot pin a thread to CPU 56"));
  EXPECT_THAT(r.nodes[1].detail, HasSubstr("delete /var/lib/neighborly/peak-membw.json to retry"));
  EXPECT_FALSE(r.calibrated);
  EXPECT_THAT(r.reason, HasSubstr("node 1: no figure"));

  // Another CPU model (the disk moved to another machine): measured afresh.
  Host moved;
  moved.tree.Write("/proc/cpuinfo", "model name\t: AMD EPYC 9654 96-Core Processor\n");
  moved.tree.Write(kCache, ReadText(Testdata("peak-membw/finished.json")));
  moved.Resolve();
  EXPECT_EQ(moved.meter.requests.size(), 2u);
}

TEST(PeakMembwTest, CorruptCacheFilesAreIgnoredAndReplaced) {
  for (const char* file : {"truncated.json", "future-version.json", "bad-rate.json"}) {
    SCOPED_TRACE(file);
    Host host;
    host.tree.Write(kCache, ReadText(Testdata(std::string("peak-membw/") + file)));
    EXPECT_FALSE(ParseCalibrationCache(*host.fs->ReadFile(kCache)).ok());
    PeakMembwReport r = host.Resolve();
    EXPECT_TRUE(r.measured_now);
    EXPECT_EQ(r.nodes[0].source, "measured");
    EXPECT_TRUE(ParseCalibrationCache(*host.fs->ReadFile(kCache)).ok());
  }
}

TEST(PeakMembwTest, AnUnfinishedMeasurementIsNotRetriedAndSmbiosStepsIn) {
  Host host("intel-2s-ddr5");
  host.tree.Write(kCache, ReadText(Testdata("peak-membw/running.json")));
  PeakMembwReport r = host.Resolve();
  EXPECT_TRUE(host.meter.requests.empty());
  ASSERT_EQ(r.nodes.size(), 2u);
  for (const NodePeak& node : r.nodes) {
    EXPECT_EQ(node.source, "smbios");
    // 614.4 GB/s theoretical, 80 % sustainable, half on each node (equal memory).
    EXPECT_EQ(node.bytes_per_second, 245'760'000'000ull);
    EXPECT_THAT(node.detail, HasSubstr("16 DDR5 module(s) on 16 channel(s)"));
    EXPECT_THAT(node.detail, HasSubstr("50% of it on this node by memory"));
  }
  EXPECT_FALSE(r.calibrated);
  EXPECT_THAT(r.reason, HasSubstr("never finished"));
  EXPECT_THAT(r.reason, HasSubstr("nodes 0,1: not measured"));  // one reason for both
  EXPECT_THAT(r.reason, HasSubstr("SMBIOS memory configuration used"));
}

TEST(PeakMembwTest, AMarkerIsWrittenBeforeMeasuring) {
  Host host;
  std::string seen;
  struct PeekingMeter final : BandwidthMeter {
    absl::StatusOr<TriadResult> Measure(const TriadRequest&) override {
      *seen = fs->ReadFile(kCache).value_or("");
      return absl::InternalError("stop here");
    }
    std::string* seen;
    Filesystem* fs;
  } peeking;
  peeking.seen = &seen;
  peeking.fs = host.fs.get();
  host.env.meter = &peeking;
  PeakMembwReport r = host.Resolve();
  EXPECT_THAT(seen, HasSubstr("\"state\": \"running\""));
  EXPECT_EQ(r.nodes[0].source, "default");
  EXPECT_THAT(r.nodes[0].detail, HasSubstr("measurement failed: stop here"));
}

TEST(PeakMembwTest, DisturbedMeasurementsGiveNoFigure) {
  Host host;
  host.meter.disturbed = true;
  PeakMembwReport r = host.Resolve();
  EXPECT_EQ(r.nodes[0].source, "default");
  EXPECT_THAT(r.nodes[0].detail, HasSubstr("no undisturbed pass"));
  EXPECT_THAT(r.nodes[0].detail, HasSubstr("only 20% of the time"));
  EXPECT_THAT(r.reason, HasSubstr("the extender's default applies"));
  ASSERT_EQ(host.meter.requests.size(), 2u);

  // Busy CPUs pass: the next start measures again (and then keeps the figure).
  host.clock.Advance(absl::Minutes(5));
  host.meter.disturbed = false;
  PeakMembwReport later = host.Resolve();
  EXPECT_EQ(host.meter.requests.size(), 4u);
  EXPECT_EQ(later.nodes[0].source, "measured");
  host.Resolve();
  EXPECT_EQ(host.meter.requests.size(), 4u);
  absl::StatusOr<CalibrationCache> cache = ParseCalibrationCache(*host.fs->ReadFile(kCache));
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ(cache->nodes[0].measured_at, host.clock.Now());
  EXPECT_FALSE(cache->nodes[0].retry);

  // In cached mode (the agent beside an init container) a retryable failure is
  // reported as it is.
  Host agent;
  agent.meter.disturbed = true;
  agent.Resolve();
  agent.options.measure = MeasureMode::kCached;
  PeakMembwReport reported = agent.Resolve();
  EXPECT_EQ(agent.meter.requests.size(), 2u);
  EXPECT_THAT(reported.nodes[0].detail, HasSubstr("measured again at the next calibration"));
}

TEST(PeakMembwTest, OnlyLoadDependentFailuresAreRetried) {
  Host late;
  late.meter.error = absl::DeadlineExceededError("touching 384 MiB took longer than the budget");
  late.Resolve();
  late.Resolve();
  EXPECT_EQ(late.meter.requests.size(), 4u);  // out of time: measured again

  Host broken;
  broken.meter.error = absl::FailedPreconditionError("cannot pin a thread to CPU 1");
  broken.Resolve();
  PeakMembwReport again = broken.Resolve();
  EXPECT_EQ(broken.meter.requests.size(), 2u);  // would fail again: kept for this boot
  EXPECT_THAT(again.nodes[0].detail, HasSubstr("cannot pin a thread to CPU 1"));
  EXPECT_THAT(again.nodes[0].detail, HasSubstr("to retry"));
}

TEST(PeakMembwTest, ModesOffAndCached) {
  Host off("amd-1s-ddr4-2dpc");
  off.options.measure = MeasureMode::kOff;
  off.topology.numa_nodes[1].memory_bytes = 192ull << 30;  // 25 % of the memory on node 0
  PeakMembwReport r = off.Resolve();
  EXPECT_TRUE(off.meter.requests.empty());
  EXPECT_EQ(r.nodes[0].source, "smbios");
  EXPECT_EQ(r.nodes[0].bytes_per_second,
            static_cast<uint64_t>(std::llround(8 * 2933e6 * 8 * 0.8 * 0.25)));
  EXPECT_THAT(r.reason, HasSubstr("measurement disabled (--peak-membw-measure off)"));

  Host cached;
  cached.options.measure = MeasureMode::kCached;
  PeakMembwReport c = cached.Resolve();
  EXPECT_TRUE(cached.meter.requests.empty());
  EXPECT_EQ(c.nodes[0].source, "default");
  EXPECT_THAT(c.nodes[0].detail, HasSubstr("init container"));
  EXPECT_THAT(c.nodes[0].detail, HasSubstr("no SMBIOS tables"));

  cached.tree.Write(kCache, ReadText(Testdata("peak-membw/finished.json")));
  EXPECT_EQ(cached.Resolve().nodes[0].source, "measured");
}

TEST(PeakMembwTest, NodesWithoutCpusOrWithoutABootId) {
  Host host;
  host.topology.numa_nodes[1].cpus.clear();  // a memory-only (CXL) node
  PeakMembwReport r = host.Resolve();
  EXPECT_EQ(r.nodes[1].source, "default");
  EXPECT_THAT(r.nodes[1].detail, HasSubstr("no CPUs to measure from"));

  Host unknown;
  unknown.env.boot_id.clear();
  unknown.Resolve();
  EXPECT_FALSE(unknown.fs->Exists(kCache));  // no key, no cache
  EXPECT_EQ(unknown.meter.requests.size(), 2u);
}

TEST(PeakMembwTest, ParsesOverrides) {
  absl::StatusOr<PeakOverride> mixed = ParsePeakOverride("150G, 1=180G,3=190Gi");
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->all_nodes_bytes_per_second, 150'000'000'000ull);
  EXPECT_EQ(mixed->by_node_bytes_per_second.at(1), 180'000'000'000ull);
  EXPECT_EQ(mixed->by_node_bytes_per_second.at(3), 190ull << 30);
  for (const auto& [bad, why] : std::vector<std::pair<const char*, const char*>>{
           {"", "empty entry"},
           {"fast", "\"fast\" is not a positive bandwidth"},
           {"0", "not a positive bandwidth"},
           {"x=1G", "not a NUMA node id"},
           {"1=1G,1=2G", "given twice"},
           {"1G,2G", "two figures"}}) {
    absl::StatusOr<PeakOverride> r = ParsePeakOverride(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << bad;
  }
  EXPECT_EQ(*ParseMeasureMode("cached"), MeasureMode::kCached);
  EXPECT_THAT(ParseMeasureMode("yes").status().message(), HasSubstr("auto, cached or off"));
}

TEST(PeakMembwTest, CacheRoundTripAndCpuModels) {
  absl::StatusOr<CalibrationCache> c =
      ParseCalibrationCache(ReadText(Testdata("peak-membw/finished.json")));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->nodes.size(), 2u);
  EXPECT_EQ(c->nodes[0].bytes_per_second, 231.5e9);
  EXPECT_FALSE(c->nodes[1].bytes_per_second);
  absl::StatusOr<CalibrationCache> back = ParseCalibrationCache(FormatCalibrationCache(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->started, c->started);
  EXPECT_EQ(back->nodes[1].detail, c->nodes[1].detail);
  EXPECT_THAT(ParseCalibrationCache("[1]").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseCalibrationCache(ReadText(Testdata("peak-membw/future-version.json")))
                  .status()
                  .message(),
              HasSubstr("version 2"));

  EXPECT_EQ(CpuModelFromCpuinfo(kCpuinfo), "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(CpuModelFromCpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n"),
            "implementer 0x41 part 0xd40");
  EXPECT_EQ(CpuModelFromCpuinfo(""), "unknown");
}

}  // namespace
}  // namespace neighborly::agent
