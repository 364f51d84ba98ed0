// The one migration runner, for both backends (a scope's SQLite file, the team scope's PostgreSQL server): which
// migrations to apply, in which order, and when to refuse. A backend says only how to read the recorded version, run
// one script and record it, and open, commit or roll back the transaction they all share.
// Thread-safety: none of its own; a backend is used by one thread.
#pragma once

#include <string>
#include <vector>

#include "embedded_migrations.h"
#include "protocol/status.h"

namespace memq {

class MigrationBackend {
 public:
  virtual ~MigrationBackend() = default;
  // The highest version recorded (0 for an empty database).
  virtual Result<int> recordedVersion() = 0;
  // Opens the transaction every migration runs in, holding the backend's write lock, so two processes migrating at
  // once apply each script once.
  virtual Status begin() = 0;
  // Runs `m`'s script and records its version, inside the transaction.
  virtual Status apply(const Migration& m) = 0;
  virtual Status commit() = 0;
  // Undoes everything since begin(); called after a failed begin, apply or commit.
  virtual void rollback() = 0;
};

// Applies the migrations above the recorded version, up to `maxVersion` (-1: all of them), in ascending order, in
// one transaction: all of them or none. A database recorded at a version above the last of `migrations` was written
// by a newer memq and is refused, untouched, with a StorageError naming `what` (e.g. "database /x/memory.db").
// `migrations` must be strictly ascending by version: a list that is not (two scripts with one number) is refused
// with an InternalError naming both scripts, before the backend is asked anything.
Status runMigrations(MigrationBackend& backend, const std::vector<Migration>& migrations, int maxVersion,
                     const std::string& what);

// The highest version in `migrations` (0 when there are none).
int latestVersion(const std::vector<Migration>& migrations);

}  // namespace memq
