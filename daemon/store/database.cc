// Database file creation, PRAGMAs and migrations; see database.h.
#include "daemon/store/database.h"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "embedded_migrations.h"
#include "migration_runner.h"

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

std::string octalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

Status refused(const std::string& what, const std::string& why) {
  return Status(ErrorCode::kScopeUnavailable, "refusing " + what + ": " + why);
}

// What claimPrivateFile accepts of a file already there (lstat'ed as `st`).
Status checkOwnedFile(const std::string& path, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) {
    return refused(path, "it is a symbolic link; memqd opens only its own files beside a database, never a link");
  }
  if (!S_ISREG(st.st_mode)) return refused(path, "it is not a regular file");
  if (st.st_uid != ::geteuid()) {
    return refused(path, "it is owned by uid " + std::to_string(st.st_uid) + ", not by memqd's user (uid " +
                             std::to_string(::geteuid()) + "); move it aside to let memqd create its own");
  }
  if ((st.st_mode & 022) != 0) {
    return refused(path, "group or others may write it (mode " + octalMode(st.st_mode) +
                             "); check its contents, then chmod 600 it");
  }
  return Status::ok();
}

// After SQLite opened the database: its -wal and -shm are checked without being opened here (closing another
// descriptor of a file SQLite holds would drop SQLite's locks on it). SQLite creates them with the database's mode.
Status checkSidecarsAfterOpen(const std::string& path) {
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string p = path + suffix;
    struct stat st{};
    if (::lstat(p.c_str(), &st) != 0) continue;  // a missing sidecar is fine
    MEMQ_RETURN_IF_ERROR(checkOwnedFile(p, st));
    if ((st.st_mode & 077) != 0) return refused(p, "others may read it (mode " + octalMode(st.st_mode) + ")");
  }
  return Status::ok();
}

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

std::optional<FileIdentity> fileIdentityAt(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

Status checkOwnedDirectory(const std::string& dir) {
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Status(ErrorCode::kStorageError, "cannot stat directory " + dir + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return refused(dir, "it is a symbolic link; memqd keeps a database only in a directory of its own");
  }
  if (!S_ISDIR(st.st_mode)) return refused(dir, "it is not a directory");
  if (st.st_uid != ::geteuid()) {
    return refused(dir, "it is owned by uid " + std::to_string(st.st_uid) + ", not by memqd's user (uid " +
                            std::to_string(::geteuid()) + "); memqd keeps a database only in a directory of its own");
  }
  if ((st.st_mode & 022) != 0) {
    return refused(dir, "group or others may write it (mode " + octalMode(st.st_mode) +
                            "), so they could replace the files in it; chmod 700 it");
  }
  return Status::ok();
}

Result<std::optional<FileIdentity>> claimPrivateFile(const std::string& path, bool create) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Status(ErrorCode::kStorageError, "cannot stat " + path + ": " + std::strerror(errno));
    }
    if (!create) return std::optional<FileIdentity>();
    // O_EXCL: created here, or refused; O_NOFOLLOW: never through a link planted since the lstat.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) return refused(path, "it appeared while memqd was creating it");
      return Status(ErrorCode::kStorageError, "cannot create " + path + ": " + std::strerror(errno));
    }
    struct stat created{};
    const int rc = ::fstat(fd, &created);
    ::close(fd);
    if (rc != 0) return Status(ErrorCode::kStorageError, "cannot stat " + path + ": " + std::strerror(errno));
    return std::optional<FileIdentity>(
        FileIdentity{static_cast<uint64_t>(created.st_dev), static_cast<uint64_t>(created.st_ino)});
  }
  MEMQ_RETURN_IF_ERROR(checkOwnedFile(path, st));
  const FileIdentity identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  if ((st.st_mode & 077) != 0) {
    // Tightened through a descriptor of the file itself (O_NOFOLLOW), never through a path that may be a link.
    // Only group's and others' bits go: the owner's stay as they were, so a file the user made read-only (0444)
    // becomes 0400, never writable.
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Status(ErrorCode::kStorageError, "cannot open " + path + ": " + std::strerror(errno));
    struct stat again{};
    const bool same = ::fstat(fd, &again) == 0 && again.st_dev == st.st_dev && again.st_ino == st.st_ino;
    const int rc = same ? ::fchmod(fd, again.st_mode & 0700) : 0;
    const int err = errno;
    ::close(fd);
    if (!same) return refused(path, "it was replaced while memqd checked it");
    if (rc != 0) return Status(ErrorCode::kStorageError, "cannot chmod " + path + ": " + std::strerror(err));
  }
  return std::optional<FileIdentity>(identity);
}

int latestSchemaVersion() { return latestVersion(embeddedMigrations()); }

int schemaVersion(SQLite::Database& db) {
  if (!db.tableExists("schema_version")) return 0;
  SQLite::Statement q(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
  q.executeStep();
  return q.getColumn(0).getInt();
}

namespace {

// A table whose rows belong to a parent row (ON DELETE CASCADE) and are worth nothing without it. A row there whose
// parent is gone (deleted with foreign keys off, which is the sqlite3 shell's default) is what the cascade would
// have deleted with it, so the migrations delete it rather than leave the database unable to open. A table not
// listed here may hold what memq cannot rebuild: an orphan there stops the upgrade instead.
struct DependentTable {
  const char* table;
  const char* orphans;  // the WHERE clause selecting its rows whose parent is gone
};
constexpr DependentTable kDependentTables[] = {
    // A memory's vectors: computed from its text by the embedder.
    {"memory_embeddings", "memory_pk NOT IN (SELECT pk FROM memories)"},
    // Similar and supersedes links: with an end gone, an edge links nothing.
    {"memory_edges", "src_pk NOT IN (SELECT pk FROM memories) OR dst_pk NOT IN (SELECT pk FROM memories)"},
    // The files a memory is about: nothing reads a ref without its memory. Its kept file versions go with it
    // (0007's triggers on memory_files).
    {"memory_files", "memory_pk NOT IN (SELECT pk FROM memories)"},
    // The co-change cache (0002): derived from git history, rebuilt on the next refresh.
    {"cochange_commits", "graph_id NOT IN (SELECT id FROM cochange_graphs)"},
    {"cochange_files", "graph_id NOT IN (SELECT id FROM cochange_graphs)"},
    {"cochange_pairs", "graph_id NOT IN (SELECT id FROM cochange_graphs)"},
};

std::string rowCount(int64_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); }

const DependentTable* dependentTable(const std::string& table) {
  for (const auto& t : kDependentTables) {
    if (table == t.table) return &t;
  }
  return nullptr;
}

struct ForeignKeyViolations {
  int64_t rows = 0;
  std::string parent;  // the table the rows name a missing row of
};

// PRAGMA foreign_key_check by table. It checks whatever the foreign_keys setting.
std::map<std::string, ForeignKeyViolations> foreignKeyViolations(SQLite::Database& db) {
  std::map<std::string, ForeignKeyViolations> out;
  SQLite::Statement q(db, "PRAGMA foreign_key_check");
  while (q.executeStep()) {
    auto& v = out[q.getColumn(0).getString()];
    ++v.rows;
    if (v.parent.empty()) v.parent = q.getColumn(2).getString();
  }
  return out;
}

// Run inside the migration transaction, before it commits: the migrations ran with foreign keys off, so this is
// where the rows that name a missing parent are found. Those of a dependent table are deleted, with a warning;
// any other refuses the upgrade, naming the table.
Status settleForeignKeys(SQLite::Database& db, const std::string& what) {
  const auto found = foreignKeyViolations(db);
  for (const auto& [table, v] : found) {
    if (dependentTable(table) != nullptr) continue;
    return Status::storage("cannot upgrade " + what + ": table " + table + " holds " + rowCount(v.rows) +
                           " naming a missing row of " + v.parent +
                           " (PRAGMA foreign_key_check), and memq deletes such rows only from tables it can rebuild; "
                           "the upgrade was rolled back, leaving the database as it was: repair or remove those rows "
                           "of " + table);
  }
  for (const auto& [table, v] : found) {
    const int deleted = db.exec(std::string("DELETE FROM ") + table + " WHERE " + dependentTable(table)->orphans);
    spdlog::warn("memq: upgrading {}: deleted {} of {} naming a row of {} that no longer exists (deleted with "
                 "foreign keys off, as in the sqlite3 shell); they hold nothing without it",
                 what, rowCount(deleted), table, v.parent);
  }
  if (found.empty()) return Status::ok();
  const auto left = foreignKeyViolations(db);
  if (left.empty()) return Status::ok();
  return Status::storage("cannot upgrade " + what + ": table " + left.begin()->first +
                         " still holds rows naming a missing row of " + left.begin()->second.parent +
                         " after memq deleted its orphans; the upgrade was rolled back, leaving the database as it was");
}

// The runner's SQLite side. SQLite's exceptions pass through the runner to openDatabase, which turns them into a
// Status; the transaction, held here, rolls back when the backend goes out of scope without a commit.
class SqliteMigrationBackend final : public MigrationBackend {
 public:
  SqliteMigrationBackend(SQLite::Database& db, std::string what, std::string writerLockPath)
      : db_(db), what_(std::move(what)), writerLockPath_(std::move(writerLockPath)) {}
  ~SqliteMigrationBackend() override {
    tx_.reset();  // rolled back (when not committed) before the writer's lock goes
    if (writerLock_ >= 0) ::close(writerLock_);
  }

  Result<int> recordedVersion() override { return schemaVersion(db_); }
  Status begin() override {
    MEMQ_RETURN_IF_ERROR(takeWriterLock());
    tx_.emplace(db_, SQLite::TransactionBehavior::IMMEDIATE);
    return Status::ok();
  }
  Status apply(const Migration& m) override {
    db_.exec(std::string(m.sql));
    SQLite::Statement ins(
        db_, "INSERT INTO schema_version(version, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))");
    ins.bind(1, m.version);
    ins.exec();
    return Status::ok();
  }
  Status commit() override {
    MEMQ_RETURN_IF_ERROR(settleForeignKeys(db_, what_));
    tx_->commit();
    return Status::ok();
  }
  void rollback() override { tx_.reset(); }

 private:
  // Another memqd with this database open holds its save journal's lock, and its statements, its in-memory indexes
  // and the rows it writes follow the schema it opened: upgrading under it would leave it writing rows the newer
  // schema's invariants do not allow. No journal: no process writes the file through one.
  Status takeWriterLock() {
    if (writerLockPath_.empty()) return Status::ok();
    const int fd = ::open(writerLockPath_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return Status::ok();  // missing, or refused by the journal's own checks once the store opens it
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      writerLock_ = fd;
      return Status::ok();
    }
    const int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK) return Status::ok();
    return Status(ErrorCode::kConflict,
                  "cannot upgrade " + what_ + " to this memqd's schema: another process has it open (its save journal " +
                      writerLockPath_ + " is locked) and writes it by the schema it opened; stop that process (another "
                      "memqd: `memq daemon stop` with its socket) and try again; the database was left as it was");
  }

  SQLite::Database& db_;
  std::string what_;
  std::string writerLockPath_;
  int writerLock_ = -1;
  std::optional<SQLite::Transaction> tx_;
};

// The migrations run with foreign keys off: a script that rebuilds a table others reference (create, copy, drop,
// rename) would otherwise cascade-delete the rows that reference it, and a row already orphaned would fail its copy
// and with it the whole upgrade. A script cannot turn them off itself: inside a transaction the pragma does nothing,
// so it is set here, before BEGIN, and the orphans are settled before COMMIT (settleForeignKeys).
Status migrate(SQLite::Database& db, const DatabaseOptions& options) {
  const std::string& path = options.path;
  const int maxVersion = options.maxSchemaVersion;
  db.exec("PRAGMA foreign_keys = OFF");
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
  SqliteMigrationBackend backend(db, "database " + path, options.writerLockPath);
  MEMQ_RETURN_IF_ERROR(runMigrations(backend, embeddedMigrations(), maxVersion, "database " + path));
  // Outside any transaction now (committed, or nothing to do), where the pragma takes effect.
  db.exec("PRAGMA foreign_keys = ON");
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

bool checkpointForClose(SQLite::Database& db) {
  int walFrames = -1;
  int copiedFrames = -1;
  const int rc =
      sqlite3_wal_checkpoint_v2(db.getHandle(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, &walFrames, &copiedFrames);
  // Not in WAL mode (":memory:", a rollback journal): SQLITE_OK with both counts -1, nothing to fold.
  return rc == SQLITE_OK && walFrames == copiedFrames;
}

Result<std::unique_ptr<SQLite::Database>> openDatabase(const DatabaseOptions& options) {
  const bool inMemory = options.path == ":memory:";
  try {
    std::optional<FileIdentity> opened;
    if (!inMemory) {
      std::string dir = std::filesystem::path(options.path).parent_path().string();
      if (dir.empty()) dir = ".";
      MEMQ_RETURN_IF_ERROR(makePrivateDirectories(dir));
      // The directory first: once no one else may write it, nothing checked below can be swapped before SQLite
      // opens it. The database is created 0600 before SQLite does, so its -wal and -shm (which SQLite creates with
      // the database file's mode) are never readable by others, whatever the umask.
      MEMQ_RETURN_IF_ERROR(checkOwnedDirectory(dir));
      auto claimed = claimPrivateFile(options.path, /*create=*/true);
      if (!claimed) return claimed.status();
      opened = *claimed;
      for (const char* suffix : {"-wal", "-shm"}) {
        auto sidecar = claimPrivateFile(options.path + suffix, /*create=*/false);
        if (!sidecar) return sidecar.status();
      }
    }
    auto db = std::make_unique<SQLite::Database>(options.path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    // The busy timeout first: switching to WAL needs a lock too, which a process still closing the file may hold.
    db->exec("PRAGMA busy_timeout = 5000");
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA synchronous = NORMAL");
    // foreign_keys: ON once migrated (migrate runs the migrations with it off).
    db->exec("PRAGMA temp_store = MEMORY");
    // 8 MiB, not the reference's 64 MiB: at every commit SQLite walks the page cache's whole hash table
    // (pcache1TruncateUnsafe), so a bigger cache makes every save slower.
    db->exec("PRAGMA cache_size = -8192");
    // No memory map: every page of the file that a mapped connection reads stays in memqd's resident set (at 100k
    // memories a 256 MiB map held about 240 MiB of it, a third of memqd's peak), while saves and recalls were as
    // fast without it (docs/performance.md, "Settings").
    db->exec("PRAGMA mmap_size = 0");
    MEMQ_RETURN_IF_ERROR(migrate(*db, options));
    if (!inMemory) {
      // SQLite opened the path after the claim: the file there must still be the one claimed.
      if (fileIdentityAt(options.path) != opened) {
        return refused(options.path, "it was replaced while memqd opened it");
      }
      MEMQ_RETURN_IF_ERROR(checkSidecarsAfterOpen(options.path));
      if (options.identity) *options.identity = *opened;
    }
    return db;
  } catch (const std::exception& e) {
    return storageError(e, "cannot open database " + options.path);
  }
}

}  // namespace memq
