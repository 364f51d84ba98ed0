// RecallSource: what recall reads of one scope's memories — the candidate lanes (full-text, file, semantic), the
// per-row figures it ranks by, and the rows it returns. Recall depends on this interface only; the store implements
// it (MemoryStore answers from its in-memory mirror of the rows, docs/architecture.md "Store").
#pragma once

#include <cstdint>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/embed/vector_index.h"
#include "daemon/model/memory.h"
#include "protocol/status.h"

namespace memq {

enum class FtsLane { kUnicode, kTrigram };

struct FtsHit {
  int64_t pk = 0;
  double bm25 = 0;
  int rank = 0;  // 1-based
};

struct FileHit {
  int64_t pk = 0;
  int matchedFiles = 0;
};

// What recall ranks and selects by, kept for every row so that only the returned hits are read from SQLite.
struct MirroredRow {
  bool active = false;
  std::string lastUsedAt;
  std::vector<std::string> paths;  // file refs
  int64_t useCount = 0;
  bool pinned = false;
  size_t textCost = 0;  // utf16Length(summary) + utf16Length(details): what a hit costs of max_chars
  int64_t pk = 0;
  // lastUsedAt's digits as one number when it has isoNow's fixed format (then numbers order as the bytes do), else
  // -1 (the file lane then compares the strings, as SQLite compares TEXT).
  int64_t lastUsedKey = -1;
};

// One anchored file ref of an active row (docs/anchors.md): its lines in the version anchor.blob, with that
// version's content when memq keeps it (anchor.keptContent; null when the repository has it).
struct AnchoredRef {
  int64_t pk = 0;
  std::string path;
  FileAnchor anchor;
};

// Every lane reads active rows only.
class RecallSource {
 public:
  virtual ~RecallSource() = default;

  // The scope stamped on every row this source returns.
  virtual const std::string& scope() const = 0;
  // True only when the source is known to hold no rows at all, so every lane would answer nothing and recall skips
  // it (an empty global scope costs a recall nothing); false when it may hold some.
  virtual bool holdsNoRows() { return false; }
  // The `limit` best active rows for an FTS5 MATCH expression on one lane, by bm25.
  virtual Result<std::vector<FtsHit>> searchFts(FtsLane lane, const std::string& matchExpression, int limit) = 0;
  // The unicode lane's bm25 of each of `pks` for the expression (nullopt: the row does not match).
  virtual Result<std::vector<std::optional<double>>> textBm25(const std::string& matchExpression,
                                                              const std::vector<int64_t>& pks) = 0;
  // Active rows attached to any of `paths`, with how many of them, newest use first, then highest pk.
  virtual Result<std::vector<FileHit>> findByPaths(const std::vector<std::string>& paths, int limit) = 0;
  // findByPaths({path}, limit) for each path, in one call.
  virtual Result<std::vector<std::vector<FileHit>>> findByEachPath(const std::vector<std::string>& paths,
                                                                   int limit) = 0;
  // The `k` active rows nearest `query` by cosine (≥ minScore), best first: begun now, answered by the future's
  // get(). The source may scan on another thread meanwhile, so the caller can run the other lanes; until it has the
  // answer it changes nothing in the source (recall holds the scope's lock through all of its lanes).
  virtual std::future<std::vector<VectorIndex::Hit>> beginNearestActive(std::vector<float> query, size_t k,
                                                                        float minScore) = 0;
  // The row figures of each pk (null for a row that is gone), or nullopt when the source keeps none (the caller
  // then loads the rows with loadMany). The pointers are valid until the next call on this source.
  virtual std::optional<std::vector<const MirroredRow*>> mirroredRows(const std::vector<int64_t>& pks) = 0;
  // The rows of `pks` (any state) with their file refs, in input order; a pk that is gone is left out.
  virtual Result<std::vector<Memory>> loadMany(const std::vector<int64_t>& pks) = 0;
  // The anchored refs of the active rows among `pks` on any of `paths`, by path then pk. A source without anchors
  // has none.
  virtual Result<std::vector<AnchoredRef>> anchoredRefsOn(const std::vector<std::string>& /*paths*/,
                                                          const std::vector<int64_t>& /*pks*/) {
    return std::vector<AnchoredRef>{};
  }
};

}  // namespace memq
