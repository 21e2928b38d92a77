#include "common/host_port.h"

#include "gtest/gtest.h"

namespace neighborly {
namespace {

TEST(HostPortTest, Parses) {
  absl::StatusOr<HostPort> hp = ParseHostPort("0.0.0.0:8888");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "0.0.0.0");
  EXPECT_EQ(hp->port, 8888);
  EXPECT_EQ(ParseHostPort("[::1]:0")->host, "::1");
}

TEST(HostPortTest, Rejects) {
  EXPECT_FALSE(ParseHostPort("localhost").ok());
  EXPECT_FALSE(ParseHostPort("localhost:99999").ok());
  EXPECT_FALSE(ParseHostPort("localhost:").ok());
  EXPECT_FALSE(ParseHostPort(":80").ok());
}

TEST(HostPortTest, JoinsAndRoundTrips) {
  EXPECT_EQ(JoinHostPort("127.0.0.1", 9090), "127.0.0.1:9090");
  EXPECT_EQ(JoinHostPort("::1", 0), "[::1]:0");
  for (const char* text : {"0.0.0.0:8888", "[::1]:9091", "extender.ns.svc:443"}) {
    absl::StatusOr<HostPort> hp = ParseHostPort(text);
    ASSERT_TRUE(hp.ok()) << text;
    EXPECT_EQ(JoinHostPort(hp->host, hp->port), text);
  }
}

}  // namespace
}  // namespace neighborly
