// MemoryStore: one scope's memories in one SQLite file — the correction model of docs/design.md §2, the audit journal
// of docs/design.md §3, file refs, similar edges, per-model embeddings, and the in-memory vector index that mirrors the active
// rows (so recall never re-reads embedding BLOBs), and an in-memory mirror of every row's text, state, last use,
// use count, pin, text length and file refs (the unicode text index of text_index.h and the path map), so the
// unicode and file lanes of recall never ask SQLite to score every matching row or to group file refs, and recall
// ranks its candidates without loading their rows.
//
// Invariants (each enforced here, each covered by tests/unit/store):
//  1. A save never changes the state of an existing row: hidden/superseded content is reported, rejected content
//     (a tombstone, even after purge) is refused. Only restore/unreject bring a row back.
//  2. Every mutation and every blocked save appends exactly one event, in the same transaction as the change.
//  3. activeIndex() holds exactly the active rows' vectors of the default model; rejectedIndex() the rejected rows'.
//     Both are updated only once a write's rows are written (for a save in a batch: once its savepoint is
//     released; for a save answered in the background: once it is journalled, its rows queued); a batch that fails
//     to commit, or an applier that fails, rebuilds both from the committed rows.
//  4. Bad input is refused before any write; a failed transaction leaves nothing behind.
//  5. The mirror holds every row of `memories` with its current text, state, last_used_at, use_count, pinned,
//     text length and file refs: each write refreshes the rows it touched from the tables; a refresh that fails, a
//     batch that fails to commit, or a commit by another connection (PRAGMA data_version), makes the next search
//     rebuild it first.
//  6. Saves in batches (StoreOptions::saveBatch > 1): a save is acknowledged only once it is in the save journal;
//     every journal record carries a sequence number, the database records the last one it committed
//     (save_batches.applied_batch), and a replay applies each record above it once, with the id and time it was
//     acknowledged with. A save that fails is in neither.
//  7. Saves applied in the background (StoreOptions::applySavesInBackground): while saves are handed to the applier
//     thread, that thread alone uses the connection (db_, statements_); the caller's thread answers saves from
//     memory and from a read-only connection, and takes the connection back (takeDatabase: the queue applied, the
//     transaction left open) before anything else. The applier never touches the in-memory indexes.
//  8. Files at their paths: a save is acknowledged only while the database and the save journal at their paths are
//     the files this store opened (checkFilesInPlace, after the save is journalled), no batch commits into a
//     database no longer at its path, and a store that retired (retire) writes nothing more.
//
// Thread-safety: not thread-safe. The owner (a Scope) serialises every call; the applier thread is internal.
#pragma once

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/embed/vector_index.h"
#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"
#include "daemon/store/database.h"
#include "daemon/store/save_journal.h"
#include "daemon/store/text_index.h"
#include "protocol/status.h"

namespace memq {

struct StoreOptions {
  std::string path;                 // database file (or ":memory:")
  std::string scope = "project";    // "project" | "global", stamped on every returned record
  std::string projectRoot;          // for path normalisation; empty for the global scope
  const Embedder* embedder = nullptr;  // required
  int maxSchemaVersion = -1;        // tests of upgrades only
  std::function<std::string()> clock;  // ISO timestamps; defaults to isoNow
  // Saves per SQLite transaction, at most. 1: every save commits before it returns. More (a file database only): a
  // save that follows another within saveStreamGap joins an open transaction and is acknowledged once it is in the
  // save journal (save_journal.h); the batch commits when it holds saveBatch saves, when any other write, full-text
  // query, checkpoint (unless saves are being applied in the background) or close needs a committed state, or when
  // the owner calls commitPendingSaves().
  int saveBatch = 1;
  // How soon after the previous save a save must start to join its batch (tests that need every save batched
  // raise it).
  std::chrono::milliseconds saveStreamGap{2};
  // With saveBatch > 1: a save that joins a stream and writes a new memory is answered from memory and the
  // committed database, acknowledged once journalled, and written to SQLite by a thread of this store, so that a
  // stream of saves uses a second core (docs/architecture.md, "Saves in the background"). Other saves (the first
  // after a pause, a duplicate, rejected content) and every other call wait for that thread to finish first.
  bool applySavesInBackground = false;
  // With saveBatch > 1: the save journal's size past which the next save is applied and committed, with the saves
  // before it, before it is answered; the journal is then emptied. In a long stream the journal is emptied only
  // when a commit finds nothing newer in it, so this bounds it, and the replay after a crash.
  uint64_t maxJournalBytes = 64ull << 20;
};

struct SimilarHint {
  std::string id;
  double weight = 0;
  std::string summary;
  std::string kind;  // "semantic" | "trigram"
};

struct SaveOutcome {
  std::string status;  // created | deduped | exists_hidden | exists_superseded | rejected
  std::string id;      // the memory written, deduped into, or blocking the save
  std::optional<Memory> memory;
  std::vector<SimilarHint> similar;
  std::vector<std::string> warnings;
  std::optional<std::string> reason;       // rejected: the tombstone's reason
  std::optional<std::string> supersededBy;  // exists_superseded: the replacement
  bool topicsMerged = false;
};

struct UpdateInput {
  std::optional<std::string> summary;
  std::optional<std::string> details;
  std::optional<std::optional<std::string>> category;  // present-and-null clears it
  std::optional<std::vector<std::string>> topics;
  std::optional<std::vector<FileRef>> files;  // already normalised, replaces the set
  std::optional<bool> pinned;
};

struct ListFilter {
  std::optional<std::optional<std::string>> category;  // present-and-null: uncategorised only
  std::optional<std::string> topic;
  std::optional<bool> pinned;
  std::optional<MemoryState> state = MemoryState::kActive;  // nullopt = every state
  std::optional<std::string> source;
  std::optional<std::string> file;
  int limit = 50;
  int offset = 0;
};

struct ListResult {
  std::vector<Memory> memories;
  int64_t total = 0;
  // Why the answer may be incomplete (unappliedSavesWarning of a scope read); empty when it is complete.
  std::vector<std::string> warnings;
};

struct AuditEvent {
  int64_t seq = 0;
  std::string at;
  std::string memoryId;
  std::string action;
  std::string actor;
  nlohmann::json detail;
  bool scrubbed = false;
};

struct AuditFilter {
  std::optional<std::string> memoryId;
  int64_t sinceSeq = 0;
  std::optional<std::string> sinceAt;  // only events at or after this time (ISO-8601 UTC, the journal's own format)
  int limit = 100;
};

struct Tombstone {
  std::string contentHash;
  std::string memoryId;
  std::string reason;
  std::string actor;
  std::string at;
};

// What an import writes. Tombstones first (so rejected content stays refused), then each memory restored verbatim
// (id, timestamps, state, pin, use count): created, or nothing for one whose id holds the same content or whose
// content another memory holds (deduped), or whose content has a tombstone (rejected, unless the memory itself is
// rejected). Refused, with nothing written: a memory whose id exists with other content; a created memory whose
// superseded_by names no memory of the scope once the import is written; a tombstone for content a memory that is
// not rejected holds (it would stay readable while its text is refused). Each tombstone written and each memory
// created appends an `import` event. `line` is the caller's name for an item in a refusal (the JSONL line).
struct ImportedMemory {
  Memory memory;
  size_t line = 0;
};
struct ImportedTombstone {
  Tombstone tombstone;
  size_t line = 0;
};
struct ImportBatch {
  std::vector<ImportedTombstone> tombstones;
  std::vector<ImportedMemory> memories;
};
struct ImportRefusal {
  size_t line = 0;
  std::string field;
  std::string message;
};
struct ImportOutcome {
  int64_t created = 0;
  int64_t deduped = 0;
  int64_t rejected = 0;
  int64_t tombstones = 0;  // tombstones written (one already there counts neither here nor as an error)
  std::optional<ImportRefusal> refusal;  // set: nothing was written
};

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

class MemoryStore {
 public:
  static Result<std::unique_ptr<MemoryStore>> open(StoreOptions options);
  ~MemoryStore();

  const std::string& scope() const { return options_.scope; }
  const std::string& path() const { return options_.path; }
  const std::string& projectRoot() const { return options_.projectRoot; }
  const Embedder& embedder() const { return *options_.embedder; }

  // --- writes (each one transaction, one event) ---
  Result<SaveOutcome> save(const NormalizedSave& input, const std::vector<FileRef>& files, const Actor& actor);
  Result<Memory> update(const std::string& id, const UpdateInput& input, const Actor& actor,
                        std::vector<std::string>* warnings = nullptr);
  Result<Memory> hide(const std::string& id, const std::optional<std::string>& reason, const Actor& actor);
  // `reason` is recorded in the audit event (the restored row keeps no state reason).
  Result<Memory> restore(const std::string& id, const Actor& actor, const std::optional<std::string>& reason = {});
  Result<Memory> setPinned(const std::string& id, bool pinned, const Actor& actor);
  // Returns {old, replacement}.
  Result<std::pair<Memory, Memory>> supersede(const std::string& oldId, const std::string& byId, const Actor& actor);
  Result<Memory> reject(const std::string& id, const std::string& reason, const Actor& actor);
  Result<Memory> unreject(const std::string& id, const Actor& actor);
  Status purge(const std::string& id, bool confirm, const Actor& actor);
  Result<Memory> attach(const std::string& id, const std::vector<FileRef>& files, const Actor& actor);
  Result<Memory> detach(const std::string& id, const std::vector<std::string>& paths, const Actor& actor);
  // Usage feedback for memories actually shown: use_count + 1, last_used_at = now. Not journalled (telemetry).
  Status markUsed(const std::vector<int64_t>& pks);
  // Writes an import in one transaction (see ImportBatch): all of it, or, on a refusal or an error, nothing.
  Result<ImportOutcome> importBatch(const ImportBatch& batch, const Actor& actor);
  // importBatch of one memory: created|deduped|rejected (a refusal is InvalidParams).
  Result<std::string> importRecord(const Memory& memory, const Actor& actor);

  // Commits the saves a batch holds (see StoreOptions::saveBatch); no-op without one. On failure the batch is rolled
  // back, its saves stay in the journal, and every later write first tries to apply them again.
  Status commitPendingSaves();
  // commitPendingSaves() once the last save is at least `idle` old; an open batch that is younger stays open (saves
  // still streaming in commit it themselves when it is full). Returns whether saves are still pending.
  Result<bool> commitPendingSavesIfIdle(std::chrono::milliseconds idle);
  // Saves acknowledged and not yet committed: handed to the background applier, in an open batch, or in the
  // journal after a failed commit.
  bool hasPendingSaves() const { return handedOff_ || batchOpen_ || replayPending_; }
  // A write transaction is open on the database, holding saves (a batch), or saves are being applied to one.
  bool hasOpenBatch() const { return handedOff_ || batchOpen_; }
  // Returns once every save handed to the background applier is written into the open transaction (not
  // committed); a no-op without one. For tests that copy the files as a crash would leave them.
  void waitForAppliedSaves() { takeDatabase(); }
  // Waits until the background applier has nothing left to do, without taking the connection back; true when it
  // failed (the next call then rebuilds the in-memory indexes and replays its saves). For tests and diagnostics.
  bool waitForApplierIdle();
  // How many journalled saves the last replay applied (at open, or after a failed commit).
  size_t replayedSaves() const { return replayedSaves_; }
  // When acknowledged saves wait in the journal because applying them failed (a full disk: at open, or after a
  // failed commit), what a read must tell its caller: reads answer from the committed rows, which leave them out
  // until a retry applies them. nullopt when every acknowledged save is readable.
  std::optional<std::string> unappliedSavesWarning() const;

  // --- the files at the path ---
  // OK while the database file and the save journal at their paths are the ones this store opened; else a
  // StorageError saying the file was removed, replaced or moved (a project deleted and created again at the same
  // path, a re-clone). Thread-safe (only stats the paths): the registry calls it on every request.
  Status checkFilesInPlace() const;
  // Ends this store's use of its files once they were removed or replaced (the owner then opens the files now at the
  // path): the background applier stopped, the open batch committed if the database is still in place, else
  // rolled back (its saves stay in the journal if that is still in place, for the store opened next to replay), and
  // the journal closed (its lock released). Every later write fails with StorageError; reads answer from the old
  // file. Returns what became of the acknowledged saves not yet committed, for the log.
  std::string retire();
  bool retired() const { return retired_; }
  // How many saves were answered and handed to the background applier since open.
  size_t savesAnsweredInBackground() const { return savesAnsweredInBackground_; }
  // The journal beside a database file.
  static std::string journalPath(const std::string& databasePath) { return databasePath + "-saves"; }

  // --- reads ---
  // Exact id, or every id starting with `prefix` (≥ 4 characters), at most `limit`.
  Result<std::vector<std::string>> matchIds(const std::string& idOrPrefix, int limit = 10);
  Result<Memory> get(const std::string& id);  // exact id
  Result<ListResult> list(const ListFilter& filter);
  Result<std::vector<AuditEvent>> audit(const AuditFilter& filter);
  // Export order: memories (of `state`, or every state) after (afterCreatedAt, afterId) by created_at then id, at
  // most `limit`, with their file refs. Empty keys start at the first.
  Result<std::vector<Memory>> exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                         const std::string& afterId, int limit);
  Result<std::vector<Tombstone>> tombstones();  // by at, then content_hash
  Result<std::optional<Tombstone>> tombstoneFor(const std::string& contentHash);
  Result<nlohmann::json> stats();

  // --- recall support (active rows only) ---
  Result<std::vector<FtsHit>> searchFts(FtsLane lane, const std::string& matchExpression, int limit);
  // Every row (any state) matching a unicode-lane expression, with its bm25 exactly as FTS5 computes it: from the
  // text index when the expression has unicodeMatch's shape, else from SQLite. An FTS syntax error gives no rows.
  Result<TextMatches> matchText(const std::string& matchExpression);
  // matchText(matchExpression)->bm25Of(pk) for each of `pks`, reading only those rows when the text index answers.
  Result<std::vector<std::optional<double>>> textBm25(const std::string& matchExpression,
                                                      const std::vector<int64_t>& pks);
  Result<std::vector<FileHit>> findByPaths(const std::vector<std::string>& paths, int limit);
  // findByPaths({path}, limit) for each path (recall's co-change neighbours), in one call.
  Result<std::vector<std::vector<FileHit>>> findByEachPath(const std::vector<std::string>& paths, int limit);
  Result<std::vector<Memory>> loadMany(const std::vector<int64_t>& pks);
  // What recall ranks and selects by, mirrored for every row so that only the returned hits are read from SQLite.
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
  // The mirror's row for each pk (null for a row that is gone), or nullopt when there is no mirror (no unicode61
  // tokenizer, or a rebuild that failed): the caller then loads the rows with loadMany. The pointers are valid
  // until the next call on this store.
  std::optional<std::vector<const MirroredRow*>> mirroredRows(const std::vector<int64_t>& pks);
  // Memories (any state) whose file refs are listed, for staleness review.
  Result<std::vector<Memory>> memoriesWithFiles(int limit);
  // Similar edges with weight ≥ minWeight between active memories.
  Result<std::vector<std::tuple<std::string, std::string, double>>> similarEdges(double minWeight);
  const VectorIndex& activeIndex() const { return *active_; }
  std::optional<int64_t> pkOf(const std::string& id);
  std::optional<std::string> idOf(int64_t pk);

  // --- housekeeping ---
  // PASSIVE WAL checkpoint (never waits on readers). Saves do not checkpoint (see database.cc), so the daemon's
  // housekeeping timer calls this every few seconds for each open scope, under the scope's lock. While saves are
  // handed to the background applier it returns at once, leaving the batch open: the applier's commits run the
  // checkpoint guard, and waiting for the queue here would stall the stream.
  Status checkpoint();

  SQLite::Database& database() {
    takeDatabase();
    return *db_;
  }

 private:
  // A prepared statement borrowed from the cache (prepared once per store, not per call). Bindings start cleared;
  // the statement is reset on release so no read snapshot outlives the borrower. A statement already borrowed
  // (re-entrant use of the same SQL) is served by a fresh one-off statement instead.
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
  using StatementCache = std::unordered_map<std::string, CacheEntry>;
  static CachedStatement statementOn(SQLite::Database& db, StatementCache& cache, const std::string& sql);
  CachedStatement statement(const std::string& sql) { return statementOn(*db_, statements_, sql); }
  // On the read-only connection (committedView) or on db_: what the background path reads is committed only.
  CachedStatement statement(bool committedView, const std::string& sql) {
    return committedView ? statementOn(*reader_, readerStatements_, sql) : statement(sql);
  }

  explicit MemoryStore(StoreOptions options);
  std::string now() const;

  // One save as it is applied and journalled: the input with the id and time it was given, so a replay writes
  // exactly the rows (and answers with exactly the record) the first application did.
  struct SaveRecord {
    NormalizedSave input;
    std::vector<FileRef> files;
    Actor actor;
    std::string id;  // the id a created memory gets
    std::string at;  // every timestamp the save writes
    uint64_t seq = 0;  // its number in the journal (0: not journalled)
    std::string toJson() const;
    static SaveRecord fromJson(const std::string& text);  // throws on a malformed record
  };
  // What a save changes in memory (vector index, mirror), applied once its rows are written.
  struct SaveEffects {
    SaveOutcome outcome;
    std::optional<std::pair<int64_t, std::vector<float>>> activeVector;
    std::optional<int64_t> refreshPk;
  };
  // The rows of one save, inside the open transaction. Throws on SQLite errors; changes nothing in memory.
  SaveEffects applySave(const SaveRecord& record);
  // A new memory's rows (memories, files, embedding, similar edges, the create event), with `pk` or the
  // next rowid; returns its pk. Throws on SQLite errors; changes nothing in memory.
  int64_t writeCreatedRows(const SaveRecord& record, std::optional<int64_t> pk, const std::vector<float>& vec,
                           const std::vector<VectorIndex::Hit>& neighbours);
  // The record a created memory reads back as, built from what was written.
  Memory createdMemory(const SaveRecord& record, int64_t pk) const;
  // The similar_rejected warning for a new memory's vector, if any.
  std::optional<std::string> rejectedWarning(const std::vector<float>& vec, bool committedView);
  // Appends the record to the journal under the next sequence number (record.seq). The caller holds pipeMutex_.
  Status journalRecord(SaveRecord& record, uint64_t& sizeBefore);
  // The journal is past StoreOptions::maxJournalBytes. The caller holds pipeMutex_.
  bool journalOverLimit() const { return journal_ && journal_->size() > options_.maxJournalBytes; }
  // Drops a record journalRecord appended (its save failed). The caller holds pipeMutex_.
  void unjournalRecord(const SaveRecord& record, uint64_t sizeBefore);
  // Commits the open batch: its rows into the FTS lanes, the journal's last applied number, COMMIT, then the
  // journal emptied if it holds nothing newer. Throws with the transaction still to be rolled back.
  void commitBatch();
  // Rows of a batch not yet committed, which the read-only connection cannot see. The caller holds pipeMutex_.
  void noteUncommitted(int64_t pk, const SaveRecord& record);

  // --- saves applied in the background (background_saves.cc) ---
  struct QueuedSave {
    SaveRecord record;
    int64_t pk = 0;
    std::vector<float> vec;
    std::vector<VectorIndex::Hit> neighbours;
  };
  // The save answered here and queued for the applier, or nullopt when it must take the synchronous path.
  std::optional<Result<SaveOutcome>> saveInBackground(SaveRecord& record);
  void runApplier();
  // Waits for the applier to apply what it was handed; after a failure of the applier, rebuilds the in-memory
  // indexes from the committed rows and replays the journal (marked for the next write if that fails). Never throws.
  void takeDatabase();
  // Acknowledged saves wait in the journal after a failed commit or a failed applier: applied now, so that the call
  // that follows sees them. After a failed attempt, the next waits kReplayRetryInterval (a failed replay rebuilds the
  // in-memory indexes, which a read must not pay for each time); `now` ignores that wait. Never throws.
  void retryReplay(bool now = false);
  static constexpr std::chrono::seconds kReplayRetryInterval{1};
  void stopApplier();
  void publish(const SaveRecord& record, SaveEffects& effects);
  // refreshMirror for a row a save just created, from the record instead of reading the row back.
  void mirrorCreatedRow(int64_t pk, const SaveRecord& record);
  // applySave in a savepoint, then publish: a failure undoes only this save's rows.
  SaveEffects applyInSavepoint(const SaveRecord& record, const std::function<void()>& beforeRelease);
  bool batching() const { return options_.saveBatch > 1 && journal_ != nullptr; }
  void beginBatch();
  // Ends a failed batch: rolls it back and, when saves of it were published, rebuilds the in-memory indexes from the
  // committed rows.
  void abandonBatch(bool published);
  // Rebuilds the vector indexes and the mirror from the committed rows; sets indexesStale_ when that fails.
  void reloadIndexes();
  // reloadIndexes() when an earlier one failed; throws if it fails again.
  void reloadIndexesIfStale();
  // Inserts the rows created in the open transaction into both full-text lanes (one statement each, so FTS5 writes
  // one segment per lane for the whole batch).
  void writePendingText();
  // Before any other write or full-text query: saves left by a failed commit are applied again, and an open batch
  // is committed. Throws when either fails.
  void settle();
  void replayJournalIfNeeded();
  // replayJournalIfNeeded's work; the caller records a failure for unappliedSavesWarning.
  void replayJournal();
  Status openJournal();
  // Refuses a write on a retired store, or on files no longer at their paths (checkFilesInPlace).
  Status writable() const;
  // Every catch in this class translates SQLite's exception through this member (it hides the free storageError of
  // database.h), so each StorageError a store returns names its scope and file.
  Status storageError(const std::exception& e, const std::string& context = "") const;
  Status loadIndexes();
  // (Re)builds the mirror (text index, row metadata, path map) from every row. Throws on SQLite errors.
  void loadMirror();
  // After a committed write: re-reads row `pk` into the mirror (or drops it when the row is gone). Its text is
  // re-tokenised only when `textChanged`.
  void refreshMirror(int64_t pk, bool textChanged = true);
  // True when the mirror can answer: it exists and is current (rebuilt here if it was not).
  bool mirrorReady();
  // findByPaths answered from the mirror (which must be ready).
  std::vector<FileHit> pathHits(const std::vector<std::string>& paths, int limit);
  // Sets a mirrored row's last use, keeping each of its paths' lists in order.
  void setLastUsed(MirroredRow& row, const std::string& at);
  Result<Memory> mustGet(const std::string& id);
  void readFiles(Memory& m);
  // `at` defaults to now().
  void appendEvent(const std::string& memoryId, const std::string& action, const Actor& actor,
                   const nlohmann::json& detail, const std::optional<std::string>& at = std::nullopt);
  std::vector<float> embedMemory(const std::string& summary, const std::string& details,
                                 const std::vector<std::string>& topics) const;
  void storeEmbedding(int64_t pk, const std::vector<float>& vec);
  // Links pk to its strongest active neighbours (writeSimilarEdges); returns the neighbours.
  std::vector<VectorIndex::Hit> linkSimilar(int64_t pk, const std::vector<float>& vec, const std::string& at);
  // A similar edge between pk and each neighbour: one row, (higher pk, lower pk), read from both ends.
  void writeSimilarEdges(int64_t pk, const std::vector<VectorIndex::Hit>& neighbours, const std::string& at);
  void unlinkSimilar(int64_t pk);
  // The active neighbours a vector gets similar edges to (cosine ≥ 0.4, top 8), other than the row `self`.
  std::vector<VectorIndex::Hit> similarNeighbours(const std::vector<float>& vec, std::optional<int64_t> self) const;
  std::vector<SimilarHint> similarHints(const std::string& summary, const std::vector<VectorIndex::Hit>& neighbours,
                                        int64_t selfPk, bool committedView = false);
  std::optional<std::vector<float>> loadVector(int64_t pk);
  // The `limit` best active rows (other than excludePk) for an FTS5 MATCH, by bm25. Throws on SQLite errors.
  std::vector<FtsHit> rankedActive(FtsLane lane, const std::string& matchExpression, int limit,
                                   std::optional<int64_t> excludePk, bool committedView = false);
  Result<Memory> changeState(const std::string& id, MemoryState from1, std::optional<MemoryState> from2,
                             MemoryState to, const std::string& action, const Actor& actor,
                             const std::optional<std::string>& reason);

  StoreOptions options_;
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<VectorIndex> active_;
  std::unique_ptr<VectorIndex> rejected_;
  // The mirror. text_ is null when SQLite offers no unicode61 tokenizer: SQL answers instead.
  std::unique_ptr<TextIndex> text_;
  std::unordered_map<int64_t, MirroredRow> rowMeta_;  // every row (nodes never move: pathRows_ points into them)
  // file path -> rows attached to it, in the file lane's order (newest last use first, then highest pk)
  std::unordered_map<std::string, std::vector<const MirroredRow*>> pathRows_;
  bool mirrorStale_ = false;       // a refresh failed: rebuild before the next search
  int64_t mirrorDataVersion_ = 0;  // PRAGMA data_version when the mirror was last known current
  // Saves in batches (StoreOptions::saveBatch).
  std::unique_ptr<SaveJournal> journal_;  // null for a store that never batched saves and has no journal file
  bool batchOpen_ = false;       // a write transaction holds saves not yet committed
  int batchSaves_ = 0;
  std::optional<int64_t> firstPendingPk_;  // the first row created in the open transaction, not yet in the FTS lanes
  // Journal sequence numbers: journalSeq_ the last appended, committedSeq_ the last committed (both under
  // pipeMutex_), appliedSeq_ the last written into the open transaction (by the connection's current user).
  uint64_t journalSeq_ = 0;
  uint64_t committedSeq_ = 0;
  uint64_t appliedSeq_ = 0;
  bool journalNeedsReset_ = false;  // every record is committed but the file still holds them: emptied before the
                                    // next append (under pipeMutex_)
  bool replayPending_ = false;   // the journal holds saves the database has not committed
  size_t replayedSaves_ = 0;
  bool replaying_ = false;  // replayJournalIfNeeded is applying the journal (its reads must not start another)
  // When a replay outside a write last failed (reads wait kReplayRetryInterval after it before trying again).
  std::optional<std::chrono::steady_clock::time_point> lastReplayFailure_;
  size_t savesAnsweredInBackground_ = 0;
  // Why the last replay failed and how many saves it held (0: not known), for unappliedSavesWarning.
  std::string replayFailure_;
  size_t replayFailedSaves_ = 0;
  // The identities of the files opened (set at open, then read only): checkFilesInPlace compares the paths to them.
  std::optional<FileIdentity> databaseIdentity_;
  std::optional<FileIdentity> journalIdentity_;
  bool retired_ = false;  // retire() ran: no more writes
  bool indexesStale_ = false;  // a reload of the vector indexes failed: retried before the next write or search
  mutable std::atomic<bool> sawStorageError_{false};  // some call failed with a StorageError: no optional writes at close
  std::optional<std::chrono::steady_clock::time_point> lastSaveEnd_;  // none yet: the first save is not in a stream
  StatementCache statements_;  // declared after db_: destroyed before it
  // Saves in the background (StoreOptions::applySavesInBackground).
  std::unique_ptr<SQLite::Database> reader_;  // read-only: what is committed
  StatementCache readerStatements_;           // declared after reader_: destroyed before it
  bool handedOff_ = false;        // saves were queued since the last takeDatabase(): db_ is the applier's
  std::optional<int64_t> nextPk_;  // the pk the next queued save gets (rows are numbered as SQLite would)
  std::mutex pipeMutex_;           // guards what follows, and the journal's appends and resets
  std::condition_variable applierWake_;
  std::condition_variable applierIdle_;
  std::deque<QueuedSave> queue_;
  bool applierWorking_ = false;   // the applier holds an item (and so the connection)
  bool applierStop_ = false;
  std::optional<Status> applierFailure_;  // why the applier rolled its batch back; collected by takeDatabase()
  // Content hashes and (id, summary) of rows written but not committed: the read-only connection cannot see them.
  std::unordered_set<std::string> uncommittedHashes_;
  std::unordered_map<int64_t, std::pair<std::string, std::string>> uncommittedRows_;
  std::thread applier_;  // last: started after, and joined before, everything above is destroyed
};

}  // namespace memq
