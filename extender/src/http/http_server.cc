#include "extender/src/http/http_server.h"

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "extender/src/http/extender_codec.h"
#include "spdlog/spdlog.h"

namespace neighborly::extender {
namespace {

// Set on the thread that serves connections accepted beyond max_connections:
// every request on them is answered 503 by the pre-routing handler. httplib
// gives the task queue no handle on the socket, so this flag is how the queue
// tells the request path that the connection is an overflow one.
thread_local bool tl_overflow_connection = false;

// Set by a request whose headers took unusual memory: once its connection is
// over (and the headers freed), the worker returns free heap pages to the
// system (malloc_trim), so that a header flood leaves no RSS behind.
thread_local bool tl_trim_after_connection = false;

// More header fields than any scheduler or operator client sends; a request
// with more is refused (431) and its connection closed. (cpp-httplib 0.11 has
// read them all by then: the limit bounds what stays, not the peak.)
constexpr size_t kMaxHeaderFields = 100;

// httplib hands every accepted connection to a TaskQueue as one task that lives
// as long as the connection (keep-alive included). This queue serves up to
// `workers` connections at once, queues up to `max_connections` in total, and
// sends the rest to one overflow thread that answers them 503 and closes.
class ConnectionQueue final : public httplib::TaskQueue {
 public:
  ConnectionQueue(size_t workers, size_t max_connections, ExtenderMetrics& metrics)
      : max_connections_(std::max(max_connections, workers)), metrics_(metrics) {
    for (size_t i = 0; i < workers; ++i) {
      threads_.emplace_back([this] { Work(jobs_, false); });
    }
    threads_.emplace_back([this] { Work(overflow_, true); });
  }

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (connections_ >= max_connections_) {
        overflow_.push_back(std::move(fn));
        metrics_.RecordRejectedConnection();
      } else {
        ++connections_;
        jobs_.push_back(std::move(fn));
      }
    }
    cv_.notify_all();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Work(std::deque<std::function<void()>>& queue, bool overflow) {
    tl_overflow_connection = overflow;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue.empty() || shutdown_; });
        if (queue.empty()) return;  // shut down and drained
        fn = std::move(queue.front());
        queue.pop_front();
      }
      fn();
      if (tl_trim_after_connection) {
        tl_trim_after_connection = false;
        ::malloc_trim(0);
      }
      if (!overflow) {
        std::lock_guard<std::mutex> lock(mu_);
        --connections_;
      }
    }
  }

  const size_t max_connections_;
  ExtenderMetrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> overflow_;
  size_t connections_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

std::optional<Verb> VerbOf(const std::string& path) {
  if (path == "/filter") return Verb::kFilter;
  if (path == "/prioritize") return Verb::kPrioritize;
  return std::nullopt;
}

void SetJsonError(httplib::Response& res, int status, std::string_view message) {
  std::string body;
  EncodeError(message, body);
  res.status = status;
  res.set_content(body, "application/json");
}

// A reply after which the connection must close (its body was not read, or
// the request was refused as ambiguous). cpp-httplib 0.11 keeps a connection
// open whatever the response's own Connection header says, and would parse
// the unread body as the next request; it closes a connection only when
// writing a reply fails. So the body goes out through a content provider that
// writes all of it and then reports failure: the client gets the complete
// reply, with "Connection: close", and the server closes the socket.
void CloseAfterReply(httplib::Response& res) {
  std::string body = std::move(res.body);
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  res.headers.erase("Content-Type");
  res.set_header("Connection", "close");
  const size_t length = body.size();
  res.set_content_provider(
      length, type.c_str(),
      [body = std::move(body)](size_t offset, size_t, httplib::DataSink& sink) {
        sink.write(body.data() + offset, body.size() - offset);
        return false;  // close the connection after this reply
      });
}

void SetJsonErrorAndClose(httplib::Response& res, int status, std::string_view message) {
  SetJsonError(res, status, message);
  CloseAfterReply(res);
}

// Request smuggling's preconditions: more than one Content-Length, or a
// Content-Length beside a Transfer-Encoding (RFC 9112 section 6.3: a server
// must treat that as an error and close). Returns the problem, or empty.
std::string AmbiguousFraming(const httplib::Request& req) {
  const size_t lengths = req.get_header_value_count("Content-Length");
  if (lengths > 1) {
    return absl::StrCat(lengths, " Content-Length headers (at most one is allowed)");
  }
  if (lengths == 1 && req.has_header("Transfer-Encoding")) {
    return "both Content-Length and Transfer-Encoding (the body's length is ambiguous)";
  }
  if (req.get_header_value_count("Transfer-Encoding") > 1) {
    return "more than one Transfer-Encoding header";
  }
  return "";
}

std::pair<time_t, time_t> SecUsec(absl::Duration d) {
  const int64_t us = std::max<int64_t>(absl::ToInt64Microseconds(d), 1000);
  return {static_cast<time_t>(us / 1'000'000), static_cast<time_t>(us % 1'000'000)};
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, Decider& decider, ExtenderMetrics& metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      handler_(decider, &metrics,
               static_cast<size_t>(std::max<int64_t>(1, options_.max_names_per_request))) {
  if (!options_.tls_cert_file.empty()) {
    absl::StatusOr<std::unique_ptr<TlsReloader>> tls = TlsReloader::Create(
        {.cert_file = options_.tls_cert_file,
         .key_file = options_.tls_key_file,
         .client_ca_file = options_.tls_client_ca_file,
         .reload_interval = options_.tls_reload_interval},
        clock_, [&metrics](bool ok) { metrics.RecordTlsReload(TlsListener::kHttp, ok); });
    if (tls.ok()) {
      tls_ = std::move(*tls);
    } else {
      tls_status_ = tls.status();  // reported by Start()
    }
  }
  if (tls_ != nullptr) {
    server_ = std::make_unique<httplib::SSLServer>(
        [tls = tls_.get()](SSL_CTX& ctx) { return tls->Configure(ctx); });
  } else {
    server_ = std::make_unique<httplib::Server>();  // plaintext, or TLS that Start() refuses
  }
  httplib::Server& server = *server_;  // configured alike with or without TLS
  const size_t workers = static_cast<size_t>(std::max(1, options_.worker_threads));
  const size_t max_connections = static_cast<size_t>(std::max(1, options_.max_connections));
  server.new_task_queue = [workers, max_connections, &metrics] {
    return new ConnectionQueue(workers, max_connections, metrics);
  };
  const auto [read_s, read_us] = SecUsec(options_.read_timeout);
  server.set_read_timeout(read_s, read_us);
  const auto [write_s, write_us] = SecUsec(options_.write_timeout);
  server.set_write_timeout(write_s, write_us);
  server.set_keep_alive_timeout(static_cast<time_t>(std::max<int64_t>(
      1, absl::ToInt64Seconds(absl::Ceil(options_.keep_alive_timeout, absl::Seconds(1))))));
  server.set_keep_alive_max_count(1'000'000);
  server.set_payload_max_length(static_cast<size_t>(options_.body_limit_bytes));
  server.set_tcp_nodelay(true);

  server.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return PreRoute(req, res); });
  server.set_expect_100_continue_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        const int status = CheckDeclaredLength(req, res);
        if (status != 0) CloseAfterReply(res);  // a body sent anyway is not read
        return status == 0 ? 100 : status;
      });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return;  // already answered
    std::string message = res.status == 404
                              ? absl::StrCat("no route for ", req.method, " ", req.path)
                              : absl::StrCat("request failed with HTTP status ", res.status);
    SetJsonError(res, res.status, message);
  });
  if (!options_.scheduler_verbs) return;
  server.Post("/filter", [this](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
    HandleScheduler(Verb::kFilter, req, res, reader);
  });
  server.Post("/prioritize", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
    HandleScheduler(Verb::kPrioritize, req, res, reader);
  });
}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::CheckDeclaredLength(const httplib::Request& req, httplib::Response& res) {
  if (req.has_header("Content-Length")) {
    const std::optional<uint64_t> length =
        ParseInt<uint64_t>(Trim(req.get_header_value("Content-Length")));
    if (!length.has_value()) {
      SetJsonError(res, 400, "invalid Content-Length header");
      return 400;
    }
    if (*length > static_cast<size_t>(options_.body_limit_bytes)) {
      SetJsonError(res, 413,
                   absl::StrCat("request body of ", *length, " bytes exceeds the limit of ",
                                options_.body_limit_bytes, " bytes (http.bodyLimitBytes)"));
      return 413;
    }
    return 0;
  }
  if (req.get_header_value("Transfer-Encoding").find("chunked") == std::string::npos) {
    SetJsonError(res, 411, "Content-Length required");
    return 411;
  }
  return 0;
}

httplib::Server::HandlerResponse HttpServer::PreRoute(const httplib::Request& req,
                                                      httplib::Response& res) {
  const std::optional<Verb> verb = VerbOf(req.path);
  if (tl_overflow_connection) {
    SetJsonErrorAndClose(res, 503, "too many connections; retry later");
    if (verb) metrics_.RecordRequest(*verb, 503, absl::ZeroDuration());
    return httplib::Server::HandlerResponse::Handled;
  }
  if (req.headers.size() > kMaxHeaderFields) {
    tl_trim_after_connection = true;
    SetJsonErrorAndClose(
        res, 431,
        absl::StrCat(req.headers.size(), " header fields (at most ", kMaxHeaderFields, ")"));
    if (verb) metrics_.RecordRequest(*verb, 431, absl::ZeroDuration());
    return httplib::Server::HandlerResponse::Handled;
  }
  if (filter_ && filter_(req, res)) return httplib::Server::HandlerResponse::Handled;
  if (const std::string ambiguous = AmbiguousFraming(req); !ambiguous.empty()) {
    SetJsonErrorAndClose(res, 400, absl::StrCat("refused: ", ambiguous));
    if (verb) metrics_.RecordRequest(*verb, 400, absl::ZeroDuration());
    return httplib::Server::HandlerResponse::Handled;
  }
  if (req.method == "POST" && verb.has_value() && options_.scheduler_verbs) {
    const int status = CheckDeclaredLength(req, res);
    if (status != 0) {
      // The body (if the client sends it) is never read: the connection closes.
      CloseAfterReply(res);
      metrics_.RecordRequest(*verb, status, absl::ZeroDuration());
      return httplib::Server::HandlerResponse::Handled;
    }
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

void HttpServer::HandleScheduler(Verb verb, const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline =
      start + std::chrono::microseconds(absl::ToInt64Microseconds(options_.request_timeout));
  ScratchPool::Lease scratch = handler_.scratch().Acquire();
  scratch->body.Clear();
  if (const std::optional<uint64_t> length =
          ParseInt<uint64_t>(Trim(req.get_header_value("Content-Length")))) {
    scratch->body.Reserve(*length + kJsonPadding);
  }
  bool too_large = false;
  bool late = false;
  const bool read = reader([&](const char* data, size_t n) {
    if (scratch->body.appended() + n > static_cast<size_t>(options_.body_limit_bytes)) {
      too_large = true;
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      late = true;
      return false;
    }
    scratch->body.Append(data, n);
    return true;
  });
  int status;
  if (!read) {
    if (too_large) {
      status = 413;
      SetJsonError(res, status,
                   absl::StrCat("request body exceeds the limit of ", options_.body_limit_bytes,
                                " bytes (http.bodyLimitBytes)"));
    } else if (late) {
      status = 408;
      SetJsonError(res, status, "request body not received within http.requestTimeout");
    } else {
      status = 400;
      SetJsonError(res, status, "could not read the request body (truncated or timed out)");
    }
    // The rest of the body is unread: the connection closes after the reply.
    CloseAfterReply(res);
  } else {
    scratch->body.Seal();
    status = handler_.Handle(verb, *scratch);
    res.status = status;
    res.set_content(scratch->reply.data(), scratch->reply.size(), "application/json");
  }
  metrics_.RecordRequest(verb, status, absl::FromChrono(std::chrono::steady_clock::now() - start));
}

absl::StatusOr<int> HttpServer::Start() {
  if (started_) return absl::FailedPreconditionError("HTTP server already started");
  if (!tls_status_.ok() || !server_->is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serve HTTPS with certificate ", options_.tls_cert_file, " and key ",
                     options_.tls_key_file,
                     options_.tls_client_ca_file.empty()
                         ? ""
                         : absl::StrCat(" and client CA ", options_.tls_client_ca_file),
                     ": ",
                     tls_status_.ok() ? absl::string_view("OpenSSL refused the TLS setup")
                                      : tls_status_.message()));
  }
  int port;
  if (options_.port == 0) {
    port = server_->bind_to_any_port(options_.host);
    if (port < 0) port = -1;
  } else {
    port = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on HTTP address ", options_.host, ":", options_.port));
  }
  port_ = port;
  started_ = true;
  auto returned = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, returned] {
    if (!server_->listen_after_bind()) spdlog::error("HTTP server stopped with an error");
    returned->store(true);
  });
  // httplib's stop() does nothing until listen_after_bind() has marked the
  // server running: a Stop() right after Start() (SIGTERM just after the
  // "listening" line) then left the listen loop, and the process, running
  // for good. Return only once it runs (microseconds).
  while (!server_->is_running() && !returned->load()) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return port_;
}

void HttpServer::Stop() {
  if (!started_) return;
  started_ = false;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace neighborly::extender
