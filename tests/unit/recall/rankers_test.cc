// The reference ranker reproduces the reference system's formula exactly; the default keeps relevance ahead of bonuses.
#include <gtest/gtest.h>

#include <cmath>

#include "daemon/recall/rankers.h"

namespace memq {
namespace {

TEST(ReferenceRanker, HandComputedCases) {
  // FTS rank 1 in both lanes, direct file hit, semantic rank 2 at cosine 0.5, used 3 times 7 days ago, pinned,
  // blast radius 4.
  Signals s;
  s.ftsUnicode = 1;
  s.ftsTrigram = 1;
  s.fileAffinity = true;
  s.semanticRank = 2;
  s.semantic = 0.5;
  s.useCount = 3;
  s.ageDays = 7;
  s.pinned = true;
  s.blastRadius = 4;
  double directional = 1.0 / 61 + 1.0 / 61 + 1.0 / 61 + 2.0 / 62;
  double expected = directional + 0.05 * std::log(4.0) + -0.05 * (1 - std::exp(-7.0 / 14)) + 0.05 * std::log(5.0) +
                    0.1 + (1.5 * 0.25 + 0.05);
  EXPECT_NEAR(referenceScore(s).score, expected, 1e-12);
  EXPECT_NEAR(referenceScore(s).score, 0.7365515390, 1e-6);
}

// Scored without terms (every candidate while ranking): the same score, and no terms object built.
TEST(Rankers, WithoutTermsTheScoreIsTheSameAndNoTermsAreBuilt) {
  Signals s;
  s.ftsUnicode = 2;
  s.bm25Unicode = -3.0;
  s.textBm25 = -3.0;
  s.fileAffinity = true;
  s.matchedFiles = 1;
  s.semantic = 0.4;
  s.semanticRank = 1;
  RankContext ctx;
  ctx.bestBm25Unicode = ctx.bestTextBm25 = ctx.bestSubjectBm25 = -4.0;
  ctx.queriedFiles = 1;
  EXPECT_EQ(referenceScore(s, false).score, referenceScore(s, true).score);
  EXPECT_TRUE(referenceScore(s, false).terms.is_null());
  EXPECT_TRUE(referenceScore(s, true).terms.contains("directional"));
  EXPECT_EQ(defaultScore(s, ctx, false).score, defaultScore(s, ctx, true).score);
  EXPECT_TRUE(defaultScore(s, ctx, false).terms.is_null());
  EXPECT_TRUE(defaultScore(s, ctx, true).terms.contains("relevance"));
}

TEST(ReferenceRanker, NoDirectionalSignalMeansZeroWhateverTheBonuses) {
  Signals s;
  s.useCount = 100;
  s.pinned = true;
  s.blastRadius = 50;
  EXPECT_EQ(referenceScore(s).score, 0.0);
}

TEST(ReferenceRanker, CochangeOnlyCountsWithoutADirectFileHit) {
  Signals s;
  s.cochangeAffinity = true;
  EXPECT_NEAR(referenceScore(s).score, 1.0 / 65, 1e-12);
  s.fileAffinity = true;
  EXPECT_NEAR(referenceScore(s).score, 1.0 / 61, 1e-12);
}

TEST(ReferenceRanker, BonusesSwampRelevanceAsTheReferenceDoes) {
  // The reference's known fault, reproduced on purpose: a weak hit on a popular hub memory wins.
  Signals precise;
  precise.ftsUnicode = 1;
  precise.fileAffinity = true;
  Signals popular;
  popular.ftsUnicode = 30;
  popular.useCount = 10;
  popular.blastRadius = 20;
  EXPECT_GT(referenceScore(popular).score, referenceScore(precise).score);
}

TEST(DefaultRanker, RelevanceBeatsPopularity) {
  RankContext ctx;
  ctx.bestBm25Unicode = -10;
  ctx.queriedFiles = 1;
  Signals precise;
  precise.ftsUnicode = 1;
  precise.bm25Unicode = -10;
  precise.fileAffinity = true;
  precise.matchedFiles = 1;
  Signals popular;
  popular.ftsUnicode = 30;
  popular.bm25Unicode = -1;
  popular.useCount = 1000;
  popular.blastRadius = 500;
  popular.pinned = true;
  EXPECT_GT(defaultScore(precise, ctx).score, defaultScore(popular, ctx).score);
  EXPECT_EQ(defaultScore(Signals{}, ctx).score, 0.0);
}

TEST(DefaultRanker, TextRelevanceOrdersFileCandidates) {
  RankContext ctx;
  ctx.bestTextBm25 = -8;
  ctx.bestSubjectBm25 = -4;
  ctx.queriedFiles = 1;
  Signals onFileRelevant;
  onFileRelevant.fileAffinity = true;
  onFileRelevant.matchedFiles = 1;
  onFileRelevant.textBm25 = -6;
  onFileRelevant.subjectBm25 = -4;
  Signals onFileOnly = onFileRelevant;
  onFileOnly.textBm25.reset();
  onFileOnly.subjectBm25.reset();
  onFileOnly.useCount = 500;  // popularity does not make up for relevance
  onFileOnly.pinned = true;
  Signals textOnly;
  textOnly.ftsUnicode = 1;
  textOnly.textBm25 = -8;
  textOnly.subjectBm25 = -1;
  EXPECT_GT(defaultScore(onFileRelevant, ctx).score, defaultScore(onFileOnly, ctx).score);
  EXPECT_GT(defaultScore(onFileRelevant, ctx).score, defaultScore(textOnly, ctx).score);
}

TEST(DefaultRanker, WeakCochangeStaysBelowADirectHit) {
  RankContext ctx;
  ctx.queriedFiles = 1;
  Signals direct;
  direct.fileAffinity = true;
  direct.matchedFiles = 1;
  Signals weak;
  weak.cochangeAffinity = true;
  weak.cochangeStrength = 0.2;
  Signals strong = weak;
  strong.cochangeStrength = 0.8;
  EXPECT_GT(defaultScore(direct, ctx).score, defaultScore(weak, ctx).score);
  EXPECT_GT(defaultScore(strong, ctx).score, defaultScore(weak, ctx).score);
  EXPECT_GT(defaultScore(weak, ctx).score, 0.0);
}

}  // namespace
}  // namespace memq

namespace memq {
namespace {

TEST(DefaultRanker, TheMemoryOwningTheQueriedLinesBeatsOneThatOnlySharesTheFile) {
  // Memories of one busy file, equally relevant by text: the one whose anchor holds the lines the agent is on
  // wins, one anchored a few lines away beats one anchored far away, and one whose anchor covers the lines in no
  // role (neither owner, nor origin, nor what the owner took them over from) gets nothing for it.
  RankContext ctx;
  ctx.queriedFiles = 1;
  ctx.bestTextBm25 = -4;
  ctx.bestLinesOwned = 6;
  Signals base;
  base.fileAffinity = true;
  base.matchedFiles = 1;
  base.textBm25 = -2;
  Signals owner = base;
  owner.lineOverlap = 6;
  owner.linesOwned = 6;
  owner.lineDistance = 0;
  Signals covering = base;  // covers the lines under several later anchors
  covering.lineOverlap = 6;
  covering.lineDistance = 0;
  Signals near = base;
  near.lineDistance = 3;
  Signals far = base;
  far.lineDistance = 400;
  const double ownerScore = defaultScore(owner, ctx).score;
  const double nearScore = defaultScore(near, ctx).score;
  const double farScore = defaultScore(far, ctx).score;
  const double fileOnly = defaultScore(base, ctx).score;
  EXPECT_GT(ownerScore, nearScore);
  EXPECT_GT(nearScore, farScore);
  EXPECT_GT(farScore, fileOnly);
  EXPECT_DOUBLE_EQ(defaultScore(covering, ctx).score, fileOnly);
  EXPECT_NEAR(ownerScore - fileOnly, 2.0, 1e-12);
  EXPECT_NEAR(nearScore - fileOnly, 0.5 / (1 + 0.3), 1e-12);
  auto terms = defaultScore(owner, ctx).terms;
  EXPECT_DOUBLE_EQ(terms["lines_owned"].get<double>(), 2.0);
  EXPECT_FALSE(terms.contains("lines_overlap")) << "covering alone is not a term";
  EXPECT_FALSE(terms.contains("lines_near")) << "nearness counts only for a memory that covers none of the lines";
}

TEST(DefaultRanker, WhatTheLastChangeTookTheLinesOverFromBeatsAMemoryThatOnlyCoversThem) {
  // A cleanup rewrote the lines (it owns and originates them now); of the two older memories under it, the one
  // the cleanup took the lines over from outranks one that merely covers them, and a memory anchored near them.
  RankContext ctx;
  ctx.queriedFiles = 1;
  ctx.bestTextBm25 = -4;
  ctx.bestLinesOwned = 3;
  ctx.bestLinesOriginated = 3;
  ctx.bestLinesPrior = 3;
  Signals base;
  base.fileAffinity = true;
  base.matchedFiles = 1;
  base.textBm25 = -2;
  base.lineOverlap = 3;
  base.lineDistance = 0;
  Signals replaced = base;
  replaced.linesPrior = 3;
  Signals covering = base;
  Signals near = base;
  near.lineOverlap = 0;
  near.lineDistance = 1;
  const auto replacedScore = defaultScore(replaced, ctx);
  EXPECT_GT(replacedScore.score, defaultScore(covering, ctx).score);
  EXPECT_GT(replacedScore.score, defaultScore(near, ctx).score);
  EXPECT_DOUBLE_EQ(replacedScore.terms.at("lines_prior").get<double>(), 2.5);
  Signals cleanup = base;
  cleanup.linesOwned = 3;
  cleanup.linesOriginated = 3;
  EXPECT_GT(defaultScore(cleanup, ctx).score, replacedScore.score) << "the owner that wrote the lines still leads";
}

TEST(DefaultRanker, WhereTheLinesCameFromWeighsMoreThanWhoTouchedThemLast) {
  RankContext ctx;
  ctx.queriedFiles = 1;
  ctx.bestTextBm25 = -4;
  ctx.bestLinesOwned = 4;
  ctx.bestLinesOriginated = 4;
  Signals base;
  base.fileAffinity = true;
  base.matchedFiles = 1;
  base.textBm25 = -2;
  base.lineOverlap = 4;
  base.lineDistance = 0;
  Signals origin = base;  // wrote the lines first; a newer memory touched them since
  origin.linesOriginated = 4;
  Signals lastTouch = base;
  lastTouch.linesOwned = 4;
  const auto originScore = defaultScore(origin, ctx);
  EXPECT_GT(originScore.score, defaultScore(lastTouch, ctx).score);
  EXPECT_DOUBLE_EQ(originScore.terms.at("lines_originated").get<double>(), 4.0);
}

TEST(DefaultRanker, LineSignalsNeverLiftAMemoryWithoutADirectionalSignal) {
  RankContext ctx;
  ctx.bestLinesOwned = 3;
  Signals s;  // no lane found it
  s.lineOverlap = 3;
  s.linesOwned = 3;
  EXPECT_EQ(defaultScore(s, ctx).score, 0.0);
}

}  // namespace
}  // namespace memq
