// MemoryStore's reads: rows by id, list and export pages, the audit journal, tombstones, statistics, and recall's
// RecallSource (answered from the mirror when it is ready, else from SQL). Every read first takes the connection
// back from the background applier (takeDatabase).
#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "daemon/store/memory_store.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"

namespace memq {

namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<int64_t> MemoryStore::pkOf(const std::string& id) {
  takeDatabase();  // saves handed to the background applier are written first
  return sql_->pkOf(id);
}

std::optional<std::string> MemoryStore::idOf(int64_t pk) {
  takeDatabase();  // saves handed to the background applier are written first
  return sql_->idOf(pk);
}

Result<std::vector<std::string>> MemoryStore::matchIds(const std::string& idOrPrefix, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    std::vector<std::string> out;
    if (idOrPrefix.empty()) return out;
    if (sql_->pkOf(idOrPrefix)) return std::vector<std::string>{idOrPrefix};
    if (idOrPrefix.size() < 4) return out;
    return sql_->idsWithPrefix(lower(idOrPrefix), limit);
  } catch (const std::exception& e) {
    return storageError(e);
  }
}

Result<std::vector<Memory>> MemoryStore::exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                                    const std::string& afterId, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!pendingUsage_.empty()) MEMQ_RETURN_IF_ERROR(flushUsage());  // an export carries every use
  try {
    return sql_->exportPage(state, afterCreatedAt, afterId, limit);
  } catch (const std::exception& e) {
    return storageError(e, "export");
  }
}

Result<std::optional<size_t>> MemoryStore::keptVersionBytes(const std::string& blob) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->keptVersionBytes(blob);
  } catch (const std::exception& e) {
    return storageError(e, "export");
  }
}

Result<std::shared_ptr<const std::string>> MemoryStore::keptVersion(const std::string& blob) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->keptVersion(blob);
  } catch (const std::exception& e) {
    return storageError(e, "export");
  }
}

Result<ListResult> MemoryStore::list(const ListFilter& f) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!pendingUsage_.empty()) MEMQ_RETURN_IF_ERROR(flushUsage());  // list sorts by last use
  try {
    return sql_->list(f);
  } catch (const std::exception& e) {
    return storageError(e, "list");
  }
}

Result<std::vector<AuditEvent>> MemoryStore::audit(const AuditFilter& f) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->events(f);
  } catch (const std::exception& e) {
    return storageError(e, "audit");
  }
}

Result<std::vector<Tombstone>> MemoryStore::tombstones() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->tombstones();
  } catch (const std::exception& e) {
    return storageError(e, "tombstones");
  }
}

Result<std::optional<Tombstone>> MemoryStore::tombstoneFor(const std::string& contentHash) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->tombstoneFor(contentHash);
  } catch (const std::exception& e) {
    return storageError(e, "tombstone");
  }
}

Result<nlohmann::json> MemoryStore::stats() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    nlohmann::json out = sql_->stats();
    out["scope"] = scope();
    out["path"] = path();
    out["embedder"] = embedder().model();
    out["vectors"] = mirror_->active().size();
    out["schema_version"] = sql_->schemaVersion();
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "stats");
  }
}

Result<std::vector<FtsHit>> MemoryStore::searchFts(FtsLane lane, const std::string& matchExpression, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  std::vector<FtsHit> out;
  if (matchExpression.empty()) return out;
  if (lane == FtsLane::kUnicode) {
    try {
      if (mirror_->ready()) {
        if (auto phrases = mirror_->text()->parse(matchExpression)) {
          int rank = 0;
          for (const auto& [pk, bm25] : mirror_->text()->best(*phrases, static_cast<size_t>(std::max(limit, 0)))) {
            out.push_back({pk, bm25, ++rank});
          }
          return out;
        }
      }
    } catch (const std::exception& e) {
      mirror_->markStale();  // an evaluation cut short may leave the index's scratch dirty: rebuild before reuse
      return storageError(e, "full-text search");
    }
    auto matches = matchText(matchExpression);
    if (!matches) return matches.status();
    int rank = 0;
    for (const auto& [pk, bm25] : matches->best(static_cast<size_t>(std::max(limit, 0)))) out.push_back({pk, bm25, ++rank});
    return out;
  }
  try {
    // A batch's rows reach the FTS lanes when it commits.
    if (Status st = saves_->settle(); !st) return storageError(st, "full-text search");
    return sql_->rankedActive(lane, matchExpression, limit, std::nullopt);
  } catch (const std::exception& e) {
    // An FTS syntax error means the query builder let something through; an empty lane is the safe answer.
    if (StoreSql::isQueryError(e)) return out;
    return storageError(e, "full-text search");
  }
}

Result<TextMatches> MemoryStore::matchText(const std::string& matchExpression) {
  takeDatabase();  // saves handed to the background applier are written first
  if (matchExpression.empty()) return TextMatches{};
  try {
    if (mirror_->ready()) {
      if (auto phrases = mirror_->text()->parse(matchExpression)) return mirror_->text()->evaluate(*phrases);
    }
    // Another shape of expression, or no index: SQLite scores every match (the slow path the index replaces).
    // A batch's rows reach the FTS lanes when it commits.
    if (Status st = saves_->settle(); !st) return storageError(st, "full-text search");
    return TextMatches(sql_->matchUnicode(matchExpression));
  } catch (const std::exception& e) {
    // An FTS syntax error means the query builder let something through; no rows is the safe answer.
    if (StoreSql::isQueryError(e)) return TextMatches{};
    if (!StoreSql::isSqliteError(e)) mirror_->markStale();  // the text index threw: as in searchFts
    return storageError(e, "full-text search");
  }
}

Result<std::vector<std::optional<double>>> MemoryStore::textBm25(const std::string& matchExpression,
                                                                  const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!matchExpression.empty()) {
    try {
      if (mirror_->ready()) {
        if (auto phrases = mirror_->text()->parse(matchExpression)) return mirror_->text()->bm25Of(*phrases, pks);
      }
    } catch (const std::exception& e) {
      mirror_->markStale();  // as in searchFts
      return storageError(e, "full-text search");
    }
  }
  auto matches = matchText(matchExpression);
  if (!matches) return matches.status();
  std::vector<std::optional<double>> out;
  out.reserve(pks.size());
  for (int64_t pk : pks) out.push_back(matches->bm25Of(pk));
  return out;
}

Result<std::vector<std::vector<FileHit>>> MemoryStore::findByEachPath(const std::vector<std::string>& paths,
                                                                      int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  std::vector<std::vector<FileHit>> out;
  out.reserve(paths.size());
  if (limit > 0 && mirror_->ready()) {
    for (const auto& path : paths) out.push_back(mirror_->pathHits({path}, limit));
    return out;
  }
  for (const auto& path : paths) {
    auto hits = findByPaths({path}, limit);
    if (!hits) return hits.status();
    out.push_back(std::move(*hits));
  }
  return out;
}

Result<std::vector<FileHit>> MemoryStore::findByPaths(const std::vector<std::string>& paths, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  if (paths.empty()) return std::vector<FileHit>{};
  // The mirror answers as the SQL does: active rows attached to any of the paths, with how many of them, newest use
  // first (last_used_at compared as SQLite compares TEXT: bytewise), then highest pk.
  if (limit > 0 && mirror_->ready()) return mirror_->pathHits(paths, limit);
  try {
    return sql_->activeByPaths(paths, limit);
  } catch (const std::exception& e) {
    return storageError(e, "file lookup");
  }
}

Result<std::vector<Memory>> MemoryStore::loadMany(const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    std::vector<Memory> rows = sql_->loadMany(pks);
    for (Memory& m : rows) pendingUsage_.overlay(m);
    return rows;
  } catch (const std::exception& e) {
    return storageError(e, "load");
  }
}

bool MemoryStore::holdsNoRows() {
  takeDatabase();  // saves handed to the background applier are written first
  return mirror_->ready() && mirror_->rowCount() == 0;
}

std::optional<std::vector<const MirroredRow*>> MemoryStore::mirroredRows(const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!mirror_->ready()) return std::nullopt;
  return mirror_->rows(pks);
}

Result<std::vector<AnchoredRef>> MemoryStore::anchoredRefsOn(const std::vector<std::string>& paths,
                                                             const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    if (mirror_->ready()) return mirror_->anchoredRefsOn(paths, pks);
    const std::unordered_set<int64_t> wanted(pks.begin(), pks.end());
    std::vector<AnchoredRef> out;
    for (const auto& path : paths) {
      for (auto& ref : sql_->activeAnchoredRefsOn(path)) {
        if (wanted.count(ref.pk) != 0) out.push_back(std::move(ref));
      }
    }
    // Only the wanted refs' kept versions are read: each may be up to a couple of MiB.
    for (auto& ref : out) ref.anchor.keptContent = sql_->keptVersion(ref.anchor.blob);
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "anchors");
  }
}

Result<std::vector<AnchoredRef>> MemoryStore::activeAnchoredRefs() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    std::vector<AnchoredRef> out = sql_->activeAnchoredRefs(StoreSql::KeptVersions::kIncluded);
    std::unordered_map<std::string, std::shared_ptr<const std::string>> kept;
    for (auto& ref : out) {
      auto [it, inserted] = kept.try_emplace(ref.anchor.blob);
      if (inserted) it->second = sql_->keptVersion(ref.anchor.blob);
      ref.anchor.keptContent = it->second;
    }
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "anchors");
  }
}

Result<std::vector<AnchoredRef>> MemoryStore::activeAnchoredRefsOutsideKeptVersions() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->activeAnchoredRefs(StoreSql::KeptVersions::kLeftOut);
  } catch (const std::exception& e) {
    return storageError(e, "anchors");
  }
}

Result<std::vector<Memory>> MemoryStore::memoriesWithFiles(int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!pendingUsage_.empty()) MEMQ_RETURN_IF_ERROR(flushUsage());  // the rows are picked by last use
  try {
    return loadMany(sql_->activeWithFiles(limit));
  } catch (const std::exception& e) {
    return storageError(e, "review");
  }
}

Result<std::vector<std::tuple<std::string, std::string, double>>> MemoryStore::similarEdges(double minWeight) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    return sql_->similarEdges(minWeight);
  } catch (const std::exception& e) {
    return storageError(e, "similar edges");
  }
}

}  // namespace memq
