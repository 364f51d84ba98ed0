// Lazy opening and idle closing of scope databases; see scope_registry.h.
#include "daemon/service/scope_registry.h"

#include <spdlog/spdlog.h>

namespace memq {

ScopeRegistry::ScopeRegistry(ScopeRegistryOptions options) : options_(std::move(options)) {}

Result<std::shared_ptr<Scope>> ScopeRegistry::openScope(const std::string& key, const std::string& name,
                                                        const std::string& path, const std::string& root,
                                                        const ProjectLocation* location) {
  // Called with mutex_ held.
  auto it = scopes_.find(key);
  if (it != scopes_.end()) {
    it->second->lastUsed = std::chrono::steady_clock::now();
    return it->second;
  }
  StoreOptions so;
  so.path = path;
  so.scope = name;
  so.projectRoot = root;
  so.embedder = options_.embedder;
  auto store = MemoryStore::open(so);
  if (!store) {
    spdlog::error("cannot open {} scope at {}: {}", name, path, store.status().message());
    return Status(store.status().code() == ErrorCode::kStorageError ? ErrorCode::kStorageError
                                                                       : ErrorCode::kScopeUnavailable,
                  store.status().message(), nlohmann::json{{"scope", name}, {"path", path}});
  }
  auto scope = std::make_shared<Scope>();
  scope->name = name;
  scope->store = std::move(*store);
  if (location) {
    scope->location = *location;
    if (options_.repoFactory && location->inGit) scope->repo = options_.repoFactory(*location);
  }
  scope->lastUsed = std::chrono::steady_clock::now();
  scopes_[key] = scope;
  spdlog::info("opened {} scope {}", name, path);
  return scope;
}

Result<std::shared_ptr<Scope>> ScopeRegistry::global() {
  std::lock_guard lock(mutex_);
  std::string path = options_.dataDir + "/global.db";
  return openScope(path, "global", path, "", nullptr);
}

Result<ProjectLocation> ScopeRegistry::locate(const std::string& dir) {
  {
    std::lock_guard lock(mutex_);
    auto it = locations_.find(dir);
    if (it != locations_.end()) return it->second;
  }
  auto loc = locateProject(dir, false);
  if (!loc) {
    return Status(ErrorCode::kScopeUnavailable, "project root " + dir + ": " + loc.status().message(),
                  nlohmann::json{{"field", "project_root"}});
  }
  std::lock_guard lock(mutex_);
  locations_[dir] = *loc;
  return *loc;
}

Result<std::shared_ptr<Scope>> ScopeRegistry::project(const std::string& dir) {
  auto loc = locate(dir);
  if (!loc) return loc.status();
  std::lock_guard lock(mutex_);
  return openScope(loc->dbPath, "project", loc->dbPath, loc->root, &*loc);
}

size_t ScopeRegistry::closeIdle(std::chrono::steady_clock::duration idle) {
  std::lock_guard lock(mutex_);
  size_t closed = 0;
  auto now = std::chrono::steady_clock::now();
  for (auto it = scopes_.begin(); it != scopes_.end();) {
    // use_count 1: only the registry holds it, so no request is inside it.
    if (it->second.use_count() == 1 && now - it->second->lastUsed > idle) {
      spdlog::info("closing idle scope {}", it->first);
      it = scopes_.erase(it);
      ++closed;
    } else {
      ++it;
    }
  }
  return closed;
}

void ScopeRegistry::checkpointAll() {
  std::vector<std::shared_ptr<Scope>> open;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [k, v] : scopes_) open.push_back(v);
  }
  for (auto& scope : open) {
    std::lock_guard lock(scope->mutex);
    if (Status st = scope->store->checkpoint(); !st) spdlog::warn("checkpoint of {} failed: {}", scope->store->path(), st.message());
  }
}

std::vector<std::string> ScopeRegistry::openScopePaths() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, v] : scopes_) out.push_back(k);
  return out;
}

}  // namespace memq
