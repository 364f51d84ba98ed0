// SavePipeline: the open batch, the save journal's records, the synchronous save path, commits and the replay of
// the journal. The background applier is in background_saves.cc. See save_pipeline.h and memory_store.h
// (invariants 3, 6, 7 and 8).
#include "daemon/store/save_pipeline.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>

#include "daemon/store/memory_store.h"
#include "daemon/store/store_sql.h"

namespace memq {

SavePipeline::SavePipeline(const StoreOptions& options, StoreSql& sql, SaveTarget& target)
    : options_(options), sql_(sql), target_(target) {}

SavePipeline::~SavePipeline() { stopApplier(); }

Status SavePipeline::open() {
  MEMQ_RETURN_IF_ERROR(openJournal());
  openReader();
  return Status::ok();
}

Status SavePipeline::claimWrites() {
  if (!writesElsewhere_) return Status::ok();
  MEMQ_RETURN_IF_ERROR(openJournal());
  if (writesElsewhere_) {
    // Refused at once, never waited for: the caller may be the thread that answers every connection.
    const std::string path = MemoryStore::journalPath(options_.path);
    return Status(ErrorCode::kScopeUnavailable,
                  "the " + options_.scope + " database " + options_.path +
                      " is held by another process, which holds its save journal " + path +
                      " (another memqd serving this " + options_.scope +
                      " on another socket?); nothing was written. This memqd only reads it until that process "
                      "closes it (after about 10 minutes without use, or when it exits); retry then",
                  nlohmann::json{{"scope", options_.scope}, {"path", options_.path}});
  }
  openReader();
  return Status::ok();
}

void SavePipeline::openReader() {
  if (options_.applySavesInBackground && batching() && !reader_) {
    try {
      // Committed rows only: what a save answered in the background checks against (with the rows of the batch
      // not yet committed, kept in memory).
      auto reader = std::make_unique<SQLite::Database>(options_.path, SQLite::OPEN_READONLY);
      reader->exec("PRAGMA busy_timeout = 5000");
      reader_ = std::make_unique<StoreSql>(std::move(reader), options_.scope);
    } catch (const std::exception&) {
      reader_.reset();  // saves are then applied before they are answered, as without the option
    }
  }
}

Status SavePipeline::openJournal() {
  if (options_.path.empty() || options_.path == ":memory:") {
    writesElsewhere_ = false;
    return Status::ok();
  }
  const std::string path = MemoryStore::journalPath(options_.path);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (options_.saveBatch <= 1 && !exists) {
    writesElsewhere_ = false;
    return Status::ok();
  }
  auto journal = SaveJournal::open(path);
  if (!journal && journal.status().code() == ErrorCode::kConflict) {
    // Another process owns this database's saves (another memqd, or memqd while a tool or benchmark reads the file
    // beside it): this store neither replays them nor writes. Its writes would race the owner's saves answered
    // before their batch commits: an id answered `created` that never exists once the owner's commit finds the
    // content taken. Every write tries to take the journal over first (claimWrites).
    writesElsewhere_ = true;
    return Status::ok();
  }
  // Any other failure: at open the store is not opened; at a takeover writesElsewhere_ stays set, so every write
  // tries again and reports why.
  if (!journal) return journal.status();
  // Readable is required: a journal that is not memq's is not silently ignored (nor appended to). What follows the
  // last whole record is cut before this store appends anything: a record written after it would not be read.
  const uint64_t foundBytes = (*journal)->size();
  auto contents = (*journal)->recover();
  if (!contents) return contents.status();
  if (contents->tornTail) logCutTail(path, foundBytes, *contents);
  journal_ = std::move(*journal);
  {
    MutexLock lock(identityMutex_);
    journalIdentity_ = FileIdentity{journal_->device(), journal_->inode()};
  }
  writesElsewhere_ = false;
  replayPending_ = true;
  // A replay that fails leaves the store open (reads work); every write first tries these saves again and reports
  // why they fail.
  if (!replayJournalIfNeeded().isOk()) return Status::ok();
  if (options_.saveBatch <= 1) {
    // Unlinked while its lock is still held: once the lock is let go, a batching memqd may open and lock a journal at
    // this path and acknowledge saves into it, and a removal after that would take its saves away.
    std::filesystem::remove(path, ec);
    journal_.reset();
    {
      MutexLock lock(identityMutex_);
      journalIdentity_.reset();
    }
  }
  return Status::ok();
}

void SavePipeline::logCutTail(const std::string& path, uint64_t foundBytes, const SaveJournal::Contents& contents) {
  const uint64_t cut = foundBytes - contents.wholeBytes;
  if (contents.recordsAfterDamage == 0) {
    spdlog::warn("memq: the save journal {} ended in {} bytes that are not a whole record (a save being journalled "
                 "when memqd stopped, so never acknowledged): cut them, so that the next save follows the last whole "
                 "record",
                 path, cut);
    return;
  }
  // Not a torn append (nothing is written after one): the file was damaged, and saves after the damage may have been
  // acknowledged. They cannot be told from the damage, so they are not replayed; this says they are gone.
  spdlog::error("memq: the save journal {} is damaged at byte {}: the record there is not whole, and {} whole records "
                "follow it, which are not replayed; cut the {} bytes from byte {} on, after keeping the file as found "
                "at {}",
                path, contents.wholeBytes, contents.recordsAfterDamage, cut, contents.wholeBytes,
                contents.damagedCopy);
}

std::optional<std::string> SavePipeline::unappliedSavesWarning(const std::string& scope) const {
  if (!journal_ || !replayPending_) return std::nullopt;
  const std::string count = replayFailedSaves_ > 0 ? std::to_string(replayFailedSaves_) + " acknowledged saves"
                                                   : "acknowledged saves";
  return "the " + scope + " scope is incomplete: " + count + " in its save journal " + journal_->path() +
         " could not be applied to its database" + (replayFailure_.empty() ? "" : " (" + replayFailure_ + ")") +
         "; this answer leaves them out until memqd applies them (it retries as requests come: free disk space)";
}

bool SavePipeline::joinsStream(std::chrono::steady_clock::time_point started) const {
  return batching() &&
         (handedOff_ || batchOpen_ || (lastSaveEnd_ && started - *lastSaveEnd_ < options_.saveStreamGap));
}

bool SavePipeline::batchLost() { return sql_.autocommit(); }

Status SavePipeline::checkBatchHeld() {
  if (!batchOpen_ || !sql_.autocommit()) return Status::ok();
  return Status(ErrorCode::kStorageError,
                "SQLite rolled the open batch back by itself (after an I/O error, a full disk or lack of memory); its "
                "saves are applied again from the save journal");
}

void SavePipeline::abandonLostBatch() {
  if (checkBatchHeld()) return;
  abandonBatch(/*published=*/true);
  if (journal_) replayPending_ = true;
}

Result<SaveOutcome> SavePipeline::applyNow(SaveRecord& record, bool joinsStream) {
  // An earlier save's batch lost to an error that save did not see: its saves are applied again first, and this one
  // joins the batch that follows.
  abandonLostBatch();
  if (Status st = replayJournalIfNeeded(); !st) return target_.storageError(st, "save");
  if (!batchOpen_) beginBatch();
  uint64_t journalMark = 0;
  // The save failed: it is not acknowledged (out of the journal: never replayed), and the transaction is ended or
  // the batch's earlier saves applied again.
  auto undo = [&] {
    if (batching() && record.seq != 0) {
      MutexLock lock(mutex_);
      unjournalRecord(record, journalMark);
    }
    if (batchLost()) {
      // SQLite rolled the whole transaction back (it may, on a full disk or an I/O error), the batch's earlier
      // saves with it. They were acknowledged and are in the journal: applied again as soon as possible.
      const bool earlierSaves = batchSaves_ > 0;
      abandonBatch(earlierSaves);
      if (earlierSaves) {
        replayPending_ = true;
        (void)replayJournalIfNeeded();  // still failing: every later write, and commitPendingSaves(), tries again
      }
    } else if (batchSaves_ == 0) {
      abandonBatch(false);  // nothing else in the transaction: end it
    }
  };
  std::optional<Result<SaveEffects>> applied;
  try {
    applied = applyInSavepoint(record, [&]() -> Status {
      if (!batching()) return Status::ok();
      // In the journal before the savepoint is released: a save is acknowledged only once it would be replayed.
      MutexLock lock(mutex_);
      MEMQ_RETURN_IF_ERROR(journalRecord(record, journalMark));
      // Journalled into the file at the journal's path, and bound for the database at its path: else it is not
      // acknowledged.
      return target_.checkFilesInPlace();
    });
  } catch (...) {
    undo();
    throw;
  }
  if (!*applied) {
    undo();
    return target_.storageError(applied->status(), "save");
  }
  SaveEffects effects = std::move(**applied);
  ++batchSaves_;
  if (record.seq != 0) appliedSeq_ = record.seq;
  bool journalFull = false;
  {
    MutexLock lock(mutex_);
    if (reader_ && effects.outcome.status == "created") noteUncommitted(effects.outcome.memory->pk, record);
    journalFull = journalOverLimit();
  }
  noteSaveEnd();
  if (!joinsStream || batchSaves_ >= options_.saveBatch || journalFull) {
    if (Status st = commitPendingSaves(); !st) {
      if (batching()) {
        // This save is not acknowledged if the commit fails: out of the journal, so that no replay brings it back.
        // The batch's earlier saves were acknowledged; they stay in the journal and are applied again.
        {
          MutexLock lock(mutex_);
          unjournalRecord(record, journalMark);
        }
        (void)replayJournalIfNeeded();  // still failing: every later write, and commitPendingSaves(), tries again
      }
      return st;
    }
  }
  return std::move(effects.outcome);
}

Result<SaveEffects> SavePipeline::applyInSavepoint(const SaveRecord& record,
                                                   const std::function<Status()>& beforeRelease) {
  // A save may write the batch's pending rows into the FTS lanes (a topic merge, see MemoryStore::applySave); the
  // rollback undoes that write, so the rows must be pending again.
  const std::optional<int64_t> pendingBefore = firstPendingPk_;
  // Outside a transaction, SAVEPOINT would start one of its own, and RELEASE commit this save alone.
  if (Status lost = checkBatchHeld(); !lost) throw std::runtime_error(lost.message());
  sql_.savepoint();
  SaveEffects effects;
  Status refused;
  try {
    effects = target_.applySave(record);
    if (beforeRelease) refused = beforeRelease();
    if (refused) sql_.release();
  } catch (...) {
    sql_.rollbackToSavepoint();
    firstPendingPk_ = pendingBefore;
    throw;
  }
  if (!refused) {
    sql_.rollbackToSavepoint();
    firstPendingPk_ = pendingBefore;
    return refused;
  }
  target_.publish(record, effects);
  return effects;
}

void SavePipeline::beginBatch() {
  sql_.begin();
  batchOpen_ = true;
  batchSaves_ = 0;
  firstPendingPk_.reset();
}

void SavePipeline::abandonBatch(bool published) {
  sql_.rollback();
  batchOpen_ = false;
  batchSaves_ = 0;
  firstPendingPk_.reset();
  // The batch's rows were published to the vector indexes and the mirror: rebuilt from what is committed.
  if (published) target_.reloadIndexes();
}

void SavePipeline::indexPendingText() {
  if (!firstPendingPk_) return;
  sql_.indexTextFrom(*firstPendingPk_);
  firstPendingPk_.reset();
}

Status SavePipeline::journalRecord(SaveRecord& record, uint64_t& sizeBefore) {
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

void SavePipeline::unjournalRecord(const SaveRecord& record, uint64_t sizeBefore) {
  if (record.seq == 0 || record.seq != journalSeq_) return;
  if (journal_->truncateTo(sizeBefore).isOk()) {
    journalSeq_ = record.seq - 1;
    return;
  }
  // The record stays in the file: it keeps its number (the next save is not journalled under it), and a record
  // voiding it follows, so that a replay never applies a save its client was told failed.
  (void)journal_->append(voidRecordText(record.seq));
}

void SavePipeline::noteUncommitted(int64_t pk, const SaveRecord& record) {
  uncommittedHashes_.insert(record.input.contentHash);
  uncommittedRows_[pk] = {record.id, record.input.summary};
}

Status SavePipeline::commitBatch() {
  // Never committed into a file that is no longer at its path (a project deleted and created again): the batch
  // fails instead, and its saves stay in the journal.
  if (!target_.databaseInPlace()) return target_.checkFilesInPlace();
  MEMQ_RETURN_IF_ERROR(checkBatchHeld());
  indexPendingText();
  if (journal_) {
    // Never outside the batch's transaction: in autocommit it would mark saves committed that SQLite rolled back.
    MEMQ_RETURN_IF_ERROR(checkBatchHeld());
    sql_.setAppliedBatch(appliedSeq_);
  }
  sql_.commit();
  batchOpen_ = false;
  batchSaves_ = 0;
  if (!journal_) return Status::ok();
  MutexLock lock(mutex_);
  committedSeq_ = appliedSeq_;
  if (journalSeq_ != committedSeq_) {
    // Newer saves are in the file, for the next batch: it stays, and its header says which of its records are
    // committed, so that a database created at the path after this one is deleted is not given them (what was in a
    // deleted database is gone with it). Should the write fail, only that case is left as it was.
    (void)journal_->markCommittedBelow(committedSeq_ + 1);
    return Status::ok();
  }
  journalNeedsReset_ = !journal_->reset(committedSeq_ + 1).isOk();  // else emptied before the next append
  uncommittedHashes_.clear();
  uncommittedRows_.clear();
  return Status::ok();
}

Status SavePipeline::commitPendingSaves() {
  takeDatabase();
  abandonLostBatch();  // then applied again from the journal, just below
  if (replayPending_) {
    if (Status st = replayJournalIfNeeded(); !st) return target_.storageError(st, "saves in the journal");
  }
  if (!batchOpen_) return Status::ok();
  Status failed;
  try {
    if (Status moved = commitBatch(); !moved) failed = target_.storageError(moved, "commit of saved memories");
  } catch (const std::exception& e) {
    failed = target_.storageError(e, "commit of saved memories");
  }
  if (failed.isOk()) return Status::ok();
  abandonBatch(true);
  // The batch's saves are in the journal: the next write applies them again before its own.
  if (journal_) {
    replayPending_ = true;
    replayFailure_ = failed.message();
    MutexLock lock(mutex_);
    replayFailedSaves_ = journalSeq_ - committedSeq_;
  }
  return failed;
}

Result<bool> SavePipeline::commitPendingSavesIfIdle(std::chrono::milliseconds idle) {
  if ((handedOff_ || batchOpen_) && !replayPending_ && lastSaveEnd_ &&
      std::chrono::steady_clock::now() - *lastSaveEnd_ < idle) {
    return true;
  }
  MEMQ_RETURN_IF_ERROR(commitPendingSaves());
  return hasPendingSaves();
}

Status SavePipeline::settle() {
  takeDatabase();
  MEMQ_RETURN_IF_ERROR(replayJournalIfNeeded());
  if (batchOpen_) MEMQ_RETURN_IF_ERROR(commitPendingSaves());
  return Status::ok();
}

Status SavePipeline::replayJournalIfNeeded() {
  Status st = target_.reloadIndexesIfStale();
  try {
    if (st) st = replayJournal();
  } catch (const std::exception& e) {
    st = Status(ErrorCode::kStorageError, e.what());
  }
  if (!st && replayPending_) replayFailure_ = st.message();
  return st;
}

Status SavePipeline::replayJournal() {
  // During a recall's vector scan a replay would change the index the scan reads: the recall reads without the
  // journal's saves, and the next call after the scan replays them.
  if (!replayPending_ || replaying_ || target_.indexesInUse()) return Status::ok();
  replaying_ = true;
  replayFailedSaves_ = 0;  // not known until the journal is read
  struct ReplayingFlag {
    bool& flag;
    ~ReplayingFlag() { flag = false; }
  } replayingFlag{replaying_};
  auto contents = journal_->read();
  if (!contents) return Status(ErrorCode::kStorageError, contents.status().message());
  const auto applied = static_cast<uint64_t>(sql_.appliedBatch());
  // Records numbered up to `applied` are committed (the file was not emptied after their commit), and so are those
  // below the header's number, to this database or to one deleted since (whose saves are gone with it: a database
  // created at the path starts from 0). The rest are applied as they were the first time: in order, each with its
  // own id and time.
  const uint64_t committed = std::max(applied, contents->committedBelow > 0 ? contents->committedBelow - 1 : 0);
  std::vector<SaveRecord> unapplied;
  std::set<uint64_t> voided;  // saves that failed after they were journalled (unjournalRecord)
  uint64_t last = committed;
  try {
    for (const auto& text : contents->records) {
      if (auto seq = voidedSeq(text)) {
        voided.insert(*seq);
        continue;
      }
      SaveRecord r = SaveRecord::fromJson(text);
      last = std::max(last, r.seq);
      if (r.seq > committed) unapplied.push_back(std::move(r));
    }
    std::erase_if(unapplied, [&](const SaveRecord& r) { return voided.count(r.seq) != 0; });
  } catch (const std::exception& e) {
    return Status(ErrorCode::kStorageError, "cannot read the saves in " + journal_->path() + ": " + e.what());
  }
  {
    MutexLock lock(mutex_);
    journalSeq_ = last;
    // Nothing to apply: every record is committed or voided. The file is emptied now (or, failing that, before the
    // next append), so that none of them is given to a database created at the path later.
    committedSeq_ = unapplied.empty() ? last : committed;
    journalNeedsReset_ = unapplied.empty();
    if (journalNeedsReset_ && !contents->records.empty()) {
      journalNeedsReset_ = !journal_->reset(committedSeq_ + 1).isOk();
    }
  }
  appliedSeq_ = unapplied.empty() ? last : committed;
  if (unapplied.empty()) {
    replayPending_ = false;
    return Status::ok();
  }
  replayFailedSaves_ = unapplied.size();  // what a failure below leaves out of reads
  beginBatch();
  try {
    for (const auto& r : unapplied) {
      (void)applyInSavepoint(r, nullptr);  // nothing to refuse: it is journalled already
      appliedSeq_ = r.seq;
      ++batchSaves_;
    }
  } catch (const std::exception& e) {
    abandonBatch(true);
    return Status(ErrorCode::kStorageError, "cannot apply the saves in " + journal_->path() + ": " + e.what());
  }
  replayPending_ = false;
  MEMQ_RETURN_IF_ERROR(commitPendingSaves());  // a failed commit sets replayPending_ again, and says why
  replayedSaves_ = unapplied.size();
  return Status::ok();
}

void SavePipeline::retryReplay(bool now) {
  if (replaying_ || !journal_) return;
  if (!now && lastReplayFailure_ && std::chrono::steady_clock::now() - *lastReplayFailure_ < kReplayRetryInterval) {
    return;
  }
  if (replayJournalIfNeeded().isOk()) {
    lastReplayFailure_.reset();
  } else {
    // Still failing: the next write reports why, and reads try again once the interval has passed since this end.
    lastReplayFailure_ = std::chrono::steady_clock::now();
  }
}

std::string SavePipeline::retire(bool databaseInPlace, bool journalInPlace) {
  stopApplier();  // the connection back, every queued save written into the open batch
  uint64_t uncommitted = 0;
  {
    MutexLock lock(mutex_);
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
  return fate;
}

}  // namespace memq
