// Opening team scopes (replica, outbox, sync thread) and reading which project names which; see team_scopes.h.
#include "daemon/service/team_scopes.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "daemon/team/team_config.h"
#include "daemon/util/durable_file.h"
#include "daemon/util/sha256.h"
#include "schema/embedded_migrations.h"

namespace memq {

TeamScopes::TeamScopes(std::string dataDir, const Embedder* embedder, std::function<void(const ChangeEvent&)> emit)
    : dataDir_(std::move(dataDir)), embedder_(embedder), emit_(std::move(emit)) {}

TeamScopes::~TeamScopes() {
  std::map<std::string, std::shared_ptr<Scope>> scopes;
  {
    MutexLock lock(mutex_);
    scopes.swap(scopes_);
  }
  for (auto& [key, scope] : scopes) scope->team.reset();  // joins the sync thread before the replica closes
}

Result<std::optional<std::string>> TeamScopes::configured(const ProjectLocation& location) {
  Configured& c = projects_[location.root];
  struct stat st {};
  const std::string path = teamConfigPath(location);
  int64_t stampNs = -1;
  int64_t size = -1;
  if (::stat(path.c_str(), &st) == 0) {
    stampNs = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    size = static_cast<int64_t>(st.st_size);
  }
  if (stampNs == c.stampNs && size == c.size) return c.conninfo;
  auto read = readTeamConninfo(location);
  if (!read) return read.status();
  // A setting written by hand may name a password: it is not used (nor shown), as team/connect would refuse it.
  if (*read) MEMQ_RETURN_IF_ERROR(checkTeamConninfo(**read, "memq.team"));
  c = Configured{*read, stampNs, size};
  return c.conninfo;
}

namespace {
// The name of a team server's replica, outbox and scope: its conninfo in libpq's own form (the parameters in one
// order, a URI spelled as key='value' pairs), so that two spellings of one server share one scope and one sync
// thread, never two drains of one outbox.
std::string scopeKey(const std::string& conninfo) { return sha256Hex(conninfoWithoutPassword(conninfo)); }
}  // namespace

Result<std::shared_ptr<Scope>> TeamScopes::open(const std::string& conninfo) {
  const std::string key = scopeKey(conninfo);
  if (auto it = scopes_.find(key); it != scopes_.end()) return it->second;
  const std::string dir = dataDir_ + "/team";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  StoreOptions so;
  so.path = dir + "/" + key + ".db";
  so.scope = toString(ScopeKind::kTeam);
  so.embedder = embedder_;
  auto store = MemoryStore::open(so);
  if (!store) {
    return Status(ErrorCode::kStorageError, "cannot open the team replica " + so.path + ": " + store.status().message(),
                  nlohmann::json{{"scope", "team"}, {"path", so.path}});
  }
  auto db = std::make_shared<ScopeDatabase>();
  db->path = so.path;
  db->storePtr = std::move(*store);
  auto scope = std::make_shared<Scope>();
  scope->kind = ScopeKind::kTeam;
  scope->db = db;
  scope->lastUsed = std::chrono::steady_clock::now();
  TeamReplicaHooks hooks;
  // The hooks hold the replica, not the Scope: the Scope holds the TeamSync, which holds the hooks.
  hooks.lastSeq = [db]() -> Result<int64_t> {
    MutexLock lock(db->mutex);
    return db->store().replicaSeq();
  };
  hooks.mark = [db]() -> Result<ReplicaMark> {
    MutexLock lock(db->mutex);
    return db->store().replicaMark();
  };
  hooks.reset = [db]() -> Status {
    CommittedLock lock(*db);
    return db->store().resetReplica();
  };
  hooks.apply = [db](std::vector<ReplicatedChange> changes) -> Result<std::vector<ReplicatedChange>> {
    CommittedLock lock(*db);
    return db->store().applyReplicated(std::move(changes));
  };
  hooks.changed = [emit = emit_](const std::vector<ReplicatedChange>& applied) {
    for (const auto& c : applied) {
      if (c.action == "blocked_save") continue;  // nothing changed: a save the server refused
      emit(ChangeEvent{ScopeKind::kTeam, "", c.memory.id, c.action});
    }
  };
  TeamSyncOptions options;
  options.conninfo = conninfo;
  options.outboxPath = dir + "/" + key + ".outbox";
  scope->team = std::make_shared<TeamSync>(std::move(options), std::move(hooks));
  scope->team->start();
  // Beside the replica, so that a restarted memqd can send a queued save before any project asks (resumeQueued).
  // Replaced whole, and only when it changes: a crash while it is written leaves the old one, never an empty file
  // that would leave a queued save unsent until a project asks for its scope.
  const std::string conninfoPath = dir + "/" + key + ".conninfo";
  std::string saved;
  if (std::ifstream in(conninfoPath); in) std::getline(in, saved);
  if (saved != conninfo) {
    if (Status st = replaceFileDurably(conninfoPath, conninfo + "\n"); !st) {
      spdlog::warn("team scope {}: {}; a restart will not send its queued saves until a project uses it",
                   scope->team->displayConninfo(), st.message());
    }
  }
  spdlog::info("opened team scope {} (replica {})", scope->team->displayConninfo(), so.path);
  scopes_[key] = scope;
  return scope;
}

void TeamScopes::resumeQueued() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dataDir_ + "/team", ec)) {
    if (entry.path().extension() != ".outbox" || std::filesystem::file_size(entry.path(), ec) == 0) continue;
    std::ifstream in(entry.path().parent_path() / (entry.path().stem().string() + ".conninfo"));
    std::string conninfo;
    if (!std::getline(in, conninfo) || conninfo.empty() || !checkTeamConninfo(conninfo).isOk()) continue;
    MutexLock lock(mutex_);
    auto scope = open(conninfo);
    if (!scope) spdlog::warn("cannot resume the team scope of {}: {}", entry.path().string(), scope.status().message());
  }
}

Status TeamScopes::migrateIfReachable(const std::string& conninfo) {
  auto client = TeamClient::connect(withTimeouts(conninfo, 2));
  // A server that cannot be reached now is set up all the same: the scope starts offline and syncs once it is up.
  // One that answered no (a refused login: Forbidden; a server too old: StorageError) is not: the caller is told why.
  if (!client) return client.status().code() == ErrorCode::kScopeUnavailable ? Status::ok() : client.status();
  auto version = (*client)->schemaVersion();
  if (!version) return version.status();
  const auto& known = embeddedTeamMigrations();
  if (known.empty() || *version >= known.back().version) return Status::ok();
  Status migrated = (*client)->migrate();
  if (migrated.code() == ErrorCode::kForbidden) {
    return Status(ErrorCode::kForbidden,
                  "the team database has no (or an older) memq schema and this role may not create it: connect once "
                  "as the database's owner (a role with CREATEROLE) to set it up; " + migrated.message(),
                  nlohmann::json{{"field", "conninfo"}});
  }
  return migrated;
}

Result<std::shared_ptr<Scope>> TeamScopes::forProject(const ProjectLocation& location) {
  MutexLock lock(mutex_);
  auto conninfo = configured(location);
  if (!conninfo) return conninfo.status();
  if (!*conninfo) return std::shared_ptr<Scope>();
  return open(**conninfo);
}

bool TeamScopes::isOpenFor(const ProjectLocation& location) {
  if (!mutex_.try_lock()) return false;
  bool open = false;
  if (auto it = projects_.find(location.root); it != projects_.end()) {
    // configured() re-reads a setting whose file changed (a stat); a changed one may name a team not open yet.
    auto conninfo = configured(location);
    open = conninfo && (!*conninfo || scopes_.count(scopeKey(**conninfo)) != 0);
  }
  mutex_.unlock();
  return open;
}

Result<std::shared_ptr<Scope>> TeamScopes::connect(const ProjectLocation& location, const std::string& conninfo) {
  MEMQ_RETURN_IF_ERROR(checkTeamConninfo(conninfo));
  MEMQ_RETURN_IF_ERROR(migrateIfReachable(conninfo));
  std::optional<std::string> previous;  // the server the project named before, if any
  {
    // The replica is opened before the setting is written: one that cannot be opened leaves the project as it was.
    MutexLock lock(mutex_);
    if (auto was = configured(location); was) previous = *was;
    auto replica = open(conninfo);
    if (!replica) return replica.status();
  }
  MEMQ_RETURN_IF_ERROR(writeTeamConninfo(location, conninfo));
  std::shared_ptr<Scope> closing;  // released after the lock: its sync thread is joined when the last holder goes
  Result<std::shared_ptr<Scope>> out = Status::internal("unreached");
  {
    MutexLock lock(mutex_);
    projects_.erase(location.root);  // read again below
    auto configuredNow = configured(location);
    if (!configuredNow) return configuredNow.status();
    if (previous) closing = takeIfUnused(*previous);
    out = open(conninfo);
  }
  if (closing) spdlog::info("closed team scope {}", closing->team->displayConninfo());
  return out;
}

std::shared_ptr<Scope> TeamScopes::takeIfUnused(const std::string& conninfo) {
  const std::string key = scopeKey(conninfo);
  for (const auto& [root, c] : projects_) {
    if (c.conninfo && scopeKey(*c.conninfo) == key) return nullptr;  // another project still uses it
  }
  auto it = scopes_.find(key);
  if (it == scopes_.end()) return nullptr;
  // Saves queued for that server are still sent: the scope stays until memqd stops (and is opened for them again at
  // the next start, resumeQueued).
  if (it->second->team && it->second->team->status().queued > 0) return nullptr;
  std::shared_ptr<Scope> taken = std::move(it->second);
  scopes_.erase(it);
  return taken;
}

Status TeamScopes::disconnect(const ProjectLocation& location) {
  MEMQ_RETURN_IF_ERROR(writeTeamConninfo(location, std::nullopt));
  std::shared_ptr<Scope> closing;
  {
    MutexLock lock(mutex_);
    auto it = projects_.find(location.root);
    if (it == projects_.end() || !it->second.conninfo) return Status::ok();
    const std::string conninfo = *it->second.conninfo;
    projects_.erase(it);
    closing = takeIfUnused(conninfo);
  }
  // A request holding the scope keeps its replica; the sync thread stops with the last holder.
  if (closing) spdlog::info("closed team scope {}", closing->team->displayConninfo());
  return Status::ok();
}

}  // namespace memq
