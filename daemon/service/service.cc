// The transport-free service; see service.h.
#include "daemon/service/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <regex>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "daemon/model/file_path.h"
#include "daemon/recall/fts_query.h"
#include "daemon/secrets/secret_scanner.h"
#include "daemon/service/jsonl_transfer.h"
#include "daemon/util/clock.h"
#include "daemon/util/uuid.h"

namespace memq {

namespace {

constexpr const char* kServerVersion = "0.1.0";
constexpr int kProtocolVersion = 1;

bool narrows(ReadScope connection, ReadScope request) {
  if (connection == ReadScope::kAll || request == ReadScope::kNone) return true;
  return connection == request;
}

// One text field of a save or update run through the secret scanner (before validation, truncation, hashing and
// indexing, so no part of a credential reaches the store, the journal or the log). In redact mode the field is
// rewritten and each finding is appended to `redactions` as {kind, field}; in refuse mode the first field holding a
// credential fails the whole request. Neither the result nor the error ever quotes the secret.
Status scrubSecrets(std::string& text, const std::string& field, bool refuse, nlohmann::json& redactions) {
  std::vector<std::string> kinds;
  std::string redacted = redactSecrets(text, &kinds);
  if (kinds.empty()) return Status::ok();
  if (refuse) {
    std::vector<std::string> distinct;
    for (const auto& k : kinds) {
      if (std::find(distinct.begin(), distinct.end(), k) == distinct.end()) distinct.push_back(k);
    }
    std::string names;
    for (const auto& k : distinct) names += (names.empty() ? "" : ", ") + k;
    return Status(ErrorCode::kInvalidParams,
                  "a credential was found in " + field + " (" + names +
                      "); this memqd refuses to store credentials (--secrets=refuse), so nothing was changed",
                  nlohmann::json{{"field", field}, {"kinds", distinct}});
  }
  for (const auto& k : kinds) redactions.push_back({{"kind", k}, {"field", field}});
  text = std::move(redacted);
  return Status::ok();
}

// A free-text field that is not a memory's text — a state change's `reason`, a client's name (the audit actor) — gets
// the same scan as summary and details: redacted in place, or the request refused under --secrets=refuse. The reply
// shows the redacted value where it shows the field at all; there is no `redactions` list for these.
Status scrubFreeText(std::string& text, const std::string& field, bool refuse) {
  nlohmann::json unreported = nlohmann::json::array();
  return scrubSecrets(text, field, refuse, unreported);
}
Status scrubFreeText(std::optional<std::string>& text, const std::string& field, bool refuse) {
  return text ? scrubFreeText(*text, field, refuse) : Status::ok();
}

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

// audit/list's `since`: a date or date-time (ISO-8601; UTC unless it carries an offset) rewritten in the journal's
// own format ("2026-11-29T14:33:25.605Z"), so that "at >= since" compares as text exactly as it does as time.
std::optional<std::string> journalTime(const std::string& text) {
  static const std::regex kIso(
      R"(^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kIso)) return std::nullopt;
  auto num = [&](int i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  std::tm tm{};
  tm.tm_year = num(1) - 1900;
  tm.tm_mon = num(2) - 1;
  tm.tm_mday = num(3);
  tm.tm_hour = num(4);
  tm.tm_min = num(5);
  tm.tm_sec = num(6);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  const int year = tm.tm_year, mon = tm.tm_mon, day = tm.tm_mday;
  time_t seconds = timegm(&tm);
  if (tm.tm_year != year || tm.tm_mon != mon || tm.tm_mday != day) return std::nullopt;  // 31 February and the like
  if (m[8].matched && m[8].str() != "Z") {
    std::string off = m[8].str();
    off.erase(std::remove(off.begin(), off.end(), ':'), off.end());
    const int minutes = std::stoi(off.substr(1, 2)) * 60 + std::stoi(off.substr(3, 2));
    seconds -= (off[0] == '+' ? 1 : -1) * minutes * 60;
  }
  std::string fraction = m[7].matched ? m[7].str() : "";
  fraction = (fraction + "000").substr(0, 3);
  // Formatted here rather than through a system_clock time_point, whose nanosecond range ends in 2262.
  std::tm utc{};
  if (gmtime_r(&seconds, &utc) == nullptr) return std::nullopt;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%sZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                utc.tm_hour, utc.tm_min, utc.tm_sec, fraction.c_str());
  return std::string(buf);
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
      registry_(ScopeRegistryOptions{options_.dataDir, options_.embedder, options_.repoFactory, options_.saveBatch}) {}

void Service::commitPendingSaves(std::chrono::milliseconds idle) {
  // Cleared first: a save that lands after this point sets it again, and is committed by a later call.
  savesPending_.store(false);
  if (registry_.commitPendingSaves(idle) > 0) savesPending_.store(true);
}

Service::~Service() = default;

void Service::setChangeListener(std::function<void(const ChangeEvent&)> listener) {
  MutexLock lock(listenerMutex_);
  listener_ = std::move(listener);
}

void Service::emit(const Scope& scope, const std::string& id, const std::string& action) {
  std::function<void(const ChangeEvent&)> listener;
  {
    MutexLock lock(listenerMutex_);
    listener = listener_;
  }
  if (listener) listener({scope.name, scope.location.root, id, action});
}

Result<CallContext> Service::context(ClientState& client, const nlohmann::json& params) {
  CallContext ctx;
  ctx.client = &client;
  {
    MutexLock lock(client.mutex);
    ctx.projectRoot = client.projectRoot;
    ctx.readScope = client.readScope;
    ctx.writeScope = client.writeScope;
    ctx.actor = Actor{client.source, client.clientName};
  }
  if (!params.is_object()) return ctx;
  if (auto it = params.find("project_root"); it != params.end() && it->is_string()) {
    ctx.projectRoot = it->get<std::string>();
    MEMQ_RETURN_IF_ERROR(checkProjectRoot(ctx.projectRoot));
  }
  if (auto it = params.find("read_scope"); it != params.end() && it->is_string()) {
    ReadScope r;
    if (!parseReadScope(it->get<std::string>(), r)) {
      return Status::invalidField("read_scope", "read_scope must be project, global, all or none");
    }
    if (!narrows(ctx.readScope, r)) {
      return Status(ErrorCode::kScopeUnavailable,
                    std::string("read_scope ") + readScopeName(r) + " is wider than this connection's (" +
                        readScopeName(ctx.readScope) + ")",
                    nlohmann::json{{"field", "read_scope"}});
    }
    ctx.readScope = r;
  }
  if (auto it = params.find("write_scope"); it != params.end() && it->is_string()) {
    WriteScope w;
    if (!parseWriteScope(it->get<std::string>(), w)) {
      return Status::invalidField("write_scope", "write_scope must be project, global or none");
    }
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
  if (auto it = params.find("scope"); it != params.end() && it->is_string()) {
    std::string s = it->get<std::string>();
    if (s != "project" && s != "global") return Status::invalidField("scope", "scope must be project or global");
    ctx.scopeOverride = s;
  }
  if (auto it = params.find("source"); it != params.end() && it->is_string()) {
    std::string s = it->get<std::string>();
    if (s != "user" && s != "agent") return Status::invalidField("source", "source must be user or agent");
    ctx.actor.source = s;
  }
  return ctx;
}

Result<nlohmann::json> Service::initialize(ClientState& client, const nlohmann::json& params) {
  std::string parentToken;
  // Checked before anything changes: a refused initialize leaves the connection as it was.
  std::string clientName = params.value("client_name", std::string("anonymous"));
  MEMQ_RETURN_IF_ERROR(scrubFreeText(clientName, "client_name", options_.secretsMode == "refuse"));
  if (auto it = params.find("project_root"); it != params.end() && it->is_string()) {
    MEMQ_RETURN_IF_ERROR(checkProjectRoot(it->get<std::string>()));
  }
  {
    MutexLock lock(client.mutex);
    client.clientName = std::move(clientName);
    client.clientVersion = params.value("client_version", std::string());
    if (params.contains("project_root") && params["project_root"].is_string()) {
      client.projectRoot = params["project_root"].get<std::string>();
    }
    if (params.contains("read_scope")) {
      if (!parseReadScope(params["read_scope"].get<std::string>(), client.readScope)) {
        return Status::invalidField("read_scope", "read_scope must be project, global, all or none");
      }
    }
    if (params.contains("write_scope")) {
      if (!parseWriteScope(params["write_scope"].get<std::string>(), client.writeScope)) {
        return Status::invalidField("write_scope", "write_scope must be project, global or none");
      }
    }
    if (params.contains("source")) client.source = params["source"].get<std::string>();
    parentToken = params.value("parent", std::string());
  }
  std::unordered_set<std::string> inherited;
  bool isSubagent = false;
  if (!parentToken.empty()) {
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
    isSubagent = true;
  }
  // A named tab resumes its hint state; a tab seen for the first time (or a connection without one) starts fresh.
  // A subagent's tab is kept apart from its parent's tab of the same name: it has its own budget and inheritance.
  std::shared_ptr<TabHints> hints;
  bool freshHints = true;
  std::string tabKey = params.value("tab", std::string());
  if (!tabKey.empty() && isSubagent) tabKey = "subagent of " + parentToken + ": " + tabKey;
  if (!tabKey.empty()) {
    hints = attachTab(tabKey, freshHints);
  } else if (isSubagent) {
    hints = std::make_shared<TabHints>();
  } else {
    MutexLock lock(client.mutex);
    // A plain connection keeps its own state across a repeated initialize; one that named a tab before leaves it.
    hints = client.tabKey.empty() ? client.hints : std::make_shared<TabHints>();
    freshHints = false;
  }
  if (isSubagent && freshHints) {
    MutexLock lock(hints->mutex);
    hints->state = HintState{};
    hints->state.isSubagent = true;
    hints->state.budgetLimit = kSubagentHintBudget;
    hints->state.inheritedFromParent = std::move(inherited);
  }
  nlohmann::json project = nullptr;
  std::string token;
  {
    MutexLock lock(client.mutex);
    if (client.token.empty()) client.token = newUuidV4();
    token = client.token;
    client.initialized = true;
    client.hints = std::move(hints);
    client.tabKey = tabKey;
  }
  {
    MutexLock reg(clientsMutex_);
    clients_[token] = &client;
  }
  std::string root;
  {
    MutexLock lock(client.mutex);
    root = client.projectRoot;
  }
  if (!root.empty()) {
    auto loc = registry_.locate(root);
    if (!loc) return loc.status();
    project = {{"root", loc->root}, {"db_path", loc->dbPath}, {"in_git", loc->inGit}};
  }
  return nlohmann::json{{"server_version", kServerVersion},
                        {"protocol_version", kProtocolVersion},
                        {"capabilities",
                         {{"framing", {"ndjson", "content-length"}},
                          {"rankers", {"default", "reference"}},
                          {"embedder", std::string(options_.embedder->model())},
                          {"notifications", {"memory/changed"}}}},
                        {"session", token},
                        {"project", project}};
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

Result<std::vector<std::shared_ptr<Scope>>> Service::readScopes(const CallContext& ctx) {
  std::vector<std::shared_ptr<Scope>> out;
  ReadScope r = ctx.readScope;
  if (ctx.scopeOverride) {
    ReadScope wanted = *ctx.scopeOverride == "project" ? ReadScope::kProject : ReadScope::kGlobal;
    if (!narrows(r, wanted)) {
      return Status(ErrorCode::kScopeUnavailable, "scope " + *ctx.scopeOverride + " is not readable here",
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
    if (!g) return g.status();
    out.push_back(*g);
  }
  return out;
}

Result<std::shared_ptr<Scope>> Service::writeScope(const CallContext& ctx) {
  if (ctx.writeScope == WriteScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "writes are disabled for this connection (write_scope none)",
                  nlohmann::json{{"field", "scope"}});
  }
  const std::string narrowed = ctx.writeScope == WriteScope::kGlobal ? "global" : "project";
  if (ctx.writeScopeNarrowed && ctx.scopeOverride && *ctx.scopeOverride != narrowed) {
    // The request named its write scope itself; a `scope` elsewhere contradicts it.
    return Status(ErrorCode::kScopeUnavailable,
                  "scope " + *ctx.scopeOverride + " is not writable with this request's write_scope " + narrowed,
                  nlohmann::json{{"field", "scope"}});
  }
  std::string target = ctx.scopeOverride.value_or(narrowed);
  if (target == "global") return registry_.global();
  return projectScope(ctx);
}

Result<std::vector<std::shared_ptr<Scope>>> Service::idScopes(const CallContext& ctx) {
  std::vector<std::shared_ptr<Scope>> scopes;
  if (ctx.scopeOverride == std::optional<std::string>("global")) {
    auto g = registry_.global();
    if (!g) return g.status();
    scopes.push_back(*g);
  } else if (ctx.scopeOverride == std::optional<std::string>("project")) {
    auto p = projectScope(ctx);
    if (!p) return p.status();
    scopes.push_back(*p);
  } else {
    if (!ctx.projectRoot.empty()) {
      auto p = projectScope(ctx);
      if (!p) return p.status();
      scopes.push_back(*p);
    }
    auto g = registry_.global();
    if (!g) return g.status();
    scopes.push_back(*g);
  }
  return scopes;
}

Result<Service::Resolved> Service::resolve(const CallContext& ctx, const std::string& idOrPrefix,
                                           const std::string& field) {
  if (idOrPrefix.empty()) return Status::invalidField(field, field + " must not be empty");
  auto scopes = idScopes(ctx);
  if (!scopes) return scopes.status();
  std::vector<Resolved> found;
  nlohmann::json candidates = nlohmann::json::array();
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    auto ids = scope->db->store->matchIds(idOrPrefix, 10);
    if (!ids) return ids.status();
    for (const auto& id : *ids) {
      if (id == idOrPrefix) return Resolved{scope, id};  // an exact id wins outright
      found.push_back({scope, id});
      candidates.push_back({{"scope", scope->name}, {"id", id}});
    }
  }
  if (found.empty()) {
    if (idOrPrefix.size() < 4) {
      return Status(ErrorCode::kNotFound, "no memory with id '" + idOrPrefix + "' (a prefix needs at least 4 characters)",
                    nlohmann::json{{"field", field}});
    }
    return Status(ErrorCode::kNotFound, "no memory with id or prefix '" + idOrPrefix + "'",
                  nlohmann::json{{"field", field}});
  }
  if (found.size() > 1) {
    return Status(ErrorCode::kAmbiguous,
                  "id prefix '" + idOrPrefix + "' matches " + std::to_string(found.size()) +
                      " memories; use a longer prefix or the full id",
                  nlohmann::json{{"field", field}, {"candidates", candidates}});
  }
  return found.front();
}

Result<std::vector<std::string>> Service::normalizePaths(const CallContext& ctx, Scope* scope,
                                                         const std::vector<std::string>& paths,
                                                         const std::string& field, size_t maxFiles) {
  std::string root = scope && scope->name == "project" ? scope->location.root : std::string();
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

std::vector<FileRef> Service::withBlobIds(Scope& scope, const std::vector<std::string>& paths) {
  std::vector<FileRef> out;
  for (const auto& p : paths) {
    FileRef f{p, std::nullopt};
    if (scope.repo) f.blobId = scope.repo->currentBlobId(p);
    out.push_back(std::move(f));
  }
  return out;
}

Result<nlohmann::json> Service::save(const CallContext& ctx, const SaveInput& rawInput) {
  auto scope = writeScope(ctx);
  if (!scope) return scope.status();
  SaveInput input = rawInput;
  if (!rawInput.source.empty() && rawInput.source != ctx.actor.source && rawInput.source == "agent") {
    input.source = ctx.actor.source;
  }
  const bool refuse = options_.secretsMode == "refuse";
  nlohmann::json redactions = nlohmann::json::array();
  MEMQ_RETURN_IF_ERROR(scrubSecrets(input.summary, "summary", refuse, redactions));
  MEMQ_RETURN_IF_ERROR(scrubSecrets(input.details, "details", refuse, redactions));
  for (size_t i = 0; i < input.topics.size(); ++i) {
    MEMQ_RETURN_IF_ERROR(scrubSecrets(input.topics[i], "topics[" + std::to_string(i) + "]", refuse, redactions));
  }
  if (input.sessionId) MEMQ_RETURN_IF_ERROR(scrubSecrets(*input.sessionId, "session_id", refuse, redactions));
  auto normalized = normalizeSave(input, (*scope)->name == "project" ? (*scope)->location.root : "");
  if (!normalized) return normalized.status();
  auto files = withBlobIds(**scope, normalized->files);
  Actor actor = ctx.actor;
  actor.source = normalized->source;
  Result<SaveOutcome> outcome = Status::internal("unreached");
  {
    std::lock_guard lock((*scope)->db->mutex);
    outcome = (*scope)->db->store->save(*normalized, files, actor);
    if ((*scope)->db->store->hasPendingSaves()) savesPending_.store(true);
  }
  if (!outcome) return outcome.status();
  if (outcome->status == "created") emit(**scope, outcome->id, "create");
  if (outcome->status == "deduped") emit(**scope, outcome->id, "dedup");
  nlohmann::json similar = nlohmann::json::array();
  for (const auto& s : outcome->similar) {
    similar.push_back({{"id", s.id}, {"weight", s.weight}, {"summary", s.summary}, {"kind", s.kind}});
  }
  nlohmann::json result = {{"id", outcome->id},
                           {"scope", (*scope)->name},
                           {"status", outcome->status},
                           {"similar", similar},
                           {"warnings", outcome->warnings},
                           {"redactions", redactions}};
  if (outcome->memory) result["memory"] = memoryToJson(*outcome->memory);
  if (outcome->reason) result["reason"] = *outcome->reason;
  if (outcome->supersededBy) result["superseded_by"] = *outcome->supersededBy;
  if (outcome->status == "exists_hidden") {
    result["hint"] = "memory " + outcome->id + " holds this text but is hidden; restore it with memory/restore";
  } else if (outcome->status == "exists_superseded") {
    result["hint"] = "memory " + outcome->id + " holds this text but was superseded by " +
                     outcome->supersededBy.value_or("?");
  } else if (outcome->status == "rejected") {
    result["hint"] = "this text was rejected (" + outcome->reason.value_or("") + "); it will not be stored";
  }
  if (outcome->topicsMerged) result["topics_merged"] = true;
  return result;
}

Result<Memory> Service::get(const CallContext& ctx, const std::string& id, std::vector<std::string>* warnings) {
  if (ctx.readScope == ReadScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "reads are disabled for this connection (read_scope none)");
  }
  std::vector<std::string> incomplete;  // scopes read whose acknowledged saves are not all readable
  auto noteIncomplete = [&](Scope& scope) {
    auto w = scope.db->store->unappliedSavesWarning();
    if (w && std::find(incomplete.begin(), incomplete.end(), *w) == incomplete.end()) incomplete.push_back(*w);
  };
  // A full id (what clients send back after a recall) is read straight from each scope in resolve's order, one
  // read per scope and none of resolve's id lookup before it; an exact id in any scope wins over prefixes
  // elsewhere, as in resolve. What no scope holds exactly goes through resolve: a prefix, or NotFound naming `id`.
  Result<Memory> m = [&]() -> Result<Memory> {
    if (!id.empty()) {
      auto scopes = idScopes(ctx);
      if (!scopes) return scopes.status();
      for (auto& scope : *scopes) {
        auto lock = scope->db->lockCommitted();
        auto exact = scope->db->store->get(id);
        noteIncomplete(*scope);
        if (exact || exact.status().code() != ErrorCode::kNotFound) return exact;
      }
    }
    auto r = resolve(ctx, id);
    if (!r) return r.status();
    auto lock = r->scope->db->lockCommitted();
    return r->scope->db->store->get(r->id);
  }();
  if (!m && m.status().code() == ErrorCode::kNotFound && !incomplete.empty()) {
    // Not found in what could be read is not "not found": the memory may be one of the saves left out.
    return Status(ErrorCode::kStorageError, m.status().message() + ", but " + incomplete.front(),
                  nlohmann::json{{"field", "id"}, {"warnings", incomplete}});
  }
  if (m) markActed(ctx.client);
  if (m && warnings) *warnings = std::move(incomplete);
  return m;
}

Result<Memory> Service::mutate(const CallContext& ctx, const std::string& id, const std::string& action,
                               const std::function<Result<Memory>(MemoryStore&, const std::string&)>& op) {
  if (ctx.writeScope == WriteScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "writes are disabled for this connection (write_scope none)");
  }
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  Result<Memory> out = Status::internal("unreached");
  std::string before;
  {
    auto lock = r->scope->db->lockCommitted();
    auto m = r->scope->db->store->get(r->id);
    if (m) before = m->updatedAt;
    out = op(*r->scope->db->store, r->id);
  }
  if (out && out->updatedAt != before) emit(*r->scope, r->id, action);
  return out;
}

Result<UpdateOutcome> Service::update(const CallContext& ctx, const std::string& id, const UpdateRequest& request) {
  if (ctx.writeScope == WriteScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "writes are disabled for this connection (write_scope none)");
  }
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  UpdateInput in;
  in.summary = request.summary;
  in.details = request.details;
  in.category = request.category;
  in.topics = request.topics;
  nlohmann::json redactions = nlohmann::json::array();
  {
    const bool refuse = options_.secretsMode == "refuse";
    if (in.summary) MEMQ_RETURN_IF_ERROR(scrubSecrets(*in.summary, "summary", refuse, redactions));
    if (in.details) MEMQ_RETURN_IF_ERROR(scrubSecrets(*in.details, "details", refuse, redactions));
    if (in.topics) {
      for (size_t i = 0; i < in.topics->size(); ++i) {
        MEMQ_RETURN_IF_ERROR(scrubSecrets((*in.topics)[i], "topics[" + std::to_string(i) + "]", refuse, redactions));
      }
    }
  }
  in.pinned = request.pinned;
  if (request.files) {
    auto paths = normalizePaths(ctx, r->scope.get(), *request.files, "files");
    if (!paths) return paths.status();
    in.files = withBlobIds(*r->scope, *paths);
  }
  Result<Memory> out = Status::internal("unreached");
  std::string before;
  {
    auto lock = r->scope->db->lockCommitted();
    auto m = r->scope->db->store->get(r->id);
    if (m) before = m->updatedAt;
    out = r->scope->db->store->update(r->id, in, ctx.actor);
  }
  if (!out) return out.status();
  if (out->updatedAt != before) emit(*r->scope, r->id, "update");
  return UpdateOutcome{std::move(*out), std::move(redactions)};
}

Result<ListResult> Service::list(const CallContext& ctx, const ListFilter& filter) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  ListResult out;
  ListFilter f = filter;
  // Page across scopes: fetch enough from each, then cut.
  f.offset = 0;
  f.limit = filter.offset + filter.limit;
  if (f.file && !f.file->empty()) {
    auto p = normalizePaths(ctx, scopes->empty() ? nullptr : scopes->front().get(), {*f.file}, "file");
    if (!p) return p.status();
    f.file = p->front();
  }
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    auto l = scope->db->store->list(f);
    if (!l) return l.status();
    if (auto w = scope->db->store->unappliedSavesWarning()) out.warnings.push_back(std::move(*w));
    out.total += l->total;
    for (auto& m : l->memories) out.memories.push_back(std::move(m));
  }
  if (scopes->size() > 1) {
    std::stable_sort(out.memories.begin(), out.memories.end(), [](const Memory& a, const Memory& b) {
      if (a.pinned != b.pinned) return a.pinned > b.pinned;
      return a.lastUsedAt > b.lastUsedAt;
    });
  }
  size_t begin = std::min<size_t>(filter.offset, out.memories.size());
  size_t end = std::min<size_t>(begin + filter.limit, out.memories.size());
  out.memories = std::vector<Memory>(std::make_move_iterator(out.memories.begin() + begin),
                                     std::make_move_iterator(out.memories.begin() + end));
  markActed(ctx.client);
  return out;
}

Result<std::vector<RecallHit>> Service::search(const CallContext& ctx, RecallRequest request) {
  request.useFileSignals = false;
  request.files.clear();
  auto hits = recall(ctx, std::move(request), false);
  if (hits) markActed(ctx.client);
  return hits;
}

Result<std::vector<RecallHit>> Service::recall(const CallContext& ctx, RecallRequest request, bool markUsed) {
  if (ctx.readScope == ReadScope::kNone) return std::vector<RecallHit>{};
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  if (request.query.empty() && request.files.empty()) return std::vector<RecallHit>{};
  std::shared_ptr<Scope> project;
  for (auto& s : *scopes) {
    if (s->name == "project") project = s;
  }
  if (!request.files.empty()) {
    auto paths = normalizePaths(ctx, project.get(), request.files, "files", kMaxQueryFiles);
    if (!paths) return paths.status();
    request.files = *paths;
  }
  PreparedQuery query = prepareQuery(request, *options_.embedder, project ? project->repo.get() : nullptr);
  std::vector<Candidate> all;
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    auto c = gatherCandidates(*scope->db->store, request, query, scope->name == "project" ? scope->repo.get() : nullptr);
    if (!c) return c.status();
    for (auto& cand : *c) all.push_back(std::move(cand));
  }
  auto hits = rankAndSelect(std::move(all), request);
  // Candidates were ranked from the stores' mirrors; only the selected hits' rows are read, each scope under its
  // lock again. Between the two locks another connection may have hidden (or superseded, rejected, purged) a hit:
  // loadHitRows drops such a hit rather than return it, so a recall can return fewer than it selected.
  for (auto& scope : *scopes) {
    if (std::none_of(hits.begin(), hits.end(), [&](const RecallHit& h) { return h.memory.scope == scope->name; })) {
      continue;
    }
    auto lock = scope->db->lockCommitted();
    auto loaded = loadHitRows(*scope->db->store, hits);
    if (!loaded) return loaded;
    if (!markUsed) continue;
    std::vector<int64_t> pks;
    for (const auto& h : hits) {
      if (h.memory.scope == scope->name) pks.push_back(h.memory.pk);
    }
    auto st = scope->db->store->markUsed(pks);
    if (!st) spdlog::warn("could not record usage in {}: {}", scope->db->store->path(), st.message());
  }
  if (project && project->repo) {
    // Staleness only means something against the project's own repository.
    for (auto& h : hits) {
      if (h.memory.scope == "project") annotateStaleness(h, *project->repo);
    }
  }
  return hits;
}

Result<Memory> Service::hide(const CallContext& ctx, const std::string& id,
                            const std::optional<std::string>& rawReason) {
  std::optional<std::string> reason = rawReason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason", options_.secretsMode == "refuse"));
  return mutate(ctx, id, "hide", [&](MemoryStore& s, const std::string& full) { return s.hide(full, reason, ctx.actor); });
}

Result<Memory> Service::restore(const CallContext& ctx, const std::string& id,
                               const std::optional<std::string>& rawReason) {
  std::optional<std::string> reason = rawReason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason", options_.secretsMode == "refuse"));
  return mutate(ctx, id, "restore",
                [&](MemoryStore& s, const std::string& full) { return s.restore(full, ctx.actor, reason); });
}

Result<Memory> Service::pin(const CallContext& ctx, const std::string& id, bool pinned) {
  return mutate(ctx, id, pinned ? "pin" : "unpin",
                [&](MemoryStore& s, const std::string& full) { return s.setPinned(full, pinned, ctx.actor); });
}

Result<std::pair<Memory, Memory>> Service::supersede(const CallContext& ctx, const std::string& id,
                                                     const std::string& by) {
  if (ctx.writeScope == WriteScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "writes are disabled for this connection (write_scope none)");
  }
  auto oldR = resolve(ctx, id, "id");
  if (!oldR) return oldR.status();
  auto byR = resolve(ctx, by, "by");
  if (!byR) return byR.status();
  if (oldR->scope->db != byR->scope->db) {
    return Status(ErrorCode::kInvalidParams, "a memory can only be superseded by one in the same scope",
                  nlohmann::json{{"field", "by"}});
  }
  Result<std::pair<Memory, Memory>> out = Status::internal("unreached");
  {
    auto lock = oldR->scope->db->lockCommitted();
    out = oldR->scope->db->store->supersede(oldR->id, byR->id, ctx.actor);
  }
  if (out) emit(*oldR->scope, oldR->id, "supersede");
  return out;
}

Result<Memory> Service::reject(const CallContext& ctx, const std::string& id, const std::string& rawReason) {
  if (rawReason.empty()) return Status::invalidField("reason", "reason is required to reject a memory");
  std::string reason = rawReason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason", options_.secretsMode == "refuse"));
  return mutate(ctx, id, "reject", [&](MemoryStore& s, const std::string& full) { return s.reject(full, reason, ctx.actor); });
}

Result<Memory> Service::unreject(const CallContext& ctx, const std::string& id) {
  return mutate(ctx, id, "unreject", [&](MemoryStore& s, const std::string& full) { return s.unreject(full, ctx.actor); });
}

Status Service::purge(const CallContext& ctx, const std::string& id, bool confirm) {
  if (!confirm) {
    return Status(ErrorCode::kForbidden, "purge deletes for good; pass confirm: true", nlohmann::json{{"field", "confirm"}});
  }
  if (ctx.writeScope == WriteScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "writes are disabled for this connection (write_scope none)");
  }
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  Status st;
  {
    auto lock = r->scope->db->lockCommitted();
    st = r->scope->db->store->purge(r->id, true, ctx.actor);
  }
  if (st) emit(*r->scope, r->id, "purge");
  return st;
}

Result<Memory> Service::attach(const CallContext& ctx, const std::string& id, const std::vector<std::string>& files) {
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  auto paths = normalizePaths(ctx, r->scope.get(), files, "files");
  if (!paths) return paths.status();
  auto refs = withBlobIds(*r->scope, *paths);
  return mutate(ctx, r->id, "attach", [&](MemoryStore& s, const std::string& full) { return s.attach(full, refs, ctx.actor); });
}

Result<Memory> Service::detach(const CallContext& ctx, const std::string& id, const std::vector<std::string>& files) {
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  auto paths = normalizePaths(ctx, r->scope.get(), files, "files");
  if (!paths) return paths.status();
  return mutate(ctx, r->id, "detach", [&](MemoryStore& s, const std::string& full) { return s.detach(full, *paths, ctx.actor); });
}

Result<HintResult> Service::hintsForTool(const CallContext& ctx, const std::string& tool,
                                         const std::vector<std::string>& rawFiles, const std::string& query) {
  if (ctx.client == nullptr) return HintResult{};
  if (ctx.readScope == ReadScope::kNone) return HintResult{};  // hints honour read_scope (docs/design.md §4)
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  std::shared_ptr<Scope> project;
  for (auto& s : *scopes) {
    if (s->name == "project") project = s;
  }
  std::vector<std::string> files;
  if (!rawFiles.empty()) {
    auto p = normalizePaths(ctx, project.get(), rawFiles, "files", kMaxQueryFiles);
    if (!p) return p.status();
    files = *p;
  }
  const HintContext hintContext = hintContextForTool(tool);
  std::vector<HintCandidate> candidates;
  std::unordered_set<std::string> seen;
  auto add = [&](const Memory& m, bool direct) {
    if (m.state != MemoryState::kActive || !seen.insert(m.id).second) return;
    candidates.push_back({m.id, m.summary, m.category, m.pinned, direct});
  };
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    if (!files.empty()) {
      auto hits = scope->db->store->findByPaths(files, 100);
      if (!hits) return hits.status();
      std::vector<int64_t> pks;
      for (const auto& h : *hits) pks.push_back(h.pk);
      auto ms = scope->db->store->loadMany(pks);
      if (!ms) return ms.status();
      for (const auto& m : *ms) add(m, true);
    }
    if (hintContext == HintContext::kDiff || hintContext == HintContext::kCommit) {
      ListFilter f;
      f.topic = "git";
      f.limit = 20;
      auto l = scope->db->store->list(f);
      if (l) {
        for (const auto& m : l->memories) add(m, false);
      }
    }
    if (!query.empty()) {
      // A relevance floor: only strong text matches become hints (bm25 within half of the best hit).
      auto hits = scope->db->store->searchFts(FtsLane::kUnicode, unicodeMatch(query), 5);
      if (!hits) return hits.status();
      double best = hits->empty() ? 0 : hits->front().bm25;
      std::vector<int64_t> pks;
      for (const auto& h : *hits) {
        if (best < 0 && h.bm25 <= 0.5 * best) pks.push_back(h.pk);
      }
      auto ms = scope->db->store->loadMany(pks);
      if (!ms) return ms.status();
      for (const auto& m : *ms) add(m, false);
    }
  }
  auto tab = hintsOf(*ctx.client);
  MutexLock lock(tab->mutex);
  return selectHints(tab->state, std::move(candidates), hintContext);
}

Result<int64_t> Service::hintsTurn(const CallContext& ctx) {
  if (ctx.client == nullptr) return int64_t{0};
  auto tab = hintsOf(*ctx.client);
  MutexLock lock(tab->mutex);
  tab->state.nextTurn();
  return tab->state.turn;
}

Result<nlohmann::json> Service::repoCochange(const CallContext& ctx, const std::string& file, size_t limit) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  auto paths = normalizePaths(ctx, scope->get(), {file}, "file");
  if (!paths) return paths.status();
  nlohmann::json neighbors = nlohmann::json::array();
  std::string head;
  if ((*scope)->repo) {
    for (const auto& n : (*scope)->repo->cochangeNeighbors(paths->front(), limit)) {
      neighbors.push_back({{"path", n.path}, {"count", n.count}, {"strength", n.strength}});
    }
    head = (*scope)->repo->head();
  }
  return nlohmann::json{{"file", paths->front()}, {"neighbors", neighbors}, {"head", head}};
}

Result<nlohmann::json> Service::repoBlastRadius(const CallContext& ctx, const std::string& file) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  auto paths = normalizePaths(ctx, scope->get(), {file}, "file");
  if (!paths) return paths.status();
  int radius = 0;
  std::vector<std::string> dependents;
  if ((*scope)->repo) {
    radius = (*scope)->repo->blastRadius(paths->front());
    dependents = (*scope)->repo->dependents(paths->front());
  }
  return nlohmann::json{{"file", paths->front()}, {"radius", radius}, {"dependents", dependents}};
}

Result<nlohmann::json> Service::repoRefresh(const CallContext& ctx) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  RepoRefreshInfo info;
  if ((*scope)->repo) info = (*scope)->repo->refresh();
  return nlohmann::json{{"walked_commits", info.walkedCommits}, {"total_commits", info.totalCommits},
                        {"pairs", info.pairs},                 {"head", info.head},
                        {"elapsed_ms", info.elapsedMs},        {"rebuilt", info.rebuilt},
                        {"in_git", (*scope)->repo != nullptr}};
}

Result<nlohmann::json> Service::reviewClusters(const CallContext& ctx, double minWeight) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  nlohmann::json clusters = nlohmann::json::array();
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    auto edges = scope->db->store->similarEdges(minWeight);
    if (!edges) return edges.status();
    // Union-find over strong similar edges: each component is one cluster to review.
    std::unordered_map<std::string, std::string> parent;
    std::function<std::string(const std::string&)> find = [&](const std::string& x) -> std::string {
      auto it = parent.find(x);
      if (it == parent.end() || it->second == x) return parent[x] = x;
      return it->second = find(it->second);
    };
    std::unordered_map<std::string, double> maxWeight;
    for (const auto& [a, b, w] : *edges) {
      parent[find(a)] = find(b);
    }
    std::map<std::string, std::vector<std::string>> groups;
    for (const auto& [id, p] : parent) groups[find(id)].push_back(id);
    for (const auto& [a, b, w] : *edges) {
      auto& m = maxWeight[find(a)];
      m = std::max(m, w);
    }
    for (auto& [rootId, ids] : groups) {
      if (ids.size() < 2) continue;
      std::sort(ids.begin(), ids.end());
      nlohmann::json members = nlohmann::json::array();
      for (const auto& id : ids) {
        auto m = scope->db->store->get(id);
        if (m) members.push_back(memoryToJson(*m));
      }
      clusters.push_back({{"scope", scope->name}, {"weight", maxWeight[rootId]}, {"memories", members}});
    }
  }
  return nlohmann::json{{"clusters", clusters}};
}

Result<nlohmann::json> Service::reviewStale(const CallContext& ctx, size_t limit) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  nlohmann::json out = nlohmann::json::array();
  if (!(*scope)->repo) return nlohmann::json{{"memories", out}};
  auto lock = (*scope)->db->lockCommitted();
  auto ms = (*scope)->db->store->memoriesWithFiles(100000);
  if (!ms) return ms.status();
  for (auto& m : *ms) {
    if (out.size() >= limit) break;
    RecallHit h;
    h.memory = std::move(m);
    annotateStaleness(h, *(*scope)->repo);
    if (!h.changedFiles.empty()) {
      auto j = memoryToJson(h.memory);
      j["changed_files"] = h.changedFiles;
      out.push_back(j);
    }
  }
  return nlohmann::json{{"memories", out}};
}

Result<nlohmann::json> Service::reviewDead(const CallContext& ctx, size_t limit) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  nlohmann::json out = nlohmann::json::array();
  auto lock = (*scope)->db->lockCommitted();
  auto ms = (*scope)->db->store->memoriesWithFiles(100000);
  if (!ms) return ms.status();
  namespace fs = std::filesystem;
  for (auto& m : *ms) {
    if (out.size() >= limit) break;
    std::vector<std::string> missing;
    for (const auto& f : m.files) {
      bool exists = (*scope)->repo ? (*scope)->repo->currentBlobId(f.path).has_value()
                                   : fs::exists(fs::path((*scope)->location.root) / f.path);
      if (!exists) missing.push_back(f.path);
    }
    if (!missing.empty()) {
      auto j = memoryToJson(m);
      j["missing_files"] = missing;
      out.push_back(j);
    }
  }
  return nlohmann::json{{"memories", out}};
}

Result<nlohmann::json> Service::auditList(const CallContext& ctx, const AuditFilter& filter) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  AuditFilter f = filter;
  if (filter.sinceAt) {
    f.sinceAt = journalTime(*filter.sinceAt);
    if (!f.sinceAt) {
      return Status::invalidField("since", "since must be an ISO-8601 date or time, e.g. 2026-11-29 or "
                                           "2026-11-29T14:30:00Z (got '" + *filter.sinceAt + "')");
    }
  }
  nlohmann::json events = nlohmann::json::array();
  for (auto& scope : *scopes) {
    if (filter.memoryId) {
      auto r = resolve(ctx, *filter.memoryId);
      if (r && r->scope->db != scope->db) continue;
      if (r) f.memoryId = r->id;
    }
    auto lock = scope->db->lockCommitted();
    auto list = scope->db->store->audit(f);
    if (!list) return list.status();
    for (const auto& e : *list) {
      events.push_back({{"seq", e.seq}, {"at", e.at}, {"scope", scope->name}, {"memory_id", e.memoryId},
                        {"action", e.action}, {"actor", e.actor}, {"detail", e.detail}, {"scrubbed", e.scrubbed}});
    }
  }
  return nlohmann::json{{"events", events}};
}

Result<ExportPage> Service::exportJsonl(const CallContext& ctx, std::optional<MemoryState> state, bool allStates,
                                       const std::optional<std::string>& cursor) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  if (scopes->empty()) return ExportPage{};
  // Pages are keyed by the last line written (not an offset), so memories saved or changed between pages neither
  // shift nor repeat lines: each memory is written once, as it was when its page was read.
  ExportCursor at{(*scopes)[0]->name, false, "", ""};
  size_t first = 0;
  if (cursor && !cursor->empty()) {
    auto decoded = ExportCursor::decode(*cursor);
    if (!decoded) return Status::invalidField("cursor", "cursor is not one a previous export page handed out");
    at = *decoded;
    first = scopes->size();
    for (size_t i = 0; i < scopes->size(); ++i) {
      if ((*scopes)[i]->name == at.scope) first = i;
    }
    if (first == scopes->size()) {
      return Status::invalidField("cursor", "cursor continues the " + at.scope + " scope, which this request does not read");
    }
  }
  const bool withTombstones = allStates || state == MemoryState::kRejected;
  const std::optional<MemoryState> only =
      allStates ? std::nullopt : std::optional<MemoryState>(state.value_or(MemoryState::kActive));
  constexpr int kRowsPerQuery = 2048;
  ExportPage page;
  // Appends a line unless the page is full; false (and next_cursor set to `at`) when it is.
  auto add = [&](const std::string& line) {
    if (!page.jsonl.empty() && page.jsonl.size() + line.size() + 1 > kExportPageBytes) {
      page.nextCursor = at.encode();
      return false;
    }
    page.jsonl += line;
    page.jsonl += '\n';
    return true;
  };
  for (size_t i = first; i < scopes->size(); ++i) {
    Scope& scope = *(*scopes)[i];
    if (i != first) at = ExportCursor{scope.name, false, "", ""};
    auto lock = scope.db->lockCommitted();
    if (auto w = scope.db->store->unappliedSavesWarning()) page.warnings.push_back(std::move(*w));
    while (!at.tombstones) {
      auto rows = scope.db->store->exportPage(only, at.afterKey, at.afterSubkey, kRowsPerQuery);
      if (!rows) return rows.status();
      for (const auto& m : *rows) {
        if (!add(memoryLine(m))) break;
        at.afterKey = m.createdAt;
        at.afterSubkey = m.id;
      }
      if (page.nextCursor) break;
      if (rows->size() < static_cast<size_t>(kRowsPerQuery)) at = ExportCursor{scope.name, true, "", ""};
    }
    if (!page.nextCursor && withTombstones) {
      auto tombs = scope.db->store->tombstones();  // in (at, content_hash) order
      if (!tombs) return tombs.status();
      for (const auto& t : *tombs) {
        if (std::tie(t.at, t.contentHash) <= std::tie(at.afterKey, at.afterSubkey)) continue;
        if (!add(tombstoneLine(t, scope.name))) break;
        at.afterKey = t.at;
        at.afterSubkey = t.contentHash;
      }
    }
    if (page.nextCursor) break;
  }
  if (page.nextCursor && !cursor) {
    return Status::invalidField("cursor", "the export is larger than one reply may carry (" +
                                              std::to_string(kExportPageBytes >> 20) +
                                              " MiB): pass cursor \"\" and then each next_cursor it returns");
  }
  return page;
}

// An import sent in several requests (`more`), read and validated as it arrives, written by its last request.
struct PendingImport {
  std::string scope;   // the scope it writes, and that scope's database file: later requests must name the same
  std::string dbPath;
  ImportBatch batch;
  size_t lines = 0;  // every line received, blank ones included: the numbers errors give
  size_t bytes = 0;   // counted in `stagedTotal` as well, until this import is written or dropped
  std::shared_ptr<std::atomic<size_t>> stagedTotal;

  PendingImport() = default;
  PendingImport(const PendingImport&) = delete;
  PendingImport& operator=(const PendingImport&) = delete;
  ~PendingImport() {
    if (stagedTotal) stagedTotal->fetch_sub(bytes);
  }
};

Result<ImportCounts> Service::importJsonl(const CallContext& ctx, const std::string& jsonl, bool more) {
  // The staged import is taken off the connection for the length of the call: an error below leaves it dropped.
  std::shared_ptr<PendingImport> pending;
  if (ctx.client != nullptr) {
    MutexLock lock(ctx.client->mutex);
    pending = std::exchange(ctx.client->pendingImport, nullptr);
  }
  auto scope = writeScope(ctx);
  if (!scope) return scope.status();
  if (!pending) {
    pending = std::make_shared<PendingImport>();
    pending->scope = (*scope)->name;
    pending->dbPath = (*scope)->db->path;
    pending->stagedTotal = stagedImportBytes_;
  } else if (pending->scope != (*scope)->name || pending->dbPath != (*scope)->db->path) {
    return Status::invalidField("scope", "this connection's import in progress writes the " + pending->scope +
                                             " scope (" + pending->dbPath +
                                             "); it was dropped: an import writes one scope from its first request "
                                             "to its last");
  }
  pending->bytes += jsonl.size();
  const size_t stagedEverywhere = stagedImportBytes_->fetch_add(jsonl.size()) + jsonl.size();
  if (stagedEverywhere > options_.maxStagedImportBytes) {
    return Status(ErrorCode::kBusy,
                  "imports in progress hold " + std::to_string(stagedEverywhere >> 20) +
                      " MiB of JSONL over all connections, more than memqd stages at once (" +
                      std::to_string(options_.maxStagedImportBytes >> 20) +
                      " MiB, --max-staged-import-bytes); this import was dropped: retry once the others are written",
                  nlohmann::json{{"field", "jsonl"}});
  }
  if (pending->bytes > kMaxImportBytes) {
    return Status::invalidField("jsonl", "an import may carry at most " + std::to_string(kMaxImportBytes >> 20) +
                                             " MiB of JSONL before its last request; import the file in parts");
  }
  ImportLineOptions options;
  options.projectRoot = (*scope)->name == "project" ? (*scope)->location.root : "";
  options.now = isoNow();
  options.actor = ctx.actor.toString();
  const bool refuse = options_.secretsMode == "refuse";
  nlohmann::json redactions = nlohmann::json::array();  // an import reports counts, not findings
  options.scrub = [&](std::string& text, const std::string& field) {
    return scrubSecrets(text, field, refuse, redactions);
  };
  for (size_t start = 0; start < jsonl.size();) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string::npos) end = jsonl.size();
    auto parsed = parseImportLine(std::string_view(jsonl).substr(start, end - start), ++pending->lines, options);
    start = end + 1;
    if (!parsed) return parsed.status();
    if (!*parsed) continue;
    if ((*parsed)->isTombstone) {
      pending->batch.tombstones.push_back({std::move((*parsed)->tombstone), (*parsed)->line});
    } else {
      pending->batch.memories.push_back({std::move((*parsed)->memory), (*parsed)->line});
    }
  }
  ImportCounts counts;
  counts.stagedLines = pending->lines;
  if (more) {
    if (ctx.client == nullptr) return Status::invalidField("more", "an import in parts needs a connection");
    MutexLock lock(ctx.client->mutex);
    ctx.client->pendingImport = std::move(pending);
    return counts;
  }
  ImportOutcome outcome;
  {
    auto lock = (*scope)->db->lockCommitted();
    auto written = (*scope)->db->store->importBatch(pending->batch, ctx.actor);
    if (!written) return written.status();
    outcome = std::move(*written);
  }
  if (outcome.refusal) return importLineError(outcome.refusal->line, outcome.refusal->field, outcome.refusal->message);
  counts.created = outcome.created;
  counts.deduped = outcome.deduped;
  counts.rejected = outcome.rejected;
  counts.tombstones = outcome.tombstones;
  counts.committed = true;
  if (counts.created > 0) emit(**scope, "", "import");
  return counts;
}

Result<nlohmann::json> Service::stats(const CallContext& ctx) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  nlohmann::json out = nlohmann::json::object();
  for (auto& scope : *scopes) {
    auto lock = scope->db->lockCommitted();
    auto s = scope->db->store->stats();
    if (!s) return s.status();
    if (scope->repo) (*s)["cochange_head"] = scope->repo->head();
    out[scope->name] = *s;
  }
  return nlohmann::json{{"scopes", out}};
}

}  // namespace memq
