// TeamScopes: the team scopes memqd has open (docs/team.md) — one per configured conninfo, whichever projects name
// it — and which project names which. A team Scope's database is its local replica (a scope file of its own in
// memqd's data dir, team/<sha256 of the conninfo without password>.db, the outbox beside it) and its `team` the
// TeamSync that feeds it; both are made the first time a request of a project configured for it arrives, and kept
// until memqd stops (or the last project using it disconnects). A project's setting is read from its config file
// (team_config.h) again whenever that file changes, so `memq team connect` in a shell takes effect at the next request.
// Thread-safety: thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "daemon/service/scope_registry.h"
#include "daemon/service/service_types.h"
#include "daemon/team/team_sync.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

class TeamScopes {
 public:
  TeamScopes(std::string dataDir, const Embedder* embedder, std::function<void(const ChangeEvent&)> emit);
  ~TeamScopes();  // stops every sync thread

  // The team scope `location` is configured for, opened on first use; nullptr when it has none.
  Result<std::shared_ptr<Scope>> forProject(const ProjectLocation& location);
  // Whether forProject(location) would open nothing: the project's setting was read before and names no team or a
  // team whose scope is open. False when unsure, and when another call holds the lock (it may be opening a replica):
  // for the server's choice of thread, so it never waits.
  bool isOpenFor(const ProjectLocation& location);
  // Checks the conninfo, applies the server's migrations when the server is reachable and behind (which takes the
  // database owner's role the first time), stores it in the project's config, then opens the scope.
  Result<std::shared_ptr<Scope>> connect(const ProjectLocation& location, const std::string& conninfo);
  // Opens every team scope whose outbox holds queued saves (memqd restarted with some), so that they are sent
  // without waiting for a request of a project that names it. The conninfo is the one recorded beside the replica.
  void resumeQueued();
  // Removes the project's setting; the scope is closed once no project open here uses it.
  Status disconnect(const ProjectLocation& location);

 private:
  struct Configured {
    std::optional<std::string> conninfo;
    int64_t stampNs = -1;  // the config file's mtime (ns) and size when read; -1: missing
    int64_t size = -1;
  };
  Result<std::shared_ptr<Scope>> open(const std::string& conninfo) REQUIRES(mutex_);
  // The scope of `conninfo`'s server, taken out of scopes_ when no project names it any more and its outbox is empty;
  // nullptr when it stays. The caller lets go of it after releasing mutex_ (the last holder joins its sync thread).
  std::shared_ptr<Scope> takeIfUnused(const std::string& conninfo) REQUIRES(mutex_);
  static Status migrateIfReachable(const std::string& conninfo);
  Result<std::optional<std::string>> configured(const ProjectLocation& location) REQUIRES(mutex_);

  std::string dataDir_;
  const Embedder* embedder_;
  std::function<void(const ChangeEvent&)> emit_;
  Mutex mutex_;
  std::map<std::string, Configured> projects_ GUARDED_BY(mutex_);          // key: project root
  std::map<std::string, std::shared_ptr<Scope>> scopes_ GUARDED_BY(mutex_);  // key: scopeKey(conninfo)
};

}  // namespace memq
