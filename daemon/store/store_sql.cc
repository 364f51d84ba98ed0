// StoreSql: the connection, its statement cache, transactions, and the statements that write rows (memories, file
// refs, events, tombstones, embeddings, edges, full-text lanes). The reads are in store_sql_reads.cc.
#include "daemon/store/store_sql.h"

#include <algorithm>
#include <cstring>

#include <sqlite3.h>

#include "daemon/model/memory_input.h"
#include "daemon/store/database.h"
#include "daemon/store/store_sql_rows.h"

namespace memq {

StoreSql::StoreSql(std::unique_ptr<SQLite::Database> db, std::string scope)
    : db_(std::move(db)), scope_(std::move(scope)), hasAnchors_(db_->tableExists("anchor_versions")) {}

StoreSql::~StoreSql() = default;

StoreSql::CachedStatement::CachedStatement(SQLite::Statement* shared, bool* busy,
                                           std::unique_ptr<SQLite::Statement> own)
    : stmt_(own ? own.get() : shared), busy_(own ? nullptr : busy), own_(std::move(own)) {
  if (busy_ != nullptr) *busy_ = true;
}

StoreSql::CachedStatement::CachedStatement(CachedStatement&& other) noexcept
    : stmt_(other.stmt_), busy_(other.busy_), own_(std::move(other.own_)) {
  other.stmt_ = nullptr;
  other.busy_ = nullptr;
}

StoreSql::CachedStatement::~CachedStatement() {
  if (stmt_ == nullptr || own_) return;
  stmt_->tryReset();
  try {
    stmt_->clearBindings();
  } catch (...) {
  }
  if (busy_ != nullptr) *busy_ = false;
}

StoreSql::CachedStatement StoreSql::statement(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    // Prepared before it is cached: a prepare that throws (a corrupt schema or index) must not leave an empty entry
    // for the next call to dereference.
    auto prepared = std::make_unique<SQLite::Statement>(*db_, sql);
    it = statements_.try_emplace(sql).first;
    it->second.stmt = std::move(prepared);
  }
  if (it->second.busy) return CachedStatement(nullptr, nullptr, std::make_unique<SQLite::Statement>(*db_, sql));
  return CachedStatement(it->second.stmt.get(), &it->second.busy, nullptr);
}

Memory StoreSql::rowToMemory(SQLite::Statement& q) const { return sqlrows::memoryFromRow(q, scope_); }

bool StoreSql::autocommit() { return sqlite3_get_autocommit(db_->getHandle()) != 0; }

void StoreSql::begin() { db_->exec("BEGIN IMMEDIATE"); }
void StoreSql::commit() { db_->exec("COMMIT"); }
void StoreSql::rollback() { db_->tryExec("ROLLBACK"); }
void StoreSql::savepoint() { db_->exec("SAVEPOINT save"); }
void StoreSql::release() { db_->exec("RELEASE save"); }
void StoreSql::rollbackToSavepoint() {
  db_->tryExec("ROLLBACK TO save");
  db_->tryExec("RELEASE save");
}
void StoreSql::checkpointPassive() { db_->exec("PRAGMA wal_checkpoint(PASSIVE)"); }
void StoreSql::optimize() { db_->tryExec("PRAGMA optimize"); }

bool StoreSql::checkpointForClose() { return memq::checkpointForClose(*db_); }

int64_t StoreSql::dataVersion() {
  // data_version moves only when another connection commits.
  auto v = statement("PRAGMA data_version");
  return v->executeStep() ? v->getColumn(0).getInt64() : -1;
}

void StoreSql::countOwnChanges() {
  if (!db_->tableExists("mirror_generation")) return;
  // The UPDATE OF list is 0011's: every column but the two a use writes.
  db_->exec(
      "CREATE TEMP TABLE IF NOT EXISTS mirror_own_changes (n INTEGER NOT NULL);"
      "INSERT INTO temp.mirror_own_changes (n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM temp.mirror_own_changes);"
      "CREATE TEMP TRIGGER IF NOT EXISTS mirror_own_insert AFTER INSERT ON main.memories "
      "BEGIN UPDATE mirror_own_changes SET n = n + 1; END;"
      "CREATE TEMP TRIGGER IF NOT EXISTS mirror_own_delete AFTER DELETE ON main.memories "
      "BEGIN UPDATE mirror_own_changes SET n = n + 1; END;"
      "CREATE TEMP TRIGGER IF NOT EXISTS mirror_own_update AFTER UPDATE OF id, category, summary, details, topics, "
      "topics_text, source, session_id, created_at, updated_at, pinned, state, superseded_by, state_reason, "
      "content_hash ON main.memories BEGIN UPDATE mirror_own_changes SET n = n + 1; END;");
  countsChanges_ = true;
}

std::optional<int64_t> StoreSql::othersChanges() {
  if (!countsChanges_) return std::nullopt;
  auto q = statement(
      "SELECT (SELECT n FROM main.mirror_generation WHERE id = 1) - (SELECT n FROM temp.mirror_own_changes)");
  return q->executeStep() ? std::optional<int64_t>(q->getColumn(0).getInt64()) : std::nullopt;
}

int StoreSql::schemaVersion() { return memq::schemaVersion(*db_); }

int64_t StoreSql::nextPk() { return db_->execAndGet("SELECT COALESCE(MAX(pk), 0) + 1 FROM memories").getInt64(); }

int64_t StoreSql::appliedBatch() {
  return db_->execAndGet("SELECT applied_batch FROM save_batches WHERE id = 1").getInt64();
}

void StoreSql::setAppliedBatch(uint64_t seq) {
  auto q = statement("UPDATE save_batches SET applied_batch = ? WHERE id = 1");
  q->bind(1, static_cast<int64_t>(seq));
  q->exec();
}

int64_t StoreSql::replicaSeq() {
  return db_->execAndGet("SELECT applied_seq FROM replica_state WHERE id = 1").getInt64();
}

void StoreSql::setReplicaSeq(int64_t seq, const std::string& at) {
  auto q = statement("UPDATE replica_state SET applied_seq = ?, applied_at = ? WHERE id = 1");
  q->bind(1, seq);
  q->bind(2, at);
  q->exec();
}

std::string StoreSql::replicaAppliedAt() {
  return db_->execAndGet("SELECT applied_at FROM replica_state WHERE id = 1").getString();
}

void StoreSql::clearReplica() {
  // Rows first (file refs, edges and embeddings cascade; the FTS triggers drop their text), then the tombstones.
  // The local journal stays: it is append-only, and what the replica did is part of it.
  db_->exec("DELETE FROM memories");
  db_->exec("DELETE FROM tombstones");
  setReplicaSeq(0, "");
}

int64_t StoreSql::insertMemory(const NewMemoryRow& row) {
  const Memory& m = *row.memory;
  auto ins = statement(
      "INSERT INTO memories(pk, id, category, summary, details, topics, topics_text, source, session_id, "
      "created_at, updated_at, last_used_at, use_count, pinned, state, superseded_by, state_reason, content_hash) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (row.pk) ins->bind(1, *row.pk);  // else NULL: the next rowid
  ins->bind(2, m.id);
  sqlrows::bindOpt(*ins, 3, m.category);
  ins->bind(4, m.summary);
  ins->bind(5, m.details);
  ins->bind(6, nlohmann::json(m.topics).dump());
  ins->bind(7, topicsText(m.topics));
  ins->bind(8, m.source);
  sqlrows::bindOpt(*ins, 9, m.sessionId);
  ins->bind(10, m.createdAt);
  ins->bind(11, m.updatedAt);
  ins->bind(12, m.lastUsedAt);
  ins->bind(13, m.useCount);
  ins->bind(14, m.pinned ? 1 : 0);
  ins->bind(15, std::string(stateName(m.state)));
  sqlrows::bindOpt(*ins, 16, m.supersededBy);
  sqlrows::bindOpt(*ins, 17, m.stateReason);
  ins->bind(18, m.contentHash);
  ins->exec();
  return db_->getLastInsertRowid();
}

void StoreSql::recordDedup(int64_t pk, const std::string& at, const std::vector<std::string>& topics,
                           bool topicsChanged) {
  auto upd = statement(
      "UPDATE memories SET use_count = use_count + 1, last_used_at = ?, topics = ?, "
      "topics_text = ?, updated_at = CASE WHEN ? THEN ? ELSE updated_at END WHERE pk = ?");
  upd->bind(1, at);
  upd->bind(2, nlohmann::json(topics).dump());
  upd->bind(3, topicsText(topics));
  upd->bind(4, topicsChanged ? 1 : 0);
  upd->bind(5, at);
  upd->bind(6, pk);
  upd->exec();
}

void StoreSql::updateContent(const Memory& after, const std::string& at) {
  auto upd = statement(
      "UPDATE memories SET summary = ?, details = ?, category = ?, topics = ?, topics_text = ?, "
      "pinned = ?, content_hash = ?, updated_at = ? WHERE pk = ?");
  upd->bind(1, after.summary);
  upd->bind(2, after.details);
  sqlrows::bindOpt(*upd, 3, after.category);
  upd->bind(4, nlohmann::json(after.topics).dump());
  upd->bind(5, topicsText(after.topics));
  upd->bind(6, after.pinned ? 1 : 0);
  upd->bind(7, after.contentHash);
  upd->bind(8, at);
  upd->bind(9, after.pk);
  upd->exec();
}

void StoreSql::setState(int64_t pk, MemoryState to, const std::optional<std::string>& reason, const std::string& at) {
  auto upd = statement(
      "UPDATE memories SET state = ?, state_reason = ?, superseded_by = NULL, updated_at = ? WHERE pk = ?");
  upd->bind(1, std::string(stateName(to)));
  sqlrows::bindOpt(*upd, 2, reason);
  upd->bind(3, at);
  upd->bind(4, pk);
  upd->exec();
}

void StoreSql::setSuperseded(int64_t pk, const std::string& byId, const std::string& at) {
  auto upd = statement("UPDATE memories SET state = 'superseded', superseded_by = ?, updated_at = ? WHERE pk = ?");
  upd->bind(1, byId);
  upd->bind(2, at);
  upd->bind(3, pk);
  upd->exec();
}

void StoreSql::setPinned(int64_t pk, bool pinned, const std::string& at) {
  auto upd = statement("UPDATE memories SET pinned = ?, updated_at = ? WHERE pk = ?");
  upd->bind(1, pinned ? 1 : 0);
  upd->bind(2, at);
  upd->bind(3, pk);
  upd->exec();
}

void StoreSql::touch(int64_t pk, const std::string& at) {
  auto q = statement("UPDATE memories SET updated_at = ? WHERE pk = ?");
  q->bind(1, at);
  q->bind(2, pk);
  q->exec();
}

void StoreSql::addUses(const std::unordered_map<int64_t, PendingUsage::Use>& uses) {
  auto upd = statement(
      "UPDATE memories SET use_count = use_count + ?, last_used_at = max(last_used_at, ?) WHERE pk = ?");
  for (const auto& [pk, use] : uses) {
    upd->bind(1, use.count);
    upd->bind(2, use.lastUsedAt);
    upd->bind(3, pk);
    upd->exec();
    upd->reset();
  }
}

void StoreSql::purgeRow(int64_t pk, const std::string& id) {
  // A grant scoped to this memory id, held only inside the caller's transaction, lets the trigger accept the scrub
  // (detail emptied, scrubbed = 1) and nothing else.
  auto grant = statement("INSERT INTO scrub_grants(memory_id) VALUES (?)");
  grant->bind(1, id);
  grant->exec();
  auto scrub = statement(
      "UPDATE memory_events SET detail = '{\"scrubbed\":true}', scrubbed = 1 WHERE memory_id = ? AND scrubbed = 0");
  scrub->bind(1, id);
  scrub->exec();
  auto revoke = statement("DELETE FROM scrub_grants WHERE memory_id = ?");
  revoke->bind(1, id);
  revoke->exec();
  auto del = statement("DELETE FROM memories WHERE pk = ?");
  del->bind(1, pk);
  del->exec();
}

std::vector<std::string> StoreSql::writeFileRefs(int64_t pk, const std::vector<FileRef>& files, size_t maxNew,
                                                bool reanchor) {
  std::vector<std::string> added;
  for (const auto& f : files) {
    if (added.size() >= maxNew) break;
    std::optional<std::string> lines;
    std::optional<std::string> blob;
    bool written = false;
    if (f.anchor) {
      lines = formatRanges(f.anchor->lines);
      blob = f.anchor->blob;
      auto add = statement(
          "INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id, anchor_lines, anchor_blob) "
          "VALUES (?, ?, ?, ?, ?)");
      add->bind(1, pk);
      add->bind(2, f.path);
      sqlrows::bindOpt(*add, 3, f.blobId);
      add->bind(4, *lines);
      add->bind(5, *blob);
      written = add->exec() > 0;
    } else {
      // A plain ref leaves the anchor columns to their default (NULL), as a file of a schema before 0007 has it.
      auto add = statement("INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
      add->bind(1, pk);
      add->bind(2, f.path);
      sqlrows::bindOpt(*add, 3, f.blobId);
      written = add->exec() > 0;
    }
    if (!written && reanchor && f.anchor) {
      // The file is the ref's already: the new anchor (and the blob id it was recorded at) replace the old.
      auto move = statement(
          "UPDATE memory_files SET blob_id = ?, anchor_lines = ?, anchor_blob = ? WHERE memory_pk = ? AND path = ? "
          "AND (anchor_lines IS NOT ? OR anchor_blob IS NOT ?)");
      sqlrows::bindOpt(*move, 1, f.blobId);
      move->bind(2, *lines);
      move->bind(3, *blob);
      move->bind(4, pk);
      move->bind(5, f.path);
      move->bind(6, *lines);
      move->bind(7, *blob);
      written = move->exec() > 0;
    }
    if (!written) continue;
    added.push_back(f.path);
    if (f.anchor && f.anchor->keptContent) {
      // After the ref: a version is only ever written for a ref that needs it.
      auto keep = statement("INSERT OR IGNORE INTO anchor_versions(blob_id, content) VALUES (?, ?)");
      keep->bind(1, f.anchor->blob);
      keep->bind(2, f.anchor->keptContent->data(), static_cast<int>(f.anchor->keptContent->size()));
      keep->exec();
    }
  }
  return added;
}

void StoreSql::deleteFileRefs(int64_t pk) {
  auto del = statement("DELETE FROM memory_files WHERE memory_pk = ?");
  del->bind(1, pk);
  del->exec();
}

std::vector<std::string> StoreSql::deleteFileRefs(int64_t pk, const std::vector<std::string>& paths) {
  std::vector<std::string> removed;
  auto del = statement("DELETE FROM memory_files WHERE memory_pk = ? AND path = ?");
  for (const auto& p : paths) {
    del->bind(1, pk);
    del->bind(2, p);
    if (del->exec() > 0) removed.push_back(p);
    del->reset();
  }
  return removed;
}

void StoreSql::appendEvent(const std::string& at, const std::string& memoryId, const std::string& action,
                           const std::string& actor, const nlohmann::json& detail) {
  auto q = statement("INSERT INTO memory_events(at, memory_id, action, actor, detail) VALUES (?, ?, ?, ?, ?)");
  q->bind(1, at);
  q->bind(2, memoryId);
  q->bind(3, action);
  q->bind(4, actor);
  q->bind(5, detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  q->exec();
}

void StoreSql::upsertTombstone(const Tombstone& t) {
  auto tomb = statement(
      "INSERT INTO tombstones(content_hash, memory_id, reason, actor, at) VALUES (?, ?, ?, ?, ?) "
      "ON CONFLICT(content_hash) DO UPDATE SET reason = excluded.reason, "
      "actor = excluded.actor, at = excluded.at, memory_id = excluded.memory_id");
  tomb->bind(1, t.contentHash);
  tomb->bind(2, t.memoryId);
  tomb->bind(3, t.reason);
  tomb->bind(4, t.actor);
  tomb->bind(5, t.at);
  tomb->exec();
}

bool StoreSql::insertTombstoneIfAbsent(const Tombstone& t) {
  auto ins = statement(
      "INSERT OR IGNORE INTO tombstones(content_hash, memory_id, reason, actor, at) VALUES (?, ?, ?, ?, ?)");
  ins->bind(1, t.contentHash);
  ins->bind(2, t.memoryId);
  ins->bind(3, t.reason);
  ins->bind(4, t.actor);
  ins->bind(5, t.at);
  return ins->exec() > 0;
}

void StoreSql::deleteTombstone(const std::string& contentHash) {
  auto del = statement("DELETE FROM tombstones WHERE content_hash = ?");
  del->bind(1, contentHash);
  del->exec();
}

void StoreSql::storeEmbedding(int64_t pk, const std::string& model, const std::vector<float>& vec) {
  auto q = statement(
      "INSERT INTO memory_embeddings(memory_pk, model, dim, vector) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(memory_pk, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector");
  q->bind(1, pk);
  q->bind(2, model);
  q->bind(3, static_cast<int64_t>(vec.size()));
  q->bind(4, vec.data(), static_cast<int>(vec.size() * sizeof(float)));
  q->exec();
}

void StoreSql::writeSimilarEdges(int64_t pk, const std::vector<VectorIndex::Hit>& kept, const std::string& at) {
  if (kept.empty()) return;
  // Each edge once, as (higher pk, lower pk) (0006_similar_edges_once.sql): a new memory's rows are keyed by its own
  // pk, the highest, and append. All of them through one statement (one per neighbour count, so at most as many
  // cached statements as a row keeps neighbours).
  // ?1 (the time) comes first in each row so that every plain ? after it numbers on from 2.
  std::string sql = "INSERT INTO memory_edges(created_at, src_pk, dst_pk, kind, weight) VALUES ";
  for (size_t i = 0; i < kept.size(); ++i) sql += i ? ", (?1, ?, ?, 'similar', ?)" : "(?1, ?, ?, 'similar', ?)";
  sql += " ON CONFLICT(src_pk, dst_pk, kind) DO UPDATE SET weight = excluded.weight";
  auto q = statement(sql);
  q->bind(1, at);
  int slot = 2;
  for (const auto& h : kept) {
    q->bind(slot++, std::max(pk, h.key));
    q->bind(slot++, std::min(pk, h.key));
    q->bind(slot++, static_cast<double>(h.score));
  }
  q->exec();
}

void StoreSql::unlinkSimilar(int64_t pk) {
  // A `similar` edge is one row, keyed by either end: found through the primary key or idx_memory_edges_dst.
  auto asDst = statement("DELETE FROM memory_edges WHERE dst_pk = ? AND kind = 'similar'");
  asDst->bind(1, pk);
  asDst->exec();
  auto own = statement("DELETE FROM memory_edges WHERE src_pk = ? AND kind = 'similar'");
  own->bind(1, pk);
  own->exec();
}

void StoreSql::writeSupersedesEdge(int64_t byPk, int64_t oldPk, const std::string& at) {
  auto edge = statement(
      "INSERT OR REPLACE INTO memory_edges(src_pk, dst_pk, kind, weight, created_at) VALUES (?, ?, 'supersedes', 1, ?)");
  edge->bind(1, byPk);
  edge->bind(2, oldPk);
  edge->bind(3, at);
  edge->exec();
}

void StoreSql::indexTextFrom(int64_t firstPk) {
  for (const char* table : {"memories_fts", "memories_fts_tri"}) {
    auto q = statement(std::string("INSERT INTO ") + table +
                       "(rowid, summary, details, topics_text) "
                       "SELECT pk, summary, details, topics_text FROM memories WHERE pk >= ?");
    q->bind(1, firstPk);
    q->exec();
  }
}

}  // namespace memq
