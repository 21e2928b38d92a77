// HTTP round trip on loopback: one keep-alive client alternating /filter and
// /prioritize with 500 candidate names (what kube-scheduler sends at 5,000
// nodes), against the real server and the real ExtenderCore. Prints p50/p99
// per verb; target p99 <= 1 ms (docs/performance.md).
//
//   build/http/bench/http_roundtrip_bench [requests, default 4000]
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/http_bench_support.h"
#include "extender/src/http/http_server.h"

int main(int argc, char** argv) {
  using namespace neighborly;
  const int requests = argc > 1 ? std::atoi(argv[1]) : 4000;
  bench::SyntheticCluster cluster(5000);
  extender::ExtenderMetrics metrics;
  extender::HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  extender::HttpServer server(options, *cluster.core, metrics);
  absl::StatusOr<int> port = server.Start();
  if (!port.ok()) {
    std::fprintf(stderr, "%s\n", std::string(port.status().message()).c_str());
    return 1;
  }
  httplib::Client client("127.0.0.1", *port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as Go's net/http (kube-scheduler) does
  const std::string body = bench::NamesBody(500);
  std::vector<double> filter_us, prioritize_us;
  for (int i = -200; i < requests; ++i) {  // 200 warm-up requests
    const bool filter = (i % 2) == 0;
    const auto t0 = std::chrono::steady_clock::now();
    httplib::Result r = client.Post(filter ? "/filter" : "/prioritize", body, "application/json");
    const auto t1 = std::chrono::steady_clock::now();
    if (!r || r->status != 200) {
      std::fprintf(stderr, "request failed\n");
      return 1;
    }
    if (i < 0) continue;
    (filter ? filter_us : prioritize_us)
        .push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (i % 100 == 0) cluster.clock.Advance(absl::Milliseconds(100));
  }
  server.Stop();
  auto report = [](const char* verb, std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    std::printf("%-10s n=%zu  p50 %.0f us  p90 %.0f us  p99 %.0f us  max %.0f us\n", verb, v.size(),
                v[v.size() / 2], v[v.size() * 90 / 100], v[v.size() * 99 / 100], v.back());
  };
  std::printf("HTTP round trip, keep-alive, one client, 500 names, %d requests:\n", requests);
  report("filter", filter_us);
  report("prioritize", prioritize_us);
  std::vector<double> all = filter_us;
  all.insert(all.end(), prioritize_us.begin(), prioritize_us.end());
  report("both", all);
  return 0;
}
