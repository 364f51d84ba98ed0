// Service's memory/* methods (service.h): save, get, update, list, search, recall, and the state changes — each
// resolving its scopes and ids through the core (service.cc), scrubbing new text (SecretScrubber), running under
// the scope's lock, and reporting what changed to the change listener.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "daemon/anchors/line_ranges.h"
#include "daemon/model/file_path.h"
#include "daemon/service/file_anchors.h"
#include "daemon/service/recall_lines.h"
#include "daemon/service/service.h"
#include "daemon/service/working_set_anchors.h"
#include "daemon/team/team_sync.h"

namespace memq {

namespace {

// memory/save's status, from the store's name for it.
Result<SaveStatus> saveStatusOf(const SaveOutcome& outcome) {
  auto status = parseSaveStatus(outcome.status);
  if (!status) return Status::internal("the store reported save status '" + outcome.status + "'");
  return *status;
}

// Where a scope's anchored lines are read from: its work tree and repository (none for the global scope).
AnchorSource anchorSource(const Scope& scope) {
  if (scope.kind != ScopeKind::kProject) return {};
  return AnchorSource{scope.location.root, scope.repo.get()};
}

// Whether a write changed the memory, and so is told to subscribers: any field of its record but its use. Not its
// updated_at alone, a millisecond clock: a change in the millisecond of the one before leaves it as it was.
bool changedBy(const std::optional<Memory>& before, const Memory& after) {
  if (!before) return true;
  auto record = [](const Memory& m) {
    nlohmann::json j = memoryToJson(m);
    j.erase("use_count");
    j.erase("last_used_at");
    return j;
  };
  return record(*before) != record(after);
}

}  // namespace

Status Service::prepareSaveInput(const CallContext& ctx, SaveInput& input, SecretScrubber& scrub) {
  if (input.source.empty() || (input.source != ctx.actor.source && input.source == "agent")) {
    input.source = ctx.actor.source;
  }
  MEMQ_RETURN_IF_ERROR(scrub.scrub(input.summary, "summary"));
  MEMQ_RETURN_IF_ERROR(scrub.scrub(input.details, "details"));
  MEMQ_RETURN_IF_ERROR(scrub.scrubEach(input.topics, "topics"));
  return scrub.scrub(input.sessionId, "session_id");
}

Result<SaveResult> Service::save(const CallContext& ctx, const SaveInput& rawInput) {
  auto scope = writeScope(ctx);
  if (!scope) return scope.status();
  if ((*scope)->kind == ScopeKind::kTeam) return teamSave(ctx, **scope, rawInput);
  SaveInput input = rawInput;
  SecretScrubber scrub = scrubber();
  MEMQ_RETURN_IF_ERROR(prepareSaveInput(ctx, input, scrub));
  const bool inProject = (*scope)->kind == ScopeKind::kProject;
  auto normalized = normalizeSave(input, inProject ? (*scope)->location.root : "");
  if (!normalized) return normalized.status();
  auto files = withBlobIds(**scope, normalized->files);
  std::vector<std::string> anchorWarnings;
  MEMQ_RETURN_IF_ERROR(anchorFileRefs(input.files, "files", anchorSource(**scope), files, &anchorWarnings));
  WorkingSetAnchors tabAnchors;
  if (input.anchorToWorkingSet && ctx.client != nullptr) {
    tabAnchors = anchorToWorkingSet(hintsOf(*ctx.client)->workingSet, anchorSource(**scope), normalized->files, files);
  }
  Actor actor = ctx.actor;
  actor.source = normalized->source;
  Result<SaveOutcome> outcome = Status::internal("unreached");
  {
    MutexLock lock((*scope)->db->mutex);
    outcome = (*scope)->db->store().save(*normalized, files, actor);
    if ((*scope)->db->store().hasPendingSaves()) savesPending_.store(true);
  }
  if (!outcome) return outcome.status();
  auto status = saveStatusOf(*outcome);
  if (!status) return status.status();
  if (*status == SaveStatus::kCreated) emit(**scope, outcome->id, "create");
  if (*status == SaveStatus::kDeduped) emit(**scope, outcome->id, "dedup");
  SaveResult result;
  result.id = outcome->id;
  result.scope = (*scope)->kind;
  result.status = *status;
  result.similar = std::move(outcome->similar);
  result.warnings = std::move(outcome->warnings);
  for (auto& w : anchorWarnings) result.warnings.push_back(std::move(w));
  for (auto& w : tabAnchors.warnings) result.warnings.push_back(std::move(w));
  // What was written: all of it for a new memory; for a dedup, the refs it added (a path the memory had keeps its
  // ref as it was); nothing for a save that wrote nothing (the text exists hidden or superseded, or was rejected).
  if (*status == SaveStatus::kCreated) {
    result.anchored = std::move(tabAnchors.anchored);
  } else if (*status == SaveStatus::kDeduped) {
    for (auto& a : tabAnchors.anchored) {
      const auto& added = outcome->filesAdded;
      if (std::find(added.begin(), added.end(), a.path) != added.end()) result.anchored.push_back(std::move(a));
    }
  }
  result.redactions = scrub.takeRedactions();
  result.memory = std::move(outcome->memory);
  result.reason = std::move(outcome->reason);
  result.supersededBy = std::move(outcome->supersededBy);
  result.hint = saveHint(result);
  result.topicsMerged = outcome->topicsMerged;
  return result;
}

Result<GetResult> Service::get(const CallContext& ctx, const MemoryRef& request) {
  const std::string& id = request.id;
  if (ctx.readScope == ReadScope::kNone) {
    return Status(ErrorCode::kScopeUnavailable, "reads are disabled for this connection (read_scope none)");
  }
  std::vector<std::string> incomplete;  // scopes read whose acknowledged saves are not all readable
  auto noteIncomplete = [&](const std::optional<std::string>& w) {
    if (w && std::find(incomplete.begin(), incomplete.end(), *w) == incomplete.end()) incomplete.push_back(*w);
  };
  // A full id (what clients send back after a recall) is read straight from each scope in resolve's order, one
  // read per scope and none of resolve's id lookup before it; an exact id in any scope wins over prefixes
  // elsewhere, as in resolve. What no scope holds exactly goes through resolve: a prefix, or NotFound naming `id`.
  Result<Memory> m = [&]() -> Result<Memory> {
    if (!id.empty()) {
      LeftOutScope leftOut;  // an exact id is unique: found elsewhere, it is not the global scope's
      auto scopes = idScopes(ctx, &leftOut);
      if (!scopes) return scopes.status();
      for (auto& scope : *scopes) {
        CommittedLock lock(*scope->db);
        auto exact = scope->db->store().get(id);
        noteIncomplete(scope->db->store().unappliedSavesWarning());
        if (exact || exact.status().code() != ErrorCode::kNotFound) return exact;
      }
    }
    auto r = resolve(ctx, id);
    if (!r) return r.status();
    CommittedLock lock(*r->scope->db);
    return r->scope->db->store().get(r->id);
  }();
  if (!m && m.status().code() == ErrorCode::kNotFound && !incomplete.empty()) {
    // Not found in what could be read is not "not found": the memory may be one of the saves left out.
    return Status(ErrorCode::kStorageError, m.status().message() + ", but " + incomplete.front(),
                  nlohmann::json{{"field", "id"}, {"warnings", incomplete}});
  }
  if (!m) return m.status();
  markActed(ctx.client);
  return GetResult{std::move(*m), std::move(incomplete)};
}

Result<Memory> Service::mutate(const CallContext& ctx, const std::string& id, const std::string& action,
                               const std::function<Result<Memory>(MemoryStore&, const std::string&)>& op,
                               const TeamOp* team) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto r = resolve(ctx, id);
  if (!r) return r.status();
  if (r->scope->kind == ScopeKind::kTeam) {
    if (!team) return teamUnsupported("memory/" + action);
    return teamChange(ctx, *r->scope, r->id, action, team->reason);
  }
  Result<Memory> out = Status::internal("unreached");
  std::optional<Memory> before;
  {
    CommittedLock lock(*r->scope->db);
    if (auto m = r->scope->db->store().get(r->id)) before = std::move(*m);
    out = op(r->scope->db->store(), r->id);
  }
  if (out && changedBy(before, *out)) emit(*r->scope, r->id, action);
  return out;
}

Result<UpdateOutcome> Service::update(const CallContext& ctx, const UpdateRequest& request) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto r = resolve(ctx, request.id);
  if (!r) return r.status();
  if (r->scope->kind == ScopeKind::kTeam) return teamUnsupported("memory/update");
  UpdateInput in;
  in.summary = request.summary;
  in.details = request.details;
  in.category = request.category;
  in.topics = request.topics;
  SecretScrubber scrub = scrubber();
  MEMQ_RETURN_IF_ERROR(scrub.scrub(in.summary, "summary"));
  MEMQ_RETURN_IF_ERROR(scrub.scrub(in.details, "details"));
  if (in.topics) MEMQ_RETURN_IF_ERROR(scrub.scrubEach(*in.topics, "topics"));
  in.pinned = request.pinned;
  std::vector<std::string> warnings;
  if (request.files) {
    auto paths = normalizePaths(ctx, r->scope.get(), filePaths(*request.files), "files");
    if (!paths) return paths.status();
    in.files = withBlobIds(*r->scope, *paths);
    MEMQ_RETURN_IF_ERROR(anchorFileRefs(*request.files, "files", anchorSource(*r->scope), *in.files, &warnings));
  }
  Result<Memory> out = Status::internal("unreached");
  std::optional<Memory> before;
  {
    CommittedLock lock(*r->scope->db);
    if (auto m = r->scope->db->store().get(r->id)) before = std::move(*m);
    out = r->scope->db->store().update(r->id, in, ctx.actor, &warnings);
  }
  if (!out) return out.status();
  if (changedBy(before, *out)) emit(*r->scope, r->id, "update");
  return UpdateOutcome{std::move(*out), scrub.takeRedactions(), std::move(warnings)};
}

Result<ListResult> Service::list(const CallContext& ctx, const ListFilter& filter) {
  ListResult out;
  LeftOutScope leftOut;
  auto scopes = readScopes(ctx, &leftOut);
  if (!scopes) return scopes.status();
  if (leftOut.global) out.warnings.push_back(leftOut.warning());
  ListFilter f = filter;
  // One scope pages itself; across scopes, enough is fetched from each to merge them, then cut.
  const bool merged = scopes->size() > 1;
  if (merged) {
    f.offset = 0;
    // Both are at most INT_MAX (the schemas): their sum may not be.
    f.limit = static_cast<int>(std::min<int64_t>(std::numeric_limits<int>::max(),
                                                 int64_t{filter.offset} + int64_t{filter.limit}));
  }
  if (f.file && !f.file->empty()) {
    auto p = normalizePaths(ctx, scopes->empty() ? nullptr : scopes->front().get(), {*f.file}, "file");
    if (!p) return p.status();
    f.file = p->front();
  }
  for (auto& scope : *scopes) {
    CommittedLock lock(*scope->db);
    auto l = scope->db->store().list(f);
    if (!l) return l.status();
    if (auto w = scope->db->store().unappliedSavesWarning()) out.warnings.push_back(std::move(*w));
    out.total += l->total;
    for (auto& m : l->memories) out.memories.push_back(std::move(m));
  }
  if (!merged) {
    markActed(ctx.client);
    return out;
  }
  std::stable_sort(out.memories.begin(), out.memories.end(), [](const Memory& a, const Memory& b) {
    if (a.pinned != b.pinned) return a.pinned > b.pinned;
    return a.lastUsedAt > b.lastUsedAt;
  });
  size_t begin = std::min<size_t>(filter.offset, out.memories.size());
  size_t end = std::min<size_t>(begin + filter.limit, out.memories.size());
  out.memories = std::vector<Memory>(std::make_move_iterator(out.memories.begin() + begin),
                                     std::make_move_iterator(out.memories.begin() + end));
  markActed(ctx.client);
  return out;
}

Result<RecallHits> Service::search(const CallContext& ctx, const SearchRequest& request) {
  RecallParams params{request.query, /*markUsed=*/false};
  // Its files are checked as recall's are, then left out: search ranks by text alone.
  MEMQ_RETURN_IF_ERROR(checkQueryFiles(ctx, params.query.files, params.query.lines));
  params.query.useFileSignals = false;
  params.query.files.clear();
  params.query.lines.clear();
  auto hits = recall(ctx, params);
  if (hits) markActed(ctx.client);
  return hits;
}

std::optional<std::string> Service::saveHint(const SaveResult& r) {
  const bool team = r.scope == ScopeKind::kTeam;
  const std::string memory = team ? "team memory " : "memory ";
  switch (r.status) {
    case SaveStatus::kExistsHidden:
      return memory + r.id + " holds this text but is hidden; restore it with memory/restore";
    case SaveStatus::kExistsSuperseded:
      return memory + r.id + " holds this text but was superseded by " + r.supersededBy.value_or("?");
    case SaveStatus::kRejected:
      return std::string("this text was rejected") + (team ? " in the team scope" : "") + " (" +
             r.reason.value_or("") + "); it will not be stored";
    case SaveStatus::kQueued:  // teamSave writes its own, naming why the server could not be reached
    case SaveStatus::kCreated:
    case SaveStatus::kDeduped:
      break;
  }
  return std::nullopt;
}

Result<RecallHits> Service::recall(const CallContext& ctx, const RecallParams& params) {
  RecallRequest request = params.query;
  const bool markUsed = params.markUsed;
  RecallHits out;
  out.explain = request.explain;
  if (ctx.readScope == ReadScope::kNone) {
    // Nothing is read, but the request is checked as any other: a bad file is refused, not answered empty.
    MEMQ_RETURN_IF_ERROR(checkQueryFiles(ctx, request.files, request.lines));
    return out;
  }
  LeftOutScope leftOut;
  auto scopes = readScopes(ctx, &leftOut);
  if (!scopes) return scopes.status();
  if (leftOut.global) out.warnings.push_back(leftOut.warning());
  if (request.query.empty() && request.files.empty()) return out;
  std::shared_ptr<Scope> project;
  for (auto& s : *scopes) {
    if (s->kind == ScopeKind::kProject) project = s;
  }
  if (!request.files.empty()) {
    auto paths = normalizePaths(ctx, project.get(), request.files, "files", kMaxQueryFiles);
    if (!paths) return paths.status();
    request.files = *paths;
    MEMQ_RETURN_IF_ERROR(normalizeQueryLines(ctx, project.get(), request.lines));
    // A file named without lines: the lines this tab read or edited in it. A recall naming no files takes none.
    if (project && ctx.client != nullptr) {
      fillFromWorkingSet(hintsOf(*ctx.client)->workingSet, project->location.root, request.files, request.lines);
    }
  }
  // HEAD as it is now for every lookup below: a commit made just before this recall counts in it.
  if (project && project->repo) project->repo->observeHeadNow();
  PreparedQuery query = prepareQuery(request, *options_.embedder, project ? project->repo.get() : nullptr);
  // The project's files as they are now, read once for the line signals and the hits' anchored lines.
  WorkTreeVersions workTree(project ? project->location.root : std::string(),
                            project ? project->location.repoPrefix : std::string(), query.renamed);
  std::vector<Candidate> all;
  for (auto& scope : *scopes) {
    CommittedLock lock(*scope->db);
    auto c = gatherCandidates(scope->db->store(), request, query,
                              scope->kind == ScopeKind::kProject ? scope->repo.get() : nullptr);
    if (!c) return c.status();
    if (scope->kind == ScopeKind::kProject && scope->carrier && !request.lines.empty()) {
      MEMQ_RETURN_IF_ERROR(
          addLineSignals(scope->db->store(), *scope->carrier, workTree, request.lines, *c));
    }
    for (auto& cand : *c) all.push_back(std::move(cand));
  }
  auto hits = rankAndSelect(std::move(all), request);
  // Candidates were ranked from the stores' mirrors; only the selected hits' rows are read, each scope under its
  // lock again. Between the two locks another connection may have hidden (or superseded, rejected, purged) a hit:
  // loadHitRows drops such a hit rather than return it, so a recall can return fewer than it selected.
  for (auto& scope : *scopes) {
    const std::string scopeName = toString(scope->kind);  // as the store stamps it on the records
    if (std::none_of(hits.begin(), hits.end(), [&](const RecallHit& h) { return h.memory.scope == scopeName; })) {
      continue;
    }
    CommittedLock lock(*scope->db);
    auto loaded = loadHitRows(scope->db->store(), hits);
    if (!loaded) return loaded;
    if (scope->kind == ScopeKind::kProject && scope->carrier) {
      MEMQ_RETURN_IF_ERROR(
          annotateAnchoredLines(scope->db->store(), *scope->carrier, workTree, scopeName, hits));
    }
  }
  // Uses are recorded once every scope has answered: a recall that fails counts no use anywhere.
  if (markUsed) {
    for (auto& scope : *scopes) {
      const std::string scopeName = toString(scope->kind);
      std::vector<int64_t> pks;
      for (const auto& h : hits) {
        if (h.memory.scope == scopeName) pks.push_back(h.memory.pk);
      }
      if (pks.empty()) continue;
      CommittedLock lock(*scope->db);
      auto st = scope->db->store().markUsed(pks);
      if (!st) spdlog::warn("could not record usage in {}: {}", scope->db->store().path(), st.message());
    }
  }
  if (project && project->repo) {
    // Staleness only means something against the project's own repository.
    CurrentBlobIds current(*project->repo);
    for (auto& h : hits) {
      if (h.memory.scope == toString(ScopeKind::kProject)) annotateStaleness(h, current, query.renamed);
    }
  }
  for (auto& scope : *scopes) {
    if (scope->team && !scope->team->online()) out.warnings.push_back(teamOfflineWarning(*scope));
  }
  out.hits = std::move(hits);
  return out;
}

Result<Memory> Service::hide(const CallContext& ctx, const StateChangeRequest& request) {
  std::optional<std::string> reason = request.reason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason"));
  const TeamOp team{reason};
  return mutate(ctx, request.id, "hide",
                [&](MemoryStore& s, const std::string& full) { return s.hide(full, reason, ctx.actor); }, &team);
}

Result<Memory> Service::restore(const CallContext& ctx, const StateChangeRequest& request) {
  std::optional<std::string> reason = request.reason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason"));
  const TeamOp team{reason};
  return mutate(ctx, request.id, "restore",
                [&](MemoryStore& s, const std::string& full) { return s.restore(full, ctx.actor, reason); }, &team);
}

Result<Memory> Service::pin(const CallContext& ctx, const MemoryRef& request) {
  return mutate(ctx, request.id, "pin",
                [&](MemoryStore& s, const std::string& full) { return s.setPinned(full, true, ctx.actor); });
}

Result<Memory> Service::unpin(const CallContext& ctx, const MemoryRef& request) {
  return mutate(ctx, request.id, "unpin",
                [&](MemoryStore& s, const std::string& full) { return s.setPinned(full, false, ctx.actor); });
}

Result<SupersedeResult> Service::supersede(const CallContext& ctx, const SupersedeRequest& request) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto oldR = resolve(ctx, request.id, "id");
  if (!oldR) return oldR.status();
  auto byR = resolve(ctx, request.by, "by");
  if (!byR) return byR.status();
  if (oldR->scope->db != byR->scope->db) {
    return Status(ErrorCode::kInvalidParams, "a memory can only be superseded by one in the same scope",
                  nlohmann::json{{"field", "by"}});
  }
  if (oldR->scope->kind == ScopeKind::kTeam) {
    auto old = teamChange(ctx, *oldR->scope, oldR->id, "supersede", std::nullopt, byR->id);
    if (!old) return old.status();
    CommittedLock lock(*byR->scope->db);
    auto by = byR->scope->db->store().get(byR->id);
    if (!by) return by.status();
    return SupersedeResult{std::move(*old), std::move(*by)};
  }
  Result<std::pair<Memory, Memory>> out = Status::internal("unreached");
  std::optional<Memory> before;
  {
    CommittedLock lock(*oldR->scope->db);
    if (auto m = oldR->scope->db->store().get(oldR->id)) before = std::move(*m);
    out = oldR->scope->db->store().supersede(oldR->id, byR->id, ctx.actor);
  }
  if (!out) return out.status();
  // Superseding again by the same replacement changes nothing, and so tells no subscriber.
  if (changedBy(before, out->first)) emit(*oldR->scope, oldR->id, "supersede");
  return SupersedeResult{std::move(out->first), std::move(out->second)};
}

Result<Memory> Service::reject(const CallContext& ctx, const StateChangeRequest& request) {
  if (!request.reason || request.reason->empty()) {
    return Status::invalidField("reason", "reason is required to reject a memory");
  }
  std::optional<std::string> reason = request.reason;
  MEMQ_RETURN_IF_ERROR(scrubFreeText(reason, "reason"));
  const TeamOp team{reason};
  return mutate(ctx, request.id, "reject",
                [&](MemoryStore& s, const std::string& full) { return s.reject(full, *reason, ctx.actor); }, &team);
}

Result<Memory> Service::unreject(const CallContext& ctx, const MemoryRef& request) {
  const TeamOp team{std::nullopt};
  return mutate(ctx, request.id, "unreject",
                [&](MemoryStore& s, const std::string& full) { return s.unreject(full, ctx.actor); }, &team);
}

Result<PurgeResult> Service::purge(const CallContext& ctx, const PurgeRequest& request) {
  if (!request.confirm) {
    return Status(ErrorCode::kForbidden, "purge deletes for good; pass confirm: true", nlohmann::json{{"field", "confirm"}});
  }
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto r = resolve(ctx, request.id);
  if (!r) return r.status();
  if (r->scope->kind == ScopeKind::kTeam) {
    MEMQ_RETURN_IF_ERROR(r->scope->team->purge(r->id));
    return PurgeResult{request.id};  // memory/changed comes from the replica's apply, as for every team change
  }
  Status st;
  {
    CommittedLock lock(*r->scope->db);
    st = r->scope->db->store().purge(r->id, true, ctx.actor);
  }
  if (!st) return st;
  emit(*r->scope, r->id, "purge");
  return PurgeResult{request.id};
}

Result<Memory> Service::attach(const CallContext& ctx, const FilesChange& request) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto r = resolve(ctx, request.id);
  if (!r) return r.status();
  // Refused for what the memory is before its files are read: a team memory's refs are the server's.
  if (r->scope->kind == ScopeKind::kTeam) return teamUnsupported("memory/attach");
  auto paths = normalizePaths(ctx, r->scope.get(), filePaths(request.files), "files");
  if (!paths) return paths.status();
  auto refs = withBlobIds(*r->scope, *paths);
  MEMQ_RETURN_IF_ERROR(anchorFileRefs(request.files, "files", anchorSource(*r->scope), refs));
  return mutate(ctx, r->id, "attach",
                [&](MemoryStore& s, const std::string& full) { return s.attach(full, refs, ctx.actor); });
}

Result<Memory> Service::detach(const CallContext& ctx, const FilesChange& request) {
  MEMQ_RETURN_IF_ERROR(requireWrites(ctx));
  auto r = resolve(ctx, request.id);
  if (!r) return r.status();
  // Refused for what the memory is before its files are read: a team memory's refs are the server's.
  if (r->scope->kind == ScopeKind::kTeam) return teamUnsupported("memory/detach");
  auto paths = normalizePaths(ctx, r->scope.get(), filePaths(request.files), "files");
  if (!paths) return paths.status();
  return mutate(ctx, r->id, "detach",
                [&](MemoryStore& s, const std::string& full) { return s.detach(full, *paths, ctx.actor); });
}

}  // namespace memq
