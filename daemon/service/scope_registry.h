// ScopeRegistry: the open databases — the global one and one per project — shared by every connection, opened
// lazily on first use and closed when idle (docs/design.md §4); and, per project root, that work tree's repository signals.
// A database is opened (and a Scope built) outside the registry's lock: opening a large one takes seconds (its vectors,
// text index and save journal are loaded), and requests for the scopes already open must not wait for it meanwhile.
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
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
  // For tests, may be empty: called without the registry's lock, on the requesting thread, right before a database
  // is opened (beforeOpen), and when a request is about to wait for another request's open of the database it
  // needs (waitingForOpen). A test blocks in beforeOpen to hold an open in progress.
  std::function<void(const std::string& dbPath)> beforeOpen;
  std::function<void(const std::string& dbPath)> waitingForOpen;
};

class ScopeRegistry {
 public:
  explicit ScopeRegistry(ScopeRegistryOptions options);

  // A scope whose database another request is opening waits for that open and gets its outcome (one file is
  // never opened twice: a second store on it would be a read-only follower of the first); requests for other
  // scopes go on meanwhile. A failed open is reported to every request that waited for it, and the next request
  // tries again.
  Result<std::shared_ptr<Scope>> global() EXCLUDES(mutex_);
  // `dir` is any directory inside the project; the root is resolved per docs/design.md §4.
  // Both check that the database's files are still the ones at their paths (MemoryStore::checkFilesInPlace): a
  // project deleted and created again at the same path (a re-clone) gets the file now there, never the removed one.
  Result<std::shared_ptr<Scope>> project(const std::string& dir) EXCLUDES(mutex_);
  Result<ProjectLocation> locate(const std::string& dir) EXCLUDES(mutex_);

  // Whether a request could use these without locating a project or opening a database: `dir`'s location as
  // locate found it before (nullopt when it has not: this never locates); the global scope is open; the project of
  // `dir` is located and its root's scope open. Never blocks on anything but the registry's lock, which no open
  // holds: for the server's choice of thread.
  std::optional<ProjectLocation> locatedAlready(const std::string& dir) EXCLUDES(mutex_);
  bool globalIsOpen() EXCLUDES(mutex_);
  bool projectIsOpen(const std::string& dir) EXCLUDES(mutex_);

  // Forgets scopes nobody holds and nobody used for `idle`, and closes the databases no remaining scope holds.
  // A database being opened is not open yet: it is never closed here. Returns how many databases were closed.
  size_t closeIdle(std::chrono::steady_clock::duration idle) EXCLUDES(mutex_);
  // The paths of the open databases (one per repository, however many of its worktrees are in use); not those
  // being opened.
  std::vector<std::string> openScopePaths() EXCLUDES(mutex_);
  // Those of them another process holds (MemoryStore::writesElsewhere): read here, never written.
  std::vector<std::string> readOnlyScopePaths() EXCLUDES(mutex_);
  // The project scopes open now (for background work on them, such as re-basing anchors to HEAD).
  std::vector<std::shared_ptr<Scope>> projectScopes() EXCLUDES(mutex_);
  // Copies each open scope's WAL back into its database (saves never pay for that themselves); a scope whose lock
  // is held (a long call in progress) is left for the next time.
  void checkpointAll() EXCLUDES(mutex_);
  // Commits the saves each open database holds in a batch (see StoreOptions::saveBatch) once its last save is
  // `idle` old. Returns how many databases still hold a younger batch. A failed commit is logged; the next write to
  // that database tries again first.
  size_t commitPendingSaves(std::chrono::milliseconds idle) EXCLUDES(mutex_);

 private:
  // One database being opened by the request that found it neither open nor being opened; the requests that need
  // it meanwhile wait for `finished` (with mutex_) until `outcome` is set. Its fields are guarded by mutex_.
  struct PendingOpen {
    CondVar finished;
    std::optional<Result<std::shared_ptr<ScopeDatabase>>> outcome;
  };
  // The open database at `path`: the one open already (unless its files moved: forgetIfMoved), the outcome of
  // another request's open in progress, or this request's own open, made without mutex_ and then published.
  Result<std::shared_ptr<ScopeDatabase>> database(ScopeKind kind, const std::string& path, const std::string& root)
      EXCLUDES(mutex_);
  // Opens the store at `path` and logs what it found; touches nothing of the registry but its options (set at
  // construction), so it runs without mutex_.
  Result<std::shared_ptr<ScopeDatabase>> openStore(ScopeKind kind, const std::string& path,
                                                   const std::string& root) const;
  // The scope `key` (a project root, "" for global): the one in scopes_, or one built on its database, without
  // mutex_ (the repository signals and line carrier open the repository), then published unless another request
  // published one for `key` first (that one is kept and returned).
  Result<std::shared_ptr<Scope>> openScope(const std::string& key, ScopeKind kind, const std::string& dbPath,
                                           const ProjectLocation* location) EXCLUDES(mutex_);
  // When db's files are no longer at their paths: forgets it, every scope on it and their roots' locations, so that
  // the caller opens what is at the path now, and returns whether it did. The store still has to be retired
  // (MemoryStore::retire), which waits for a request inside it (an import holds it for a minute): never under
  // mutex_, or every scope, and the I/O thread's checks, would wait too. So the first caller to forget a database
  // gets it in `toRetire` and must pass it to retire() once it has let mutex_ go; until then its path is in
  // retiring_, and database() waits before opening the file now at that path (a store on it opened meanwhile would
  // find the save journal still locked by the old one, and only follow it). Reads only stats (no lock of db's).
  bool forgetIfMoved(const std::shared_ptr<ScopeDatabase>& db, std::shared_ptr<ScopeDatabase>& toRetire)
      REQUIRES(mutex_);
  // Retires the store forgetIfMoved forgot (logged), then takes its path out of retiring_, also when it throws.
  void retire(const std::shared_ptr<ScopeDatabase>& db) EXCLUDES(mutex_);
  // Takes `path` out of retiring_ and wakes the requests waiting for it.
  void finishRetiring(const std::string& path) EXCLUDES(mutex_);

  ScopeRegistryOptions options_;
  Mutex mutex_;
  std::map<std::string, std::shared_ptr<ScopeDatabase>> databases_ GUARDED_BY(mutex_);  // key: database path
  // The databases being opened, none of them in databases_ (key: database path). An entry is erased, and its
  // outcome set, by the request that opens it, whether the open succeeded or failed.
  std::map<std::string, std::shared_ptr<PendingOpen>> opening_ GUARDED_BY(mutex_);
  // The paths of databases forgotten and not yet retired (forgetIfMoved); `retiredOne` is signalled as each leaves.
  std::set<std::string> retiring_ GUARDED_BY(mutex_);
  CondVar retiredOne_;
  std::map<std::string, std::shared_ptr<Scope>> scopes_ GUARDED_BY(mutex_);  // key: project root ("" for global)
  std::map<std::string, ProjectLocation> locations_ GUARDED_BY(mutex_);      // key: directory asked for
};

}  // namespace memq
