// The two rankers of MEMQ.md §7. `reference` is the reference's combineScore (reference §6.5) signal for signal;
// `default` is memq's own (docs/ranking.md records how it was tuned). Pure functions of the signals.
#pragma once

#include <string_view>

#include "daemon/recall/signals.h"

namespace memq {

enum class Ranker { kDefault, kReference };

std::string_view rankerName(Ranker ranker);
bool parseRanker(std::string_view name, Ranker& out);

ScoreBreakdown referenceScore(const Signals& s);
ScoreBreakdown defaultScore(const Signals& s, const RankContext& context);

// Default selection threshold per ranker (reference: 0.01 as its DEFAULT_THRESHOLD).
double defaultThreshold(Ranker ranker);

}  // namespace memq
