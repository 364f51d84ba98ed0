// MemoryStore: one scope's memories in one SQLite file — the facade the service calls, and the correction model of
// docs/design.md §2 (which state a save, an update or a state change leads to) with the audit journal of
// docs/design.md §3 (one event per mutation). It is built from three parts (docs/architecture.md, "Store"):
//  - StoreSql (store_sql.h): the connection, its statement cache, and every SQL statement (the one file-ref writer);
//  - RecallMirror (recall_mirror.h): the in-memory vector indexes, text index, row figures and path map that recall
//    reads (MemoryStore implements recall's RecallSource from it);
//  - SavePipeline (save_pipeline.h): batches, the save journal and its replay, and the background applier.
// SQLite's exceptions become a Status here, once, at each public method.
//
// Invariants (each covered by tests/unit/store):
//  1. A save never changes the state of an existing row: hidden/superseded content is reported, rejected content
//     (a tombstone, even after purge) is refused. Only restore/unreject bring a row back. (MemoryStore::applySave,
//     changeState.)
//  2. Every mutation and every blocked save appends exactly one event, in the same transaction as the change.
//     (MemoryStore; the events are written by StoreSql::appendEvent.)
//  3. The mirror's active vector index holds exactly the active rows' vectors of the default model, its rejected
//     index the rejected rows'. Both are updated only once a write's rows are written (for a save in a batch: once
//     its savepoint is released; for a save answered in the background: once it is journalled, its rows queued); a
//     batch that fails to commit, or an applier that fails, rebuilds both from the committed rows. (MemoryStore
//     publishes; SavePipeline has RecallMirror::reload run on a lost batch.)
//  4. Bad input is refused before any write; a failed transaction leaves nothing behind. (MemoryStore.)
//  5. The mirror holds every row of `memories` with its current text, state, last_used_at, use_count, pinned,
//     text length and file refs: each write refreshes the rows it touched from the tables; a refresh that fails, a
//     batch that fails to commit, or a commit by another connection (PRAGMA data_version) that changed rows
//     (StoreSql::othersChanges; uses alone are not a change), makes the next search rebuild it first.
//     (RecallMirror.)
//  6. Saves in batches (StoreOptions::saveBatch > 1): a save is acknowledged only once it is in the save journal;
//     every journal record carries a sequence number, the database records the last one it committed
//     (save_batches.applied_batch), the journal's header the number below which its records are committed, and a
//     replay applies each record above both once, with the id and time it was acknowledged with; SQLite's
//     applied_batch is written only inside the batch's own transaction. A save that fails is in neither.
//     (SavePipeline.)
//  7. Saves applied in the background (StoreOptions::applySavesInBackground): while saves are handed to the applier
//     thread, that thread alone uses the main connection (StoreSql); the caller's thread answers saves from memory
//     and from a read-only connection, and takes the connection back (takeDatabase: the queue applied, the
//     transaction left open) before anything else. The applier never touches the mirror. (SavePipeline; what the
//     two threads share is GUARDED_BY its mutex.)
//  8. Files at their paths: a save is acknowledged only while the database and the save journal at their paths are
//     the files this store opened (checkFilesInPlace, after the save is journalled), no batch commits into a
//     database no longer at its path, and a store that retired (retire) writes nothing more. (MemoryStore checks;
//     SavePipeline asks before it acknowledges or commits.)
//  9. One writer per database: a store that batches saves (or finds a journal there) writes its memories only while
//     it holds the save journal's lock. A store that finds another process holding it writes no memory (its mirror
//     rebuilt, vectors included, after each commit of the other's that changed rows, never under a scan in flight), records no uses,
//     and skips the close's checkpoint; each write first tries to take the journal over and is refused
//     (ScopeUnavailable) while it cannot, so no other process's commit can take the content of a save answered
//     before its batch committed. A takeover replays the journal into a mirror made current first.
//     (SavePipeline::claimWrites, RecallMirror::followAnotherWriter.)
//
// Thread-safety: not thread-safe. The owner (a Scope) serialises every call; the applier thread is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/embed/vector_index.h"
#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"
#include "daemon/recall/recall_source.h"
#include "daemon/store/file_identity.h"
#include "daemon/store/pending_usage.h"
#include "daemon/store/save_target.h"
#include "daemon/store/store_types.h"
#include "daemon/store/text_index.h"
#include "protocol/status.h"

namespace memq {

class RecallMirror;
class SavePipeline;
class StoreSql;

class MemoryStore : public RecallSource, private SaveTarget {
 public:
  static Result<std::unique_ptr<MemoryStore>> open(StoreOptions options);
  ~MemoryStore() override;

  const std::string& scope() const override { return options_.scope; }
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
  // Usage feedback for memories actually shown: use_count + 1, last_used_at = now. Recorded in the mirror and in
  // pending usage at once and written later (flushUsage), so recall's reply never waits for a commit; every read
  // answers it. Not journalled (telemetry): a crash loses the uses since the last flush.
  Status markUsed(const std::vector<int64_t>& pks);
  // Writes the pending usage in one transaction (the saves a batch holds are committed first). The housekeeping
  // tick calls it through checkpoint(); every other write, list, export, stats and a clean close call it first.
  Status flushUsage();
  // Memories whose uses are recorded and not yet written.
  size_t pendingUsageRows() const { return pendingUsage_.size(); }
  // Writes an import in one transaction (see ImportBatch): all of it, or, on a refusal or an error, nothing.
  Result<ImportOutcome> importBatch(const ImportBatch& batch, const Actor& actor);
  // importBatch of one memory: created|deduped|rejected (a refusal is InvalidParams).
  Result<std::string> importRecord(const Memory& memory, const Actor& actor);

  // --- a team scope's replica (memory_store_replica.cc) ---
  // Writes rows exactly as the team server holds them (ids, text, state, times), in one transaction with `seq` as
  // the last applied journal seq: a new id is inserted, a known one takes the server's state, state reason,
  // superseded_by and updated_at; tombstones follow the rejected rows, and a purge carrying its tombstone writes it
  // whether or not the replica held the row. The local correction model is not run: the
  // server already did. Changes with seq <= replicaSeq() are skipped (another thread applied them); one with an
  // empty memory id only moves the seq on. Returns the rows applied. Each appends one local event (the server's action and actor).
  Result<std::vector<ReplicatedChange>> applyReplicated(std::vector<ReplicatedChange> changes);
  // The last journal seq applyReplicated wrote (0 before the first).
  Result<int64_t> replicaSeq();
  // That seq and the server's time of its journal row: what the server's journal must still hold for the replica
  // to continue from it.
  Result<ReplicaMark> replicaMark();
  // Forgets everything the replica holds (rows, tombstones, seq), for a server whose journal no longer continues
  // it; it then catches up from the start. Its local journal stays.
  Status resetReplica();
  // What a local save's reply says about a memory just created (`similar` hints, the `similar_rejected` warning),
  // for a row that came from elsewhere (a team save, applied to the replica): from its stored vector and the
  // indexes as they are now. Empty when the row or its vector is not here.
  SaveOutcome adviceForCreated(const std::string& id);

  // Commits the saves a batch holds (see StoreOptions::saveBatch); no-op without one. On failure the batch is rolled
  // back, its saves stay in the journal, and every later write first tries to apply them again.
  Status commitPendingSaves();
  // commitPendingSaves() once the last save is at least `idle` old; an open batch that is younger stays open (saves
  // still streaming in commit it themselves when it is full). Returns whether saves are still pending.
  Result<bool> commitPendingSavesIfIdle(std::chrono::milliseconds idle);
  // Saves acknowledged and not yet committed: handed to the background applier, in an open batch, or in the
  // journal after a failed commit.
  bool hasPendingSaves() const;
  // A write transaction is open on the database, holding saves (a batch), or saves are being applied to one.
  bool hasOpenBatch() const;
  // A read pass (RecallMirror::beginReadPass): the reads until endReadPass see one snapshot of the committed rows,
  // checked against other connections' commits once.
  void beginReadPass();
  void endReadPass();
  // How many journalled saves the last replay applied (at open, or after a failed commit).
  size_t replayedSaves() const;
  // Another process held the save journal when this store last tried to take it: the store only reads (invariant 9).
  // Thread-safe.
  bool writesElsewhere() const;
  // When acknowledged saves wait in the journal because applying them failed (a full disk: at open, or after a
  // failed commit), what a read must tell its caller: reads answer from the committed rows, which leave them out
  // until a retry applies them. nullopt when every acknowledged save is readable.
  std::optional<std::string> unappliedSavesWarning() const;

  // --- the files at the path ---
  // OK while the database file and the save journal at their paths are the ones this store opened; else a
  // StorageError saying the file was removed, replaced or moved (a project deleted and created again at the same
  // path, a re-clone). Thread-safe (only stats the paths): the registry calls it on every request.
  Status checkFilesInPlace() const override;
  // Ends this store's use of its files once they were removed or replaced (the owner then opens the files now at the
  // path): the background applier stopped, the open batch committed if the database is still in place, else
  // rolled back (its saves stay in the journal if that is still in place, for the store opened next to replay), and
  // the journal closed (its lock released). Every later write fails with StorageError; reads answer from the old
  // file. Returns what became of the acknowledged saves not yet committed, for the log.
  std::string retire();
  bool retired() const { return retired_; }
  // How many saves were answered and handed to the background applier since open.
  size_t savesAnsweredInBackground() const;
  // The journal beside a database file.
  static std::string journalPath(const std::string& databasePath) { return databasePath + "-saves"; }

  // --- reads ---
  // Exact id, or every id starting with `prefix` (≥ 4 characters), at most `limit`.
  Result<std::vector<std::string>> matchIds(const std::string& idOrPrefix, int limit = 10);
  Result<Memory> get(const std::string& id);  // exact id
  Result<ListResult> list(const ListFilter& filter);
  Result<std::vector<AuditEvent>> audit(const AuditFilter& filter);
  // Export order: memories (of `state`, or every state) after (afterCreatedAt, afterId) by created_at then id, at
  // most `limit`, with their file refs. Empty keys start at the first. The anchors come without the content of the
  // versions memq keeps (keptContent null): keptVersionBytes and keptVersion read it, for the versions a page writes.
  Result<std::vector<Memory>> exportPage(std::optional<MemoryState> state, const std::string& afterCreatedAt,
                                         const std::string& afterId, int limit);
  // The size of the version `blob` memq keeps, without reading it; nullopt when it keeps none (the repository's).
  Result<std::optional<size_t>> keptVersionBytes(const std::string& blob);
  // The content of the version `blob` memq keeps, or null.
  Result<std::shared_ptr<const std::string>> keptVersion(const std::string& blob);
  Result<std::vector<Tombstone>> tombstones();  // by at, then content_hash
  Result<std::optional<Tombstone>> tombstoneFor(const std::string& contentHash);
  Result<nlohmann::json> stats();

  // --- recall support (active rows only) ---
  Result<std::vector<FtsHit>> searchFts(FtsLane lane, const std::string& matchExpression, int limit) override;
  // Every row (any state) matching a unicode-lane expression, with its bm25 exactly as FTS5 computes it: from the
  // text index when the expression has unicodeMatch's shape, else from SQLite. An FTS syntax error gives no rows.
  Result<TextMatches> matchText(const std::string& matchExpression);
  // matchText(matchExpression)->bm25Of(pk) for each of `pks`, reading only those rows when the text index answers.
  Result<std::vector<std::optional<double>>> textBm25(const std::string& matchExpression,
                                                      const std::vector<int64_t>& pks) override;
  Result<std::vector<FileHit>> findByPaths(const std::vector<std::string>& paths, int limit) override;
  // From the mirror, which holds every row (a save's as soon as it is answered): false without one.
  bool holdsNoRows() override;
  // findByPaths({path}, limit) for each path (recall's co-change neighbours), in one call.
  Result<std::vector<std::vector<FileHit>>> findByEachPath(const std::vector<std::string>& paths, int limit) override;
  Result<std::vector<Memory>> loadMany(const std::vector<int64_t>& pks) override;
  // The mirror's row for each pk (null for a row that is gone), or nullopt when there is no mirror (no unicode61
  // tokenizer, or a rebuild that failed): the caller then loads the rows with loadMany. The pointers are valid
  // until the next call on this store.
  std::optional<std::vector<const MirroredRow*>> mirroredRows(const std::vector<int64_t>& pks) override;
  Result<std::vector<AnchoredRef>> anchoredRefsOn(const std::vector<std::string>& paths,
                                                  const std::vector<int64_t>& pks) override;
  // Every anchored ref of an active row, read by SQL with the content of the versions memq keeps (each read once):
  // what the tables hold, which the mirror's anchoredRefsOn must always equal.
  Result<std::vector<AnchoredRef>> activeAnchoredRefs();
  // Those of them in a version memq does not keep (a blob of the repository, as a rule), by path then pk, read
  // without any version's content: the anchors re-basing to HEAD diffs, which leaves those in kept versions to
  // recall.
  Result<std::vector<AnchoredRef>> activeAnchoredRefsOutsideKeptVersions();
  // Memories (any state) whose file refs are listed, for staleness review.
  Result<std::vector<Memory>> memoriesWithFiles(int limit);
  // Similar edges with weight ≥ minWeight between active memories.
  Result<std::vector<std::tuple<std::string, std::string, double>>> similarEdges(double minWeight);
  // The default model's vectors of the active rows.
  const VectorIndex& activeIndex() const;
  // Scans on a helper thread now and on the caller's at get() (VectorIndex::beginTopK).
  std::future<std::vector<VectorIndex::Hit>> beginNearestActive(std::vector<float> query, size_t k,
                                                                float minScore) override;
  std::optional<int64_t> pkOf(const std::string& id);
  std::optional<std::string> idOf(int64_t pk);

  // --- housekeeping ---
  // PASSIVE WAL checkpoint (never waits on readers). Saves do not checkpoint (see database.cc), so the daemon's
  // housekeeping timer calls this every few seconds for each open scope, under the scope's lock. While saves are
  // handed to the background applier it returns at once, leaving the batch open: the applier's commits run the
  // checkpoint guard, and waiting for the queue here would stall the stream.
  Status checkpoint();


 private:
  friend class MemoryStoreTestAccess;  // tests reach the connection and the applier through it (tests/unit/store)

  explicit MemoryStore(StoreOptions options);
  std::string now() const;

  // --- SaveTarget (the save pipeline's calls back; memory_store_saves.cc) ---
  SaveEffects applySave(const SaveRecord& record) override;
  void publish(const SaveRecord& record, SaveEffects& effects) override;
  void writeQueuedSave(const QueuedSave& save) override;
  void reloadIndexes() override;
  Status reloadIndexesIfStale() override;
  bool indexesInUse() const override;
  bool databaseInPlace() const override;
  // Every StorageError a store returns is made here (it hides the free storageError of database.h), so it names
  // its scope and file; a Status cause keeps its message, behind `context`.
  Status storageError(const std::exception& e, const std::string& context) const override;
  Status storageError(const Status& cause, const std::string& context) const override;
  Status storageError(const std::exception& e) const { return storageError(e, ""); }

  // --- saves (memory_store_saves.cc) ---
  // The save answered here and handed to the background applier, or nullopt when it must take the synchronous path.
  std::optional<Result<SaveOutcome>> saveInBackground(SaveRecord& record);
  // A new memory's rows (memories, files, embedding, similar edges, the create event), with `pk` or the next
  // rowid; returns its pk. Throws on SQLite errors; changes nothing in memory.
  int64_t writeCreatedRows(const SaveRecord& record, std::optional<int64_t> pk, const std::vector<float>& vec,
                           const std::vector<VectorIndex::Hit>& neighbours);
  // The record a created memory reads back as, built from what was written.
  Memory createdMemory(const SaveRecord& record, int64_t pk) const;
  // The similar_rejected warning for a new memory's vector, if any, read from `view`.
  std::optional<std::string> rejectedWarning(const std::vector<float>& vec, StoreSql& view);
  // The active neighbours a vector gets similar edges to (cosine ≥ 0.4, top 8), other than the row `self`.
  std::vector<VectorIndex::Hit> similarNeighbours(const std::vector<float>& vec, std::optional<int64_t> self) const;
  // Links pk to its strongest active neighbours; returns the neighbours.
  std::vector<VectorIndex::Hit> linkSimilar(int64_t pk, const std::vector<float>& vec, const std::string& at);
  // One row of a page written without its similar edges (linkInOrder makes them): its pk, whether its state is
  // active or it was purged (deleted, with its edges), its vector (empty when none is stored) and the time its
  // edges are stamped with.
  struct LinkStep {
    int64_t pk = 0;
    bool active = false;
    bool purged = false;
    std::vector<float> vec;
    std::string at;
  };
  // The similar edges of `steps`, exactly as unlinking each and linking it (linkSimilar) one at a time in order,
  // with each active one entering the active index before the next, would make them, while the active index still
  // holds the state before the page: the active index is scanned once for all of them (VectorIndex::topKMany).
  void linkInOrder(const std::vector<LinkStep>& steps);
  // Hints for a save: its semantic neighbours, else trigram duplicates by summary. `committedView`: read from the
  // read-only connection (and the open batch's rows kept in memory).
  std::vector<SimilarHint> similarHints(const std::string& summary, const std::vector<VectorIndex::Hit>& neighbours,
                                        int64_t selfPk, bool committedView = false);
  std::vector<float> embedMemory(const std::string& summary, const std::string& details,
                                 const std::vector<std::string>& topics) const;

  // --- the correction model (memory_store.cc) ---
  // Waits for saves handed to the background applier, so that this thread may use the connection.
  void takeDatabase();
  // Refuses a write on a retired store, or on files no longer at their paths (checkFilesInPlace).
  Status writable() const;
  // writable(), and this store holds the save journal (SavePipeline::claimWrites): refused at once while another
  // process holds it.
  Status claimWrites();
  // Before a write: writable(), the connection taken back, the saves a batch holds committed and the pending usage
  // written (a failure is a StorageError naming `action`).
  Status readyToWrite(const std::string& action);
  // flushUsage's write, once the connection is ready. Throws on SQLite errors.
  void writePendingUsage();
  // `at` defaults to now().
  void appendEvent(const std::string& memoryId, const std::string& action, const Actor& actor,
                   const nlohmann::json& detail, const std::optional<std::string>& at = std::nullopt);
  // One replicated row written (applyReplicated's transaction is open), all but its similar edges; returns what
  // linkInOrder needs of it.
  LinkStep writeReplicatedRow(const ReplicatedChange& change);
  // A replicated purge (the transaction is open): the row deleted as a local purge deletes it; its pk, nullopt when
  // the replica never held it.
  std::optional<int64_t> purgeReplicatedRow(const ReplicatedChange& change);
  Result<Memory> changeState(const std::string& id, MemoryState from1, std::optional<MemoryState> from2,
                             MemoryState to, const std::string& action, const Actor& actor,
                             const std::optional<std::string>& reason);

  StoreOptions options_;
  std::string embedModel_;  // the embedder's model name, as the embeddings table keys vectors
  // The identity of the database file opened (set at open, then read only): checkFilesInPlace compares the path's.
  std::optional<FileIdentity> databaseIdentity_;
  bool retired_ = false;  // retire() ran: no more writes
  mutable std::atomic<bool> sawStorageError_{false};  // some call failed with a StorageError: no optional writes at close
  PendingUsage pendingUsage_;  // uses recorded by markUsed, not yet written
  // Declared in dependency order (each is destroyed before what it uses).
  std::unique_ptr<StoreSql> sql_;
  std::unique_ptr<RecallMirror> mirror_;
  std::unique_ptr<SavePipeline> saves_;
};

}  // namespace memq
