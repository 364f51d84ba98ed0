// MemoryStore implementation; see memory_store.h for the invariants this file keeps.
#include "daemon/store/memory_store.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unordered_set>

#include <sqlite3.h>

#include "daemon/embed/hashbag.h"
#include "daemon/model/content_hash.h"
#include "daemon/store/database.h"
#include "daemon/util/clock.h"
#include "daemon/util/trigrams.h"
#include "daemon/util/unicode.h"
#include "daemon/util/utf8.h"
#include "daemon/util/uuid.h"
#include "protocol/json_writer.h"

namespace memq {

namespace {

constexpr const char* kMemoryColumns =
    "pk, id, category, summary, details, topics, source, session_id, created_at, updated_at, last_used_at, "
    "use_count, pinned, state, superseded_by, state_reason, content_hash";

constexpr double kEdgeThreshold = 0.4;     // the reference system's similar-edge threshold
constexpr size_t kMaxEdges = 8;
constexpr double kSimilarHintCosine = 0.55;  // the reference system's similar-hint threshold
constexpr double kSimilarHintTrigram = 0.6;
constexpr size_t kMaxSimilarHints = 3;
constexpr double kSimilarRejectedCosine = 0.85;  // docs/design.md §2

std::optional<std::string> optText(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getString();
}

std::vector<std::string> parseTopics(const std::string& text) {
  std::vector<std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& t : j) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

Memory rowToMemory(SQLite::Statement& q, const std::string& scope) {
  Memory m;
  m.pk = q.getColumn(0).getInt64();
  m.id = q.getColumn(1).getString();
  m.category = optText(q.getColumn(2));
  m.summary = q.getColumn(3).getString();
  m.details = q.getColumn(4).getString();
  m.topics = parseTopics(q.getColumn(5).getString());
  m.source = q.getColumn(6).getString();
  m.sessionId = optText(q.getColumn(7));
  m.createdAt = q.getColumn(8).getString();
  m.updatedAt = q.getColumn(9).getString();
  m.lastUsedAt = q.getColumn(10).getString();
  m.useCount = q.getColumn(11).getInt64();
  m.pinned = q.getColumn(12).getInt() != 0;
  m.state = parseState(q.getColumn(13).getString()).value_or(MemoryState::kActive);
  m.supersededBy = optText(q.getColumn(14));
  m.stateReason = optText(q.getColumn(15));
  m.contentHash = q.getColumn(16).getString();
  m.scope = scope;
  return m;
}

void bindOpt(SQLite::Statement& q, int index, const std::optional<std::string>& v) {
  if (v) q.bind(index, *v);
  else q.bind(index);
}

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

nlohmann::json filesJson(const std::vector<FileRef>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) out.push_back(f.path);
  return out;
}

// The refs INSERT OR IGNORE keeps (the first of each path), in readFiles' order (ORDER BY path: SQLite's binary
// collation, which is std::string's byte order).
std::vector<FileRef> storedFileRefs(const std::vector<FileRef>& files) {
  std::vector<FileRef> out;
  std::unordered_set<std::string> seen;
  for (const auto& f : files) {
    if (seen.insert(f.path).second) out.push_back(f);
  }
  std::stable_sort(out.begin(), out.end(), [](const FileRef& a, const FileRef& b) { return a.path < b.path; });
  return out;
}

Status stateConflict(const Memory& m, const std::string& wanted) {
  return Status(ErrorCode::kConflict,
                "memory " + m.id + " is " + std::string(stateName(m.state)) + "; cannot " + wanted + " it",
                nlohmann::json{{"id", m.id}, {"state", stateName(m.state)}});
}

}  // namespace

MemoryStore::MemoryStore(StoreOptions options) : options_(std::move(options)) {}

MemoryStore::CachedStatement::CachedStatement(SQLite::Statement* shared, bool* busy,
                                              std::unique_ptr<SQLite::Statement> own)
    : stmt_(own ? own.get() : shared), busy_(own ? nullptr : busy), own_(std::move(own)) {
  if (busy_ != nullptr) *busy_ = true;
}

MemoryStore::CachedStatement::CachedStatement(CachedStatement&& other) noexcept
    : stmt_(other.stmt_), busy_(other.busy_), own_(std::move(other.own_)) {
  other.stmt_ = nullptr;
  other.busy_ = nullptr;
}

MemoryStore::CachedStatement::~CachedStatement() {
  if (stmt_ == nullptr || own_) return;
  stmt_->tryReset();
  try {
    stmt_->clearBindings();
  } catch (...) {
  }
  if (busy_ != nullptr) *busy_ = false;
}

MemoryStore::CachedStatement MemoryStore::statementOn(SQLite::Database& db, StatementCache& cache,
                                                     const std::string& sql) {
  auto it = cache.find(sql);
  if (it == cache.end()) {
    // Prepared before it is cached: a prepare that throws (a corrupt schema or index) must not leave an empty entry
    // for the next call to dereference.
    auto prepared = std::make_unique<SQLite::Statement>(db, sql);
    it = cache.try_emplace(sql).first;
    it->second.stmt = std::move(prepared);
  }
  if (it->second.busy) return CachedStatement(nullptr, nullptr, std::make_unique<SQLite::Statement>(db, sql));
  return CachedStatement(it->second.stmt.get(), &it->second.busy, nullptr);
}

MemoryStore::~MemoryStore() {
  stopApplier();
  // Saves still in a batch are committed; if that fails they stay in the journal, and the next open applies them.
  // A retired store committed (or rolled back) its batch when it retired.
  if (db_ && batchOpen_ && !retired_) (void)commitPendingSaves();
  // Statistics for the query planner, written at close; not into a file that answered an error (it may be damaged,
  // and memq never writes to a damaged file what it does not have to), nor into one that is no longer at its path.
  if (db_ && !sawStorageError_ && !retired_) db_->tryExec("PRAGMA optimize");
  // The WAL folded into the database file, so the file holds everything once closed (database.h).
  if (db_ && !sawStorageError_ && !retired_) (void)checkpointForClose(*db_);
}

std::string MemoryStore::now() const { return options_.clock ? options_.clock() : isoNow(); }

Status MemoryStore::storageError(const std::exception& e, const std::string& context) const {
  sawStorageError_ = true;
  return memq::storageError(e, context, options_.scope, options_.path);
}

Status MemoryStore::checkFilesInPlace() const {
  const char* moved = nullptr;
  if (databaseIdentity_ && fileIdentityAt(options_.path) != databaseIdentity_) {
    moved = "database file";
  } else if (journalIdentity_ && fileIdentityAt(journalPath(options_.path)) != journalIdentity_) {
    moved = "save journal";
  }
  if (moved == nullptr) return Status::ok();
  return Status(ErrorCode::kStorageError,
                "the " + options_.scope + " scope's " + moved + " beside " + options_.path +
                    " was removed, replaced or moved since memqd opened it (was the project deleted and created "
                    "again?); nothing was written to it; retry, and memqd opens the file now at that path",
                nlohmann::json{{"scope", options_.scope}, {"path", options_.path}});
}

Status MemoryStore::writable() const {
  if (retired_) {
    return Status(ErrorCode::kStorageError,
                  "the " + options_.scope + " database " + options_.path +
                      " was closed because its file was removed or replaced; nothing was written; retry",
                  nlohmann::json{{"scope", options_.scope}, {"path", options_.path}});
  }
  return checkFilesInPlace();
}

std::string MemoryStore::retire() {
  if (retired_) return "it was closed already";
  stopApplier();  // the connection back, every queued save written into the open batch
  const bool databaseInPlace = !databaseIdentity_ || fileIdentityAt(options_.path) == databaseIdentity_;
  const bool journalInPlace = journalIdentity_ && fileIdentityAt(journalPath(options_.path)) == journalIdentity_;
  uint64_t uncommitted = 0;
  {
    std::lock_guard lock(pipeMutex_);
    uncommitted = journalSeq_ - committedSeq_;
  }
  std::string fate;
  if (databaseInPlace) {
    // Only the journal went: the batch's saves belong in this database, which is still the one at the path.
    if (batchOpen_ || replayPending_) {
      Status st = commitPendingSaves();
      fate = st ? "the saves not yet committed were committed to it"
                : "committing its saves failed (" + st.message() + ")";
    } else {
      fate = "every save was committed";
    }
  } else {
    if (batchOpen_) abandonBatch(false);
    if (uncommitted == 0) {
      fate = "every acknowledged save was committed to the old file";
    } else if (journalInPlace) {
      fate = std::to_string(uncommitted) +
             " acknowledged saves not committed stay in the save journal, for the file now at the path";
    } else {
      fate = std::to_string(uncommitted) +
             " acknowledged saves not committed were in the removed journal and went with it";
    }
  }
  replayPending_ = false;  // no journal to replay from any more
  journal_.reset();        // its lock released, for the store opened next
  retired_ = true;
  return fate;
}

std::optional<std::string> MemoryStore::unappliedSavesWarning() const {
  if (!journal_ || !replayPending_) return std::nullopt;
  const std::string count = replayFailedSaves_ > 0 ? std::to_string(replayFailedSaves_) + " acknowledged saves"
                                                   : "acknowledged saves";
  return "the " + options_.scope + " scope is incomplete: " + count + " in its save journal " + journal_->path() +
         " could not be applied to its database" + (replayFailure_.empty() ? "" : " (" + replayFailure_ + ")") +
         "; this answer leaves them out until memqd applies them (it retries as requests come: free disk space)";
}

Result<std::unique_ptr<MemoryStore>> MemoryStore::open(StoreOptions options) {
  if (options.embedder == nullptr) return Status::internal("MemoryStore needs an embedder");
  std::unique_ptr<MemoryStore> store(new MemoryStore(std::move(options)));
  FileIdentity identity;
  auto db = openDatabase({store->options_.path, store->options_.maxSchemaVersion, &identity});
  if (!db) return db.status();
  store->db_ = std::move(*db);
  if (store->options_.path != ":memory:") store->databaseIdentity_ = identity;
  installCheckpointGuard(*store->db_, kCheckpointGuardFrames);
  store->active_ = std::make_unique<VectorIndex>(store->options_.embedder->dim());
  store->rejected_ = std::make_unique<VectorIndex>(store->options_.embedder->dim());
  MEMQ_RETURN_IF_ERROR(store->loadIndexes());
  MEMQ_RETURN_IF_ERROR(store->openJournal());
  if (store->options_.applySavesInBackground && store->batching()) {
    try {
      // Committed rows only: what a save answered in the background checks against (with the rows of the batch
      // not yet committed, kept in memory).
      store->reader_ = std::make_unique<SQLite::Database>(store->options_.path, SQLite::OPEN_READONLY);
      store->reader_->exec("PRAGMA busy_timeout = 5000");
    } catch (const std::exception&) {
      store->reader_.reset();  // saves are then applied before they are answered, as without the option
    }
  }
  return store;
}

Status MemoryStore::loadIndexes() {
  try {
    // Rows without a vector for the current model (older rows, imports) are embedded now, once.
    std::vector<std::pair<int64_t, std::vector<float>>> missing;
    {
      SQLite::Statement q(*db_,
                          "SELECT m.pk, m.state, e.vector, m.summary, m.details, m.topics FROM memories m "
                          "LEFT JOIN memory_embeddings e ON e.memory_pk = m.pk AND e.model = ? "
                          "WHERE m.state IN ('active', 'rejected')");
      q.bind(1, std::string(embedder().model()));
      const size_t dim = embedder().dim();
      std::vector<float> vec(dim);
      while (q.executeStep()) {
        int64_t pk = q.getColumn(0).getInt64();
        bool rejected = q.getColumn(1).getString() == "rejected";
        const auto& blob = q.getColumn(2);
        if (blob.isNull() || static_cast<size_t>(blob.getBytes()) != dim * sizeof(float)) {
          auto v = embedMemory(q.getColumn(3).getString(), q.getColumn(4).getString(),
                               parseTopics(q.getColumn(5).getString()));
          (rejected ? rejected_ : active_)->upsert(pk, v);
          missing.emplace_back(pk, std::move(v));
          continue;
        }
        std::memcpy(vec.data(), blob.getBlob(), dim * sizeof(float));
        (rejected ? rejected_ : active_)->upsert(pk, vec);
      }
    }
    if (!missing.empty()) {
      SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      for (const auto& [pk, v] : missing) storeEmbedding(pk, v);
      tx.commit();
    }
  } catch (const std::exception& e) {
    return storageError(e, "loading vectors of " + options_.path);
  }
  try {
    text_ = TextIndex::create(db_->getHandle());
    if (text_) loadMirror();
  } catch (const std::exception& e) {
    return storageError(e, "loading the text index of " + options_.path);
  }
  return Status::ok();
}

namespace {

// The file lane's order: newest last use first (as SQLite compares TEXT: bytewise), then highest pk.
bool usedMoreRecently(const MemoryStore::MirroredRow* a, const MemoryStore::MirroredRow* b) {
  if (a->lastUsedKey >= 0 && b->lastUsedKey >= 0) {
    if (a->lastUsedKey != b->lastUsedKey) return a->lastUsedKey > b->lastUsedKey;
  } else if (int c = a->lastUsedAt.compare(b->lastUsedAt); c != 0) {
    return c > 0;
  }
  return a->pk > b->pk;
}

void insertByLastUse(std::vector<const MemoryStore::MirroredRow*>& rows, const MemoryStore::MirroredRow* row) {
  rows.insert(std::upper_bound(rows.begin(), rows.end(), row, usedMoreRecently), row);
}

}  // namespace

void MemoryStore::setLastUsed(MirroredRow& row, const std::string& at) {
  // Out of each of its paths' lists (found by binary search while the row still has its old key), then back in.
  for (const auto& path : row.paths) {
    auto& rows = pathRows_[path];
    auto it = std::lower_bound(rows.begin(), rows.end(), &row, usedMoreRecently);
    if (it != rows.end() && *it == &row) rows.erase(it);
  }
  row.lastUsedAt = at;
  row.lastUsedKey = isoUtcDigits(at);
  for (const auto& path : row.paths) insertByLastUse(pathRows_[path], &row);
}

void MemoryStore::loadMirror() {
  mirrorStale_ = true;  // until the load completes
  text_->clear();
  rowMeta_.clear();
  pathRows_.clear();
  // Read before the rows: a commit by another connection in between then shows as a change, never as none.
  mirrorDataVersion_ = db_->execAndGet("PRAGMA data_version").getInt64();
  auto view = [](const SQLite::Column& c) {
    return std::string_view(static_cast<const char*>(c.getText()), static_cast<size_t>(c.getBytes()));
  };
  {
    SQLite::Statement q(*db_, "SELECT pk, summary, details, topics_text, state = 'active', last_used_at, use_count, "
                              "pinned FROM memories");
    while (q.executeStep()) {
      const int64_t pk = q.getColumn(0).getInt64();
      const bool active = q.getColumn(4).getInt() != 0;
      const auto summary = view(q.getColumn(1));
      const auto details = view(q.getColumn(2));
      text_->upsert(pk, summary, details, view(q.getColumn(3)), active);
      auto& row = rowMeta_[pk] = {active, q.getColumn(5).getString(), {}, q.getColumn(6).getInt64(),
                                  q.getColumn(7).getInt() != 0, utf16Length(summary) + utf16Length(details)};
      row.pk = pk;
      row.lastUsedKey = isoUtcDigits(row.lastUsedAt);
    }
  }
  {
    SQLite::Statement q(*db_, "SELECT memory_pk, path FROM memory_files");
    while (q.executeStep()) {
      const int64_t pk = q.getColumn(0).getInt64();
      std::string path = q.getColumn(1).getString();
      auto it = rowMeta_.find(pk);
      if (it == rowMeta_.end()) continue;
      pathRows_[path].push_back(&it->second);
      it->second.paths.push_back(std::move(path));
    }
  }
  for (auto& [path, rows] : pathRows_) std::sort(rows.begin(), rows.end(), usedMoreRecently);
  mirrorStale_ = false;
}

void MemoryStore::refreshMirror(int64_t pk, bool textChanged) {
  if (!text_ || mirrorStale_) return;
  try {
    // Drop the row's old file refs, then read it back as committed.
    if (auto it = rowMeta_.find(pk); it != rowMeta_.end()) {
      for (const auto& path : it->second.paths) {
        auto& rows = pathRows_[path];
        rows.erase(std::remove(rows.begin(), rows.end(), &it->second), rows.end());
        if (rows.empty()) pathRows_.erase(path);
      }
      rowMeta_.erase(it);
    }
    auto q = statement("SELECT summary, details, topics_text, state = 'active', last_used_at, use_count, pinned "
                       "FROM memories WHERE pk = ?");
    q->bind(1, pk);
    if (!q->executeStep()) {
      text_->remove(pk);
      return;
    }
    const bool active = q->getColumn(3).getInt() != 0;
    if (textChanged || !text_->contains(pk)) {
      text_->upsert(pk, q->getColumn(0).getString(), q->getColumn(1).getString(), q->getColumn(2).getString(), active);
    } else {
      text_->setActive(pk, active);
    }
    MirroredRow meta{active,
                     q->getColumn(4).getString(),
                     {},
                     q->getColumn(5).getInt64(),
                     q->getColumn(6).getInt() != 0,
                     utf16Length(q->getColumn(0).getString()) + utf16Length(q->getColumn(1).getString())};
    auto files = statement("SELECT path FROM memory_files WHERE memory_pk = ?");
    files->bind(1, pk);
    while (files->executeStep()) meta.paths.push_back(files->getColumn(0).getString());
    meta.pk = pk;
    meta.lastUsedKey = isoUtcDigits(meta.lastUsedAt);
    auto& row = rowMeta_[pk] = std::move(meta);
    for (const auto& path : row.paths) insertByLastUse(pathRows_[path], &row);
  } catch (const std::exception&) {
    mirrorStale_ = true;  // the write itself committed; the mirror is rebuilt before it is read again
  }
}

void MemoryStore::mirrorCreatedRow(int64_t pk, const SaveRecord& record) {
  if (!text_ || mirrorStale_) return;
  if (rowMeta_.count(pk) != 0) {
    refreshMirror(pk);
    return;
  }
  try {
    // The row as refreshMirror would read it back: a new row is active, unused and unpinned, last used when made,
    // with its file refs in path order.
    const auto& in = record.input;
    text_->upsert(pk, in.summary, in.details, topicsText(in.topics), true);
    MirroredRow meta{true, record.at, {}, 0, false, utf16Length(in.summary) + utf16Length(in.details)};
    for (const auto& f : storedFileRefs(record.files)) meta.paths.push_back(f.path);
    meta.pk = pk;
    meta.lastUsedKey = isoUtcDigits(meta.lastUsedAt);
    auto& row = rowMeta_[pk] = std::move(meta);
    for (const auto& path : row.paths) insertByLastUse(pathRows_[path], &row);
  } catch (const std::exception&) {
    mirrorStale_ = true;
  }
}

bool MemoryStore::mirrorReady() {
  if (!text_) return false;
  try {
    reloadIndexesIfStale();
    // data_version moves only when another connection commits (this one's writes refresh the mirror themselves).
    auto v = statement("PRAGMA data_version");
    int64_t version = v->executeStep() ? v->getColumn(0).getInt64() : -1;
    if (mirrorStale_ || version != mirrorDataVersion_) loadMirror();
    return true;
  } catch (const std::exception&) {
    mirrorStale_ = true;
    return false;
  }
}

std::vector<float> MemoryStore::embedMemory(const std::string& summary, const std::string& details,
                                            const std::vector<std::string>& topics) const {
  return embedder().embed(memoryEmbedSource(summary, details, topics));
}

void MemoryStore::storeEmbedding(int64_t pk, const std::vector<float>& vec) {
  auto q = statement(
      "INSERT INTO memory_embeddings(memory_pk, model, dim, vector) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(memory_pk, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector");
  q->bind(1, pk);
  q->bind(2, std::string(embedder().model()));
  q->bind(3, static_cast<int64_t>(vec.size()));
  q->bind(4, vec.data(), static_cast<int>(vec.size() * sizeof(float)));
  q->exec();
}

std::optional<std::vector<float>> MemoryStore::loadVector(int64_t pk) {
  SQLite::Statement q(*db_, "SELECT vector FROM memory_embeddings WHERE memory_pk = ? AND model = ?");
  q.bind(1, pk);
  q.bind(2, std::string(embedder().model()));
  if (!q.executeStep()) return std::nullopt;
  const auto& blob = q.getColumn(0);
  std::vector<float> v(static_cast<size_t>(blob.getBytes()) / sizeof(float));
  std::memcpy(v.data(), blob.getBlob(), v.size() * sizeof(float));
  return v;
}

void MemoryStore::appendEvent(const std::string& memoryId, const std::string& action, const Actor& actor,
                              const nlohmann::json& detail, const std::optional<std::string>& at) {
  auto q = statement("INSERT INTO memory_events(at, memory_id, action, actor, detail) VALUES (?, ?, ?, ?, ?)");
  q->bind(1, at ? *at : now());
  q->bind(2, memoryId);
  q->bind(3, action);
  q->bind(4, actor.toString());
  q->bind(5, detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  q->exec();
}

void MemoryStore::readFiles(Memory& m) {
  auto q = statement("SELECT path, blob_id FROM memory_files WHERE memory_pk = ? ORDER BY path");
  q->bind(1, m.pk);
  m.files.clear();
  while (q->executeStep()) m.files.push_back({q->getColumn(0).getString(), optText(q->getColumn(1))});
}

Result<Memory> MemoryStore::get(const std::string& id) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    auto q = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE id = ?");
    q->bind(1, id);
    if (!q->executeStep()) return Status::notFound("no memory with id " + id + " in the " + scope() + " scope");
    Memory m = rowToMemory(*q, scope());
    // Read while the row's statement is still open: both reads share its read transaction (one set of WAL locks,
    // and the row and its file refs from the same snapshot) instead of each taking its own.
    readFiles(m);
    return m;
  } catch (const std::exception& e) {
    return storageError(e);
  }
}

Result<Memory> MemoryStore::mustGet(const std::string& id) { return get(id); }

std::optional<int64_t> MemoryStore::pkOf(const std::string& id) {
  takeDatabase();  // saves handed to the background applier are written first
  auto q = statement("SELECT pk FROM memories WHERE id = ?");
  q->bind(1, id);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getInt64();
}

std::optional<std::string> MemoryStore::idOf(int64_t pk) {
  takeDatabase();  // saves handed to the background applier are written first
  auto q = statement("SELECT id FROM memories WHERE pk = ?");
  q->bind(1, pk);
  if (!q->executeStep()) return std::nullopt;
  return q->getColumn(0).getString();
}

Result<std::vector<std::string>> MemoryStore::matchIds(const std::string& idOrPrefix, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    std::vector<std::string> out;
    if (idOrPrefix.empty()) return out;
    if (pkOf(idOrPrefix)) return std::vector<std::string>{idOrPrefix};
    if (idOrPrefix.size() < 4) return out;
    // A range scan, not LIKE: '%' and '_' in the input are literal characters, not wildcards.
    std::string prefix = lower(idOrPrefix);
    SQLite::Statement q(*db_, "SELECT id FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?");
    q.bind(1, prefix);
    q.bind(2, prefix + "\xff");
    q.bind(3, limit);
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  } catch (const std::exception& e) {
    return storageError(e);
  }
}

std::vector<VectorIndex::Hit> MemoryStore::similarNeighbours(const std::vector<float>& vec,
                                                             std::optional<int64_t> self) const {
  // One more than kept: `self` may be among them (a row re-linked after an update is in the index).
  auto hits = active_->topK(vec, kMaxEdges + 1, static_cast<float>(kEdgeThreshold));
  std::vector<VectorIndex::Hit> kept;
  for (const auto& h : hits) {
    if (h.key != self && kept.size() < kMaxEdges) kept.push_back(h);
  }
  return kept;
}

std::vector<VectorIndex::Hit> MemoryStore::linkSimilar(int64_t pk, const std::vector<float>& vec,
                                                       const std::string& at) {
  auto kept = similarNeighbours(vec, pk);
  writeSimilarEdges(pk, kept, at);
  return kept;
}

void MemoryStore::writeSimilarEdges(int64_t pk, const std::vector<VectorIndex::Hit>& kept, const std::string& at) {
  if (kept.empty()) return;
  // Each edge once, as (higher pk, lower pk) (0006_similar_edges_once.sql): a new memory's rows are keyed by its own
  // pk, the highest, and append. All of them through one statement (one per neighbour count, so at most kMaxEdges
  // cached statements).
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

void MemoryStore::unlinkSimilar(int64_t pk) {
  // A `similar` edge is one row, keyed by either end: found through the primary key or idx_memory_edges_dst.
  auto asDst = statement("DELETE FROM memory_edges WHERE dst_pk = ? AND kind = 'similar'");
  asDst->bind(1, pk);
  asDst->exec();
  auto own = statement("DELETE FROM memory_edges WHERE src_pk = ? AND kind = 'similar'");
  own->bind(1, pk);
  own->exec();
}

std::vector<SimilarHint> MemoryStore::similarHints(const std::string& summary,
                                                   const std::vector<VectorIndex::Hit>& neighbours, int64_t selfPk,
                                                   bool committedView) {
  std::vector<SimilarHint> out;
  for (const auto& h : neighbours) {
    if (h.key == selfPk || h.score < kSimilarHintCosine) continue;
    if (out.size() >= kMaxSimilarHints) break;
    if (committedView) {
      // A neighbour of the batch not yet committed is known from memory (it is active: only saves happened since).
      std::lock_guard lock(pipeMutex_);
      if (auto it = uncommittedRows_.find(h.key); it != uncommittedRows_.end()) {
        out.push_back({it->second.first, h.score, it->second.second, "semantic"});
        continue;
      }
    }
    auto q = statement(committedView, "SELECT id, summary FROM memories WHERE pk = ? AND state = 'active'");
    q->bind(1, h.key);
    if (q->executeStep()) {
      out.push_back({q->getColumn(0).getString(), h.score, q->getColumn(1).getString(), "semantic"});
    }
  }
  if (!out.empty()) return out;
  // Fallback, as the reference system does: trigram duplicates by summary containment.
  if (summary.size() < 6) return out;
  std::string phrase;
  for (char c : summary) phrase.push_back(c == '"' ? ' ' : c);
  // Trigram candidates: any of the summary's words of ≥ 3 characters, OR-ed (bounded).
  std::string match;
  size_t terms = 0;
  size_t i = 0;
  while (i < phrase.size() && terms < 32) {
    while (i < phrase.size() && std::isspace(static_cast<unsigned char>(phrase[i]))) ++i;
    size_t j = i;
    while (j < phrase.size() && !std::isspace(static_cast<unsigned char>(phrase[j]))) ++j;
    if (j - i >= 3) {
      if (!match.empty()) match += " OR ";
      match += "\"" + phrase.substr(i, j - i) + "\"";
      ++terms;
    }
    i = j;
  }
  if (match.empty()) return out;
  try {
    // The 8 best active rows other than the new one, by bm25 (see rankedActive for why the join is not in SQL).
    std::vector<SimilarHint> candidates;
    auto rows = statement(committedView, "SELECT id, summary FROM memories WHERE pk = ?");
    for (const auto& hit : rankedActive(FtsLane::kTrigram, match, 8, selfPk, committedView)) {
      rows->bind(1, hit.pk);
      if (rows->executeStep()) {
        std::string other = rows->getColumn(1).getString();
        double w = trigramContainment(summary, other);
        if (w >= kSimilarHintTrigram) candidates.push_back({rows->getColumn(0).getString(), w, other, "trigram"});
      }
      rows->reset();
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const SimilarHint& a, const SimilarHint& b) { return a.weight > b.weight; });
    if (candidates.size() > kMaxSimilarHints) candidates.resize(kMaxSimilarHints);
    return candidates;
  } catch (const std::exception&) {
    // A hint is advisory: an FTS hiccup must not fail the save. But if SQLite rolled the batch's transaction back
    // (it may, on an I/O error), the rest of the save must not run outside it.
    if (!committedView && batchOpen_ && sqlite3_get_autocommit(db_->getHandle()) != 0) throw;
    return out;
  }
}

namespace {

std::optional<std::string> optFromJson(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

}  // namespace

std::string MemoryStore::SaveRecord::toJson() const {
  // Written directly (JsonWriter), not through a nlohmann tree: this runs for every save, on the thread that answers
  // it. The same text nlohmann's dump gives (keys in byte order, invalid UTF-8 replaced).
  std::string out;
  out.reserve(256 + input.summary.size() + input.details.size());
  JsonWriter w(out);
  auto optString = [&w](const std::optional<std::string>& v) {
    if (v) {
      w.string(*v);
    } else {
      w.null();
    }
  };
  w.beginObject();
  w.key("actor_client");
  w.string(actor.client);
  w.key("actor_source");
  w.string(actor.source);
  w.key("at");
  w.string(at);
  w.key("category");
  optString(input.category);
  w.key("content_hash");
  w.string(input.contentHash);
  w.key("details");
  w.string(input.details);
  w.key("files");
  w.beginArray();
  for (const auto& f : files) {
    w.beginObject();
    w.key("blob_id");
    optString(f.blobId);
    w.key("path");
    w.string(f.path);
    w.endObject();
  }
  w.endArray();
  w.key("id");
  w.string(id);
  w.key("merge_topics");
  w.boolean(input.mergeTopics);
  if (seq != 0) {
    w.key("seq");
    w.integer(static_cast<int64_t>(seq));
  }
  w.key("session_id");
  optString(input.sessionId);
  w.key("source");
  w.string(input.source);
  w.key("summary");
  w.string(input.summary);
  w.key("topics");
  w.beginArray();
  for (const auto& t : input.topics) w.string(t);
  w.endArray();
  w.key("truncated");
  w.boolean(input.truncated);
  w.endObject();
  return out;
}

MemoryStore::SaveRecord MemoryStore::SaveRecord::fromJson(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  SaveRecord r;
  r.id = j.at("id").get<std::string>();
  r.at = j.at("at").get<std::string>();
  r.input.summary = j.at("summary").get<std::string>();
  r.input.details = j.at("details").get<std::string>();
  r.input.category = optFromJson(j.at("category"));
  r.input.topics = j.at("topics").get<std::vector<std::string>>();
  r.input.source = j.at("source").get<std::string>();
  r.input.sessionId = optFromJson(j.at("session_id"));
  r.input.mergeTopics = j.at("merge_topics").get<bool>();
  r.input.truncated = j.at("truncated").get<bool>();
  r.input.contentHash = j.at("content_hash").get<std::string>();
  for (const auto& f : j.at("files")) {
    r.files.push_back({f.at("path").get<std::string>(), optFromJson(f.at("blob_id"))});
    r.input.files.push_back(r.files.back().path);
  }
  r.actor.source = j.at("actor_source").get<std::string>();
  r.actor.client = j.at("actor_client").get<std::string>();
  // Records of an older memq have no number: the replay numbers them by their journal's batch.
  if (auto it = j.find("seq"); it != j.end()) r.seq = it->get<uint64_t>();
  return r;
}

Result<SaveOutcome> MemoryStore::save(const NormalizedSave& input, const std::vector<FileRef>& files,
                                      const Actor& actor) {
  if (retired_) return writable();
  SaveRecord record{input, files, actor, newUuidV4(), now()};
  const auto started = std::chrono::steady_clock::now();
  // A save that starts soon after the previous one joins its batch; the first save after a pause commits on its
  // own (durable in SQLite, and any storage error reported, before it is acknowledged).
  const bool joinsStream =
      batching() && (handedOff_ || batchOpen_ || (lastSaveEnd_ && started - *lastSaveEnd_ < options_.saveStreamGap));
  if (joinsStream && reader_) {
    if (auto answered = saveInBackground(record)) {
      lastSaveEnd_ = std::chrono::steady_clock::now();
      return std::move(*answered);
    }
  }
  takeDatabase();
  try {
    replayJournalIfNeeded();
    if (!batchOpen_) beginBatch();
    uint64_t journalMark = 0;
    SaveEffects effects;
    try {
      effects = applyInSavepoint(record, [&] {
        if (!batching()) return;
        // In the journal before the savepoint is released: a save is acknowledged only once it would be replayed.
        std::lock_guard lock(pipeMutex_);
        if (Status st = journalRecord(record, journalMark); !st) throw std::runtime_error(st.message());
        // Journalled into the file at the journal's path, and bound for the database at its path: else it is
        // not acknowledged (the catch below takes it out of the journal).
        if (Status st = checkFilesInPlace(); !st) throw std::runtime_error(st.message());
      });
    } catch (...) {
      if (batching() && record.seq != 0) {
        std::lock_guard lock(pipeMutex_);
        unjournalRecord(record, journalMark);  // not acknowledged: never replayed
      }
      if (sqlite3_get_autocommit(db_->getHandle()) != 0) {
        // SQLite rolled the whole transaction back (it may, on a full disk or an I/O error), the batch's earlier
        // saves with it. They were acknowledged and are in the journal: applied again as soon as possible.
        const bool earlierSaves = batchSaves_ > 0;
        abandonBatch(earlierSaves);
        if (earlierSaves) {
          replayPending_ = true;
          try {
            replayJournalIfNeeded();
          } catch (const std::exception&) {
            // Still failing: every later write, and commitPendingSaves(), tries again.
          }
        }
      } else if (batchSaves_ == 0) {
        abandonBatch(false);  // nothing else in the transaction: end it
      }
      throw;
    }
    ++batchSaves_;
    if (record.seq != 0) appliedSeq_ = record.seq;
    if (reader_ && effects.outcome.status == "created") {
      std::lock_guard lock(pipeMutex_);
      noteUncommitted(effects.outcome.memory->pk, record);
    }
    lastSaveEnd_ = std::chrono::steady_clock::now();
    bool journalFull = false;
    {
      std::lock_guard lock(pipeMutex_);
      journalFull = journalOverLimit();
    }
    if (!joinsStream || batchSaves_ >= options_.saveBatch || journalFull) {
      if (batching()) {
        // This save is not acknowledged if the commit fails: out of the journal, so that no replay brings it back.
        // The batch's earlier saves were acknowledged; they stay in the journal and are applied again.
        if (Status st = commitPendingSaves(); !st) {
          {
            std::lock_guard lock(pipeMutex_);
            unjournalRecord(record, journalMark);
          }
          try {
            replayJournalIfNeeded();
          } catch (const std::exception&) {
            // Still failing: every later write, and commitPendingSaves(), tries again.
          }
          return st;
        }
      } else if (Status st = commitPendingSaves(); !st) {
        return st;
      }
    }
    return std::move(effects.outcome);
  } catch (const std::exception& e) {
    return storageError(e, "save");
  }
}

MemoryStore::SaveEffects MemoryStore::applyInSavepoint(const SaveRecord& record,
                                                       const std::function<void()>& beforeRelease) {
  // A save may write the batch's pending rows into the FTS lanes (a topic merge, see applySave); the rollback undoes
  // that write, so the rows must be pending again.
  const std::optional<int64_t> pendingBefore = firstPendingPk_;
  db_->exec("SAVEPOINT save");
  SaveEffects effects;
  try {
    effects = applySave(record);
    if (beforeRelease) beforeRelease();
    db_->exec("RELEASE save");
  } catch (...) {
    db_->tryExec("ROLLBACK TO save");
    db_->tryExec("RELEASE save");
    firstPendingPk_ = pendingBefore;
    throw;
  }
  publish(record, effects);
  return effects;
}

void MemoryStore::publish(const SaveRecord& record, SaveEffects& effects) {
  if (effects.activeVector) active_->upsert(effects.activeVector->first, effects.activeVector->second);
  if (effects.refreshPk) {
    if (effects.outcome.status == "created") {
      mirrorCreatedRow(*effects.refreshPk, record);
    } else {
      refreshMirror(*effects.refreshPk);
    }
  }
  // A dedup answers with the row as it now is (use count, topics, files).
  if (effects.outcome.status == "deduped") {
    auto fresh = get(effects.outcome.id);
    if (fresh) effects.outcome.memory = std::move(*fresh);
  }
}

void MemoryStore::beginBatch() {
  db_->exec("BEGIN IMMEDIATE");
  batchOpen_ = true;
  batchSaves_ = 0;
  firstPendingPk_.reset();
}

void MemoryStore::abandonBatch(bool published) {
  db_->tryExec("ROLLBACK");
  batchOpen_ = false;
  batchSaves_ = 0;
  firstPendingPk_.reset();
  if (!published) return;
  // The batch's rows were published to the vector indexes and the mirror: rebuild both from what is committed.
  reloadIndexes();
}

void MemoryStore::reloadIndexes() {
  active_ = std::make_unique<VectorIndex>(embedder().dim());
  rejected_ = std::make_unique<VectorIndex>(embedder().dim());
  mirrorStale_ = true;
  // If the reload fails too (the error that failed the batch may persist), it is tried again before the next write
  // and the next search, so the vector indexes never stay empty.
  indexesStale_ = !loadIndexes().isOk();
}

void MemoryStore::reloadIndexesIfStale() {
  if (!indexesStale_) return;
  reloadIndexes();
  if (indexesStale_) throw std::runtime_error("cannot reload the in-memory indexes of " + options_.path);
}

void MemoryStore::writePendingText() {
  if (!firstPendingPk_) return;
  for (const char* table : {"memories_fts", "memories_fts_tri"}) {
    auto q = statement(std::string("INSERT INTO ") + table +
                       "(rowid, summary, details, topics_text) "
                       "SELECT pk, summary, details, topics_text FROM memories WHERE pk >= ?");
    q->bind(1, *firstPendingPk_);
    q->exec();
  }
  firstPendingPk_.reset();
}

Status MemoryStore::journalRecord(SaveRecord& record, uint64_t& sizeBefore) {
  if (journalNeedsReset_ && journalSeq_ == committedSeq_) {
    // Every record in the file is committed: emptied first, so a replay never reads them again.
    MEMQ_RETURN_IF_ERROR(journal_->reset(committedSeq_ + 1));
    journalNeedsReset_ = false;
  }
  sizeBefore = journal_->size();
  record.seq = journalSeq_ + 1;
  if (Status st = journal_->append(record.toJson()); !st) {
    record.seq = 0;
    return st;
  }
  journalSeq_ = record.seq;
  return Status::ok();
}

void MemoryStore::unjournalRecord(const SaveRecord& record, uint64_t sizeBefore) {
  if (record.seq == 0 || record.seq != journalSeq_) return;
  (void)journal_->truncateTo(sizeBefore);
  journalSeq_ = record.seq - 1;
}

void MemoryStore::noteUncommitted(int64_t pk, const SaveRecord& record) {
  uncommittedHashes_.insert(record.input.contentHash);
  uncommittedRows_[pk] = {record.id, record.input.summary};
}

void MemoryStore::commitBatch() {
  // Never committed into a file that is no longer at its path (a project deleted and created again): the batch
  // fails instead, and its saves stay in the journal.
  if (databaseIdentity_ && fileIdentityAt(options_.path) != databaseIdentity_) {
    throw std::runtime_error(checkFilesInPlace().message());
  }
  writePendingText();
  if (journal_) {
    auto q = statement("UPDATE save_batches SET applied_batch = ? WHERE id = 1");
    q->bind(1, static_cast<int64_t>(appliedSeq_));
    q->exec();
  }
  db_->exec("COMMIT");
  batchOpen_ = false;
  batchSaves_ = 0;
  if (!journal_) return;
  std::lock_guard lock(pipeMutex_);
  committedSeq_ = appliedSeq_;
  if (journalSeq_ != committedSeq_) return;  // newer saves are in the file, for the next batch: it stays
  journalNeedsReset_ = !journal_->reset(committedSeq_ + 1).isOk();  // else emptied before the next append
  uncommittedHashes_.clear();
  uncommittedRows_.clear();
}

Status MemoryStore::commitPendingSaves() {
  if (retired_) return writable();
  takeDatabase();
  if (replayPending_) {
    try {
      replayJournalIfNeeded();
    } catch (const std::exception& e) {
      return storageError(e, "saves in the journal");
    }
  }
  if (!batchOpen_) return Status::ok();
  try {
    commitBatch();
  } catch (const std::exception& e) {
    Status failed = storageError(e, "commit of saved memories");
    abandonBatch(true);
    // The batch's saves are in the journal: the next write applies them again before its own.
    if (journal_) {
      replayPending_ = true;
      replayFailure_ = failed.message();
      std::lock_guard lock(pipeMutex_);
      replayFailedSaves_ = journalSeq_ - committedSeq_;
    }
    return failed;
  }
  return Status::ok();
}

Result<bool> MemoryStore::commitPendingSavesIfIdle(std::chrono::milliseconds idle) {
  if ((handedOff_ || batchOpen_) && !replayPending_ && lastSaveEnd_ &&
      std::chrono::steady_clock::now() - *lastSaveEnd_ < idle) {
    return true;
  }
  MEMQ_RETURN_IF_ERROR(commitPendingSaves());
  return hasPendingSaves();
}

void MemoryStore::settle() {
  takeDatabase();
  replayJournalIfNeeded();
  if (batchOpen_) {
    if (Status st = commitPendingSaves(); !st) throw std::runtime_error(st.message());
  }
}

void MemoryStore::replayJournalIfNeeded() {
  try {
    replayJournal();
  } catch (const std::exception& e) {
    if (replayPending_) replayFailure_ = e.what();
    throw;
  }
}

void MemoryStore::replayJournal() {
  reloadIndexesIfStale();
  if (!replayPending_ || replaying_) return;
  replaying_ = true;
  replayFailedSaves_ = 0;  // not known until the journal is read
  struct ReplayingFlag {
    bool& flag;
    ~ReplayingFlag() { flag = false; }
  } replayingFlag{replaying_};
  auto contents = journal_->read();
  if (!contents) throw std::runtime_error(contents.status().message());
  const auto applied = static_cast<uint64_t>(
      db_->execAndGet("SELECT applied_batch FROM save_batches WHERE id = 1").getInt64());
  // Records numbered up to `applied` are committed (the file was not emptied after their commit); the rest are
  // applied as they were the first time: in order, each with its own id and time.
  std::vector<SaveRecord> unapplied;
  uint64_t last = applied;
  try {
    for (const auto& text : contents->records) {
      SaveRecord r = SaveRecord::fromJson(text);
      if (r.seq == 0) r.seq = contents->batch;  // an older memq's journal: one number per batch
      last = std::max(last, r.seq);
      if (r.seq > applied) unapplied.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot read the saves in ") + journal_->path() + ": " + e.what());
  }
  {
    std::lock_guard lock(pipeMutex_);
    journalSeq_ = last;
    committedSeq_ = applied;
    journalNeedsReset_ = unapplied.empty();
  }
  appliedSeq_ = applied;
  if (unapplied.empty()) {
    replayPending_ = false;
    return;
  }
  replayFailedSaves_ = unapplied.size();  // what a failure below leaves out of reads
  beginBatch();
  try {
    for (const auto& r : unapplied) {
      applyInSavepoint(r, nullptr);
      appliedSeq_ = r.seq;
      ++batchSaves_;
    }
  } catch (const std::exception& e) {
    abandonBatch(true);
    throw std::runtime_error(std::string("cannot apply the saves in ") + journal_->path() + ": " + e.what());
  }
  replayPending_ = false;
  if (Status st = commitPendingSaves(); !st) throw std::runtime_error(st.message());  // sets replayPending_ again
  replayedSaves_ = unapplied.size();
}

Status MemoryStore::openJournal() {
  if (options_.path.empty() || options_.path == ":memory:") return Status::ok();
  const std::string path = journalPath(options_.path);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (options_.saveBatch <= 1 && !exists) return Status::ok();
  auto journal = SaveJournal::open(path);
  if (!journal && journal.status().code() == ErrorCode::kConflict) {
    // Another process owns this database's saves (memqd, while a tool or benchmark reads the file beside it): this
    // store neither replays them nor batches its own.
    return Status::ok();
  }
  if (!journal) return journal.status();
  journal_ = std::move(*journal);
  journalIdentity_ = FileIdentity{journal_->device(), journal_->inode()};
  // Readable is required to open: a journal that is not memq's is not silently ignored.
  auto contents = journal_->read();
  if (!contents) return contents.status();
  replayPending_ = true;
  try {
    replayJournalIfNeeded();
  } catch (const std::exception&) {
    // The store opens (reads work); every write first tries these saves again and reports why they fail.
    return Status::ok();
  }
  if (options_.saveBatch <= 1) {
    journal_.reset();
    journalIdentity_.reset();
    std::filesystem::remove(path, ec);
  }
  return Status::ok();
}

MemoryStore::SaveEffects MemoryStore::applySave(const SaveRecord& record) {
  const NormalizedSave& input = record.input;
  const std::vector<FileRef>& files = record.files;
  const Actor& actor = record.actor;
  const std::string& at = record.at;
  SaveEffects effects;
  SaveOutcome& out = effects.outcome;
  out.warnings = input.warnings;
  // 1. Rejected content stays refused, even after its row was purged.
  auto tomb = statement("SELECT memory_id, reason FROM tombstones WHERE content_hash = ?");
  tomb->bind(1, input.contentHash);
  if (tomb->executeStep()) {
    out.status = "rejected";
    out.id = tomb->getColumn(0).getString();
    out.reason = tomb->getColumn(1).getString();
    appendEvent(out.id, "blocked_save", actor,
                {{"status", "rejected"}, {"reason", *out.reason}, {"content_hash", input.contentHash}}, at);
    return effects;
  }
  // 2. Existing content: never change its state.
  auto existing = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE content_hash = ?");
  existing->bind(1, input.contentHash);
  if (existing->executeStep()) {
    Memory m = rowToMemory(*existing, scope());
    out.id = m.id;
    if (input.truncated) {
      out.warnings.push_back("after truncation this text is identical to memory " + m.id);
    }
    if (m.state == MemoryState::kHidden || m.state == MemoryState::kSuperseded || m.state == MemoryState::kRejected) {
      out.status = m.state == MemoryState::kHidden       ? "exists_hidden"
                   : m.state == MemoryState::kSuperseded ? "exists_superseded"
                                                         : "rejected";
      if (m.state == MemoryState::kSuperseded) out.supersededBy = m.supersededBy;
      if (m.state == MemoryState::kRejected) out.reason = m.stateReason;
      appendEvent(m.id, "blocked_save", actor, {{"status", out.status}, {"content_hash", input.contentHash}}, at);
      readFiles(m);
      out.memory = std::move(m);
      return effects;
    }
    // Active: dedup.
    nlohmann::json detail = {{"use_count", m.useCount + 1}};
    std::vector<std::string> topics = m.topics;
    if (input.mergeTopics) {
      std::unordered_set<std::string> have;
      // The same case folding as normalizeTopics, so "Ärger" and "ärger" are one topic here too.
      for (const auto& t : topics) have.insert(jsToLowerUtf8(t));
      for (const auto& t : input.topics) {
        if (have.insert(jsToLowerUtf8(t)).second && topics.size() < kMaxTopics) {
          topics.push_back(t);
          out.topicsMerged = true;
        }
      }
    }
    // New topics change the row's text, and the update trigger re-indexes it: a row created in this transaction
    // must be in the lanes first (its removal from them would otherwise remove what was never added).
    if (out.topicsMerged && firstPendingPk_ && m.pk >= *firstPendingPk_) writePendingText();
    SQLite::Statement upd(*db_,
                          "UPDATE memories SET use_count = use_count + 1, last_used_at = ?, topics = ?, "
                          "topics_text = ?, updated_at = CASE WHEN ? THEN ? ELSE updated_at END WHERE pk = ?");
    upd.bind(1, at);
    upd.bind(2, nlohmann::json(topics).dump());
    upd.bind(3, topicsText(topics));
    upd.bind(4, out.topicsMerged ? 1 : 0);
    upd.bind(5, at);
    upd.bind(6, m.pk);
    upd.exec();
    if (out.topicsMerged) detail["topics"] = {{"before", m.topics}, {"after", topics}};
    // New file refs are added; existing ones keep their recorded blob id.
    SQLite::Statement addFile(*db_, "INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
    nlohmann::json added = nlohmann::json::array();
    readFiles(m);
    for (const auto& f : files) {
      if (m.files.size() + added.size() >= kMaxFiles) break;
      addFile.bind(1, m.pk);
      addFile.bind(2, f.path);
      bindOpt(addFile, 3, f.blobId);
      if (addFile.exec() > 0) added.push_back(f.path);
      addFile.reset();
    }
    if (!added.empty()) detail["files_added"] = added;
    appendEvent(m.id, "dedup", actor, detail, at);
    if (out.topicsMerged) {
      auto vec = embedMemory(m.summary, m.details, topics);
      storeEmbedding(m.pk, vec);
      effects.activeVector.emplace(m.pk, std::move(vec));
    }
    effects.refreshPk = m.pk;
    out.status = "deduped";
    return effects;
  }
  // 3. New memory.
  auto vec = embedMemory(input.summary, input.details, input.topics);
  const auto neighbours = similarNeighbours(vec, std::nullopt);
  const int64_t newPk = writeCreatedRows(record, std::nullopt, vec, neighbours);
  out.similar = similarHints(input.summary, neighbours, newPk);
  if (auto warning = rejectedWarning(vec, false)) out.warnings.push_back(std::move(*warning));
  effects.activeVector.emplace(newPk, std::move(vec));
  effects.refreshPk = newPk;
  out.status = "created";
  out.id = record.id;
  out.memory = createdMemory(record, newPk);
  return effects;
}

int64_t MemoryStore::writeCreatedRows(const SaveRecord& record, std::optional<int64_t> pk,
                                      const std::vector<float>& vec, const std::vector<VectorIndex::Hit>& neighbours) {
  const NormalizedSave& input = record.input;
  const std::string& at = record.at;
  {
    auto ins = statement(
        "INSERT INTO memories(pk, id, category, summary, details, topics, topics_text, source, "
        "session_id, created_at, updated_at, last_used_at, content_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    if (pk) ins->bind(1, *pk);  // else NULL: the next rowid
    ins->bind(2, record.id);
    bindOpt(*ins, 3, input.category);
    ins->bind(4, input.summary);
    ins->bind(5, input.details);
    ins->bind(6, nlohmann::json(input.topics).dump());
    ins->bind(7, topicsText(input.topics));
    ins->bind(8, input.source);
    bindOpt(*ins, 9, input.sessionId);
    ins->bind(10, at);
    ins->bind(11, at);
    ins->bind(12, at);
    ins->bind(13, input.contentHash);
    ins->exec();
  }
  const int64_t newPk = db_->getLastInsertRowid();
  if (!firstPendingPk_) firstPendingPk_ = newPk;  // indexed into the FTS lanes at commit (writePendingText)
  {
    auto addFile = statement("INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
    for (const auto& f : record.files) {
      addFile->bind(1, newPk);
      addFile->bind(2, f.path);
      bindOpt(*addFile, 3, f.blobId);
      addFile->exec();
      addFile->reset();
    }
  }
  storeEmbedding(newPk, vec);
  writeSimilarEdges(newPk, neighbours, at);
  nlohmann::json detail = {{"summary", input.summary},     {"details", input.details},
                           {"category", input.category ? nlohmann::json(*input.category) : nlohmann::json()},
                           {"topics", input.topics},       {"files", filesJson(record.files)},
                           {"content_hash", input.contentHash}};
  appendEvent(record.id, "create", record.actor, detail, at);
  return newPk;
}

std::optional<std::string> MemoryStore::rejectedWarning(const std::vector<float>& vec, bool committedView) {
  // A paraphrase of rejected content is written, but the caller is warned.
  auto rejectedHits = rejected_->topK(vec, 1, static_cast<float>(kSimilarRejectedCosine));
  if (rejectedHits.empty()) return std::nullopt;
  auto r = statement(committedView, "SELECT id, state_reason FROM memories WHERE pk = ?");
  r->bind(1, rejectedHits[0].key);
  if (!r->executeStep()) return std::nullopt;
  return "similar_rejected: this is close (cosine " + std::to_string(rejectedHits[0].score).substr(0, 4) +
         ") to rejected memory " + r->getColumn(0).getString() + " (reason: " + r->getColumn(1).getString() + ")";
}

Memory MemoryStore::createdMemory(const SaveRecord& record, int64_t pk) const {
  // The record as get() would read it back, built from what was just written instead of re-reading it.
  const NormalizedSave& input = record.input;
  Memory m;
  m.pk = pk;
  m.id = record.id;
  m.scope = scope();
  m.category = input.category;
  m.summary = input.summary;
  m.details = input.details;
  m.topics = input.topics;
  m.source = input.source;
  m.sessionId = input.sessionId;
  m.createdAt = m.updatedAt = m.lastUsedAt = record.at;
  m.contentHash = input.contentHash;
  m.files = storedFileRefs(record.files);
  return m;
}

Result<Memory> MemoryStore::update(const std::string& id, const UpdateInput& input, const Actor& actor,
                                   std::vector<std::string>* warnings) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto current = mustGet(id);
    if (!current) return current.status();
    Memory before = *current;
    Memory after = before;
    std::vector<std::string> localWarnings;
    auto& warn = warnings ? *warnings : localWarnings;
    bool truncated = false;
    if (input.summary) {
      auto s = normalizeSummary(*input.summary, warn, truncated);
      if (!s) return s.status();
      after.summary = *s;
    }
    if (input.details) {
      auto d = normalizeDetails(*input.details, warn, truncated);
      if (!d) return d.status();
      after.details = *d;
    }
    if (input.category) {
      MEMQ_RETURN_IF_ERROR(checkCategory(*input.category));
      after.category = *input.category;
    }
    if (input.topics) {
      auto t = normalizeTopics(*input.topics, warn);
      if (!t) return t.status();
      after.topics = *t;
    }
    if (input.files) after.files = *input.files;
    if (input.pinned) after.pinned = *input.pinned;
    after.contentHash = contentHash(after.summary, after.details);

    nlohmann::json changes = nlohmann::json::object();
    auto diff = [&](const char* name, const nlohmann::json& a, const nlohmann::json& b) {
      if (a != b) changes[name] = {{"before", a}, {"after", b}};
    };
    auto jsonCat = [](const std::optional<std::string>& c) { return c ? nlohmann::json(*c) : nlohmann::json(); };
    diff("summary", before.summary, after.summary);
    diff("details", before.details, after.details);
    diff("category", jsonCat(before.category), jsonCat(after.category));
    diff("topics", before.topics, after.topics);
    diff("files", filesJson(before.files), filesJson(after.files));
    diff("pinned", before.pinned, after.pinned);
    if (changes.empty()) return before;

    const bool textChanged = changes.contains("summary") || changes.contains("details") || changes.contains("topics");
    std::vector<float> vec;
    {
      SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      if (after.contentHash != before.contentHash) {
        SQLite::Statement clash(*db_, "SELECT id FROM memories WHERE content_hash = ? AND pk != ?");
        clash.bind(1, after.contentHash);
        clash.bind(2, before.pk);
        if (clash.executeStep()) {
          std::string other = clash.getColumn(0).getString();
          return Status(ErrorCode::kConflict, "memory " + other + " already has this content",
                        nlohmann::json{{"conflicts_with", other}});
        }
        SQLite::Statement tomb(*db_, "SELECT reason FROM tombstones WHERE content_hash = ?");
        tomb.bind(1, after.contentHash);
        if (tomb.executeStep()) {
          return Status(ErrorCode::kConflict, "this content was rejected: " + tomb.getColumn(0).getString(),
                        nlohmann::json{{"reason", tomb.getColumn(0).getString()}});
        }
      }
      const std::string at = now();
      SQLite::Statement upd(*db_,
                            "UPDATE memories SET summary = ?, details = ?, category = ?, topics = ?, topics_text = ?, "
                            "pinned = ?, content_hash = ?, updated_at = ? WHERE pk = ?");
      upd.bind(1, after.summary);
      upd.bind(2, after.details);
      bindOpt(upd, 3, after.category);
      upd.bind(4, nlohmann::json(after.topics).dump());
      upd.bind(5, topicsText(after.topics));
      upd.bind(6, after.pinned ? 1 : 0);
      upd.bind(7, after.contentHash);
      upd.bind(8, at);
      upd.bind(9, before.pk);
      upd.exec();
      if (input.files) {
        SQLite::Statement del(*db_, "DELETE FROM memory_files WHERE memory_pk = ?");
        del.bind(1, before.pk);
        del.exec();
        SQLite::Statement add(*db_, "INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
        for (const auto& f : *input.files) {
          add.bind(1, before.pk);
          add.bind(2, f.path);
          bindOpt(add, 3, f.blobId);
          add.exec();
          add.reset();
        }
      }
      if (textChanged) {
        vec = embedMemory(after.summary, after.details, after.topics);
        storeEmbedding(before.pk, vec);
        if (before.state == MemoryState::kActive) {
          // Edges describe the old text; recompute them against the new one.
          unlinkSimilar(before.pk);
          linkSimilar(before.pk, vec, now());
        }
      }
      appendEvent(before.id, "update", actor, changes);
      tx.commit();
    }
    if (textChanged) {
      if (before.state == MemoryState::kActive) active_->upsert(before.pk, vec);
      if (before.state == MemoryState::kRejected) rejected_->upsert(before.pk, vec);
    }
    refreshMirror(before.pk);
    return get(before.id);
  } catch (const std::exception& e) {
    return storageError(e, "update");
  }
}

Result<Memory> MemoryStore::changeState(const std::string& id, MemoryState from1, std::optional<MemoryState> from2,
                                        MemoryState to, const std::string& action, const Actor& actor,
                                        const std::optional<std::string>& reason) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto current = mustGet(id);
    if (!current) return current.status();
    Memory m = *current;
    if (m.state == to && to != MemoryState::kActive) return m;  // idempotent: no change, no event
    if (m.state != from1 && (!from2 || m.state != *from2)) {
      if (m.state == to) return m;
      return stateConflict(m, action);
    }
    std::optional<std::vector<float>> vec;
    {
      SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement upd(*db_,
                            "UPDATE memories SET state = ?, state_reason = ?, superseded_by = NULL, updated_at = ? "
                            "WHERE pk = ?");
      upd.bind(1, std::string(stateName(to)));
      bindOpt(upd, 2, to == MemoryState::kActive ? std::nullopt : reason);
      upd.bind(3, now());
      upd.bind(4, m.pk);
      upd.exec();
      nlohmann::json detail = {{"from", stateName(m.state)}, {"to", stateName(to)}};
      if (reason) detail["reason"] = *reason;
      if (m.supersededBy) detail["superseded_by"] = *m.supersededBy;
      if (to == MemoryState::kActive) {
        vec = loadVector(m.pk);
        if (!vec) {
          vec = embedMemory(m.summary, m.details, m.topics);
          storeEmbedding(m.pk, *vec);
        }
        linkSimilar(m.pk, *vec, now());
      } else {
        unlinkSimilar(m.pk);
      }
      if (to == MemoryState::kRejected) {
        SQLite::Statement tomb(*db_,
                               "INSERT INTO tombstones(content_hash, memory_id, reason, actor, at) VALUES (?, ?, ?, ?, ?) "
                               "ON CONFLICT(content_hash) DO UPDATE SET reason = excluded.reason, "
                               "actor = excluded.actor, at = excluded.at, memory_id = excluded.memory_id");
        tomb.bind(1, m.contentHash);
        tomb.bind(2, m.id);
        tomb.bind(3, reason.value_or(""));
        tomb.bind(4, actor.toString());
        tomb.bind(5, now());
        tomb.exec();
        vec = loadVector(m.pk);
      }
      if (m.state == MemoryState::kRejected) {
        SQLite::Statement del(*db_, "DELETE FROM tombstones WHERE content_hash = ?");
        del.bind(1, m.contentHash);
        del.exec();
      }
      appendEvent(m.id, action, actor, detail);
      tx.commit();
    }
    active_->remove(m.pk);
    rejected_->remove(m.pk);
    if (to == MemoryState::kActive && vec) active_->upsert(m.pk, *vec);
    if (to == MemoryState::kRejected && vec) rejected_->upsert(m.pk, *vec);
    refreshMirror(m.pk, /*textChanged=*/false);
    return get(m.id);
  } catch (const std::exception& e) {
    return storageError(e, action);
  }
}

Result<Memory> MemoryStore::hide(const std::string& id, const std::optional<std::string>& reason, const Actor& actor) {
  takeDatabase();  // saves handed to the background applier are written first
  return changeState(id, MemoryState::kActive, std::nullopt, MemoryState::kHidden, "hide", actor, reason);
}

Result<Memory> MemoryStore::restore(const std::string& id, const Actor& actor, const std::optional<std::string>& reason) {
  takeDatabase();  // saves handed to the background applier are written first
  auto m = mustGet(id);
  if (!m) return m.status();
  if (m->state == MemoryState::kActive) return *m;
  if (m->state == MemoryState::kRejected) {
    return Status(ErrorCode::kConflict, "memory " + id + " is rejected; use unreject to take the rejection back",
                  nlohmann::json{{"id", id}, {"state", "rejected"}});
  }
  // Restoring content that another active memory now holds is impossible (content_hash is unique), so no check.
  return changeState(id, MemoryState::kHidden, MemoryState::kSuperseded, MemoryState::kActive, "restore", actor,
                     reason);
}

Result<Memory> MemoryStore::setPinned(const std::string& id, bool pinned, const Actor& actor) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto m = mustGet(id);
    if (!m) return m.status();
    if (m->pinned == pinned) return *m;
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement upd(*db_, "UPDATE memories SET pinned = ?, updated_at = ? WHERE pk = ?");
    upd.bind(1, pinned ? 1 : 0);
    upd.bind(2, now());
    upd.bind(3, m->pk);
    upd.exec();
    appendEvent(m->id, pinned ? "pin" : "unpin", actor, nlohmann::json::object());
    tx.commit();
    refreshMirror(m->pk, /*textChanged=*/false);  // recall ranks by the mirror's pin
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, pinned ? "pin" : "unpin");
  }
}

Result<std::pair<Memory, Memory>> MemoryStore::supersede(const std::string& oldId, const std::string& byId,
                                                         const Actor& actor) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    if (oldId == byId) return Status::invalidField("by", "a memory cannot supersede itself");
    auto oldM = mustGet(oldId);
    if (!oldM) return oldM.status();
    auto byM = get(byId);
    if (!byM) return Status(ErrorCode::kNotFound, "replacement memory " + byId + " not found in the " + scope() +
                                                      " scope", nlohmann::json{{"field", "by"}});
    if (byM->state != MemoryState::kActive) {
      return Status(ErrorCode::kConflict, "replacement " + byId + " is " + std::string(stateName(byM->state)) +
                                              "; it must be active");
    }
    if (oldM->state == MemoryState::kSuperseded && oldM->supersededBy == byId) return std::pair{*oldM, *byM};
    if (oldM->state != MemoryState::kActive && oldM->state != MemoryState::kHidden) {
      return stateConflict(*oldM, "supersede");
    }
    {
      SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      SQLite::Statement upd(*db_,
                            "UPDATE memories SET state = 'superseded', superseded_by = ?, updated_at = ? WHERE pk = ?");
      upd.bind(1, byId);
      upd.bind(2, now());
      upd.bind(3, oldM->pk);
      upd.exec();
      unlinkSimilar(oldM->pk);
      SQLite::Statement edge(*db_,
                             "INSERT OR REPLACE INTO memory_edges(src_pk, dst_pk, kind, weight, created_at) "
                             "VALUES (?, ?, 'supersedes', 1, ?)");
      edge.bind(1, byM->pk);
      edge.bind(2, oldM->pk);
      edge.bind(3, now());
      edge.exec();
      appendEvent(oldM->id, "supersede", actor,
                  {{"from", stateName(oldM->state)}, {"to", "superseded"}, {"superseded_by", byId}});
      tx.commit();
    }
    active_->remove(oldM->pk);
    refreshMirror(oldM->pk, /*textChanged=*/false);
    auto o = get(oldId);
    if (!o) return o.status();
    auto b = get(byId);
    if (!b) return b.status();
    return std::pair{*o, *b};
  } catch (const std::exception& e) {
    return storageError(e, "supersede");
  }
}

Result<Memory> MemoryStore::reject(const std::string& id, const std::string& reason, const Actor& actor) {
  takeDatabase();  // saves handed to the background applier are written first
  if (reason.empty()) return Status::invalidField("reason", "reason is required to reject a memory");
  auto m = mustGet(id);
  if (!m) return m.status();
  if (m->state == MemoryState::kRejected) return *m;
  return changeState(id, m->state, std::nullopt, MemoryState::kRejected, "reject", actor, reason);
}

Result<Memory> MemoryStore::unreject(const std::string& id, const Actor& actor) {
  takeDatabase();  // saves handed to the background applier are written first
  if (actor.source != "user") {
    return Status(ErrorCode::kForbidden, "only a user may take back a rejection (source must be 'user')",
                  nlohmann::json{{"field", "source"}});
  }
  auto m = mustGet(id);
  if (!m) return m.status();
  if (m->state != MemoryState::kRejected) return stateConflict(*m, "unreject");
  return changeState(id, MemoryState::kRejected, std::nullopt, MemoryState::kActive, "unreject", actor, std::nullopt);
}

Status MemoryStore::purge(const std::string& id, bool confirm, const Actor& actor) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  if (!confirm) {
    return Status(ErrorCode::kForbidden, "purge deletes for good; pass confirm: true", nlohmann::json{{"field", "confirm"}});
  }
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto m = mustGet(id);
    if (!m) return m.status();
    {
      SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
      // The one sanctioned rewrite of the journal: a grant scoped to this memory id, held only inside this
      // transaction, lets the trigger accept the scrub (detail emptied, scrubbed = 1) and nothing else.
      SQLite::Statement grant(*db_, "INSERT INTO scrub_grants(memory_id) VALUES (?)");
      grant.bind(1, m->id);
      grant.exec();
      SQLite::Statement scrub(*db_,
                              "UPDATE memory_events SET detail = '{\"scrubbed\":true}', scrubbed = 1 "
                              "WHERE memory_id = ? AND scrubbed = 0");
      scrub.bind(1, m->id);
      scrub.exec();
      SQLite::Statement revoke(*db_, "DELETE FROM scrub_grants WHERE memory_id = ?");
      revoke.bind(1, m->id);
      revoke.exec();
      SQLite::Statement del(*db_, "DELETE FROM memories WHERE pk = ?");
      del.bind(1, m->pk);
      del.exec();
      appendEvent(m->id, "purge", actor,
                  {{"from", stateName(m->state)}, {"tombstone_kept", m->state == MemoryState::kRejected}});
      tx.commit();
    }
    active_->remove(m->pk);
    rejected_->remove(m->pk);
    refreshMirror(m->pk);
    return Status::ok();
  } catch (const std::exception& e) {
    return storageError(e, "purge");
  }
}

Result<Memory> MemoryStore::attach(const std::string& id, const std::vector<FileRef>& files, const Actor& actor) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto m = mustGet(id);
    if (!m) return m.status();
    std::unordered_set<std::string> have;
    for (const auto& f : m->files) have.insert(f.path);
    std::vector<FileRef> toAdd;
    for (const auto& f : files) {
      if (have.insert(f.path).second) toAdd.push_back(f);
    }
    if (toAdd.empty()) return *m;
    if (m->files.size() + toAdd.size() > kMaxFiles) {
      return Status::invalidField("files", "a memory holds at most " + std::to_string(kMaxFiles) + " files (" +
                                               std::to_string(m->files.size()) + " already attached)");
    }
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement add(*db_, "INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
    for (const auto& f : toAdd) {
      add.bind(1, m->pk);
      add.bind(2, f.path);
      bindOpt(add, 3, f.blobId);
      add.exec();
      add.reset();
    }
    SQLite::Statement touch(*db_, "UPDATE memories SET updated_at = ? WHERE pk = ?");
    touch.bind(1, now());
    touch.bind(2, m->pk);
    touch.exec();
    appendEvent(m->id, "attach", actor, {{"files", filesJson(toAdd)}});
    tx.commit();
    refreshMirror(m->pk, /*textChanged=*/false);
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, "attach");
  }
}

Result<Memory> MemoryStore::detach(const std::string& id, const std::vector<std::string>& paths, const Actor& actor) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    auto m = mustGet(id);
    if (!m) return m.status();
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement del(*db_, "DELETE FROM memory_files WHERE memory_pk = ? AND path = ?");
    nlohmann::json removed = nlohmann::json::array();
    for (const auto& p : paths) {
      del.bind(1, m->pk);
      del.bind(2, p);
      if (del.exec() > 0) removed.push_back(p);
      del.reset();
    }
    if (removed.empty()) return *m;
    SQLite::Statement touch(*db_, "UPDATE memories SET updated_at = ? WHERE pk = ?");
    touch.bind(1, now());
    touch.bind(2, m->pk);
    touch.exec();
    appendEvent(m->id, "detach", actor, {{"files", removed}});
    tx.commit();
    refreshMirror(m->pk, /*textChanged=*/false);
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, "detach");
  }
}

Status MemoryStore::markUsed(const std::vector<int64_t>& pks) {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  takeDatabase();  // saves handed to the background applier are written first
  if (pks.empty()) return Status::ok();
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement upd(*db_, "UPDATE memories SET use_count = use_count + 1, last_used_at = ? WHERE pk = ?");
    const std::string at = now();
    for (int64_t pk : pks) {
      upd.bind(1, at);
      upd.bind(2, pk);
      upd.exec();
      upd.reset();
    }
    tx.commit();
    // The file lane orders by last use and recall ranks by use count: the mirror takes both without re-reading
    // the rows (a pk listed twice was counted twice by the UPDATE, and is here).
    for (int64_t pk : pks) {
      if (auto it = rowMeta_.find(pk); it != rowMeta_.end()) {
        setLastUsed(it->second, at);
        ++it->second.useCount;
      }
    }
    return Status::ok();
  } catch (const std::exception& e) {
    return storageError(e, "mark used");
  }
}

Result<ImportOutcome> MemoryStore::importBatch(const ImportBatch& batch, const Actor& actor) {
  takeDatabase();  // saves handed to the background applier are written first
  ImportOutcome out;
  bool published = false;  // the in-memory indexes hold rows of the open transaction
  std::vector<int64_t> createdPks;
  try {
    settle();  // saves held in a batch are committed first (StoreOptions::saveBatch)
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    for (const auto& item : batch.tombstones) {
      const Tombstone& t = item.tombstone;
      {
        auto holder = statement("SELECT id, state FROM memories WHERE content_hash = ? AND state != 'rejected'");
        holder->bind(1, t.contentHash);
        if (holder->executeStep()) {
          const std::string id = holder->getColumn(0).getString(), state = holder->getColumn(1).getString();
          out.refusal = ImportRefusal{item.line, "content_hash",
                                      "a tombstone for the content of memory " + id + ", which is " + state +
                                          " in the " + scope() + " scope and would stay " + state +
                                          " while its text is refused: reject or purge that memory first, or leave "
                                          "this line out"};
          break;
        }
      }
      auto ins = statement(
          "INSERT OR IGNORE INTO tombstones(content_hash, memory_id, reason, actor, at) VALUES (?, ?, ?, ?, ?)");
      ins->bind(1, t.contentHash);
      ins->bind(2, t.memoryId);
      ins->bind(3, t.reason);
      ins->bind(4, t.actor);
      ins->bind(5, t.at);
      if (ins->exec() > 0) {
        ++out.tombstones;
        appendEvent(t.memoryId, "import", actor, {{"tombstone", true}, {"content_hash", t.contentHash}});
      }
    }
    std::vector<const ImportedMemory*> superseded;  // created memories naming a replacement
    for (const auto& item : batch.memories) {
      if (out.refusal) break;
      const Memory& in = item.memory;
      {
        auto byId = statement("SELECT content_hash FROM memories WHERE id = ?");
        byId->bind(1, in.id);
        if (byId->executeStep()) {
          if (byId->getColumn(0).getString() != in.contentHash) {
            out.refusal = ImportRefusal{item.line, "id",
                                        "memory " + in.id + " already exists in the " + scope() +
                                            " scope with other content"};
            break;
          }
          ++out.deduped;  // this very memory, already here (an import run again)
          continue;
        }
      }
      if (in.state != MemoryState::kRejected) {
        auto tomb = statement("SELECT 1 FROM tombstones WHERE content_hash = ?");
        tomb->bind(1, in.contentHash);
        if (tomb->executeStep()) {
          ++out.rejected;
          continue;
        }
      }
      {
        auto same = statement("SELECT 1 FROM memories WHERE content_hash = ?");
        same->bind(1, in.contentHash);
        if (same->executeStep()) {
          ++out.deduped;
          continue;
        }
      }
      auto ins = statement(
          "INSERT INTO memories(id, category, summary, details, topics, topics_text, source, session_id, "
          "created_at, updated_at, last_used_at, use_count, pinned, state, superseded_by, state_reason, "
          "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      ins->bind(1, in.id);
      bindOpt(*ins, 2, in.category);
      ins->bind(3, in.summary);
      ins->bind(4, in.details);
      ins->bind(5, nlohmann::json(in.topics).dump());
      ins->bind(6, topicsText(in.topics));
      ins->bind(7, in.source);
      bindOpt(*ins, 8, in.sessionId);
      ins->bind(9, in.createdAt);
      ins->bind(10, in.updatedAt);
      ins->bind(11, in.lastUsedAt);
      ins->bind(12, in.useCount);
      ins->bind(13, in.pinned ? 1 : 0);
      ins->bind(14, std::string(stateName(in.state)));
      bindOpt(*ins, 15, in.supersededBy);
      bindOpt(*ins, 16, in.stateReason);
      ins->bind(17, in.contentHash);
      ins->exec();
      const int64_t pk = db_->getLastInsertRowid();
      if (!firstPendingPk_) firstPendingPk_ = pk;  // the full-text lanes take every created row at once, below
      auto addFile = statement("INSERT OR IGNORE INTO memory_files(memory_pk, path, blob_id) VALUES (?, ?, ?)");
      for (const auto& f : in.files) {
        addFile->bind(1, pk);
        addFile->bind(2, f.path);
        bindOpt(*addFile, 3, f.blobId);
        addFile->exec();
        addFile->reset();
      }
      auto vec = embedMemory(in.summary, in.details, in.topics);
      storeEmbedding(pk, vec);
      if (in.state == MemoryState::kActive) linkSimilar(pk, vec, now());
      if (in.state == MemoryState::kRejected) {
        auto t = statement(
            "INSERT OR IGNORE INTO tombstones(content_hash, memory_id, reason, actor, at) VALUES (?, ?, ?, ?, ?)");
        t->bind(1, in.contentHash);
        t->bind(2, in.id);
        t->bind(3, in.stateReason.value_or("imported as rejected"));
        t->bind(4, actor.toString());
        t->bind(5, in.updatedAt);
        t->exec();
      }
      appendEvent(in.id, "import", actor, {{"state", stateName(in.state)}, {"content_hash", in.contentHash}});
      // Into the vector indexes at once, so that the memories imported after this one link to it as they would
      // had they been saved one by one; rebuilt from the committed rows if the import does not commit.
      if (in.state == MemoryState::kActive) active_->upsert(pk, vec);
      if (in.state == MemoryState::kRejected) rejected_->upsert(pk, vec);
      published = published || in.state == MemoryState::kActive || in.state == MemoryState::kRejected;
      createdPks.push_back(pk);
      if (in.supersededBy) superseded.push_back(&item);
      ++out.created;
    }
    for (const ImportedMemory* item : superseded) {
      if (out.refusal) break;
      auto target = statement("SELECT 1 FROM memories WHERE id = ?");
      target->bind(1, *item->memory.supersededBy);
      if (!target->executeStep()) {
        out.refusal = ImportRefusal{item->line, "superseded_by",
                                    "memory " + *item->memory.supersededBy + " is neither in the " + scope() +
                                        " scope nor created by this import"};
      }
    }
    if (!out.refusal) {
      writePendingText();
      tx.commit();
    }
  } catch (const std::exception& e) {
    // The transaction is rolled back by now (its destructor ran while the exception left the try block).
    firstPendingPk_.reset();
    if (published) reloadIndexes();
    return storageError(e, "import");
  }
  if (out.refusal) {
    firstPendingPk_.reset();
    if (published) reloadIndexes();
    return ImportOutcome{.refusal = out.refusal};
  }
  for (int64_t pk : createdPks) refreshMirror(pk);
  return out;
}

Result<std::string> MemoryStore::importRecord(const Memory& memory, const Actor& actor) {
  ImportBatch batch;
  batch.memories.push_back({memory, 1});
  auto r = importBatch(batch, actor);
  if (!r) return r.status();
  if (r->refusal) return Status::invalidField(r->refusal->field, r->refusal->message);
  return std::string(r->created ? "created" : r->rejected ? "rejected" : "deduped");
}

Result<std::vector<Memory>> MemoryStore::exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                                    const std::string& afterId, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    // The page's keys first, then its rows: sorting only (created_at, id, pk) is several times cheaper than
    // sorting whole rows, and there is no index on created_at to walk instead.
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
      out.push_back(rowToMemory(*row, scope()));
    }
    for (auto& m : out) readFiles(m);
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "export");
  }
}

Result<ListResult> MemoryStore::list(const ListFilter& f) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
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
    std::string cols = kMemoryColumns;
    std::string prefixed;
    {
      // prefix every column with "m." for the join-free query
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
    }
    SQLite::Statement q(*db_, "SELECT " + prefixed + " FROM memories m" + where +
                                  " ORDER BY m.pinned DESC, m.last_used_at DESC, m.pk DESC LIMIT ? OFFSET ?");
    int i = 1;
    for (auto& b : binders) b(q, i);
    q.bind(i++, f.limit);
    q.bind(i++, f.offset);
    while (q.executeStep()) out.memories.push_back(rowToMemory(q, scope()));
    for (auto& m : out.memories) readFiles(m);
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "list");
  }
}

Result<std::vector<AuditEvent>> MemoryStore::audit(const AuditFilter& f) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
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
  } catch (const std::exception& e) {
    return storageError(e, "audit");
  }
}

Result<std::vector<Tombstone>> MemoryStore::tombstones() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    SQLite::Statement q(*db_, "SELECT content_hash, memory_id, reason, actor, at FROM tombstones ORDER BY at, content_hash");
    std::vector<Tombstone> out;
    while (q.executeStep()) {
      out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                     q.getColumn(3).getString(), q.getColumn(4).getString()});
    }
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "tombstones");
  }
}

Result<std::optional<Tombstone>> MemoryStore::tombstoneFor(const std::string& contentHash) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    SQLite::Statement q(*db_, "SELECT content_hash, memory_id, reason, actor, at FROM tombstones WHERE content_hash = ?");
    q.bind(1, contentHash);
    if (!q.executeStep()) return std::optional<Tombstone>{};
    return std::optional<Tombstone>{Tombstone{q.getColumn(0).getString(), q.getColumn(1).getString(),
                                              q.getColumn(2).getString(), q.getColumn(3).getString(),
                                              q.getColumn(4).getString()}};
  } catch (const std::exception& e) {
    return storageError(e, "tombstone");
  }
}

Result<nlohmann::json> MemoryStore::stats() {
  takeDatabase();  // saves handed to the background applier are written first
  try {
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
    int64_t pinned = db_->execAndGet("SELECT COUNT(*) FROM memories WHERE pinned = 1 AND state = 'active'").getInt64();
    int64_t tombs = db_->execAndGet("SELECT COUNT(*) FROM tombstones").getInt64();
    int64_t events = db_->execAndGet("SELECT COUNT(*) FROM memory_events").getInt64();
    int64_t pages = db_->execAndGet("PRAGMA page_count").getInt64();
    int64_t pageSize = db_->execAndGet("PRAGMA page_size").getInt64();
    return nlohmann::json{{"scope", scope()},
                          {"path", path()},
                          {"states", byState},
                          {"categories", byCategory},
                          {"pinned", pinned},
                          {"tombstones", tombs},
                          {"events", events},
                          {"db_bytes", pages * pageSize},
                          {"embedder", embedder().model()},
                          {"vectors", active_->size()},
                          {"schema_version", schemaVersion(*db_)}};
  } catch (const std::exception& e) {
    return storageError(e, "stats");
  }
}

Status MemoryStore::checkpoint() {
  // Saves are being applied in the background: the applier's commits checkpoint a WAL that grows
  // (installCheckpointGuard), and waiting for it here would stall the stream.
  if (handedOff_) return Status::ok();
  try {
    settle();  // a batch open for long would keep its pages out of the checkpoint
    db_->exec("PRAGMA wal_checkpoint(PASSIVE)");
    return Status::ok();
  } catch (const std::exception& e) {
    return storageError(e, "checkpoint");
  }
}

std::vector<FtsHit> MemoryStore::rankedActive(FtsLane lane, const std::string& matchExpression, int limit,
                                              std::optional<int64_t> excludePk, bool committedView) {
  // Same rows and order as `FTS JOIN memories ON pk = rowid WHERE state = 'active' ORDER BY bm25 LIMIT n`, but the
  // join is not done for every match: bm25 is computed (it must be) for every matching row, the top-N sorter keeps
  // `limit` + (rows that may be skipped) of them, and only those are looked up. A common-word query matches most of
  // the table, and the per-match join was a third of the lane's time. Non-active rows are few and counted through
  // idx_memories_state.
  int64_t skippable = excludePk ? 1 : 0;
  {
    auto inactive =
        statement(committedView, "SELECT COUNT(*) FROM memories WHERE state IN ('hidden', 'superseded', 'rejected')");
    if (inactive->executeStep()) skippable += inactive->getColumn(0).getInt64();
  }
  auto q = statement(committedView,
                     lane == FtsLane::kUnicode
                         ? "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? "
                           "ORDER BY bm25(memories_fts) LIMIT ?"
                         : "SELECT rowid, bm25(memories_fts_tri) FROM memories_fts_tri WHERE memories_fts_tri MATCH ? "
                           "ORDER BY bm25(memories_fts_tri) LIMIT ?");
  q->bind(1, matchExpression);
  q->bind(2, static_cast<int64_t>(limit) + skippable);
  std::vector<FtsHit> out;
  if (limit <= 0) return out;
  auto state = skippable > (excludePk ? 1 : 0)
                   ? std::optional<CachedStatement>(
                         statement(committedView, "SELECT state = 'active' FROM memories WHERE pk = ?"))
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

Result<std::vector<FtsHit>> MemoryStore::searchFts(FtsLane lane, const std::string& matchExpression, int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  std::vector<FtsHit> out;
  if (matchExpression.empty()) return out;
  if (lane == FtsLane::kUnicode) {
    try {
      if (mirrorReady()) {
        if (auto phrases = text_->parse(matchExpression)) {
          int rank = 0;
          for (const auto& [pk, bm25] : text_->best(*phrases, static_cast<size_t>(std::max(limit, 0)))) {
            out.push_back({pk, bm25, ++rank});
          }
          return out;
        }
      }
    } catch (const std::exception& e) {
      mirrorStale_ = true;  // an evaluation cut short may leave the index's scratch dirty: rebuild before reuse
      return storageError(e, "full-text search");
    }
    auto matches = matchText(matchExpression);
    if (!matches) return matches.status();
    int rank = 0;
    for (const auto& [pk, bm25] : matches->best(static_cast<size_t>(std::max(limit, 0)))) out.push_back({pk, bm25, ++rank});
    return out;
  }
  try {
    settle();  // a batch's rows reach the FTS lanes when it commits
    return rankedActive(lane, matchExpression, limit, std::nullopt);
  } catch (const SQLite::Exception& e) {
    // An FTS syntax error means the query builder let something through; an empty lane is the safe answer.
    if (e.getErrorCode() == SQLITE_ERROR) return out;
    return storageError(e, "full-text search");
  } catch (const std::exception& e) {
    return storageError(e, "full-text search");
  }
}

Result<TextMatches> MemoryStore::matchText(const std::string& matchExpression) {
  takeDatabase();  // saves handed to the background applier are written first
  if (matchExpression.empty()) return TextMatches{};
  try {
    if (mirrorReady()) {
      if (auto phrases = text_->parse(matchExpression)) return text_->evaluate(*phrases);
    }
    // Another shape of expression, or no index: SQLite scores every match (the slow path the index replaces).
    settle();  // a batch's rows reach the FTS lanes when it commits
    auto q = statement("SELECT memories_fts.rowid, bm25(memories_fts), m.state = 'active' FROM memories_fts "
                       "CROSS JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ?");
    q->bind(1, matchExpression);
    std::vector<TextMatches::Row> rows;
    while (q->executeStep()) {
      rows.push_back({q->getColumn(0).getInt64(), q->getColumn(1).getDouble(), q->getColumn(2).getInt() != 0});
    }
    return TextMatches(std::move(rows));
  } catch (const SQLite::Exception& e) {
    // An FTS syntax error means the query builder let something through; no rows is the safe answer.
    if (e.getErrorCode() == SQLITE_ERROR) return TextMatches{};
    return storageError(e, "full-text search");
  } catch (const std::exception& e) {
    mirrorStale_ = true;  // as in searchFts
    return storageError(e, "full-text search");
  }
}

Result<std::vector<std::optional<double>>> MemoryStore::textBm25(const std::string& matchExpression,
                                                                  const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!matchExpression.empty()) {
    try {
      if (mirrorReady()) {
        if (auto phrases = text_->parse(matchExpression)) return text_->bm25Of(*phrases, pks);
      }
    } catch (const std::exception& e) {
      mirrorStale_ = true;  // as in searchFts
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

std::vector<FileHit> MemoryStore::pathHits(const std::vector<std::string>& paths, int limit) {
  // Each path's rows are kept newest first, so the answer is a merge of the queried paths' lists that stops after
  // `limit` distinct active rows, whatever the lists' lengths. A row attached to several queried paths is listed at
  // its first appearance (so `listed` holds at most `limit` rows).
  std::unordered_set<std::string_view> queried;
  struct Cursor {
    const std::vector<const MirroredRow*>* rows;
    size_t next;
  };
  std::vector<Cursor> cursors;
  for (const auto& p : paths) {
    if (!queried.insert(p).second) continue;
    if (auto it = pathRows_.find(p); it != pathRows_.end() && !it->second.empty()) cursors.push_back({&it->second, 0});
  }
  auto older = [](const Cursor& a, const Cursor& b) {  // heap order: the cursor at the newest row on top
    return usedMoreRecently((*b.rows)[b.next], (*a.rows)[a.next]);
  };
  std::make_heap(cursors.begin(), cursors.end(), older);
  std::unordered_set<const MirroredRow*> listed;
  std::vector<FileHit> out;
  while (!cursors.empty() && out.size() < static_cast<size_t>(limit)) {
    std::pop_heap(cursors.begin(), cursors.end(), older);
    Cursor& cursor = cursors.back();
    const MirroredRow* row = (*cursor.rows)[cursor.next++];
    if (cursor.next < cursor.rows->size()) {
      std::push_heap(cursors.begin(), cursors.end(), older);
    } else {
      cursors.pop_back();
    }
    if (!row->active || !listed.insert(row).second) continue;
    int matched = 0;  // how many of the queried paths the row is attached to
    for (const auto& path : row->paths) matched += static_cast<int>(queried.count(path));
    out.push_back({row->pk, matched});
  }
  return out;
}

Result<std::vector<std::vector<FileHit>>> MemoryStore::findByEachPath(const std::vector<std::string>& paths,
                                                                      int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  std::vector<std::vector<FileHit>> out;
  out.reserve(paths.size());
  if (limit > 0 && mirrorReady()) {
    for (const auto& path : paths) out.push_back(pathHits({path}, limit));
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
  std::vector<FileHit> out;
  if (paths.empty()) return out;
  if (limit > 0 && mirrorReady()) {
    // The SQL below, answered from the mirror: active rows attached to any of the paths, with how many of them,
    // newest use first (last_used_at compared as SQLite compares TEXT: bytewise), then highest pk.
    return pathHits(paths, limit);
  }
  try {
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
  } catch (const std::exception& e) {
    return storageError(e, "file lookup");
  }
}

Result<std::vector<Memory>> MemoryStore::loadMany(const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  std::vector<Memory> out;
  if (pks.empty()) return out;
  try {
    // Two statements per chunk of kBatch pks (rows, then all their file refs) instead of two per pk. The
    // placeholder count is fixed so the statements stay cached; unused slots are NULL, which matches nothing.
    constexpr size_t kBatch = 32;
    static const std::string kPlaceholders = [] {
      std::string p;
      for (size_t i = 0; i < kBatch; ++i) p += i ? ",?" : "?";
      return p;
    }();
    std::unordered_map<int64_t, Memory> loaded;
    loaded.reserve(pks.size());
    for (size_t start = 0; start < pks.size(); start += kBatch) {
      const size_t end = std::min(pks.size(), start + kBatch);
      {
        auto q = statement(std::string("SELECT ") + kMemoryColumns + " FROM memories WHERE pk IN (" + kPlaceholders +
                           ")");
        for (size_t i = start; i < end; ++i) q->bind(static_cast<int>(i - start + 1), pks[i]);
        while (q->executeStep()) {
          Memory m = rowToMemory(*q, scope());
          int64_t pk = m.pk;
          loaded.emplace(pk, std::move(m));
        }
      }
      auto files = statement("SELECT memory_pk, path, blob_id FROM memory_files WHERE memory_pk IN (" + kPlaceholders +
                             ") ORDER BY memory_pk, path");
      for (size_t i = start; i < end; ++i) files->bind(static_cast<int>(i - start + 1), pks[i]);
      while (files->executeStep()) {
        auto it = loaded.find(files->getColumn(0).getInt64());
        if (it != loaded.end()) it->second.files.push_back({files->getColumn(1).getString(), optText(files->getColumn(2))});
      }
    }
    // Input order, as before; a pk asked for twice comes back twice.
    std::unordered_map<int64_t, size_t> remaining;
    for (int64_t pk : pks) ++remaining[pk];
    out.reserve(pks.size());
    for (int64_t pk : pks) {
      auto it = loaded.find(pk);
      if (it == loaded.end()) continue;
      if (--remaining[pk] == 0) out.push_back(std::move(it->second));
      else out.push_back(it->second);
    }
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "load");
  }
}

std::optional<std::vector<const MemoryStore::MirroredRow*>> MemoryStore::mirroredRows(const std::vector<int64_t>& pks) {
  takeDatabase();  // saves handed to the background applier are written first
  if (!mirrorReady()) return std::nullopt;
  std::vector<const MirroredRow*> out;
  out.reserve(pks.size());
  for (int64_t pk : pks) {
    auto it = rowMeta_.find(pk);
    out.push_back(it == rowMeta_.end() ? nullptr : &it->second);
  }
  return out;
}

Result<std::vector<Memory>> MemoryStore::memoriesWithFiles(int limit) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    SQLite::Statement q(*db_, "SELECT DISTINCT m.pk FROM memories m JOIN memory_files mf ON mf.memory_pk = m.pk "
                              "WHERE m.state = 'active' ORDER BY m.pk LIMIT ?");
    q.bind(1, limit);
    std::vector<int64_t> pks;
    while (q.executeStep()) pks.push_back(q.getColumn(0).getInt64());
    return loadMany(pks);
  } catch (const std::exception& e) {
    return storageError(e, "review");
  }
}

Result<std::vector<std::tuple<std::string, std::string, double>>> MemoryStore::similarEdges(double minWeight) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    SQLite::Statement q(*db_,
                        // Each edge is one row, (higher pk, lower pk): listed as (lower, higher).
                        "SELECT a.id, b.id, e.weight FROM memory_edges e JOIN memories a ON a.pk = e.dst_pk "
                        "JOIN memories b ON b.pk = e.src_pk WHERE e.kind = 'similar' AND e.weight >= ? "
                        "AND a.state = 'active' AND b.state = 'active' ORDER BY e.weight DESC");
    q.bind(1, minWeight);
    std::vector<std::tuple<std::string, std::string, double>> out;
    while (q.executeStep()) out.emplace_back(q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getDouble());
    return out;
  } catch (const std::exception& e) {
    return storageError(e, "similar edges");
  }
}

}  // namespace memq
