// MemoryStore: opening and closing a store, its files at their paths, and the correction model's writes other than
// saves and imports (update, the state changes, pins, file refs, usage) with their audit events. Saves are in
// memory_store_saves.cc, reads and recall in memory_store_reads.cc, imports in memory_store_import.cc. See
// memory_store.h for the invariants.
#include "daemon/store/memory_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "daemon/embed/hashbag.h"
#include "daemon/model/content_hash.h"
#include "daemon/store/database.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"
#include "daemon/util/clock.h"

namespace memq {

namespace {

// markUsed writes its pending usage inline once this many rows wait (see markUsed).
constexpr size_t kMaxPendingUsageRows = 4096;

// A change's files as its audit event records them: as replies write them (an anchored ref with its lines).
nlohmann::json filesJson(const std::vector<FileRef>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) out.push_back(fileRefToJson(f));
  return out;
}

// {path: blob id or null}: the versions a memory's refs were recorded at (their staleness).
nlohmann::json blobIdsJson(const std::vector<FileRef>& files) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : files) out[f.path] = f.blobId ? nlohmann::json(*f.blobId) : nlohmann::json();
  return out;
}

Status stateConflict(const Memory& m, const std::string& wanted) {
  return Status(ErrorCode::kConflict,
                "memory " + m.id + " is " + std::string(stateName(m.state)) + "; cannot " + wanted + " it",
                nlohmann::json{{"id", m.id}, {"state", stateName(m.state)}});
}

Status notFound(const std::string& id, const std::string& scope) {
  return Status::notFound("no memory with id " + id + " in the " + scope + " scope");
}

}  // namespace

MemoryStore::MemoryStore(StoreOptions options) : options_(std::move(options)) {}

MemoryStore::~MemoryStore() {
  if (!sql_) return;
  if (saves_) {
    saves_->stopApplier();
    // Saves still in a batch are committed; if that fails they stay in the journal, and the next open applies them.
    // A retired store committed (or rolled back) its batch when it retired.
    if (saves_->hasOpenBatch() && !retired_) (void)commitPendingSaves();
  }
  // The uses recall recorded since the last flush; a failure only loses telemetry.
  if (!retired_ && !pendingUsage_.empty()) (void)flushUsage();
  // Statistics for the query planner, written at close; not into a file that answered an error (it may be damaged,
  // and memq never writes to a damaged file what it does not have to), nor into one that is no longer at its path.
  // Nor by a store that only read: the process writing the file does both when it closes it, and a checkpoint here
  // would wait for that process's open batch (and hold its next writes back meanwhile).
  const bool wrote = !saves_ || !saves_->writesElsewhere();
  if (!sawStorageError_ && !retired_ && wrote) sql_->optimize();
  // The WAL folded into the database file, so the file holds everything once closed (database.h).
  if (!sawStorageError_ && !retired_ && wrote) sql_->checkpointForClose();
}

Result<std::unique_ptr<MemoryStore>> MemoryStore::open(StoreOptions options) {
  if (options.embedder == nullptr) return Status::internal("MemoryStore needs an embedder");
  std::unique_ptr<MemoryStore> store(new MemoryStore(std::move(options)));
  const StoreOptions& o = store->options_;
  store->embedModel_ = std::string(o.embedder->model());
  FileIdentity identity;
  const std::string writerLock = o.path == ":memory:" ? std::string() : journalPath(o.path);
  auto db = openDatabase({o.path, o.maxSchemaVersion, &identity, writerLock});
  if (!db) return db.status();
  if (o.path != ":memory:") store->databaseIdentity_ = identity;
  installCheckpointGuard(**db, kCheckpointGuardFrames);
  store->sql_ = std::make_unique<StoreSql>(std::move(*db), o.scope);
  try {
    store->sql_->countOwnChanges();
  } catch (const std::exception& e) {
    // Not counted: the mirror then rebuilds after every commit of another connection, as without 0011.
    spdlog::warn("memq: {} database {}: own changes not counted: {}", o.scope, o.path, e.what());
  }
  store->mirror_ = std::make_unique<RecallMirror>(*store->sql_, *o.embedder, o.path, store->pendingUsage_);
  if (Status st = store->mirror_->load(); !st) {
    store->sawStorageError_ = true;
    return Status(st.code(), st.message() + " (" + o.scope + " database " + o.path + ")",
                  nlohmann::json{{"scope", o.scope}, {"path", o.path}});
  }
  SaveTarget& target = *store;  // a private base: converted here, where it is accessible
  store->saves_ = std::make_unique<SavePipeline>(store->options_, *store->sql_, target);
  MEMQ_RETURN_IF_ERROR(store->saves_->open());
  store->mirror_->followAnotherWriter(store->saves_->writesElsewhere());
  return store;
}

std::string MemoryStore::now() const { return options_.clock ? options_.clock() : isoNow(); }

Status MemoryStore::storageError(const std::exception& e, const std::string& context) const {
  sawStorageError_ = true;
  return memq::storageError(e, context, options_.scope, options_.path);
}

Status MemoryStore::storageError(const Status& cause, const std::string& context) const {
  sawStorageError_ = true;
  const std::string message = context.empty() ? cause.message() : context + ": " + cause.message();
  return Status(ErrorCode::kStorageError, message + " (" + options_.scope + " database " + options_.path + ")",
                nlohmann::json{{"scope", options_.scope}, {"path", options_.path}});
}

bool MemoryStore::databaseInPlace() const {
  return !databaseIdentity_ || fileIdentityAt(options_.path) == databaseIdentity_;
}

Status MemoryStore::checkFilesInPlace() const {
  const char* moved = nullptr;
  const std::optional<FileIdentity> journalIdentity = saves_ ? saves_->journalIdentity() : std::nullopt;
  if (!databaseInPlace()) {
    moved = "database file";
  } else if (journalIdentity && fileIdentityAt(journalPath(options_.path)) != journalIdentity) {
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
  saves_->stopApplier();  // the connection back, every queued save written into the open batch
  const std::optional<FileIdentity> journalIdentity = saves_->journalIdentity();
  const bool journalInPlace = journalIdentity && fileIdentityAt(journalPath(options_.path)) == journalIdentity;
  std::string fate = saves_->retire(databaseInPlace(), journalInPlace);
  retired_ = true;
  return fate;
}

void MemoryStore::takeDatabase() { saves_->takeDatabase(); }
bool MemoryStore::hasPendingSaves() const { return saves_->hasPendingSaves(); }
bool MemoryStore::hasOpenBatch() const { return saves_->hasOpenBatch(); }
size_t MemoryStore::replayedSaves() const { return saves_->replayedSaves(); }
bool MemoryStore::writesElsewhere() const { return saves_->writesElsewhere(); }
size_t MemoryStore::savesAnsweredInBackground() const { return saves_->savesAnsweredInBackground(); }
std::optional<std::string> MemoryStore::unappliedSavesWarning() const {
  return saves_->unappliedSavesWarning(options_.scope);
}

Status MemoryStore::commitPendingSaves() {
  if (retired_) return writable();
  return saves_->commitPendingSaves();
}

Result<bool> MemoryStore::commitPendingSavesIfIdle(std::chrono::milliseconds idle) {
  if (retired_) return writable();
  return saves_->commitPendingSavesIfIdle(idle);
}

Status MemoryStore::checkpoint() {
  if (retired_) return Status::ok();  // a store that retired writes nothing more (invariant 8)
  // A store that only reads takes the journal over as soon as the other process lets it go (closed, or killed with
  // acknowledged saves in it), not only at the next write.
  if (saves_->writesElsewhere()) (void)claimWrites();
  // Saves are being applied in the background: the applier's commits checkpoint a WAL that grows
  // (installCheckpointGuard), and waiting for it here would stall the stream.
  if (saves_->handedOff()) return Status::ok();
  try {
    // A batch open for long would keep its pages out of the checkpoint.
    if (Status st = saves_->settle(); !st) return storageError(st, "checkpoint");
    writePendingUsage();
    sql_->checkpointPassive();
    return Status::ok();
  } catch (const std::exception& e) {
    return storageError(e, "checkpoint");
  }
}

Status MemoryStore::claimWrites() {
  if (Status st = writable(); !st) return st;  // never into a file removed or replaced since open
  if (!saves_->writesElsewhere()) return Status::ok();
  Status st = saves_->claimWrites();  // never beside another process's saves
  if (!saves_->writesElsewhere()) {
    // Taken over: the rows are read again before this store writes. While it followed, the other process's use
    // counts were no change to its mirror (RecallMirror), and as the writer it never sees another's commit again.
    mirror_->markStale();
  }
  mirror_->followAnotherWriter(saves_->writesElsewhere());
  return st;
}

Status MemoryStore::readyToWrite(const std::string& action) {
  MEMQ_RETURN_IF_ERROR(claimWrites());
  takeDatabase();  // saves handed to the background applier are written first
  // Saves held in a batch are committed first (StoreOptions::saveBatch).
  if (Status st = saves_->settle(); !st) return storageError(st, action);
  try {
    writePendingUsage();
  } catch (const std::exception& e) {
    return storageError(e, action);
  }
  return Status::ok();
}

void MemoryStore::writePendingUsage() {
  if (pendingUsage_.empty()) return;
  StoreSql::WriteTransaction tx(*sql_);
  sql_->addUses(pendingUsage_.uses());
  tx.commit();
  pendingUsage_.clear();  // only once written: a failed write keeps them for the next flush
}

Status MemoryStore::flushUsage() {
  // A store that only reads (another process writes the database) keeps no uses to write, and no batch.
  if (saves_->writesElsewhere() && pendingUsage_.empty()) return Status::ok();
  return readyToWrite("record usage");
}

void MemoryStore::appendEvent(const std::string& memoryId, const std::string& action, const Actor& actor,
                              const nlohmann::json& detail, const std::optional<std::string>& at) {
  sql_->appendEvent(at ? *at : now(), memoryId, action, actor.toString(), detail);
}

void MemoryStore::reloadIndexes() { mirror_->reload(); }
void MemoryStore::beginReadPass() { mirror_->beginReadPass(); }
void MemoryStore::endReadPass() { mirror_->endReadPass(); }
Status MemoryStore::reloadIndexesIfStale() { return mirror_->reloadIfStale(); }
bool MemoryStore::indexesInUse() const { return mirror_->scanInFlight(); }

Result<Memory> MemoryStore::update(const std::string& id, const UpdateInput& input, const Actor& actor,
                                   std::vector<std::string>* warnings) {
  MEMQ_RETURN_IF_ERROR(readyToWrite("update"));
  try {
    auto current = get(id);
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
    if (input.files) {
      // In the order a memory's refs are read back (by path), so that the same files in another order are no change.
      after.files = *input.files;
      std::stable_sort(after.files.begin(), after.files.end(),
                       [](const FileRef& a, const FileRef& b) { return a.path < b.path; });
    }
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
    // Files named again are recorded at the versions they have now: a ref that went stale is current again.
    if (input.files) diff("blob_ids", blobIdsJson(before.files), blobIdsJson(after.files));
    diff("pinned", before.pinned, after.pinned);
    if (changes.empty()) return before;

    const bool textChanged = changes.contains("summary") || changes.contains("details") || changes.contains("topics");
    std::vector<float> vec;
    {
      StoreSql::WriteTransaction tx(*sql_);
      if (after.contentHash != before.contentHash) {
        if (before.state == MemoryState::kRejected) {
          // Its tombstone holds the text that was rejected: a new text would leave that tombstone behind and let
          // this one be saved again once the row is purged, so a rejected memory's text does not change.
          return Status(ErrorCode::kConflict,
                        "memory " + before.id + " is rejected: its text cannot change (unreject it first, or save "
                        "the corrected text as a new memory)",
                        nlohmann::json{{"id", before.id}, {"state", "rejected"}});
        }
        if (auto other = sql_->otherWithContent(after.contentHash, before.pk)) {
          return Status(ErrorCode::kConflict, "memory " + *other + " already has this content",
                        nlohmann::json{{"conflicts_with", *other}});
        }
        if (auto tomb = sql_->tombstoneIdAndReason(after.contentHash)) {
          return Status(ErrorCode::kConflict, "this content was rejected: " + tomb->second,
                        nlohmann::json{{"reason", tomb->second}});
        }
      }
      sql_->updateContent(after, now());
      if (input.files) {
        sql_->deleteFileRefs(before.pk);
        sql_->writeFileRefs(before.pk, *input.files);
      }
      if (textChanged) {
        vec = embedMemory(after.summary, after.details, after.topics);
        sql_->storeEmbedding(before.pk, embedModel_, vec);
        if (before.state == MemoryState::kActive) {
          // Edges describe the old text; recompute them against the new one.
          sql_->unlinkSimilar(before.pk);
          linkSimilar(before.pk, vec, now());
        }
      }
      appendEvent(before.id, "update", actor, changes);
      tx.commit();
    }
    if (textChanged) {
      if (before.state == MemoryState::kActive) mirror_->active().upsert(before.pk, vec);
      if (before.state == MemoryState::kRejected) mirror_->rejected().upsert(before.pk, vec);
    }
    mirror_->refreshRow(before.pk);
    return get(before.id);
  } catch (const std::exception& e) {
    return storageError(e, "update");
  }
}

Result<Memory> MemoryStore::changeState(const std::string& id, MemoryState from1, std::optional<MemoryState> from2,
                                        MemoryState to, const std::string& action, const Actor& actor,
                                        const std::optional<std::string>& reason) {
  MEMQ_RETURN_IF_ERROR(readyToWrite(action));
  try {
    auto current = get(id);
    if (!current) return current.status();
    Memory m = *current;
    if (m.state == to && to != MemoryState::kActive) return m;  // idempotent: no change, no event
    if (m.state != from1 && (!from2 || m.state != *from2)) {
      if (m.state == to) return m;
      return stateConflict(m, action);
    }
    std::optional<std::vector<float>> vec;
    {
      StoreSql::WriteTransaction tx(*sql_);
      sql_->setState(m.pk, to, to == MemoryState::kActive ? std::nullopt : reason, now());
      nlohmann::json detail = {{"from", stateName(m.state)}, {"to", stateName(to)}};
      if (reason) detail["reason"] = *reason;
      if (m.supersededBy) detail["superseded_by"] = *m.supersededBy;
      if (to == MemoryState::kActive) {
        vec = sql_->loadVector(m.pk, embedModel_);
        if (!vec) {
          vec = embedMemory(m.summary, m.details, m.topics);
          sql_->storeEmbedding(m.pk, embedModel_, *vec);
        }
        linkSimilar(m.pk, *vec, now());
      } else {
        sql_->unlinkSimilar(m.pk);
      }
      if (to == MemoryState::kRejected) {
        sql_->upsertTombstone({m.contentHash, m.id, reason.value_or(""), actor.toString(), now()});
        vec = sql_->loadVector(m.pk, embedModel_);
      }
      if (m.state == MemoryState::kRejected) sql_->deleteTombstone(m.contentHash);
      appendEvent(m.id, action, actor, detail);
      tx.commit();
    }
    mirror_->active().remove(m.pk);
    mirror_->rejected().remove(m.pk);
    if (to == MemoryState::kActive && vec) mirror_->active().upsert(m.pk, *vec);
    if (to == MemoryState::kRejected && vec) mirror_->rejected().upsert(m.pk, *vec);
    mirror_->refreshRow(m.pk, /*textChanged=*/false);
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
  auto m = get(id);
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
  const char* action = pinned ? "pin" : "unpin";
  MEMQ_RETURN_IF_ERROR(readyToWrite(action));
  try {
    auto m = get(id);
    if (!m) return m.status();
    if (m->pinned == pinned) return *m;
    StoreSql::WriteTransaction tx(*sql_);
    sql_->setPinned(m->pk, pinned, now());
    appendEvent(m->id, action, actor, nlohmann::json::object());
    tx.commit();
    mirror_->refreshRow(m->pk, /*textChanged=*/false);  // recall ranks by the mirror's pin
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, action);
  }
}

Result<std::pair<Memory, Memory>> MemoryStore::supersede(const std::string& oldId, const std::string& byId,
                                                         const Actor& actor) {
  MEMQ_RETURN_IF_ERROR(readyToWrite("supersede"));
  try {
    if (oldId == byId) return Status::invalidField("by", "a memory cannot supersede itself");
    auto oldM = get(oldId);
    if (!oldM) return oldM.status();
    auto byM = get(byId);
    if (!byM) return Status(ErrorCode::kNotFound, "replacement memory " + byId + " not found in the " + scope() +
                                                      " scope", nlohmann::json{{"field", "by"}});
    if (byM->state != MemoryState::kActive) {
      return Status(ErrorCode::kConflict,
                    "replacement " + byId + " is " + std::string(stateName(byM->state)) + "; it must be active",
                    nlohmann::json{{"field", "by"}, {"id", byId}, {"state", stateName(byM->state)}});
    }
    if (oldM->state == MemoryState::kSuperseded && oldM->supersededBy == byId) return std::pair{*oldM, *byM};
    if (oldM->state != MemoryState::kActive && oldM->state != MemoryState::kHidden) {
      return stateConflict(*oldM, "supersede");
    }
    {
      StoreSql::WriteTransaction tx(*sql_);
      sql_->setSuperseded(oldM->pk, byId, now());
      sql_->unlinkSimilar(oldM->pk);
      sql_->writeSupersedesEdge(byM->pk, oldM->pk, now());
      appendEvent(oldM->id, "supersede", actor,
                  {{"from", stateName(oldM->state)}, {"to", "superseded"}, {"superseded_by", byId}});
      tx.commit();
    }
    mirror_->active().remove(oldM->pk);
    mirror_->refreshRow(oldM->pk, /*textChanged=*/false);
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
  auto m = get(id);
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
  auto m = get(id);
  if (!m) return m.status();
  if (m->state != MemoryState::kRejected) return stateConflict(*m, "unreject");
  return changeState(id, MemoryState::kRejected, std::nullopt, MemoryState::kActive, "unreject", actor, std::nullopt);
}

Status MemoryStore::purge(const std::string& id, bool confirm, const Actor& actor) {
  if (Status st = writable(); !st) return st;  // a retired store refuses before anything else is checked
  if (!confirm) {
    return Status(ErrorCode::kForbidden, "purge deletes for good; pass confirm: true", nlohmann::json{{"field", "confirm"}});
  }
  MEMQ_RETURN_IF_ERROR(readyToWrite("purge"));
  try {
    auto m = get(id);
    if (!m) return m.status();
    // A memory superseded by this one would point at nothing: its export could not be imported, and a save of its
    // text would name a replacement no method finds. Restored first, it stands on its own.
    if (auto dependent = sql_->supersededBy(m->id)) {
      return Status(ErrorCode::kConflict,
                    "memory " + *dependent + " is superseded by " + m->id + "; restore it before purging " + m->id,
                    nlohmann::json{{"id", *dependent}, {"state", "superseded"}});
    }
    {
      StoreSql::WriteTransaction tx(*sql_);
      // The one sanctioned rewrite of the journal: the memory's events are scrubbed, then its row deleted.
      sql_->purgeRow(m->pk, m->id);
      appendEvent(m->id, "purge", actor,
                  {{"from", stateName(m->state)}, {"tombstone_kept", m->state == MemoryState::kRejected}});
      tx.commit();
    }
    mirror_->active().remove(m->pk);
    mirror_->rejected().remove(m->pk);
    mirror_->refreshRow(m->pk);
    return Status::ok();
  } catch (const std::exception& e) {
    return storageError(e, "purge");
  }
}

Result<Memory> MemoryStore::attach(const std::string& id, const std::vector<FileRef>& files, const Actor& actor) {
  MEMQ_RETURN_IF_ERROR(readyToWrite("attach"));
  try {
    auto m = get(id);
    if (!m) return m.status();
    std::unordered_set<std::string> have;
    for (const auto& f : m->files) have.insert(f.path);
    std::vector<FileRef> toWrite;  // new paths, and anchors for paths the memory already has
    size_t added = 0;
    for (const auto& f : files) {
      if (have.insert(f.path).second) {
        toWrite.push_back(f);
        ++added;
      } else if (f.anchor) {
        toWrite.push_back(f);
      }
    }
    if (toWrite.empty()) return *m;
    if (m->files.size() + added > kMaxFiles) {
      return Status::invalidField("files", "a memory holds at most " + std::to_string(kMaxFiles) + " files (" +
                                               std::to_string(m->files.size()) + " already attached)");
    }
    StoreSql::WriteTransaction tx(*sql_);
    const std::vector<std::string> written = sql_->writeFileRefs(m->pk, toWrite, static_cast<size_t>(-1),
                                                                 /*reanchor=*/true);
    if (written.empty()) return *m;  // every anchor given was the one the memory has
    std::vector<FileRef> writtenRefs;
    for (const auto& f : toWrite) {
      if (std::find(written.begin(), written.end(), f.path) != written.end()) writtenRefs.push_back(f);
    }
    sql_->touch(m->pk, now());
    appendEvent(m->id, "attach", actor, {{"files", filesJson(writtenRefs)}});
    tx.commit();
    mirror_->refreshRow(m->pk, /*textChanged=*/false);
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, "attach");
  }
}

Result<Memory> MemoryStore::detach(const std::string& id, const std::vector<std::string>& paths, const Actor& actor) {
  MEMQ_RETURN_IF_ERROR(readyToWrite("detach"));
  try {
    auto m = get(id);
    if (!m) return m.status();
    StoreSql::WriteTransaction tx(*sql_);
    const std::vector<std::string> removed = sql_->deleteFileRefs(m->pk, paths);
    if (removed.empty()) return *m;
    sql_->touch(m->pk, now());
    appendEvent(m->id, "detach", actor, {{"files", removed}});
    tx.commit();
    mirror_->refreshRow(m->pk, /*textChanged=*/false);
    return get(id);
  } catch (const std::exception& e) {
    return storageError(e, "detach");
  }
}

Status MemoryStore::markUsed(const std::vector<int64_t>& pks) {
  if (Status st = writable(); !st) return st;  // a retired store refuses even an empty list
  // Uses are advisory: a store that only reads (another process writes the database) does not record them.
  if (pks.empty() || saves_->writesElsewhere()) return Status::ok();
  const std::string at = now();
  pendingUsage_.add(pks, at);
  mirror_->markUsed(pks, at);
  // A bound on what a crash can lose and on the flush's transaction; recall alone never comes near it between two
  // housekeeping ticks.
  if (pendingUsage_.size() >= kMaxPendingUsageRows) return flushUsage();
  return Status::ok();
}

Result<Memory> MemoryStore::get(const std::string& id) {
  takeDatabase();  // saves handed to the background applier are written first
  try {
    auto m = sql_->memoryById(id);
    if (!m) return notFound(id, scope());
    pendingUsage_.overlay(*m);
    return std::move(*m);
  } catch (const std::exception& e) {
    return storageError(e);
  }
}

}  // namespace memq
