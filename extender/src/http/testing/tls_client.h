// A TLS client on a raw socket, for HTTP server tests: to see the certificate
// the server presents (httplib's client does not show it), to keep one
// connection open across a reload, and to exchange raw requests.
//
//   TlsClient c(port, "client.crt", "client.key");   // handshakes in the constructor
//   std::string reply = c.Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_TLS_CLIENT_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_TLS_CLIENT_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace neighborly::extender::testing {

// It trusts anything: a test checks the peer certificate itself.
class TlsClient {
 public:
  // `cert`/`key`: a client certificate to present, or empty.
  TlsClient(int port, const std::string& cert = "", const std::string& key = "") {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    if (!cert.empty() && (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1 ||
                          SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1)) {
      ADD_FAILURE() << "cannot load client certificate " << cert;
    }
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{20, 0};  // a broken server fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    handshake_ok_ = SSL_connect(ssl_) == 1;
    if (X509* peer = handshake_ok_ ? SSL_get0_peer_certificate(ssl_) : nullptr) {
      subject_ = CommonName(X509_get_subject_name(peer));
      issuer_ = CommonName(X509_get_issuer_name(peer));
    }
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
    SSL_CTX_free(ctx_);
  }

  bool handshake_ok() const { return handshake_ok_; }
  const std::string& subject() const { return subject_; }  // CN of the server's certificate
  const std::string& issuer() const { return issuer_; }

  // Sends a request on this connection; the response, or "" when the server
  // refused the connection (with TLS 1.3 a refused client certificate shows here).
  std::string Exchange(const std::string& request) {
    if (!handshake_ok_) return "";
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) {
      ERR_clear_error();
      return "";
    }
    std::string in;
    char buf[4096];
    for (;;) {
      const size_t header_end = in.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const size_t cl = in.find("Content-Length: ");
        const size_t want = header_end + 4 + (cl < header_end ? std::stoul(in.substr(cl + 16)) : 0);
        if (in.size() >= want) return in.substr(0, want);
      }
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n <= 0) {
        ERR_clear_error();
        return in;
      }
      in.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  static std::string CommonName(X509_NAME* name) {
    char cn[256] = {};
    if (X509_NAME_get_text_by_NID(name, NID_commonName, cn, sizeof(cn)) < 0) return "";
    return cn;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool handshake_ok_ = false;
  std::string subject_;
  std::string issuer_;
};

}  // namespace neighborly::extender::testing

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_TLS_CLIENT_H_
