// Service's export and import (service.h): paging an export across the readable scopes (with the versions memq keeps
// for anchors in version lines before the memories that need them), and staging an import's parts on its connection,
// charged for the memory they hold, until its last request writes them. The JSONL lines themselves are
// jsonl_transfer.h's.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "daemon/service/file_anchors.h"
#include "daemon/service/jsonl_transfer.h"
#include "daemon/service/service.h"
#include "daemon/util/clock.h"

namespace memq {

namespace {

// An amount of memory as an error message gives it: whole MiB, or bytes below one.
std::string sizeText(size_t bytes) {
  return bytes >= (size_t{1} << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

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
  // Appends a memory's lines: the parts of each version memq keeps for its anchors that this page does not hold yet
  // (`versionsOnPage`: an import takes a version sent again once), then the memory's own line. When they do not all
  // fit in what is left of the page, the memory starts the next one. On a page of its own they may still not fit (16
  // anchors in versions of 2 MiB are 43 MiB of base64): the page then ends after a part, the cursor naming it, and
  // the next one goes on from there (it too starts with this memory, so it has the same parts to write). Sizes are
  // planned from the database's lengths; only the versions whose parts go into this page are read, one at a time.
  // Sets next_cursor when the page is full.
  std::map<std::string, std::optional<size_t>> keptBytes;  // scope + blob → keptVersionBytes, read once a page
  auto addMemory = [&](MemoryStore& store, const std::string& scopeName, const Memory& m,
                       std::set<std::string>& versionsOnPage) -> Status {
    struct Part {
      std::string blob;
      size_t contentBytes = 0;
      size_t part = 0;       // 1-based
      size_t lineBytes = 0;  // its line's, with the newline
    };
    std::set<std::string> keptBlobs;  // every kept version of the memory: its line says `"kept": true` for them
    std::vector<Part> parts;
    for (const auto& f : m.files) {
      if (!f.anchor || keptBlobs.count(f.anchor->blob) != 0) continue;
      auto [known, fresh] = keptBytes.try_emplace(scopeName + " " + f.anchor->blob);
      if (fresh) {
        auto bytes = store.keptVersionBytes(f.anchor->blob);
        if (!bytes) return bytes.status();
        known->second = *bytes;
        // A version holding a credential is never kept now (credentialInKeptVersion); one kept before that rule
        // is not exported either: the anchor goes with its lines and blob id, as an import would keep it. Each
        // version is read for it once (the answer is remembered by blob), not on every page its memory starts.
        if (known->second) {
          Status unread;
          auto holds = credentialInKeptVersion(f.anchor->blob, [&]() -> std::shared_ptr<const std::string> {
            auto content = store.keptVersion(f.anchor->blob);
            if (!content) {
              unread = content.status();
              return nullptr;
            }
            return *content;
          });
          MEMQ_RETURN_IF_ERROR(unread);
          if (holds) known->second = std::nullopt;
        }
      }
      if (!known->second) continue;  // the repository's blob: memq keeps nothing
      const size_t contentBytes = *known->second;
      keptBlobs.insert(f.anchor->blob);
      if (versionsOnPage.count(f.anchor->blob) != 0) continue;
      for (size_t p = 1, n = versionPartCount(contentBytes); p <= n; ++p) {
        parts.push_back({f.anchor->blob, contentBytes, p,
                         versionLineLength(scopeName, f.anchor->blob, contentBytes, p) + 1});
      }
    }
    size_t from = 0;  // the first part this page writes
    if (!at.inMemory.empty()) {
      // The page before ended inside this memory's lines: on after the part it wrote last. A memory changed (or
      // gone) since starts again from its first part: import takes a version's part 1 as a new start.
      if (at.inMemory == m.id) {
        for (size_t k = 0; k < parts.size(); ++k) {
          if (parts[k].blob == at.inBlob && parts[k].part == at.inPart) from = k + 1;
        }
      }
      at.inMemory.clear();
      at.inBlob.clear();
      at.inPart = 0;
    }
    const std::string line = memoryLine(m, [&](const FileAnchor& a) { return keptBlobs.count(a.blob) != 0; });
    size_t needed = line.size() + 1;
    for (size_t k = from; k < parts.size(); ++k) needed += parts[k].lineBytes;
    if (!page.jsonl.empty() && page.jsonl.size() + needed > kExportPageBytes) {
      page.nextCursor = at.encode();
      return Status::ok();
    }
    // The page ends inside this memory's lines, after parts[k - 1].
    auto endAfterPart = [&](size_t k) {
      ExportCursor inside = at;
      inside.inMemory = m.id;
      inside.inBlob = parts[k - 1].blob;
      inside.inPart = parts[k - 1].part;
      page.nextCursor = inside.encode();
    };
    std::shared_ptr<const std::string> content;  // the version whose parts are being written
    for (size_t k = from; k < parts.size(); ++k) {
      const Part& part = parts[k];
      // Only on a page this memory started (a page with other lines took all of its lines, above).
      if (k > from && page.jsonl.size() + part.lineBytes > kExportPageBytes) {
        endAfterPart(k);
        return Status::ok();
      }
      if (!content || k == from || part.part == 1) {
        auto read = store.keptVersion(part.blob);
        if (!read) return read.status();
        content = std::move(*read);
        // Both reads are under the scope's lock: the version cannot change between them.
        if (!content || content->size() != part.contentBytes) {
          return Status::internal("export: kept version " + part.blob + " changed while its page was written");
        }
      }
      page.jsonl += versionLine(scopeName, part.blob, *content, part.part);
      page.jsonl += '\n';
      if (part.part == versionPartCount(part.contentBytes)) {
        versionsOnPage.insert(part.blob);
        content.reset();
      }
    }
    if (from < parts.size() && page.jsonl.size() + line.size() + 1 > kExportPageBytes) {
      endAfterPart(parts.size());  // the memory's line opens the next page
      return Status::ok();
    }
    page.jsonl += line;
    page.jsonl += '\n';
    at.afterKey = m.createdAt;
    at.afterSubkey = m.id;
    return Status::ok();
  };
  for (size_t i = first; i < scopes->size(); ++i) {
    Scope& scope = *(*scopes)[i];
    const std::string scopeName = toString(scope.kind);
    if (i != first) at = ExportCursor{scopeName, false, "", ""};
    CommittedLock lock(*scope.db);
    MemoryStore& store = scope.db->store();
    if (auto w = store.unappliedSavesWarning()) page.warnings.push_back(std::move(*w));
    std::set<std::string> versionsOnPage;  // this scope's versions whose every part this page holds
    while (!at.tombstones) {
      auto rows = store.exportPage(only, at.afterKey, at.afterSubkey, kRowsPerQuery);
      if (!rows) return rows.status();
      for (const auto& m : *rows) {
        MEMQ_RETURN_IF_ERROR(addMemory(store, scopeName, m, versionsOnPage));
        if (page.nextCursor) break;
      }
      if (page.nextCursor) break;
      if (rows->size() < static_cast<size_t>(kRowsPerQuery)) at = ExportCursor{scopeName, true, "", ""};
    }
    if (!page.nextCursor && withTombstones) {
      auto tombs = store.tombstones();  // in (at, content_hash) order
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
  // Its lines as read; what they hold in memory (staging.bytes, charged line by line) is counted in `stagedTotal`
  // as well until this import is written or dropped.
  ImportStaging staging;
  std::shared_ptr<std::atomic<size_t>> stagedTotal;

  PendingImport() = default;
  PendingImport(const PendingImport&) = delete;
  PendingImport& operator=(const PendingImport&) = delete;
  ~PendingImport() {
    if (stagedTotal) stagedTotal->fetch_sub(staging.bytes);
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
  // Each line is charged for the memory it holds once read (a short line is a memory of several hundred bytes), to
  // this import and to all imports together, before the next is read. One import past what it may hold alone is
  // InvalidParams, whatever the others hold: a retry could never fit it. With the default bounds the two are equal,
  // so this comes first; a smaller --max-staged-import-bytes bounds one import as well.
  const size_t importBound = std::min(kMaxImportBytes, options_.maxStagedImportBytes);
  // stageImportLines has added `held` to staging.bytes before it calls this.
  auto charge = [&](size_t held) -> Status {
    const size_t stagedEverywhere = stagedImportBytes_->fetch_add(held) + held;
    if (pending->staging.bytes > importBound) {
      return Status::invalidField(
          "jsonl", "an import may hold at most " + sizeText(importBound) +
                       " in memory before its last request (its lines as read, a memory taking far more than its "
                       "bytes of JSONL), and this one holds more at line " + std::to_string(pending->staging.lines) +
                       "; it was dropped: import the file as several imports");
    }
    if (stagedEverywhere > options_.maxStagedImportBytes) {
      return Status(ErrorCode::kBusy,
                    "imports in progress hold " + sizeText(stagedEverywhere) +
                        " over all connections, more than memqd stages at once (" +
                        sizeText(options_.maxStagedImportBytes) +
                        ", --max-staged-import-bytes); this import was dropped: retry once the others are written",
                    nlohmann::json{{"field", "jsonl"}});
    }
    return Status::ok();
  };
  ImportLineOptions options;
  options.projectRoot = (*scope)->kind == ScopeKind::kProject ? (*scope)->location.root : "";
  options.now = isoNow();
  options.actor = ctx.actor.toString();
  SecretScrubber scrub = scrubber();  // an import reports counts, not findings
  options.scrub = [&](std::string& text, const std::string& field) { return scrub.scrub(text, field); };
  MEMQ_RETURN_IF_ERROR(stageImportLines(jsonl, options, pending->staging, charge));
  ImportCounts counts;
  counts.stagedLines = pending->staging.lines;
  if (request.more) {
    if (ctx.client == nullptr) return Status::invalidField("more", "an import in parts needs a connection");
    MutexLock lock(ctx.client->mutex);
    ctx.client->pendingImport = std::move(pending);
    return counts;
  }
  // Every line came: each `"kept": true` anchor gets its version from the version lines.
  MEMQ_RETURN_IF_ERROR(finishImportLines(pending->staging));
  ImportOutcome outcome;
  {
    CommittedLock lock(*(*scope)->db);
    auto written = (*scope)->db->store().importBatch(pending->staging.batch, ctx.actor);
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
