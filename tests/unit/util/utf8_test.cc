// Tests for daemon/util/utf8: validation, ill-formed input as U+FFFD, UTF-16 round trips, and the reference's
// UTF-16-unit truncation, as the reference system counts length.
#include "daemon/util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace memq {
namespace {

TEST(Utf8, ValidatesWellFormedText) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("plain ascii"));
  EXPECT_TRUE(isValidUtf8("h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80"));  // héllo 中 😀
  EXPECT_TRUE(isValidUtf8("\xEF\xBF\xBD"));                                // a genuine U+FFFD
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF"));                            // U+10FFFF
}

TEST(Utf8, RejectsIllFormedText) {
  EXPECT_FALSE(isValidUtf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(isValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(isValidUtf8("\xED\xA0\x80"));      // encoded surrogate U+D800
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(isValidUtf8("\xE4\xB8"));          // truncated
  EXPECT_FALSE(isValidUtf8("abc\xFF"));
}

TEST(Utf8, IllFormedBytesDecodeAsMaximalSubpartReplacements) {
  // WHATWG example: each maximal subpart becomes one U+FFFD.
  EXPECT_EQ(decodeUtf8("\xE4\xB8" "a"), (std::u32string{0xFFFD, U'a'}));
  EXPECT_EQ(decodeUtf8("\xC0\xAF"), (std::u32string{0xFFFD, 0xFFFD}));
  EXPECT_EQ(decodeUtf8("\xED\xA0\x80"), (std::u32string{0xFFFD, 0xFFFD, 0xFFFD}));
  EXPECT_EQ(decodeUtf8("\xF0\x9F\x98"), (std::u32string{0xFFFD}));
  EXPECT_EQ(toUtf8(toUtf16("a\xFF" "b")), "a\xEF\xBF\xBD" "b");
}

TEST(Utf8, Utf16RoundTrip) {
  const std::string text = "h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80!";
  const std::u16string units = toUtf16(text);
  EXPECT_EQ(units, u"h\u00E9llo \u4E2D \U0001F600!");
  EXPECT_EQ(toUtf8(units), text);
  EXPECT_EQ(utf16Length(text), units.size());
  EXPECT_EQ(utf16Length(text), 11u);  // the emoji is two units
  EXPECT_EQ(codePointCount(text), 10u);
}

TEST(Utf8, LoneSurrogatesBecomeReplacementCharacters) {
  const std::u16string lone = {u'a', char16_t(0xD83D), u'b', char16_t(0xDE00)};
  EXPECT_EQ(toUtf8(lone), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

TEST(Utf8, AppendEncodesAllLengths) {
  std::string out;
  for (const char32_t cp : {U'A', char32_t(0xE9), char32_t(0x4E2D), char32_t(0x1F600)}) appendUtf8(out, cp);
  EXPECT_EQ(out, "A\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  std::string bad;
  appendUtf8(bad, 0xD800);
  appendUtf8(bad, 0x110000);
  EXPECT_EQ(bad, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Truncate, ShortTextIsUnchanged) {
  EXPECT_EQ(truncateUtf16("", 200), "");
  EXPECT_EQ(truncateUtf16(std::string(200, 'x'), 200), std::string(200, 'x'));
}

TEST(Truncate, LongTextKeepsMaxMinusThreeUnitsPlusEllipsis) {
  const std::string summary(201, 'x');
  EXPECT_EQ(truncateUtf16(summary, 200), std::string(197, 'x') + "...");
  const std::string details(5000, 'd');
  EXPECT_EQ(truncateUtf16(details, 2000), std::string(1997, 'd') + "...");
  EXPECT_EQ(utf16Length(truncateUtf16(details, 2000)), 2000u);
}

TEST(Truncate, CountsUtf16UnitsNotBytes) {
  // 150 'é' are 300 bytes but 150 units: they fit in 200.
  std::string e;
  for (int i = 0; i < 150; ++i) e += "\xC3\xA9";
  EXPECT_EQ(truncateUtf16(e, 200), e);
  // 201 of them are cut to 197 + "...".
  std::string longer;
  for (int i = 0; i < 201; ++i) longer += "\xC3\xA9";
  std::string expected;
  for (int i = 0; i < 197; ++i) expected += "\xC3\xA9";
  EXPECT_EQ(truncateUtf16(longer, 200), expected + "...");
}

TEST(Truncate, NeverSplitsASurrogatePair) {
  // 196 'x' then emojis: the cut at 197 units falls inside the first emoji, which is dropped whole.
  std::string text(196, 'x');
  for (int i = 0; i < 10; ++i) text += "\xF0\x9F\x98\x80";
  const std::string cut = truncateUtf16(text, 200);
  EXPECT_EQ(cut, std::string(196, 'x') + "...");
  EXPECT_EQ(utf16Length(cut), 199u);
  EXPECT_TRUE(isValidUtf8(cut));
  // 195 'x': the first emoji ends exactly at 197 units and is kept.
  std::string text2(195, 'x');
  for (int i = 0; i < 10; ++i) text2 += "\xF0\x9F\x98\x80";
  EXPECT_EQ(truncateUtf16(text2, 200), std::string(195, 'x') + "\xF0\x9F\x98\x80...");
}

TEST(Truncate, TinyLimits) {
  EXPECT_EQ(truncateUtf16("abcdef", 3), "...");
  EXPECT_EQ(truncateUtf16("abcdef", 2), "ab");
  EXPECT_EQ(truncateUtf16("abc", 3), "abc");
}

}  // namespace
}  // namespace memq
