// ScopeRegistry: the open databases — the global one and one per project root — shared by every connection,
// opened lazily on first use and closed when idle (MEMQ.md §4).
// Scope: one database with its lock. Every call into scope->store (and scope->repo's use by recall) happens while
// holding scope->mutex; that is what serialises writes per scope.
// Thread-safety: ScopeRegistry is thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/embed/embedder.h"
#include "daemon/git/repo_location.h"
#include "daemon/recall/repo_signals.h"
#include "daemon/store/memory_store.h"

namespace memq {

struct Scope {
  std::string name;  // "global" | "project"
  ProjectLocation location;  // project scopes only
  std::mutex mutex;
  std::unique_ptr<MemoryStore> store;
  std::shared_ptr<RepoSignals> repo;  // project scopes in git; may be null
  std::chrono::steady_clock::time_point lastUsed;
};

// Builds the repository signals for a project (GitRepoSignals in the daemon; tests may pass a fake or nothing).
using RepoSignalsFactory = std::function<std::shared_ptr<RepoSignals>(const ProjectLocation&)>;

struct ScopeRegistryOptions {
  std::string dataDir;  // holds global.db
  const Embedder* embedder = nullptr;
  RepoSignalsFactory repoFactory;  // may be empty: no repository signals
};

class ScopeRegistry {
 public:
  explicit ScopeRegistry(ScopeRegistryOptions options);

  Result<std::shared_ptr<Scope>> global();
  // `dir` is any directory inside the project; the root is resolved per MEMQ.md §4.
  Result<std::shared_ptr<Scope>> project(const std::string& dir);
  Result<ProjectLocation> locate(const std::string& dir);

  // Closes scopes nobody holds and nobody used for `idle`. Returns how many were closed.
  size_t closeIdle(std::chrono::steady_clock::duration idle);
  std::vector<std::string> openScopePaths();
  // Copies each open scope's WAL back into its database (saves never pay for that themselves).
  void checkpointAll();

 private:
  Result<std::shared_ptr<Scope>> openScope(const std::string& key, const std::string& name, const std::string& path,
                                           const std::string& root, const ProjectLocation* location);

  ScopeRegistryOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Scope>> scopes_;  // key: database path
  std::map<std::string, ProjectLocation> locations_;      // key: directory asked for
};

}  // namespace memq
