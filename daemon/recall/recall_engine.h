// Recall (docs/design.md §7): candidate lanes per scope (unicode FTS, trigram FTS with the bigram fallback, file affinity,
// co-change affinity, semantic), scoring by the chosen ranker, and selection (threshold, limit, max_chars).
//
// Usage, per request: prepareQuery() once; gatherCandidates() for each readable scope while holding that scope's
// lock; rankAndSelect() over all candidates (no lock); loadHitRows() for each scope holding the hits, under its lock
// again; then the caller marks the returned ids used. Candidates come from the store's mirror, so only the few
// returned hits' rows are ever read from SQLite.
// Hidden, superseded and rejected memories never become candidates: every lane reads active rows only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/model/memory.h"
#include "daemon/recall/rankers.h"
#include "daemon/recall/recall_source.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/recall/signals.h"

namespace memq {

inline constexpr int kFtsCandidateLimit = 30;       // the reference system's FTS candidate limit
inline constexpr int kFileCandidateLimit = 30;
inline constexpr size_t kSemanticTopK = 20;
inline constexpr float kSemanticMinCosine = 0.18f;
inline constexpr size_t kCochangeTotal = 6;         // the reference system's caps, kept for `reference`
inline constexpr size_t kCochangePerFile = 2;
// The default ranker's candidate generation (docs/ranking.md): more file candidates (they are re-ranked by text
// relevance, so a popular file's older memories are not cut off by recency alone).
inline constexpr int kDefaultFtsCandidateLimit = 30;
inline constexpr int kDefaultFileCandidateLimit = 200;

struct RecallRequest {
  std::string query;
  std::vector<std::string> files;  // project-root relative
  size_t limit = 3;
  size_t maxChars = 2400;
  std::optional<double> threshold;
  Ranker ranker = Ranker::kDefault;
  bool explain = false;
  bool useFileSignals = true;  // memory/search: false
  bool useSemantic = true;
  // The lines of `files` the query names ({path, lines} entries; paths normalised like `files`). The service turns
  // them into each candidate's line signals (daemon/service/recall_lines.h) before ranking.
  std::vector<PathLines> lines;
};

struct PreparedQuery {
  std::string unicodeMatch;
  std::string trigramMatch;
  std::string bigramMatch;
  std::string subjectMatch;   // default ranker: unicode match of the query's first line, for rescoring ("" if one line)
  std::vector<float> vector;  // empty when the query is empty
  std::vector<CoChangeNeighbor> cochange;  // neighbours of the queried files, strongest first
  // The queried files that were renamed, with the paths they had (RepoSignals::renamedFrom): the file lane and the
  // line signals take refs on those paths as refs on the queried file.
  std::vector<RenamedPath> renamed;
};

// A memory that some lane found, with what ranking and selection need; its row is not loaded.
struct Candidate {
  int64_t pk = 0;
  std::string scope;
  Signals signals;
  size_t cost = 0;  // utf16Length(summary) + utf16Length(details), what it takes of max_chars
};

// What became of an anchored file ref's lines in the work tree (docs/anchors.md, "Staleness by lines").
enum class AnchoredLinesState { kUnchanged, kMoved, kRewritten, kDeleted };
std::string_view anchoredLinesStateName(AnchoredLinesState state);

struct AnchoredLinesNow {
  std::string path;
  AnchoredLinesState state = AnchoredLinesState::kUnchanged;
  LineRanges lines;  // where they are in the work-tree file now (empty when deleted)
  // The ref's own path when the lines were carried into the file it was renamed to (`path`); "" otherwise.
  std::string renamedFrom;
};

struct RecallHit {
  Memory memory;  // rankAndSelect fills pk and scope only; loadHitRows the rest
  double score = 0;
  double normalizedScore = 0;
  Signals signals;
  ScoreBreakdown breakdown;
  bool stale = false;
  std::vector<std::string> changedFiles;
  std::vector<std::string> missingFiles;
  // For a project hit's anchored refs whose lines could be carried to the work tree: what became of them. A file
  // whose anchored lines are unchanged or only moved is not in changedFiles and does not make the hit stale.
  std::vector<AnchoredLinesNow> anchoredLines;
};

PreparedQuery prepareQuery(const RecallRequest& request, const Embedder& embedder, RepoSignals* repo);

// Wall time per lane, accumulated (benchmarks and diagnostics; gatherCandidates adds to it when given one).
struct RecallTimings {
  double unicodeMs = 0;
  double rescoreMs = 0;  // every candidate's text and subject bm25 (the default ranker)
  double trigramMs = 0;  // the trigram lane and, when it ran, the bigram fallback
  double filesMs = 0;    // file and co-change affinity
  double semanticMs = 0;  // the wait for the semantic lane once the others are done (it runs beside them)
  double loadMs = 0;     // signal assembly from the mirror (and, in a benchmark, loading the hits' rows)
  int trigramRuns = 0;   // how many gatherCandidates calls queried the trigram lane
};

// One scope's candidates with their signals. `repo` gives blast radius (may be null).
Result<std::vector<Candidate>> gatherCandidates(RecallSource& store, const RecallRequest& request,
                                                const PreparedQuery& query, RepoSignals* repo,
                                                RecallTimings* timings = nullptr);

// The query's first non-empty line, trimmed ("" when the query has no second non-empty line).
std::string querySubject(const std::string& query);

std::vector<RecallHit> rankAndSelect(std::vector<Candidate> candidates, const RecallRequest& request);

// Loads the full rows of the hits that belong to `store`'s scope. A hit whose row is gone or no longer active (a
// write between gatherCandidates and now, e.g. another connection hid it) is dropped from `hits`, never returned.
Status loadHitRows(RecallSource& store, std::vector<RecallHit>& hits);

// The work tree's blob ids (RepoSignals::currentBlobId) as one pass over many hits sees them: each path asked once.
// A file edited moments ago is read on every ask (its stamp proves nothing yet), and hits share files.
class CurrentBlobIds {
 public:
  explicit CurrentBlobIds(RepoSignals& repo) : repo_(repo) {}
  const std::optional<std::string>& of(const std::string& path);

 private:
  RepoSignals& repo_;
  std::unordered_map<std::string, std::optional<std::string>> ids_;
};

// Marks a hit whose referenced files changed (stale) or vanished since the memory recorded them.
// `renamed` (the query's renamed files, PreparedQuery::renamed): a plain ref on a path that one of them had is
// compared with the file it became (the same blob: fresh; another: changed), not reported missing.
void annotateStaleness(RecallHit& hit, CurrentBlobIds& current, const std::vector<RenamedPath>& renamed = {});

nlohmann::json recallHitToJson(const RecallHit& hit, bool explain);

}  // namespace memq
