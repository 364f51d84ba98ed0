// The store's value types: what opens a store (StoreOptions), what its writes answer (SaveOutcome,
// ImportOutcome), and what its reads take and return (filters, audit events, tombstones).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/embed/embedder.h"
#include "daemon/model/memory.h"

namespace memq {

// A file ref as the mirror reads it: the ref (its anchor without content) and whether memq keeps the anchor's
// version itself (a row of anchor_versions; then RecallMirror reads the content when a carry needs it).
struct MirroredFileRef {
  FileRef ref;
  bool kept = false;
};


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
  // deduped: the paths of the refs this save added (a path the memory had keeps its ref, anchor and all, as it was).
  std::vector<std::string> filesAdded;
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

// One row of a team scope's replica as the team server's journal brings it (MemoryStore::applyReplicated): the
// memory as the server holds it now (id, text, state, times; source "user"), and the journal row that named it.
struct ReplicatedChange {
  int64_t seq = 0;
  std::string at;
  std::string actor;   // the role that made the change on the server
  std::string action;  // create | hide | restore | supersede | reject | unreject | blocked_save | purge
  // As the server holds it now. When purged: the id, and when the server kept the purged memory's tombstone, that
  // tombstone (state rejected, content hash, reason, updated time; source holds the role that rejected it).
  Memory memory;
  bool purged = false;  // the server deleted the row: the replica deletes its copy, keeping any tombstone
};

// Where a replica stands in the team server's journal.
struct ReplicaMark {
  int64_t seq = 0;
  std::string at;  // the server's time of the row at `seq`, as TeamEvent::at ("" when unknown)
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

}  // namespace memq
