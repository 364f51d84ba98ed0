// MemoryStore's saves applied in the background (StoreOptions::applySavesInBackground): the caller's thread answers
// a save that writes a new memory from memory and the committed database, journals it (the acknowledgement), and
// queues its rows; the store's applier thread writes them into the open batch and commits every saveBatch saves.
// A stream of saves so runs on two cores: the answer (embedding, neighbours, hints, the in-memory indexes) on one,
// SQLite (rows, full-text lanes, WAL) on the other. See memory_store.h, invariant 7.
#include <algorithm>
#include <system_error>

#include "daemon/store/memory_store.h"

namespace memq {

namespace {

// Saves queued and not yet written, at most (and at least saveBatch, so that the caller keeps answering saves
// while the applier commits a batch): a caller faster than SQLite waits here, so the work a read must wait for
// (takeDatabase) stays bounded.
constexpr size_t kMinQueueBound = 64;

}  // namespace

std::optional<Result<SaveOutcome>> MemoryStore::saveInBackground(SaveRecord& record) {
  // Whatever the answer would need to read from the connection takes the synchronous path.
  if (!text_ || mirrorStale_ || indexesStale_ || replayPending_) return std::nullopt;
  const NormalizedSave& input = record.input;
  {
    std::lock_guard lock(pipeMutex_);
    // A journal past its bound is emptied by the synchronous path (save() commits there when journalOverLimit()).
    if (applierFailure_ || journalOverLimit() || uncommittedHashes_.count(input.contentHash) != 0) {
      return std::nullopt;
    }
  }
  if (!applier_.joinable()) {
    try {
      applier_ = std::thread([this] { runApplier(); });
    } catch (const std::system_error&) {
      return std::nullopt;  // no thread to hand saves to: each is applied before it is answered
    }
  }
  SaveOutcome out;
  std::vector<float> vec;
  std::vector<VectorIndex::Hit> neighbours;
  int64_t pk = 0;
  try {
    // Still this thread's connection when nothing is handed off: rows are numbered as SQLite numbers them.
    if (!handedOff_) nextPk_ = db_->execAndGet("SELECT COALESCE(MAX(pk), 0) + 1 FROM memories").getInt64();
    if (!nextPk_ || rowMeta_.count(*nextPk_) != 0) return std::nullopt;
    pk = *nextPk_;
    // Rejected content (a tombstone) and content already stored are answered by the synchronous path. Both are
    // committed: a reject commits, and the rows of an open batch are in uncommittedHashes_.
    auto tomb = statement(true, "SELECT 1 FROM tombstones WHERE content_hash = ?");
    tomb->bind(1, input.contentHash);
    if (tomb->executeStep()) return std::nullopt;
    auto existing = statement(true, "SELECT 1 FROM memories WHERE content_hash = ?");
    existing->bind(1, input.contentHash);
    if (existing->executeStep()) return std::nullopt;
    vec = embedMemory(input.summary, input.details, input.topics);
    neighbours = similarNeighbours(vec, std::nullopt);  // a new row: not in the index yet
    out.similar = similarHints(input.summary, neighbours, pk, /*committedView=*/true);
    out.warnings = input.warnings;
    if (auto warning = rejectedWarning(vec, true)) out.warnings.push_back(std::move(*warning));
  } catch (const std::exception&) {
    return std::nullopt;  // the read-only connection could not answer: the synchronous path reports what fails
  }
  {
    std::unique_lock lock(pipeMutex_);
    const size_t bound = std::max(kMinQueueBound, static_cast<size_t>(options_.saveBatch));
    applierIdle_.wait(lock, [&] { return queue_.size() < bound || applierFailure_; });
    if (applierFailure_) return std::nullopt;
    uint64_t sizeBefore = 0;
    if (Status st = journalRecord(record, sizeBefore); !st) {
      return Result<SaveOutcome>(storageError(std::runtime_error(st.message()), "save"));  // not acknowledged
    }
    // The acknowledgement needs the journal and the database still at their paths (not a deleted project's files).
    if (Status st = checkFilesInPlace(); !st) {
      unjournalRecord(record, sizeBefore);
      return Result<SaveOutcome>(storageError(std::runtime_error(st.message()), "save"));  // not acknowledged
    }
    noteUncommitted(pk, record);
    queue_.push_back({record, pk, vec, neighbours});
  }
  applierWake_.notify_one();
  handedOff_ = true;
  nextPk_ = pk + 1;
  ++savesAnsweredInBackground_;
  // Published now: the next save's neighbours and every read after takeDatabase() see it.
  active_->upsert(pk, vec);
  mirrorCreatedRow(pk, record);
  out.status = "created";
  out.id = record.id;
  out.memory = createdMemory(record, pk);
  return Result<SaveOutcome>(std::move(out));
}

void MemoryStore::runApplier() {
  std::unique_lock lock(pipeMutex_);
  for (;;) {
    applierWake_.wait(lock, [&] { return applierStop_ || (!queue_.empty() && !applierFailure_); });
    if (queue_.empty() || applierFailure_) {
      if (applierStop_) return;
      continue;
    }
    QueuedSave item = std::move(queue_.front());
    queue_.pop_front();
    applierWorking_ = true;
    lock.unlock();
    std::optional<Status> failure;
    try {
      if (!batchOpen_) beginBatch();
      writeCreatedRows(item.record, item.pk, item.vec, item.neighbours);
      appliedSeq_ = item.record.seq;
      ++batchSaves_;
      if (batchSaves_ >= options_.saveBatch) commitBatch();
    } catch (const std::exception& e) {
      // The batch is rolled back whole. Its saves were acknowledged and are in the journal: the caller's thread
      // rebuilds the in-memory indexes and replays them (takeDatabase), and reports what still fails.
      failure = storageError(e, "save applied in the background");
      db_->tryExec("ROLLBACK");
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
    applierIdle_.notify_all();  // takeDatabase() waits for an empty queue, a save for room in it
  }
}

void MemoryStore::takeDatabase() {
  nextPk_.reset();  // this thread may write rows now: numbered afresh at the next hand-off
  if (!handedOff_) {
    if (replayPending_) retryReplay();
    return;
  }
  std::optional<Status> failure;
  {
    std::unique_lock lock(pipeMutex_);
    applierIdle_.wait(lock, [&] { return queue_.empty() && !applierWorking_; });
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
  reloadIndexes();
  replayPending_ = true;
  retryReplay(/*now=*/true);
}

void MemoryStore::retryReplay(bool now) {
  if (replaying_ || !journal_) return;
  if (!now && lastReplayFailure_ && std::chrono::steady_clock::now() - *lastReplayFailure_ < kReplayRetryInterval) {
    return;
  }
  try {
    replayJournalIfNeeded();
    lastReplayFailure_.reset();
  } catch (const std::exception&) {
    // Still failing: the next write reports why, and reads try again once the interval has passed since this end.
    lastReplayFailure_ = std::chrono::steady_clock::now();
  }
}

bool MemoryStore::waitForApplierIdle() {
  if (!handedOff_) return false;
  std::unique_lock lock(pipeMutex_);
  applierIdle_.wait(lock, [&] { return queue_.empty() && !applierWorking_; });
  return applierFailure_.has_value();
}

void MemoryStore::stopApplier() {
  if (!applier_.joinable()) return;
  takeDatabase();
  {
    std::lock_guard lock(pipeMutex_);
    applierStop_ = true;
  }
  applierWake_.notify_all();
  applier_.join();
}

}  // namespace memq
