// StoreSql's reads: rows by id, pk and content, file refs, tombstones, the audit journal, the full-text lanes, what
// the mirror loads, list and export pages, and statistics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "daemon/store/store_sql.h"
#include "daemon/store/store_sql_rows.h"

namespace memq {

using sqlrows::fileRefFromRow;
using sqlrows::kFileRefColumns;
using sqlrows::kMemoryColumns;
using sqlrows::optText;

std::optional<Memory> StoreSql::memoryById(const std::string& id) {
  auto q = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE id = ?");
  q->bind(1, id);
  if (!q->executeStep()) return std::nullopt;
  Memory m = rowToMemory(*q);
  // Read while the row's statement is still open: both reads share its read transaction (one set of WAL locks, and
  // the row and its file refs from the same snapshot) instead of each taking its own.
  readFiles(m);
  return m;
}

std::optional<Memory> StoreSql::memoryByContentHash(const std::string& contentHash) {
  auto q = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE content_hash = ?");
  q->bind(1, contentHash);
  if (!q->executeStep()) return std::nullopt;
  return rowToMemory(*q);
}

void StoreSql::readFiles(Memory& m) {
  auto q = statement(std::string("SELECT ") + kFileRefColumns + " FROM memory_files WHERE memory_pk = ? ORDER BY path");
  q->bind(1, m.pk);
  m.files.clear();
  while (q->executeStep()) m.files.push_back(fileRefFromRow(*q, 0));
}

std::optional<int64_t> StoreSql::pkOf(const std::string& id) {
  auto q = statement("SELECT pk FROM memories WHERE id = ?");
  q->bind(1, id);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getInt64();
}

std::optional<std::string> StoreSql::idOf(int64_t pk) {
  auto q = statement("SELECT id FROM memories WHERE pk = ?");
  q->bind(1, pk);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getString();
}

std::vector<std::string> StoreSql::idsWithPrefix(const std::string& prefix, int limit) {
  // A range scan, not LIKE: '%' and '_' in the input are literal characters, not wildcards.
  std::vector<std::string> out;
  SQLite::Statement q(*db_, "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?");
  q.bind(1, prefix);
  q.bind(2, prefix + "\xff");
  q.bind(3, limit);
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  return out;
}

bool StoreSql::contentExists(const std::string& contentHash) {
  auto q = statement("SELECT 1 FROM memories WHERE content_hash = ?");
  q->bind(1, contentHash);
  return q->executeStep();
}

std::optional<std::string> StoreSql::contentHashOfId(const std::string& id) {
  auto q = statement("SELECT content_hash FROM memories WHERE id = ?");
  q->bind(1, id);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getString();
}

std::optional<std::string> StoreSql::otherWithContent(const std::string& contentHash, int64_t pk) {
  auto q = statement("SELECT id FROM memories WHERE content_hash = ? AND pk != ?");
  q->bind(1, contentHash);
  q->bind(2, pk);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getString();
}

std::optional<std::string> StoreSql::supersededBy(const std::string& id) {
  // Only a superseded memory names its replacement; a pointer left on a memory in another state (an import before
  // imports checked it) does not block the replacement's purge.
  auto q = statement("SELECT id FROM memories WHERE superseded_by = ? AND state = 'superseded' ORDER BY id LIMIT 1");
  q->bind(1, id);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getString();
}

std::optional<std::pair<std::string, std::string>> StoreSql::idAndSummary(int64_t pk, bool activeOnly) {
  auto q = statement(activeOnly ? "SELECT id, summary FROM memories WHERE pk = ? AND state = 'active'"
                                : "SELECT id, summary FROM memories WHERE pk = ?");
  q->bind(1, pk);
  if (!q->executeStep()) return std::nullopt;
  return std::pair{q->getColumn(0).getString(), q->getColumn(1).getString()};
}

std::optional<std::pair<std::string, std::string>> StoreSql::idAndStateReason(int64_t pk) {
  auto q = statement("SELECT id, state_reason FROM memories WHERE pk = ?");
  q->bind(1, pk);
  if (!q->executeStep()) return std::nullopt;
  return std::pair{q->getColumn(0).getString(), q->getColumn(1).getString()};
}

std::optional<std::pair<std::string, std::string>> StoreSql::tombstoneIdAndReason(const std::string& contentHash) {
  auto q = statement("SELECT memory_id, reason FROM tombstones WHERE content_hash = ?");
  q->bind(1, contentHash);
  if (!q->executeStep()) return std::nullopt;
  return std::pair{q->getColumn(0).getString(), q->getColumn(1).getString()};
}

bool StoreSql::hasTombstone(const std::string& contentHash) {
  auto q = statement("SELECT 1 FROM tombstones WHERE content_hash = ?");
  q->bind(1, contentHash);
  return q->executeStep();
}

std::vector<Tombstone> StoreSql::tombstones() {
  SQLite::Statement q(*db_, "SELECT content_hash, memory_id, reason, actor, at FROM tombstones ORDER BY at, content_hash");
  std::vector<Tombstone> out;
  while (q.executeStep()) {
    out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                   q.getColumn(3).getString(), q.getColumn(4).getString()});
  }
  return out;
}

std::optional<Tombstone> StoreSql::tombstoneFor(const std::string& contentHash) {
  SQLite::Statement q(*db_, "SELECT content_hash, memory_id, reason, actor, at FROM tombstones WHERE content_hash = ?");
  q.bind(1, contentHash);
  if (!q.executeStep()) return std::nullopt;
  return Tombstone{q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                   q.getColumn(3).getString(), q.getColumn(4).getString()};
}

std::optional<std::pair<std::string, std::string>> StoreSql::unrejectedHolder(const std::string& contentHash) {
  auto q = statement("SELECT id, state FROM memories WHERE content_hash = ? AND state != 'rejected'");
  q->bind(1, contentHash);
  if (!q->executeStep()) return std::nullopt;
  return std::pair{q->getColumn(0).getString(), q->getColumn(1).getString()};
}

std::vector<AuditEvent> StoreSql::events(const AuditFilter& f) {
  std::string sql = "SELECT seq, at, memory_id, action, actor, detail, scrubbed FROM memory_events WHERE seq > ?";
  if (f.memoryId) sql += " AND memory_id = ?";
  if (f.sinceAt) sql += " AND at >= ?";
  sql += " ORDER BY seq LIMIT ?";
  SQLite::Statement q(*db_, sql);
  int i = 1;
  q.bind(i++, f.sinceSeq);
  if (f.memoryId) q.bind(i++, *f.memoryId);
  if (f.sinceAt) q.bind(i++, *f.sinceAt);
  q.bind(i++, f.limit);
  std::vector<AuditEvent> out;
  while (q.executeStep()) {
    AuditEvent e;
    e.seq = q.getColumn(0).getInt64();
    e.at = q.getColumn(1).getString();
    e.memoryId = q.getColumn(2).getString();
    e.action = q.getColumn(3).getString();
    e.actor = q.getColumn(4).getString();
    e.detail = nlohmann::json::parse(q.getColumn(5).getString(), nullptr, false);
    e.scrubbed = q.getColumn(6).getInt() != 0;
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<std::vector<float>> StoreSql::loadVector(int64_t pk, const std::string& model) {
  SQLite::Statement q(*db_, "SELECT vector FROM memory_embeddings WHERE memory_pk = ? AND model = ?");
  q.bind(1, pk);
  q.bind(2, model);
  if (!q.executeStep()) return std::nullopt;
  const auto& blob = q.getColumn(0);
  std::vector<float> v(static_cast<size_t>(blob.getBytes()) / sizeof(float));
  std::memcpy(v.data(), blob.getBlob(), v.size() * sizeof(float));
  return v;
}

namespace {

// Whether a stored vector can stand for its row: every component finite, and of unit length as the embedder makes
// them (or zero, an empty text's). One that is not (a damaged file, a row written by hand) would be left out of the
// index (a NaN), or score inf or 0 against every query and break the scan's exactness.
bool isUsableStoredVector(const std::vector<float>& v) {
  double squares = 0;
  for (const float x : v) {
    if (!std::isfinite(x)) return false;
    squares += static_cast<double>(x) * x;
  }
  return squares == 0 || std::abs(squares - 1.0) <= 1e-3;
}

}  // namespace

void StoreSql::forEachVectorRow(const std::string& model, size_t dim,
                                const std::function<void(int64_t, bool, const float*, const std::string&,
                                                         const std::string&, const std::vector<std::string>&)>& row) {
  SQLite::Statement q(*db_,
                      "SELECT m.pk, m.state, e.vector, m.summary, m.details, m.topics FROM memories m "
                      "LEFT JOIN memory_embeddings e ON e.memory_pk = m.pk AND e.model = ? "
                      "WHERE m.state IN ('active', 'rejected')");
  q.bind(1, model);
  std::vector<float> vec(dim);
  while (q.executeStep()) {
    const int64_t pk = q.getColumn(0).getInt64();
    const bool rejected = q.getColumn(1).getString() == "rejected";
    const auto& blob = q.getColumn(2);
    if (blob.isNull() || static_cast<size_t>(blob.getBytes()) != dim * sizeof(float)) {
      row(pk, rejected, nullptr, q.getColumn(3).getString(), q.getColumn(4).getString(),
          sqlrows::parseTopics(q.getColumn(5).getString()));
      continue;
    }
    std::memcpy(vec.data(), blob.getBlob(), dim * sizeof(float));
    if (!isUsableStoredVector(vec)) {
      spdlog::warn("memq: memory row {}: its stored vector is not a unit vector of finite components; embedding its "
                   "text again",
                   pk);
      row(pk, rejected, nullptr, q.getColumn(3).getString(), q.getColumn(4).getString(),
          sqlrows::parseTopics(q.getColumn(5).getString()));
      continue;
    }
    static const std::string kNone;
    static const std::vector<std::string> kNoTopics;
    row(pk, rejected, vec.data(), kNone, kNone, kNoTopics);
  }
}

std::vector<std::tuple<std::string, std::string, double>> StoreSql::similarEdges(double minWeight) {
  SQLite::Statement q(*db_,
                      // Each edge is one row, (higher pk, lower pk): listed as (lower, higher).
                      "SELECT a.id, b.id, e.weight FROM memory_edges e JOIN memories a ON a.pk = e.dst_pk "
                      "JOIN memories b ON b.pk = e.src_pk WHERE e.kind = 'similar' AND e.weight >= ? "
                      "AND a.state = 'active' AND b.state = 'active' ORDER BY e.weight DESC");
  q.bind(1, minWeight);
  std::vector<std::tuple<std::string, std::string, double>> out;
  while (q.executeStep()) {
    out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getDouble());
  }
  return out;
}

std::vector<FtsHit> StoreSql::rankedActive(FtsLane lane, const std::string& matchExpression, int limit,
                                           std::optional<int64_t> excludePk) {
  // Same rows and order as `FTS JOIN memories ON pk = rowid WHERE state = 'active' ORDER BY bm25 LIMIT n`, but the
  // join is not done for every match: bm25 is computed (it must be) for every matching row, the top-N sorter keeps
  // `limit` + (rows that may be skipped) of them, and only those are looked up. A common-word query matches most of
  // the table, and the per-match join was a third of the lane's time. Non-active rows are few and counted through
  // idx_memories_state.
  int64_t skippable = excludePk ? 1 : 0;
  {
    auto inactive = statement("SELECT COUNT(*) FROM memories WHERE state IN ('hidden', 'superseded', 'rejected')");
    if (inactive->executeStep()) skippable += inactive->getColumn(0).getInt64();
  }
  auto q = statement(lane == FtsLane::kUnicode
                         ? "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
                           "ORDER BY bm25(memories_fts) LIMIT ?"
                         : "SELECT rowid, bm25(memories_fts_tri) FROM memories_fts_tri WHERE memories_fts_tri MATCH ? "
                           "ORDER BY bm25(memories_fts_tri) LIMIT ?");
  q->bind(1, matchExpression);
  q->bind(2, static_cast<int64_t>(limit) + skippable);
  std::vector<FtsHit> out;
  if (limit <= 0) return out;
  auto state = skippable > (excludePk ? 1 : 0)
                   ? std::optional<CachedStatement>(statement("SELECT state = 'active' FROM memories WHERE pk = ?"))
                   : std::nullopt;
  int rank = 0;
  while (static_cast<int>(out.size()) < limit && q->executeStep()) {
    int64_t pk = q->getColumn(0).getInt64();
    if (excludePk && pk == *excludePk) continue;
    if (state) {
      (*state)->bind(1, pk);
      bool active = (*state)->executeStep() && (*state)->getColumn(0).getInt() != 0;
      (*state)->reset();
      if (!active) continue;
    }
    out.push_back({pk, q->getColumn(1).getDouble(), ++rank});
  }
  return out;
}

std::vector<TextMatches::Row> StoreSql::matchUnicode(const std::string& matchExpression) {
  auto q = statement("SELECT memories_fts.rowid, bm25(memories_fts), m.state = 'active' FROM memories_fts "
                     "CROSS JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ?");
  q->bind(1, matchExpression);
  std::vector<TextMatches::Row> rows;
  while (q->executeStep()) {
    rows.push_back({q->getColumn(0).getInt64(), q->getColumn(1).getDouble(), q->getColumn(2).getInt() != 0});
  }
  return rows;
}

bool StoreSql::isQueryError(const std::exception& e) {
  const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
  return sqlite != nullptr && sqlite->getErrorCode() == SQLITE_ERROR;
}

bool StoreSql::isSqliteError(const std::exception& e) { return dynamic_cast<const SQLite::Exception*>(&e) != nullptr; }

void StoreSql::forEachMirrorRow(const std::function<void(int64_t, std::string_view, std::string_view,
                                                         std::string_view, bool, std::string, int64_t, bool)>& row) {
  auto view = [](const SQLite::Column& c) {
    return std::string_view(static_cast<const char*>(c.getText()), static_cast<size_t>(c.getBytes()));
  };
  SQLite::Statement q(*db_, "SELECT pk, summary, details, topics_text, state = 'active', last_used_at, use_count, "
                            "pinned FROM memories");
  while (q.executeStep()) {
    row(q.getColumn(0).getInt64(), view(q.getColumn(1)), view(q.getColumn(2)), view(q.getColumn(3)),
        q.getColumn(4).getInt() != 0, q.getColumn(5).getString(), q.getColumn(6).getInt64(),
        q.getColumn(7).getInt() != 0);
  }
}

namespace {

// The file ref columns with whether memq keeps the anchor's version, for the mirror; before the schema had
// anchors, the same columns without them.
const char* mirroredFileRefSelect(bool hasAnchors) {
  return hasAnchors ? "SELECT mf.memory_pk, mf.path, mf.blob_id, mf.anchor_lines, mf.anchor_blob, "
                      "av.blob_id IS NOT NULL FROM memory_files mf "
                      "LEFT JOIN anchor_versions av ON av.blob_id = mf.anchor_blob"
                    : "SELECT mf.memory_pk, mf.path, mf.blob_id, NULL, NULL, 0 FROM memory_files mf";
}

MirroredFileRef mirroredFileRefFromRow(SQLite::Statement& q) {
  return {fileRefFromRow(q, 1), q.getColumn(5).getInt() != 0};
}

}  // namespace

void StoreSql::forEachFileRef(const std::function<void(int64_t, MirroredFileRef)>& ref) {
  SQLite::Statement q(*db_, mirroredFileRefSelect(hasAnchors_));
  while (q.executeStep()) ref(q.getColumn(0).getInt64(), mirroredFileRefFromRow(q));
}

std::optional<MirrorRowData> StoreSql::mirrorRow(int64_t pk) {
  auto q = statement("SELECT summary, details, topics_text, state = 'active', last_used_at, use_count, pinned "
                     "FROM memories WHERE pk = ?");
  q->bind(1, pk);
  if (!q->executeStep()) return std::nullopt;
  MirrorRowData row{q->getColumn(0).getString(), q->getColumn(1).getString(), q->getColumn(2).getString(),
                    q->getColumn(3).getInt() != 0, q->getColumn(4).getString(), q->getColumn(5).getInt64(),
                    q->getColumn(6).getInt() != 0, {}};
  auto files = statement(std::string(mirroredFileRefSelect(hasAnchors_)) + " WHERE mf.memory_pk = ? ORDER BY mf.path");
  files->bind(1, pk);
  while (files->executeStep()) row.files.push_back(mirroredFileRefFromRow(*files));
  return row;
}

std::vector<Memory> StoreSql::exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                         const std::string& afterId, int limit) {
  // The page's keys first, then its rows: sorting only (created_at, id, pk) is several times cheaper than sorting
  // whole rows, and there is no index on created_at to walk instead.
  std::string sql = std::string("SELECT pk FROM memories WHERE (created_at > ?1 OR (created_at = ?1 AND id > ?2))") +
                    (state ? " AND state = ?4" : "") + " ORDER BY created_at, id LIMIT ?3";
  std::vector<int64_t> pks;
  {
    SQLite::Statement q(*db_, sql);
    q.bind(1, afterCreatedAt);
    q.bind(2, afterId);
    q.bind(3, limit);
    if (state) q.bind(4, std::string(stateName(*state)));
    while (q.executeStep()) pks.push_back(q.getColumn(0).getInt64());
  }
  std::vector<Memory> out;
  out.reserve(pks.size());
  for (int64_t pk : pks) {
    auto row = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE pk = ?");
    row->bind(1, pk);
    if (!row->executeStep()) continue;
    out.push_back(rowToMemory(*row));
  }
  // Without the versions memq keeps: a page holds up to `limit` rows, each with up to 16 versions of up to 2 MiB.
  // Export reads only those it writes, one at a time (keptVersionBytes, keptVersion).
  for (auto& m : out) readFiles(m);
  return out;
}

std::optional<size_t> StoreSql::keptVersionBytes(const std::string& blobId) {
  // length() of a BLOB is read from the record's header: the content itself is not loaded.
  auto q = statement("SELECT length(content) FROM anchor_versions WHERE blob_id = ?");
  q->bind(1, blobId);
  if (!q->executeStep()) return std::nullopt;
  return static_cast<size_t>(q->getColumn(0).getInt64());
}

std::shared_ptr<const std::string> StoreSql::keptVersion(const std::string& blobId) {
  auto q = statement("SELECT content FROM anchor_versions WHERE blob_id = ?");
  q->bind(1, blobId);
  if (!q->executeStep()) return nullptr;
  const auto& c = q->getColumn(0);
  return std::make_shared<const std::string>(static_cast<const char*>(c.getBlob()), static_cast<size_t>(c.getBytes()));
}

namespace {

// The rows of a query selecting (memory_pk, path, blob_id, anchor_lines, anchor_blob) as anchored refs.
std::vector<AnchoredRef> readAnchoredRefs(SQLite::Statement& q) {
  std::vector<AnchoredRef> out;
  while (q.executeStep()) {
    FileRef ref = fileRefFromRow(q, 1);
    if (!ref.anchor) continue;  // lines that do not read back are no anchor (fileRefFromRow)
    out.push_back({q.getColumn(0).getInt64(), std::move(ref.path), std::move(*ref.anchor)});
  }
  return out;
}

}  // namespace

std::vector<AnchoredRef> StoreSql::activeAnchoredRefsOn(const std::string& path) {
  auto q = statement("SELECT mf.memory_pk, mf.path, mf.blob_id, mf.anchor_lines, mf.anchor_blob "
                     "FROM memory_files mf CROSS JOIN memories m ON m.pk = mf.memory_pk "
                     "WHERE mf.path = ? AND mf.anchor_blob IS NOT NULL AND m.state = 'active' ORDER BY mf.memory_pk");
  q->bind(1, path);
  return readAnchoredRefs(*q);
}

std::vector<AnchoredRef> StoreSql::activeAnchoredRefs(KeptVersions kept) {
  if (!hasAnchors_) return {};
  // Whether memq keeps a version is answered by anchor_versions' key alone: no kept content is read.
  const char* outsideKept = kept == KeptVersions::kLeftOut
                                ? "AND NOT EXISTS (SELECT 1 FROM anchor_versions av WHERE av.blob_id = mf.anchor_blob) "
                                : "";
  auto q = statement(std::string("SELECT mf.memory_pk, mf.path, mf.blob_id, mf.anchor_lines, mf.anchor_blob "
                                 "FROM memory_files mf CROSS JOIN memories m ON m.pk = mf.memory_pk "
                                 "WHERE mf.anchor_blob IS NOT NULL AND m.state = 'active' ") +
                     outsideKept + "ORDER BY mf.path, mf.memory_pk");
  return readAnchoredRefs(*q);
}

int64_t StoreSql::keptVersionCount() {
  auto q = statement("SELECT COUNT(*) FROM anchor_versions");
  q->executeStep();
  return q->getColumn(0).getInt64();
}

ListResult StoreSql::list(const ListFilter& f) {
  std::string where = " WHERE 1=1";
  std::vector<std::function<void(SQLite::Statement&, int&)>> binders;
  if (f.state) {
    where += " AND m.state = ?";
    std::string s(stateName(*f.state));
    binders.push_back([s](SQLite::Statement& q, int& i) { q.bind(i++, s); });
  }
  if (f.category) {
    if (*f.category) {
      where += " AND m.category = ?";
      std::string c = **f.category;
      binders.push_back([c](SQLite::Statement& q, int& i) { q.bind(i++, c); });
    } else {
      where += " AND m.category IS NULL";
    }
  }
  if (f.topic) {
    where += " AND EXISTS (SELECT 1 FROM json_each(m.topics) t WHERE lower(t.value) = lower(?))";
    std::string t = *f.topic;
    binders.push_back([t](SQLite::Statement& q, int& i) { q.bind(i++, t); });
  }
  if (f.pinned) {
    where += " AND m.pinned = ?";
    int p = *f.pinned ? 1 : 0;
    binders.push_back([p](SQLite::Statement& q, int& i) { q.bind(i++, p); });
  }
  if (f.source) {
    where += " AND m.source = ?";
    std::string s = *f.source;
    binders.push_back([s](SQLite::Statement& q, int& i) { q.bind(i++, s); });
  }
  if (f.file) {
    where += " AND EXISTS (SELECT 1 FROM memory_files mf WHERE mf.memory_pk = m.pk AND mf.path = ?)";
    std::string p = *f.file;
    binders.push_back([p](SQLite::Statement& q, int& i) { q.bind(i++, p); });
  }
  ListResult out;
  {
    SQLite::Statement count(*db_, "SELECT COUNT(*) FROM memories m" + where);
    int i = 1;
    for (auto& b : binders) b(count, i);
    count.executeStep();
    out.total = count.getColumn(0).getInt64();
  }
  // Every column prefixed with "m.", as the filters name the table.
  std::string cols = kMemoryColumns;
  std::string prefixed;
  size_t start = 0;
  while (start < cols.size()) {
    size_t comma = cols.find(',', start);
    if (comma == std::string::npos) comma = cols.size();
    std::string name = cols.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    if (!prefixed.empty()) prefixed += ", ";
    prefixed += "m." + name;
    start = comma + 1;
  }
  SQLite::Statement q(*db_, "SELECT " + prefixed + " FROM memories m" + where +
                                " ORDER BY m.pinned DESC, m.last_used_at DESC, m.pk DESC LIMIT ? OFFSET ?");
  int i = 1;
  for (auto& b : binders) b(q, i);
  q.bind(i++, f.limit);
  q.bind(i++, f.offset);
  while (q.executeStep()) out.memories.push_back(rowToMemory(q));
  for (auto& m : out.memories) readFiles(m);
  return out;
}

std::vector<FileHit> StoreSql::activeByPaths(const std::vector<std::string>& paths, int limit) {
  std::vector<FileHit> out;
  std::string placeholders;
  for (size_t i = 0; i < paths.size(); ++i) placeholders += i ? ",?" : "?";
  // CROSS JOIN pins the loop order: the queried paths' refs outside, memories by pk inside. Left to itself (no
  // sqlite_stat1 yet, as in every fresh database) the planner scanned every active memory through
  // idx_memories_state and probed the path index for each: 10x slower at 10k memories.
  auto q = statement("SELECT m.pk, COUNT(*) FROM memory_files mf CROSS JOIN memories m ON m.pk = mf.memory_pk "
                     "WHERE mf.path IN (" + placeholders + ") AND m.state = 'active' "
                     "GROUP BY m.pk ORDER BY m.last_used_at DESC, m.pk DESC LIMIT ?");
  int i = 1;
  for (const auto& p : paths) q->bind(i++, p);
  q->bind(i, limit);
  while (q->executeStep()) out.push_back({q->getColumn(0).getInt64(), q->getColumn(1).getInt()});
  return out;
}

std::vector<Memory> StoreSql::loadMany(const std::vector<int64_t>& pks) {
  std::vector<Memory> out;
  if (pks.empty()) return out;
  // Two statements per chunk of up to kBatch pks (rows, then all their file refs) instead of two per pk, their texts
  // made once, not at every call. SQLite runs an IN list by building a temporary table of its values at every run (a
  // b-tree opened, filled and closed), which costs more than the lookups themselves when the pks are few, as a
  // recall's 3 are: up to kPointLookups pks are looked up one by one in a single statement instead (UNION ALL of
  // point lookups; the file refs' arms are merged in key order, without a sort).
  constexpr size_t kBatch = 32;
  constexpr size_t kPointLookups = 8;
  struct ChunkSql {
    std::string rows, files;
  };
  static const std::vector<ChunkSql> kChunkSql = [] {
    std::vector<ChunkSql> sql(kBatch + 1);
    const std::string rowArm = std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE pk = ?";
    const std::string fileArm =
        std::string("SELECT memory_pk, ") + kFileRefColumns + " FROM memory_files WHERE memory_pk = ?";
    std::string placeholders;
    for (size_t n = 1; n <= kBatch; ++n) {
      placeholders += n > 1 ? ",?" : "?";
      if (n <= kPointLookups) {
        for (size_t i = 0; i < n; ++i) {
          sql[n].rows += (i > 0 ? " UNION ALL " : "") + rowArm;
          sql[n].files += (i > 0 ? " UNION ALL " : "") + fileArm;
        }
        sql[n].files += " ORDER BY memory_pk, path";
        continue;
      }
      sql[n].rows = std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE pk IN (" + placeholders + ")";
      sql[n].files = std::string("SELECT memory_pk, ") + kFileRefColumns + " FROM memory_files WHERE memory_pk IN (" +
                     placeholders + ") ORDER BY memory_pk, path";
    }
    return sql;
  }();
  // Each pk is read once, however often it is asked for: a pk in two chunks would have its file refs added twice.
  // The order asked for is restored below, so the chunks may go in pk order.
  std::vector<int64_t> distinct = pks;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::unordered_map<int64_t, Memory> loaded;
  loaded.reserve(distinct.size());
  for (size_t start = 0; start < distinct.size(); start += kBatch) {
    const size_t end = std::min(distinct.size(), start + kBatch);
    const ChunkSql& sql = kChunkSql[end - start];
    {
      auto q = statement(sql.rows);
      for (size_t i = start; i < end; ++i) q->bind(static_cast<int>(i - start + 1), distinct[i]);
      while (q->executeStep()) {
        Memory m = rowToMemory(*q);
        int64_t pk = m.pk;
        loaded.emplace(pk, std::move(m));
      }
    }
    auto files = statement(sql.files);
    for (size_t i = start; i < end; ++i) files->bind(static_cast<int>(i - start + 1), distinct[i]);
    while (files->executeStep()) {
      auto it = loaded.find(files->getColumn(0).getInt64());
      if (it != loaded.end()) it->second.files.push_back(fileRefFromRow(*files, 1));
    }
  }
  // Input order; a pk asked for twice comes back twice.
  std::unordered_map<int64_t, size_t> remaining;
  for (int64_t pk : pks) ++remaining[pk];
  out.reserve(pks.size());
  for (int64_t pk : pks) {
    auto it = loaded.find(pk);
    if (it == loaded.end()) continue;
    if (--remaining[pk] == 0) {
      out.push_back(std::move(it->second));
    } else {
      out.push_back(it->second);
    }
  }
  return out;
}

std::vector<int64_t> StoreSql::activeWithFiles(int limit) {
  SQLite::Statement q(*db_, "SELECT DISTINCT m.pk FROM memories m JOIN memory_files mf ON mf.memory_pk = m.pk "
                            "WHERE m.state = 'active' ORDER BY m.pk LIMIT ?");
  q.bind(1, limit);
  std::vector<int64_t> pks;
  while (q.executeStep()) pks.push_back(q.getColumn(0).getInt64());
  return pks;
}

nlohmann::json StoreSql::stats() {
  nlohmann::json byState = {{"active", 0}, {"hidden", 0}, {"superseded", 0}, {"rejected", 0}};
  nlohmann::json byCategory = nlohmann::json::object();
  {
    SQLite::Statement q(*db_, "SELECT state, COUNT(*) FROM memories GROUP BY state");
    while (q.executeStep()) byState[q.getColumn(0).getString()] = q.getColumn(1).getInt64();
  }
  {
    SQLite::Statement q(*db_,
                        "SELECT COALESCE(category, 'none'), COUNT(*) FROM memories WHERE state = 'active' GROUP BY 1");
    while (q.executeStep()) byCategory[q.getColumn(0).getString()] = q.getColumn(1).getInt64();
  }
  const int64_t pinned =
      db_->execAndGet("SELECT COUNT(*) FROM memories WHERE pinned = 1 AND state = 'active'").getInt64();
  const int64_t tombs = db_->execAndGet("SELECT COUNT(*) FROM tombstones").getInt64();
  const int64_t events = db_->execAndGet("SELECT COUNT(*) FROM memory_events").getInt64();
  const int64_t keptVersions = db_->execAndGet("SELECT COUNT(*) FROM anchor_versions").getInt64();
  const int64_t pages = db_->execAndGet("PRAGMA page_count").getInt64();
  const int64_t pageSize = db_->execAndGet("PRAGMA page_size").getInt64();
  return nlohmann::json{{"states", byState}, {"categories", byCategory}, {"pinned", pinned},
                        {"tombstones", tombs}, {"events", events},       {"db_bytes", pages * pageSize},
                        {"kept_versions", keptVersions}};
}

}  // namespace memq
