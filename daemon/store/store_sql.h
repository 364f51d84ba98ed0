// StoreSql: one connection to one scope's SQLite file, and every SQL statement the store runs on it — the only
// place in the store that holds SQL text or maps a row to a Memory. It keeps the connection's prepared-statement
// cache, and it is the one writer of file refs (writeFileRefs). The save pipeline opens a second StoreSql on a
// read-only connection for the committed view (docs/architecture.md, "Saves in the background").
//
// Errors: every method throws SQLite::Exception (or std::exception) on a SQLite error and changes nothing in
// memory; MemoryStore, at its public methods, turns what is thrown into a Status once.
//
// Thread-safety: not thread-safe; one thread at a time uses a StoreSql (the save pipeline hands the main one to its
// applier thread and takes it back, see memory_store.h invariant 7).
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/embed/vector_index.h"
#include "daemon/model/memory.h"
#include "daemon/recall/recall_source.h"
#include "daemon/store/pending_usage.h"
#include "daemon/store/store_types.h"
#include "daemon/store/text_index.h"

struct sqlite3;

namespace memq {

// The row columns, as the mirror reads them (refreshRow).
struct MirrorRowData {
  std::string summary;
  std::string details;
  std::string topicsText;
  bool active = false;
  std::string lastUsedAt;
  int64_t useCount = 0;
  bool pinned = false;
  std::vector<MirroredFileRef> files;  // its file refs
};

// A memory row as an import or a save writes it (pk: the next rowid when unset).
struct NewMemoryRow {
  std::optional<int64_t> pk;
  const Memory* memory = nullptr;  // id, category, summary, details, topics, source, session, times, counts, state
};

class StoreSql {
 public:
  StoreSql(std::unique_ptr<SQLite::Database> db, std::string scope);
  ~StoreSql();
  StoreSql(const StoreSql&) = delete;
  StoreSql& operator=(const StoreSql&) = delete;

  SQLite::Database& database() { return *db_; }
  sqlite3* handle() { return db_->getHandle(); }
  // True when no transaction is open (SQLite may roll one back by itself, on a full disk or an I/O error).
  bool autocommit();

  // --- transactions ---
  // One write transaction (BEGIN IMMEDIATE), rolled back unless committed.
  class WriteTransaction {
   public:
    explicit WriteTransaction(StoreSql& sql) : tx_(*sql.db_, SQLite::TransactionBehavior::IMMEDIATE) {}
    void commit() { tx_.commit(); }

   private:
    SQLite::Transaction tx_;
  };
  void begin();       // BEGIN IMMEDIATE, left open
  void commit();      // COMMIT
  void rollback();    // ROLLBACK, ignoring an error (nothing may be open any more)
  void savepoint();   // SAVEPOINT save
  void release();     // RELEASE save
  void rollbackToSavepoint();  // ROLLBACK TO save, then RELEASE save, ignoring errors
  void checkpointPassive();
  void optimize();    // PRAGMA optimize, ignoring an error
  // wal_checkpoint(TRUNCATE) at a clean close (checkpointForClose of database.h); false when the WAL stays.
  bool checkpointForClose();
  int64_t dataVersion();
  // Counts this connection's own changes to the rows' mirrored columns in a TEMP table, under the same conditions as
  // migration 0011's triggers count every connection's (mirror_generation). Call once, on the store's own connection;
  // nothing is counted on a database older than 0011.
  void countOwnChanges();
  // mirror_generation less this connection's own count: it moves only when another connection changes what a
  // mirror holds of a row (its insert, delete, or an update of more than its uses). nullopt when not counted.
  std::optional<int64_t> othersChanges();
  int schemaVersion();
  int64_t nextPk();   // the pk SQLite gives the next row
  int64_t appliedBatch();
  void setAppliedBatch(uint64_t seq);
  // A team replica's last applied journal seq (replica_state; 0 for every other scope).
  int64_t replicaSeq();
  // The server's time of the journal row at replicaSeq() ("" before the first, or for a pre-0009 replica).
  std::string replicaAppliedAt();
  void setReplicaSeq(int64_t seq, const std::string& at);
  // Empties a replica: every row and tombstone, the seq back to 0 (the local journal stays).
  void clearReplica();

  // --- memories ---
  std::optional<Memory> memoryById(const std::string& id);  // with its file refs
  std::optional<Memory> memoryByContentHash(const std::string& contentHash);  // without file refs
  void readFiles(Memory& m);
  std::optional<int64_t> pkOf(const std::string& id);
  std::optional<std::string> idOf(int64_t pk);
  std::vector<std::string> idsWithPrefix(const std::string& lowerPrefix, int limit);
  bool contentExists(const std::string& contentHash);
  std::optional<std::string> contentHashOfId(const std::string& id);
  // The id of another row (than `pk`) holding the content, if any.
  std::optional<std::string> otherWithContent(const std::string& contentHash, int64_t pk);
  std::optional<std::pair<std::string, std::string>> idAndSummary(int64_t pk, bool activeOnly);
  // The id of a memory superseded by `id`, if any.
  std::optional<std::string> supersededBy(const std::string& id);
  std::optional<std::pair<std::string, std::string>> idAndStateReason(int64_t pk);
  // Inserts a memory row; returns its pk.
  int64_t insertMemory(const NewMemoryRow& row);
  // A dedup's row changes: use count + 1, last use `at`, topics (and updated_at when they changed).
  void recordDedup(int64_t pk, const std::string& at, const std::vector<std::string>& topics, bool topicsChanged);
  void updateContent(const Memory& after, const std::string& at);
  void setState(int64_t pk, MemoryState to, const std::optional<std::string>& reason, const std::string& at);
  void setSuperseded(int64_t pk, const std::string& byId, const std::string& at);
  void setPinned(int64_t pk, bool pinned, const std::string& at);
  void touch(int64_t pk, const std::string& at);
  // use_count + n and last_used_at = the later of the two, for each row (a row gone since is skipped).
  void addUses(const std::unordered_map<int64_t, PendingUsage::Use>& uses);
  // Scrubs the memory's events (the one sanctioned rewrite of the journal) and deletes its row.
  void purgeRow(int64_t pk, const std::string& id);

  // --- file refs ---
  // The one writer of file refs: inserts each ref whose path the row does not have yet (INSERT OR IGNORE: the
  // first ref of a path wins), at most `maxNew`; returns the paths inserted. With `reanchor`, a ref given with an
  // anchor for a path the row already has takes that anchor instead (memory/attach), and counts as written. The
  // version an inserted anchor keeps (FileAnchor::keptContent) is written with it, once per content. A kept version
  // no ref needs any more is deleted by the triggers of migration 0007, whichever statement removes its last ref.
  std::vector<std::string> writeFileRefs(int64_t pk, const std::vector<FileRef>& files,
                                         size_t maxNew = static_cast<size_t>(-1), bool reanchor = false);
  void deleteFileRefs(int64_t pk);
  // Deletes each listed path's ref; returns the paths deleted.
  std::vector<std::string> deleteFileRefs(int64_t pk, const std::vector<std::string>& paths);

  // The content of a version memq keeps (anchor_versions), or null.
  std::shared_ptr<const std::string> keptVersion(const std::string& blobId);
  // Its size in bytes without reading it, or nullopt when memq keeps no such version.
  std::optional<size_t> keptVersionBytes(const std::string& blobId);
  // The anchored refs of active rows on `path`, by pk, without their kept content (keptVersion reads it).
  std::vector<AnchoredRef> activeAnchoredRefsOn(const std::string& path);
  // Every anchored ref of an active row, by path then pk, without kept content; with kLeftOut, only those whose
  // version memq does not keep (a blob of the repository, as a rule). None before the schema had anchors.
  enum class KeptVersions { kIncluded, kLeftOut };
  std::vector<AnchoredRef> activeAnchoredRefs(KeptVersions kept);
  int64_t keptVersionCount();

  // --- audit journal ---
  void appendEvent(const std::string& at, const std::string& memoryId, const std::string& action,
                   const std::string& actor, const nlohmann::json& detail);
  std::vector<AuditEvent> events(const AuditFilter& filter);

  // --- tombstones ---
  std::optional<std::pair<std::string, std::string>> tombstoneIdAndReason(const std::string& contentHash);
  bool hasTombstone(const std::string& contentHash);
  // Writes (or takes over) the tombstone of a rejected memory.
  void upsertTombstone(const Tombstone& t);
  // Writes a tombstone unless its content has one; returns whether it wrote it.
  bool insertTombstoneIfAbsent(const Tombstone& t);
  void deleteTombstone(const std::string& contentHash);
  std::vector<Tombstone> tombstones();
  std::optional<Tombstone> tombstoneFor(const std::string& contentHash);
  // A memory that is not rejected holding the content: (id, state).
  std::optional<std::pair<std::string, std::string>> unrejectedHolder(const std::string& contentHash);

  // --- embeddings and edges ---
  void storeEmbedding(int64_t pk, const std::string& model, const std::vector<float>& vec);
  std::optional<std::vector<float>> loadVector(int64_t pk, const std::string& model);
  // Every active and rejected row's vector for `model` with what embeds it; null (with the text) when it has none, one
  // of another length, or one that is not a unit vector of finite components (embedded again by the caller).
  void forEachVectorRow(const std::string& model, size_t dim,
                        const std::function<void(int64_t pk, bool rejected, const float* vector,
                                                 const std::string& summary, const std::string& details,
                                                 const std::vector<std::string>& topics)>& row);
  // A similar edge between pk and each neighbour: one row, (higher pk, lower pk), read from both ends.
  void writeSimilarEdges(int64_t pk, const std::vector<VectorIndex::Hit>& neighbours, const std::string& at);
  void unlinkSimilar(int64_t pk);
  void writeSupersedesEdge(int64_t byPk, int64_t oldPk, const std::string& at);
  std::vector<std::tuple<std::string, std::string, double>> similarEdges(double minWeight);

  // --- full text ---
  // Inserts rows from `firstPk` on into both full-text lanes (one statement each, so FTS5 writes one segment per
  // lane for the whole batch).
  void indexTextFrom(int64_t firstPk);
  // The `limit` best active rows (other than excludePk) for an FTS5 MATCH, by bm25.
  std::vector<FtsHit> rankedActive(FtsLane lane, const std::string& matchExpression, int limit,
                                   std::optional<int64_t> excludePk);
  // Every row matching a unicode-lane expression, with its bm25 as FTS5 computes it.
  std::vector<TextMatches::Row> matchUnicode(const std::string& matchExpression);
  // Whether a SQLite exception is an FTS syntax error (the query builder let something through).
  static bool isQueryError(const std::exception& e);
  // Whether an exception is SQLite's (not the text index's or another part's).
  static bool isSqliteError(const std::exception& e);

  // --- the mirror's reads ---
  void forEachMirrorRow(const std::function<void(int64_t pk, std::string_view summary, std::string_view details,
                                                 std::string_view topicsText, bool active, std::string lastUsedAt,
                                                 int64_t useCount, bool pinned)>& row);
  void forEachFileRef(const std::function<void(int64_t pk, MirroredFileRef ref)>& ref);
  std::optional<MirrorRowData> mirrorRow(int64_t pk);

  // --- reads ---
  std::vector<Memory> exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                 const std::string& afterId, int limit);
  ListResult list(const ListFilter& filter);
  std::vector<FileHit> activeByPaths(const std::vector<std::string>& paths, int limit);
  std::vector<Memory> loadMany(const std::vector<int64_t>& pks);
  std::vector<int64_t> activeWithFiles(int limit);
  nlohmann::json stats();  // counts by state and category, pins, tombstones, events, bytes

 private:
  // A prepared statement borrowed from the cache (prepared once per connection, not per call). Bindings start
  // cleared; the statement is reset on release so no read snapshot outlives the borrower. A statement already
  // borrowed (re-entrant use of the same SQL) is served by a fresh one-off statement instead.
  class CachedStatement {
   public:
    CachedStatement(SQLite::Statement* shared, bool* busy, std::unique_ptr<SQLite::Statement> own);
    CachedStatement(CachedStatement&& other) noexcept;
    CachedStatement(const CachedStatement&) = delete;
    CachedStatement& operator=(const CachedStatement&) = delete;
    CachedStatement& operator=(CachedStatement&&) = delete;
    ~CachedStatement();
    SQLite::Statement& operator*() { return *stmt_; }
    SQLite::Statement* operator->() { return stmt_; }

   private:
    SQLite::Statement* stmt_;
    bool* busy_;  // null for a one-off statement
    std::unique_ptr<SQLite::Statement> own_;
  };
  struct CacheEntry {
    std::unique_ptr<SQLite::Statement> stmt;
    bool busy = false;
  };
  CachedStatement statement(const std::string& sql);
  Memory rowToMemory(SQLite::Statement& q) const;

  std::unique_ptr<SQLite::Database> db_;
  std::string scope_;  // stamped on every Memory read
  // The schema has line anchors (migration 0007). The mirror's reads work without them, so that a store opened at
  // an older version (a test of an upgrade) still answers.
  bool hasAnchors_ = false;
  bool countsChanges_ = false;  // countOwnChanges installed its counter (othersChanges answers)
  std::unordered_map<std::string, CacheEntry> statements_;  // declared after db_: destroyed before it
};

}  // namespace memq
