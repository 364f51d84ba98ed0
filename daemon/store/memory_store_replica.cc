// MemoryStore's replica writes: a team scope's rows as the team server's journal brings them, written verbatim in
// one transaction with the journal seq they reach (replica_state), the page's similar edges made in one scan of the
// active index (linkInOrder), and the mirror refreshed for the rows touched.
// The correction model is the server's; here a row only takes the state the server gave it. See memory_store.h.
#include <spdlog/spdlog.h>

#include "daemon/store/memory_store.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"

namespace memq {

MemoryStore::LinkStep MemoryStore::writeReplicatedRow(const ReplicatedChange& change) {
  const Memory& in = change.memory;
  const std::optional<int64_t> known = sql_->pkOf(in.id);
  LinkStep step;
  step.active = in.state == MemoryState::kActive;
  step.at = in.updatedAt;
  if (!known) {
    step.pk = sql_->insertMemory({std::nullopt, &in});
    saves_->notePendingText(step.pk);  // indexed with the rest of the transaction's new rows
    sql_->writeFileRefs(step.pk, in.files);
    std::vector<float> vec = embedMemory(in.summary, in.details, in.topics);
    sql_->storeEmbedding(step.pk, embedModel_, vec);
    if (step.active) step.vec = std::move(vec);
  } else {
    step.pk = *known;
    // The server never changes a memory's text, only its state: that is all a known row takes.
    sql_->setState(step.pk, in.state, in.stateReason, in.updatedAt);
    if (in.state == MemoryState::kSuperseded && in.supersededBy) {
      sql_->setSuperseded(step.pk, *in.supersededBy, in.updatedAt);
    }
    if (step.active) step.vec = sql_->loadVector(step.pk, embedModel_).value_or(std::vector<float>{});
  }
  if (in.state == MemoryState::kRejected) {
    sql_->upsertTombstone({in.contentHash, in.id, in.stateReason.value_or(""), "team:" + change.actor, in.updatedAt});
  } else {
    sql_->deleteTombstone(in.contentHash);  // an unreject on the server takes the tombstone back
  }
  nlohmann::json detail = {{"team_seq", change.seq}, {"state", stateName(in.state)}};
  sql_->appendEvent(change.at.empty() ? in.updatedAt : change.at, in.id, change.action, "team:" + change.actor,
                    detail);
  return step;
}

std::optional<int64_t> MemoryStore::purgeReplicatedRow(const ReplicatedChange& change) {
  const Memory& tomb = change.memory;
  if (tomb.state == MemoryState::kRejected && !tomb.contentHash.empty()) {
    // The tombstone the server kept (its fields in the memory's, the rejecting role as source: replicatedChange):
    // a replica that never held the row gets it here, since the journal rows that rejected it now bring no memory.
    sql_->upsertTombstone(
        {tomb.contentHash, tomb.id, tomb.stateReason.value_or(""), "team:" + tomb.source, tomb.updatedAt});
  }
  const std::optional<int64_t> pk = sql_->pkOf(change.memory.id);
  if (!pk) return std::nullopt;  // never held here (created and purged before this replica caught up)
  // As a local purge: the row and its events' details go, the tombstone stays.
  sql_->purgeRow(*pk, change.memory.id);
  sql_->appendEvent(change.at, change.memory.id, "purge", "team:" + change.actor,
                    {{"team_seq", change.seq}});
  return pk;
}

Result<std::vector<ReplicatedChange>> MemoryStore::applyReplicated(std::vector<ReplicatedChange> changes) {
  MEMQ_RETURN_IF_ERROR(readyToWrite("replicate"));
  std::vector<ReplicatedChange> applied;
  // The rows written, with the state they now have (nullopt: purged, gone from every index).
  std::vector<std::pair<int64_t, std::optional<MemoryState>>> touched;
  try {
    StoreSql::WriteTransaction tx(*sql_);
    // Read under the write lock: another connection to the file (a second memqd of this data dir) may have applied
    // the page while this one waited for the lock.
    const int64_t from = sql_->replicaSeq();
    int64_t last = from;
    std::string lastAt;
    std::vector<LinkStep> steps;
    for (auto& c : changes) {
      if (c.seq <= last) continue;  // applied already (by another thread, or a replay of the same page)
      last = c.seq;
      lastAt = c.at;
      if (c.memory.id.empty()) continue;  // a journal row with no memory to hold: only the seq moves on
      if (c.purged) {
        if (auto pk = purgeReplicatedRow(c)) {
          touched.emplace_back(*pk, std::nullopt);
          steps.push_back(LinkStep{*pk, false, true, {}, {}});
          applied.push_back(std::move(c));
        }
        continue;
      }
      c.memory.scope = scope();
      steps.push_back(writeReplicatedRow(c));
      touched.emplace_back(steps.back().pk, c.memory.state);
      applied.push_back(std::move(c));
    }
    if (last == from) return applied;
    // A page's similar edges in one scan of the active index: one scan per row made catching up with a large team
    // take minutes (every row read the whole index's codes from memory).
    linkInOrder(steps);
    sql_->setReplicaSeq(last, lastAt);
    saves_->indexPendingText();
    tx.commit();
  } catch (const std::exception& e) {
    saves_->dropPendingText();
    return storageError(e, "replicate");
  }
  for (const auto& [pk, state] : touched) {
    mirror_->active().remove(pk);
    mirror_->rejected().remove(pk);
    if (state == MemoryState::kActive || state == MemoryState::kRejected) {
      try {
        if (auto vec = sql_->loadVector(pk, embedModel_)) {
          (*state == MemoryState::kActive ? mirror_->active() : mirror_->rejected()).upsert(pk, *vec);
        }
      } catch (const std::exception&) {
        mirror_->reload();  // the indexes are rebuilt from the committed rows
      }
    }
    mirror_->refreshRow(pk);
  }
  return applied;
}

SaveOutcome MemoryStore::adviceForCreated(const std::string& id) {
  SaveOutcome out;
  takeDatabase();
  try {
    const std::optional<int64_t> pk = sql_->pkOf(id);
    if (!pk) return out;
    const auto vec = sql_->loadVector(*pk, embedModel_);
    auto row = sql_->idAndSummary(*pk, /*activeOnly=*/true);
    if (!vec || !row) return out;
    out.similar = similarHints(row->second, similarNeighbours(*vec, *pk), *pk);
    if (auto warning = rejectedWarning(*vec, *sql_)) out.warnings.push_back(std::move(*warning));
  } catch (const std::exception& e) {
    spdlog::warn("similar hints of {} left out: {}", id, e.what());
  }
  return out;
}

Result<ReplicaMark> MemoryStore::replicaMark() {
  takeDatabase();
  try {
    return ReplicaMark{sql_->replicaSeq(), sql_->replicaAppliedAt()};
  } catch (const std::exception& e) {
    return storageError(e, "replica mark");
  }
}

Status MemoryStore::resetReplica() {
  MEMQ_RETURN_IF_ERROR(readyToWrite("reset the replica"));
  try {
    StoreSql::WriteTransaction tx(*sql_);
    sql_->clearReplica();
    tx.commit();
  } catch (const std::exception& e) {
    return storageError(e, "reset the replica");
  }
  mirror_->reload();
  return Status::ok();
}

Result<int64_t> MemoryStore::replicaSeq() {
  takeDatabase();
  try {
    return sql_->replicaSeq();
  } catch (const std::exception& e) {
    return storageError(e, "replica seq");
  }
}

}  // namespace memq
