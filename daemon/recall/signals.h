// The evidence recall gathers for one candidate memory, and the score terms a ranker derives from it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace memq {

struct Signals {
  std::optional<int> ftsUnicode;   // 1-based rank in the unicode lane
  std::optional<double> bm25Unicode;  // raw bm25 (lower is better)
  std::optional<int> ftsTrigram;   // 1-based rank in the trigram lane
  std::optional<double> bm25Trigram;
  // Text relevance of the whole query and of its first line (the subject), bm25 computed for every candidate
  // (default ranker only; lower is better). Filled by the rescoring pass, whichever lane found the candidate.
  std::optional<double> textBm25;
  std::optional<double> subjectBm25;
  bool fileAffinity = false;       // attached to a queried file
  int matchedFiles = 0;            // how many queried files it is attached to
  std::optional<int> fileRank;     // 1-based position in the file lane (newest first)
  bool cochangeAffinity = false;   // attached to a co-change neighbour of a queried file (and not a direct hit)
  double cochangeStrength = 0;     // strongest neighbour strength in (0, 1]
  std::optional<double> semantic;  // cosine
  std::optional<int> semanticRank;
  // Line anchors (docs/anchors.md), when the query names lines of files this memory is anchored in, its anchors
  // carried to the query's version of each file: query lines they cover, of those the lines this memory owns (the
  // newest anchor still holding a line wins it, as blame would), and the distance in lines from the query's lines to
  // its nearest anchored line (0 when they overlap; unset without an anchor on a queried path).
  uint32_t lineOverlap = 0;
  uint32_t linesOwned = 0;
  uint32_t linesOriginated = 0;  // query lines whose oldest unchanged holder is this memory (where they came from)
  uint32_t linesPrior = 0;       // query lines whose owner took them over from this memory (the newest anchor but it)
  std::optional<uint32_t> lineDistance;
  int blastRadius = 0;             // max over the memory's files
  double ageDays = 0;              // since last_used_at
  int64_t useCount = 0;
  bool pinned = false;

  bool directional() const {
    return ftsUnicode || ftsTrigram || fileAffinity || cochangeAffinity || semanticRank;
  }
  // Calls `f` with the name of each lane that fired, in the order a recall hit's `signals` lists them (docs/protocol.md).
  template <typename F>
  void forEachFiredLane(F&& f) const {
    if (fileAffinity) f("file");
    if (cochangeAffinity && !fileAffinity) f("cochange");
    if (semanticRank) f("semantic");
    if (ftsUnicode) f("fts");
    if (ftsTrigram) f("trigram");
    if (pinned) f("pinned");
  }
  nlohmann::json toJson() const;
};

// Per-query context rankers may normalise against.
struct RankContext {
  double bestBm25Unicode = 0;  // most negative bm25 among candidates (0 when none)
  double bestBm25Trigram = 0;
  double bestTextBm25 = 0;     // most negative textBm25 / subjectBm25 among candidates
  double bestSubjectBm25 = 0;
  double maxCochange = 0;      // strongest co-change strength among candidates
  size_t queriedFiles = 0;
  uint32_t bestLinesOriginated = 0;  // the most query lines any candidate originated
  uint32_t bestLinesOwned = 0;   // the most query lines any candidate owns
  uint32_t bestLinesPrior = 0;   // the most query lines any candidate held before their owner
};

struct ScoreBreakdown {
  double score = 0;
  // Each term of the score, for `explain`: an object when the ranker was asked for them, else null (an empty object
  // is a heap allocation, and ranking scores every candidate).
  nlohmann::json terms;
};

}  // namespace memq
