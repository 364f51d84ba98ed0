// Service: memq's whole API without any transport — the thing handlers call and service tests drive directly.
// It resolves scopes (lazily opening databases through ScopeRegistry), runs each operation under its scope's lock,
// keeps per-connection state (initialize, hints), and reports every mutation to a change listener. Every method takes
// and returns the typed values of service_types.h; no JSON crosses it (errors are Status, whose data names the field).
// Its members are defined by concern: service.cc (context, initialize, tabs, scope resolution, hints),
// memory_operations.cc (memory/*), team_operations.cc (the team scope's saves, state changes and team/*), repo_review.cc (repo/*, review/*, audit/list, stats), transfer.cc (export,
// import).
// Thread-safety: thread-safe; blocking (SQLite, libgit2, embedding). Never call it on an I/O thread, except
// scopesOpenFor, and a quick request it found every scope of open for (Server::answeredInline).
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

#include "daemon/service/service_types.h"
#include "daemon/service/team_scopes.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();

  // Builds the effective context of one request from its connection and its common params.
  Result<CallContext> context(ClientState& client, const CommonParams& params);

  Result<InitializeResult> initialize(ClientState& client, const InitializeRequest& request);
  void forget(ClientState& client);  // the connection closed

  Result<SaveResult> save(const CallContext& ctx, const SaveInput& input);
  // GetResult::warnings says why the answer may be incomplete (MemoryStore::unappliedSavesWarning of a scope read).
  // An id no scope holds, while a scope read leaves out acknowledged saves, is a StorageError saying so rather than
  // NotFound.
  Result<GetResult> get(const CallContext& ctx, const MemoryRef& request);
  Result<UpdateOutcome> update(const CallContext& ctx, const UpdateRequest& request);
  // ListResult::warnings says why the answer may be incomplete (MemoryStore::unappliedSavesWarning).
  Result<ListResult> list(const CallContext& ctx, const ListFilter& filter);
  Result<RecallHits> search(const CallContext& ctx, const SearchRequest& request);
  Result<RecallHits> recall(const CallContext& ctx, const RecallParams& request);
  Result<Memory> hide(const CallContext& ctx, const StateChangeRequest& request);
  Result<Memory> restore(const CallContext& ctx, const StateChangeRequest& request);
  Result<Memory> pin(const CallContext& ctx, const MemoryRef& request);
  Result<Memory> unpin(const CallContext& ctx, const MemoryRef& request);
  Result<SupersedeResult> supersede(const CallContext& ctx, const SupersedeRequest& request);
  Result<Memory> reject(const CallContext& ctx, const StateChangeRequest& request);
  Result<Memory> unreject(const CallContext& ctx, const MemoryRef& request);
  Result<PurgeResult> purge(const CallContext& ctx, const PurgeRequest& request);
  Result<Memory> attach(const CallContext& ctx, const FilesChange& request);
  Result<Memory> detach(const CallContext& ctx, const FilesChange& request);

  Result<HintResult> hintsForTool(const CallContext& ctx, const HintsRequest& request);
  Result<HintTurn> hintsTurn(const CallContext& ctx, const NoParams& request);

  Result<CochangeResult> repoCochange(const CallContext& ctx, const CochangeRequest& request);
  Result<BlastRadius> repoBlastRadius(const CallContext& ctx, const FileRequest& request);
  Result<RepoRefreshResult> repoRefresh(const CallContext& ctx, const NoParams& request);

  Result<ClusterReport> reviewClusters(const CallContext& ctx, const ClusterRequest& request);
  Result<StaleReport> reviewStale(const CallContext& ctx, const ReviewRequest& request);
  Result<DeadReport> reviewDead(const CallContext& ctx, const ReviewRequest& request);

  Result<AuditPage> auditList(const CallContext& ctx, const AuditFilter& filter);
  // One page of the export (daemon/service/jsonl_transfer.h has the lines): `cursor` "" starts at the first page,
  // a next_cursor continues; nullopt asks for everything in one reply (InvalidParams past kExportPageBytes).
  Result<ExportPage> exportJsonl(const CallContext& ctx, const ExportRequest& request);
  // Reads and validates `jsonl` and stages it on the request's connection; unless `more`, then writes everything
  // the connection staged in one transaction (MemoryStore::importBatch). Any error drops what was staged: nothing
  // is written until the last request, and a connection that closes first leaves nothing behind.
  Result<ImportCounts> importJsonl(const CallContext& ctx, const ImportRequest& request);
  Result<StatsReport> stats(const CallContext& ctx, const NoParams& request);

  // The project's team scope (team_operations.cc, docs/team.md): store its conninfo and open it; what it is doing;
  // forget it.
  Result<TeamStatusResult> teamConnect(const CallContext& ctx, const TeamConnectRequest& request);
  Result<TeamStatusResult> teamStatus(const CallContext& ctx, const NoParams& request);
  Result<TeamStatusResult> teamDisconnect(const CallContext& ctx, const NoParams& request);

  // Every change is reported to `listener`, from whichever thread made it, one call at a time. Replacing it (nullptr
  // to stop) waits for a call in progress. The listener must only hand the event on: it must not call the Service.
  void setChangeListener(std::function<void(const ChangeEvent&)> listener);
  ScopeRegistry& scopes() { return registry_; }

  // The scopes a method's request resolves: none (hints/turn, daemon/status), its project's location only
  // (initialize), the scopes it reads (memory/get, memory/recall, memory/search, hints/for_tool) or the one it
  // writes (memory/save).
  enum class ScopeUse { kNone, kLocation, kRead, kWrite };
  // Whether a request with `params` on `client`, resolving its scopes as `use` says, would find every one of them
  // open and its project located already, so that running it opens no database and locates no project (both can
  // take seconds). Cheap: it takes the connection's and the registry's locks for a moment, and never blocks on an
  // open in progress. False when unsure: a request the context refuses, one naming the team scope (`scope` team).
  // The team scope an `all` read of a project adds must have its replica open too (TeamScopes::isOpenFor).
  // The server answers a request on its I/O thread only when this holds.
  bool scopesOpenFor(ClientState& client, const CommonParams& params, ScopeUse use);
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
  // With `leftOut`, an `all` read of a project leaves out a global scope that cannot be opened (a damaged
  // global.db, one of a newer memq) and keeps its error in `leftOut`, instead of failing: the project's memories are
  // still answered, with a warning (LeftOutScope::warning). Reads that must be whole (an export, the review
  // methods) pass none and fail.
  struct LeftOutScope {
    std::optional<Status> global;  // why the global scope was left out; nullopt when it was not
    std::string warning() const { return "the global scope was left out of this answer: " + global->message(); }
  };
  Result<std::vector<std::shared_ptr<Scope>>> readScopes(const CallContext& ctx, LeftOutScope* leftOut = nullptr);
  Result<std::shared_ptr<Scope>> writeScope(const CallContext& ctx);
  Result<std::shared_ptr<Scope>> projectScope(const CallContext& ctx);
  // The scopes an id may name, in lookup order: those the request may read (readScopes, `leftOut` as there);
  // ScopeUnavailable under read_scope none.
  Result<std::vector<std::shared_ptr<Scope>>> idScopes(const CallContext& ctx, LeftOutScope* leftOut = nullptr);
  // Finds the memory an id or prefix names, across the scopes the request may touch.
  Result<Resolved> resolve(const CallContext& ctx, const std::string& idOrPrefix, const std::string& field = "id");
  std::vector<FileRef> withBlobIds(Scope& scope, const std::vector<std::string>& paths);
  // `paths` through normalizeFiles against the scope's root; a memory's files by default, a query's up to
  // kMaxQueryFiles.
  Result<std::vector<std::string>> normalizePaths(const CallContext& ctx, Scope* scope,
                                                  const std::vector<std::string>& paths, const std::string& field,
                                                  size_t maxFiles = kMaxFiles);
  // The paths of a query's anchored files (recall, hints) normalised like its `files`, which were checked first;
  // each set of lines merged into one per path.
  Status normalizeQueryLines(const CallContext& ctx, Scope* scope, std::vector<PathLines>& lines);
  // The checks a query's files and lines get, for a request that then reads nothing (read_scope none).
  Status checkQueryFiles(const CallContext& ctx, const std::vector<std::string>& files, std::vector<PathLines> lines);
  // The project scope and one `file` normalised against its root (the repo/* methods that name a file).
  struct ProjectFile {
    std::shared_ptr<Scope> scope;
    std::string path;
  };
  Result<ProjectFile> projectFile(const CallContext& ctx, const std::string& file);
  void emit(const Scope& scope, const std::string& id, const std::string& action);
  void emitEvent(const ChangeEvent& event);
  // The team scope the request's project is configured for (team_operations.cc); nullptr when it has none, or, with
  // `required`, ScopeUnavailable naming `scope`.
  Result<std::shared_ptr<Scope>> teamScope(const CallContext& ctx, bool required);
  // memory/save into the team scope: checked as a local save, sent to the server (its answer applied to the
  // replica first), or queued in the outbox while the server cannot be reached.
  Result<SaveResult> teamSave(const CallContext& ctx, Scope& scope, SaveInput input);
  // A state change of a team memory through the server (`action` as memq_set_state names it), then read back
  // from the replica.
  Result<Memory> teamChange(const CallContext& ctx, Scope& scope, const std::string& id, const std::string& action,
                            const std::optional<std::string>& reason, const std::optional<std::string>& by = {});
  static Status teamUnsupported(const std::string& method);
  // What to do about a save that stored nothing (exists_hidden, exists_superseded, rejected), for a local or a team
  // save alike (memory_operations.cc); nullopt when it stored something, or was queued (teamSave's own hint).
  static std::optional<std::string> saveHint(const SaveResult& result);
  // What a read answered from a team replica says while its server cannot be reached.
  static std::string teamOfflineWarning(Scope& scope);
  Result<TeamStatusResult> teamStatusOf(const ProjectLocation& location);
  // Refuses a write on a connection or request whose write_scope is none. `namingScope`: the error's data names the
  // `scope` field (the methods that write the scope the request chose, rather than one an id resolved to).
  static Status requireWrites(const CallContext& ctx, bool namingScope = false);
  SecretScrubber scrubber() const { return SecretScrubber(options_.secretsMode); }
  // What every save does to its input first, whatever its scope: the source defaults to the connection's, and the
  // text fields are scrubbed of secrets by `scrub` (which keeps the redactions for the reply; an error when the mode
  // refuses them).
  static Status prepareSaveInput(const CallContext& ctx, SaveInput& input, SecretScrubber& scrub);
  // A free-text field that is not a memory's text (a state change's reason, a client's name): scrubbed like
  // summary and details, its findings not reported.
  Status scrubFreeText(std::optional<std::string>& text, const std::string& field) const;
  // How a state change reaches a team memory: through the server, with this reason (team_operations.cc).
  struct TeamOp {
    std::optional<std::string> reason;
  };
  // `team`: the change a team memory takes instead of `op`; null refuses the method on the team scope.
  Result<Memory> mutate(const CallContext& ctx, const std::string& id, const std::string& action,
                        const std::function<Result<Memory>(MemoryStore&, const std::string&)>& op,
                        const TeamOp* team = nullptr);

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
  // Declared last: destroyed first, so no sync thread still calls the change listener or a replica's store.
  std::unique_ptr<TeamScopes> teams_;
};

}  // namespace memq
