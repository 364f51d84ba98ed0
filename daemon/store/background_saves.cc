// SavePipeline's background applier (StoreOptions::applySavesInBackground): the caller's thread answers a save that
// writes a new memory from memory and the committed database (MemoryStore::saveInBackground), hands it off here —
// journalled (the acknowledgement) and queued — and the applier thread writes the queued rows into the open batch
// and commits every saveBatch saves. A stream of saves so runs on two cores: the answer (embedding, neighbours,
// hints, the in-memory indexes) on one, SQLite (rows, full-text lanes, WAL) on the other. See memory_store.h,
// invariant 7.
#include <algorithm>
#include <system_error>

#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"

namespace memq {

namespace {

// Saves queued and not yet written, at most: a caller faster than SQLite waits here, so the work a read must wait
// for (takeDatabase) stays bounded. Four batches' worth (and at least 64), so that the caller keeps answering saves
// while the applier commits: a commit writes the batch's rows into both full-text lanes, and now and then merges the
// lanes' segments or checkpoints the WAL, which together took up to 0.3 s at 10k memories on two cores; a queue of
// one batch filled during those (4 of 40 batches at 10k) and the caller waited.
constexpr size_t kMinQueueBound = 64;
constexpr size_t kQueuedBatches = 4;

}  // namespace

bool SavePipeline::acceptsHandOff(const std::string& contentHash) {
  {
    MutexLock lock(mutex_);
    // A journal past its bound is emptied by the synchronous path (applyNow commits there when it is over it).
    if (applierFailure_ || journalOverLimit() || uncommittedHashes_.count(contentHash) != 0) return false;
  }
  if (!applier_.joinable()) {
    try {
      applier_ = std::thread([this] { runApplier(); });
    } catch (const std::system_error&) {
      return false;  // no thread to hand saves to: each is applied before it is answered
    }
  }
  return true;
}

std::optional<int64_t> SavePipeline::nextHandOffPk() {
  // Still this thread's connection when nothing is handed off: rows are numbered as SQLite numbers them.
  if (!handedOff_) nextPk_ = sql_.nextPk();
  return nextPk_;
}

Result<bool> SavePipeline::handOff(QueuedSave save) {
  const int64_t pk = save.pk;
  {
    MutexLock lock(mutex_);
    const size_t bound = std::max(kMinQueueBound, kQueuedBatches * static_cast<size_t>(options_.saveBatch));
    while (queue_.size() >= bound && !applierFailure_) applierIdle_.wait(mutex_);
    if (applierFailure_) return false;
    uint64_t sizeBefore = 0;
    MEMQ_RETURN_IF_ERROR(journalRecord(save.record, sizeBefore));  // not acknowledged
    // The acknowledgement needs the journal and the database still at their paths (not a deleted project's files).
    if (Status st = target_.checkFilesInPlace(); !st) {
      unjournalRecord(save.record, sizeBefore);
      return st;  // not acknowledged
    }
    noteUncommitted(pk, save.record);
    queue_.push_back(std::move(save));
  }
  applierWake_.notifyOne();
  handedOff_ = true;
  nextPk_ = pk + 1;
  ++savesAnsweredInBackground_;
  return true;
}

std::optional<std::pair<std::string, std::string>> SavePipeline::uncommittedRow(int64_t pk) {
  MutexLock lock(mutex_);
  auto it = uncommittedRows_.find(pk);
  if (it == uncommittedRows_.end()) return std::nullopt;
  return std::pair{it->second.id, it->second.summary};
}

void SavePipeline::runApplier() {
  MutexLock lock(mutex_);
  for (;;) {
    while (!applierStop_ && (queue_.empty() || applierFailure_)) applierWake_.wait(mutex_);
    if (queue_.empty() || applierFailure_) {
      if (applierStop_) return;
      continue;
    }
    QueuedSave item = std::move(queue_.front());
    queue_.pop_front();
    applierWorking_ = true;
    lock.unlock();
    // The connection is this thread's until the queue is empty and applierWorking_ is false (invariant 7).
    std::optional<Status> failure;
    try {
      if (!batchOpen_) beginBatch();
      if (Status lost = checkBatchHeld(); !lost) {
        // SQLite rolled the batch back by itself: this save's statements would each commit on their own. It fails
        // instead, and the caller's thread applies the batch's saves again from the journal.
        failure = target_.storageError(lost, "save applied in the background");
      } else {
        target_.writeQueuedSave(item);
        appliedSeq_ = item.record.seq;
        ++batchSaves_;
        if (batchSaves_ >= options_.saveBatch) {
          if (Status st = commitBatch(); !st) failure = target_.storageError(st, "save applied in the background");
        }
      }
    } catch (const std::exception& e) {
      failure = target_.storageError(e, "save applied in the background");
    }
    if (failure) {
      // The batch is rolled back whole. Its saves were acknowledged and are in the journal: the caller's thread
      // rebuilds the in-memory indexes and replays them (takeDatabase), and reports what still fails.
      sql_.rollback();
      batchOpen_ = false;
      batchSaves_ = 0;
      firstPendingPk_.reset();
    }
    lock.lock();
    applierWorking_ = false;
    if (failure) {
      applierFailure_ = std::move(failure);
      queue_.clear();
    }
    applierIdle_.notifyAll();  // takeDatabase() waits for an empty queue, a save for room in it
  }
}

void SavePipeline::takeDatabase() {
  nextPk_.reset();  // this thread may write rows now: numbered afresh at the next hand-off
  if (!handedOff_) {
    if (replayPending_) retryReplay();
    return;
  }
  std::optional<Status> failure;
  {
    MutexLock lock(mutex_);
    while (!queue_.empty() || applierWorking_) applierIdle_.wait(mutex_);
    failure.swap(applierFailure_);
    if (failure) {
      uncommittedHashes_.clear();
      uncommittedRows_.clear();
    }
  }
  handedOff_ = false;
  if (!failure) return;
  // The rows the batch held are gone from SQLite but were published: rebuilt from what is committed, and the
  // journal's saves applied again now, so that a read after this sees every acknowledged save. If that fails too,
  // every write tries again first (replayJournalIfNeeded) and reports why.
  target_.reloadIndexes();
  replayPending_ = true;
  retryReplay(/*now=*/true);
}

bool SavePipeline::waitForApplierIdle() {
  if (!handedOff_) return false;
  MutexLock lock(mutex_);
  while (!queue_.empty() || applierWorking_) applierIdle_.wait(mutex_);
  return applierFailure_.has_value();
}

void SavePipeline::stopApplier() {
  if (!applier_.joinable()) return;
  takeDatabase();
  {
    MutexLock lock(mutex_);
    applierStop_ = true;
  }
  applierWake_.notifyAll();
  applier_.join();
}

}  // namespace memq
