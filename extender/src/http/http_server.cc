#include "extender/src/http/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
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
#include "common/memory_release.h"
#include "common/strings.h"
#include "extender/src/http/extender_codec.h"
#include "extender/src/http/http_server_internal.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

using http_internal::kLingerMaxBytes;
using http_internal::kLingerTime;
using http_internal::kMaxPendingOutput;
using http_internal::kMaxReadPerEvent;
using http_internal::kNoDeadline;
using http_internal::kReadChunk;
using http_internal::kReserveAhead;
using http_internal::kRetainInputBytes;
using http_internal::NowNs;
using http_internal::Ns;
using http_internal::VerbOf;
using http_internal::WantsClose;

// epoll tags of the two non-connection descriptors.
char listen_tag;
char stop_tag;

int SystemBacklog() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  int value = 0;
  if (in >> value && value > 0) return value;
  return SOMAXCONN;
}

}  // namespace

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
               static_cast<size_t>(std::max<int64_t>(1, options_.max_names_per_request))),
      max_in_flight_bytes_(options_.max_in_flight_bytes > 0
                               ? std::max(options_.max_in_flight_bytes, options_.body_limit_bytes)
                               : 2 * options_.body_limit_bytes) {
  if (options_.tls_cert_file.empty()) return;
  absl::StatusOr<std::unique_ptr<TlsReloader>> tls = TlsReloader::Create(
      {.cert_file = options_.tls_cert_file,
       .key_file = options_.tls_key_file,
       .client_ca_file = options_.tls_client_ca_file,
       .reload_interval = options_.tls_reload_interval,
       .client_role = {.role = "scheduler",
                       .listener = "the scheduler port",
                       .config_key = "http.tls.allowedClientNames",
                       .allowed_names = options_.tls_allowed_client_names,
                       .refusals = metrics.role_refusals(RoleListener::kHttp)}},
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
  {
    std::lock_guard<std::mutex> lock(listen_mu_);  // not while a thread accepts
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    close(listen_fd_);
    listen_fd_ = -1;
  }
  // Drain: connections between requests end now (their input is shut, the
  // owning thread closes them); a request under way is finished and answered
  // with "Connection: close", within its deadlines. Bytes of a request the
  // kernel holds but no thread has read yet make it one under way: the client
  // has sent it (its owning thread reads it within one epoll round).
  const auto drain_until =
      std::chrono::steady_clock::now() +
      absl::ToChronoNanoseconds(options_.request_timeout + options_.write_timeout);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(conns_mu_);
      if (conns_.empty()) break;
      for (Connection* c : conns_) {
        if (c->in_request.load() || c->drain_shut.load()) continue;
        int unread = 0;
        if (ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0) continue;
        if (!c->drain_shut.exchange(true)) shutdown(c->fd, SHUT_RD);
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
      std::lock_guard<std::mutex> lock(listen_mu_);
      if (listen_fd_ < 0) continue;  // stopped
      Accept();
      epoll_event again{};
      again.events = EPOLLIN | EPOLLONESHOT;
      again.data.ptr = &listen_tag;
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &again);
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
    // Pages freed by large requests go back to the system here, off the
    // request path, at most once a tick however many connections asked: a
    // purge walks every allocator arena and takes their locks.
    if (release_wanted_.exchange(false, std::memory_order_relaxed)) ReleaseFreeMemory();
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
    // The kernel's receive time of what each read returns (recvmsg; over TLS
    // a one-byte MSG_PEEK before OpenSSL reads), for the wake stage.
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
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
  c->reserved = 0;
  Charge(*c, 0);
  const bool trim = c->trim || c->in.capacity() > kRetainInputBytes;
  delete c;
  ERR_clear_error();
  if (trim) release_wanted_.store(true, std::memory_order_relaxed);
}

bool HttpServer::Charge(Connection& c, size_t held) {
  held = std::max(held, c.reserved);
  const size_t want = held > http_internal::kFreeInputBytesPerConnection
                          ? held - http_internal::kFreeInputBytesPerConnection
                          : 0;
  if (want == c.charged) return true;
  const int64_t delta = static_cast<int64_t>(want) - static_cast<int64_t>(c.charged);
  if (delta > 0) {
    int64_t now = in_flight_bytes_.load(std::memory_order_relaxed);
    do {
      if (now + delta > max_in_flight_bytes_) return false;
    } while (!in_flight_bytes_.compare_exchange_weak(now, now + delta, std::memory_order_relaxed));
  } else {
    in_flight_bytes_.fetch_add(delta, std::memory_order_relaxed);
  }
  metrics_.AddInFlightBytes(delta);
  c.charged = want;
  return true;
}

}  // namespace neighborly::extender
