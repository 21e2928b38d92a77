#include "extender/src/http/json_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
    // Every length from a short string (one padded word) through overlapping
    // tails to several whole words.
    for (size_t len = 1; len <= 40; ++len) {
      for (size_t pos = 0; pos < len; ++pos) {
        std::string s(len, 'a');
        s[pos] = static_cast<char>(b);
        const std::string expected =
            "\"" + std::string(pos, 'a') + inner + std::string(len - 1 - pos, 'a') + "\"";
        ASSERT_EQ(Quote(s), expected) << "byte " << b << " at " << pos << " of " << len;
      }
    }
  }
  // Plain bytes stay as they are; '"', '\\' and controls never do.
  EXPECT_EQ(Quote("abcdefgh\"ijklmnop"), "\"abcdefgh\\\"ijklmnop\"");
  EXPECT_EQ(Quote(std::string(64, '~')), "\"" + std::string(64, '~') + "\"");
  EXPECT_EQ(Quote(""), "\"\"");
  EXPECT_EQ(Quote(std::string(7, ' ')), "\"" + std::string(7, ' ') + "\"");
}

// Both kernels name the first byte that needs escaping, wherever it is.
TEST(JsonWriterTest, BothPlainPrefixKernelsFindTheFirstByteToEscape) {
  for (int b = 0; b < 256; ++b) {
    const unsigned char c = static_cast<unsigned char>(b);
    const bool special = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
    for (size_t len = 0; len <= 40; ++len) {
      for (size_t pos = 0; pos <= len; ++pos) {
        std::string s(len, 'x');
        if (pos < len) s[pos] = static_cast<char>(b);
        if (pos + 1 < len) s[len - 1] = '"';  // a later special byte must not win
        const size_t expected = pos < len && special ? pos : (pos + 1 < len ? len - 1 : len);
        ASSERT_EQ(internal::JsonPlainPrefix(s), expected) << b << " at " << pos << " of " << len;
        ASSERT_EQ(internal::JsonPlainPrefixPortable(s), expected)
            << b << " at " << pos << " of " << len;
      }
    }
  }
}

// The appender writes exactly what the append functions write, across its
// growth steps and around strings that take the escaping path.
TEST(JsonWriterTest, AppenderWritesWhatTheAppendFunctionsWrite) {
  const std::vector<std::string> pieces = {"node-1",
                                           "",
                                           "a \"quoted\" reason",
                                           "tab\there",
                                           std::string(5000, 'n'),
                                           "caf\xC3\xA9",
                                           "bad \xFF byte",
                                           "line\xE2\x80\xA8sep",
                                           "membw 84% > 80%"};
  std::string expected = "prefix:";
  std::string actual = "prefix:";
  {
    JsonAppender json(actual);
    for (int round = 0; round < 40; ++round) {
      for (const std::string& piece : pieces) {
        AppendJsonString(piece, expected);
        json.String(piece);
        expected += ',';
        json.Char(',');
        AppendInt(round * -12345, expected);
        json.Int(round * -12345);
        expected += "}{";
        json.Raw("}{");
      }
    }
  }
  EXPECT_EQ(actual.size(), expected.size());
  EXPECT_EQ(actual, expected);
}

TEST(JsonWriterTest, AppendsIntegers) {
  std::string out;
  AppendInt(-42, out);
  AppendInt(7, out);
  EXPECT_EQ(out, "-427");
}

}  // namespace
}  // namespace neighborly::extender
