// The sync thread, the request connection and the outbox of one team scope; see team_sync.h.
#include "daemon/team/team_sync.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/team/team_config.h"

namespace memq {

namespace {

// Journal rows fetched per query while catching up.
constexpr int kPageRows = 500;
// A request catches the replica up by at most this many pages (its own write is in them unless the replica is far
// behind, as in a first sync, which the sync thread finishes).
constexpr int kRequestPages = 4;
// How long the sync thread waits for a notification before it looks at the outbox and the journal anyway (a
// notification lost with a connection that broke is made good by this, and the stop flag is seen as often).
constexpr std::chrono::milliseconds kNotifyWait{250};
// After the request connection failed to connect, requests within this long do not try again (the sync thread
// keeps trying meanwhile): an offline server costs a queued save no connect attempt each.
constexpr std::chrono::milliseconds kRequestRetry{500};

bool isConnectionError(const Status& st) { return st.code() == ErrorCode::kScopeUnavailable; }

FileRef fileRefOf(const nlohmann::json& f) {
  if (f.is_string()) return FileRef{f.get<std::string>(), std::nullopt, std::nullopt};
  FileRef ref{f.value("path", ""), std::nullopt, std::nullopt};
  if (f.contains("blob") && f["blob"].is_string() && f.contains("lines") && f["lines"].is_array()) {
    FileAnchor anchor;
    anchor.blob = f["blob"].get<std::string>();
    for (const auto& l : f["lines"]) {
      if (l.is_array() && l.size() == 2) anchor.lines.push_back({l[0].get<uint32_t>(), l[1].get<uint32_t>()});
    }
    ref.blobId = anchor.blob;
    if (!anchor.lines.empty()) ref.anchor = std::move(anchor);
  }
  return ref;
}

}  // namespace

std::optional<ReplicatedChange> replicatedChange(const TeamEvent& event) {
  if (event.action == "purge") {
    // The row is gone on the server; the replica deletes its copy (ReplicatedChange::purged).
    ReplicatedChange c;
    c.seq = event.seq;
    c.at = event.at;
    c.actor = event.actor;
    c.action = event.action;
    c.purged = true;
    c.memory.id = event.memoryId;
    if (event.tombstone) {
      // The tombstone the server kept, in the memory's fields as a rejected row carries it (MemoryStore::
      // purgeReplicatedRow writes it; source is the role that rejected it): a replica that never held the row gets
      // it here, one that did has it already.
      c.memory.state = MemoryState::kRejected;
      c.memory.contentHash = event.tombstone->contentHash;
      c.memory.stateReason = event.tombstone->reason;
      c.memory.source = event.tombstone->rejectedBy;
      c.memory.updatedAt = event.tombstone->rejectedAt;
    }
    return c;
  }
  if (!event.memory) return std::nullopt;  // a journal row whose memory is gone (purged later): nothing to hold
  const TeamMemory& t = *event.memory;
  auto state = parseState(t.state);
  if (!state) return std::nullopt;
  ReplicatedChange c;
  c.seq = event.seq;
  c.at = event.at;
  c.actor = event.actor;
  c.action = event.action;
  Memory& m = c.memory;
  m.id = t.id;
  m.summary = t.summary;
  m.details = t.details;
  m.category = t.category;
  if (t.topics.is_array()) {
    for (const auto& topic : t.topics) {
      if (topic.is_string()) m.topics.push_back(topic.get<std::string>());
    }
  }
  if (t.files.is_array()) {
    for (const auto& f : t.files) m.files.push_back(fileRefOf(f));
  }
  m.source = "user";  // the server records the role, not the source; a teammate's memory is not this agent's
  m.createdAt = t.createdAt;
  m.updatedAt = t.updatedAt;
  m.lastUsedAt = t.createdAt;
  m.state = *state;
  m.supersededBy = t.supersededBy;
  m.stateReason = t.stateReason;
  m.contentHash = t.contentHash;
  return c;
}

TeamSync::TeamSync(TeamSyncOptions options, TeamReplicaHooks hooks)
    : options_(std::move(options)),
      conninfo_(withTimeouts(options_.conninfo, options_.connectTimeoutSeconds)),
      display_(conninfoWithoutPassword(options_.conninfo)),
      hooks_(std::move(hooks)),
      outbox_(options_.outboxPath) {}

TeamSync::~TeamSync() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    wakeRequested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TeamSync::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

bool TeamSync::sleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(wakeMutex_);
  wake_.wait_for(lock, d, [&] { return wakeRequested_ || stop_.load(); });
  wakeRequested_ = false;
  return !stop_.load();
}

void TeamSync::noteLost(const Status& st) {
  const bool was = online_.exchange(false);
  {
    std::lock_guard<std::mutex> lock(infoMutex_);
    lastError_ = st.message();
  }
  if (was) spdlog::warn("team scope {} is offline: {}", display_, st.message());
}

void TeamSync::run() {
  auto backoff = options_.minBackoff;
  while (!stop_.load()) {
    auto client = TeamClient::connect(conninfo_);
    if (client) syncUnreachable_ = false;
    Status st = client ? serve(**client) : client.status();
    if (stop_.load()) break;
    // Back to the minimum after a connection that came online; doubled up to the cap by each attempt that did
    // not (a server that refuses, or a database without the schema, is not asked ten times a second).
    backoff = online_.load() ? options_.minBackoff : std::min(backoff * 2, options_.maxBackoff);
    // Before noteLost, so that a request that sees the scope offline also sees this, and wakes the thread when it
    // reaches the server (noteServerReached). Set only for a server that could not be reached: one that refused the
    // login, or failed the outbox, keeps its backoff whatever requests do.
    syncUnreachable_ = isConnectionError(st);
    noteLost(st);
    if (st.code() != ErrorCode::kScopeUnavailable) {
      spdlog::error("team scope {}: {}", display_, st.message());
    }
    if (!sleepFor(backoff)) break;
  }
}

Status TeamSync::serve(TeamClient& client) {
  MEMQ_RETURN_IF_ERROR(client.listen());
  auto role = client.role();
  if (!role) return role.status();
  {
    std::lock_guard<std::mutex> lock(infoMutex_);
    role_ = *role;
    lastError_.clear();
  }
  MEMQ_RETURN_IF_ERROR(checkJournalContinues(client));
  MEMQ_RETURN_IF_ERROR(drainOutbox(client));
  MEMQ_RETURN_IF_ERROR(catchUp(client));
  if (!online_.exchange(true)) spdlog::info("team scope {} is online as role {}", display_, *role);
  while (!stop_.load()) {
    auto n = client.waitForNotification(kNotifyWait);
    if (!n) return n.status();
    MEMQ_RETURN_IF_ERROR(drainOutbox(client));
    MEMQ_RETURN_IF_ERROR(catchUp(client));
  }
  return Status::ok();
}

Status TeamSync::checkJournalContinues(TeamClient& client) {
  // Under the catch-up lock throughout: the mark compared is not one a page of the other connection moves meanwhile,
  // and a reset does not fall between that connection's reading of the replica's seq and its applying a page.
  std::lock_guard<std::mutex> lock(catchUpMutex_);
  auto mark = hooks_.mark();
  if (!mark) return mark.status();
  if (mark->seq == 0 || mark->at.empty()) return Status::ok();  // nothing applied yet, or not recorded: unchecked
  auto at = client.journalRowAt(mark->seq);
  if (!at) return at.status();
  if (*at == mark->at) return Status::ok();
  // A server restored from an older backup, or another database under the same name: rows with seqs the replica
  // has passed would never be applied. The server is the truth; the replica starts over from its journal.
  spdlog::warn("team scope {}: the server's journal no longer holds row {} as applied here ({}; here {}): the "
               "replica is rebuilt from the server's journal",
               display_, mark->seq, at->empty() ? "no such row" : "committed at " + *at, mark->at);
  return hooks_.reset();
}

Status TeamSync::drainOutbox(TeamClient& client) {
  auto records = outbox_.load();
  if (!records) return records.status();
  for (const auto& r : *records) {
    auto saved = client.save(r.input, r.projectRoot);
    if (!saved && isConnectionError(saved.status())) return saved.status();  // kept: sent on the next connection
    const ErrorCode code = saved ? ErrorCode::kOk : saved.status().code();
    const bool refusedForGood =
        code == ErrorCode::kInvalidParams || code == ErrorCode::kConflict || code == ErrorCode::kForbidden;
    if (!saved && !refusedForGood) {
      // Not an answer about this save (a schema not set up yet, a standby after a failover, a statement timeout,
      // a full disk): it stays in the outbox, and the connection is given up and tried again after the back-off.
      return Status(saved.status().code(), "a queued save stays in the outbox: " + saved.status().message(),
                    saved.status().data());
    }
    if (!saved) {
      // The server refused it (a role that lost its write privilege, input it does not take): sending it again
      // would be refused again, so it leaves the outbox, logged.
      spdlog::error("team scope {}: the server refused a queued save ({}); dropped it from the outbox",
                    display_, saved.status().message());
    } else {
      spdlog::info("team scope {}: sent a queued save: {} {}", display_, toString(saved->status), saved->id);
    }
    MEMQ_RETURN_IF_ERROR(outbox_.remove(r));
  }
  return Status::ok();
}

Status TeamSync::catchUp(TeamClient& client, int maxPages) {
  for (int page = 0; maxPages == 0 || page < maxPages; ++page) {
    if (stop_.load()) return Status::ok();
    // One page at a time under the lock: a request's catch-up waits for at most the page being applied, not for a
    // whole first sync of a large team.
    std::lock_guard<std::mutex> lock(catchUpMutex_);
    auto seq = hooks_.lastSeq();
    if (!seq) return seq.status();
    auto events = client.eventsSince(*seq, kPageRows);
    if (!events) return events.status();
    if (events->empty()) return Status::ok();
    std::vector<ReplicatedChange> changes;
    int64_t last = *seq;
    std::string lastAt;
    for (const auto& e : *events) {
      if (e.seq > last) {
        last = e.seq;
        lastAt = e.at;
      }
      if (auto c = replicatedChange(e)) changes.push_back(std::move(*c));
    }
    if (changes.empty() || changes.back().seq != last) {
      // A page's last row without a memory still moves the replica's seq on: carry it as a no-row marker.
      ReplicatedChange marker;
      marker.seq = last;
      marker.at = lastAt;
      marker.action = "marker";
      changes.push_back(std::move(marker));
    }
    auto applied = hooks_.apply(std::move(changes));
    if (!applied) return applied.status();
    if (!applied->empty() && hooks_.changed) hooks_.changed(*applied);
    if (static_cast<int>(events->size()) < kPageRows) return Status::ok();
  }
  return Status::ok();  // the rest is the sync thread's
}

Status TeamSync::catchUpForRequest(TeamClient& client) {
  // Rows are applied through a connection only once it found the server's journal continuing the replica's
  // (checkJournalContinues): rows from a server restored from an older backup would move the replica's mark past
  // rows it then never gets. The request connection checks for itself, once, rather than wait for the sync thread:
  // after an outage that one may be sleeping out its backoff for seconds while requests already reach the server,
  // and the reply's own write must be in the replica when the reply goes (docs/team.md: the writer reads its own
  // write at once).
  if (!requestJournalChecked_) {
    MEMQ_RETURN_IF_ERROR(checkJournalContinues(client));
    requestJournalChecked_ = true;
  }
  return catchUp(client, kRequestPages);
}

void TeamSync::dropRequestClient() {
  requestClient_.reset();
  requestJournalChecked_ = false;
}

Status TeamSync::failedConnectAnswer(const Status& st) {
  // A server that cannot be reached while the scope is offline: "offline", as docs/team.md has it, for the first
  // request of an outage as for the later ones (answered within kRequestRetry without an attempt). Anything else
  // (a refused login, a server too old) is the server's answer, passed on.
  if (!isConnectionError(st) || online_.load()) return st;
  return Status(ErrorCode::kScopeUnavailable, st.message(), nlohmann::json{{"scope", "team"}, {"reason", "offline"}});
}

void TeamSync::noteServerReached() {
  // Taken, not read: one wake per attempt the sync thread found the server unreachable by, however many requests
  // follow (a server that fails only the sync thread's connection is not asked again per request).
  if (!online_.load() && syncUnreachable_.exchange(false)) wakeSyncThread();
}

void TeamSync::wakeSyncThread() {
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    wakeRequested_ = true;  // a backoff sleep ends early (or the next one is skipped)
  }
  wake_.notify_all();
}

Result<TeamClient*> TeamSync::requestClient() {
  // A connection the server closed since its last use (a restart, a failover) is replaced before the request, not
  // found broken by it: the request would fail, or a save be queued, with the server up.
  if (requestClient_ && !requestClient_->stillConnected()) dropRequestClient();
  if (requestClient_) return requestClient_.get();
  const auto now = std::chrono::steady_clock::now();
  if (now < requestRetryAt_) return failedConnectAnswer(requestConnectFailure_);
  auto c = TeamClient::connect(conninfo_);
  if (!c) {
    requestRetryAt_ = now + kRequestRetry;
    requestConnectFailure_ = c.status();
    {
      std::lock_guard<std::mutex> lock(infoMutex_);
      lastError_ = c.status().message();
    }
    return failedConnectAnswer(c.status());
  }
  requestClient_ = std::move(*c);
  requestJournalChecked_ = false;
  noteServerReached();
  return requestClient_.get();
}

Result<TeamSaveResult> TeamSync::save(const SaveInput& input, const std::string& projectRoot) {
  MutexLock lock(requestMutex_);
  auto client = requestClient();
  if (!client) return client.status();
  auto out = (*client)->save(input, projectRoot);
  if (!out && isConnectionError(out.status())) dropRequestClient();
  if (!out) return out;
  noteServerReached();
  if (Status st = catchUpForRequest(**client); !st) {
    // The server has the save; the replica gets it from the sync thread once it is connected again.
    spdlog::warn("team scope {}: replica not caught up after a save: {}", display_, st.message());
    if (isConnectionError(st)) dropRequestClient();
  }
  return out;
}

Status TeamSync::change(const std::string& what, const std::function<Status(TeamClient&)>& call) {
  MutexLock lock(requestMutex_);
  auto client = requestClient();
  if (!client) return client.status();
  if (Status st = call(**client); !st) {
    if (isConnectionError(st)) dropRequestClient();
    return st;
  }
  noteServerReached();
  if (Status st = catchUpForRequest(**client); !st) {
    spdlog::warn("team scope {}: replica not caught up after {}: {}", display_, what, st.message());
    if (isConnectionError(st)) dropRequestClient();
  }
  return Status::ok();
}

Status TeamSync::setState(const std::string& id, const std::string& action, const std::optional<std::string>& reason,
                          const std::optional<std::string>& supersededBy) {
  return change(action, [&](TeamClient& client) {
    auto out = client.setState(id, action, reason, supersededBy);
    return out ? Status::ok() : out.status();
  });
}

Status TeamSync::purge(const std::string& id) {
  return change("purge", [&](TeamClient& client) {
    auto out = client.purge(id);
    return out ? Status::ok() : out.status();
  });
}

Status TeamSync::queue(const OutboxRecord& record) {
  MEMQ_RETURN_IF_ERROR(outbox_.append(record));
  wakeSyncThread();  // the server may be back
  return Status::ok();
}

TeamSyncStatus TeamSync::status() {
  TeamSyncStatus s;
  s.online = online_.load();
  {
    std::lock_guard<std::mutex> lock(infoMutex_);
    s.role = role_;
    if (!s.online) s.lastError = lastError_;
  }
  if (auto seq = hooks_.lastSeq()) s.lastSeq = *seq;
  s.queued = outbox_.size();
  return s;
}

}  // namespace memq
