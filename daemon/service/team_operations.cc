// Service's team scope (service.h, docs/team.md): which team scope a request reaches, team saves (sent to the
// server, or queued in the outbox while it cannot be reached), state changes of team memories through the server,
// and the team/* methods. The replica and the sync thread are daemon/team's and team_scopes.h's.
#include <spdlog/spdlog.h>

#include <thread>

#include "daemon/anchors/line_ranges.h"
#include "daemon/service/service.h"
#include "daemon/team/team_config.h"
#include "daemon/team/team_sync.h"

namespace memq {

namespace {

// How long team/connect waits at most for the sync thread's first connection before it answers (offline, when it
// did not connect in time or its first attempt failed: the thread keeps trying).
constexpr std::chrono::milliseconds kConnectWait{3000};

}  // namespace

Status Service::teamUnsupported(const std::string& method) {
  return Status(ErrorCode::kInvalidParams,
                method + " does not apply to team memories: the team server keeps their text, files and pins as "
                         "saved (hide, restore, supersede, reject, unreject and purge do apply)",
                nlohmann::json{{"field", "id"}, {"scope", "team"}});
}

std::string Service::teamOfflineWarning(Scope& scope) {
  const TeamSyncStatus s = scope.team->status();
  return "team scope offline: the team server (" + scope.team->displayConninfo() +
         ") cannot be reached; team memories are answered from the local replica as of journal seq " +
         std::to_string(s.lastSeq) + (s.lastError.empty() ? "" : " (" + s.lastError + ")");
}

Result<std::shared_ptr<Scope>> Service::teamScope(const CallContext& ctx, bool required) {
  auto none = [&]() -> Result<std::shared_ptr<Scope>> {
    if (!required) return std::shared_ptr<Scope>();
    return Status(ErrorCode::kScopeUnavailable,
                  "scope team: this project has no team scope (set one up with `memq team connect CONNINFO`)",
                  nlohmann::json{{"field", "scope"}});
  };
  if (ctx.projectRoot.empty()) {
    if (!required) return std::shared_ptr<Scope>();
    return Status(ErrorCode::kScopeUnavailable, "scope team needs a project: pass project_root",
                  nlohmann::json{{"field", "project_root"}});
  }
  auto loc = registry_.locate(ctx.projectRoot);
  if (!loc) return required ? Result<std::shared_ptr<Scope>>(loc.status()) : std::shared_ptr<Scope>();
  auto team = teams_->forProject(*loc);
  if (!team) {
    if (required) return team.status();
    // Reads of the local scopes go on without the team's: its setting could not be read.
    spdlog::warn("team scope of {} left out: {}", loc->root, team.status().message());
    return std::shared_ptr<Scope>();
  }
  if (!*team) return none();
  return team;
}

Result<SaveResult> Service::teamSave(const CallContext& ctx, Scope& scope, SaveInput input) {
  SecretScrubber scrub = scrubber();
  MEMQ_RETURN_IF_ERROR(prepareSaveInput(ctx, input, scrub));
  auto loc = registry_.locate(ctx.projectRoot);
  if (!loc) return loc.status();
  // Checked here as a local save is, whether or not the server is up: bad input is refused with the same codes and
  // never queued.
  auto normalized = normalizeSave(input, loc->root);
  if (!normalized) return normalized.status();
  MEMQ_RETURN_IF_ERROR(checkTeamSaveFiles(input.files, loc->root));
  SaveResult result;
  result.scope = ScopeKind::kTeam;
  result.redactions = scrub.takeRedactions();
  auto saved = scope.team->save(input, loc->root);
  if (!saved && saved.status().code() == ErrorCode::kScopeUnavailable) {
    MEMQ_RETURN_IF_ERROR(scope.team->queue(OutboxRecord{loc->root, input}));
    result.status = SaveStatus::kQueued;
    result.warnings = std::move(normalized->warnings);
    result.hint = "the team server cannot be reached (" + saved.status().message() +
                  "): the save is queued in memqd's outbox and sent when the server is back";
    return result;
  }
  if (!saved) return saved.status();
  result.id = saved->id;
  result.status = saved->status;
  result.reason = saved->reason;
  result.supersededBy = saved->supersededBy;
  result.warnings = saved->warnings;
  result.hint = saveHint(result);
  if (saved->status == SaveStatus::kCreated || saved->status == SaveStatus::kDeduped) {
    CommittedLock lock(*scope.db);
    if (auto m = scope.db->store().get(saved->id)) result.memory = std::move(*m);
    if (saved->status == SaveStatus::kDeduped && result.memory) {
      if (auto kept = categoryKeptWarning(normalized->category, result.id, result.memory->category,
                                          "a team memory keeps the category it was saved with")) {
        result.warnings.push_back(std::move(*kept));
      }
    }
    if (saved->status == SaveStatus::kCreated) {
      SaveOutcome advice = scope.db->store().adviceForCreated(saved->id);
      result.similar = std::move(advice.similar);
      for (auto& w : advice.warnings) result.warnings.push_back(std::move(w));
    }
  }
  return result;
}

Result<Memory> Service::teamChange(const CallContext& ctx, Scope& scope, const std::string& id,
                                   const std::string& action, const std::optional<std::string>& reason,
                                   const std::optional<std::string>& by) {
  if (action == "unreject" && ctx.actor.source != "user") {
    // As the local store has it: the team server does not know who is an agent.
    return Status(ErrorCode::kForbidden, "only a user may take back a rejection (source must be 'user')",
                  nlohmann::json{{"field", "source"}});
  }
  MEMQ_RETURN_IF_ERROR(scope.team->setState(id, action, reason, by));
  CommittedLock lock(*scope.db);
  return scope.db->store().get(id);
}

Result<TeamStatusResult> Service::teamStatusOf(const ProjectLocation& location) {
  TeamStatusResult out;
  out.configPath = teamConfigPath(location);
  auto team = teams_->forProject(location);
  if (!team) return team.status();
  if (!*team) return out;
  out.configured = true;
  out.conninfo = (*team)->team->displayConninfo();
  const TeamSyncStatus s = (*team)->team->status();
  out.online = s.online;
  out.role = s.role;
  out.lastSeq = s.lastSeq;
  out.queued = s.queued;
  out.lastError = s.lastError;
  return out;
}

Result<TeamStatusResult> Service::teamConnect(const CallContext& ctx, const TeamConnectRequest& request) {
  auto project = projectScope(ctx);
  if (!project) return project.status();
  const ProjectLocation location = (*project)->location;
  auto team = teams_->connect(location, request.conninfo);
  if (!team) return team.status();
  const auto deadline = std::chrono::steady_clock::now() + kConnectWait;
  // Until the sync thread is online, or its first attempt failed (it keeps trying), or the wait is over.
  while (!(*team)->team->online() && (*team)->team->status().lastError.empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return teamStatusOf(location);
}

Result<TeamStatusResult> Service::teamStatus(const CallContext& ctx, const NoParams&) {
  auto project = projectScope(ctx);
  if (!project) return project.status();
  return teamStatusOf((*project)->location);
}

Result<TeamStatusResult> Service::teamDisconnect(const CallContext& ctx, const NoParams&) {
  auto project = projectScope(ctx);
  if (!project) return project.status();
  MEMQ_RETURN_IF_ERROR(teams_->disconnect((*project)->location));
  return teamStatusOf((*project)->location);
}

}  // namespace memq
