// Internals of the HTTP server shared by http_server.cc (setup, accepting,
// deadlines) and http_server_connection.cc (one connection's reading,
// handling and writing). Not for other users.
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_INTERNAL_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_INTERNAL_H_

#include <openssl/ssl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "extender/src/http/http_request_parser.h"
#include "extender/src/http/http_server.h"

namespace neighborly::extender {
namespace http_internal {

constexpr int64_t kNoDeadline = INT64_MAX;
// Replies queued and not yet written beyond which pipelined requests wait
// until the client reads.
constexpr size_t kMaxPendingOutput = 1 << 20;
// After a reply that closes the connection the server stops sending (FIN) and
// reads and discards what the client still sends, for at most this long and
// this much, so that the client reads the reply instead of a reset.
constexpr absl::Duration kLingerTime = absl::Seconds(2);
constexpr size_t kLingerMaxBytes = 64 << 20;
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kMaxReadPerEvent = 4 << 20;
// An input buffer that grew past this is freed after its request (and the
// heap trimmed) instead of kept for the next request.
constexpr size_t kRetainInputBytes = 1 << 20;
// Bytes of a body with a declared length reserved before they arrive (the
// rest once this much has arrived), so a declared length costs nothing until
// the client sends.
constexpr size_t kReserveAhead = 1 << 20;

// Request bytes a connection may hold without drawing on the server's
// in-flight budget (http.maxInFlightBytes): a request head (at most 64 KiB)
// and a kube-scheduler request of a few thousand node names are never
// refused for the budget. Connections x this is the input held outside it.
constexpr size_t kFreeInputBytesPerConnection = 128 << 10;

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CLOCK_REALTIME, the clock of the kernel's receive timestamps.
inline int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t Ns(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

inline std::optional<Verb> VerbOf(const std::string& path) {
  if (path == "/filter") return Verb::kFilter;
  if (path == "/prioritize") return Verb::kPrioritize;
  return std::nullopt;
}

inline bool WantsClose(const httplib::Request& req) {
  const std::string connection = req.get_header_value("Connection");
  auto has = [&](std::string_view token) {
    std::string lower(connection);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find(token) != std::string::npos;
  };
  if (req.version == "HTTP/1.0") return !has("keep-alive");
  return has("close");
}

}  // namespace http_internal

struct HttpServer::Connection {
  enum class Phase { kHandshake, kReading, kWriting, kLingering };
  int fd = -1;
  SSL* ssl = nullptr;
  Phase phase = Phase::kReading;
  bool overflow = false;
  bool want_write = false;  // the handshake waits for the socket to take bytes
  bool eof = false;         // the client sent FIN
  bool close_after_write = false;
  bool trim = false;  // a large buffer was freed: trim the heap when closing
  // Bytes of the in-flight budget this connection holds, and whether a read
  // found the budget exhausted (the request is then answered 503).
  size_t charged = 0;
  bool over_budget = false;
  // The current request's head and declared body, reserved in the budget
  // once its head has arrived (0: nothing reserved), so that an admitted
  // request can always be read to its end.
  size_t reserved = 0;

  // Received bytes; in[in_pos..] are not consumed yet.
  std::string in;
  size_t in_pos = 0;
  size_t scanned = 0;  // bytes of in[in_pos..] known not to end a head

  // The request being received.
  bool request_started = false;
  int64_t request_start_ns = 0;
  bool have_head = false;
  size_t head_bytes = 0;
  httplib::Request req;
  BodyFraming framing;
  std::optional<Verb> verb;
  std::unique_ptr<ChunkedDecoder> chunked;
  std::string chunked_body;
  size_t chunked_consumed = 0;  // bytes after the head fed to the decoder

  // Stage timestamps (docs/http.md, "Where the time goes"): the latest read's
  // delay from the kernel's receive timestamp (-1: none, e.g. TLS), and when
  // a scheduler reply was queued (0: none waiting to be written).
  int64_t wake_ns = -1;
  int64_t replied_ns = 0;

  // Replies queued; out[out_pos..] are not written yet.
  std::string out;
  size_t out_pos = 0;
  size_t lingered = 0;

  // Read by the reaper thread.
  std::atomic<int64_t> deadline_ns{http_internal::kNoDeadline};
  std::atomic<bool> writing{false};
  std::atomic<bool> expired{false};
  // Read by Stop(): a request has begun arriving and is not answered yet.
  std::atomic<bool> in_request{false};
  std::atomic<bool> drain_shut{false};

  size_t pending_output() const { return out.size() - out_pos; }
  // Request bytes held: unconsumed input and a decoded chunked body.
  size_t held_input() const { return in.size() - in_pos + chunked_body.size(); }
  std::string_view input() const { return std::string_view(in).substr(in_pos); }
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_HTTP_SERVER_INTERNAL_H_
