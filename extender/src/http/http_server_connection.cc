#include <fcntl.h>
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
#include "absl/strings/str_format.h"
#include "common/strings.h"
#include "extender/src/http/extender_codec.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/http_server_internal.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {

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
    if (c.over_budget && !more && !c.close_after_write) {
      if (c.verb) metrics_.RecordRequest(*c.verb, 503, absl::ZeroDuration());
      metrics_.RecordOverBudget();
      QueueError(c, 503, OverBudgetMessage(), /*close=*/true);
    }
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

namespace {

// The wake stage's start: the kernel's receive timestamp (SO_TIMESTAMPNS) of
// the data a recvmsg returned or, with MSG_PEEK, of the oldest data waiting.
void NoteArrival(HttpServer::Connection& c, msghdr& msg) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
      timespec received{};
      std::memcpy(&received, CMSG_DATA(cm), sizeof(received));
      c.wake_ns = http_internal::RealtimeNs() -
                  (static_cast<int64_t>(received.tv_sec) * 1'000'000'000 + received.tv_nsec);
    }
  }
}

// recvmsg with room for the receive timestamp.
ssize_t ReceiveTimed(HttpServer::Connection& c, char* buf, size_t size, int flags) {
  iovec iov{buf, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t r = recvmsg(c.fd, &msg, flags);
  if (r > 0) NoteArrival(c, msg);
  return r;
}

}  // namespace

bool HttpServer::ReadAvailable(Connection& c) {
  thread_local std::unique_ptr<char[]> buffer(new char[kReadChunk]);
  char* buf = buffer.get();
  size_t total = 0;
  // Before a request's head is parsed, read no more than a connection may hold
  // for free: the head then reserves the declared body (CheckHead) before
  // more is read, instead of each of many large requests taking a share of
  // the budget and none finishing. What is left in the socket is reported
  // again once the connection is re-armed (level-triggered).
  const auto may_read = [&] {
    return c.have_head || c.held_input() < http_internal::kFreeInputBytesPerConnection ||
           (c.ssl != nullptr && SSL_pending(c.ssl) > 0);  // not reported again by epoll
  };
  if (c.ssl != nullptr) {
    // OpenSSL reads with read(2), which drops the timestamp: peek at the
    // oldest waiting byte first (one more system call per wake-up, ~1 us).
    char peeked;
    ReceiveTimed(c, &peeked, 1, MSG_PEEK | MSG_DONTWAIT);
  }
  while (total < kMaxReadPerEvent && may_read()) {
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
      const ssize_t r = ReceiveTimed(c, buf, kReadChunk, 0);
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
    if (!Charge(c, c.held_input() + n)) {
      // These bytes are dropped: the request they belong to is answered 503
      // and the connection closed (OnEvent), the requests before it served.
      c.over_budget = true;
      return true;
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
        release_wanted_.store(true, std::memory_order_relaxed);  // the reaper returns the pages
      } else {
        c.in.clear();
      }
      c.in_pos = 0;
    } else if (c.in_pos >= c.in.size() / 2) {
      c.in.erase(0, c.in_pos);  // a pipelined request follows
      c.in_pos = 0;
    }
    c.reserved = 0;
    Charge(c, c.held_input());  // smaller now: never refused
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
  if (c.framing.kind == BodyFraming::kLength) {
    // Admitted whole or not at all: a request that would pass the budget is
    // refused before any of its body is read, and one admitted can always be
    // read to its end (charging as bytes arrive let many large requests each
    // take a share and none complete). A chunked body is charged as it comes.
    c.reserved = c.head_bytes + static_cast<size_t>(c.framing.length);
    if (!Charge(c, c.held_input())) {
      c.reserved = 0;
      metrics_.RecordOverBudget();
      return refuse(503, OverBudgetMessage());
    }
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

std::string HttpServer::OverBudgetMessage() const {
  return absl::StrCat("the server holds too many request bytes at once (", max_in_flight_bytes_,
                      " bytes, http.maxInFlightBytes); retry later");
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
  const int64_t start_ns = NowNs();
  const int64_t receive_ns = start_ns - c.request_start_ns;
  const int64_t wake_ns = c.wake_ns;
  metrics_.RecordStage(Stage::kReceive, receive_ns);
  if (wake_ns >= 0) metrics_.RecordStage(Stage::kWake, wake_ns);
  int status;
  int64_t handled_ns;
  {
    ScratchPool::Lease scratch = handler_.scratch().Acquire();
    scratch->body.Clear();
    scratch->body.Reserve(body.size() + kJsonPadding);
    scratch->body.Append(body.data(), body.size());
    scratch->body.Seal();
    status = handler_.Handle(verb, *scratch);
    handled_ns = NowNs();
    if (options_.server_timing) {
      auto ms = [](int64_t ns) { return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e6); };
      httplib::Headers timing;
      timing.emplace(
          "Server-Timing",
          absl::StrCat(wake_ns >= 0 ? absl::StrCat("wake;dur=", ms(wake_ns), ", ") : "",
                       "receive;dur=", ms(receive_ns), ", handle;dur=", ms(handled_ns - start_ns)));
      QueueReply(c, status, "application/json", scratch->reply, &timing, close);
    } else {
      QueueReply(c, status, "application/json", scratch->reply, nullptr, close);
    }
  }
  metrics_.RecordStage(Stage::kHandle, handled_ns - start_ns);
  c.wake_ns = -1;  // the next request's own read sets it
  c.replied_ns = NowNs();
  metrics_.RecordRequest(verb, status, absl::Nanoseconds(c.replied_ns - start_ns));
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
  if (c.replied_ns != 0) {
    metrics_.RecordStage(Stage::kSend, NowNs() - c.replied_ns);
    c.replied_ns = 0;
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
  if (c.in.capacity() > kRetainInputBytes || c.chunked_body.capacity() > kRetainInputBytes) {
    c.trim = true;
  }
  std::string().swap(c.in);
  std::string().swap(c.chunked_body);
  c.in_pos = 0;
  c.reserved = 0;
  Charge(c, 0);
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
