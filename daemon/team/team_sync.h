// TeamSync: one connected team scope as memqd runs it (docs/team.md, "Sync"): the server connections, the sync
// thread that keeps the local replica up to date, and the outbox of saves made while the server was unreachable.
//  - The sync thread holds a TeamClient of its own that LISTENs on memq_team. Connected, it first sends the outbox
//    (in order; a record is removed once the server answered it) — after checking that the server's journal still
//    continues the replica (else the replica starts over) — then applies TeamClient::eventsSince(last seq) to
//    the replica page by page, then waits for a notification (or a short timeout) and catches up again. A lost
//    connection marks the scope offline and reconnects with a capped backoff (0.1 s doubling to 5 s); each attempt
//    is bounded by connect_timeout (added to the conninfo when it names none).
//  - Requests (saves, state changes) use a second TeamClient, guarded by a mutex, connected on first use; after the
//    server answered they catch the replica up through it, so a request reads its own write. That connection checks
//    the server's journal once, as the sync thread's does, before it applies anything: after an outage the sync
//    thread may still be sleeping out its backoff when a request already reaches the server (a request that does
//    wakes it).
// The replica itself is the caller's (a MemoryStore under its scope's lock): TeamSync reaches it only through
// TeamReplicaHooks, so this folder needs neither the scope registry nor the service.
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store/store_types.h"
#include "daemon/team/team_client.h"
#include "daemon/team/team_outbox.h"
#include "daemon/util/thread_annotations.h"

namespace memq {

struct TeamReplicaHooks {
  // The last journal seq the replica holds.
  std::function<Result<int64_t>()> lastSeq;
  // That seq with its row's server time (MemoryStore::replicaMark).
  std::function<Result<ReplicaMark>()> mark;
  // Empties the replica (MemoryStore::resetReplica), for a server whose journal does not continue it.
  std::function<Status()> reset;
  // Writes the changes to the replica (under its scope's lock); returns those applied (seq above the replica's).
  std::function<Result<std::vector<ReplicatedChange>>(std::vector<ReplicatedChange>)> apply;
  // Told of the changes applied, after the replica's lock is released (memory/changed for subscribers).
  std::function<void(const std::vector<ReplicatedChange>&)> changed;
};

struct TeamSyncOptions {
  std::string conninfo;    // as configured (no password)
  std::string outboxPath;  // team/<key>.outbox in memqd's data dir
  int connectTimeoutSeconds = 2;
  std::chrono::milliseconds minBackoff{100};
  std::chrono::milliseconds maxBackoff{5000};
};

// What `memq team status` shows.
struct TeamSyncStatus {
  bool online = false;
  std::string role;       // the role the server authenticated (empty before the first connection)
  int64_t lastSeq = 0;    // the replica's last applied journal seq
  size_t queued = 0;      // saves waiting in the outbox
  std::string lastError;  // why the scope is offline (empty when online)
};

class TeamSync {
 public:
  TeamSync(TeamSyncOptions options, TeamReplicaHooks hooks);
  ~TeamSync();  // stops the sync thread
  TeamSync(const TeamSync&) = delete;
  TeamSync& operator=(const TeamSync&) = delete;

  void start();
  const std::string& displayConninfo() const { return display_; }

  // A save through the server, the replica then caught up. ScopeUnavailable when the server cannot be reached (the
  // caller queues it: queue()); any other error is the server's answer (Forbidden, InvalidParams, ...), a login it
  // refused included (Forbidden, reason login_refused).
  Result<TeamSaveResult> save(const SaveInput& input, const std::string& projectRoot);
  // A state change through the server (TeamClient::setState), the replica then caught up.
  Status setState(const std::string& id, const std::string& action, const std::optional<std::string>& reason,
                  const std::optional<std::string>& supersededBy = std::nullopt);
  // A purge through the server (TeamClient::purge), the replica then caught up.
  Status purge(const std::string& id);
  // Appends a save to the outbox (fsynced) and wakes the sync thread.
  Status queue(const OutboxRecord& record);

  bool online() const { return online_.load(); }
  TeamSyncStatus status();

 private:
  void run();
  // Connected: drain the outbox, catch up, then wait for notifications until the connection fails or stop.
  Status serve(TeamClient& client);
  // The server's journal must still hold the row the replica applied last (same seq, same time); otherwise (a
  // restored or re-created database) the replica is emptied, to catch up from the start. Each connection checks
  // once, before it applies any row.
  Status checkJournalContinues(TeamClient& client);
  Status drainOutbox(TeamClient& client);
  // Applies the journal rows after the replica's seq, page by page (each under catchUpMutex_), up to `maxPages`
  // pages (0: every row); returns at once once the sync is stopping.
  Status catchUp(TeamClient& client, int maxPages = 0);
  // A request's catch-up (a few pages) through the request client, its journal checked first if not yet.
  Status catchUpForRequest(TeamClient& client) REQUIRES(requestMutex_);
  // A change through the request client (`call`), then the replica caught up, so the caller reads its own write.
  Status change(const std::string& what, const std::function<Status(TeamClient&)>& call) EXCLUDES(requestMutex_);
  // The request client, connected if need be (nullptr, with the status, when the server cannot be reached or
  // refuses the login).
  Result<TeamClient*> requestClient() REQUIRES(requestMutex_);
  void dropRequestClient() REQUIRES(requestMutex_);
  // What a request is answered when the request client cannot connect (`st`).
  Status failedConnectAnswer(const Status& st);
  // A request reached the server: if the sync thread is sleeping out its backoff after finding it unreachable, it
  // connects now.
  void noteServerReached();
  void wakeSyncThread();
  void noteLost(const Status& st);
  bool sleepFor(std::chrono::milliseconds d);  // false when stopping

  TeamSyncOptions options_;
  std::string conninfo_;  // options_.conninfo with connect_timeout
  std::string display_;
  TeamReplicaHooks hooks_;
  TeamOutbox outbox_;
  std::atomic<bool> online_{false};
  // Whether the sync thread's last attempt ended because the server could not be reached (it then sleeps out its
  // backoff); taken by the first request that reaches the server meanwhile (noteServerReached), which wakes it.
  std::atomic<bool> syncUnreachable_{false};
  std::atomic<bool> stop_{false};
  std::mutex wakeMutex_;
  std::condition_variable wake_;
  bool wakeRequested_ = false;  // guarded by wakeMutex_
  std::mutex infoMutex_;
  std::string role_;       // guarded by infoMutex_
  std::string lastError_;  // guarded by infoMutex_
  Mutex requestMutex_;
  std::unique_ptr<TeamClient> requestClient_ GUARDED_BY(requestMutex_);
  // Whether requestClient_'s connection found the server's journal continuing the replica's (a new connection may
  // reach another server: one restored from a backup during the outage).
  bool requestJournalChecked_ GUARDED_BY(requestMutex_) = false;
  std::chrono::steady_clock::time_point requestRetryAt_ GUARDED_BY(requestMutex_){};
  // What requests are answered until requestRetryAt_: the last connect attempt's failure (a refused login stays
  // Forbidden, never "offline", which would queue a save).
  Status requestConnectFailure_ GUARDED_BY(requestMutex_);
  // One page at a time: a page is fetched and applied before another is asked for; a journal check (and the reset it
  // may make) is not interleaved with a page of the other connection.
  std::mutex catchUpMutex_;
  std::thread thread_;
};

// The replica's form of a journal row (ReplicatedChange), from the row and the memory as the server holds it.
std::optional<ReplicatedChange> replicatedChange(const TeamEvent& event);

}  // namespace memq
