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

}  // namespace
}  // namespace neighborly
