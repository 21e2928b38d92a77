// The fixture the HTTP server tests share: an HttpServer on 127.0.0.1 (any
// port) over a FakeDecider, stopped after each test.
//
//   class MyTest : public LoopbackServerTest {};
//   TEST_F(MyTest, X) { Start(options); RawClient c(port_); ... }
#ifndef NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_LOOPBACK_SERVER_TEST_H_
#define NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_LOOPBACK_SERVER_TEST_H_

#include <gtest/gtest.h>

#include <memory>

#include "absl/status/statusor.h"
#include "extender/src/http/extender_metrics.h"
#include "extender/src/http/http_server.h"
#include "extender/src/http/http_server_options.h"
#include "extender/src/http/testing/fake_decider.h"

namespace neighborly::extender {

class LoopbackServerTest : public ::testing::Test {
 protected:
  // Starts the server with `options` on loopback; the port is in port_.
  void StartServer(HttpServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options, decider_, metrics_);
    absl::StatusOr<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status();
    ASSERT_GT(*port, 0);
    port_ = *port;
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  FakeDecider decider_;
  ExtenderMetrics metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

}  // namespace neighborly::extender

#endif  // NEIGHBORLY_EXTENDER_SRC_HTTP_TESTING_LOOPBACK_SERVER_TEST_H_
