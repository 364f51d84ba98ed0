// Ranker formulas; see rankers.h.
#include "daemon/recall/rankers.h"

#include <algorithm>
#include <cmath>

namespace memq {

nlohmann::json Signals::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["fts_unicode"] = opt(ftsUnicode);
  j["fts_trigram"] = opt(ftsTrigram);
  j["file_affinity"] = fileAffinity;
  j["cochange_affinity"] = cochangeAffinity;
  if (cochangeAffinity) j["cochange_strength"] = cochangeStrength;
  j["semantic"] = opt(semantic);
  j["semantic_rank"] = opt(semanticRank);
  j["blast_radius"] = blastRadius;
  j["use_count"] = useCount;
  j["pinned"] = pinned;
  return j;
}

std::string_view rankerName(Ranker ranker) { return ranker == Ranker::kReference ? "reference" : "default"; }

bool parseRanker(std::string_view name, Ranker& out) {
  if (name == "default") out = Ranker::kDefault;
  else if (name == "reference") out = Ranker::kReference;
  else return false;
  return true;
}

double defaultThreshold(Ranker ranker) { return ranker == Ranker::kReference ? 0.01 : 0.05; }

ScoreBreakdown referenceScore(const Signals& s) {
  constexpr double K = 60;
  ScoreBreakdown b;
  double directional = 0;
  auto term = [&](const char* name, double v) {
    b.terms[name] = v;
    return v;
  };
  if (s.ftsUnicode) directional += term("fts_unicode", 1.0 / (K + *s.ftsUnicode));
  if (s.ftsTrigram) directional += term("fts_trigram", 1.0 / (K + *s.ftsTrigram));
  if (s.fileAffinity) directional += term("file_affinity", 1.0 / (K + 1));
  if (s.cochangeAffinity && !s.fileAffinity) directional += term("cochange_affinity", 1.0 / (K + 5));
  if (s.semanticRank) directional += term("semantic_rank", 2.0 / (K + *s.semanticRank));
  b.terms["directional"] = directional;
  if (directional == 0) {
    b.score = 0;
    return b;
  }
  double useCount = term("use_count", 0.05 * std::log(static_cast<double>(s.useCount) + 1));
  double recency = term("recency", -0.05 * (1 - std::exp(-s.ageDays / 14)));
  double blast = term("blast_radius", 0.05 * std::log(static_cast<double>(s.blastRadius) + 1));
  double pinned = term("pinned", s.pinned ? 0.1 : 0);
  double sem = s.semantic && *s.semantic > 0 ? 1.5 * *s.semantic * *s.semantic + 0.1 * *s.semantic : 0;
  term("semantic_magnitude", sem);
  b.score = directional + useCount + recency + blast + pinned + sem;
  return b;
}

// memq's default: relevance first. Each directional signal is normalised to [0, 1] within the query's candidates
// and weighted; usage, pins, recency and blast radius are bounded tie-breakers that cannot outweigh a real hit.
ScoreBreakdown defaultScore(const Signals& s, const RankContext& c) {
  ScoreBreakdown b;
  auto term = [&](const char* name, double v) {
    if (v != 0) b.terms[name] = v;
    return v;
  };
  double text = 0;
  if (s.bm25Unicode && c.bestBm25Unicode < 0) text = std::max(text, *s.bm25Unicode / c.bestBm25Unicode);
  double trigram = 0;
  if (s.bm25Trigram && c.bestBm25Trigram < 0) trigram = *s.bm25Trigram / c.bestBm25Trigram;
  double file = 0;
  if (s.fileAffinity && c.queriedFiles > 0) {
    file = std::min(1.0, static_cast<double>(s.matchedFiles) / static_cast<double>(c.queriedFiles));
  }
  double cochange = s.cochangeAffinity && !s.fileAffinity ? s.cochangeStrength : 0;
  double semantic = s.semantic ? std::max(0.0, *s.semantic) : 0;

  double relevance = term("text", 1.0 * text) + term("trigram", 0.25 * trigram) + term("file", 0.9 * file) +
                     term("cochange", 0.25 * cochange) + term("semantic", 0.6 * semantic);
  b.terms["relevance"] = relevance;
  if (relevance == 0) {
    b.score = 0;
    return b;
  }
  double blast = 0;
  if (s.blastRadius > 0) {
    double scale = c.blastP95 > 0 ? std::log1p(c.blastP95) : std::log1p(20.0);
    blast = std::min(1.0, std::log1p(s.blastRadius) / scale);
  }
  double tie = term("pinned", s.pinned ? 0.03 : 0) +
               term("use_count", 0.02 * std::min(1.0, std::log1p(static_cast<double>(s.useCount)) / std::log(50.0))) +
               term("recency", -0.02 * (1 - std::exp(-s.ageDays / 30))) + term("blast_radius", 0.02 * blast);
  b.score = relevance + tie;
  return b;
}

}  // namespace memq
