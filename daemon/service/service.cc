// Service's core (service.h): the context of a request (CommonParams narrowing its connection), initialize and the
// hint state of connections and tabs, which scopes a request reads and writes, id resolution, path normalisation,
// the change listener, and the hints/* methods. The other methods live in the files service.h names.
#include "daemon/service/service.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "daemon/anchors/line_ranges.h"
#include "daemon/model/file_path.h"
#include "daemon/service/hint_gathering.h"
#include "daemon/service/working_set_anchors.h"
#include "daemon/util/uuid.h"

namespace memq {

namespace {

bool narrows(ReadScope connection, ReadScope request) {
  if (connection == ReadScope::kAll || request == ReadScope::kNone) return true;
  return connection == request;
}

// A request (or a repeated initialize) may narrow the connection's read scope, never widen it: ok when `request` is
// within `connection`, else the error naming read_scope.
Status checkNarrows(ReadScope connection, ReadScope request) {
  if (narrows(connection, request)) return Status::ok();
  return Status(ErrorCode::kScopeUnavailable,
                std::string("read_scope ") + readScopeName(request) + " is wider than this connection's (" +
                    readScopeName(connection) + ")",
                nlohmann::json{{"field", "read_scope"}});
}

ReadScope readScopeOf(ScopeKind kind) { return kind == ScopeKind::kProject ? ReadScope::kProject : ReadScope::kGlobal; }

// `project_root` names a directory that memqd opens: a NUL would cut it short at the first system call (std::filesystem
// hands the kernel its c_str()), so that the prefix before it — another project — would be used.
Status checkProjectRoot(const std::string& root) {
  if (root.find('\0') != std::string::npos) {
    return Status::invalidField("project_root", "project_root contains a NUL byte");
  }
  if (root.size() > kMaxPathBytes) {
    return Status::invalidField("project_root", "project_root is " + std::to_string(root.size()) +
                                                    " bytes long; a path has at most " + std::to_string(kMaxPathBytes) +
                                                    " bytes");
  }
  return Status::ok();
}

}  // namespace

bool parseReadScope(const std::string& s, ReadScope& out) {
  if (s == "project") out = ReadScope::kProject;
  else if (s == "global") out = ReadScope::kGlobal;
  else if (s == "all" || s == "both") out = ReadScope::kAll;
  else if (s == "none") out = ReadScope::kNone;
  else return false;
  return true;
}

bool parseWriteScope(const std::string& s, WriteScope& out) {
  if (s == "project") out = WriteScope::kProject;
  else if (s == "global") out = WriteScope::kGlobal;
  else if (s == "none") out = WriteScope::kNone;
  else return false;
  return true;
}

const char* readScopeName(ReadScope s) {
  switch (s) {
    case ReadScope::kProject: return "project";
    case ReadScope::kGlobal: return "global";
    case ReadScope::kAll: return "all";
    case ReadScope::kNone: return "none";
  }
  return "all";
}

const char* writeScopeName(WriteScope s) {
  switch (s) {
    case WriteScope::kProject: return "project";
    case WriteScope::kGlobal: return "global";
    case WriteScope::kNone: return "none";
  }
  return "project";
}

Service::Service(ServiceOptions options)
    : options_(std::move(options)),
      registry_(ScopeRegistryOptions{options_.dataDir, options_.embedder, options_.repoFactory, options_.saveBatch}),
      teams_(std::make_unique<TeamScopes>(options_.dataDir, options_.embedder,
                                          [this](const ChangeEvent& e) { emitEvent(e); })) {
  teams_->resumeQueued();
}

void Service::commitPendingSaves(std::chrono::milliseconds idle) {
  // Cleared first: a save that lands after this point sets it again, and is committed by a later call.
  savesPending_.store(false);
  if (registry_.commitPendingSaves(idle) > 0) savesPending_.store(true);
}

Service::~Service() { teams_.reset(); }  // the sync threads stop before anything they call goes

void Service::setChangeListener(std::function<void(const ChangeEvent&)> listener) {
  MutexLock lock(listenerMutex_);
  listener_ = std::move(listener);
}

void Service::emit(const Scope& scope, const std::string& id, const std::string& action) {
  emitEvent({scope.kind, scope.location.root, id, action});
}

void Service::emitEvent(const ChangeEvent& event) {
  // Called under the lock, so that setChangeListener(nullptr) returns only once no call is in progress: a team sync
  // thread must not post to a server being destroyed. A listener only hands the event on (it must not call back in).
  MutexLock lock(listenerMutex_);
  if (listener_) listener_(event);
}

Status Service::requireWrites(const CallContext& ctx, bool namingScope) {
  if (ctx.writeScope != WriteScope::kNone) return Status::ok();
  static const char* kMessage = "writes are disabled for this connection (write_scope none)";
  if (namingScope) return Status(ErrorCode::kScopeUnavailable, kMessage, nlohmann::json{{"field", "scope"}});
  return Status(ErrorCode::kScopeUnavailable, kMessage);
}

Status Service::scrubFreeText(std::optional<std::string>& text, const std::string& field) const {
  return scrubber().scrub(text, field);
}

Result<CallContext> Service::context(ClientState& client, const CommonParams& params) {
  CallContext ctx;
  ctx.client = &client;
  {
    MutexLock lock(client.mutex);
    ctx.projectRoot = client.projectRoot;
    ctx.readScope = client.readScope;
    ctx.writeScope = client.writeScope;
    ctx.actor = Actor{client.source, client.clientName};
  }
  if (params.projectRoot) {
    ctx.projectRoot = *params.projectRoot;
    MEMQ_RETURN_IF_ERROR(checkProjectRoot(ctx.projectRoot));
  }
  if (params.readScope) {
    MEMQ_RETURN_IF_ERROR(checkNarrows(ctx.readScope, *params.readScope));
    ctx.readScope = *params.readScope;
  }
  if (params.writeScope) {
    const WriteScope w = *params.writeScope;
    // docs/design.md §4: a request may narrow the connection's write scope (to itself or to none), never widen or move it.
    if (w != ctx.writeScope && w != WriteScope::kNone) {
      return Status(ErrorCode::kScopeUnavailable,
                    std::string("write_scope ") + writeScopeName(w) + " is wider than this connection's (" +
                        writeScopeName(ctx.writeScope) + ")",
                    nlohmann::json{{"field", "write_scope"}});
    }
    ctx.writeScope = w;
    ctx.writeScopeNarrowed = true;
  }
  ctx.scopeOverride = params.scope;
  if (params.source) ctx.actor.source = *params.source;
  return ctx;
}

Result<InitializeResult> Service::initialize(ClientState& client, const InitializeRequest& request) {
  // Checked before anything changes: a refused initialize leaves the connection as it was.
  std::optional<std::string> clientName = request.clientName;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(clientName, "client_name"));
  if (request.projectRoot) MEMQ_RETURN_IF_ERROR(checkProjectRoot(*request.projectRoot));
  const std::string& parentToken = request.parent;
  if (request.readScope) {
    MutexLock lock(client.mutex);
    MEMQ_RETURN_IF_ERROR(checkNarrows(client.readScope, *request.readScope));
  }
  // The project is located before anything changes too: a root memqd cannot open leaves the connection as it was
  // (the CLI then initialises again without one).
  std::optional<ProjectLocation> project;
  {
    std::string root;
    {
      MutexLock lock(client.mutex);
      root = request.projectRoot ? *request.projectRoot : client.projectRoot;
    }
    if (!root.empty()) {
      auto loc = registry_.locate(root);
      if (!loc) return loc.status();
      project = std::move(*loc);
    }
  }
  std::unordered_set<std::string> inherited;
  const bool isSubagent = !parentToken.empty();
  if (isSubagent) {
    std::shared_ptr<TabHints> parentHints;
    {
      MutexLock reg(clientsMutex_);
      auto it = clients_.find(parentToken);
      if (it == clients_.end()) {
        return Status(ErrorCode::kInvalidParams, "parent session " + parentToken + " is not connected",
                      nlohmann::json{{"field", "parent"}});
      }
      parentHints = hintsOf(*it->second);
    }
    MutexLock lock(parentHints->mutex);
    inherited = parentHints->state.seenSet();
  }
  {
    MutexLock lock(client.mutex);
    client.clientName = std::move(*clientName);
    if (request.projectRoot) client.projectRoot = *request.projectRoot;
    if (request.readScope) client.readScope = *request.readScope;
    if (request.writeScope) client.writeScope = *request.writeScope;
    if (request.source) client.source = *request.source;
  }
  // A named tab resumes its hint state; a tab seen for the first time (or a connection without one) starts fresh.
  // A subagent's tab is kept apart from its parent's tab of the same name: it has its own budget and inheritance.
  std::shared_ptr<TabHints> hints;
  bool freshHints = true;
  std::string tabKey = request.tab;
  if (!tabKey.empty() && isSubagent) tabKey = "subagent of " + parentToken + ": " + tabKey;
  if (!tabKey.empty()) {
    hints = attachTab(tabKey, freshHints);
  } else if (isSubagent) {
    hints = std::make_shared<TabHints>();
  } else {
    MutexLock lock(client.mutex);
    // A plain connection keeps its own state across a repeated initialize; one that named a tab before, or was a
    // subagent, leaves that state (its budget and inheritance were a subagent's).
    hints = client.tabKey.empty() && !client.subagentHints ? client.hints : std::make_shared<TabHints>();
    freshHints = false;
  }
  if (isSubagent && freshHints) {
    MutexLock lock(hints->mutex);
    hints->state = HintState{};
    hints->state.budgetLimit = kSubagentHintBudget;
    hints->state.inheritedFromParent = std::move(inherited);
  }
  InitializeResult result;
  result.embedderModel = std::string(options_.embedder->model());
  result.project = std::move(project);
  {
    MutexLock lock(client.mutex);
    if (client.token.empty()) client.token = newUuidV4();
    result.session = client.token;
    client.initialized = true;
    client.hints = std::move(hints);
    client.tabKey = tabKey;
    client.subagentHints = isSubagent;
  }
  {
    // Checked under the registry's lock: forget() marks the state closed before it takes that lock, so either it
    // runs after this and unregisters the token, or this sees the mark and registers none.
    MutexLock reg(clientsMutex_);
    MutexLock lock(client.mutex);
    if (!client.closed) clients_[result.session] = &client;
  }
  return result;
}

std::shared_ptr<TabHints> Service::hintsOf(ClientState& client) {
  MutexLock lock(client.mutex);
  return client.hints;
}

void Service::markActed(ClientState* client) {
  if (client == nullptr) return;
  auto tab = hintsOf(*client);
  MutexLock lock(tab->mutex);
  tab->state.actedThisTurn = true;
}

std::shared_ptr<TabHints> Service::attachTab(const std::string& tab, bool& created) {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  MutexLock lock(tabsMutex_);
  if (auto it = tabs_.find(tab); it != tabs_.end()) {
    it->second.lastSeen = now;
    created = false;
    return it->second.hints;
  }
  // A tab nobody has used for kTabRetention is forgotten (its agent session is over); past kMaxRetainedTabs the
  // longest-idle tabs without a live connection go first, so a flood of tab names cannot grow memqd without bound.
  std::erase_if(tabs_, [&](const auto& entry) {
    return entry.second.hints.use_count() == 1 && now - entry.second.lastSeen > kTabRetention;
  });
  while (tabs_.size() >= kMaxRetainedTabs) {
    auto oldest = tabs_.end();
    for (auto it = tabs_.begin(); it != tabs_.end(); ++it) {
      if (it->second.hints.use_count() == 1 && (oldest == tabs_.end() || it->second.lastSeen < oldest->second.lastSeen)) {
        oldest = it;
      }
    }
    if (oldest == tabs_.end()) break;  // every retained tab has a live connection
    tabs_.erase(oldest);
  }
  auto& added = tabs_[tab];
  added.hints = std::make_shared<TabHints>();
  added.lastSeen = now;
  created = true;
  return added.hints;
}

void Service::forget(ClientState& client) {
  std::string tabKey;
  {
    MutexLock lock(client.mutex);
    client.closed = true;
    tabKey = client.tabKey;
  }
  if (!tabKey.empty()) {
    // Retention counts from the tab's last connection, not its first.
    MutexLock lock(tabsMutex_);
    if (auto it = tabs_.find(tabKey); it != tabs_.end()) it->second.lastSeen = std::chrono::steady_clock::now();
  }
  MutexLock reg(clientsMutex_);
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second == &client) it = clients_.erase(it);
    else ++it;
  }
}

Result<std::shared_ptr<Scope>> Service::projectScope(const CallContext& ctx) {
  if (ctx.projectRoot.empty()) {
    return Status(ErrorCode::kScopeUnavailable, "no project: pass project_root (or set it at initialize)",
                  nlohmann::json{{"field", "project_root"}});
  }
  return registry_.project(ctx.projectRoot);
}

bool Service::scopesOpenFor(ClientState& client, const CommonParams& params, ScopeUse use) {
  if (use == ScopeUse::kNone) return true;
  if (use == ScopeUse::kLocation) {
    // initialize locates the root it names, or the connection's (it opens no scope).
    std::string root;
    if (params.projectRoot) {
      root = *params.projectRoot;
    } else {
      MutexLock lock(client.mutex);
      root = client.projectRoot;
    }
    return root.empty() || registry_.locatedAlready(root).has_value();
  }
  auto ctx = context(client, params);
  if (!ctx) return false;
  // Every method below normalises its files against the project's root, located even when no project scope is read.
  // Taken once from the registry's cache, never located here: locating walks the file system.
  std::optional<ProjectLocation> located;
  if (!ctx->projectRoot.empty() && !(located = registry_.locatedAlready(ctx->projectRoot))) return false;
  if (ctx->scopeOverride == ScopeKind::kTeam) return false;
  // What readScopes and writeScope resolve, asked of the registry instead of opened; a request they refuse (no
  // project, a scope not readable here) opens nothing and is answered at once.
  bool project = false;
  bool global = false;
  if (use == ScopeUse::kWrite) {
    if (ctx->writeScope == WriteScope::kNone) return true;
    const ScopeKind narrowed = ctx->writeScope == WriteScope::kGlobal ? ScopeKind::kGlobal : ScopeKind::kProject;
    global = ctx->scopeOverride.value_or(narrowed) == ScopeKind::kGlobal;
    project = !global;
  } else {
    ReadScope r = ctx->readScope;
    if (ctx->scopeOverride) {
      const ReadScope wanted = readScopeOf(*ctx->scopeOverride);
      if (!narrows(r, wanted)) return true;
      r = wanted;
    }
    project = r == ReadScope::kProject || (r == ReadScope::kAll && !ctx->projectRoot.empty());
    global = r == ReadScope::kGlobal || r == ReadScope::kAll;
  }
  if (project && !ctx->projectRoot.empty() && !registry_.projectIsOpen(ctx->projectRoot)) return false;
  if (global && !registry_.globalIsOpen()) return false;
  // An `all` read of a project also reads its team scope (readScopes), whose replica is opened on first use.
  if (use == ScopeUse::kRead && project && global && (!located || !teams_->isOpenFor(*located))) return false;
  return true;
}

Result<std::vector<std::shared_ptr<Scope>>> Service::readScopes(const CallContext& ctx, LeftOutScope* leftOut) {
  std::vector<std::shared_ptr<Scope>> out;
  ReadScope r = ctx.readScope;
  if (ctx.scopeOverride == ScopeKind::kTeam) {
    // A team scope is read with `all` (it has no read_scope of its own): a narrower connection does not read it.
    if (r != ReadScope::kAll) {
      return Status(ErrorCode::kScopeUnavailable, "scope team is not readable here (read_scope is not all)",
                    nlohmann::json{{"field", "scope"}});
    }
    auto t = teamScope(ctx, /*required=*/true);
    if (!t) return t.status();
    out.push_back(*t);
    return out;
  }
  if (ctx.scopeOverride) {
    const ReadScope wanted = readScopeOf(*ctx.scopeOverride);
    if (!narrows(r, wanted)) {
      return Status(ErrorCode::kScopeUnavailable, std::string("scope ") + toString(*ctx.scopeOverride) +
                                                      " is not readable here",
                    nlohmann::json{{"field", "scope"}});
    }
    r = wanted;
  }
  if (r == ReadScope::kProject || (r == ReadScope::kAll && !ctx.projectRoot.empty())) {
    auto p = projectScope(ctx);
    if (!p) return p.status();
    out.push_back(*p);
  }
  if (r == ReadScope::kGlobal || r == ReadScope::kAll) {
    auto g = registry_.global();
    if (g) {
      out.push_back(*g);
    } else if (leftOut && r == ReadScope::kAll && !out.empty()) {
      leftOut->global = g.status();
    } else {
      return g.status();
    }
  }
  if (r == ReadScope::kAll && !ctx.projectRoot.empty()) {
    auto t = teamScope(ctx, /*required=*/false);
    if (!t) return t.status();
    if (*t) out.push_back(*t);
  }
  return out;
}

Result<std::shared_ptr<Scope>> Service::writeScope(const CallContext& ctx) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx, /*namingScope=*/true));
  // Writes reach the team only when the request asks for it by name, never through write_scope.
  if (ctx.scopeOverride == ScopeKind::kTeam) return teamScope(ctx, /*required=*/true);
  const ScopeKind narrowed = ctx.writeScope == WriteScope::kGlobal ? ScopeKind::kGlobal : ScopeKind::kProject;
  if (ctx.writeScopeNarrowed && ctx.scopeOverride && *ctx.scopeOverride != narrowed) {
    // The request named its write scope itself; a `scope` elsewhere contradicts it.
    return Status(ErrorCode::kScopeUnavailable,
                  std::string("scope ") + toString(*ctx.scopeOverride) +
                      " is not writable with this request's write_scope " + toString(narrowed),
                  nlohmann::json{{"field", "scope"}});
  }
  if (ctx.scopeOverride.value_or(narrowed) == ScopeKind::kGlobal) return registry_.global();
  return projectScope(ctx);
}

Result<std::vector<std::shared_ptr<Scope>>> Service::idScopes(const CallContext& ctx, LeftOutScope* leftOut) {
  // An id is looked up where the request may read, and nowhere else: a connection narrowed to its project neither
  // reads nor changes a global or team memory by id, nor learns of one from an ambiguous prefix's candidates.
  if (ctx.readScope == ReadScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "read_scope is none: no memory can be looked up by id",
                  nlohmann::json{{"field", "read_scope"}});
  }
  return readScopes(ctx, leftOut);
}

Result<Service::Resolved> Service::resolve(const CallContext& ctx, const std::string& idOrPrefix,
                                           const std::string& field) {
  if (idOrPrefix.empty()) return Status::invalidField(field, field + " must not be empty");
  // A global scope that cannot be opened is left out, and an exact id found elsewhere is still that memory (ids are
  // unique); but a prefix, or an id found nowhere, could be the global scope's: then its error is the answer.
  LeftOutScope leftOut;
  auto scopes = idScopes(ctx, &leftOut);
  if (!scopes) return scopes.status();
  auto unlessLeftOut = [&](Status answer) -> Status { return leftOut.global ? *leftOut.global : answer; };
  std::vector<Resolved> found;
  nlohmann::json candidates = nlohmann::json::array();
  for (auto& scope : *scopes) {
    CommittedLock lock(*scope->db);
    auto ids = scope->db->store().matchIds(idOrPrefix, 10);
    if (!ids) return ids.status();
    for (const auto& id : *ids) {
      if (id == idOrPrefix) return Resolved{scope, id};  // an exact id wins outright
      found.push_back({scope, id});
      candidates.push_back({{"scope", toString(scope->kind)}, {"id", id}});
    }
  }
  if (found.empty()) {
    if (idOrPrefix.size() < 4) {
      return unlessLeftOut(Status(ErrorCode::kNotFound,
                                  "no memory with id '" + idOrPrefix + "' (a prefix needs at least 4 characters)",
                                  nlohmann::json{{"field", field}}));
    }
    return unlessLeftOut(Status(ErrorCode::kNotFound, "no memory with id or prefix '" + idOrPrefix + "'",
                                nlohmann::json{{"field", field}}));
  }
  if (found.size() > 1) {
    return Status(ErrorCode::kAmbiguous,
                  "id prefix '" + idOrPrefix + "' matches " + std::to_string(found.size()) +
                      " memories; use a longer prefix or the full id",
                  nlohmann::json{{"field", field}, {"candidates", candidates}});
  }
  if (Status st = unlessLeftOut(Status::ok()); !st) return st;
  return found.front();
}

Result<std::vector<std::string>> Service::normalizePaths(const CallContext& ctx, Scope* scope,
                                                         const std::vector<std::string>& paths,
                                                         const std::string& field, size_t maxFiles) {
  std::string root = scope && scope->kind == ScopeKind::kProject ? scope->location.root : std::string();
  if (!scope && !ctx.projectRoot.empty()) {
    auto loc = registry_.locate(ctx.projectRoot);
    if (loc) root = loc->root;
  }
  auto out = normalizeFiles(paths, root, field, maxFiles);
  if (!out && field == "file" && paths.size() == 1) {
    // `file` is one path, not a list: name it as the client sent it ("file", not "file[0]").
    std::string message = out.status().message();
    for (size_t at; (at = message.find("file[0]")) != std::string::npos;) message.replace(at, 7, "file");
    nlohmann::json data = out.status().data();
    if (data.is_object()) data["field"] = field;
    return Status(out.status().code(), message, data);
  }
  return out;
}

Status Service::checkQueryFiles(const CallContext& ctx, const std::vector<std::string>& files,
                                std::vector<PathLines> lines) {
  if (files.empty()) return Status::ok();
  auto paths = normalizePaths(ctx, nullptr, files, "files", kMaxQueryFiles);
  if (!paths) return paths.status();
  return normalizeQueryLines(ctx, nullptr, lines);
}

Status Service::normalizeQueryLines(const CallContext& ctx, Scope* scope, std::vector<PathLines>& lines) {
  std::vector<PathLines> merged;
  for (auto& l : lines) {
    auto path = normalizePaths(ctx, scope, {l.path}, "files", kMaxQueryFiles);
    if (!path) return path.status();
    auto same = std::find_if(merged.begin(), merged.end(), [&](const PathLines& m) { return m.path == path->front(); });
    if (same == merged.end()) {
      merged.push_back({path->front(), std::move(l.lines)});
    } else {
      same->lines.insert(same->lines.end(), l.lines.begin(), l.lines.end());
      same->lines = normalizeRanges(std::move(same->lines));
    }
  }
  lines = std::move(merged);
  return Status::ok();
}

std::vector<FileRef> Service::withBlobIds(Scope& scope, const std::vector<std::string>& paths) {
  std::vector<FileRef> out;
  for (const auto& p : paths) {
    FileRef f;
    f.path = p;
    if (scope.repo) f.blobId = scope.repo->currentBlobId(p);
    out.push_back(std::move(f));
  }
  return out;
}

Result<HintResult> Service::hintsForTool(const CallContext& ctx, const HintsRequest& request) {
  if (ctx.client == nullptr) return HintResult{};
  if (ctx.readScope == ReadScope::kNone) {
    // Hints honour read_scope (docs/design.md §4): nothing is read, but a bad file is refused, not answered empty.
    MEMQ_RETURN_IF_ERROR(checkQueryFiles(ctx, request.files, request.lines));
    return HintResult{};
  }
  LeftOutScope leftOut;  // a hint line has no room for it: the recall and list of the tab say it
  auto scopes = readScopes(ctx, &leftOut);
  if (!scopes) return scopes.status();
  std::shared_ptr<Scope> project;
  for (auto& s : *scopes) {
    if (s->kind == ScopeKind::kProject) project = s;
  }
  std::vector<std::string> files;
  std::vector<PathLines> lines = request.lines;
  std::vector<PathLines> toolLines;
  const HintContext hintContext = hintContextForTool(request.tool);
  if (!request.files.empty()) {
    auto p = normalizePaths(ctx, project.get(), request.files, "files", kMaxQueryFiles);
    if (!p) return p.status();
    files = *p;
    MEMQ_RETURN_IF_ERROR(normalizeQueryLines(ctx, project.get(), lines));
    toolLines = lines;
    // A file named without lines gets the tab's (the files named with lines keep the tool's).
    if (project) fillFromWorkingSet(hintsOf(*ctx.client)->workingSet, project->location.root, files, lines);
  }
  auto candidates = gatherHintCandidates(*scopes, files, lines, hintContext, request.query);
  if (!candidates) return candidates.status();
  // The tool's lines join the tab's working set once the request has an answer: a failed one changes nothing.
  if (project && !toolLines.empty()) {
    noteToolLines(hintsOf(*ctx.client)->workingSet, project->location.root, hintContext, toolLines);
  }
  auto tab = hintsOf(*ctx.client);
  MutexLock lock(tab->mutex);
  return selectHints(tab->state, std::move(*candidates), hintContext);
}

Result<HintTurn> Service::hintsTurn(const CallContext& ctx, const NoParams&) {
  if (ctx.client == nullptr) return HintTurn{};
  auto tab = hintsOf(*ctx.client);
  MutexLock lock(tab->mutex);
  tab->state.nextTurn();
  return HintTurn{tab->state.turn};
}

}  // namespace memq
