// base64 (daemon/util/base64.h): RFC 4648's test vectors, every byte value through a round trip, and what a decode
// refuses; and the text form of line ranges (daemon/model/line_range.h), which the store and the journal read back.
#include "daemon/util/base64.h"

#include <gtest/gtest.h>

#include <string>

#include "daemon/model/line_range.h"

namespace memq {
namespace {

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64Decode("Zm9vYmE="), "fooba");
}

TEST(Base64, EveryByteRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t cut = 0; cut < 4; ++cut) {
    const std::string part = bytes.substr(cut);
    EXPECT_EQ(base64Decode(base64Encode(part)), part);
  }
}

TEST(Base64, MalformedTextIsRefused) {
  EXPECT_FALSE(base64Decode("Zm9").has_value());     // not a multiple of 4
  EXPECT_FALSE(base64Decode("Zm9*").has_value());    // not in the alphabet
  EXPECT_FALSE(base64Decode("Zg==Zg==").has_value());  // padding before the end
  EXPECT_FALSE(base64Decode("Z===").has_value());    // too much padding
  EXPECT_FALSE(base64Decode("Zg=a").has_value());    // a character after padding
}

TEST(LineRangeText, FormatsAndReadsBack) {
  const LineRanges lines{{40, 60}, {72, 72}};
  EXPECT_EQ(formatRanges(lines), "40-60,72");
  EXPECT_EQ(parseRangeList("40-60,72"), lines);
  EXPECT_EQ(parseRangeList("9-3"), (LineRanges{{9, 3}}));  // read as written; validation refuses it
  EXPECT_EQ(parseRangeList("99999999999"), (LineRanges{{0, 0}}));  // too large: line 0, refused later
  for (const char* bad : {"", ",", "1,", ",1", "1-", "-1", "1-2-3", "a", "1 2", "1;2"}) {
    EXPECT_FALSE(parseRangeList(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace memq
