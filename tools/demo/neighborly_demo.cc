// neighborly-demo: tells the noisy-neighbour story of the reference scenario
// against a running extender that the simulated fleet is streaming to.
//
//   neighborly-demo --server http://127.0.0.1:8888
//       --scenario deploy/examples/content-platform.yaml
//       --pods deploy/examples/content-platform-incoming.json
//
// For each incoming pod it sends the requests kube-scheduler would send
// (/filter, then /prioritize on the survivors; real HTTP, real bodies) and
// prints every node's verdict, score and reason next to what the default
// scheduler would have done. scripts/demo.sh starts the processes.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cpu_list.h"
#include "nlohmann/json.hpp"
#include "node-agent/src/simulate/scenario.h"
#include "tools/demo/default_scheduler.h"

namespace neighborly::demo {
namespace {

using nlohmann::json;

struct ScenarioNode {
  NodeLoad load;                  // requests as Neighborly placed pods
  NodeLoad default_load;          // requests as the default scheduler would have placed them
  std::vector<std::string> pods;  // names, for the narrative
  std::vector<std::string> default_extra;  // demo pods the default scheduler put here
};

struct Args {
  std::string server;
  std::string scenario;
  std::string pods;
};

int Fail(const std::string& message) {
  std::cerr << "neighborly-demo: " << message << "\n";
  return 1;
}

std::string Pct(double ratio) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%3.0f%%", ratio * 100);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// The cluster as the scenario file describes it, read by the simulator's own
// parser (so the demo reads the file exactly as the fleet streams it).
absl::StatusOr<std::vector<ScenarioNode>> LoadScenario(const std::string& path) {
  absl::StatusOr<agent::Scenario> scenario = agent::LoadScenarioFile(path);
  if (!scenario.ok()) return scenario.status();
  std::vector<ScenarioNode> nodes;
  for (const telemetry::v1::NodeReport& report : scenario->nodes) {
    ScenarioNode node;
    node.load.name = report.node_name();
    for (const telemetry::v1::NumaNode& numa : report.topology().numa_nodes()) {
      absl::StatusOr<CpuSet> cpus = ParseCpuList(numa.cpus());
      if (!cpus.ok()) return cpus.status();
      node.load.allocatable_millicores += static_cast<int64_t>(cpus->size()) * 1000;
      node.load.allocatable_memory_bytes += static_cast<int64_t>(numa.memory_bytes());
    }
    for (const telemetry::v1::PodReport& pod : report.pods()) {
      node.load.requested_millicores += pod.cpu_request_millicores();
      node.load.requested_memory_bytes += static_cast<int64_t>(pod.memory_request_bytes());
      node.pods.push_back(pod.name());
    }
    node.default_load = node.load;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

int64_t Quantity(const json& q, bool milli) {
  // The demo pods use only plain numbers and "Gi"; the extender parses the rest.
  const std::string s = q.get<std::string>();
  if (s.ends_with("Gi")) return std::stoll(s) * (int64_t{1} << 30);
  if (s.ends_with("m")) return std::stoll(s) * (milli ? 1 : 0);
  return std::stoll(s) * (milli ? 1000 : 1);
}

json Get(httplib::Client& client, const std::string& path) {
  httplib::Result r = client.Get(path);
  if (!r) throw std::runtime_error("GET " + path + ": " + httplib::to_string(r.error()));
  if (r->status != 200) {
    throw std::runtime_error("GET " + path + ": HTTP " + std::to_string(r->status) + " " + r->body);
  }
  return json::parse(r->body);
}

json Post(httplib::Client& client, const std::string& path, const json& body) {
  httplib::Result r = client.Post(path, body.dump(), "application/json");
  if (!r) throw std::runtime_error("POST " + path + ": " + httplib::to_string(r.error()));
  if (r->status != 200) {
    throw std::runtime_error("POST " + path + ": HTTP " + std::to_string(r->status) + " " +
                             r->body);
  }
  return json::parse(r->body);
}

void WaitForFleet(httplib::Client& client, size_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    json nodes = Get(client, "/v1/nodes");
    if (nodes.size() >= want) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("only " + std::to_string(nodes.size()) + " of " +
                               std::to_string(want) + " nodes reported within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void PrintCluster(httplib::Client& client, const std::vector<ScenarioNode>& scenario) {
  json nodes = Get(client, "/v1/nodes");
  std::map<std::string, json> by_name;
  for (json& n : nodes) by_name[n.value("name", "")] = n;
  std::cout << "The cluster as the agents report it (one report per node per second):\n\n";
  std::cout << "  " << Pad("NODE", 8) << Pad("L3 PRESSURE/SOCKET", 20) << Pad("MEMBW/NUMA NODE", 18)
            << Pad("LC/BATCH/STD", 14) << "PODS\n";
  for (const ScenarioNode& s : scenario) {
    const json& n = by_name[s.load.name];
    std::string l3, bw;
    for (const json& d : n.value("l3Domains", json::array()))
      l3 += Pct(d.value("pressure", 0.0)) + " ";
    for (const json& d : n.value("numaNodes", json::array())) {
      bw += Pct(d.value("membwUtilisation", 0.0)) + " ";
    }
    const json classes = n.value("podsByClass", json::object());
    const std::string mix = std::to_string(classes.value("latency-critical", 0)) + "/" +
                            std::to_string(classes.value("batch", 0)) + "/" +
                            std::to_string(classes.value("standard", 0));
    std::string pods;
    for (const std::string& p : s.pods) pods += (pods.empty() ? "" : ", ") + p;
    std::cout << "  " << Pad(s.load.name, 8) << Pad(l3, 20) << Pad(bw, 18) << Pad(mix, 14) << pods
              << "\n";
  }
  std::cout << "\n";
}

void Place(httplib::Client& client, const json& pod, std::vector<ScenarioNode>& scenario,
           int step) {
  const json& meta = pod["metadata"];
  const json& resources = pod["spec"]["containers"][0]["resources"]["requests"];
  const int64_t cpu = Quantity(resources["cpu"], true);
  const int64_t mem = Quantity(resources["memory"], false);

  std::cout << step << ") kube-scheduler asks where to place "
            << meta["namespace"].get<std::string>() << "/" << meta["name"].get<std::string>()
            << "\n   (";
  const json labels = meta.value("labels", json::object());
  const json ann = meta.value("annotations", json::object());
  if (ann.contains("neighborly.io/class")) {
    std::cout << "class " << ann["neighborly.io/class"].get<std::string>();
  } else if (labels.contains("workload-type")) {
    std::cout << "label workload-type=" << labels["workload-type"].get<std::string>();
  }
  std::cout << ", " << pod["status"]["qosClass"].get<std::string>() << ", requests "
            << resources["cpu"].get<std::string>() << " cpu / "
            << resources["memory"].get<std::string>();
  if (ann.contains("neighborly.io/llc-bytes")) {
    std::cout << ", footprint " << ann["neighborly.io/llc-bytes"].get<std::string>() << "B L3, "
              << ann["neighborly.io/membw-bytes-per-second"].get<std::string>() << "B/s memory";
  }
  std::cout << ")\n\n";

  json names = json::array();
  for (const ScenarioNode& s : scenario) names.push_back(s.load.name);
  const json filter =
      Post(client, "/filter", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}});
  json survivors = filter["NodeNames"].is_null() ? json::array() : filter["NodeNames"];
  const json failed = filter["FailedNodes"].is_null() ? json::object() : filter["FailedNodes"];
  std::map<std::string, int> scores;
  if (survivors.size() >= 1) {
    const json prio =
        Post(client, "/prioritize", {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", survivors}});
    for (const json& hp : prio) scores[hp["Host"].get<std::string>()] = hp["Score"].get<int>();
  }

  // Where the pod's footprint came from (its workload's profile, hints or a prior).
  if (httplib::Result r = client.Get("/v1/decisions?limit=1&pod=" + meta["uid"].get<std::string>());
      r && r->status == 200) {
    const json records = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (records.is_array() && !records.empty() && records[0].value("prediction", "") != "") {
      std::cout << "   footprint: " << records[0]["prediction"].get<std::string>() << "\n\n";
    }
  }

  std::string neighborly_pick, default_pick;
  int best_score = -1;
  int64_t best_default = -1;
  for (const json& survivor : survivors) {
    const std::string name = survivor.get<std::string>();
    if (scores[name] > best_score) best_score = scores[name], neighborly_pick = name;
  }
  std::map<std::string, DefaultScore> defaults;
  for (const ScenarioNode& s : scenario) {
    defaults[s.load.name] = ScoreDefault(s.default_load, cpu, mem);
    if (defaults[s.load.name].fits && defaults[s.load.name].score > best_default) {
      best_default = defaults[s.load.name].score;
      default_pick = s.load.name;
    }
  }

  std::cout << "   " << Pad("NODE", 8) << Pad("NEIGHBORLY", 12) << Pad("SCORE", 7)
            << Pad("DEFAULT", 9) << "REASON / RESIDENTS\n";
  for (const ScenarioNode& s : scenario) {
    const std::string& name = s.load.name;
    const bool passed = std::find(survivors.begin(), survivors.end(), name) != survivors.end();
    std::string verdict = passed ? "pass" : "REJECTED";
    std::string score = passed ? std::to_string(scores[name]) + "/10" : "-";
    if (name == neighborly_pick) score += " *";
    std::string def = defaults[name].fits ? std::to_string(defaults[name].score) : "no fit";
    if (name == default_pick) def += " *";
    std::string why = passed ? "" : failed.value(name, std::string("(no reason given)"));
    if (why.empty()) {
      for (const std::string& p : s.pods) why += (why.empty() ? "" : ", ") + p;
    }
    std::cout << "   " << Pad(name, 8) << Pad(verdict, 12) << Pad(score, 7) << Pad(def, 9) << why
              << "\n";
  }
  std::cout << "\n   Neighborly picks " << (neighborly_pick.empty() ? "no node" : neighborly_pick)
            << "; the default scheduler would pick " << default_pick;
  for (const ScenarioNode& s : scenario) {
    if (s.load.name == default_pick && !s.default_extra.empty()) {
      std::cout << " (where it had already put";
      for (const std::string& p : s.default_extra) std::cout << " " << p;
      std::cout << ")";
    }
  }
  std::cout << "\n";
  if (!default_pick.empty() && failed.contains(default_pick)) {
    std::cout << "   Without Neighborly it lands on " << default_pick
              << ", which Neighborly refuses: " << failed[default_pick].get<std::string>() << "\n";
  }
  std::cout << "\n";

  // Each world binds the pod where its scheduler pointed; count the requests there.
  const std::string short_name = meta["labels"].value("app", meta["name"].get<std::string>());
  for (ScenarioNode& s : scenario) {
    if (s.load.name == neighborly_pick) {
      s.load.requested_millicores += cpu;
      s.load.requested_memory_bytes += mem;
      s.pods.push_back(meta["name"].get<std::string>() + " (in flight)");
    }
    if (s.load.name == default_pick) {
      s.default_load.requested_millicores += cpu;
      s.default_load.requested_memory_bytes += mem;
      s.default_extra.push_back(short_name);
    }
  }
}

// The running pods' workloads are learned window by window; waits (at most
// 20 s) until every profile the fleet has produced is confident, so that a
// replica placed next is predicted from its siblings rather than a prior.
void WaitForProfiles(httplib::Client& client) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::cout << "Waiting until the extender has learned the running workloads' profiles..."
            << std::flush;
  while (std::chrono::steady_clock::now() < deadline) {
    httplib::Result r = client.Get("/v1/workloads");
    const json list =
        r && r->status == 200 ? json::parse(r->body, nullptr, /*allow_exceptions=*/false) : json();
    bool all = list.is_array() && !list.empty();
    for (const json& w : list.is_array() ? list : json::array()) {
      all = all && w.value("confidence", 0.0) >= 1.0;
    }
    if (all) {
      std::cout << " " << list.size() << " workloads\n\n";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  std::cout << " (still learning; predictions blend profiles with priors)\n\n";
}

int Run(const Args& args) {
  absl::StatusOr<std::vector<ScenarioNode>> loaded = LoadScenario(args.scenario);
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
  std::vector<ScenarioNode>& scenario = *loaded;
  std::ifstream pods_file(args.pods);
  if (!pods_file) return Fail("cannot read " + args.pods);
  const json incoming = json::parse(pods_file);

  httplib::Client client(args.server);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  WaitForFleet(client, scenario.size());
  WaitForProfiles(client);
  PrintCluster(client, scenario);
  int step = 1;
  for (const json& pod : incoming["pods"]) Place(client, pod, scenario, step++);
  std::cout << "Scores are 0..10, higher is better; * marks each scheduler's choice. DEFAULT is\n"
               "kube-scheduler's LeastAllocated + BalancedAllocation score (0..200) from\n"
               "requests alone, in a world where it placed the earlier pods itself: it cannot\n"
               "see L3 occupancy or memory bandwidth. Neighborly books each pod it places\n"
               "(in flight) until the node's agent reports it running. The terms behind every\n"
               "score: GET /v1/decisions?pod=<uid> on the extender, or neighborlyctl explain.\n";
  return 0;
}

}  // namespace
}  // namespace neighborly::demo

int main(int argc, char** argv) {
  neighborly::demo::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) {
        std::cerr << "neighborly-demo: " << flag << " needs a value\n";
        std::exit(2);
      }
      out = argv[++i];
    };
    if (flag == "--server") {
      value(args.server);
    } else if (flag == "--scenario") {
      value(args.scenario);
    } else if (flag == "--pods") {
      value(args.pods);
    } else if (flag == "--help") {
      std::cout << "usage: neighborly-demo --server URL --scenario FILE --pods FILE\n";
      return 0;
    } else {
      std::cerr << "neighborly-demo: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (args.server.empty() || args.scenario.empty() || args.pods.empty()) {
    std::cerr << "neighborly-demo: --server, --scenario and --pods are required\n";
    return 2;
  }
  try {
    return neighborly::demo::Run(args);
  } catch (const std::exception& e) {
    std::cerr << "neighborly-demo: " << e.what() << "\n";
    return 1;
  }
}
