#include "extender/src/http/http_server.h"

#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "extender/src/http/extender_codec.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

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

// epoll tags of the two non-connection descriptors.
char listen_tag;
char stop_tag;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t Ns(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

std::optional<Verb> VerbOf(const std::string& path) {
  if (path == "/filter") return Verb::kFilter;
  if (path == "/prioritize") return Verb::kPrioritize;
  return std::nullopt;
}

int SystemBacklog() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  int value = 0;
  if (in >> value && value > 0) return value;
  return SOMAXCONN;
}

bool WantsClose(const httplib::Request& req) {
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

}  // namespace

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

  // Replies queued; out[out_pos..] are not written yet.
  std::string out;
  size_t out_pos = 0;
  size_t lingered = 0;

  // Read by the reaper thread.
  std::atomic<int64_t> deadline_ns{kNoDeadline};
  std::atomic<bool> writing{false};
  std::atomic<bool> expired{false};
  // Read by Stop(): a request has begun arriving and is not answered yet.
  std::atomic<bool> in_request{false};
  std::atomic<bool> drain_shut{false};

  size_t pending_output() const { return out.size() - out_pos; }
  std::string_view input() const { return std::string_view(in).substr(in_pos); }
};

// --- Routes -----------------------------------------------------------------

void HttpRoutes::Get(const std::string& pattern, Handler handler) {
  get_.push_back({std::regex(pattern), std::move(handler)});
}

bool HttpRoutes::Dispatch(httplib::Request& req, httplib::Response& res) const {
  if (req.method != "GET") return false;
  for (const Route& route : get_) {
    if (std::regex_match(req.path, req.matches, route.pattern)) {
      route.handler(req, res);
      return true;
    }
  }
  return false;
}

// --- Setup ------------------------------------------------------------------

HttpServer::HttpServer(HttpServerOptions options, Decider& decider, ExtenderMetrics& metrics)
    : options_(std::move(options)),
      limits_{},
      metrics_(metrics),
      handler_(decider, &metrics,
               static_cast<size_t>(std::max<int64_t>(1, options_.max_names_per_request))) {
  if (options_.tls_cert_file.empty()) return;
  absl::StatusOr<std::unique_ptr<TlsReloader>> tls = TlsReloader::Create(
      {.cert_file = options_.tls_cert_file,
       .key_file = options_.tls_key_file,
       .client_ca_file = options_.tls_client_ca_file,
       .reload_interval = options_.tls_reload_interval},
      clock_, [&metrics](bool ok) { metrics.RecordTlsReload(TlsListener::kHttp, ok); });
  if (!tls.ok()) {
    tls_status_ = tls.status();  // reported by Start()
    return;
  }
  tls_ = std::move(*tls);
  ssl_ctx_ = SSL_CTX_new(TLS_server_method());
  if (ssl_ctx_ == nullptr || !tls_->Configure(*ssl_ctx_)) {
    tls_status_ = absl::InternalError("OpenSSL refused the TLS setup");
    return;
  }
  SSL_CTX_set_mode(ssl_ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

HttpServer::~HttpServer() {
  Stop();
  if (ssl_ctx_ != nullptr) SSL_CTX_free(ssl_ctx_);
}

absl::StatusOr<int> HttpServer::Start() {
  if (started_) return absl::FailedPreconditionError("HTTP server already started");
  if (!tls_status_.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serve HTTPS with certificate ", options_.tls_cert_file, " and key ",
                     options_.tls_key_file,
                     options_.tls_client_ca_file.empty()
                         ? ""
                         : absl::StrCat(" and client CA ", options_.tls_client_ca_file),
                     ": ", tls_status_.message()));
  }
  auto unavailable = [&](std::string_view what) {
    const std::string message = absl::StrCat("cannot listen on HTTP address ", options_.host, ":",
                                             options_.port, ": ", std::string(what));
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
    return absl::UnavailableError(message);
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options_.port);
  if (const int rc = getaddrinfo(options_.host.empty() ? nullptr : options_.host.c_str(),
                                 service.c_str(), &hints, &found);
      rc != 0) {
    return unavailable(gai_strerror(rc));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    backlog_ = SystemBacklog();
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, backlog_) == 0) {
      listen_fd_ = fd;
    } else {
      error = std::strerror(errno);
      close(fd);
    }
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) return unavailable(error);
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);

  // A peer that resets while a reply is written must not kill the process
  // (OpenSSL writes with write(2), which raises SIGPIPE).
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epoll_fd_ < 0 || stop_fd_ < 0) return unavailable(std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: wakes every thread in turn
  ev.data.ptr = &stop_tag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.ptr = &listen_tag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);

  started_ = true;
  stopping_ = false;
  const int threads = std::max(1, options_.worker_threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  reaper_ = std::thread([this] { Reap(); });
  return port_;
}

void HttpServer::Stop() {
  if (!started_) return;
  started_ = false;
  stopping_ = true;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  close(listen_fd_);
  listen_fd_ = -1;
  // Drain: connections between requests end now (their input is shut, the
  // owning thread closes them); a request under way is finished and answered
  // with "Connection: close", within its deadlines.
  const auto drain_until =
      std::chrono::steady_clock::now() +
      absl::ToChronoNanoseconds(options_.request_timeout + options_.write_timeout);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      if (conns_.empty()) break;
      for (Connection* c : conns_) {
        if (!c->in_request.load() && !c->drain_shut.exchange(true)) shutdown(c->fd, SHUT_RD);
      }
    }
    if (std::chrono::steady_clock::now() > drain_until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) < 0) spdlog::error("HTTP server: cannot signal stop");
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    reaper_cv_.notify_all();
  }
  reaper_.join();
  std::vector<Connection*> left;
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    left.assign(conns_.begin(), conns_.end());
  }
  for (Connection* c : left) Close(c);
  close(epoll_fd_);
  close(stop_fd_);
  if (spare_fd_ >= 0) close(spare_fd_);
  epoll_fd_ = stop_fd_ = spare_fd_ = -1;
}

// --- The loop -----------------------------------------------------------------

void HttpServer::Loop() {
  for (;;) {
    // One event at a time: the others stay with the threads that are idle.
    epoll_event ev{};
    const int n = epoll_wait(epoll_fd_, &ev, 1, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("HTTP server: epoll_wait: {}", std::strerror(errno));
      return;
    }
    if (n == 0) continue;
    if (ev.data.ptr == &stop_tag) return;
    if (ev.data.ptr == &listen_tag) {
      Accept();
      epoll_event again{};
      again.events = EPOLLIN | EPOLLONESHOT;
      again.data.ptr = &listen_tag;
      if (!stopping_) epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &again);
      continue;
    }
    OnEvent(*static_cast<Connection*>(ev.data.ptr));
  }
}

// Shuts down the sockets of connections past their deadline; the owning
// thread then sees the end of input and closes them (408 when a request was
// under way). The reaper never closes or frees a connection itself.
void HttpServer::Reap() {
  const absl::Duration shortest =
      std::min({options_.read_timeout, options_.request_timeout, options_.keep_alive_timeout,
                options_.write_timeout, kLingerTime});
  const auto tick = std::chrono::milliseconds(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(shortest) / 4, 10, 100));
  std::unique_lock<std::mutex> wait_lock(reaper_mu_);
  while (!stopping_) {
    reaper_cv_.wait_for(wait_lock, tick);
    const int64_t now = NowNs();
    std::lock_guard<std::mutex> lock(conns_mu_);
    for (Connection* c : conns_) {
      if (c->deadline_ns.load(std::memory_order_relaxed) <= now && !c->expired.exchange(true)) {
        shutdown(c->fd, c->writing.load() ? SHUT_RDWR : SHUT_RD);
      }
    }
  }
}

void HttpServer::Accept() {
  const size_t max_connections = static_cast<size_t>(std::max(1, options_.max_connections));
  for (int i = 0; i < 256 && !stopping_; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
        // Out of descriptors: take the connection off the queue and close it,
        // or the listening socket stays readable and the loop spins.
        close(spare_fd_);
        const int dropped = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (dropped >= 0) close(dropped);
        spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        metrics_.RecordRejectedConnection();
        spdlog::warn("HTTP server out of file descriptors; a connection was closed unanswered");
        continue;
      }
      return;  // EAGAIN: none left
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    bool overflow = false;
    if (open_.load() >= max_connections) {
      metrics_.RecordRejectedConnection();
      // Answering takes a buffer and (with TLS) a handshake: as many
      // overflow connections as regular ones at most; beyond, closed at once.
      if (overflow_.load() >= max_connections) {
        close(fd);
        continue;
      }
      overflow = true;
      overflow_.fetch_add(1);
    } else {
      open_.fetch_add(1);
    }
    auto* c = new Connection;
    c->fd = fd;
    c->overflow = overflow;
    SetDeadline(*c, options_.read_timeout);
    if (ssl_ctx_ != nullptr) {
      c->ssl = SSL_new(ssl_ctx_);
      SSL_set_fd(c->ssl, fd);
      SSL_set_accept_state(c->ssl);
      c->phase = Connection::Phase::kHandshake;
    } else if (overflow) {
      // Answered at once, before the client says anything.
      QueueError(*c, 503, "too many connections; retry later", /*close=*/true);
      c->phase = Connection::Phase::kWriting;
    }
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      conns_.insert(c);
    }
    epoll_event ev{};
    ev.events =
        (c->phase == Connection::Phase::kWriting ? EPOLLOUT : EPOLLIN | EPOLLRDHUP) | EPOLLONESHOT;
    ev.data.ptr = c;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) Close(c);
  }
}

void HttpServer::SetDeadline(Connection& c, absl::Duration from_now) {
  SetDeadlineAt(c, NowNs() + Ns(from_now));
}

void HttpServer::SetDeadlineAt(Connection& c, int64_t deadline_ns) {
  c.deadline_ns.store(deadline_ns, std::memory_order_relaxed);
  c.expired.store(false, std::memory_order_relaxed);
}

void HttpServer::Rearm(Connection& c) {
  const bool out = c.phase == Connection::Phase::kWriting ||
                   (c.phase == Connection::Phase::kHandshake && c.want_write);
  c.writing.store(out);
  epoll_event ev{};
  ev.events = (out ? EPOLLOUT : EPOLLIN | EPOLLRDHUP) | EPOLLONESHOT;
  ev.data.ptr = &c;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev) != 0) Close(&c);
}

void HttpServer::Close(Connection* c) {
  {
    std::lock_guard<std::mutex> lock(conns_mu_);
    conns_.erase(c);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  if (c->ssl != nullptr) SSL_free(c->ssl);
  close(c->fd);
  (c->overflow ? overflow_ : open_).fetch_sub(1);
  const bool trim = c->trim || c->in.capacity() > kRetainInputBytes;
  delete c;
  ERR_clear_error();
  if (trim) ::malloc_trim(0);
}

// --- One connection -------------------------------------------------------------

void HttpServer::OnEvent(Connection& c) {
  using Phase = Connection::Phase;
  if (c.deadline_ns.load(std::memory_order_relaxed) <= NowNs()) {
    if (c.phase != Phase::kReading || !c.request_started || c.close_after_write) {
      Close(&c);  // an idle connection, a handshake, a reply or a lingering close: over
      return;
    }
    // A request under way: say why it ends.
    if (c.verb) metrics_.RecordRequest(*c.verb, 408, absl::ZeroDuration());
    QueueError(c, 408,
               c.have_head ? "request not received in full within http.requestTimeout"
                           : "request head not received within http.readTimeout",
               /*close=*/true);
  } else if (c.phase == Phase::kHandshake) {
    if (!Handshake(c)) {
      Close(&c);
      return;
    }
    if (c.phase == Phase::kHandshake) {
      Rearm(c);
      return;
    }
    // Done; application data may already be waiting.
  } else if (c.phase == Phase::kLingering) {
    if (Linger(c)) {
      Rearm(c);
    } else {
      Close(&c);
    }
    return;
  }
  if (c.phase == Phase::kReading && !c.close_after_write && !ReadAvailable(c)) {
    Close(&c);
    return;
  }
  for (;;) {
    bool more = false;
    if (c.pending_output() == 0 && !c.close_after_write) more = ServeBuffered(c);
    if (!Flush(c)) {
      Close(&c);
      return;
    }
    if (c.pending_output() > 0) {
      c.phase = Phase::kWriting;
      SetDeadline(c, options_.write_timeout);
      Rearm(c);
      return;
    }
    if (c.close_after_write) {
      StartLinger(c);
      Rearm(c);
      return;
    }
    c.phase = Phase::kReading;
    if (!more) break;
  }
  if (c.eof || (stopping_.load() && !c.request_started)) {
    Close(&c);  // the client is done sending (or the server stopping) and all is answered
    return;
  }
  Rearm(c);
}

bool HttpServer::Handshake(Connection& c) {
  ERR_clear_error();
  const int r = SSL_do_handshake(c.ssl);
  if (r == 1) {
    c.phase = Connection::Phase::kReading;
    c.want_write = false;
    SetDeadline(c, options_.read_timeout);  // for the first request's head
    if (c.overflow) QueueError(c, 503, "too many connections; retry later", /*close=*/true);
    return true;
  }
  switch (SSL_get_error(c.ssl, r)) {
    case SSL_ERROR_WANT_READ:
      c.want_write = false;
      return true;
    case SSL_ERROR_WANT_WRITE:
      c.want_write = true;
      return true;
    default:
      return false;  // refused (e.g. no or a wrong client certificate), or not TLS
  }
}

bool HttpServer::ReadAvailable(Connection& c) {
  thread_local std::unique_ptr<char[]> buffer(new char[kReadChunk]);
  char* buf = buffer.get();
  size_t total = 0;
  while (total < kMaxReadPerEvent) {
    size_t n = 0;
    if (c.ssl != nullptr) {
      ERR_clear_error();
      const int r = SSL_read(c.ssl, buf, static_cast<int>(kReadChunk));
      if (r <= 0) {
        const int e = SSL_get_error(c.ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
          c.eof = true;
          return true;
        }
        return false;
      }
      n = static_cast<size_t>(r);
    } else {
      const ssize_t r = recv(c.fd, buf, kReadChunk, 0);
      if (r == 0) {
        c.eof = true;
        return true;
      }
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        if (errno == EINTR) continue;
        return false;
      }
      n = static_cast<size_t>(r);
    }
    if (c.have_head && c.framing.kind == BodyFraming::kLength) {
      // Room for the whole body, once it is small or well under way.
      const size_t whole = c.in_pos + c.head_bytes + static_cast<size_t>(c.framing.length);
      const size_t received =
          c.in.size() - c.in_pos - std::min(c.in.size() - c.in_pos, c.head_bytes);
      if (c.in.capacity() < whole &&
          (c.framing.length <= kReserveAhead || received >= kReserveAhead)) {
        c.in.reserve(whole);
      }
    }
    c.in.append(buf, n);
    total += n;
  }
  return true;
}

bool HttpServer::ServeBuffered(Connection& c) {
  for (;;) {
    if (c.close_after_write) return false;
    if (c.pending_output() >= kMaxPendingOutput) return true;
    const std::string_view avail = c.input();
    if (!c.have_head) {
      if (avail.empty()) {
        c.request_started = false;
        c.in_request.store(false);
        SetDeadline(c, options_.keep_alive_timeout);
        return false;
      }
      if (!c.request_started) {
        c.request_started = true;
        c.in_request.store(true);
        c.request_start_ns = NowNs();
        SetDeadlineAt(
            c, c.request_start_ns + Ns(std::min(options_.read_timeout, options_.request_timeout)));
      }
      const HeadResult head = ParseHead(avail, c.scanned, limits_, c.req);
      if (head.kind == HeadResult::kIncomplete) {
        c.scanned = avail.size();
        return false;
      }
      if (head.kind == HeadResult::kError) {
        if (head.status == 431) c.trim = true;
        QueueError(c, head.status, head.error, /*close=*/true);
        return false;
      }
      c.have_head = true;
      c.head_bytes = head.head_bytes;
      c.scanned = 0;
      SetDeadlineAt(c, c.request_start_ns + Ns(options_.request_timeout));
      if (CheckHead(c) == HeadVerdict::kAnswered) {
        if (c.close_after_write) return false;
        c.in_pos += c.head_bytes;  // a request without a body, answered
        c.have_head = false;
        c.request_started = false;
        c.in_request.store(false);
        continue;
      }
    }
    std::string_view body;
    size_t consumed = c.head_bytes;
    if (c.framing.kind == BodyFraming::kLength) {
      const size_t length = static_cast<size_t>(c.framing.length);
      if (avail.size() - c.head_bytes < length) return false;
      body = avail.substr(c.head_bytes, length);
      consumed += length;
    } else if (c.framing.kind == BodyFraming::kChunked) {
      size_t used = 0;
      const ChunkedDecoder::Status status =
          c.chunked->Feed(avail.substr(c.head_bytes + c.chunked_consumed), used, c.chunked_body);
      c.chunked_consumed += used;
      if (status == ChunkedDecoder::kNeedMore) return false;
      if (status != ChunkedDecoder::kDone) {
        const int code = status == ChunkedDecoder::kTooLarge ? 413 : 400;
        if (c.verb) metrics_.RecordRequest(*c.verb, code, absl::ZeroDuration());
        QueueError(c, code,
                   status == ChunkedDecoder::kTooLarge
                       ? absl::StrCat("request body exceeds the limit of ",
                                      options_.body_limit_bytes, " bytes (http.bodyLimitBytes)")
                       : absl::StrCat("malformed chunked body: ", c.chunked->error()),
                   /*close=*/true);
        return false;
      }
      body = c.chunked_body;
      consumed += c.chunked_consumed;
    }
    SetDeadlineAt(c, kNoDeadline);  // handling: not the client's time
    Handle(c, body, WantsClose(c.req) || stopping_.load());
    c.in_pos += consumed;
    c.have_head = false;
    c.request_started = false;
    c.in_request.store(false);
    c.verb.reset();
    c.chunked.reset();
    if (c.chunked_body.capacity() > kRetainInputBytes) {
      std::string().swap(c.chunked_body);
    } else {
      c.chunked_body.clear();
    }
    if (c.in_pos == c.in.size()) {
      if (c.in.capacity() > kRetainInputBytes) {
        std::string().swap(c.in);
        ::malloc_trim(0);
      } else {
        c.in.clear();
      }
      c.in_pos = 0;
    } else if (c.in_pos >= c.in.size() / 2) {
      c.in.erase(0, c.in_pos);  // a pipelined request follows
      c.in_pos = 0;
    }
  }
}

HttpServer::HeadVerdict HttpServer::CheckHead(Connection& c) {
  const httplib::Request& req = c.req;
  c.verb.reset();
  if (options_.scheduler_verbs && req.method == "POST") c.verb = VerbOf(req.path);
  c.framing = FramingOf(req);
  const bool body_follows = c.framing.kind != BodyFraming::kNone || c.framing.status != 0;
  if (filter_) {
    httplib::Response res;
    if (filter_(req, res)) {
      if (res.status == -1) res.status = 200;
      QueueReply(c, res.status, res.get_header_value("Content-Type"), res.body, &res.headers,
                 /*close=*/body_follows || WantsClose(req));
      return HeadVerdict::kAnswered;
    }
  }
  auto refuse = [&](int status, std::string_view message) {
    if (c.verb) metrics_.RecordRequest(*c.verb, status, absl::ZeroDuration());
    // The body (if the client sends it) is never read: the connection closes.
    QueueError(c, status, message, /*close=*/true);
    return HeadVerdict::kAnswered;
  };
  if (c.framing.status != 0) return refuse(c.framing.status, c.framing.error);
  if (c.verb && c.framing.kind == BodyFraming::kNone && !req.has_header("Content-Length")) {
    return refuse(411, "Content-Length required");
  }
  if (c.framing.kind == BodyFraming::kLength &&
      c.framing.length > static_cast<uint64_t>(options_.body_limit_bytes)) {
    return refuse(413,
                  absl::StrCat("request body of ", c.framing.length, " bytes exceeds the limit of ",
                               options_.body_limit_bytes, " bytes (http.bodyLimitBytes)"));
  }
  if (c.framing.kind == BodyFraming::kChunked) {
    c.chunked = std::make_unique<ChunkedDecoder>(static_cast<size_t>(options_.body_limit_bytes));
    c.chunked_body.clear();
    c.chunked_consumed = 0;
  }
  if (body_follows) {
    std::string expect(Trim(req.get_header_value("Expect")));
    std::transform(expect.begin(), expect.end(), expect.begin(),
                   [](char ch) { return static_cast<char>(std::tolower(ch)); });
    if (expect == "100-continue") c.out += "HTTP/1.1 100 Continue\r\n\r\n";
  }
  return HeadVerdict::kProceed;
}

void HttpServer::Handle(Connection& c, std::string_view body, bool close) {
  if (c.verb) {
    HandleScheduler(c, *c.verb, body, close);
    return;
  }
  httplib::Response res;
  c.req.body.assign(body);
  if (!routes_.Dispatch(c.req, res)) {
    QueueError(c, 404, absl::StrCat("no route for ", c.req.method, " ", c.req.path), close);
    return;
  }
  if (res.status == -1) res.status = 200;
  QueueReply(c, res.status, res.get_header_value("Content-Type"), res.body, &res.headers, close);
  c.req.body.clear();
}

void HttpServer::HandleScheduler(Connection& c, Verb verb, std::string_view body, bool close) {
  const auto start = std::chrono::steady_clock::now();
  int status;
  {
    ScratchPool::Lease scratch = handler_.scratch().Acquire();
    scratch->body.Clear();
    scratch->body.Reserve(body.size() + kJsonPadding);
    scratch->body.Append(body.data(), body.size());
    scratch->body.Seal();
    status = handler_.Handle(verb, *scratch);
    QueueReply(c, status, "application/json", scratch->reply, nullptr, close);
  }
  metrics_.RecordRequest(verb, status, absl::FromChrono(std::chrono::steady_clock::now() - start));
}

void HttpServer::QueueReply(Connection& c, int status, std::string_view content_type,
                            std::string_view body, const httplib::Headers* headers, bool close) {
  absl::StrAppend(&c.out, "HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
  if (!content_type.empty()) {
    c.out.append("Content-Type: ").append(content_type).append("\r\n");
  }
  if (headers != nullptr) {
    for (const auto& [name, value] : *headers) {
      if (EqualsIgnoreCase(name, "Content-Type") || EqualsIgnoreCase(name, "Content-Length") ||
          EqualsIgnoreCase(name, "Connection")) {
        continue;
      }
      absl::StrAppend(&c.out, name, ": ", value, "\r\n");
    }
  }
  absl::StrAppend(&c.out, "Content-Length: ", body.size(), "\r\n",
                  close ? "Connection: close\r\n\r\n" : "\r\n");
  c.out.append(body);
  if (close) c.close_after_write = true;
}

void HttpServer::QueueError(Connection& c, int status, std::string_view message, bool close) {
  std::string body;
  EncodeError(message, body);
  QueueReply(c, status, "application/json", body, nullptr, close);
}

bool HttpServer::Flush(Connection& c) {
  while (c.out_pos < c.out.size()) {
    const char* data = c.out.data() + c.out_pos;
    const size_t n = c.out.size() - c.out_pos;
    if (c.ssl != nullptr) {
      ERR_clear_error();
      const int r = SSL_write(c.ssl, data, static_cast<int>(std::min<size_t>(n, INT_MAX)));
      if (r > 0) {
        c.out_pos += static_cast<size_t>(r);
        continue;
      }
      const int e = SSL_get_error(c.ssl, r);
      return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ;
    }
    const ssize_t w = send(c.fd, data, n, MSG_NOSIGNAL);
    if (w > 0) {
      c.out_pos += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    return w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  if (c.out.capacity() > kRetainInputBytes) {
    std::string().swap(c.out);
  } else {
    c.out.clear();
  }
  c.out_pos = 0;
  return true;
}

void HttpServer::StartLinger(Connection& c) {
  c.phase = Connection::Phase::kLingering;
  c.lingered = 0;
  SetDeadline(c, kLingerTime);
  if (c.ssl != nullptr) {
    ERR_clear_error();
    SSL_shutdown(c.ssl);  // close_notify, best effort
  }
  shutdown(c.fd, SHUT_WR);
  if (c.in.capacity() > kRetainInputBytes) c.trim = true;
  std::string().swap(c.in);
  c.in_pos = 0;
}

bool HttpServer::Linger(Connection& c) {
  thread_local std::unique_ptr<char[]> buffer(new char[kReadChunk]);
  for (;;) {
    const ssize_t r = recv(c.fd, buffer.get(), kReadChunk, 0);
    if (r > 0) {
      c.lingered += static_cast<size_t>(r);
      if (c.lingered > kLingerMaxBytes) return false;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // else EOF or an error: over
  }
}

}  // namespace neighborly::extender
