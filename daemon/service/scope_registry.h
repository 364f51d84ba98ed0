// ScopeRegistry: the open databases — the global one and one per project — shared by every connection, opened
// lazily on first use and closed when idle (docs/design.md §4); and, per project root, that work tree's repository signals.
// ScopeDatabase: one database file with its lock. Every call into its store (and a repository's use by recall)
// happens while holding its mutex; that is what serialises writes per database.
// Scope: a scope as one project root sees it. Linked git worktrees of one repository share one database (it lives in
// the common git dir) but each has its own files, HEAD and index, so location and repo belong to the root, while db
// is shared: two roots of one repository get two Scopes holding the same ScopeDatabase.
// Thread-safety: ScopeRegistry is thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/anchors/line_carrier.h"
#include "daemon/embed/embedder.h"
#include "daemon/git/repo_location.h"
#include "daemon/model/scope_kind.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/store/memory_store.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

class TeamSync;

struct ScopeDatabase {
  std::string path;
  Mutex mutex;  // serialises every use of the store (MemoryStore is not thread-safe)
  std::unique_ptr<MemoryStore> storePtr;  // set once at open, before the ScopeDatabase is shared; never null after
  MemoryStore& store() REQUIRES(mutex) { return *storePtr; }
  // Commits the saves the store holds in an open batch, so that the caller sees one committed state and the file's
  // other connection (the co-change cache, which recall may write through) never waits on a transaction held open
  // by this one. A failure is reported by the next write (the saves stay in the journal); reads go on meanwhile.
  void commitOpenBatch() REQUIRES(mutex) {
    if (storePtr->hasOpenBatch()) (void)storePtr->commitPendingSaves();
  }
};

// Holds a scope database's mutex for anything but a save, with its open batch of saves committed first
// (ScopeDatabase::commitOpenBatch), as one read pass of its store (MemoryStore::beginReadPass): what is read under
// the lock is one snapshot.
class SCOPED_CAPABILITY CommittedLock {
 public:
  explicit CommittedLock(ScopeDatabase& db) ACQUIRE(db.mutex) : mutex_(db.mutex), store_(*db.storePtr) {
    db.mutex.lock();
    db.commitOpenBatch();
    store_.beginReadPass();
  }
  ~CommittedLock() RELEASE() {
    store_.endReadPass();
    mutex_.unlock();
  }
  CommittedLock(const CommittedLock&) = delete;
  CommittedLock& operator=(const CommittedLock&) = delete;

 private:
  Mutex& mutex_;
  MemoryStore& store_;
};

struct Scope {
  ScopeKind kind = ScopeKind::kProject;
  ProjectLocation location;  // project scopes only: the work tree (root) the requests name
  std::shared_ptr<ScopeDatabase> db;
  std::shared_ptr<RepoSignals> repo;  // this work tree's signals, for project scopes in git; may be null
  // Carries line anchors to the work tree (recall_lines.h), for project scopes; reads blobs of the work tree's
  // repository, or only the versions memq keeps outside git. Thread-safe.
  std::shared_ptr<LineCarrier> carrier;
  // Team scopes only: the server connections and sync thread (daemon/team/team_sync.h); db is the local replica.
  std::shared_ptr<TeamSync> team;
  std::chrono::steady_clock::time_point lastUsed;
};

// Builds the repository signals for a project (GitRepoSignals in the daemon; tests may pass a fake or nothing).
using RepoSignalsFactory = std::function<std::shared_ptr<RepoSignals>(const ProjectLocation&)>;

struct ScopeRegistryOptions {
  std::string dataDir;  // holds global.db
  const Embedder* embedder = nullptr;
  RepoSignalsFactory repoFactory;  // may be empty: no repository signals
  int saveBatch = 1;  // StoreOptions::saveBatch of every database opened
};

class ScopeRegistry {
 public:
  explicit ScopeRegistry(ScopeRegistryOptions options);

  Result<std::shared_ptr<Scope>> global();
  // `dir` is any directory inside the project; the root is resolved per docs/design.md §4.
  // Both check that the database's files are still the ones at their paths (MemoryStore::checkFilesInPlace): a
  // project deleted and created again at the same path (a re-clone) gets the file now there, never the removed one.
  Result<std::shared_ptr<Scope>> project(const std::string& dir);
  Result<ProjectLocation> locate(const std::string& dir);

  // Forgets scopes nobody holds and nobody used for `idle`, and closes the databases no remaining scope holds.
  // Returns how many databases were closed.
  size_t closeIdle(std::chrono::steady_clock::duration idle);
  // The paths of the open databases (one per repository, however many of its worktrees are in use).
  std::vector<std::string> openScopePaths();
  // Those of them another process holds (MemoryStore::writesElsewhere): read here, never written.
  std::vector<std::string> readOnlyScopePaths();
  // The project scopes open now (for background work on them, such as re-basing anchors to HEAD).
  std::vector<std::shared_ptr<Scope>> projectScopes();
  // Copies each open scope's WAL back into its database (saves never pay for that themselves); a scope whose lock
  // is held (a long call in progress) is left for the next time.
  void checkpointAll();
  // Commits the saves each open database holds in a batch (see StoreOptions::saveBatch) once its last save is
  // `idle` old. Returns how many databases still hold a younger batch. A failed commit is logged; the next write to
  // that database tries again first.
  size_t commitPendingSaves(std::chrono::milliseconds idle);

 private:
  Result<std::shared_ptr<ScopeDatabase>> openDatabase(ScopeKind kind, const std::string& path,
                                                      const std::string& root) REQUIRES(mutex_);
  Result<std::shared_ptr<Scope>> openScope(const std::string& key, ScopeKind kind, const std::string& dbPath,
                                           const ProjectLocation* location) REQUIRES(mutex_);
  // Takes db's mutex after mutex_. When db's files are no longer at their paths: retires its
  // store (MemoryStore::retire, logged) and forgets it, every scope on it and their roots' locations, so that the
  // caller opens what is at the path now. Returns whether it did. `db` by value: the maps it is erased from may hold
  // its last other owners.
  bool forgetIfMoved(std::shared_ptr<ScopeDatabase> db) REQUIRES(mutex_);

  ScopeRegistryOptions options_;
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<ScopeDatabase>> databases_ GUARDED_BY(mutex_);  // key: database path
  std::map<std::string, std::shared_ptr<Scope>> scopes_ GUARDED_BY(mutex_);  // key: project root ("" for global)
  std::map<std::string, ProjectLocation> locations_ GUARDED_BY(mutex_);      // key: directory asked for
};

}  // namespace memq
