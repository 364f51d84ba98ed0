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

// The schema version recorded in the database (0 for an empty file).
int schemaVersion(SQLite::Database& db);
// The highest migration compiled into this binary.
int latestSchemaVersion();

// Creates `dir` and missing parents with mode 0700.
Status makePrivateDirectories(const std::string& dir);

// The one translation of SQLite exceptions into memq's error path.
Status storageError(const std::exception& e, const std::string& context = "");

}  // namespace memq
