// MemoryStore's imports: an ImportBatch written in one transaction — tombstones first, then each memory restored
// verbatim, with one `import` event per tombstone written and per memory created — or, on a refusal or an error,
// nothing (the in-memory indexes rebuilt if they took rows of it). See ImportBatch in store_types.h. The global scope
// also refuses a memory with anchored refs (lines), as a global save does.
#include <algorithm>

#include "daemon/store/memory_store.h"
#include "daemon/store/recall_mirror.h"
#include "daemon/store/save_pipeline.h"
#include "daemon/store/store_sql.h"

namespace memq {

Result<ImportOutcome> MemoryStore::importBatch(const ImportBatch& batch, const Actor& actor) {
  MEMQ_RETURN_IF_ERROR(claimWrites());
  takeDatabase();  // saves handed to the background applier are written first
  ImportOutcome out;
  bool published = false;  // the in-memory indexes hold rows of the open transaction
  std::vector<int64_t> createdPks;
  try {
    // Saves held in a batch are committed first (StoreOptions::saveBatch).
    if (Status st = saves_->settle(); !st) {
      saves_->dropPendingText();
      return storageError(st, "import");
    }
    StoreSql::WriteTransaction tx(*sql_);
    for (const auto& item : batch.tombstones) {
      const Tombstone& t = item.tombstone;
      if (auto holder = sql_->unrejectedHolder(t.contentHash)) {
        const auto& [id, state] = *holder;
        out.refusal = ImportRefusal{item.line, "content_hash",
                                    "a tombstone for the content of memory " + id + ", which is " + state + " in the " +
                                        scope() + " scope and would stay " + state +
                                        " while its text is refused: reject or purge that memory first, or leave "
                                        "this line out"};
        break;
      }
      if (sql_->insertTombstoneIfAbsent(t)) {
        ++out.tombstones;
        appendEvent(t.memoryId, "import", actor, {{"tombstone", true}, {"content_hash", t.contentHash}});
      }
    }
    std::vector<const ImportedMemory*> superseded;  // created memories naming a replacement
    for (const auto& item : batch.memories) {
      if (out.refusal) break;
      const Memory& in = item.memory;
      if (scope() == "global") {
        // Refused as a global save refuses them (anchorFileRefs): lines are anchored in a project's files, and the
        // global scope has no work tree for them to follow. Checked before the dedup below, so such a line is refused
        // whether or not its text is here already.
        auto anchored = std::find_if(in.files.begin(), in.files.end(),
                                     [](const FileRef& f) { return f.anchor.has_value(); });
        if (anchored != in.files.end()) {
          out.refusal = ImportRefusal{
              item.line, "files[" + std::to_string(anchored - in.files.begin()) + "].lines",
              "lines are anchored in a project's files; the global scope has no work tree to read them from"};
          break;
        }
      }
      if (auto existingHash = sql_->contentHashOfId(in.id)) {
        if (*existingHash != in.contentHash) {
          out.refusal = ImportRefusal{item.line, "id",
                                      "memory " + in.id + " already exists in the " + scope() +
                                          " scope with other content"};
          break;
        }
        ++out.deduped;  // this very memory, already here (an import run again)
        continue;
      }
      if (in.state != MemoryState::kRejected && sql_->hasTombstone(in.contentHash)) {
        ++out.rejected;
        continue;
      }
      if (sql_->contentExists(in.contentHash)) {
        ++out.deduped;
        continue;
      }
      const int64_t pk = sql_->insertMemory({std::nullopt, &in});
      saves_->notePendingText(pk);  // the full-text lanes take every created row at once, below
      sql_->writeFileRefs(pk, in.files);
      auto vec = embedMemory(in.summary, in.details, in.topics);
      sql_->storeEmbedding(pk, embedModel_, vec);
      if (in.state == MemoryState::kActive) linkSimilar(pk, vec, now());
      if (in.state == MemoryState::kRejected) {
        sql_->insertTombstoneIfAbsent(
            {in.contentHash, in.id, in.stateReason.value_or("imported as rejected"), actor.toString(), in.updatedAt});
      }
      appendEvent(in.id, "import", actor, {{"state", stateName(in.state)}, {"content_hash", in.contentHash}});
      // Into the vector indexes at once, so that the memories imported after this one link to it as they would
      // had they been saved one by one; rebuilt from the committed rows if the import does not commit.
      if (in.state == MemoryState::kActive) mirror_->active().upsert(pk, vec);
      if (in.state == MemoryState::kRejected) mirror_->rejected().upsert(pk, vec);
      published = published || in.state == MemoryState::kActive || in.state == MemoryState::kRejected;
      createdPks.push_back(pk);
      if (in.supersededBy) superseded.push_back(&item);
      ++out.created;
    }
    for (const ImportedMemory* item : superseded) {
      if (out.refusal) break;
      if (!sql_->pkOf(*item->memory.supersededBy)) {
        out.refusal = ImportRefusal{item->line, "superseded_by",
                                    "memory " + *item->memory.supersededBy + " is neither in the " + scope() +
                                        " scope nor created by this import"};
      }
    }
    if (!out.refusal) {
      saves_->indexPendingText();
      tx.commit();
    }
  } catch (const std::exception& e) {
    // The transaction is rolled back by now (its destructor ran while the exception left the try block).
    saves_->dropPendingText();
    if (published) mirror_->reload();
    return storageError(e, "import");
  }
  if (out.refusal) {
    saves_->dropPendingText();
    if (published) mirror_->reload();
    return ImportOutcome{.refusal = out.refusal};
  }
  for (int64_t pk : createdPks) mirror_->refreshRow(pk);
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

}  // namespace memq
