#include "common/quantity.h"

#include "gtest/gtest.h"

namespace neighborly {
namespace {

TEST(QuantityTest, ParsesCpu) {
  EXPECT_EQ(*ParseMilliQuantity("500m"), 500);
  EXPECT_EQ(*ParseMilliQuantity("2"), 2000);
  EXPECT_EQ(*ParseMilliQuantity("1.5"), 1500);
  EXPECT_EQ(*ParseMilliQuantity("15800m"), 15800);
}

TEST(QuantityTest, ParsesBytes) {
  EXPECT_EQ(*ParseByteQuantity("4Gi"), 4294967296);
  EXPECT_EQ(*ParseByteQuantity("65842288Ki"), 65842288LL * 1024);
  EXPECT_EQ(*ParseByteQuantity("1G"), 1000000000);
  EXPECT_EQ(*ParseByteQuantity("1e3"), 1000);
  EXPECT_EQ(*ParseByteQuantity("25M"), 25000000);
}

TEST(QuantityTest, RejectsBadInput) {
  EXPECT_FALSE(ParseByteQuantity("").ok());
  EXPECT_FALSE(ParseByteQuantity("Gi").ok());
  EXPECT_FALSE(ParseByteQuantity("4 Gi").ok());
  EXPECT_FALSE(ParseByteQuantity("-1").ok());
  EXPECT_FALSE(ParseByteQuantity("abc").ok());
  EXPECT_FALSE(ParseByteQuantity("1e400").ok());
}

}  // namespace
}  // namespace neighborly
