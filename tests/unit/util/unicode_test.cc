// Tests for daemon/util/unicode: L/N classification, JavaScript whitespace, and toLowerCase compatibility
// (expected strings were produced by String.prototype.toLowerCase in Node.js).
#include "daemon/util/unicode.h"

#include <gtest/gtest.h>

namespace memq {
namespace {

TEST(Unicode, LettersAndNumbers) {
  for (const char32_t cp : {U'a', U'Z', U'0', U'9', char32_t(0xE9), char32_t(0x4E2D), char32_t(0x3042),
                            char32_t(0x0663) /* Arabic-Indic 3, Nd */, char32_t(0x216B) /* Roman XII, Nl */,
                            char32_t(0xBD) /* one half, No */, char32_t(0x1D49C) /* script A, Lu */,
                            char32_t(0x02B0) /* modifier h, Lm */, char32_t(0x20000) /* CJK ext B */}) {
    EXPECT_TRUE(isLetterOrNumber(cp)) << std::hex << uint32_t(cp);
  }
  for (const char32_t cp : {U'_', U'\'', U'-', U' ', U'.', char32_t(0x0301) /* combining acute, Mn */,
                            char32_t(0x1F600) /* emoji */, char32_t(0x3000), char32_t(0xFFFD), char32_t(0xD800),
                            char32_t(0x10FFFF)}) {
    EXPECT_FALSE(isLetterOrNumber(cp)) << std::hex << uint32_t(cp);
  }
}

TEST(Unicode, JsWhitespaceIsExactlyTheReferenceSet) {
  const char32_t expected[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0xA0,   0x1680, 0x2000, 0x2001,
                               0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028,
                               0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF};
  size_t count = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (isJsWhitespace(cp)) {
      ASSERT_LT(count, std::size(expected));
      EXPECT_EQ(cp, expected[count]);
      ++count;
    }
  }
  EXPECT_EQ(count, std::size(expected));
  EXPECT_FALSE(isJsWhitespace(0x85));    // NEL is not in JavaScript's \s
  EXPECT_FALSE(isJsWhitespace(0x180E));  // no longer Zs
  EXPECT_FALSE(isJsWhitespace(0x200B));  // zero width space is Cf
}

TEST(Unicode, SimpleLowercase) {
  EXPECT_EQ(toLowerSimple(U'A'), U'a');
  EXPECT_EQ(toLowerSimple(U'a'), U'a');
  EXPECT_EQ(toLowerSimple(0xC0), char32_t(0xE0));
  EXPECT_EQ(toLowerSimple(0x100), char32_t(0x101));   // stride-2 run
  EXPECT_EQ(toLowerSimple(0x101), char32_t(0x101));
  EXPECT_EQ(toLowerSimple(0x130), U'i');
  EXPECT_EQ(toLowerSimple(0x1E9E), char32_t(0xDF));   // capital sharp s
  EXPECT_EQ(toLowerSimple(0x2160), char32_t(0x2170));  // Roman numeral one
  EXPECT_EQ(toLowerSimple(0x10400), char32_t(0x10428));  // Deseret
  EXPECT_EQ(toLowerSimple(0x4E2D), char32_t(0x4E2D));
}

TEST(Unicode, JsToLowerMatchesJavaScript) {
  // [input, String.prototype.toLowerCase(input)] pairs from Node.js.
  const std::pair<std::u16string, std::u16string> cases[] = {
      {u"İstanbul", u"i\u0307stanbul"},
      {u"ΟΔΥΣΣΕΥΣ", u"οδυσσευς"},
      {u"ΣΑ Σ", u"σα σ"},
      {u"ÀÉÎÕÜ", u"àéîõü"},
      {u"ǅ", u"ǆ"},
      {u"ẞ", u"ß"},
      {u"Ⅻ", u"ⅻ"},
      {u"ＡＢＣ", u"ａｂｃ"},
      {u"\U00010400", u"\U00010428"},
      {u"ΑΣ'Σ", u"ασ'ς"},
      {u"Σ", u"σ"},
      {u"Hello, World", u"hello, world"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(jsToLower(in), out);
}

TEST(Unicode, JsToLowerKeepsLoneSurrogates) {
  const std::u16string in = {u'A', char16_t(0xD801), u'B', char16_t(0xDC00)};
  const std::u16string out = {u'a', char16_t(0xD801), u'b', char16_t(0xDC00)};
  EXPECT_EQ(jsToLower(in), out);
}

TEST(Unicode, JsToLowerUtf8) {
  EXPECT_EQ(jsToLowerUtf8("Use BUN"), "use bun");
  EXPECT_EQ(jsToLowerUtf8("\xC4\xB0stanbul"), "i\xCC\x87stanbul");                       // İstanbul
  EXPECT_EQ(jsToLowerUtf8("\xCE\x9F\xCE\x94\xCE\xA3"), "\xCE\xBF\xCE\xB4\xCF\x82");       // ΟΔΣ -> οδς
  EXPECT_EQ(jsToLowerUtf8("\xC3\x89T\xC3\x89"), "\xC3\xA9t\xC3\xA9");                    // ÉTÉ
}

TEST(Unicode, CollapseAndTrim) {
  EXPECT_EQ(jsCollapseWhitespace(u"  a \t\n b\u00A0\u3000c  "), u"a b c");
  EXPECT_EQ(jsCollapseWhitespace(u"\uFEFF"), u"");
  EXPECT_EQ(jsCollapseWhitespaceUtf8("  Because\n fast "), "Because fast");
  EXPECT_EQ(jsCollapseWhitespaceUtf8("\xE3\x80\x80x\xC2\xA0\xC2\xA0y\xE2\x80\xA8"), "x y");
  EXPECT_EQ(jsTrim(std::string_view("\xEF\xBB\xBF  a b \xE2\x80\xA9")), "a b");
  EXPECT_EQ(jsTrim(std::string_view(" \t ")), "");
  EXPECT_EQ(jsTrim(std::u16string_view(u"\u2028x\u205F")), u"x");
}

TEST(Unicode, TablesReportTheirVersion) { EXPECT_FALSE(unicodeVersion().empty()); }

}  // namespace
}  // namespace memq
