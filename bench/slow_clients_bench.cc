// Slow clients against the real HTTPS server (issue 15, finding 3): a
// kube-scheduler-like keep-alive TLS client sends /filter with 500 names to the
// real HttpServer and ExtenderCore, first alone, then while
//   - `--trickle` connections (default 1,000) complete a TLS handshake and then
//     trickle a request head, one byte per connection per second, and
//   - `--half-open` connections (default 1,000) send a partial ClientHello and
//     stall,
// each reconnecting when the server closes it (its deadlines do). Prints the
// client's p50/p99/max in both phases and their ratio; target: p99 < 10 ms
// under attack (docs/performance.md, "Slow clients").
//
//   build/default/bench/slow_clients_bench [--requests 2000] [--trickle 1000] [--half-open 1000]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/http_bench_support.h"
#include "extender/src/http/http_server.h"
#include "test/support/test_pki.h"

namespace neighborly::bench {
namespace {

using Clock = std::chrono::steady_clock;

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// A blocking TLS connection.
struct Tls {
  int fd = -1;
  SSL* ssl = nullptr;
  bool Open(SSL_CTX* ctx, int port) {
    fd = Connect(port);
    if (fd < 0) return false;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
      Close();
      return false;
    }
    return true;
  }
  void Close() {
    if (ssl != nullptr) SSL_free(ssl);
    if (fd >= 0) close(fd);
    ssl = nullptr;
    fd = -1;
    ERR_clear_error();
  }
  bool Write(std::string_view data) {
    while (!data.empty()) {
      const int n = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // One response (headers, then Content-Length bytes); its status, or 0.
  int ReadResponse(std::string& in) {
    in.clear();
    char buf[65536];
    size_t want = std::string::npos;
    for (;;) {
      if (want == std::string::npos) {
        const size_t end = in.find("\r\n\r\n");
        if (end != std::string::npos) {
          const size_t cl = in.find("Content-Length: ");
          want = end + 4 + (cl < end ? std::stoul(in.substr(cl + 16)) : 0);
        }
      }
      if (want != std::string::npos && in.size() >= want) return std::atoi(in.c_str() + 9);
      const int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) return 0;
      in.append(buf, static_cast<size_t>(n));
    }
  }
};

struct Stats {
  double p50, p99, max;
};

Stats Measure(SSL_CTX* ctx, int port, int requests, const std::string& request) {
  Tls client;
  if (!client.Open(ctx, port)) {
    std::fprintf(stderr, "scheduler client: TLS connection failed\n");
    std::exit(1);
  }
  std::vector<double> us;
  std::string reply;
  for (int i = -100; i < requests; ++i) {  // 100 warm-up requests
    const auto t0 = Clock::now();
    if (!client.Write(request) || client.ReadResponse(reply) != 200) {
      std::fprintf(stderr, "scheduler client: request failed (%s)\n", reply.substr(0, 80).c_str());
      std::exit(1);
    }
    if (i >= 0) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // kube-scheduler is not a loop
  }
  client.Close();
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100], us.back()};
}

// The attackers: one thread keeps `trickle` TLS connections sending a head a
// byte per second each, and `half_open` TCP connections stalled in their
// ClientHello, reopening what the server closes.
class Attack {
 public:
  Attack(SSL_CTX* ctx, int port, int trickle, int half_open)
      : ctx_(ctx),
        port_(port),
        trickle_(static_cast<size_t>(trickle)),
        half_open_(static_cast<size_t>(half_open), -1) {}
  ~Attack() { Stop(); }

  void Start() {
    for (Tls& t : trickle_) OpenTrickler(t);
    for (int& fd : half_open_) OpenHalfOpen(fd);
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
    for (Tls& t : trickle_) t.Close();
    for (int fd : half_open_) close(fd);
  }
  size_t reopened() const { return reopened_.load(); }
  size_t live_tricklers() const { return live_tricklers_.load(); }

 private:
  void OpenTrickler(Tls& t) {
    if (t.Open(ctx_, port_)) t.Write("POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  }
  void OpenHalfOpen(int& fd) {
    fd = Connect(port_);
    // A TLS record header and the start of a ClientHello, then nothing.
    if (fd >= 0) send(fd, "\x16\x03\x01\x02\x00\x01\x00", 7, MSG_NOSIGNAL);
  }
  bool Closed(int fd) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    return fd < 0 || (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLRDHUP | POLLHUP)));
  }
  void Run() {
    const auto round = std::chrono::seconds(1);
    while (!stop_) {
      const auto t0 = Clock::now();
      size_t live = 0;
      for (size_t i = 0; i < trickle_.size() && !stop_; ++i) {
        Tls& t = trickle_[i];
        if (t.ssl == nullptr || Closed(t.fd) || !t.Write("a")) {
          t.Close();
          OpenTrickler(t);
          ++reopened_;
        } else {
          ++live;
        }
        // Spread the round's bytes over the second.
        std::this_thread::sleep_until(t0 + round * (i + 1) / (trickle_.size() + 1));
      }
      live_tricklers_ = live;
      for (int& fd : half_open_) {
        if (Closed(fd)) {
          if (fd >= 0) close(fd);
          OpenHalfOpen(fd);
          ++reopened_;
        }
      }
      std::this_thread::sleep_until(t0 + round);
    }
  }

  SSL_CTX* ctx_;
  int port_;
  std::vector<Tls> trickle_;
  std::vector<int> half_open_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> reopened_{0};
  std::atomic<size_t> live_tricklers_{0};
  std::thread thread_;
};

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const int requests = Flag(argc, argv, "--requests", 2000);
  const int trickle = Flag(argc, argv, "--trickle", 1000);
  const int half_open = Flag(argc, argv, "--half-open", 1000);
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;  // the attack needs ~2 fds per connection in this process
  setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < static_cast<rlim_t>(2 * (trickle + half_open) + 256)) {
    std::fprintf(stderr, "file descriptor limit %llu is too low for this attack\n",
                 static_cast<unsigned long long>(files.rlim_cur));
    return 1;
  }

  ::neighborly::testing::TestPki pki("/tmp/neighborly-slow-clients-bench-" +
                                     std::to_string(getpid()));
  if (!pki.MakeCa("ca").ok() || !pki.Issue("ca", "server", "extender").ok()) {
    std::fprintf(stderr, "cannot make test certificates (openssl)\n");
    return 1;
  }
  SyntheticCluster cluster(5000);
  extender::ExtenderMetrics metrics;
  extender::HttpServerOptions options;  // the defaults, but for the connection limit
  options.host = "127.0.0.1";
  options.port = 0;
  options.max_connections = 4096;
  options.tls_cert_file = pki.Path("server.crt");
  options.tls_key_file = pki.Path("server.key");
  extender::HttpServer server(options, *cluster.core, metrics);
  absl::StatusOr<int> port = server.Start();
  if (!port.ok()) {
    std::fprintf(stderr, "%s\n", std::string(port.status().message()).c_str());
    return 1;
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  const std::string body = NamesBody(500);
  const std::string request =
      absl::StrCat("POST /filter HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\n",
                   "Content-Length: ", body.size(), "\r\n\r\n", body);

  std::printf(
      "HTTPS /filter, 500 names, one keep-alive client, %d requests, %d worker threads, "
      "readTimeout %s\n",
      requests, options.worker_threads, absl::FormatDuration(options.read_timeout).c_str());
  const Stats alone = Measure(ctx, *port, requests, request);
  std::printf("alone:        p50 %6.0f us  p99 %6.0f us  max %6.0f us\n", alone.p50, alone.p99,
              alone.max);

  Attack attack(ctx, *port, trickle, half_open);
  const auto setup = Clock::now();
  attack.Start();
  std::printf(
      "attack: %d trickling TLS connections + %d half-open handshakes (set up in %.1f s), "
      "server holds %zu connections\n",
      trickle, half_open, std::chrono::duration<double>(Clock::now() - setup).count(),
      server.open_connections());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // How many connections the server held while the client was measured (the
  // server closes attackers at their deadlines; they reconnect).
  std::atomic<bool> measuring{true};
  size_t held_min = SIZE_MAX, held_sum = 0, held_samples = 0;
  std::thread sampler([&] {
    while (measuring) {
      const size_t held = server.open_connections();
      held_min = std::min(held_min, held);
      held_sum += held;
      ++held_samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const Stats attacked = Measure(ctx, *port, requests, request);
  measuring = false;
  sampler.join();
  std::printf(
      "under attack: p50 %6.0f us  p99 %6.0f us  max %6.0f us  (server held %zu connections at "
      "least, %zu on average; %zu reopened after the server closed them)\n",
      attacked.p50, attacked.p99, attacked.max, held_min,
      held_samples > 0 ? held_sum / held_samples : 0, attack.reopened());
  std::printf("ratio under attack / alone: p50 %.2f  p99 %.2f   target p99 < 10000 us: %s\n",
              attacked.p50 / alone.p50, attacked.p99 / alone.p99,
              attacked.p99 < 10'000 ? "met" : "NOT met");
  attack.Stop();
  server.Stop();
  SSL_CTX_free(ctx);
  return 0;
}

}  // namespace
}  // namespace neighborly::bench

int main(int argc, char** argv) { return neighborly::bench::Main(argc, argv); }
