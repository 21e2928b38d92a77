#include "extender/src/http/json_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace neighborly::extender {
namespace {

std::string Quote(std::string_view s) {
  std::string out;
  AppendJsonString(s, out);
  return out;
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quote("line\nbreak\ttab\x01"), "\"line\\nbreak\\ttab\\u0001\"");
}

TEST(JsonWriterTest, LeavesComparisonsReadable) {
  EXPECT_EQ(Quote("membw 84% > 80% & <x>"), "\"membw 84% > 80% & <x>\"");
  EXPECT_EQ(Quote("sep \xE2\x80\xA8"), "\"sep \\u2028\"");
}

TEST(JsonWriterTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(Quote("NUMA-Knoten \xC3\xBC"), "\"NUMA-Knoten \xC3\xBC\"");
  EXPECT_EQ(Quote("bad \xFF byte"), "\"bad \xEF\xBF\xBD byte\"");
  EXPECT_EQ(Quote("cut \xE2\x82"), "\"cut \xEF\xBF\xBD\xEF\xBF\xBD\"");
  // Whatever the bytes, the result parses as JSON.
  const std::string nasty("\x00\x1f\"\\\xC0\xAF\xED\xA0\x80\xE2\x80\xA8", 12);
  EXPECT_TRUE(nlohmann::json::accept(Quote(nasty)));
}

// The escaping decision is made 8 bytes at a time: every byte value, at every
// position of a word and of the tail, must be caught exactly as one byte alone is.
TEST(JsonWriterTest, EveryByteAtEveryPositionIsEscapedLikeAlone) {
  for (int b = 0; b < 256; ++b) {
    const std::string alone = Quote(std::string(1, static_cast<char>(b)));
    const std::string inner = alone.substr(1, alone.size() - 2);
    for (size_t pos = 0; pos < 19; ++pos) {
      std::string s(19, 'a');
      s[pos] = static_cast<char>(b);
      const std::string expected =
          "\"" + std::string(pos, 'a') + inner + std::string(18 - pos, 'a') + "\"";
      ASSERT_EQ(Quote(s), expected) << "byte " << b << " at " << pos;
    }
  }
  // Plain bytes stay as they are; '"', '\\' and controls never do.
  EXPECT_EQ(Quote("abcdefgh\"ijklmnop"), "\"abcdefgh\\\"ijklmnop\"");
  EXPECT_EQ(Quote(std::string(64, '~')), "\"" + std::string(64, '~') + "\"");
}

TEST(JsonWriterTest, AppendsIntegers) {
  std::string out;
  AppendInt(-42, out);
  AppendInt(7, out);
  EXPECT_EQ(out, "-427");
}

}  // namespace
}  // namespace neighborly::extender
