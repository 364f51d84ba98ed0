// Lazy opening (outside the registry's lock, one open per file) and idle closing of scope databases, and per-root
// repository signals; see scope_registry.h.
#include "daemon/service/scope_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

namespace memq {

ScopeRegistry::ScopeRegistry(ScopeRegistryOptions options) : options_(std::move(options)) {
  // Without symlinks: the data directory is checked as memqd's own without following one (database.h).
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(options_.dataDir, ec);
  if (!ec && !options_.dataDir.empty()) options_.dataDir = canonical.string();
}

bool ScopeRegistry::forgetIfMoved(const std::shared_ptr<ScopeDatabase>& db, std::shared_ptr<ScopeDatabase>& toRetire) {
  // checkFilesInPlace only stats the paths (thread-safe): no need to wait for a request inside the store.
  if (db->storePtr->checkFilesInPlace()) return false;
  std::shared_ptr<ScopeDatabase> held = db;  // the maps erased below may hold its last other owners
  std::set<std::string> roots;
  for (auto it = scopes_.begin(); it != scopes_.end();) {
    if (it->second->db == held) {
      roots.insert(it->first);
      it = scopes_.erase(it);
    } else {
      ++it;
    }
  }
  // Located again: the project may now be somewhere else (no longer in git, say), or gone.
  for (auto it = locations_.begin(); it != locations_.end();) {
    if (roots.count(it->second.root) != 0 || it->second.dbPath == held->path) {
      it = locations_.erase(it);
    } else {
      ++it;
    }
  }
  if (auto it = databases_.find(held->path); it != databases_.end() && it->second == held) databases_.erase(it);
  // Last, so that nothing can throw between it and the caller's retire(), which takes the path out again.
  if (retiring_.insert(held->path).second) toRetire = held;
  return true;
}

void ScopeRegistry::retire(const std::shared_ptr<ScopeDatabase>& db) {
  // The path leaves retiring_ however this ends (a retire that throws included): requests for it wait until then.
  struct FinishOnExit {
    ScopeRegistry& registry;
    const std::string& path;
    ~FinishOnExit() { registry.finishRetiring(path); }
  } finish{*this, db->path};
  std::string fate;
  bool alreadyRetired = false;
  {
    MutexLock dbLock(db->mutex);  // a request inside the store finishes first
    alreadyRetired = db->store().retired();
    if (!alreadyRetired) fate = db->store().retire();
  }
  if (!alreadyRetired) {
    spdlog::warn("the {} database {} (or its save journal) was removed, replaced or moved on disk: closed it ({}); "
                 "the next request opens the file now at that path",
                 db->storePtr->scope(), db->path, fate);
  }
}

void ScopeRegistry::finishRetiring(const std::string& path) {
  MutexLock lock(mutex_);
  retiring_.erase(path);
  retiredOne_.notifyAll();
}

Result<std::shared_ptr<ScopeDatabase>> ScopeRegistry::openStore(ScopeKind kind, const std::string& path,
                                                                 const std::string& root) const {
  if (options_.beforeOpen) options_.beforeOpen(path);
  const std::string name = toString(kind);  // the store stamps it on every record it returns
  StoreOptions so;
  so.path = path;
  so.scope = name;
  so.projectRoot = root;
  so.embedder = options_.embedder;
  so.saveBatch = options_.saveBatch;
  so.applySavesInBackground = true;  // streams of saves use a second core (StoreOptions)
  auto store = MemoryStore::open(so);
  if (!store) {
    spdlog::error("cannot open {} scope at {}: {}", name, path, store.status().message());
    return Status(store.status().code() == ErrorCode::kStorageError ? ErrorCode::kStorageError
                                                                       : ErrorCode::kScopeUnavailable,
                  store.status().message(), nlohmann::json{{"scope", name}, {"path", path}});
  }
  auto db = std::make_shared<ScopeDatabase>();
  db->path = path;
  db->storePtr = std::move(*store);
  spdlog::info("opened {} scope {}", name, path);
  // Not shared yet: no other thread can reach the store before the caller publishes it.
  if (db->storePtr->replayedSaves() > 0) {
    spdlog::info("applied {} saves from the save journal of {}", db->storePtr->replayedSaves(), path);
  }
  if (db->storePtr->writesElsewhere()) {
    spdlog::warn("the {} database {} is held by another process (its save journal is locked): this memqd reads it, "
                 "and refuses writes to it until that process lets it go",
                 name, path);
  }
  if (auto incomplete = db->storePtr->unappliedSavesWarning()) {
    // Reads of this scope carry the same text as a warning until the saves are applied.
    spdlog::warn("opened {} scope {} without every acknowledged save: {}", name, path, *incomplete);
  }
  return db;
}

Result<std::shared_ptr<ScopeDatabase>> ScopeRegistry::database(ScopeKind kind, const std::string& path,
                                                                const std::string& root) {
  MutexLock lock(mutex_);
  for (;;) {
    // The store forgotten at this path is retired first: it holds the save journal's lock until then.
    while (retiring_.count(path) != 0) retiredOne_.wait(mutex_);
    auto it = databases_.find(path);
    if (it == databases_.end()) break;
    std::shared_ptr<ScopeDatabase> toRetire;
    if (!forgetIfMoved(it->second, toRetire)) return it->second;
    if (toRetire) {
      lock.unlock();
      retire(toRetire);
      lock.lock();
    }
  }
  if (auto it = opening_.find(path); it != opening_.end()) {
    // Another request is opening this very file: its store is this request's too (a second one on the file would
    // only follow the first, read-only). Waiting gives mutex_ back, so other scopes are served meanwhile.
    std::shared_ptr<PendingOpen> pending = it->second;
    if (options_.waitingForOpen) {
      lock.unlock();
      options_.waitingForOpen(path);
      lock.lock();
    }
    while (!pending->outcome.has_value()) pending->finished.wait(mutex_);
    return *pending->outcome;
  }
  auto pending = std::make_shared<PendingOpen>();
  opening_[path] = pending;
  lock.unlock();
  // Loading a large database takes seconds: without mutex_, so that requests for the scopes open already, and
  // every other registry call, go on meanwhile.
  // The pending entry is resolved whatever happens, or every later request for the scope would wait for ever.
  auto thrown = [&](const std::string& what) -> Status {
    spdlog::error("cannot open {} scope at {}: {}", toString(kind), path, what);
    return Status(ErrorCode::kStorageError, "cannot open database " + path + ": " + what,
                  nlohmann::json{{"scope", toString(kind)}, {"path", path}});
  };
  Result<std::shared_ptr<ScopeDatabase>> opened = Status::internal("unreached");
  try {
    opened = openStore(kind, path, root);
  } catch (const std::exception& e) {
    opened = thrown(e.what());
  } catch (...) {
    opened = thrown("unknown exception");
  }
  lock.lock();
  // Nothing else takes the entry out: the path was neither open nor being opened when this request put it there.
  if (auto it = opening_.find(path); it != opening_.end() && it->second == pending) opening_.erase(it);
  // A failed open is not remembered: the next request for the scope tries again.
  if (opened) databases_[path] = *opened;
  pending->outcome = opened;
  pending->finished.notifyAll();
  return opened;
}

Result<std::shared_ptr<Scope>> ScopeRegistry::openScope(const std::string& key, ScopeKind kind,
                                                        const std::string& dbPath, const ProjectLocation* location) {
  {
    MutexLock lock(mutex_);
    if (auto it = scopes_.find(key); it != scopes_.end()) {
      it->second->lastUsed = std::chrono::steady_clock::now();
      return it->second;
    }
  }
  auto db = database(kind, dbPath, location ? location->root : "");
  if (!db) return db.status();
  // Built without mutex_: the repository signals and the line carrier open the work tree's repository (libgit2).
  // Two first requests for one root may both build one; the first published is kept.
  auto scope = std::make_shared<Scope>();
  scope->kind = kind;
  scope->db = std::move(*db);
  if (location) {
    scope->location = *location;
    // Signals follow the work tree, not the database: a linked worktree has its own HEAD, index and files.
    if (options_.repoFactory && location->inGit) scope->repo = options_.repoFactory(*location);
    if (location->inGit) {
      if (auto carrier = LineCarrier::open(location->root, {}); carrier) scope->carrier = std::move(*carrier);
    }
    // Outside git (or a repository libgit2 cannot open), anchors carry from the versions memq keeps alone.
    if (!scope->carrier) scope->carrier = std::make_shared<LineCarrier>(RepositoryPtr());
  }
  scope->lastUsed = std::chrono::steady_clock::now();
  std::shared_ptr<Scope> published;
  {
    MutexLock lock(mutex_);
    auto [it, inserted] = scopes_.try_emplace(key, scope);
    if (!inserted) it->second->lastUsed = scope->lastUsed;
    published = it->second;
  }
  return published;  // a Scope built here and not published is let go after mutex_ (its repository closes)
}

Result<std::shared_ptr<Scope>> ScopeRegistry::global() {
  std::shared_ptr<ScopeDatabase> toRetire;
  {
    MutexLock lock(mutex_);
    if (auto it = scopes_.find(""); it != scopes_.end()) (void)forgetIfMoved(it->second->db, toRetire);
  }
  if (toRetire) retire(toRetire);
  return openScope("", ScopeKind::kGlobal, options_.dataDir + "/global.db", nullptr);
}

Result<ProjectLocation> ScopeRegistry::locate(const std::string& dir) {
  {
    MutexLock lock(mutex_);
    auto it = locations_.find(dir);
    if (it != locations_.end()) return it->second;
  }
  auto loc = locateProject(dir, false);
  if (!loc) {
    return Status(ErrorCode::kScopeUnavailable, "project root " + dir + ": " + loc.status().message(),
                  nlohmann::json{{"field", "project_root"}});
  }
  MutexLock lock(mutex_);
  locations_[dir] = *loc;
  return *loc;
}

Result<std::shared_ptr<Scope>> ScopeRegistry::project(const std::string& dir) {
  for (bool relocated = false;; relocated = true) {
    auto loc = locate(dir);
    if (!loc) return loc.status();
    bool forgotten = false;
    std::shared_ptr<ScopeDatabase> toRetire;
    {
      MutexLock lock(mutex_);
      auto it = scopes_.find(loc->root);
      forgotten = !relocated && it != scopes_.end() && forgetIfMoved(it->second->db, toRetire);
    }
    if (toRetire) retire(toRetire);
    // Once forgotten, the project is located again (its location was forgotten with it) and opened afresh.
    if (forgotten) continue;
    return openScope(loc->root, ScopeKind::kProject, loc->dbPath, &*loc);
  }
}

std::optional<ProjectLocation> ScopeRegistry::locatedAlready(const std::string& dir) {
  MutexLock lock(mutex_);
  auto it = locations_.find(dir);
  if (it == locations_.end()) return std::nullopt;
  return it->second;
}

bool ScopeRegistry::globalIsOpen() {
  MutexLock lock(mutex_);
  // A Scope holds its open database; the check of its files in place is the request's own (global()).
  return scopes_.count("") != 0;
}

bool ScopeRegistry::projectIsOpen(const std::string& dir) {
  MutexLock lock(mutex_);
  auto loc = locations_.find(dir);
  if (loc == locations_.end()) return false;
  return scopes_.count(loc->second.root) != 0 && opening_.count(loc->second.dbPath) == 0;
}

size_t ScopeRegistry::closeIdle(std::chrono::steady_clock::duration idle) {
  // Taken out of the maps under mutex_, closed after it: a store's close commits, optimizes and checkpoints (it may
  // wait seconds for another process's reader), and a repository's close frees its caches; meanwhile every other
  // scope, and the I/O thread's checks, go on. A database's path stays in retiring_ until its store has closed, so
  // that a request for it meanwhile waits and then opens it afresh (a second store opened while the first still
  // held the save journal's lock would only follow it).
  std::vector<std::shared_ptr<Scope>> idleScopes;
  std::vector<std::shared_ptr<ScopeDatabase>> idleDatabases;
  {
    MutexLock lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = scopes_.begin(); it != scopes_.end();) {
      // use_count 1: only the registry holds it, so no request is inside it.
      if (it->second.use_count() == 1 && now - it->second->lastUsed > idle) {
        idleScopes.push_back(std::move(it->second));
        it = scopes_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = databases_.begin(); it != databases_.end();) {
      // Held only by the registry and by idle scopes forgotten above: no request, and no scope still in use.
      const auto heldByIdle = std::count_if(idleScopes.begin(), idleScopes.end(),
                                            [&](const std::shared_ptr<Scope>& s) { return s->db == it->second; });
      if (it->second.use_count() == 1 + heldByIdle && retiring_.insert(it->first).second) {
        spdlog::info("closing idle scope {}", it->first);
        idleDatabases.push_back(std::move(it->second));
        it = databases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  idleScopes.clear();
  const size_t closed = idleDatabases.size();
  for (auto& db : idleDatabases) {
    const std::string path = db->path;
    db.reset();  // the store closes here (a destructor: it does not throw)
    finishRetiring(path);
  }
  return closed;
}

void ScopeRegistry::checkpointAll() {
  std::vector<std::shared_ptr<ScopeDatabase>> open;
  {
    MutexLock lock(mutex_);
    for (const auto& [k, v] : databases_) open.push_back(v);
  }
  for (auto& db : open) {
    // A scope busy with a long call (a large import holds its lock until it commits) is checkpointed next time:
    // waiting for it here would take a worker from every other scope's requests meanwhile.
    if (!db->mutex.try_lock()) continue;
    if (Status st = db->store().checkpoint(); !st) spdlog::warn("checkpoint of {} failed: {}", db->path, st.message());
    db->mutex.unlock();
  }
}

size_t ScopeRegistry::commitPendingSaves(std::chrono::milliseconds idle) {
  std::vector<std::shared_ptr<ScopeDatabase>> open;
  {
    MutexLock lock(mutex_);
    for (const auto& [k, v] : databases_) open.push_back(v);
  }
  size_t pending = 0;
  for (auto& db : open) {
    // A batch is never committed into a removed file: the store retires instead (committing only if its database
    // is still in place), and the next request opens the file at the path.
    bool forgotten = false;
    std::shared_ptr<ScopeDatabase> toRetire;
    {
      MutexLock registryLock(mutex_);
      forgotten = forgetIfMoved(db, toRetire);
    }
    if (toRetire) retire(toRetire);
    if (forgotten) continue;
    MutexLock lock(db->mutex);
    auto still = db->store().commitPendingSavesIfIdle(idle);
    if (!still) {
      // Not retried from here: the next write to this database tries again first (and reports it).
      spdlog::error("commit of saves in {} failed (they stay in its journal): {}", db->path, still.status().message());
    } else if (*still) {
      ++pending;
    }
  }
  return pending;
}

std::vector<std::shared_ptr<Scope>> ScopeRegistry::projectScopes() {
  MutexLock lock(mutex_);
  std::vector<std::shared_ptr<Scope>> out;
  for (const auto& [key, scope] : scopes_) {
    if (scope->kind == ScopeKind::kProject) out.push_back(scope);
  }
  return out;
}

std::vector<std::string> ScopeRegistry::openScopePaths() {
  MutexLock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, v] : databases_) out.push_back(k);
  return out;
}

std::vector<std::string> ScopeRegistry::readOnlyScopePaths() {
  MutexLock lock(mutex_);
  std::vector<std::string> out;
  // storePtr is set before the database is shared, and writesElsewhere() is safe without the database's lock: a
  // request holding that lock never delays the answer.
  for (const auto& [k, v] : databases_) {
    if (v->storePtr->writesElsewhere()) out.push_back(k);
  }
  return out;
}

}  // namespace memq
