// The values Service takes and returns: its options, the context of one request, and a request and a result type
// per method. Plain data, no JSON: daemon/server reads each method's params into its request type and writes each
// result type as the method's reply (docs/protocol.md has both).
// Thread-safety: plain values.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/git/repo_location.h"
#include "daemon/hints/hint_engine.h"
#include "daemon/model/memory.h"
#include "daemon/model/memory_input.h"
#include "daemon/model/save_status.h"
#include "daemon/model/scope_kind.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/service/client_state.h"
#include "daemon/service/scope_registry.h"
#include "daemon/service/secret_scrub.h"
#include "daemon/store/memory_store.h"

namespace memq {

struct ServiceOptions {
  std::string dataDir;
  const Embedder* embedder = nullptr;
  RepoSignalsFactory repoFactory;
  SecretsMode secretsMode = SecretsMode::kRedact;
  // StoreOptions::saveBatch of every scope: saves that follow each other share a transaction (and the save journal
  // keeps each acknowledged one). The owner calls commitPendingSaves() soon after a save that leaves one open.
  // 256, not 64: the background applier writes the FTS5 lanes once per batch, and a stream of saves through the
  // socket ran 1.2 times faster (docs/performance.md, "Saves in the background").
  int saveBatch = 256;
  // The memory that imports in parts may hold over all connections together until their last request (memqd
  // --max-staged-import-bytes), counted as each staged line takes it (its parsed fields and kept versions, not its
  // JSONL bytes): one import may hold min(kMaxImportBytes, this), but forty connections must not hold forty times
  // that. An import part that takes one import past its own bound is refused with InvalidParams; one that takes all
  // of them together past this, with Busy; either way that import is dropped.
  size_t maxStagedImportBytes = size_t{512} << 20;
};

// The params every method may carry (docs/protocol.md, "Common params"), each narrowing the connection's value for
// one request; nullopt where the request does not pass it.
struct CommonParams {
  std::optional<std::string> projectRoot;
  std::optional<ReadScope> readScope;
  std::optional<WriteScope> writeScope;
  std::optional<ScopeKind> scope;
  std::optional<std::string> source;  // "user" | "agent"
};

// The scopes and identity one request runs with: the connection's values narrowed by its CommonParams.
struct CallContext {
  ClientState* client = nullptr;
  std::string projectRoot;
  ReadScope readScope = ReadScope::kAll;
  WriteScope writeScope = WriteScope::kProject;
  std::optional<ScopeKind> scopeOverride;  // the request's `scope`
  bool writeScopeNarrowed = false;         // the request itself passed `write_scope`
  Actor actor;
};

// What the change listener hears of each mutation (memqd sends it as memory/changed).
struct ChangeEvent {
  ScopeKind scope = ScopeKind::kProject;
  std::string projectRoot;  // for project scopes
  std::string id;
  std::string action;
};

// How long the hint state of an initialize `tab` outlives its last connection, and how many idle tabs are kept.
inline constexpr std::chrono::hours kTabRetention{12};
inline constexpr size_t kMaxRetainedTabs = 4096;

// A method that takes no params beyond the common ones.
struct NoParams {};

// The memory one id or id prefix names, for the methods that need nothing else.
struct MemoryRef {
  std::string id;
};

// --- initialize ---
struct InitializeRequest {
  std::string clientName = "anonymous";
  std::optional<std::string> projectRoot;
  std::optional<ReadScope> readScope;
  std::optional<WriteScope> writeScope;
  std::optional<std::string> source;
  std::string parent;  // a connected session's token: this connection is its subagent
  std::string tab;     // names hint state that outlives the connection
};
struct InitializeResult {
  std::string session;                     // this connection's token
  std::optional<ProjectLocation> project;  // the project the connection's project_root names
  std::string embedderModel;
};

// --- memory/save (takes a SaveInput) ---
struct SaveResult {
  std::string id;  // the memory written, deduped into, or blocking the save
  ScopeKind scope = ScopeKind::kProject;
  SaveStatus status = SaveStatus::kCreated;
  std::vector<SimilarHint> similar;
  std::vector<std::string> warnings;
  std::vector<Redaction> redactions;
  std::optional<Memory> memory;
  std::vector<PathLines> anchored;          // the refs anchored to the lines the tab edited (working set)
  std::optional<std::string> reason;        // rejected: the tombstone's reason
  std::optional<std::string> supersededBy;  // exists_superseded: the replacement
  std::optional<std::string> hint;          // what to do about a save that stored nothing
  bool topicsMerged = false;
};

// --- memory/get ---
struct GetResult {
  Memory memory;
  // Why the answer may be incomplete (MemoryStore::unappliedSavesWarning of a scope read); usually empty.
  std::vector<std::string> warnings;
};

// --- memory/update ---
struct UpdateRequest {
  std::string id;
  std::optional<std::string> summary;
  std::optional<std::string> details;
  std::optional<std::optional<std::string>> category;  // present-and-null clears it
  std::optional<std::vector<std::string>> topics;
  std::optional<std::vector<FileEntry>> files;  // replaces the set; entries may anchor lines
  std::optional<bool> pinned;
};
// The memory as it now is, and the credentials redacted from the new text (as memory/save reports them).
struct UpdateOutcome {
  Memory memory;
  std::vector<Redaction> redactions;
  std::vector<std::string> warnings;  // what the new text lost on the way in (truncation, dropped topics)
};

// --- memory/search and memory/recall ---
struct SearchRequest {
  RecallRequest query;
};
struct RecallParams {
  RecallRequest query;
  bool markUsed = true;  // count the hits as used (last_used_at, use_count)
};
struct RecallHits {
  std::vector<RecallHit> hits;
  bool explain = false;  // the request asked for each hit's ranking terms
  // Why the answer may be stale or incomplete: a team scope answered from its replica while its server is offline.
  std::vector<std::string> warnings;
};

// --- memory/hide, memory/restore, memory/reject ---
struct StateChangeRequest {
  std::string id;
  std::optional<std::string> reason;  // required (and not empty) for reject
};

// --- memory/supersede ---
struct SupersedeRequest {
  std::string id;
  std::string by;
};
struct SupersedeResult {
  Memory old;
  Memory replacement;
};

// --- memory/purge ---
struct PurgeRequest {
  std::string id;
  bool confirm = false;
};
struct PurgeResult {
  std::string id;  // as the request named it
};

// --- memory/attach, memory/detach ---
struct FilesChange {
  std::string id;
  std::vector<FileEntry> files;  // attach: entries may anchor lines (an anchor replaces the path's); detach: paths
};

// --- hints/for_tool, hints/turn ---
struct HintsRequest {
  std::string tool;
  std::vector<std::string> files;
  std::string query;
  // The lines of `files` the query names ({path, lines} entries), validated, paths normalised like `files`: within
  // a category, the memory anchored on them comes first (hint_gathering.h).
  std::vector<PathLines> lines;
};
struct HintTurn {
  int64_t turn = 0;
};

// --- repo/cochange, repo/blast_radius, repo/refresh ---
struct CochangeRequest {
  std::string file;
  size_t limit = 10;
};
struct CochangeResult {
  std::string file;  // normalised
  std::vector<CoChangeNeighbor> neighbors;
  std::string head;  // "" outside git
};
struct FileRequest {
  std::string file;
};
struct BlastRadius {
  std::string file;  // normalised
  int radius = 0;
  std::vector<std::string> dependents;
};
struct RepoRefreshResult {
  RepoRefreshInfo info;
  bool inGit = false;
};

// --- review/clusters, review/stale, review/dead ---
struct ClusterRequest {
  double minWeight = 0.7;
};
// Memories of one scope joined by similar edges of at least the request's weight: candidates to merge.
struct ReviewCluster {
  ScopeKind scope = ScopeKind::kProject;
  double weight = 0;  // the strongest edge inside the cluster
  std::vector<Memory> memories;  // in id order
};
struct ClusterReport {
  std::vector<ReviewCluster> clusters;
};
struct ReviewRequest {
  size_t limit = 50;
};
// A memory and the files of it that a review found wanting.
struct FlaggedMemory {
  Memory memory;
  std::vector<std::string> files;
};
// A few lines of one version of a file, each cut to a bounded length; `more` counts the lines left out.
struct LinesExcerpt {
  std::vector<std::string> text;
  size_t more = 0;
};
// One anchored file ref of a stale memory (docs/anchors.md, "In review"): its lines as saved, where they are in the
// work tree now and what became of them; for lines rewritten or deleted, the text the change touched then and now.
struct StaleAnchoredLines {
  AnchoredLinesNow now;  // path, state, and the lines in the work-tree file now
  LineRanges linesThen;  // as saved, in version blobThen
  std::string blobThen;
  LinesExcerpt textThen;  // the saved lines the change rewrote or deleted (empty when unchanged or moved)
  LinesExcerpt textNow;   // the work-tree lines that replaced them (empty unless rewritten)
};
// A memory with files changed since it recorded them; an anchored file whose lines are unchanged or only moved does
// not count as changed.
struct StaleMemory {
  Memory memory;
  std::vector<std::string> files;  // the changed files
  std::vector<StaleAnchoredLines> anchoredLines;  // every anchored ref of it that could be carried
};
struct StaleReport {
  std::vector<StaleMemory> memories;
};
struct DeadReport {
  std::vector<FlaggedMemory> memories;  // files: those no longer in the work tree
};

// --- audit/list (takes an AuditFilter) ---
struct AuditEntry {
  ScopeKind scope = ScopeKind::kProject;
  AuditEvent event;  // its `detail` is free-form JSON: each action records what it needs
};
struct AuditPage {
  std::vector<AuditEntry> events;
};

// --- export ---
struct ExportRequest {
  std::optional<MemoryState> state;  // nullopt with allStates false: active
  bool allStates = false;
  std::optional<std::string> cursor;  // "" starts paging; nullopt asks for everything in one reply
};
// One page of `export`: whole lines, and where the next page starts (nullopt: this was the last).
struct ExportPage {
  std::string jsonl;
  std::optional<std::string> nextCursor;
  // A scope read without every acknowledged save (its journal could not be applied): the page may be incomplete.
  std::vector<std::string> warnings;
};
// An export page holds this much JSONL at most (or one line, if a line is longer): far below the bytes a connection
// may leave unread (the slow-client bound), so a client that reads each page before asking for the next never
// meets it. An export without a cursor must fit in one page.
inline constexpr size_t kExportPageBytes = size_t{4} << 20;

// --- import ---
struct ImportRequest {
  std::string jsonl;
  bool more = false;  // further parts follow: stage these lines, write nothing yet
};
// The memory one import may take with the lines it stages across its requests before it is committed (memqd holds
// them parsed until then; counted per line as it is staged, not as JSONL bytes).
inline constexpr size_t kMaxImportBytes = size_t{512} << 20;
// What `import` did: for a request with `more`, only the lines staged so far; else what the commit wrote.
struct ImportCounts {
  int64_t created = 0;
  int64_t deduped = 0;
  int64_t rejected = 0;
  int64_t tombstones = 0;
  size_t stagedLines = 0;  // lines received by this import so far (blank ones included)
  bool committed = false;
};

// --- team/connect, team/status, team/disconnect ---
struct TeamConnectRequest {
  std::string conninfo;  // a libpq conninfo or postgresql:// URI, without a password
};
// The project's team scope: its setting, and when it is open, the sync thread's view of the server.
struct TeamStatusResult {
  bool configured = false;
  std::string conninfo;    // as displayed (never a password)
  std::string configPath;  // where the setting lives (the repository's git config, or .memq/team)
  bool online = false;
  std::string role;
  int64_t lastSeq = 0;
  size_t queued = 0;
  std::string lastError;  // why it is offline
};

// --- stats ---
struct ScopeStats {
  ScopeKind scope = ScopeKind::kProject;
  // The store's counters as MemoryStore::stats gives them: a JSON object whose members are the store's to choose.
  nlohmann::json counters;
  std::optional<std::string> cochangeHead;  // the HEAD the co-change counts describe, in git
};
struct StatsReport {
  std::vector<ScopeStats> scopes;
};

}  // namespace memq
