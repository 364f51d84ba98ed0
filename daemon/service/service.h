// Service: memq's whole API without any transport — the thing handlers call and service tests drive directly.
// It resolves scopes (lazily opening databases through ScopeRegistry), runs each operation under its scope's lock,
// keeps per-connection state (initialize, hints), and reports every mutation to a change listener.
// Thread-safety: thread-safe; blocking (SQLite, libgit2, embedding). Never call it on an I/O thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/embed/embedder.h"
#include "daemon/hints/hint_engine.h"
#include "daemon/recall/recall_engine.h"
#include "daemon/service/client_state.h"
#include "daemon/service/scope_registry.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

// The scopes and identity one request runs with: the connection's values narrowed by the request's own
// `project_root`, `scope`, `read_scope` and `source`.
struct CallContext {
  ClientState* client = nullptr;
  std::string projectRoot;
  ReadScope readScope = ReadScope::kAll;
  WriteScope writeScope = WriteScope::kProject;
  std::optional<std::string> scopeOverride;  // "project" | "global": the request's `scope`
  bool writeScopeNarrowed = false;           // the request itself passed `write_scope`
  Actor actor;
};

// How long the hint state of an initialize `tab` outlives its last connection, and how many idle tabs are kept.
inline constexpr std::chrono::hours kTabRetention{12};
inline constexpr size_t kMaxRetainedTabs = 4096;

struct ChangeEvent {
  std::string scope;        // "project" | "global"
  std::string projectRoot;  // for project scopes
  std::string id;
  std::string action;
};

struct ServiceOptions {
  std::string dataDir;
  const Embedder* embedder = nullptr;
  RepoSignalsFactory repoFactory;
  std::string secretsMode = "redact";  // redact | refuse
  // StoreOptions::saveBatch of every scope: saves that follow each other share a transaction (and the save journal
  // keeps each acknowledged one). The owner calls commitPendingSaves() soon after a save that leaves one open.
  // 256, not 64: the background applier writes the FTS5 lanes once per batch, and a stream of saves through the
  // socket ran 1.2 times faster (docs/performance.md, "Saves in the background").
  int saveBatch = 256;
  // The JSONL that imports in parts may hold in memory over all connections together until their last request
  // (memqd --max-staged-import-bytes): one import may hold kMaxImportBytes, but forty connections must not hold forty
  // times that. An import part past it is refused with Busy, and that import dropped.
  size_t maxStagedImportBytes = size_t{512} << 20;
};

struct UpdateRequest {
  std::optional<std::string> summary;
  std::optional<std::string> details;
  std::optional<std::optional<std::string>> category;
  std::optional<std::vector<std::string>> topics;
  std::optional<std::vector<std::string>> files;
  std::optional<bool> pinned;
};

// memory/update's result: the memory as it now is, and the credentials redacted from the new text ({kind, field}
// per finding, as memory/save reports them).
struct UpdateOutcome {
  Memory memory;
  nlohmann::json redactions = nlohmann::json::array();
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
// The JSONL one import may stage across its requests before it is committed (memqd holds it in memory until then).
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

class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();

  // Builds the effective context of one request from its connection and its common params.
  Result<CallContext> context(ClientState& client, const nlohmann::json& params);

  Result<nlohmann::json> initialize(ClientState& client, const nlohmann::json& params);
  void forget(ClientState& client);  // the connection closed

  Result<nlohmann::json> save(const CallContext& ctx, const SaveInput& input);
  // `warnings` (when given) receives why the answer may be incomplete (MemoryStore::unappliedSavesWarning of a
  // scope read). An id no scope holds, while a scope read leaves out acknowledged saves, is a StorageError saying so
  // rather than NotFound.
  Result<Memory> get(const CallContext& ctx, const std::string& id, std::vector<std::string>* warnings = nullptr);
  Result<UpdateOutcome> update(const CallContext& ctx, const std::string& id, const UpdateRequest& request);
  // ListResult::warnings says why the answer may be incomplete (MemoryStore::unappliedSavesWarning).
  Result<ListResult> list(const CallContext& ctx, const ListFilter& filter);
  Result<std::vector<RecallHit>> search(const CallContext& ctx, RecallRequest request);
  Result<std::vector<RecallHit>> recall(const CallContext& ctx, RecallRequest request, bool markUsed);
  Result<Memory> hide(const CallContext& ctx, const std::string& id, const std::optional<std::string>& reason);
  Result<Memory> restore(const CallContext& ctx, const std::string& id, const std::optional<std::string>& reason);
  Result<Memory> pin(const CallContext& ctx, const std::string& id, bool pinned);
  Result<std::pair<Memory, Memory>> supersede(const CallContext& ctx, const std::string& id, const std::string& by);
  Result<Memory> reject(const CallContext& ctx, const std::string& id, const std::string& reason);
  Result<Memory> unreject(const CallContext& ctx, const std::string& id);
  Status purge(const CallContext& ctx, const std::string& id, bool confirm);
  Result<Memory> attach(const CallContext& ctx, const std::string& id, const std::vector<std::string>& files);
  Result<Memory> detach(const CallContext& ctx, const std::string& id, const std::vector<std::string>& files);

  Result<HintResult> hintsForTool(const CallContext& ctx, const std::string& tool,
                                  const std::vector<std::string>& files, const std::string& query);
  Result<int64_t> hintsTurn(const CallContext& ctx);

  Result<nlohmann::json> repoCochange(const CallContext& ctx, const std::string& file, size_t limit);
  Result<nlohmann::json> repoBlastRadius(const CallContext& ctx, const std::string& file);
  Result<nlohmann::json> repoRefresh(const CallContext& ctx);

  Result<nlohmann::json> reviewClusters(const CallContext& ctx, double minWeight);
  Result<nlohmann::json> reviewStale(const CallContext& ctx, size_t limit);
  Result<nlohmann::json> reviewDead(const CallContext& ctx, size_t limit);

  Result<nlohmann::json> auditList(const CallContext& ctx, const AuditFilter& filter);
  // One page of the export (daemon/service/jsonl_transfer.h has the lines): `cursor` "" starts at the first page,
  // a next_cursor continues; nullopt asks for everything in one reply (InvalidParams past kExportPageBytes).
  Result<ExportPage> exportJsonl(const CallContext& ctx, std::optional<MemoryState> state, bool allStates,
                                 const std::optional<std::string>& cursor);
  // Reads and validates `jsonl` and stages it on the request's connection; unless `more`, then writes everything
  // the connection staged in one transaction (MemoryStore::importBatch). Any error drops what was staged: nothing
  // is written until the last request, and a connection that closes first leaves nothing behind.
  Result<ImportCounts> importJsonl(const CallContext& ctx, const std::string& jsonl, bool more);
  Result<nlohmann::json> stats(const CallContext& ctx);

  void setChangeListener(std::function<void(const ChangeEvent&)> listener);
  ScopeRegistry& scopes() { return registry_; }
  // True when a save since the last commitPendingSaves() left saves in an open batch.
  bool hasPendingSaves() const { return savesPending_.load(); }
  // Commits every open batch of saves whose last save is `idle` old (ScopeRegistry::commitPendingSaves); the rest
  // keep hasPendingSaves() true, for the caller to come back.
  void commitPendingSaves(std::chrono::milliseconds idle);
  const Embedder& embedder() const { return *options_.embedder; }

 private:
  struct Resolved {
    std::shared_ptr<Scope> scope;
    std::string id;
  };
  // Readable scopes in order (project first). A project Scope carries the database of the repository and the
  // signals of the work tree `project_root` names.
  Result<std::vector<std::shared_ptr<Scope>>> readScopes(const CallContext& ctx);
  Result<std::shared_ptr<Scope>> writeScope(const CallContext& ctx);
  Result<std::shared_ptr<Scope>> projectScope(const CallContext& ctx);
  // The scopes an id may name, in lookup order: the request's `scope`, else project (when there is one), global.
  Result<std::vector<std::shared_ptr<Scope>>> idScopes(const CallContext& ctx);
  // Finds the memory an id or prefix names, across the scopes the request may touch.
  Result<Resolved> resolve(const CallContext& ctx, const std::string& idOrPrefix, const std::string& field = "id");
  std::vector<FileRef> withBlobIds(Scope& scope, const std::vector<std::string>& paths);
  // `paths` through normalizeFiles against the scope's root; a memory's files by default, a query's up to
  // kMaxQueryFiles.
  Result<std::vector<std::string>> normalizePaths(const CallContext& ctx, Scope* scope,
                                                  const std::vector<std::string>& paths, const std::string& field,
                                                  size_t maxFiles = kMaxFiles);
  void emit(const Scope& scope, const std::string& id, const std::string& action);
  Result<Memory> mutate(const CallContext& ctx, const std::string& id, const std::string& action,
                        const std::function<Result<Memory>(MemoryStore&, const std::string&)>& op);

  ServiceOptions options_;
  ScopeRegistry registry_;
  std::atomic<bool> savesPending_{false};
  // The JSONL every import in parts holds until its last request, over all connections (PendingImport counts its own
  // bytes in it and gives them back when it is dropped or written). Shared: a connection may outlive the Service.
  std::shared_ptr<std::atomic<size_t>> stagedImportBytes_ = std::make_shared<std::atomic<size_t>>(0);
  Mutex listenerMutex_;
  std::function<void(const ChangeEvent&)> listener_ GUARDED_BY(listenerMutex_);
  // The hint state of a connection (the tab's, when it named one), safe to use after the connection's mutex is
  // released.
  static std::shared_ptr<TabHints> hintsOf(ClientState& client);
  static void markActed(ClientState* client);
  // The retained hint state of `tab`, created when unknown; `created` says which. Prunes idle tabs.
  std::shared_ptr<TabHints> attachTab(const std::string& tab, bool& created);

  Mutex clientsMutex_;
  std::map<std::string, ClientState*> clients_ GUARDED_BY(clientsMutex_);  // token → live connection
  struct RetainedTab {
    std::shared_ptr<TabHints> hints;
    std::chrono::steady_clock::time_point lastSeen;
  };
  Mutex tabsMutex_;
  std::unordered_map<std::string, RetainedTab> tabs_ GUARDED_BY(tabsMutex_);  // `tab` of initialize → its hint state
};

}  // namespace memq
