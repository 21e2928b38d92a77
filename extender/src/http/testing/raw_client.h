// A raw TCP client for HTTP server tests: sends exactly the bytes given
// (malformed framing, trickles, pipelining) and reads what comes back. Reads
// give up after 20 s, so a broken server fails a test instead of hanging it.
//
//   RawClient c(port);
//   c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
//   std::string reply = c.ReadResponse();
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_RAW_CLIENT_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_RAW_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

namespace neighborly::extender::testing {

class RawClient {
 public:
  // Sends and reads give up after `timeout_seconds`.
  explicit RawClient(int port, int timeout_seconds = 20) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{timeout_seconds, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // One response: headers, then Content-Length bytes of body.
  std::string ReadResponse() {
    std::string in;
    char buf[4096];
    size_t header_end = std::string::npos;
    size_t want = std::string::npos;
    for (;;) {
      if (header_end == std::string::npos) {
        header_end = in.find("\r\n\r\n");
        if (header_end != std::string::npos) {
          const size_t cl = in.find("Content-Length: ");
          want = header_end + 4 +
                 (cl != std::string::npos && cl < header_end ? std::stoul(in.substr(cl + 16)) : 0);
        }
      }
      if (want != std::string::npos && in.size() >= want) return in.substr(0, want);
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return in;
      in.append(buf, static_cast<size_t>(n));
    }
  }

  // Everything the server sends until it closes, of which the first `keep`
  // bytes are returned; `closed` says whether it closed (false: the receive
  // timeout expired with the connection open).
  std::string ReadUntilClosed(bool& closed, size_t keep = std::string::npos) {
    std::string in;
    char buf[65536];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        closed = true;
        return in;
      }
      if (n < 0) {
        closed = false;
        return in;
      }
      if (in.size() < keep) in.append(buf, std::min(static_cast<size_t>(n), keep - in.size()));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace neighborly::extender::testing

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_RAW_CLIENT_H_
