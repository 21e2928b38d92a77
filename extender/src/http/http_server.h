// The extender's HTTP server: POST /filter and /prioritize at the root for
// kube-scheduler, plus whatever GET routes the operator API registers on
// routes() before Start(). An epoll event loop of its own (docs/http.md,
// "Slow and hostile clients"):
//
//   - worker_threads threads wait on one epoll set (EPOLLONESHOT per
//     connection); a thread reads what a socket has without blocking, and only
//     once a whole request (head and body) has arrived does it handle it, on
//     the same thread (no hand-off). A slow client costs a buffer and an fd,
//     never a worker;
//   - every request has a deadline for all of it: the head within readTimeout
//     of its first byte, head and body within requestTimeout (408, close); an
//     idle keep-alive connection closes after keepAliveTimeout; a reply the
//     client does not read, after writeTimeout;
//   - TLS handshakes run non-blocking in the same loop, within readTimeout;
//   - at most max_connections at a time; one beyond gets 503 at once and is
//     closed (not queued); the listen backlog is the system's
//     (net.core.somaxconn);
//   - limits on the request line (414), header count and size (431), declared
//     body (413 before any body byte is read); ambiguous framing (duplicate
//     Content-Length, Content-Length beside Transfer-Encoding) is refused;
//     pipelined requests are served in order; a reply with
//     "Connection: close" closes the connection, unread bytes are never
//     served as a request.
//
// With TLS, the certificate, key and client CA are reloaded when their files
// change (http.tls.reloadInterval): new connections get the new material,
// established ones keep theirs (tls_reloader.h).
//
//   HttpServer server(options, decider, metrics);
//   RegisterOperatorApi(server.routes(), ...);
//   absl::StatusOr<int> port = server.Start();   // binds (port 0: any), serves on its threads
//   ...
//   server.Stop();                                // stops accepting, finishes in-flight requests
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_

#include <httplib.h>
#include <openssl/ssl.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "extender/src/http/decider.h"
#include "extender/src/http/extender_handler.h"
#include "extender/src/http/extender_metrics.h"
#include "extender/src/http/http_request_parser.h"
#include "extender/src/http/http_server_options.h"
#include "extender/src/http/tls_reloader.h"

namespace neighborly::extender {

// GET routes by path pattern (an ECMAScript regular expression matched against
// the whole decoded path; groups land in Request::matches). The first route
// registered that matches answers. httplib's Request and Response serve as
// plain data types here.
class HttpRoutes {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void Get(const std::string& pattern, Handler handler);
  // Whether a GET route matched (it has then answered into `res`).
  bool Dispatch(httplib::Request& req, httplib::Response& res) const;

 private:
  struct Route {
    std::regex pattern;
    Handler handler;
  };
  std::vector<Route> get_;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Decider& decider, ExtenderMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // For registering GET routes; only before Start().
  HttpRoutes& routes() { return routes_; }
  // Called before routing for every request (after its head has arrived);
  // returns true when it has answered the request itself (e.g. 401), which is
  // then not routed. Only before Start(). The operator port's authentication.
  using RequestFilter = std::function<bool(const httplib::Request&, httplib::Response&)>;
  void SetRequestFilter(RequestFilter filter) { filter_ = std::move(filter); }
  bool tls() const { return !options_.tls_cert_file.empty(); }
  // With TLS: whether the files read at construction loaded (an error names
  // the file and the problem; Start() refuses to serve then).
  const absl::Status& tls_status() const { return tls_status_; }

  // Binds and starts serving on its threads; returns the bound port. With
  // TLS, fails (naming the file and the problem) when the files read at
  // construction were unusable.
  absl::StatusOr<int> Start();
  // Stops accepting connections and returns once in-flight requests are done.
  void Stop();

  int port() const { return port_; }
  // The backlog passed to listen(): the system's net.core.somaxconn.
  int listen_backlog() const { return backlog_; }
  // Connections open now (within max_connections), for tests and benchmarks.
  size_t open_connections() const { return open_.load(std::memory_order_relaxed); }
  // Request bytes held against http.maxInFlightBytes now, and the limit.
  int64_t in_flight_bytes() const { return in_flight_bytes_.load(std::memory_order_relaxed); }
  int64_t max_in_flight_bytes() const { return max_in_flight_bytes_; }

  struct Connection;  // http_server.cc

 private:
  void Loop();
  void Reap();
  void Accept();
  void OnEvent(Connection& c);
  // A step of the TLS handshake; false when it failed.
  bool Handshake(Connection& c);
  // Reads what the socket has; false on a read error.
  bool ReadAvailable(Connection& c);
  // Serves the complete requests buffered on `c`, in order, queueing their
  // replies; true when it stopped because too much output is queued.
  bool ServeBuffered(Connection& c);
  enum class HeadVerdict { kProceed, kAnswered };
  // The checks made once a head has arrived, before its body.
  HeadVerdict CheckHead(Connection& c);
  // Handles one request whose head is parsed and body complete.
  void Handle(Connection& c, std::string_view body, bool close);
  void HandleScheduler(Connection& c, Verb verb, std::string_view body, bool close);
  // Queue a reply; `close`: the connection closes after it.
  void QueueReply(Connection& c, int status, std::string_view content_type, std::string_view body,
                  const httplib::Headers* headers, bool close);
  void QueueError(Connection& c, int status, std::string_view message, bool close);
  // Writes what is queued; false on a write error.
  bool Flush(Connection& c);
  void StartLinger(Connection& c);
  // Reads and discards; false when the lingering is over.
  bool Linger(Connection& c);
  void Rearm(Connection& c);
  void Close(Connection* c);
  // Sets c's share of the in-flight budget for `held` bytes of input (the
  // first kFreeInputBytesPerConnection free); false, with nothing changed,
  // when growing it would pass the limit.
  bool Charge(Connection& c, size_t held);
  std::string OverBudgetMessage() const;
  void SetDeadline(Connection& c, absl::Duration from_now);
  void SetDeadlineAt(Connection& c, int64_t deadline_ns);

  const HttpServerOptions options_;
  const HeadLimits limits_;
  ExtenderMetrics& metrics_;
  ExtenderHandler handler_;
  RealClock clock_;  // paces the TLS file checks
  // With TLS: the reloading material (outlives ssl_ctx_, whose handshakes call
  // it), or why the files could not be loaded.
  std::unique_ptr<TlsReloader> tls_;
  absl::Status tls_status_;
  SSL_CTX* ssl_ctx_ = nullptr;
  HttpRoutes routes_;
  RequestFilter filter_;

  std::mutex listen_mu_;  // held while accepting and while Stop() closes listen_fd_
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;   // eventfd: readable once Stop() begins
  int spare_fd_ = -1;  // closed to accept-and-close when out of file descriptors
  int port_ = 0;
  int backlog_ = 0;
  bool started_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};      // connections within max_connections
  std::atomic<size_t> overflow_{0};  // connections being answered 503
  const int64_t max_in_flight_bytes_;
  std::atomic<int64_t> in_flight_bytes_{0};
  std::vector<std::thread> threads_;
  std::thread reaper_;
  // A large buffer was freed: the reaper returns freed pages to the system
  // (common/memory_release.h) on its next tick.
  std::atomic<bool> release_wanted_{false};
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;

  // Every open connection, for the deadline reaper (which only shuts sockets
  // down; the owning thread closes them) and for Stop().
  std::mutex conns_mu_;
  std::unordered_set<Connection*> conns_;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_
