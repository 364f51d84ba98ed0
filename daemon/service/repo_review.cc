// Service's repo/*, review/*, audit/list and stats methods (service.h): what the project's repository says about
// its files, the review reports (clusters in clustering.h, staleness by lines in review_lines.h), the audit journal,
// and the scopes' counters.
#include <algorithm>
#include <filesystem>
#include <iterator>

#include "daemon/service/clustering.h"
#include "daemon/service/review_lines.h"
#include "daemon/service/service.h"
#include "daemon/util/clock.h"

namespace memq {

namespace {

// review/stale and review/dead look at this many memories with files at most.
constexpr int kMaxReviewedMemories = 100000;
// review/stale decides this many memories at a time.
constexpr size_t kStaleBatch = 64;

// audit/list's `since`: a date or date-time (ISO-8601; UTC unless it carries an offset) rewritten in the journal's
// own format ("2026-11-29T14:33:25.605Z"), so that "at >= since" compares as text exactly as it does as time.
std::optional<std::string> journalTime(const std::string& text) {
  auto instant = parseIsoInstant(text, IsoTimeForm::kDateOrDateTime);
  if (!instant) return std::nullopt;
  return formatIsoInstant(*instant);
}

}  // namespace

Result<Service::ProjectFile> Service::projectFile(const CallContext& ctx, const std::string& file) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  auto paths = normalizePaths(ctx, scope->get(), {file}, "file");
  if (!paths) return paths.status();
  return ProjectFile{std::move(*scope), std::move(paths->front())};
}

Result<CochangeResult> Service::repoCochange(const CallContext& ctx, const CochangeRequest& request) {
  auto at = projectFile(ctx, request.file);
  if (!at) return at.status();
  CochangeResult result;
  result.file = at->path;
  if (at->scope->repo) {
    at->scope->repo->observeHeadNow();
    result.neighbors = at->scope->repo->cochangeNeighbors(result.file, request.limit);
    result.head = at->scope->repo->head();
  }
  return result;
}

Result<BlastRadius> Service::repoBlastRadius(const CallContext& ctx, const FileRequest& request) {
  auto at = projectFile(ctx, request.file);
  if (!at) return at.status();
  BlastRadius result;
  result.file = at->path;
  if (at->scope->repo) {
    at->scope->repo->observeHeadNow();
    result.radius = at->scope->repo->blastRadius(result.file);
    result.dependents = at->scope->repo->dependents(result.file);
  }
  return result;
}

Result<RepoRefreshResult> Service::repoRefresh(const CallContext& ctx, const NoParams&) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  RepoRefreshResult result;
  result.inGit = (*scope)->repo != nullptr;
  if ((*scope)->repo) result.info = (*scope)->repo->refresh();
  return result;
}

Result<ClusterReport> Service::reviewClusters(const CallContext& ctx, const ClusterRequest& request) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  ClusterReport report;
  for (auto& scope : *scopes) {
    CommittedLock lock(*scope->db);
    auto clusters = findReviewClusters(*scope, request.minWeight);
    if (!clusters) return clusters.status();
    for (auto& c : *clusters) report.clusters.push_back(std::move(c));
  }
  return report;
}

Result<StaleReport> Service::reviewStale(const CallContext& ctx, const ReviewRequest& request) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  StaleReport report;
  Scope& project = **scope;
  if (!project.repo) return report;
  CommittedLock lock(*project.db);
  auto ms = project.db->store().memoriesWithFiles(kMaxReviewedMemories);
  if (!ms) return ms.status();
  // Anchored lines are carried as recall carries its hits' (review_lines.h), a batch at a time: carrying reads the
  // batch's anchored refs, and the report stops at its limit.
  WorkTreeVersions workTree(project.location.root, project.location.repoPrefix);
  for (size_t at = 0; at < ms->size() && report.memories.size() < request.limit; at += kStaleBatch) {
    const size_t end = std::min(ms->size(), at + kStaleBatch);
    std::vector<Memory> batch(std::make_move_iterator(ms->begin() + at), std::make_move_iterator(ms->begin() + end));
    auto stale = staleMemories(project.db->store(), project.carrier.get(), *project.repo, workTree,
                               toString(project.kind), std::move(batch));
    if (!stale) return stale.status();
    for (auto& m : *stale) {
      if (report.memories.size() >= request.limit) break;
      report.memories.push_back(std::move(m));
    }
  }
  return report;
}

Result<DeadReport> Service::reviewDead(const CallContext& ctx, const ReviewRequest& request) {
  auto scope = projectScope(ctx);
  if (!scope) return scope.status();
  DeadReport report;
  CommittedLock lock(*(*scope)->db);
  auto ms = (*scope)->db->store().memoriesWithFiles(kMaxReviewedMemories);
  if (!ms) return ms.status();
  namespace fs = std::filesystem;
  for (auto& m : *ms) {
    if (report.memories.size() >= request.limit) break;
    std::vector<std::string> missing;
    for (const auto& f : m.files) {
      bool exists = (*scope)->repo ? (*scope)->repo->currentBlobId(f.path).has_value()
                                   : fs::exists(fs::path((*scope)->location.root) / f.path);
      if (!exists) missing.push_back(f.path);
    }
    if (!missing.empty()) report.memories.push_back({std::move(m), std::move(missing)});
  }
  return report;
}

Result<AuditPage> Service::auditList(const CallContext& ctx, const AuditFilter& filter) {
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
  // An id or prefix names one memory; one no scope holds is matched as written (a purged memory's events keep its
  // full id), and a prefix of several is Ambiguous, as everywhere else.
  std::optional<Resolved> named;
  if (filter.memoryId) {
    auto r = resolve(ctx, *filter.memoryId);
    if (!r && r.status().code() == ErrorCode::kAmbiguous) return r.status();
    if (r) named = *r;
  }
  AuditPage page;
  for (auto& scope : *scopes) {
    if (named) {
      if (named->scope->db != scope->db) continue;
      f.memoryId = named->id;
    }
    CommittedLock lock(*scope->db);
    auto list = scope->db->store().audit(f);
    if (!list) return list.status();
    for (auto& e : *list) page.events.push_back({scope->kind, std::move(e)});
  }
  return page;
}

Result<StatsReport> Service::stats(const CallContext& ctx, const NoParams&) {
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  StatsReport report;
  for (auto& scope : *scopes) {
    CommittedLock lock(*scope->db);
    auto s = scope->db->store().stats();
    if (!s) return s.status();
    ScopeStats entry{scope->kind, std::move(*s), std::nullopt};
    if (scope->repo) entry.cochangeHead = scope->repo->head();
    report.scopes.push_back(std::move(entry));
  }
  return report;
}

}  // namespace memq
