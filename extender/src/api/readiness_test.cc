#include "extender/src/api/readiness.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace neighborly::extender {
namespace {

using ::testing::HasSubstr;

TEST(ReadinessTest, WithAStateFileItWaitsForTheShareOfItsNodes) {
  FakeClock clock;
  Readiness readiness({.report_interval = absl::Seconds(1),
                       .grace = absl::Seconds(6),
                       .known_node_share = 0.9,
                       .max_wait = absl::Seconds(60)},
                      /*nodes_in_state=*/6, clock);
  EXPECT_EQ(readiness.nodes_needed(), 6u);  // ceil(5.4)
  EXPECT_THAT(readiness.Check(0), HasSubstr("0 node(s) reported, 6 awaited"));
  clock.Advance(absl::Seconds(30));  // well past interval + grace: still not ready
  EXPECT_THAT(readiness.Check(5), HasSubstr("5 node(s) reported, 6 awaited"));
  EXPECT_EQ(readiness.Check(6), "");
  // Latched: a node aging out later does not take the replica out of the Service.
  EXPECT_EQ(readiness.Check(2), "");
}

TEST(ReadinessTest, MaxWaitEndsTheWaitForAFleetThatShrank) {
  FakeClock clock;
  Readiness readiness({.report_interval = absl::Seconds(1),
                       .grace = absl::Seconds(6),
                       .known_node_share = 0.5,
                       .max_wait = absl::Seconds(60)},
                      /*nodes_in_state=*/1000, clock);
  EXPECT_EQ(readiness.nodes_needed(), 500u);
  clock.Advance(absl::Seconds(59));
  EXPECT_THAT(readiness.Check(100), HasSubstr("readiness.maxWait in 1s"));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(readiness.Check(100), "");
}

TEST(ReadinessTest, WithoutAStateFileItWaitsOneIntervalPlusGrace) {
  FakeClock clock;
  Readiness readiness({.report_interval = absl::Seconds(1),
                       .grace = absl::Seconds(6),
                       .known_node_share = 0.9,
                       .max_wait = absl::Seconds(60)},
                      /*nodes_in_state=*/0, clock);
  EXPECT_EQ(readiness.nodes_needed(), 0u);
  EXPECT_THAT(readiness.Check(40), HasSubstr("ready 7s from now"));
  clock.Advance(absl::Milliseconds(6999));
  EXPECT_NE(readiness.Check(40), "");
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(readiness.Check(40), "");
}

TEST(ReadinessTest, AShareOfZeroStillWaitsForOneNode) {
  FakeClock clock;
  Readiness readiness({.report_interval = absl::Seconds(1),
                       .grace = absl::Seconds(6),
                       .known_node_share = 0,
                       .max_wait = absl::Seconds(60)},
                      /*nodes_in_state=*/10, clock);
  EXPECT_EQ(readiness.nodes_needed(), 1u);
  EXPECT_NE(readiness.Check(0), "");
  EXPECT_EQ(readiness.Check(1), "");
}

}  // namespace
}  // namespace neighborly::extender
