// Unit tests of the line signals: overlap, nearness, newest-wins ownership, the owner's predecessor and
// oldest-unchanged origin.
#include "daemon/anchors/line_signals.h"

#include <gtest/gtest.h>

namespace memq {
namespace {

LineCandidate candidate(int64_t at, std::vector<CarriedAnchor> anchors) { return {at, std::move(anchors)}; }

// An anchor as written, not yet carried: every line unchanged.
CarriedAnchor fresh(const std::string& path, const LineRanges& lines) { return {path, lines, lines}; }

TEST(DistanceToRanges, MeasuresToTheNearestLine) {
  const LineRanges set{{10, 12}, {20, 20}};
  EXPECT_EQ(distanceToRanges(set, 11), 0u);
  EXPECT_EQ(distanceToRanges(set, 1), 9u);
  EXPECT_EQ(distanceToRanges(set, 15), 3u);
  EXPECT_EQ(distanceToRanges(set, 17), 3u);
  EXPECT_EQ(distanceToRanges(set, 30), 10u);
  EXPECT_FALSE(distanceToRanges({}, 3).has_value());
}

TEST(LineSignals, OverlapCountsQueryLinesCoveredOnTheSamePath) {
  const std::vector<QueryLines> query{{"a.c", {{10, 14}}}, {"b.c", {{1, 1}}}};
  const std::vector<LineSignals> s = computeLineSignals(
      query,
      {candidate(1, {fresh("a.c", {{12, 20}}), fresh("b.c", {{1, 3}})}), candidate(2, {fresh("c.c", {{10, 14}})})});
  EXPECT_EQ(s[0].overlap, 4u);  // 12..14 of a.c and 1 of b.c
  EXPECT_EQ(s[0].distance, 0u);
  EXPECT_EQ(s[1].overlap, 0u);  // same lines, other file
  EXPECT_FALSE(s[1].distance.has_value());
}

// A query's lines are not bounded by the file (the protocol cannot know its length): the whole range of line
// numbers must cost what the anchors' span costs, and give what the lines near the anchors give.
TEST(LineSignals, AQueryOfEveryLineNumberGivesWhatTheLinesAroundTheAnchorsGive) {
  const std::vector<LineCandidate> candidates{candidate(1, {fresh("a.c", {{40, 45}})}),
                                              candidate(2, {fresh("a.c", {{60, 61}, {90, 90}})}),
                                              candidate(3, {fresh("a.c", {{44, 70}})})};
  const auto same = [](const std::vector<LineSignals>& a, const std::vector<LineSignals>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(a[i].overlap, b[i].overlap);
      EXPECT_EQ(a[i].owned, b[i].owned);
      EXPECT_EQ(a[i].prior, b[i].prior);
      EXPECT_EQ(a[i].originated, b[i].originated);
      EXPECT_EQ(a[i].distance, b[i].distance);
    }
  };
  same(computeLineSignals({{"a.c", {{1, UINT32_MAX}}}}, candidates),
       computeLineSignals({{"a.c", {{1, 200}}}}, candidates));
  // Ranges wholly below or above every anchor: only their nearest line matters.
  same(computeLineSignals({{"a.c", {{1, 30}, {100, UINT32_MAX}}}}, candidates),
       computeLineSignals({{"a.c", {{30, 30}, {100, 100}}}}, candidates));
  const auto above = computeLineSignals({{"a.c", {{1000, UINT32_MAX}}}}, candidates);
  EXPECT_EQ(above[1].distance, 910u);
  EXPECT_EQ(above[0].overlap, 0u);
}

TEST(LineSignals, NearnessIsTheDistanceWhenNothingOverlaps) {
  const std::vector<QueryLines> query{{"a.c", {{50, 52}}}};
  const std::vector<LineSignals> s =
      computeLineSignals(query, {candidate(1, {fresh("a.c", {{40, 45}})}), candidate(2, {fresh("a.c", {{60, 61}})})});
  EXPECT_EQ(s[0].overlap, 0u);
  EXPECT_EQ(s[0].distance, 5u);
  EXPECT_EQ(s[1].distance, 8u);
}

TEST(LineSignals, TheNewestCoveringAnchorOwnsALine) {
  const std::vector<QueryLines> query{{"a.c", {{10, 19}}}};
  // The old memory covers all ten lines; a newer one rewrote 15..19 over it.
  const std::vector<LineSignals> s = computeLineSignals(
      query, {candidate(200, {fresh("a.c", {{15, 30}})}), candidate(100, {fresh("a.c", {{1, 40}})})});
  EXPECT_EQ(s[0].overlap, 5u);
  EXPECT_EQ(s[0].owned, 5u);
  EXPECT_EQ(s[1].overlap, 10u);
  EXPECT_EQ(s[1].owned, 5u);  // only 10..14, which nothing newer covers
}

TEST(LineSignals, TheOldestAnchorHoldingALineUnchangedOriginatesIt) {
  const std::vector<QueryLines> query{{"a.c", {{10, 19}}}};
  // The old memory wrote 1..40; a newer one anchored 15..30 since, both still as written: the newer owns 15..19,
  // the old one is where all ten lines came from.
  const std::vector<LineSignals> s = computeLineSignals(
      query, {candidate(200, {fresh("a.c", {{15, 30}})}), candidate(100, {fresh("a.c", {{1, 40}})})});
  EXPECT_EQ(s[0].owned, 5u);
  EXPECT_EQ(s[0].originated, 0u);
  EXPECT_EQ(s[1].owned, 5u);
  EXPECT_EQ(s[1].originated, 10u);
  // A line the old memory's anchor no longer holds as written (a hunk replaced it) came from the newer one.
  const std::vector<LineSignals> rewritten = computeLineSignals(
      {{"a.c", {{10, 10}}}}, {candidate(100, {{"a.c", {{5, 15}}, {}}}), candidate(200, {fresh("a.c", {{10, 10}})})});
  EXPECT_EQ(rewritten[0].originated, 0u);
  EXPECT_EQ(rewritten[1].originated, 1u);
}

TEST(LineSignals, AnUnchangedLineBeatsANewerRewrittenHunk) {
  const std::vector<QueryLines> query{{"a.c", {{10, 10}}}};
  // The old memory still holds line 10 as it wrote it; the newer one's lines were replaced by a hunk spanning 5..15.
  const std::vector<LineCandidate> candidates{candidate(100, {{"a.c", {{10, 10}}, {{10, 10}}}}),
                                              candidate(200, {{"a.c", {{5, 15}}, {}}})};
  const std::vector<LineSignals> firstUnchanged = computeLineSignals(query, candidates);
  EXPECT_EQ(firstUnchanged[0].owned, 1u);
  EXPECT_EQ(firstUnchanged[1].owned, 0u);
  EXPECT_EQ(firstUnchanged[1].overlap, 1u);
  const std::vector<LineSignals> newest = computeLineSignals(query, candidates, Ownership::kNewest);
  EXPECT_EQ(newest[0].owned, 0u);
  EXPECT_EQ(newest[1].owned, 1u);
}

TEST(LineSignals, EqualTimesGoToTheLaterCandidate) {
  const std::vector<QueryLines> query{{"a.c", {{1, 2}}}};
  const std::vector<LineSignals> s =
      computeLineSignals(query, {candidate(7, {fresh("a.c", {{1, 2}})}), candidate(7, {fresh("a.c", {{2, 2}})})});
  EXPECT_EQ(s[0].owned, 1u);
  EXPECT_EQ(s[1].owned, 1u);
}

TEST(LineSignals, TwoAnchorsOfOneMemoryOnOnePathCountEachLineOnce) {
  const std::vector<QueryLines> query{{"a.c", {{1, 4}}}};
  const std::vector<LineSignals> s =
      computeLineSignals(query, {candidate(1, {fresh("a.c", {{1, 3}}), fresh("a.c", {{2, 4}})})});
  EXPECT_EQ(s[0].overlap, 4u);
  EXPECT_EQ(s[0].owned, 4u);
}

TEST(LineSignals, TheOwnersPredecessorIsTheNewestOtherAnchorCoveringTheLine) {
  const std::vector<QueryLines> query{{"a.c", {{10, 11}}}};
  // Three memories wrote over lines 10..11 in turn: the first (50) wrote 1..40, the second (100) rewrote 5..15, the
  // third (200, a cleanup) rewrote line 10 again. The two older anchors still cover the lines, through the hunks
  // that replaced them. Line 10: the cleanup owns it, taken over from the second. Line 11: the second owns it (it
  // still holds it unchanged), taken over from the first.
  const std::vector<LineSignals> s = computeLineSignals(
      query, {candidate(50, {{"a.c", {{1, 40}}, {{1, 4}, {16, 40}}}}),
              candidate(100, {{"a.c", {{5, 15}}, {{5, 9}, {11, 15}}}}), candidate(200, {fresh("a.c", {{10, 10}})})});
  EXPECT_EQ(s[2].owned, 1u);
  EXPECT_EQ(s[2].prior, 0u);
  EXPECT_EQ(s[1].owned, 1u);
  EXPECT_EQ(s[1].prior, 1u) << "line 10: what the cleanup took over";
  EXPECT_EQ(s[0].prior, 1u) << "line 11: what the second memory took over";
  EXPECT_EQ(s[0].overlap, 2u);
  EXPECT_EQ(s[0].owned + s[0].originated, 0u);
  // A newer anchor whose hunk was itself replaced is the predecessor of an older owner that kept the line unchanged.
  const std::vector<LineSignals> newerRewritten = computeLineSignals(
      {{"a.c", {{10, 10}}}}, {candidate(100, {fresh("a.c", {{10, 10}})}), candidate(200, {{"a.c", {{5, 15}}, {}}})});
  EXPECT_EQ(newerRewritten[0].owned, 1u);
  EXPECT_EQ(newerRewritten[1].prior, 1u);
  // A line only one anchor covers has no predecessor.
  const std::vector<LineSignals> alone = computeLineSignals(query, {candidate(1, {fresh("a.c", {{1, 20}})})});
  EXPECT_EQ(alone[0].owned, 2u);
  EXPECT_EQ(alone[0].prior, 0u);
}

}  // namespace
}  // namespace memq
