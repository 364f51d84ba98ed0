// The two rankers of docs/design.md §7. `reference` is the reference's combineScore signal for signal;
// `default` is memq's own (docs/ranking.md records how it was tuned). Pure functions of the signals.
#pragma once

#include <string_view>

#include "daemon/recall/signals.h"

namespace memq {

enum class Ranker { kDefault, kReference };

std::string_view rankerName(Ranker ranker);
bool parseRanker(std::string_view name, Ranker& out);

// `withTerms` false leaves breakdown.terms null (same score): recall names the terms only of the hits it returns, and
// only when asked to explain them.
ScoreBreakdown referenceScore(const Signals& s, bool withTerms = true);
ScoreBreakdown defaultScore(const Signals& s, const RankContext& context, bool withTerms = true);

// Default selection threshold per ranker (reference: 0.01 as its DEFAULT_THRESHOLD).
double defaultThreshold(Ranker ranker);

}  // namespace memq
