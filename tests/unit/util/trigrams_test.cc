// Tests for daemon/util/trigrams: the reference system's trigram set and containment.
#include "daemon/util/trigrams.h"

#include <gtest/gtest.h>

namespace memq {
namespace {

TEST(Trigrams, SetOfDistinctThreeUnitSubstrings) {
  EXPECT_TRUE(trigramSet("").empty());
  EXPECT_TRUE(trigramSet("ab").empty());
  EXPECT_TRUE(trigramSet("  ab \n").empty());  // trimmed before counting
  EXPECT_EQ(trigramSet("abc").size(), 1u);
  EXPECT_EQ(trigramSet("aaaa").size(), 1u);      // duplicates collapse
  EXPECT_EQ(trigramSet("abcd").size(), 2u);
  EXPECT_EQ(trigramSet("ABC"), trigramSet("abc"));
  EXPECT_EQ(trigramSet("a  \t b"), trigramSet("a b"));  // whitespace runs become one space
}

TEST(Trigrams, ContainmentIsRelativeToTheNewSummary) {
  EXPECT_DOUBLE_EQ(trigramContainment("use bun", "use bun"), 1.0);
  EXPECT_DOUBLE_EQ(trigramContainment("Use Bun", "use   bun for everything"), 1.0);
  // "abcd" has {abc, bcd}; "abcx" has {abc, bcx}: one of two shared.
  EXPECT_DOUBLE_EQ(trigramContainment("abcd", "abcx"), 0.5);
  // Asymmetric: all of the short text is inside the long one, not the other way round.
  EXPECT_DOUBLE_EQ(trigramContainment("abcd", "abcdefgh"), 1.0);
  EXPECT_DOUBLE_EQ(trigramContainment("abcdefgh", "abcd"), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(trigramContainment("xyz", "abc"), 0.0);
  EXPECT_DOUBLE_EQ(trigramContainment("ab", "abc"), 0.0);  // empty set: 0, not NaN
}

TEST(Trigrams, WorksOnUtf16Units) {
  // One emoji is two units, so "😀a" is three units and one trigram.
  EXPECT_EQ(trigramSet("\xF0\x9F\x98\x80" "a").size(), 1u);
  EXPECT_EQ(trigramSet("\xC3\x89t\xC3\xA9"), trigramSet("\xC3\xA9t\xC3\xA9"));  // Été == été
}

}  // namespace
}  // namespace memq
