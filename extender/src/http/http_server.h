// The extender's HTTP server (cpp-httplib): POST /filter and /prioritize at the
// root for kube-scheduler, plus whatever GET routes the operator API registers
// on server() before Start().
//
// Protection against slow or hostile clients (docs/http.md):
//   - a declared Content-Length above body_limit_bytes is answered 413 before
//     any of the body is read, and the connection is marked for closing;
//   - per-read/per-write timeouts; a deadline (request_timeout) on reading the body;
//   - worker_threads connections are served at once (an idle keep-alive
//     connection holds a worker for at most keep_alive_timeout); at most
//     max_connections are accepted at a time, the rest get 503.
//
// With TLS, the certificate, key and client CA are reloaded when their files
// change (http.tls.reloadInterval): new connections get the new material,
// established ones keep theirs (tls_reloader.h).
//
//   HttpServer server(options, decider, metrics);
//   RegisterOperatorApi(server.server(), ...);
//   absl::StatusOr<int> port = server.Start();   // binds (port 0: any), serves on a thread
//   ...
//   server.Stop();                                // stops accepting, finishes in-flight requests
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "extender/src/http/decider.h"
#include "extender/src/http/extender_handler.h"
#include "extender/src/http/extender_metrics.h"
#include "extender/src/http/http_server_options.h"
#include "extender/src/http/tls_reloader.h"

namespace neighborly::extender {

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Decider& decider, ExtenderMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // For registering more routes; only before Start().
  httplib::Server& server() { return *server_; }
  // Called before routing for every request that is not refused for overload;
  // returns true when it has answered the request itself (e.g. 401), which is
  // then not routed. Only before Start(). The operator port's authentication.
  using RequestFilter = std::function<bool(const httplib::Request&, httplib::Response&)>;
  void SetRequestFilter(RequestFilter filter) { filter_ = std::move(filter); }
  bool tls() const { return !options_.tls_cert_file.empty(); }
  // With TLS: whether the files read at construction loaded (an error names
  // the file and the problem; Start() refuses to serve then).
  const absl::Status& tls_status() const { return tls_status_; }

  // Binds and starts serving on a background thread; returns the bound port.
  // With TLS, fails (naming the file and the problem) when the files read at
  // construction were unusable.
  absl::StatusOr<int> Start();
  // Stops accepting connections and returns once in-flight requests are done.
  void Stop();

  int port() const { return port_; }

 private:
  void HandleScheduler(Verb verb, const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader);
  httplib::Server::HandlerResponse PreRoute(const httplib::Request& req, httplib::Response& res);
  int CheckDeclaredLength(const httplib::Request& req, httplib::Response& res);

  const HttpServerOptions options_;
  ExtenderMetrics& metrics_;
  ExtenderHandler handler_;
  RealClock clock_;  // paces the TLS file checks
  // With TLS: the reloading material (outlives server_, whose SSL_CTX calls it),
  // or why the files could not be loaded.
  std::unique_ptr<TlsReloader> tls_;
  absl::Status tls_status_;
  std::unique_ptr<httplib::Server> server_;  // an httplib::SSLServer with TLS
  RequestFilter filter_;
  std::thread thread_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_H_
