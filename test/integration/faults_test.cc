// Fault tests on loopback with the real binaries (docs/faults.md): extender
// restart while agents stream, kill -9 while the state file is written, agent
// death, slow and stalled HTTP clients, and the SIGTERM drain.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/support/extender_process.h"
#include "test/support/subprocess.h"

namespace neighborly {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::AnyOf;
using testing::BinaryPath;
using ::testing::Eq;
using ::testing::HasSubstr;
using testing::Subprocess;

const char kScenario[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform.yaml";
const char kIncoming[] = NEIGHBORLY_SOURCE_DIR "/deploy/examples/content-platform-incoming.json";
constexpr size_t kScenarioNodes = 6;

int PortOf(const std::string& host_port) {
  return std::atoi(host_port.substr(host_port.rfind(':') + 1).c_str());
}

json LoadIncoming(std::string_view name_prefix) {
  std::ifstream in(kIncoming);
  const json all = json::parse(in);
  for (const json& pod : all["pods"]) {
    if (pod["metadata"]["name"].get<std::string>().starts_with(name_prefix)) return pod;
  }
  ADD_FAILURE() << "no incoming pod " << name_prefix;
  return json::object();
}

// A small pod with its own uid; `annotations` may declare a class and hints.
json MakePod(const std::string& uid, const json& annotations) {
  return {
      {"metadata",
       {{"name", "fault-" + uid},
        {"namespace", "faults"},
        {"uid", uid},
        {"annotations", annotations}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "c"},
                       {"resources", {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}}}}}})}}},
      {"status", {{"qosClass", "Burstable"}}}};
}

std::string RequestBody(const json& pod, const std::vector<std::string>& names) {
  return json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
}

// A fresh directory under the build tree, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::path(NEIGHBORLY_BINARY_DIR) / "faults-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (fs::path(path_) / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// --- raw TCP, for clients that misbehave on purpose ---

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until the peer closes or `timeout` passes; returns what arrived and
// whether the peer closed (EOF or reset) within the timeout.
std::pair<std::string, bool> ReadUntilClosed(int fd, absl::Duration timeout) {
  std::string out;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (::poll(&p, 1, std::max(ms, 1)) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return {out, true};
    out.append(buf, static_cast<size_t>(n));
  }
  return {out, false};
}

// Reads one HTTP response with a Content-Length body (what the extender sends).
std::string ReadOneResponse(int fd, absl::Duration timeout) {
  std::string out;
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const size_t end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      const size_t at = out.find("Content-Length: ");
      if (at != std::string::npos && at < end &&
          out.size() >= end + 4 + std::stoul(out.substr(at + 16))) {
        return out;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int StatusOf(const std::string& response) {
  // "HTTP/1.1 408 Request Timeout"
  if (!response.starts_with("HTTP/1.")) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

// --- the binaries ---

class FaultsTest : public ::testing::Test {
 protected:
  // Starts the extender with `config` (may be empty) on port 0 for HTTP and
  // `grpc` (default: port 0) for telemetry.
  void StartExtender(const std::string& config, const std::string& grpc = "127.0.0.1:0") {
    std::vector<std::string> extra;
    if (!config.empty()) extra = {"--config", config};
    absl::StatusOr<testing::RunningExtender> e = testing::StartExtender(grpc, extra);
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = std::move(e->process);
    addresses_ = e->addresses;
    client_ = std::make_unique<httplib::Client>(absl::StrCat("http://", addresses_.http));
    client_->set_read_timeout(10);
  }

  void StartFleet() {
    auto p = Subprocess::Start({BinaryPath("node-agent/neighborly-agent"), "--simulate", kScenario,
                                "--extender", addresses_.grpc, "--interval", "1s",
                                "--insecure-plaintext"});
    ASSERT_TRUE(p.ok()) << p.status();
    agent_ = std::move(*p);
    ASSERT_TRUE(WaitFor([&] { return Nodes().size() == kScenarioNodes; }, absl::Seconds(30)))
        << "fleet did not appear in /v1/nodes\n"
        << agent_->Stderr() << extender_->Stderr();
  }

  // Polls `condition` every `every` until it holds or `timeout` passes.
  template <typename F>
  static bool WaitFor(F condition, absl::Duration timeout,
                      absl::Duration every = absl::Milliseconds(50)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (condition()) return true;
      std::this_thread::sleep_for(absl::ToChronoMicroseconds(every));
    }
    return condition();
  }

  json Nodes() {
    httplib::Result r = client_->Get("/v1/nodes");
    if (!r || r->status != 200) return json::array();
    return json::parse(r->body);
  }

  std::vector<std::string> AllNames() {
    std::vector<std::string> names;
    for (const json& n : Nodes()) names.push_back(n["name"].get<std::string>());
    std::sort(names.begin(), names.end());
    return names;
  }

  json Call(const std::string& verb, const json& pod, const std::vector<std::string>& names) {
    httplib::Result r = client_->Post("/" + verb, RequestBody(pod, names), "application/json");
    EXPECT_TRUE(r) << verb;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }

  // The newest decision recorded for `uid`.
  json LatestDecision(const std::string& uid) {
    httplib::Result r = client_->Get(absl::StrCat("/v1/decisions?pod=", uid, "&limit=1"));
    if (!r || r->status != 200) return json::object();
    const json all = json::parse(r->body);
    return all.empty() ? json::object() : all[0];
  }

  std::unique_ptr<Subprocess> extender_;
  std::unique_ptr<Subprocess> agent_;
  testing::ExtenderAddresses addresses_;
  std::unique_ptr<httplib::Client> client_;
};

// The uids in a state file, or nullopt when it is not a valid version-1 file.
std::optional<std::set<std::string>> StateUids(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("version", 0) != 1 ||
      !doc.contains("pods") || !doc["pods"].is_array()) {
    return std::nullopt;
  }
  std::set<std::string> uids;
  for (const json& p : doc["pods"]) {
    if (!p.is_object() || !p.contains("uid") || !p["uid"].is_string()) return std::nullopt;
    uids.insert(p["uid"].get<std::string>());
  }
  return uids;
}

std::vector<std::string> TempFilesOf(const std::string& state_file) {
  std::vector<std::string> out;
  const std::string prefix = fs::path(state_file).filename().string() + ".tmp.";
  std::error_code ec;
  for (const fs::directory_entry& e :
       fs::directory_iterator(fs::path(state_file).parent_path(), ec)) {
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path().string());
  }
  return out;
}

// 1. The extender dies (kill -9) while agents stream; a new one on the same
// gRPC address sees every node fresh again within seconds (the agents
// reconnect on their own) and still knows the classes it had learned.
TEST_F(FaultsTest, ExtenderRestartWhileAgentsStream) {
  TempDir dir;
  const std::string state = (fs::path(dir.path()) / "state.json").string();
  const std::string config =
      dir.Write("extender.yaml",
                absl::StrCat("state:\n  file: ", state,
                             "\n  saveInterval: 1s\n  learnFromUnauthenticatedScheduler: true\n"));
  StartExtender(config);
  StartFleet();
  const std::vector<std::string> names = AllNames();

  // A pod declared latency-critical with a hint, once; and a control pod never
  // seen before, which (without learned state) is standard by default.
  const std::string learned_uid = "fault-restart-learned";
  Call("filter",
       MakePod(learned_uid,
               {{"neighborly.io/class", "latency-critical"}, {"neighborly.io/llc-bytes", "12Mi"}}),
       names);
  ASSERT_TRUE(WaitFor(
      [&] {
        std::optional<std::set<std::string>> uids = StateUids(state);
        return uids && uids->count(learned_uid) == 1;
      },
      absl::Seconds(15)))
      << "the periodic save never wrote the learned pod\n"
      << extender_->Stderr();

  const std::string grpc = addresses_.grpc;
  extender_->Signal(SIGKILL);
  ASSERT_TRUE(extender_->Wait(absl::Seconds(10)).has_value());
  const absl::Time restarted = absl::Now();
  StartExtender(config, grpc);

  // Every node fresh again: confidence 1 and a young report, without touching the agent.
  json last;
  const bool fresh = WaitFor(
      [&] {
        last = Nodes();
        if (last.size() != kScenarioNodes) return false;
        for (const json& n : last) {
          if (!n["telemetryAgeSeconds"].is_number() || n["confidence"] != 1.0) return false;
        }
        return true;
      },
      absl::Seconds(20));
  EXPECT_TRUE(fresh) << last.dump() << agent_->Stderr();
  std::printf("nodes fresh again %.2f s after the restart\n",
              absl::ToDoubleSeconds(absl::Now() - restarted));

  // Learned state survived: the same uid without its annotation is still
  // latency-critical ("remembered"); a never-seen uid is standard ("default").
  Call("filter", MakePod(learned_uid, json::object()), names);
  const json remembered = LatestDecision(learned_uid);
  EXPECT_EQ(remembered.value("contentionClass", ""), "latency-critical") << remembered.dump();
  EXPECT_EQ(remembered.value("classSource", ""), "remembered") << remembered.dump();
  Call("filter", MakePod("fault-restart-never-seen", json::object()), names);
  const json control = LatestDecision("fault-restart-never-seen");
  EXPECT_EQ(control.value("contentionClass", ""), "standard") << control.dump();

  EXPECT_EQ(agent_->Terminate(), 0) << agent_->Stderr();
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

// 1b. kill -9 at random moments, many times, while the state file is being
// rewritten (a large file, saved every second): every restart loads a valid
// file holding at least what the previous one held, never a torn one, and
// temporaries left by killed writers are cleaned up.
TEST_F(FaultsTest, KillNineWhileSavingNeverCorruptsState) {
  TempDir dir;
  const std::string state = (fs::path(dir.path()) / "state.json").string();
  // 60,000 remembered pods (~7 MB): each save takes long enough to be hit.
  {
    json pods = json::array();
    for (int i = 0; i < 60'000; ++i) {
      pods.push_back({{"uid", absl::StrFormat("seed-%06d-8f2c-4e1a-9b7d-3c5e6f708192", i)},
                      {"class", i % 3 == 0 ? "batch" : "latency-critical"},
                      {"source", "annotation"},
                      {"last_seen_unix_ns", int64_t{1'700'000'000'000'000'000} + i},
                      {"llc_bytes", 1 << 20}});
    }
    std::ofstream(state) << json{{"version", 1}, {"pods", pods}}.dump() << "\n";
  }
  const std::string config =
      dir.Write("extender.yaml",
                absl::StrCat("state:\n  file: ", state,
                             "\n  saveInterval: 1s\n  learnFromUnauthenticatedScheduler: true\n"));
  std::optional<std::set<std::string>> previous = StateUids(state);
  ASSERT_TRUE(previous.has_value());

  std::mt19937 random(20261129);
  absl::Duration write_time = absl::Milliseconds(50);  // refined from what we observe
  int killed_mid_write = 0;
  constexpr int kRounds = 16;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    StartExtender(config);
    ASSERT_NE(extender_, nullptr);
    // Every earlier killed writer's temporary is gone once the state is loaded.
    for (const std::string& tmp : TempFilesOf(state)) {
      EXPECT_THAT(tmp, HasSubstr(absl::StrCat(".tmp.", extender_->pid())))
          << "temporary of a killed writer left behind";
    }
    const std::string uid = absl::StrCat("round-", round);
    Call("filter", MakePod(uid, {{"neighborly.io/class", "batch"}}), {"node-1"});

    const std::string tmp = absl::StrCat(state, ".tmp.", extender_->pid());
    if (round % 2 == 0) {
      // Aim inside a write: wait until the temporary exists, then kill at a
      // random point of the time a write has been seen to take.
      const absl::Duration poll = absl::Microseconds(200);
      ASSERT_TRUE(WaitFor([&] { return fs::exists(tmp); }, absl::Seconds(10), poll));
      if (round == 0) {
        // Calibrate: watch one complete write.
        const absl::Time appeared = absl::Now();
        ASSERT_TRUE(WaitFor([&] { return !fs::exists(tmp); }, absl::Seconds(10), poll));
        write_time = std::max(absl::Milliseconds(1), absl::Now() - appeared);
        ASSERT_TRUE(WaitFor([&] { return fs::exists(tmp); }, absl::Seconds(10), poll));
      }
      // Within the first half of it: on a loaded machine the calibrated write
      // can take several times what later ones do, and aiming past their end
      // left every aimed kill outside a write (seen once in a parallel run).
      std::uniform_int_distribution<int64_t> us(0, absl::ToInt64Microseconds(write_time) / 2);
      std::this_thread::sleep_for(std::chrono::microseconds(us(random)));
    } else {
      // Anywhere: before, between or inside saves.
      std::uniform_int_distribution<int> ms(0, 2500);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms(random)));
    }
    extender_->Signal(SIGKILL);
    ASSERT_TRUE(extender_->Wait(absl::Seconds(10)).has_value());
    if (fs::exists(tmp)) ++killed_mid_write;

    std::optional<std::set<std::string>> now = StateUids(state);
    ASSERT_TRUE(now.has_value()) << "state file corrupt after kill -9";
    EXPECT_TRUE(std::includes(now->begin(), now->end(), previous->begin(), previous->end()))
        << "a restart lost learned pods: " << previous->size() << " -> " << now->size();
    previous = now;
  }
  std::printf("%d of %d kills landed inside a write (write time ~%s)\n", killed_mid_write, kRounds,
              absl::FormatDuration(write_time).c_str());
  // Without a kill inside a write this test would prove nothing.
  EXPECT_GE(killed_mid_write, 1);

  // The final file loads and still classifies a pod learned before the kills.
  StartExtender(config);
  EXPECT_TRUE(TempFilesOf(state).empty() ||
              (TempFilesOf(state).size() == 1 &&
               TempFilesOf(state)[0] == absl::StrCat(state, ".tmp.", extender_->pid())));
  Call("filter", MakePod("seed-000000-8f2c-4e1a-9b7d-3c5e6f708192", json::object()), {"node-1"});
  const json d = LatestDecision("seed-000000-8f2c-4e1a-9b7d-3c5e6f708192");
  EXPECT_EQ(d.value("classSource", ""), "remembered") << d.dump();
  EXPECT_EQ(d.value("contentionClass", ""), "batch") << d.dump();
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

// 2. The agent dies: the node's confidence stays 1 for three report intervals,
// falls linearly to 0 at model.maxAge, and then the node is neutral (score 5)
// and passes a filter that rejected it while its telemetry was fresh.
TEST_F(FaultsTest, AgentDeathFadesToBlindAndOnlyIsolationOutlivesTheLoad) {
  TempDir dir;
  constexpr double kMaxAgeSeconds = 6;
  constexpr double kFreshSeconds = 3;  // freshIntervals 3 x the agent's 1 s window
  const std::string config =
      dir.Write("extender.yaml", "model:\n  maxAge: 6s\n  residentsMaxAge: 12s\n");
  StartExtender(config);
  StartFleet();
  const std::vector<std::string> names = AllNames();

  const json article = LoadIncoming("article-service");
  const json fresh_filter = Call("filter", article, names);
  ASSERT_FALSE(fresh_filter["FailedNodes"].empty())
      << "the scenario must reject some node while fresh, or this test proves nothing";
  const std::string victim = fresh_filter["FailedNodes"].begin().key();

  agent_->Signal(SIGKILL);
  ASSERT_TRUE(agent_->Wait(absl::Seconds(10)).has_value());

  // Watch the victim fade. Each sample's age and confidence come from the same
  // instant, so the relation between them is exact up to rounding.
  double last_confidence = 2;
  bool saw_graded = false;
  json sample;
  const bool neutral = WaitFor(
      [&] {
        for (const json& n : Nodes()) {
          if (n["name"] != victim) continue;
          sample = n;
          const double age = n["telemetryAgeSeconds"].get<double>();
          const double confidence = n["confidence"].get<double>();
          EXPECT_LE(confidence, last_confidence + 1e-9) << "confidence rose: " << n.dump();
          last_confidence = confidence;
          if (age < kFreshSeconds - 0.05) {
            EXPECT_EQ(confidence, 1.0) << n.dump();
          } else if (age > kMaxAgeSeconds + 0.05) {
            EXPECT_EQ(confidence, 0.0) << n.dump();
          } else if (age > kFreshSeconds + 0.05 && age < kMaxAgeSeconds - 0.05) {
            const double expected = (kMaxAgeSeconds - age) / (kMaxAgeSeconds - kFreshSeconds);
            EXPECT_NEAR(confidence, expected, 0.05) << n.dump();
            if (confidence > 0 && confidence < 1) saw_graded = true;
          }
          return confidence == 0.0;
        }
        ADD_FAILURE() << victim << " disappeared from /v1/nodes";
        return true;
      },
      absl::Seconds(30));
  ASSERT_TRUE(neutral) << sample.dump();
  EXPECT_TRUE(saw_graded) << "confidence flipped instead of fading";
  // The fleet's nodes reported at different instants of the agent's window:
  // the others reach confidence 0 up to a window later than the victim (on a
  // loaded machine, later still). The filter below needs all of them stale.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const json& n : Nodes()) {
          if (n["confidence"].get<double>() > 0) return false;
        }
        return true;
      },
      absl::Seconds(10)))
      << "a node stayed fresh after its agent died";

  // Load-based filters (bandwidth, NUMA admission) fail open at once; the
  // residents a node last reported keep isolation until residentsMaxAge.
  const json stale_filter = Call("filter", article, names);
  EXPECT_LT(stale_filter["FailedNodes"].size(), fresh_filter["FailedNodes"].size())
      << stale_filter.dump();
  for (const auto& [node, reason] : stale_filter["FailedNodes"].items()) {
    EXPECT_THAT(reason.get<std::string>(), HasSubstr("isolation")) << node;
  }
  json open_filter;
  ASSERT_TRUE(WaitFor(
      [&] {
        open_filter = Call("filter", article, names);
        return open_filter["FailedNodes"].empty();
      },
      absl::Seconds(30)))
      << open_filter.dump();
  EXPECT_EQ(open_filter["NodeNames"], json(names));
  // A latency-critical pod scores every blind node below neutral.
  const json scores = Call("prioritize", article, names);
  ASSERT_EQ(scores.size(), names.size());
  for (const json& s : scores) EXPECT_EQ(s["Score"], 3) << s.dump();
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

// 3. Slow or stalled clients get a timely error from the extender's own
// deadlines and never keep other requests from being answered.
// Nice value of every thread of process `pid` (field 19 of /proc/PID/task/TID/stat).
std::map<pid_t, int> ThreadNice(pid_t pid) {
  std::map<pid_t, int> out;
  for (const auto& task : fs::directory_iterator(absl::StrCat("/proc/", pid, "/task"))) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');  // the command name may hold spaces
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
    // fields[0] is field 3 (state); nice is field 19.
    if (fields.size() > 16) out[std::stoi(task.path().filename())] = std::stoi(fields[16]);
  }
  return out;
}

// 3b. Ingest never competes with kube-scheduler's requests on equal terms: the
// threads that run agents' streams lower their own priority, the HTTP workers
// keep theirs (docs/performance.md, "Load and soak").
TEST_F(FaultsTest, IngestThreadsYieldTheCpuToTheSchedulingPath) {
  StartExtender("");
  const std::map<pid_t, int> before = ThreadNice(extender_->pid());
  const int base = before.at(extender_->pid());
  if (base > 9) GTEST_SKIP() << "the test runs at nice " << base << ": no room to lower ingest";
  StartFleet();  // six nodes streaming over gRPC
  Call("filter", MakePod("fault-nice", json::object()), {"node-1"});
  const std::map<pid_t, int> after = ThreadNice(extender_->pid());
  int lowered = 0;
  for (const auto& [tid, nice] : after) {
    if (nice == base + 10) ++lowered;
  }
  EXPECT_GE(lowered, 1) << "no ingest thread runs at nice 10";
  EXPECT_EQ(after.at(extender_->pid()), base) << "the main thread keeps its priority";
  // ... and under SCHED_IDLE (grpc.ingestScheduling: idle, the default): a
  // waking /filter worker preempts them at once.
  int idle = 0;
  for (const auto& [tid, nice] : after) {
    idle += ::sched_getscheduler(tid) == SCHED_IDLE ? 1 : 0;
  }
  EXPECT_EQ(idle, lowered) << "the ingest threads, and only they, run SCHED_IDLE";
  EXPECT_NE(::sched_getscheduler(extender_->pid()), SCHED_IDLE);
  // The HTTP workers (the threads that existed before any stream) that are not
  // gRPC's keep the base priority: at least one thread is still at `base`.
  int unchanged = 0;
  for (const auto& [tid, nice] : after) unchanged += nice == base ? 1 : 0;
  EXPECT_GE(unchanged, 2);
  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

TEST_F(FaultsTest, StalledClientsGetDeadlinesAndOthersProceed) {
  TempDir dir;
  const std::string config = dir.Write(
      "extender.yaml", "http:\n  readTimeout: 3s\n  requestTimeout: 2s\n  keepAliveTimeout: 1s\n");
  StartExtender(config);
  const int port = PortOf(addresses_.http);
  const std::string body = RequestBody(MakePod("fault-slow", json::object()), {"node-1"});
  const std::string headers = absl::StrCat(
      "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ",
      body.size(), "\r\n\r\n");

  // (a) Headers, then silence in the middle of the body.
  const int stalled_body = Connect(port);
  ASSERT_GE(stalled_body, 0);
  ASSERT_TRUE(SendAll(stalled_body, headers + body.substr(0, 10)));
  // (b) Half a header block, then silence.
  const int stalled_headers = Connect(port);
  ASSERT_GE(stalled_headers, 0);
  ASSERT_TRUE(SendAll(stalled_headers, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Le"));

  // Meanwhile kube-scheduler's requests are answered.
  for (int i = 0; i < 20; ++i) {
    const json reply = Call("filter", MakePod("fault-normal", json::object()), {"node-1"});
    EXPECT_EQ(reply["NodeNames"], json({"node-1"}));
  }

  // The stalled ones are ended by the server (the 2 s request deadline or the
  // 3 s read timeout), long before the client would give up (20 s).
  auto [body_reply, body_closed] = ReadUntilClosed(stalled_body, absl::Seconds(20));
  EXPECT_TRUE(body_closed);
  EXPECT_THAT(StatusOf(body_reply), AnyOf(Eq(400), Eq(408))) << body_reply;
  EXPECT_THAT(body_reply, HasSubstr("Connection: close"));
  ::close(stalled_body);
  auto [header_reply, header_closed] = ReadUntilClosed(stalled_headers, absl::Seconds(20));
  EXPECT_TRUE(header_closed) << header_reply;
  ::close(stalled_headers);

  // (c) A body trickled one byte every 300 ms never trips the 3 s read
  // timeout (10x the gap, so a slow sanitized run cannot trip it either), but the 2 s request
  // deadline ends it: 408 long before the body (hundreds of bytes, minutes at this pace) is
  // complete.
  const int trickle = Connect(port);
  ASSERT_GE(trickle, 0);
  ASSERT_TRUE(SendAll(trickle, headers));
  std::string trickle_reply;
  size_t sent = 0;
  for (; sent < body.size() && trickle_reply.empty(); ++sent) {
    if (!SendAll(trickle, body.substr(sent, 1))) break;
    pollfd p{trickle, POLLIN, 0};
    if (::poll(&p, 1, 300) > 0) trickle_reply = ReadUntilClosed(trickle, absl::Seconds(5)).first;
  }
  if (trickle_reply.empty()) trickle_reply = ReadUntilClosed(trickle, absl::Seconds(5)).first;
  ::close(trickle);
  EXPECT_EQ(StatusOf(trickle_reply), 408) << trickle_reply;
  EXPECT_THAT(trickle_reply, HasSubstr("http.requestTimeout"));
  EXPECT_LT(sent, body.size() / 2) << "the deadline did not end the trickle";

  EXPECT_EQ(extender_->Terminate(), 0) << extender_->Stderr();
}

// 4. SIGTERM with a request in flight, an idle keep-alive connection and agents
// streaming: the request is answered 200, new connections are refused, learned
// state is saved and the extender exits 0 within 5 s. (An idle keep-alive
// connection holds the drain for up to http.keepAliveTimeout: docs/faults.md.)
TEST_F(FaultsTest, SigtermDrainsInFlightRequestsAndExitsZero) {
  TempDir dir;
  const std::string state = (fs::path(dir.path()) / "state.json").string();
  // A save interval of an hour: only the SIGTERM save can write the file.
  const std::string config =
      dir.Write("extender.yaml",
                absl::StrCat("state:\n  file: ", state,
                             "\n  saveInterval: 1h\n  learnFromUnauthenticatedScheduler: true\n",
                             "http:\n  keepAliveTimeout: 2s\n"));
  StartExtender(config);
  StartFleet();
  const std::vector<std::string> names = AllNames();
  Call("filter", MakePod("fault-drain-learned", {{"neighborly.io/class", "batch"}}), names);
  ASSERT_FALSE(fs::exists(state));

  const int port = PortOf(addresses_.http);
  const std::string body = RequestBody(LoadIncoming("article-service"), names);
  const std::string headers =
      absl::StrCat("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                   "Content-Length: ", body.size(), "\r\n\r\n");
  const int in_flight = Connect(port);
  ASSERT_GE(in_flight, 0);
  // A first request on the keep-alive connection proves a worker serves it;
  // then the second request is left half-sent across the signal.
  ASSERT_TRUE(SendAll(in_flight, headers + body));
  const std::string first = ReadOneResponse(in_flight, absl::Seconds(10));
  ASSERT_EQ(StatusOf(first), 200) << first;
  // kube-scheduler's idle keep-alive connection.
  const int idle = Connect(port);
  ASSERT_GE(idle, 0);
  ASSERT_TRUE(SendAll(idle, headers + body));
  ASSERT_EQ(StatusOf(ReadOneResponse(idle, absl::Seconds(10))), 200);
  ASSERT_TRUE(SendAll(in_flight, headers + body.substr(0, 40)));

  const absl::Time term = absl::Now();
  extender_->Signal(SIGTERM);
  // New connections are refused while the old request is still open.
  EXPECT_TRUE(WaitFor(
      [&] {
        const int fd = Connect(port);
        if (fd < 0) return true;
        ::close(fd);
        return false;
      },
      absl::Seconds(3)))
      << "the listening socket stayed open after SIGTERM";
  ASSERT_TRUE(SendAll(in_flight, body.substr(40)));
  auto [reply, closed] = ReadUntilClosed(in_flight, absl::Seconds(5));
  ::close(in_flight);
  EXPECT_EQ(StatusOf(reply), 200) << reply;
  EXPECT_THAT(reply, HasSubstr("\"NodeNames\""));
  EXPECT_TRUE(closed) << "the drained connection was left open";
  EXPECT_TRUE(ReadUntilClosed(idle, absl::Seconds(5)).second) << "idle connection not closed";
  ::close(idle);

  const std::optional<int> code = extender_->Wait(absl::Seconds(5) - (absl::Now() - term));
  ASSERT_TRUE(code.has_value()) << "still running 5 s after SIGTERM\n" << extender_->Stderr();
  EXPECT_EQ(*code, 0) << extender_->Stderr();
  std::printf("exited %.2f s after SIGTERM\n", absl::ToDoubleSeconds(absl::Now() - term));
  std::optional<std::set<std::string>> uids = StateUids(state);
  ASSERT_TRUE(uids.has_value()) << "no state saved on SIGTERM";
  EXPECT_EQ(uids->count("fault-drain-learned"), 1u);
  EXPECT_EQ(agent_->Terminate(), 0) << agent_->Stderr();
}

}  // namespace
}  // namespace neighborly
