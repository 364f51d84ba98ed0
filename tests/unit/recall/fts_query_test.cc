// FTS MATCH building: operators stay literal, inputs are bounded, stop words and 1-character tokens are dropped.
#include <gtest/gtest.h>

#include "daemon/recall/fts_query.h"

namespace memq {
namespace {

TEST(FtsQuery, UnicodeLaneQuotesPrefixesAndDropsNoise) {
  EXPECT_EQ(unicodeMatch("fix the JWT expiry"), "\"fix\"* OR \"JWT\"* OR \"expiry\"*");
  EXPECT_EQ(unicodeMatch("a b c"), "");
  EXPECT_EQ(unicodeMatch("auth-flow"), "\"auth-flow\"*");
  EXPECT_EQ(unicodeMatch("jwt JWT jwt"), "\"jwt\"*");
}

TEST(FtsQuery, ReferenceOptionsKeepTheReferenceRules) {
  FtsQueryOptions ref{
      .dropStopWords = false, .dropSingleChars = false, .dedupe = false, .trimToWord = false, .maxTokens = 256};
  EXPECT_EQ(unicodeMatch("a the", ref), "\"a\"* OR \"the\"*");
  EXPECT_EQ(unicodeMatch("do? do?", ref), "\"do?\"* OR \"do?\"*");
}

TEST(FtsQuery, PunctuationAroundAWordDoesNotHideAStopWordOrASingleCharacter) {
  // FTS5 drops the punctuation itself, so "do?"* was the prefix query do*: docs, docker, done, double...
  EXPECT_EQ(unicodeMatch("what does this do?"), "");
  EXPECT_EQ(unicodeMatch("fix it."), "\"fix\"*");
  EXPECT_EQ(unicodeMatch("why is `i` reset"), "\"reset\"*");
  EXPECT_EQ(unicodeMatch("C++ (or C#)"), "");
  EXPECT_EQ(unicodeMatch("--v"), "");
  // A word that passes is sent as written (FTS5 reads the same word from it), punctuation inside a token included.
  EXPECT_EQ(unicodeMatch("src/jwt.ts, don't --ipv6"), "\"src/jwt.ts,\"* OR \"don't\"* OR \"--ipv6\"*");
}

TEST(FtsQuery, OperatorSoupBuildsNothingDangerous) {
  for (const char* q : {"\" ( ) * : NEAR OR", "\"\"\"", "((((", "*:*", "NOT AND OR", "-", "^", "{a b}"}) {
    std::string u = unicodeMatch(q);
    std::string t = trigramMatch(q);
    // Every term is a quoted phrase: no bare operator can reach FTS5.
    for (const std::string& m : {u, t}) {
      int quotes = 0;
      for (char c : m) quotes += c == '"';
      EXPECT_EQ(quotes % 2, 0) << q << " -> " << m;
      EXPECT_EQ(m.find('('), std::string::npos) << m;
    }
  }
}

TEST(FtsQuery, HugeQueriesAreCapped) {
  std::string huge;
  for (int i = 0; i < 20000; ++i) huge += "token" + std::to_string(i) + " ";
  ASSERT_GT(huge.size(), 100000u);
  std::string u = unicodeMatch(huge);
  size_t terms = 1;
  for (size_t p = u.find(" OR "); p != std::string::npos; p = u.find(" OR ", p + 1)) ++terms;
  EXPECT_EQ(terms, kMaxQueryTokens);
  EXPECT_LT(trigramMatch(huge).size(), 4096u);
}

TEST(FtsQuery, TrigramLanes) {
  EXPECT_EQ(trigramMatch("jwt is ok"), "\"jwt\"");
  EXPECT_EQ(trigramMatch("go js"), "\"go js\"");
  EXPECT_EQ(trigramMatch("ab"), "");
  EXPECT_EQ(trigramBigramMatch("go js"), "\" go\" OR \"go \" OR \" js\" OR \"js \"");
}

}  // namespace
}  // namespace memq
