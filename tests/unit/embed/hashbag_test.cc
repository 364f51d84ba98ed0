// Tests for daemon/embed/hashbag: every golden value of the reference system, its stemmer examples, the
// stop-word list, the tokenizer's CJK/astral rules, and memoryEmbedSource.
#include "daemon/embed/hashbag.h"

#include <gtest/gtest.h>

#include <cmath>

namespace memq {
namespace {

std::vector<float> embedText(std::string_view text) { return HashbagEmbedder().embed(text); }

std::vector<float> embedSource(std::string_view summary) {
  return embedText(memoryEmbedSource(summary, "", {}));
}

TEST(Hashbag, Fnv1aGoldenValues) {
  EXPECT_EQ(fnv1a16(u""), 2166136261u);
  EXPECT_EQ(fnv1a16(u"") % kHashbagDim, 325u);
  EXPECT_EQ(fnv1a16(u"a"), 3826002220u);
  EXPECT_EQ(fnv1a16(u"a") % kHashbagDim, 172u);
  EXPECT_EQ(fnv1a16(u"w:auth"), 2284973186u);
  EXPECT_EQ(fnv1a16(u"w:auth") % kHashbagDim, 2u);
  EXPECT_EQ(fnv1a16(u"s:w:auth"), 4140451231u);
  EXPECT_EQ(fnv1a16(u"s:w:auth") & 1u, 1u);  // odd: sign -1
  EXPECT_EQ(fnv1a16(u"\u00E9"), 1812687940u);
  EXPECT_EQ(fnv1a16(u"\u4E2D"), 677484088u);
  EXPECT_EQ(fnv1a16(u"\U0001F600"), 3409036472u);
}

TEST(Hashbag, ModelTagAndDimension) {
  const HashbagEmbedder e;
  EXPECT_EQ(e.model(), "hashbag-v2");
  EXPECT_EQ(e.dim(), 384u);
  EXPECT_EQ(e.embed("anything at all").size(), 384u);
}

TEST(Hashbag, HelloWorldGolden) {
  const std::vector<float> v = embedText("hello world");
  std::vector<std::pair<size_t, float>> nonZero;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != 0.0f) nonZero.emplace_back(i, v[i]);
  }
  ASSERT_EQ(nonZero.size(), 10u);
  const std::pair<size_t, double> firstSix[] = {{32, -0.654892}, {48, -0.327446}, {56, -0.187112},
                                                {84, -0.187112},  {125, 0.187112}, {151, 0.187112}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(nonZero[i].first, firstSix[i].first);
    EXPECT_NEAR(nonZero[i].second, firstSix[i].second, 1e-6);
  }
  double norm = 0;
  for (const float x : v) norm += double(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-6);
}

TEST(Hashbag, CosineGoldenTable) {
  EXPECT_NEAR(cosine(embedText("auth middleware login flow"), embedText("auth middleware login pipeline")), 0.7834,
              1e-4);
  EXPECT_NEAR(cosine(embedText("auth middleware login flow"), embedText("postgres database migration script")),
              0.0688, 1e-4);
  EXPECT_NEAR(cosine(embedSource("Use npm for installs"), embedSource("Do not use npm for installs")), 0.9226, 1e-4);
  EXPECT_NEAR(cosine(embedSource("JWT signing uses HS256"), embedSource("how do we sign JWT tokens")), 0.3062, 1e-4);
  EXPECT_NEAR(cosine(embedSource("auto-extraction of memories"), embedSource("auto extraction of memories")), 0.9231,
              1e-4);
}

TEST(Hashbag, EmptyAndWordlessTextEmbedToZeros) {
  const std::vector<float> zeros(kHashbagDim, 0.0f);
  EXPECT_EQ(embedText(""), zeros);
  EXPECT_EQ(embedText("!!! ??? ..."), zeros);
  EXPECT_EQ(embedText("\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xF0\x9F\x98\x80"), zeros);  // emoji only
  EXPECT_EQ(embedText("a i x"), zeros);                    // one-letter tokens are dropped
  EXPECT_EQ(embedText("the and of to"), zeros);            // stop words only
  EXPECT_EQ(embedText("\xE4\xB8\xAD"), zeros);             // one BMP CJK character: one unit, dropped
}

TEST(Hashbag, StemmerExamples) {
  const std::pair<std::u16string_view, std::u16string_view> cases[] = {
      {u"extracting", u"extract"}, {u"extracted", u"extract"},   {u"extraction", u"extrac"},
      {u"extractor", u"extractor"}, {u"organizations", u"organ"}, {u"classes", u"class"},
      {u"class", u"clas"},         {u"latest", u"latest"},       {u"interest", u"inter"},
      {u"policies", u"polic"},     {u"testing", u"test"},        {u"tests", u"test"},
      {u"runs", u"runs"},          {u"bus", u"bus"},
  };
  for (const auto& [word, stem] : cases) EXPECT_EQ(hashbagStem(word), stem) << std::string(word.begin(), word.end());
}

TEST(Hashbag, StopWords) {
  EXPECT_EQ(hashbagStopWordCount(), 55u);
  for (const std::u16string_view w : {u"a", u"do", u"not", u"no", u"basically", u"your", u"those"}) {
    EXPECT_TRUE(isHashbagStopWord(w));
  }
  for (const std::u16string_view w : {u"bun", u"Not", u"dont", u"use"}) EXPECT_FALSE(isHashbagStopWord(w));
}

TEST(Hashbag, TokenizerRules) {
  // Underscore and apostrophe separate; a lone BMP CJK char is dropped but a CJK run is one token; a single astral
  // letter (two units) is kept; combining marks separate; negation words are stop words.
  EXPECT_EQ(hashbagTokens("snake_case don't"), (std::vector<std::string>{"snake", "case", "don"}));
  EXPECT_EQ(hashbagTokens("\xE4\xB8\xAD \xE4\xB8\xAD\xE6\x96\x87"), (std::vector<std::string>{"\xE4\xB8\xAD\xE6\x96\x87"}));
  EXPECT_EQ(hashbagTokens("\xF0\x9D\x92\x9C"), (std::vector<std::string>{"\xF0\x9D\x92\x9C"}));  // 𝒜 (Lu, astral)
  EXPECT_EQ(hashbagTokens("\xF0\x9F\x98\x80 hi"), (std::vector<std::string>{"hi"}));           // emoji separates
  EXPECT_EQ(hashbagTokens("cafe\xCC\x81s"), (std::vector<std::string>{"cafe"}));               // "s" alone is dropped
  EXPECT_EQ(hashbagTokens("Do NOT use npm"), (std::vector<std::string>{"use", "npm"}));
  EXPECT_EQ(hashbagTokens("Extracting TESTS"), (std::vector<std::string>{"extract", "test"}));
}

TEST(Hashbag, NegationIsInvisibleToTheWordStreams) {
  EXPECT_EQ(hashbagTokens("use npm"), hashbagTokens("do not use npm"));
  EXPECT_NE(embedText("use npm"), embedText("do not use npm"));  // only the character grams differ
}

TEST(Hashbag, DeterministicAndUnitLength) {
  const std::string text = "Store vectors contiguously; re-score the best candidates exactly. \xC3\x89t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87";
  const std::vector<float> a = embedText(text);
  EXPECT_EQ(a, embedText(text));
  double norm = 0;
  for (const float x : a) norm += double(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-6);
}

TEST(Hashbag, MemoryEmbedSource) {
  EXPECT_EQ(memoryEmbedSource(" Use bun ", "", {"tooling", "bun"}), "Use bun Use bun Use bun\n\ntooling bun");
  EXPECT_EQ(memoryEmbedSource("Use bun", "  Because fast ", {}), "Use bun Use bun Use bun\nBecause fast");
  EXPECT_EQ(memoryEmbedSource("  ", "\n", {" ", ""}), "");
  EXPECT_EQ(memoryEmbedSource("", "only details", {}), "only details");
  EXPECT_EQ(memoryEmbedSource("", "", {"a", "b"}), "a b");
}

TEST(Hashbag, CosineEdgeCases) {
  const std::vector<float> a = {1.0f, 0.0f};
  const std::vector<float> b = {0.6f, 0.8f};
  EXPECT_FLOAT_EQ(cosine(a, b), 0.6f);
  EXPECT_EQ(cosine(a, std::vector<float>{1.0f}), 0.0f);  // length mismatch
  const std::vector<float> zeros(kHashbagDim, 0.0f);
  EXPECT_EQ(cosine(zeros, zeros), 0.0f);
  EXPECT_DOUBLE_EQ(cosineDouble(a, b), double(0.6f));
}

}  // namespace
}  // namespace memq
