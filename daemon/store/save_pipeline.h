// SavePipeline: how one scope's saves reach SQLite — the open batch (StoreOptions::saveBatch: saves share one
// transaction, each in its own savepoint), the save journal's records and sequence numbers (save_journal.h), the
// replay of acknowledged saves the database has not committed, and the background applier (StoreOptions::
// applySavesInBackground: a thread of this pipeline writes queued saves through the main connection while the
// caller's thread answers from a read-only one). What a save writes and answers is the store's (SaveTarget); when a
// batch, a replay or the applier fails, the pipeline asks the store to rebuild its in-memory indexes.
//
// Errors: methods that return Status translate what SQLite threw; those documented as throwing leave the
// translation to the caller (MemoryStore, at its public methods).
//
// Thread-safety: the owner's thread calls every public method. The applier thread (background_saves.cc) shares
// with it only what mutex_ guards, and the main connection while saves are handed to it (memory_store.h
// invariant 7: then only the applier uses it, until takeDatabase()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "daemon/embed/vector_index.h"
#include "daemon/store/file_identity.h"
#include "daemon/store/save_journal.h"
#include "daemon/store/save_record.h"
#include "daemon/store/save_target.h"
#include "daemon/store/store_types.h"
#include "daemon/util/thread_annotations.h"
#include "protocol/status.h"

namespace memq {

class StoreSql;

class SavePipeline {
 public:
  SavePipeline(const StoreOptions& options, StoreSql& sql, SaveTarget& target);
  ~SavePipeline();
  SavePipeline(const SavePipeline&) = delete;
  SavePipeline& operator=(const SavePipeline&) = delete;

  // Opens the journal beside the database (if batching, or if one is there to replay), replays it, and opens the
  // read-only connection for saves in the background.
  Status open();
  // Another process held the journal's lock when this store last tried (open, or claimWrites): it writes the
  // database, and this store only reads it.
  bool writesElsewhere() const { return writesElsewhere_.load(); }
  // Before any write: takes the journal over when another process held it and has let it go (then replays it).
  // ScopeUnavailable, naming the database and the journal, while that process still holds it; nothing changed.
  Status claimWrites();

  bool batching() const { return options_.saveBatch > 1 && journal_ != nullptr; }
  bool hasPendingSaves() const { return handedOff_ || batchOpen_ || replayPending_; }
  bool hasOpenBatch() const { return handedOff_ || batchOpen_; }
  bool handedOff() const { return handedOff_; }
  bool replayPending() const { return replayPending_; }
  size_t replayedSaves() const { return replayedSaves_; }
  size_t savesAnsweredInBackground() const { return savesAnsweredInBackground_; }
  std::optional<std::string> unappliedSavesWarning(const std::string& scope) const;
  // Read without the store's lock too (ScopeRegistry::forgetIfMoved), while a takeover may set it.
  std::optional<FileIdentity> journalIdentity() const EXCLUDES(identityMutex_) {
    MutexLock lock(identityMutex_);
    return journalIdentity_;
  }

  // A save joins a stream when it starts soon after the previous one (or a batch is open).
  bool joinsStream(std::chrono::steady_clock::time_point started) const;
  void noteSaveEnd() { lastSaveEnd_ = std::chrono::steady_clock::now(); }

  // The synchronous save: applied in a savepoint of the open batch (journalled before the savepoint is released
  // when batching), committed unless it joins a stream of saves. Throws on SQLite errors.
  Result<SaveOutcome> applyNow(SaveRecord& record, bool joinsStream);

  // The committed view and what the background path needs to answer a save (background_saves.cc).
  bool canAnswerInBackground() const { return reader_ != nullptr; }
  StoreSql& committedView() { return *reader_; }
  // Whether the answer may be given before the rows are written: the applier runs and has not failed, the journal
  // is within its bound, and no save of the open batch holds the same content.
  bool acceptsHandOff(const std::string& contentHash) EXCLUDES(mutex_);
  // The pk the next save handed off gets (rows are numbered as SQLite would), or nullopt. Throws on SQLite errors.
  std::optional<int64_t> nextHandOffPk();
  // Journals the save (the acknowledgement) and queues it for the applier: true. False: the applier failed, the
  // save takes the synchronous path. An error: not acknowledged.
  Result<bool> handOff(QueuedSave save) EXCLUDES(mutex_);
  // The (id, summary) of an active row of the open batch the read-only connection cannot see.
  std::optional<std::pair<std::string, std::string>> uncommittedRow(int64_t pk) EXCLUDES(mutex_);

  // Waits for the applier to apply what it was handed; after a failure of the applier, rebuilds the in-memory
  // indexes from the committed rows and replays the journal. Never throws.
  void takeDatabase();
  // Waits until the applier has nothing left to do, without taking the connection back; true when it failed.
  bool waitForApplierIdle() EXCLUDES(mutex_);
  void stopApplier() EXCLUDES(mutex_);

  // Commits the open batch (after replaying what a failed commit left in the journal). On failure the batch is
  // rolled back and its saves stay in the journal.
  Status commitPendingSaves();
  Result<bool> commitPendingSavesIfIdle(std::chrono::milliseconds idle);
  // Before any other write or full-text query: saves left by a failed commit are applied again, and an open batch
  // is committed.
  Status settle();
  // Acknowledged saves the database has not committed are applied now (when `replayPending_`). Returns why not;
  // the error's message is the cause alone (callers add their context).
  Status replayJournalIfNeeded();
  // Ends the pipeline's use of the files (MemoryStore::retire); returns what became of the saves not committed.
  std::string retire(bool databaseInPlace, bool journalInPlace);

  // Rows created in the open transaction reach the full-text lanes at commit (indexPendingText).
  void notePendingText(int64_t pk) {
    if (!firstPendingPk_) firstPendingPk_ = pk;
  }
  bool pendingText(int64_t pk) const { return firstPendingPk_ && pk >= *firstPendingPk_; }
  // Inserts the rows created in the open transaction into both full-text lanes.
  void indexPendingText();
  void dropPendingText() { firstPendingPk_.reset(); }
  // Whether SQLite rolled the open batch back by itself (it may, on an I/O error).
  bool batchLost();
  // Not OK when a batch is open but SQLite has rolled its transaction back by itself (after an I/O error, a full
  // disk or lack of memory), possibly in a statement whose error nothing saw (a read publish() makes). Nothing may
  // be built on such a batch: a SAVEPOINT would start a transaction of its own, which its RELEASE commits, and
  // applied_batch written outside any would mark the lost saves committed. Either thread, while it has the
  // connection.
  Status checkBatchHeld();

 private:
  struct UncommittedRow {
    std::string id;
    std::string summary;
  };
  // Appends the record to the journal under the next sequence number (record.seq).
  Status journalRecord(SaveRecord& record, uint64_t& sizeBefore) REQUIRES(mutex_);
  bool journalOverLimit() const REQUIRES(mutex_) {
    return journal_ && journal_->size() > options_.maxJournalBytes;
  }
  // Drops a record journalRecord appended (its save failed): cut from the file, or, when the cut fails, voided by a
  // record a replay reads as "skip seq N".
  void unjournalRecord(const SaveRecord& record, uint64_t sizeBefore) REQUIRES(mutex_);
  void noteUncommitted(int64_t pk, const SaveRecord& record) REQUIRES(mutex_);
  // Commits the open batch: its rows into the FTS lanes, the journal's last applied number, COMMIT, then the
  // journal emptied if it holds nothing newer. Not OK (nothing done) when the database is no longer at its path;
  // throws on SQLite errors. Either way the transaction is still to be rolled back.
  Status commitBatch() EXCLUDES(mutex_);
  void beginBatch();
  // Ends a failed batch: rolls it back and, when saves of it were published, has the indexes rebuilt.
  void abandonBatch(bool published);
  // Ends a batch SQLite rolled back by itself (checkBatchHeld), and has its saves, which are in the journal, applied
  // again by the next replay. Owner's thread (it rebuilds the indexes).
  void abandonLostBatch();
  // applySave in a savepoint, then publish: a failure undoes only this save's rows. `beforeRelease` (journalling)
  // may refuse the save: its Status is returned, nothing published. Throws on SQLite errors.
  Result<SaveEffects> applyInSavepoint(const SaveRecord& record, const std::function<Status()>& beforeRelease);
  // replayJournalIfNeeded's work: not OK when the journal cannot be read or the commit fails; throws on SQLite
  // errors.
  Status replayJournal();
  // After a failed attempt the next waits kReplayRetryInterval (a failed replay rebuilds the in-memory indexes,
  // which a read must not pay for each time); `now` ignores that wait. Never throws.
  void retryReplay(bool now = false);
  static constexpr std::chrono::seconds kReplayRetryInterval{1};
  // Opens and reads the journal, cuts what follows its last whole record, then replays it (the replay first has the
  // store's in-memory indexes rebuilt if they are stale: for a store taking the journal over, if the other process
  // committed since they were loaded).
  Status openJournal();
  // Logs what SaveJournal::recover() cut from the journal at `path` (`foundBytes` long when opened): a warning for a
  // torn append, an error naming the offset when whole records followed the damage.
  static void logCutTail(const std::string& path, uint64_t foundBytes, const SaveJournal::Contents& contents);
  // The read-only connection for saves answered in the background, once batching (failure: none, and saves are
  // applied before they are answered).
  void openReader();
  void runApplier() EXCLUDES(mutex_);

  const StoreOptions& options_;
  StoreSql& sql_;
  SaveTarget& target_;
  std::unique_ptr<SaveJournal> journal_;  // null for a store that never batched saves and has no journal file
  // Set when the journal is opened (at open, or when claimWrites takes it over, before any applier runs).
  mutable Mutex identityMutex_;
  std::optional<FileIdentity> journalIdentity_ GUARDED_BY(identityMutex_);
  // Set on the owner's thread; read from any (daemon/status lists the scopes that only read).
  std::atomic<bool> writesElsewhere_ = false;
  // The connection's current user (the owner's thread, or the applier while saves are handed to it) alone uses:
  bool batchOpen_ = false;  // a write transaction holds saves not yet committed
  int batchSaves_ = 0;
  std::optional<int64_t> firstPendingPk_;  // the first row created in the open transaction, not yet in the FTS lanes
  uint64_t appliedSeq_ = 0;                // the last journal number written into the open transaction
  // The owner's thread alone uses:
  bool replayPending_ = false;  // the journal holds saves the database has not committed
  size_t replayedSaves_ = 0;
  bool replaying_ = false;  // a replay is applying the journal (its reads must not start another)
  std::optional<std::chrono::steady_clock::time_point> lastReplayFailure_;
  size_t savesAnsweredInBackground_ = 0;
  std::string replayFailure_;  // why the last replay failed, for unappliedSavesWarning
  size_t replayFailedSaves_ = 0;  // how many saves it held (0: not known)
  std::optional<std::chrono::steady_clock::time_point> lastSaveEnd_;  // none yet: the first save is not in a stream
  std::unique_ptr<StoreSql> reader_;  // read-only: what is committed (saves in the background only)
  bool handedOff_ = false;            // saves were queued since the last takeDatabase(): the connection is the applier's
  std::optional<int64_t> nextPk_;     // the pk the next queued save gets

  // Shared with the applier thread. The journal's appends and resets are made under mutex_ too.
  Mutex mutex_;
  CondVar applierWake_;
  CondVar applierIdle_;
  uint64_t journalSeq_ GUARDED_BY(mutex_) = 0;    // the last number appended
  uint64_t committedSeq_ GUARDED_BY(mutex_) = 0;  // the last number committed
  bool journalNeedsReset_ GUARDED_BY(mutex_) = false;  // every record is committed but the file still holds them
  std::deque<QueuedSave> queue_ GUARDED_BY(mutex_);
  bool applierWorking_ GUARDED_BY(mutex_) = false;  // the applier holds an item (and so the connection)
  bool applierStop_ GUARDED_BY(mutex_) = false;
  std::optional<Status> applierFailure_ GUARDED_BY(mutex_);  // why the applier rolled its batch back
  // Content hashes and rows written but not committed: the read-only connection cannot see them.
  std::unordered_set<std::string> uncommittedHashes_ GUARDED_BY(mutex_);
  std::unordered_map<int64_t, UncommittedRow> uncommittedRows_ GUARDED_BY(mutex_);
  std::thread applier_;  // last: started after, and joined before, everything above is destroyed
};

}  // namespace memq
