// Options of the extender's HTTP server, in a header of their own (no
// cpp-httplib) so that the YAML config can fill them directly.
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_OPTIONS_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace neighborly::extender {

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 8888;  // 0: any free port
  int64_t body_limit_bytes = 64 << 20;
  // Request bytes (heads and bodies) buffered at once across all connections
  // beyond the first kFreeInputBytesPerConnection of each (docs/http.md,
  // "Memory"): a request that would need more is answered 503 and its
  // connection closed. A request needs about 5x its body while it is handled,
  // so this bounds the peak that many large requests at once can cause.
  // 0: twice body_limit_bytes. Otherwise at least body_limit_bytes.
  int64_t max_in_flight_bytes = 0;
  // Candidate nodes one /filter or /prioritize may name (the extender tracks
  // at most 50,000 nodes).
  int64_t max_names_per_request = 50'000;
  // Deadlines (docs/http.md, "Slow and hostile clients"): the TLS handshake
  // and a request's head within read_timeout (of the connection, of the
  // head's first byte); head and body within request_timeout of the first
  // byte (408); a queued reply written within write_timeout; an idle
  // keep-alive connection closed after keep_alive_timeout.
  absl::Duration read_timeout = absl::Seconds(5);
  absl::Duration write_timeout = absl::Seconds(5);
  absl::Duration keep_alive_timeout = absl::Seconds(5);
  absl::Duration request_timeout = absl::Seconds(10);
  // Threads that read and handle requests (an event loop each, on one epoll
  // set); a connection holds one only while a complete request is handled.
  int worker_threads = 64;
  // Connections open at once (idle, trickling and handshaking ones count);
  // one beyond gets 503 at once. A connection costs a descriptor and its
  // buffers, not a thread.
  int max_connections = 1024;
  // HTTPS when both are set (PEM files, read at construction); with
  // tls_client_ca_file, clients must present a certificate signed by that CA.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // With tls_client_ca_file: the names one of which the client certificate must
  // carry as a URI SAN, DNS SAN or subject CN (the scheduler's role,
  // http.tls.allowedClientNames); empty: any certificate the CA signed.
  std::vector<std::string> tls_allowed_client_names;
  // How often the three files are checked for changes (a stat each); changed
  // files are loaded for new connections (tls_reloader.h). Zero: at every
  // handshake (tests; the config's minimum is 1 s).
  absl::Duration tls_reload_interval = absl::Seconds(10);
  // A Server-Timing header on /filter and /prioritize replies with the
  // request's wake, receive and handle stages in milliseconds (docs/http.md,
  // "Where the time goes"), for benchmarks and for tracing a slow client's
  // tail; the stages are always counted in /metrics.
  bool server_timing = false;
  // POST /filter and /prioritize. Off on the operator port (operator.address),
  // which serves only what the operator API registers.
  bool scheduler_verbs = true;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_OPTIONS_H_
