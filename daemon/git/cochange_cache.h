// CoChangeCache: persists CoChangeCounts in the project database (tables of schema/migrations/0002), so a
// daemon restart costs a table read instead of a history walk, and an incremental refresh writes only the rows
// that changed. Owns its own SQLite connection (WAL, busy_timeout 5000) so the git layer never borrows the
// store's writer; it is also the one place where this layer translates SQLite exceptions.
// The cache is an optimisation: when the database or its tables are missing, every call degrades (load finds
// nothing, saves are skipped) after one log line, and the next call looks again.
// Thread-safety: none; GitRepoSignals calls it only under its refresh mutex.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/git/cochange_counts.h"
#include "protocol/status.h"

namespace memq {

class CoChangeCache {
 public:
  // `worktree` tells linked worktrees of one repository apart ('' for the main one). The database is opened on
  // first use and never created here: its file, permissions and migrations belong to the store.
  CoChangeCache(std::string dbPath, std::string worktree);
  ~CoChangeCache();

  // Replaces `counts` with the cached graph when one exists for this worktree under the same settings.
  // Returns false (counts left empty) otherwise, and for a damaged graph (a pair naming a file id with no file row,
  // a file id outside 32 bits), which is logged once and left for the caller's rebuild to overwrite.
  bool load(const std::string& settings, CoChangeCounts& counts);

  // Rewrites the whole graph (after a rebuild).
  Status saveFull(const std::string& settings, const CoChangeCounts& counts);
  // Writes the rows named by counts' dirty sets plus the window changes (after an incremental update from
  // `fromHead`). Falls back to a full save when the stored graph is not the one the delta applies to.
  Status saveDelta(const std::string& settings, const std::string& fromHead, const CoChangeCounts& counts,
                   const std::vector<WindowCommit>& added, const std::vector<int64_t>& removedSeqs);

 private:
  SQLite::Database* db();  // nullptr when unavailable
  int64_t graphId(const std::string& settings, const std::string& head);
  void insertWindow(int64_t graph, const std::vector<WindowCommit>& entries);
  // Runs `body`, turning SQLite (and other std) exceptions into a StorageError Status and a warning.
  template <typename F>
  Status guarded(const char* what, F&& body, bool quiet = false);

  std::string dbPath_;
  std::string worktree_;
  std::unique_ptr<SQLite::Database> db_;
  bool reportedUnavailable_ = false;
  bool synced_ = false;  // the rows equal the counts last loaded or saved, so a delta may be written on top
};

}  // namespace memq
