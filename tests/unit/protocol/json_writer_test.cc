// JsonWriter against the serialiser it stands in for: every string, number and structure must come out as the
// bytes serializeMessage (nlohmann's compact dump, invalid UTF-8 replaced) gives for the same value.
#include "protocol/json_writer.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/envelope.h"

namespace memq {
namespace {

using nlohmann::json;

std::string written(std::string_view text) {
  std::string out;
  appendJsonString(out, text);
  return out;
}

std::string expected(std::string_view text) { return serializeMessage(json(std::string(text))); }

TEST(ProtocolJsonWriterTest, EscapesLikeTheSerialiser) {
  const std::vector<std::string> cases = {
      "",
      "plain ascii",
      "quote \" and backslash \\ and slash /",
      std::string("nul \0 inside", 12),
      "\b\f\n\r\t\x01\x1f\x7f",
      "unicode: é ü 日本語 🚀 \xF4\x8F\xBF\xBF",
      "lone continuation \x80 here",
      "overlong \xC0\xAF and \xE0\x80\xAF",
      "surrogate \xED\xA0\x80 half",
      "above U+10FFFF \xF4\x90\x80\x80",
      "truncated at end \xE6\x97",
      "truncated then ascii \xE6\x97x",
      "invalid lead \xFF\xFE",
      "\xC3",
      "\xF0\x9F\x9A",
      "mixed \xC3\xA9\xC3 \xC3\xA9",
  };
  for (const auto& s : cases) EXPECT_EQ(written(s), expected(s)) << "input bytes: " << json(json::binary_t(
                                                                         std::vector<uint8_t>(s.begin(), s.end())));
}

// Random byte strings, weighted towards what needs care: control characters, quotes, backslashes, bytes of
// multi-byte sequences (valid, truncated and ill-formed) and plain text between them.
TEST(ProtocolJsonWriterTest, RandomBytesMatchTheSerialiser) {
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"a", "Z", " ", "\"", "\\", "\n", "\t", "\x01", "\x1f", "\x7f", "é", "€",
                                           "𝄞", "\xC3", "\xE2\x82", "\xF0\x9D\x84", "\x80", "\xBF", "\xC0", "\xC1",
                                           "\xED\xA0", "\xED\x9F\xBF", "\xEF\xBF\xBD", "\xF4\x90", "\xF5", "\xFF",
                                           // runs of plain text longer than the 8 bytes the writer tests at once
                                           "a plain run", "sixteen bytes ok", "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"};
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const int length = static_cast<int>(rng() % 24);
    for (int k = 0; k < length; ++k) {
      if (rng() % 4 == 0) {
        s += static_cast<char>(rng() % 256);
      } else {
        s += pieces[rng() % pieces.size()];
      }
    }
    ASSERT_EQ(written(s), expected(s)) << "round " << round;
  }
}

// Every byte value at every offset of a long plain run: the writer tests 8 bytes at a time, so a byte that needs
// care must be seen wherever it falls in such a block, and the plain bytes beside it come out as they are.
TEST(ProtocolJsonWriterTest, ABytePlacedAnywhereInAPlainRunIsWrittenAsTheSerialiserWritesIt) {
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t at = 0; at < 24; ++at) {
      std::string s(24, 'x');
      s[at] = static_cast<char>(byte);
      ASSERT_EQ(written(s), expected(s)) << "byte " << byte << " at " << at;
      s += "\xC3\xA9 and more plain text after it";
      ASSERT_EQ(written(s), expected(s)) << "byte " << byte << " at " << at;
    }
  }
}

TEST(ProtocolJsonWriterTest, NumbersMatchTheSerialiser) {
  std::vector<double> doubles = {0.0,  -0.0,     1.0,      -1.0,     0.1,       0.1 + 0.2, 1.0 / 3.0,
                                 1e-7, 1e21,     1e22,     1e15,     1e16,      1e17,      123456789.125,
                                 12.5, 0.000123, 100.0,    7.0e-05,  -2.5e-300, DBL_MAX,   DBL_MIN,
                                 4.9e-324, 0.8414709848078965};
  std::mt19937_64 rng(11);
  for (int k = 0; k < 5000; ++k) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    doubles.push_back(d);  // NaNs and infinities among them
  }
  for (double d : doubles) {
    std::string out;
    JsonWriter w(out);
    w.number(d);
    ASSERT_EQ(out, serializeMessage(json(d))) << d;
  }
  for (int64_t i : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()}) {
    std::string out;
    JsonWriter w(out);
    w.integer(i);
    EXPECT_EQ(out, serializeMessage(json(i)));
  }
  std::string nan;
  JsonWriter(nan).number(std::nan(""));
  EXPECT_EQ(nan, "null");
}

TEST(ProtocolJsonWriterTest, StructuresMatchTheSerialiser) {
  std::string out;
  JsonWriter w(out);
  w.beginObject();
  w.key("a");
  w.beginArray();
  w.endArray();
  w.key("b");
  w.beginObject();
  w.endObject();
  w.key("c");
  w.beginArray();
  w.integer(1);
  w.beginArray();
  w.null();
  w.boolean(true);
  w.endArray();
  w.beginObject();
  w.key("k\"ey");
  w.boolean(false);
  w.endObject();
  w.string("s");
  w.raw("{\"x\":1}");
  w.endArray();
  w.key("d");
  w.number(2.5);
  w.endObject();
  json same = {{"a", json::array()},
               {"b", json::object()},
               {"c", {1, {nullptr, true}, {{"k\"ey", false}}, "s", {{"x", 1}}}},
               {"d", 2.5}};
  EXPECT_EQ(out, serializeMessage(same));
}

}  // namespace
}  // namespace memq
