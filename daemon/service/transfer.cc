// Service's export and import (service.h): paging an export across the readable scopes, and staging an import's
// parts on its connection until its last request writes them. The JSONL lines themselves are jsonl_transfer.h's.
#include <tuple>

#include "daemon/service/jsonl_transfer.h"
#include "daemon/service/service.h"
#include "daemon/util/clock.h"

namespace memq {

Result<ExportPage> Service::exportJsonl(const CallContext& ctx, const ExportRequest& request) {
  const std::optional<std::string>& cursor = request.cursor;
  auto scopes = readScopes(ctx);
  if (!scopes) return scopes.status();
  // The team's memories are the team server's to keep (docs/team.md): an export holds them only when it asks for
  // `scope: team`, so that exporting and importing the local scopes never tries to write the team's.
  if (ctx.scopeOverride != ScopeKind::kTeam) {
    std::erase_if(*scopes, [](const std::shared_ptr<Scope>& s) { return s->kind == ScopeKind::kTeam; });
  }
  if (scopes->empty()) return ExportPage{};
  // Pages are keyed by the last line written (not an offset), so memories saved or changed between pages neither
  // shift nor repeat lines: each memory is written once, as it was when its page was read.
  ExportCursor at{toString((*scopes)[0]->kind), false, "", ""};
  size_t first = 0;
  if (cursor && !cursor->empty()) {
    auto decoded = ExportCursor::decode(*cursor);
    if (!decoded) return Status::invalidField("cursor", "cursor is not one a previous export page handed out");
    at = *decoded;
    first = scopes->size();
    for (size_t i = 0; i < scopes->size(); ++i) {
      if (toString((*scopes)[i]->kind) == at.scope) first = i;
    }
    if (first == scopes->size()) {
      return Status::invalidField("cursor", "cursor continues the " + at.scope + " scope, which this request does not read");
    }
  }
  const bool withTombstones = request.allStates || request.state == MemoryState::kRejected;
  const std::optional<MemoryState> only =
      request.allStates ? std::nullopt : std::optional<MemoryState>(request.state.value_or(MemoryState::kActive));
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
    const std::string scopeName = toString(scope.kind);
    if (i != first) at = ExportCursor{scopeName, false, "", ""};
    CommittedLock lock(*scope.db);
    if (auto w = scope.db->store().unappliedSavesWarning()) page.warnings.push_back(std::move(*w));
    while (!at.tombstones) {
      auto rows = scope.db->store().exportPage(only, at.afterKey, at.afterSubkey, kRowsPerQuery);
      if (!rows) return rows.status();
      for (const auto& m : *rows) {
        if (!add(memoryLine(m))) break;
        at.afterKey = m.createdAt;
        at.afterSubkey = m.id;
      }
      if (page.nextCursor) break;
      if (rows->size() < static_cast<size_t>(kRowsPerQuery)) at = ExportCursor{scopeName, true, "", ""};
    }
    if (!page.nextCursor && withTombstones) {
      auto tombs = scope.db->store().tombstones();  // in (at, content_hash) order
      if (!tombs) return tombs.status();
      for (const auto& t : *tombs) {
        if (std::tie(t.at, t.contentHash) <= std::tie(at.afterKey, at.afterSubkey)) continue;
        if (!add(tombstoneLine(t, scopeName))) break;
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
  ScopeKind scope = ScopeKind::kProject;  // the scope it writes, and that scope's database file: later requests
                                         // must name the same
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

Result<ImportCounts> Service::importJsonl(const CallContext& ctx, const ImportRequest& request) {
  const std::string& jsonl = request.jsonl;
  // A part whose scope cannot be opened (a project_root that does not exist, writes disabled) is refused before
  // its lines are read and leaves the staged import as it was.
  auto scope = writeScope(ctx);
  if (!scope) return scope.status();
  // The staged import is taken off the connection for the length of the call: an error below leaves it dropped.
  std::shared_ptr<PendingImport> pending;
  if (ctx.client != nullptr) {
    MutexLock lock(ctx.client->mutex);
    pending = std::exchange(ctx.client->pendingImport, nullptr);
  }
  if ((*scope)->kind == ScopeKind::kTeam) {
    // The replica takes rows only from the server's journal; memories reach the team one save at a time.
    return Status(ErrorCode::kInvalidParams, "import does not write the team scope: save to it with scope team",
                  nlohmann::json{{"field", "scope"}});
  }
  if (!pending) {
    pending = std::make_shared<PendingImport>();
    pending->scope = (*scope)->kind;
    pending->dbPath = (*scope)->db->path;
    pending->stagedTotal = stagedImportBytes_;
  } else if (pending->scope != (*scope)->kind || pending->dbPath != (*scope)->db->path) {
    return Status::invalidField("scope", std::string("this connection's import in progress writes the ") +
                                             toString(pending->scope) +
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
  options.projectRoot = (*scope)->kind == ScopeKind::kProject ? (*scope)->location.root : "";
  options.now = isoNow();
  options.actor = ctx.actor.toString();
  SecretScrubber scrub = scrubber();  // an import reports counts, not findings
  options.scrub = [&](std::string& text, const std::string& field) { return scrub.scrub(text, field); };
  MEMQ_RETURN_IF_ERROR(stageImportLines(jsonl, options, pending->lines, pending->batch));
  ImportCounts counts;
  counts.stagedLines = pending->lines;
  if (request.more) {
    if (ctx.client == nullptr) return Status::invalidField("more", "an import in parts needs a connection");
    MutexLock lock(ctx.client->mutex);
    ctx.client->pendingImport = std::move(pending);
    return counts;
  }
  ImportOutcome outcome;
  {
    CommittedLock lock(*(*scope)->db);
    auto written = (*scope)->db->store().importBatch(pending->batch, ctx.actor);
    if (!written) return written.status();
    outcome = std::move(*written);
  }
  if (outcome.refusal) return importLineError(outcome.refusal->line, outcome.refusal->field, outcome.refusal->message);
  counts.created = outcome.created;
  counts.deduped = outcome.deduped;
  counts.rejected = outcome.rejected;
  counts.tombstones = outcome.tombstones;
  counts.committed = true;
  if (counts.created > 0 || counts.tombstones > 0) emit(**scope, "", "import");
  return counts;
}

}  // namespace memq
