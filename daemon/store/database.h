// Opening one scope's SQLite file: directories 0700, files 0600, the reference's PRAGMAs, and the embedded
// migrations applied in one transaction. The only place that knows how a memq database file comes to be, and what
// memqd accepts as its own: the directory and every file beside the database (`-wal`, `-shm`, the save journal)
// must be memqd's user's, writable by no one else, and not a symbolic link (checked without following one, so no
// symlink's target is ever created, opened or chmodded).
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "daemon/store/file_identity.h"
#include "protocol/status.h"

namespace memq {

struct DatabaseOptions {
  std::string path;           // file path, or ":memory:"
  int maxSchemaVersion = -1;  // apply migrations up to this version only (tests of upgrades); -1 = all
  FileIdentity* identity = nullptr;  // when set (a file database): receives the identity of the file opened
  // When set: a file on which a process holding an exclusive flock is the database's writer (the save journal). An
  // upgrade holds that lock while it migrates, and is refused with Conflict, the file left as it was, while another
  // process holds it: that process reads and writes by the schema it opened.
  std::string writerLockPath;
};

// Opens (creating when missing) and migrates, with foreign keys off during the migrations and on afterwards. Before
// the migrations commit, rows naming a missing parent are deleted from the tables that are nothing without it
// (vectors, file refs, edges, the co-change cache), with a warning; in any other table they refuse the upgrade with
// a StorageError naming the table, leaving the file as it was. A database written by a newer schema is refused with
// a clear StorageError rather than being touched. A directory or file memqd must not trust (see above, and
// checkOwnedDirectory / claimPrivateFile) is refused with ScopeUnavailable naming it, before SQLite opens anything.
Result<std::unique_ptr<SQLite::Database>> openDatabase(const DatabaseOptions& options);

// Refuses `dir` unless it is a directory (not a symlink) owned by memqd's user that neither group nor others may
// write: then no one else can plant, rename or replace a file in it between a check and an open. ScopeUnavailable.
Status checkOwnedDirectory(const std::string& dir);

// Claims the file at `path` as one of memqd's private files, never following a symlink: a file that is there must
// be a regular file owned by memqd's user that neither group nor others may write (else ScopeUnavailable naming
// it), and loses group's and others' bits, its owner's kept as they were (0644 becomes 0600, 0444 becomes 0400: never
// made writable); a missing one is created 0600 when `create`. Returns the file's identity, or nullopt when it is
// missing and not created.
Result<std::optional<FileIdentity>> claimPrivateFile(const std::string& path, bool create);

// Takes WAL checkpoints off the commit path: replaces SQLite's auto-checkpoint (which copies the WAL back into the
// database, with two fsyncs, on whichever commit crosses 1000 frames) by a guard that checkpoints inline (PASSIVE)
// only once the WAL holds `guardFrames` frames. The owner checkpoints periodically (MemoryStore::checkpoint).
// Durability is unchanged: every commit is in the WAL before it is acknowledged (journal_mode=WAL,
// synchronous=NORMAL survives a killed process; only a power loss can take the last commits).
void installCheckpointGuard(SQLite::Database& db, int guardFrames);
inline constexpr int kCheckpointGuardFrames = 8192;  // 32 MiB of 4 KiB pages

// For a clean close: copies every frame of the WAL into the database file and truncates the WAL to zero bytes
// (PRAGMA wal_checkpoint(TRUNCATE)), so the main file holds every commit on its own; SQLite then deletes the empty
// WAL when the file's last connection closes. It waits (the connection's busy timeout) for readers still in a
// transaction. False when the checkpoint did not complete (a reader held on, or an error): nothing is lost, the
// frames stay in the WAL and the next open reads them. A no-op (true) for a database not in WAL mode.
bool checkpointForClose(SQLite::Database& db);

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
