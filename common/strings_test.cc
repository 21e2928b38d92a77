#include "common/strings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_format.h"

namespace neighborly {
namespace {

std::string Printf(int64_t value, int shift) {
  return absl::StrFormat("%.1f", std::ldexp(static_cast<double>(value), -shift));
}

std::string Fast(int64_t value, int shift) {
  std::string out = "x";
  AppendOneDecimal(&out, value, shift);
  return out.substr(1);
}

TEST(AppendOneDecimalTest, ReadsAsTheUsualUnits) {
  EXPECT_EQ(Fast(int64_t{3} << 29, 30), "1.5");
  EXPECT_EQ(Fast(int64_t{20} << 30, 30), "20.0");
  EXPECT_EQ(Fast(int64_t{512} << 20, 20), "512.0");
  EXPECT_EQ(Fast(0, 30), "0.0");
  EXPECT_EQ(Fast(int64_t{1} << 20, 30), "0.0");  // 0.00098 GiB
}

TEST(AppendOneDecimalTest, RoundsExactlyAsPrintfDoes) {
  // Ties (the quotient's tenths end in exactly .5) round half to even, as
  // printf does with the exact binary value: 0.25 -> 0.2, 0.75 -> 0.8.
  for (int shift : {1, 2, 10, 20, 30, 40}) {
    for (int64_t quarters = 0; quarters < 400; ++quarters) {
      const int64_t value = shift >= 2 ? quarters << (shift - 2) : quarters;
      EXPECT_EQ(Fast(value, shift), Printf(value, shift)) << value << " >> " << shift;
    }
  }
  EXPECT_EQ(Fast(int64_t{1} << 28, 30), "0.2");
  EXPECT_EQ(Fast(int64_t{3} << 28, 30), "0.8");
  std::mt19937_64 random(15);
  for (int i = 0; i < 200'000; ++i) {
    const int shift = 1 + static_cast<int>(random() % 62);
    const int64_t value = static_cast<int64_t>(random() >> (11 + random() % 53));
    ASSERT_EQ(Fast(value, shift), Printf(value, shift)) << value << " >> " << shift;
  }
}

TEST(AppendOneDecimalTest, OutOfItsExactRangeFallsBackToPrintf) {
  for (int64_t value : {int64_t{-1}, int64_t{-(int64_t{5} << 29)}, int64_t{1} << 53,
                        std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(Fast(value, 30), Printf(value, 30)) << value;
  }
  EXPECT_EQ(Fast(12345, 0), Printf(12345, 0));
  EXPECT_EQ(Fast(12345, 70), Printf(12345, 70));
}

}  // namespace
}  // namespace neighborly
