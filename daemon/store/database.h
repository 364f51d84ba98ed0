// Opening one scope's SQLite file: directories 0700, files 0600, the reference's PRAGMAs, and the embedded
// migrations applied in one transaction. The only place that knows how a memq database file comes to be.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <string>

#include "protocol/status.h"

namespace memq {

struct DatabaseOptions {
  std::string path;           // file path, or ":memory:"
  int maxSchemaVersion = -1;  // apply migrations up to this version only (tests of upgrades); -1 = all
};

// Opens (creating when missing) and migrates. A database written by a newer schema is refused with a clear
// StorageError rather than being touched.
Result<std::unique_ptr<SQLite::Database>> openDatabase(const DatabaseOptions& options);

// Takes WAL checkpoints off the commit path: replaces SQLite's auto-checkpoint (which copies the WAL back into the
// database, with two fsyncs, on whichever commit crosses 1000 frames) by a guard that checkpoints inline (PASSIVE)
// only once the WAL holds `guardFrames` frames. The owner checkpoints periodically (MemoryStore::checkpoint).
// Durability is unchanged: every commit is in the WAL before it is acknowledged (journal_mode=WAL,
// synchronous=NORMAL survives a killed process; only a power loss can take the last commits).
void installCheckpointGuard(SQLite::Database& db, int guardFrames);
inline constexpr int kCheckpointGuardFrames = 8192;  // 32 MiB of 4 KiB pages

// The schema version recorded in the database (0 for an empty file).
int schemaVersion(SQLite::Database& db);
// The highest migration compiled into this binary.
int latestSchemaVersion();

// Creates `dir` and missing parents with mode 0700.
Status makePrivateDirectories(const std::string& dir);

// The one translation of SQLite exceptions into memq's error path.
Status storageError(const std::exception& e, const std::string& context = "");
// The same, for a failure inside one scope's database: the message and data ({scope, path}) name the scope and its
// file, so a client (and the log) can tell which database is broken while the others keep working.
Status storageError(const std::exception& e, const std::string& context, const std::string& scope,
                    const std::string& path);

}  // namespace memq
