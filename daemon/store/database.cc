// Database file creation, PRAGMAs and migrations; see database.h.
#include "daemon/store/database.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include <sqlite3.h>

#include "embedded_migrations.h"

namespace memq {

namespace {

// SQLite's memory statistics take one process-wide mutex on every allocation; with the background applier's
// connection and a read-only one allocating on two threads, that mutex showed as 6% of the applier's time. memq
// never reads the statistics. sqlite3_config must run before SQLite initialises, so it runs at static
// initialisation (SQLITE_MISUSE, ignored, if something initialised it first).
[[maybe_unused]] const bool kSqliteConfigured = [] {
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  return true;
}();

}  // namespace

Status storageError(const std::exception& e, const std::string& context) {
  std::string message = context.empty() ? std::string(e.what()) : context + ": " + e.what();
  return Status(ErrorCode::kStorageError, message);
}

Status storageError(const std::exception& e, const std::string& context, const std::string& scope,
                    const std::string& path) {
  Status plain = storageError(e, context);
  return Status(ErrorCode::kStorageError, plain.message() + " (" + scope + " database " + path + ")",
                nlohmann::json{{"scope", scope}, {"path", path}});
}

Status makePrivateDirectories(const std::string& dir) {
  if (dir.empty()) return Status::ok();
  std::filesystem::path p(dir);
  std::filesystem::path built;
  for (const auto& part : p) {
    built /= part;
    struct stat st{};
    if (::stat(built.c_str(), &st) == 0) continue;
    if (::mkdir(built.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kStorageError,
                    "cannot create directory " + built.string() + ": " + std::strerror(errno));
    }
  }
  return Status::ok();
}

int latestSchemaVersion() {
  const auto& migrations = embeddedMigrations();
  return migrations.empty() ? 0 : migrations.back().version;
}

int schemaVersion(SQLite::Database& db) {
  if (!db.tableExists("schema_version")) return 0;
  SQLite::Statement q(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
  q.executeStep();
  return q.getColumn(0).getInt();
}

namespace {

// Creates the file with 0600 before SQLite does, so the database and its -wal/-shm (which SQLite creates with the
// database file's mode) are never readable by others, whatever the umask.
Status precreatePrivateFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status(ErrorCode::kStorageError, "cannot open " + path + ": " + std::strerror(errno));
  ::fchmod(fd, 0600);
  ::close(fd);
  return Status::ok();
}

void tightenSidecars(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::string p = path + suffix;
    ::chmod(p.c_str(), 0600);  // a missing sidecar is fine
  }
}

Status migrate(SQLite::Database& db, const std::string& path, int maxVersion) {
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
  int current = schemaVersion(db);
  int latest = latestSchemaVersion();
  if (current > latest) {
    return Status(ErrorCode::kStorageError,
                  "database " + path + " was written by a newer memq (schema version " + std::to_string(current) +
                      "; this memqd knows up to " + std::to_string(latest) + "); upgrade memq to open it");
  }
  int target = maxVersion < 0 ? latest : maxVersion;
  if (current >= target) return Status::ok();
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  // Re-read inside the write lock: another process may have migrated meanwhile.
  current = schemaVersion(db);
  for (const auto& m : embeddedMigrations()) {
    if (m.version <= current || m.version > target) continue;
    db.exec(std::string(m.sql));
    SQLite::Statement ins(db, "INSERT INTO schema_version(version, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))");
    ins.bind(1, m.version);
    ins.exec();
  }
  tx.commit();
  return Status::ok();
}

// sqlite3_wal_hook callback: runs after every commit with the WAL's frame count.
int checkpointGuard(void* arg, sqlite3* db, const char* name, int frames) {
  const int guard = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  // PASSIVE never waits for (or blocks) readers; an incomplete checkpoint is finished by the next one.
  if (frames >= guard) sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  return SQLITE_OK;
}

}  // namespace

void installCheckpointGuard(SQLite::Database& db, int guardFrames) {
  // Overrides (and so turns off) the default auto-checkpoint, which is itself a wal hook.
  sqlite3_wal_hook(db.getHandle(), checkpointGuard, reinterpret_cast<void*>(static_cast<intptr_t>(guardFrames)));
}

Result<std::unique_ptr<SQLite::Database>> openDatabase(const DatabaseOptions& options) {
  const bool inMemory = options.path == ":memory:";
  try {
    if (!inMemory) {
      MEMQ_RETURN_IF_ERROR(makePrivateDirectories(std::filesystem::path(options.path).parent_path().string()));
      MEMQ_RETURN_IF_ERROR(precreatePrivateFile(options.path));
    }
    auto db = std::make_unique<SQLite::Database>(options.path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    // The busy timeout first: switching to WAL needs a lock too, which a process still closing the file may hold.
    db->exec("PRAGMA busy_timeout = 5000");
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA synchronous = NORMAL");
    db->exec("PRAGMA foreign_keys = ON");
    db->exec("PRAGMA temp_store = MEMORY");
    // 8 MiB, not the reference's 64 MiB: at every commit SQLite walks the page cache's whole hash table
    // (pcache1TruncateUnsafe), so a bigger cache makes every save slower. Reads of pages not in the WAL come
    // from the memory map below, not from this cache.
    db->exec("PRAGMA cache_size = -8192");
    db->tryExec("PRAGMA mmap_size = 268435456");
    MEMQ_RETURN_IF_ERROR(migrate(*db, options.path, options.maxSchemaVersion));
    if (!inMemory) tightenSidecars(options.path);
    return db;
  } catch (const std::exception& e) {
    return storageError(e, "cannot open database " + options.path);
  }
}

}  // namespace memq
