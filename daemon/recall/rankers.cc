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
  if (fileAffinity) j["matched_files"] = matchedFiles;
  if (fileRank) j["file_rank"] = *fileRank;
  if (bm25Unicode) j["bm25_unicode"] = *bm25Unicode;
  if (bm25Trigram) j["bm25_trigram"] = *bm25Trigram;
  if (textBm25) j["text_bm25"] = *textBm25;
  if (subjectBm25) j["subject_bm25"] = *subjectBm25;
  j["cochange_affinity"] = cochangeAffinity;
  if (cochangeAffinity) j["cochange_strength"] = cochangeStrength;
  j["semantic"] = opt(semantic);
  j["semantic_rank"] = opt(semanticRank);
  if (lineOverlap > 0 || lineDistance) {
    j["line_overlap"] = lineOverlap;
    j["lines_owned"] = linesOwned;
    j["lines_originated"] = linesOriginated;
    j["lines_prior"] = linesPrior;
    j["line_distance"] = opt(lineDistance);
  }
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

ScoreBreakdown referenceScore(const Signals& s, bool withTerms) {
  constexpr double K = 60;
  ScoreBreakdown b;
  if (withTerms) b.terms = nlohmann::json::object();
  double directional = 0;
  auto term = [&](const char* name, double v) {
    if (withTerms) b.terms[name] = v;
    return v;
  };
  if (s.ftsUnicode) directional += term("fts_unicode", 1.0 / (K + *s.ftsUnicode));
  if (s.ftsTrigram) directional += term("fts_trigram", 1.0 / (K + *s.ftsTrigram));
  if (s.fileAffinity) directional += term("file_affinity", 1.0 / (K + 1));
  if (s.cochangeAffinity && !s.fileAffinity) directional += term("cochange_affinity", 1.0 / (K + 5));
  if (s.semanticRank) directional += term("semantic_rank", 2.0 / (K + *s.semanticRank));
  if (withTerms) b.terms["directional"] = directional;
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

// memq's default: relevance first (docs/ranking.md records how it was tuned on the development benchmark).
// Every directional signal is a bounded number: text relevance is bm25 normalised by the query's best candidate
// (whole query and its first line, the subject, computed for every candidate whatever lane found it), file affinity
// is a flat bonus plus the share of queried files matched, co-change is the neighbour's strength (in (0, 1], so a
// weak neighbour stays well below a direct hit), semantic is the cosine. Usage, pins, recency and blast radius are
// small bounded tie-breakers that cannot outweigh a real hit.
namespace {
struct DefaultWeights {
  double file = 1.0;      // attached to a queried file
  double matched = 0.5;   // ... times the share of the queried files it is attached to
  double text = 1.0;      // bm25 of the whole query / the best candidate's
  double subject = 1.0;   // bm25 of the query's first line / the best candidate's
  double trigram = 0.1;   // trigram-lane bm25 / the best
  double cochange = 1.5;  // co-change strength (not a direct hit)
  double semantic = 0.5;  // cosine
  // Line anchors, when the query names lines: lines originated / the best candidate's, lines owned / the best's,
  // lines held before their owner / the best's, and for a candidate anchored near the lines but not on them
  // 1 / (1 + distance / 10). Where a line came from (the oldest memory holding it unchanged) weighs twice where it
  // was touched last (the newest, as blame gives it); what the last change took the line over from weighs a little
  // more than the last change itself, which is often a cleanup over the change that matters. Covering a line in
  // none of these roles scores nothing: an old anchor under many later rewrites covers every line it ever had.
  // Tuned on iproute2_rolling with `memq bench retrieval --lines` (docs/ranking.md).
  double linesOriginated = 4.0;
  double linesOwned = 2.0;
  double linesPrior = 2.5;
  double lineNear = 0.5;
};
constexpr DefaultWeights kW;

double normalised(const std::optional<double>& bm25, double best) {
  return bm25 && best < 0 ? std::clamp(*bm25 / best, 0.0, 1.0) : 0.0;
}
}  // namespace

ScoreBreakdown defaultScore(const Signals& s, const RankContext& c, bool withTerms) {
  ScoreBreakdown b;
  if (withTerms) b.terms = nlohmann::json::object();
  auto term = [&](const char* name, double v) {
    if (withTerms && v != 0) b.terms[name] = v;
    return v;
  };
  // Without the rescoring pass (a caller that filled only the lanes' figures) the unicode lane's bm25 stands in.
  double text = s.textBm25 ? normalised(s.textBm25, c.bestTextBm25) : normalised(s.bm25Unicode, c.bestBm25Unicode);
  double subject = s.subjectBm25 ? normalised(s.subjectBm25, c.bestSubjectBm25) : text;
  double trigram = normalised(s.bm25Trigram, c.bestBm25Trigram);
  double file = s.fileAffinity ? 1.0 : 0.0;
  double matched = 0;
  if (s.fileAffinity && c.queriedFiles > 0) {
    matched = std::min(1.0, static_cast<double>(s.matchedFiles) / static_cast<double>(c.queriedFiles));
  }
  double cochange = s.cochangeAffinity && !s.fileAffinity ? std::clamp(s.cochangeStrength, 0.0, 1.0) : 0;
  double semantic = s.semantic ? std::max(0.0, *s.semantic) : 0;
  auto share = [](uint32_t v, uint32_t best) { return best > 0 ? static_cast<double>(v) / best : 0.0; };
  double owned = share(s.linesOwned, c.bestLinesOwned);
  double originated = share(s.linesOriginated, c.bestLinesOriginated);
  double prior = share(s.linesPrior, c.bestLinesPrior);
  double near = s.lineOverlap == 0 && s.lineDistance ? 1.0 / (1.0 + *s.lineDistance / 10.0) : 0.0;

  double relevance = term("file", kW.file * file) + term("matched_files", kW.matched * matched) +
                     term("text", kW.text * text) + term("subject", kW.subject * subject) +
                     term("trigram", kW.trigram * trigram) + term("cochange", kW.cochange * cochange) +
                     term("semantic", kW.semantic * semantic) + term("lines_owned", kW.linesOwned * owned) +
                     term("lines_prior", kW.linesPrior * prior) + term("lines_near", kW.lineNear * near) +
                     term("lines_originated", kW.linesOriginated * originated);
  if (withTerms) b.terms["relevance"] = relevance;
  if (relevance == 0 || !s.directional()) {
    b.score = 0;
    return b;
  }
  // A file with 20 or more dependents gets the whole tie-break: past that a hub is a hub, and a log scale keeps a
  // thousand dependents from mattering more than twenty.
  const double blast = s.blastRadius > 0 ? std::min(1.0, std::log1p(s.blastRadius) / std::log1p(20.0)) : 0.0;
  double tie = term("pinned", s.pinned ? 0.03 : 0) +
               term("use_count", 0.02 * std::min(1.0, std::log1p(static_cast<double>(s.useCount)) / std::log(50.0))) +
               term("recency", -0.02 * (1 - std::exp(-s.ageDays / 30))) + term("blast_radius", 0.02 * blast);
  b.score = relevance + tie;
  return b;
}

}  // namespace memq
