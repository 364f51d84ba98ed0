// Unit tests of line ranges: normalisation, validation messages and fields, and the `path:40-60,72` form.
#include <gtest/gtest.h>

#include <string>

#include "daemon/anchors/line_ranges.h"

namespace memq {
namespace {

std::string field(const Status& s) { return s.data().is_object() ? s.data().value("field", "") : ""; }

TEST(NormalizeRanges, SortsAndMergesOverlappingAndAdjacentRanges) {
  EXPECT_EQ(normalizeRanges({{10, 12}, {1, 2}, {3, 4}, {11, 20}, {30, 30}}),
            (LineRanges{{1, 4}, {10, 20}, {30, 30}}));
  EXPECT_EQ(normalizeRanges({{5, 5}, {5, 5}}), (LineRanges{{5, 5}}));
  EXPECT_EQ(normalizeRanges({{7, 3}, {1, 1}}), (LineRanges{{1, 1}}));  // backwards ranges are not lines
  EXPECT_TRUE(normalizeRanges({}).empty());
}

TEST(NormalizeRanges, LineCountAndMembershipReadTheSet) {
  const LineRanges set = normalizeRanges({{40, 60}, {72, 72}});
  EXPECT_EQ(lineCount(set), 22u);
  EXPECT_TRUE(containsLine(set, 40));
  EXPECT_TRUE(containsLine(set, 60));
  EXPECT_TRUE(containsLine(set, 72));
  EXPECT_FALSE(containsLine(set, 39));
  EXPECT_FALSE(containsLine(set, 61));
  EXPECT_FALSE(containsLine(set, 73));
}

TEST(CountLines, CountsALastLineWithoutItsNewline) {
  EXPECT_EQ(countLines(""), 0u);
  EXPECT_EQ(countLines("a\n"), 1u);
  EXPECT_EQ(countLines("a\nb"), 2u);
  EXPECT_EQ(countLines("a\nb\n"), 2u);
  EXPECT_EQ(countLines("\n\n"), 2u);
}

TEST(ValidateRanges, AcceptsASetInsideTheFile) {
  EXPECT_TRUE(validateRanges({{1, 3}, {10, 10}}, "anchors[0].lines", 10u).isOk());
}

TEST(ValidateRanges, RefusesLineZeroNamingTheElement) {
  const Status s = validateRanges({{1, 2}, {0, 4}}, "anchors[0].lines");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(field(s), "anchors[0].lines[1]");
  EXPECT_NE(s.message().find("numbered from 1"), std::string::npos) << s.message();
}

TEST(ValidateRanges, RefusesABackwardsRange) {
  const Status s = validateRanges({{9, 3}}, "lines");
  EXPECT_EQ(field(s), "lines[0]");
  EXPECT_NE(s.message().find("first line 9 is after last line 3"), std::string::npos) << s.message();
}

TEST(ValidateRanges, RefusesALinePastTheEndOfTheFile) {
  const Status s = validateRanges({{1, 2}, {8, 11}}, "lines", 10u);
  EXPECT_EQ(field(s), "lines[1]");
  EXPECT_NE(s.message().find("line 11 is past the end of the file, which has 10 lines"), std::string::npos)
      << s.message();
  EXPECT_TRUE(validateRanges({{8, 10}}, "lines", 10u).isOk());
}

TEST(ValidateRanges, RefusesMoreThanTheRangeLimitOnceMerged) {
  LineRanges many;
  for (uint32_t i = 0; i < kMaxAnchorRanges + 1; ++i) many.push_back({i * 3 + 1, i * 3 + 1});
  const Status s = validateRanges(many, "lines");
  EXPECT_EQ(field(s), "lines");
  EXPECT_NE(s.message().find("at most 64"), std::string::npos) << s.message();
  // The same number of ranges that touch merge into one and pass.
  LineRanges touching;
  for (uint32_t i = 0; i < kMaxAnchorRanges + 1; ++i) touching.push_back({i + 1, i + 1});
  EXPECT_TRUE(validateRanges(touching, "lines").isOk());
}

TEST(ValidateRanges, RefusesNoLinesButLineNumbersAloneAcceptEmpty) {
  EXPECT_EQ(field(validateRanges({}, "lines")), "lines");
  EXPECT_TRUE(validateLineNumbers({}, "lines").isOk());
}

TEST(ValidateRanges, RefusesBinaryContent) {
  const std::string binary("\x7f" "ELF\0\0\0\x01", 8);
  const Status s = validateRangesInContent({{1, 1}}, binary, "anchors[2].lines");
  EXPECT_EQ(field(s), "anchors[2].lines");
  EXPECT_NE(s.message().find("binary"), std::string::npos) << s.message();
  EXPECT_TRUE(validateRangesInContent({{1, 2}}, "a\nb\n", "anchors[2].lines").isOk());
  EXPECT_EQ(field(validateRangesInContent({{1, 3}}, "a\nb\n", "anchors[2].lines")), "anchors[2].lines[0]");
}

TEST(ParsePathLines, SplitsPathAndRanges) {
  Result<PathLines> r = parsePathLines("src/a.c:40-60,72", "anchor");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->path, "src/a.c");
  EXPECT_EQ(r->lines, (LineRanges{{40, 60}, {72, 72}}));
  EXPECT_EQ(formatRanges(r->lines), "40-60,72");
}

TEST(ParsePathLines, NormalisesTheRanges) {
  Result<PathLines> r = parsePathLines("f.c:72,40-60,50-61", "anchor");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->lines, (LineRanges{{40, 61}, {72, 72}}));
}

TEST(ParsePathLines, APathWithoutARangeSuffixIsAPlainFile) {
  for (const char* text : {"README", "a:b.c", "c:1y", "f.c:", "f.c:1-", "f.c:-3", "f.c:1,,2", "dir:x/f.c"}) {
    Result<PathLines> r = parsePathLines(text, "anchor");
    ASSERT_TRUE(r.isOk()) << text;
    EXPECT_EQ(r->path, text);
    EXPECT_TRUE(r->lines.empty()) << text;
  }
}

TEST(ParsePathLines, APathContainingAColonKeepsItWhenARangeFollows) {
  Result<PathLines> r = parsePathLines("dir:x/f.c:3", "anchor");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->path, "dir:x/f.c");
  EXPECT_EQ(r->lines, (LineRanges{{3, 3}}));
}

TEST(ParsePathLines, RefusesARangeListThatIsNotValid) {
  Result<PathLines> zero = parsePathLines("f.c:0-3", "anchor");
  ASSERT_FALSE(zero.isOk());
  EXPECT_EQ(field(zero.status()), "anchor.lines[0]");
  Result<PathLines> backwards = parsePathLines("f.c:5,9-3", "anchor");
  ASSERT_FALSE(backwards.isOk());
  EXPECT_EQ(field(backwards.status()), "anchor.lines[1]");
  Result<PathLines> huge = parsePathLines("f.c:99999999999", "anchor");  // does not fit a line number
  EXPECT_FALSE(huge.isOk());
  Result<PathLines> noPath = parsePathLines(":5", "anchor");
  ASSERT_FALSE(noPath.isOk());
  EXPECT_EQ(field(noPath.status()), "anchor");
}

}  // namespace
}  // namespace memq
