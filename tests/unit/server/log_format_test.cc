// memqd's log escaping (daemon/server/log_format.h): which characters a client's text may not carry raw into a log
// line, and that everything else is kept byte for byte.
#include "daemon/server/log_format.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace memq {
namespace {

// The invisible characters that change how a line displays, as UTF-8, and the escape each is logged as.
const std::vector<std::pair<std::string, std::string>>& displayChangingCharacters() {
  static const std::vector<std::pair<std::string, std::string>> kCharacters = {
      {"\xD8\x9C", "\\u061c"},      // ARABIC LETTER MARK
      {"\xE2\x80\x8E", "\\u200e"},  // LEFT-TO-RIGHT MARK
      {"\xE2\x80\x8F", "\\u200f"},  // RIGHT-TO-LEFT MARK
      {"\xE2\x80\xA8", "\\u2028"},  // LINE SEPARATOR
      {"\xE2\x80\xA9", "\\u2029"},  // PARAGRAPH SEPARATOR
      {"\xE2\x80\xAA", "\\u202a"},  // LEFT-TO-RIGHT EMBEDDING
      {"\xE2\x80\xAB", "\\u202b"},  // RIGHT-TO-LEFT EMBEDDING
      {"\xE2\x80\xAC", "\\u202c"},  // POP DIRECTIONAL FORMATTING
      {"\xE2\x80\xAD", "\\u202d"},  // LEFT-TO-RIGHT OVERRIDE
      {"\xE2\x80\xAE", "\\u202e"},  // RIGHT-TO-LEFT OVERRIDE
      {"\xE2\x81\xA6", "\\u2066"},  // LEFT-TO-RIGHT ISOLATE
      {"\xE2\x81\xA7", "\\u2067"},  // RIGHT-TO-LEFT ISOLATE
      {"\xE2\x81\xA8", "\\u2068"},  // FIRST STRONG ISOLATE
      {"\xE2\x81\xA9", "\\u2069"},  // POP DIRECTIONAL ISOLATE
  };
  return kCharacters;
}

TEST(LogFormatTest, BidiControlsAndLineSeparatorsAreEscapedSoALineCannotBeReordered) {
  for (const auto& [raw, escape] : displayChangingCharacters()) {
    SCOPED_TRACE(escape);
    const std::string method = "memory/get" + raw + "teg/yromem";
    EXPECT_TRUE(needsEscaping(method));
    EXPECT_EQ(escapeControlCharacters(method), "memory/get" + escape + "teg/yromem");
    // At the very end of the text too, where a check reading past it would go wrong.
    EXPECT_EQ(escapeControlCharacters("x" + raw), "x" + escape);
  }
}

TEST(LogFormatTest, TheirNeighboursAndOtherTextAreKeptAsTheyAre) {
  for (const std::string& kept : {
           std::string("\xD8\x9B"),      // U+061B ARABIC SEMICOLON
           std::string("\xE2\x80\x8D"),  // U+200D ZERO WIDTH JOINER, inside many emoji
           std::string("\xE2\x80\xA7"),  // U+2027 HYPHENATION POINT
           std::string("\xE2\x80\xAF"),  // U+202F NARROW NO-BREAK SPACE
           std::string("\xE2\x81\xA5"),  // U+2065, unassigned
           std::string("\xE2\x81\xAA"),  // U+206A
           std::string("caf\xC3\xA9 \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"),
           std::string("\xE2\x80"),  // a sequence cut short: not one of them
       }) {
    SCOPED_TRACE(::testing::PrintToString(kept));
    EXPECT_FALSE(needsEscaping(kept));
    EXPECT_EQ(escapeControlCharacters(kept), kept);
  }
}

TEST(LogFormatTest, ControlCharactersKeepTheirEscapes) {
  EXPECT_EQ(escapeControlCharacters("a\nb\rc\td\x1b" "e\x7f"), "a\\nb\\rc\\td\\x1be\\x7f");
  EXPECT_EQ(escapeControlCharacters("x\xC2\x85y\xC2\x9B"), "x\\u0085y\\u009b");
}

TEST(LogFormatTest, TheFormatterEscapesTheMessageOfEveryLine) {
  EscapingFormatter formatter;
  const std::string payload = "[3] memory/get\xE2\x80\xAE" "kaerb\xE2\x80\xA8" "x";
  spdlog::details::log_msg msg("memqd", spdlog::level::info, spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  formatter.format(msg, out);
  const std::string line(out.data(), out.size());
  EXPECT_NE(line.find("[3] memory/get\\u202ekaerb\\u2028x"), std::string::npos) << line;
  EXPECT_EQ(line.find("\xE2\x80\xAE"), std::string::npos) << line;
  EXPECT_EQ(line.find("\xE2\x80\xA8"), std::string::npos) << line;
}

}  // namespace
}  // namespace memq
