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

std::string Fixed(double value, int precision) {
  std::string out = "x";  // appends
  AppendFixed(&out, value, precision);
  return out.substr(1);
}

std::string PrintfFixed(double value, int precision) {
  return absl::StrFormat("%.*f", precision, value);
}

// The refusal reasons' numbers (issue 25): what AppendFixed writes is what
// absl::StrFormat's "%.Nf" wrote before, byte for byte.
TEST(AppendFixedTest, WritesWhatPrintfWrites) {
  for (int precision : {0, 1, 2, 3, 6}) {
    // Ties and near-ties in binary and decimal, signs, zeros, magnitudes.
    for (double v : {0.0, -0.0, 0.5, 1.5, 2.5, -0.5, 0.125, 0.375, 1.005, 2.675, 1.0049999,
                     0.001, -0.001, -0.004, 0.995, 99.5, 100.5, 84.49999999, 1e-300, 5e-324,
                     123456789.125, 1e29, -1e29, 4503599627370497.0, 4503599627370495.5,
                     -4503599627370495.5, 0x1p52, 0x1p-60, 0x1p-70, 0.0049999999999999999,
                     0.0050000000000000001, 0.0005, 0.0015, 0.0025}) {
      EXPECT_EQ(Fixed(v, precision), PrintfFixed(v, precision)) << v << " %." << precision << "f";
    }
  }
  std::mt19937_64 random(25);
  for (int i = 0; i < 300'000; ++i) {
    const int precision = static_cast<int>(random() % 4);
    // Slowdowns (1-3x), percentages (0-300), and any magnitude.
    double v;
    switch (i % 3) {
      case 0:
        v = 1.0 + static_cast<double>(random() % 2'000'000) / 1e6;
        break;
      case 1:
        v = static_cast<double>(random() % 30'000'000) / 1e5;
        break;
      default:
        v = std::ldexp(static_cast<double>(random() >> 11), -static_cast<int>(random() % 120));
        if (random() % 4 == 0) v = std::ldexp(std::round(std::ldexp(v, 3)), -3);  // ties
        if (random() % 2) v = -v;
        break;
    }
    ASSERT_EQ(Fixed(v, precision), PrintfFixed(v, precision)) << v << " %." << precision << "f";
  }
}

TEST(AppendFixedTest, OutOfItsRangeFallsBackToPrintf) {
  for (double v : {std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), 1e300, -1e31}) {
    EXPECT_EQ(Fixed(v, 2), PrintfFixed(v, 2)) << v;
  }
  EXPECT_EQ(Fixed(1.0 / 3, 20), PrintfFixed(1.0 / 3, 20));
}

}  // namespace
}  // namespace neighborly
