// Tests for daemon/model/content_hash: the reference system's golden hashes and the normalisation rules.
#include "daemon/model/content_hash.h"

#include <gtest/gtest.h>

namespace memq {
namespace {

TEST(ContentHash, ReferenceGoldenValues) {
  EXPECT_EQ(contentHash("Use bun", "  Because\n fast "),
            "53d59c7972ae79988d73e7f4b3d3810033986bb7928d4432f509d9cb161f2649");
  EXPECT_EQ(contentHash("Use bun", ""), "7d4859cd41ebbad737b940a04fe39435e8f9a125348394579e805477ac8b0a99");
}

TEST(ContentHash, NormalisesWhitespaceAndCase) {
  EXPECT_EQ(normalizeForHash("  Because\n fast "), "because fast");
  EXPECT_EQ(normalizeForHash("\xC2\xA0" "A\xE2\x80\x83" "B\xEF\xBB\xBF"), "a b");  // NBSP, em space, BOM
  EXPECT_EQ(contentHash("USE   BUN", "because fast"), contentHash("Use bun", "  Because\n fast "));
  EXPECT_EQ(normalizeForHash("Use bun!"), "use bun!");  // punctuation is kept
}

TEST(ContentHash, SummaryAndDetailsAreSeparated) {
  EXPECT_NE(contentHash("a b", ""), contentHash("a", "b"));
}

TEST(ContentHash, NoUnicodeNormalisation) {
  // "é" precomposed and decomposed hash differently, as in the reference.
  EXPECT_NE(contentHash("caf\xC3\xA9", ""), contentHash("cafe\xCC\x81", ""));
  EXPECT_EQ(normalizeForHash("\xC4\xB0"), "i\xCC\x87");  // İ lowercases to i + combining dot
}

}  // namespace
}  // namespace memq
