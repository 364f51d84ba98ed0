// Server: memqd's runtime — the I/O thread (Asio), the worker pool that runs every blocking call, the listening
// socket, the live sessions, change notifications fan-out, and orderly shutdown (drain in-flight requests, then exit).
// Thread-safety: start/run on the main thread; requestShutdown() from any thread or a signal handler's Asio hook.
#pragma once

#include <asio.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "daemon/server/dispatcher.h"
#include "daemon/server/listener.h"
#include "daemon/server/log_format.h"
#include "daemon/service/service.h"

namespace memq {

class Session;

// Connections served at once; past it a new connection is closed as soon as it is accepted (docs/protocol.md).
inline constexpr size_t kDefaultMaxConnections = 4096;
// Reply and notification bytes queued for all connections together; past it the connection with the most unread
// bytes is closed, and the next, until the total is back under it.
inline constexpr size_t kDefaultMaxQueuedReplyBytes = size_t{64} << 20;

// How long the I/O thread stays awake after answering a request itself (ServerOptions::hotPoll).
inline constexpr std::chrono::microseconds kDefaultHotPoll{1000};

struct ServerOptions {
  std::string socketPath;
  size_t maxMessageBytes = 1u << 20;
  int idleExitSeconds = 0;   // 0 = never
  size_t workerThreads = 2;
  size_t maxQueuedJobs = 1024;  // past this, requests get Busy
  // A partial message stalled this long, or a connection silent this long since accept, is closed (Session).
  std::chrono::milliseconds partialMessageTimeout{10000};
  std::chrono::milliseconds silentConnectionTimeout{60000};
  size_t maxConnections = kDefaultMaxConnections;
  size_t maxQueuedReplyBytes = kDefaultMaxQueuedReplyBytes;
  // After answering a request other than a save on the I/O thread, poll for the next one this long before sleeping
  // (0: sleep at once). Not after a save: the save applier then needs the other core.
  std::chrono::microseconds hotPoll = kDefaultHotPoll;
};

class Server {
 public:
  Server(ServerOptions options, Service& service);
  ~Server();

  // Binds the socket (or adopts systemd's). Errors: another daemon is live, permissions, path.
  Status listen();
  // Serves until shutdown; returns when drained.
  void run();
  void requestShutdown();
  bool fromSystemd() const { return fromSystemd_; }
  // --- for sessions (I/O thread) ---
  asio::io_context& io() { return io_; }
  // Runs one message on a worker and calls `done(reply)` back on the I/O thread. A message whose session has closed
  // by the time a worker takes it is not run.
  // Short quick requests are answered on the calling (I/O) thread itself while nothing else runs and their scopes
  // are open (answeredInline).
  void submit(std::shared_ptr<Session> session, std::string message);
  void sessionClosed(Session* session);
  const std::string& socketPath() const { return options_.socketPath; }
  // Connections open now (any thread), as daemon/status reports them.
  size_t openConnections() const { return liveSessions_.load(); }
  // Reply bytes a session queued (any thread) or wrote or dropped (I/O thread): the total over all sessions.
  void replyBytesQueued(size_t n) { queuedReplyBytes_ += n; }
  void replyBytesGone(size_t n) { queuedReplyBytes_ -= n; }
  // I/O thread: while the total is over its bound, closes the session whose client has read nothing the longest, once
  // that is kReplyBudgetGrace or longer (until then it looks again when the grace has passed).
  void enforceReplyBudget();
  // Any thread: enforceReplyBudget on the I/O thread, if the total is over its bound.
  void enforceReplyBudgetSoon();

 private:
  void accept();
  // After accept failed for want of descriptors: refuses one waiting connection with the spare descriptor, then
  // waits kAcceptBackoff before accepting again, so the loop never spins at the limit.
  void backOffAccept(const asio::error_code& ec);
  void broadcast(const ChangeEvent& event);
  void finishIfDrained();
  void armHousekeeping();
  // After a request that left saves in an open batch: commits them on a worker within kSaveCommitDelay.
  void scheduleSaveCommit();
  // Runs a job of memqd's own (commits, checkpoints, closing idle scopes) on a worker, counted in backgroundJobs_.
  void postBackgroundJob(std::function<void()> job);
  // The message (counted in inFlight_ already), parsed, when it is one short call (kMaxInlineMessageBytes) of a quick
  // method that the I/O thread answers itself instead of a worker, every scope it uses being open on `client`'s terms
  // already (Service::scopesOpenFor); nullopt when a worker answers it.
  std::optional<Envelope> answeredInline(ClientState& client, std::string_view message) const;
  // Whether memqd has nothing to do but the `messagesInFlight` messages it counts: no job queued or running, no
  // broadcast pending, no shutdown draining. Then the I/O thread may answer a request itself, or poll for the next.
  bool nothingElseRuns(size_t messagesInFlight) const;
  // Runs one message (on a worker or, answeredInline, on the I/O thread), writes its reply and ends it.
  void handle(const std::shared_ptr<Session>& session, const Envelope& message);
  nlohmann::json status();
  // io_.run(), except that until hotUntil_, while nothing else runs, the thread polls instead of sleeping.
  void runLoop();
  // I/O thread, after answering a message itself: keeps the thread polling for options_.hotPoll.
  void stayHot();

  ServerOptions options_;
  Service& service_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::thread_pool workers_;
  std::optional<asio::local::stream_protocol::acceptor> acceptor_;
  asio::steady_timer housekeeping_;
  asio::steady_timer saveCommit_;  // I/O thread only
  std::atomic<bool> saveCommitScheduled_{false};
  asio::signal_set signals_;
  Dispatcher dispatcher_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::atomic<size_t> queuedJobs_{0};
  std::atomic<int> backgroundJobs_{0};  // postBackgroundJob's jobs posted and not yet finished
  // memory/changed broadcasts posted to the I/O thread and not yet queued on the sessions. While one is pending, a
  // worker's reply goes through the I/O thread too, behind it, so a client sees a change's notification before the
  // reply to the request that made the change, as it always has.
  std::atomic<int> pendingBroadcasts_{0};
  std::atomic<uint64_t> requestsServed_{0};
  std::atomic<uint64_t> answeredInline_{0};  // messages answeredInline kept on the I/O thread
  std::atomic<uint64_t> connectionsAccepted_{0};
  std::atomic<size_t> liveSessions_{0};  // sessions_.size(), readable from workers
  std::atomic<size_t> queuedReplyBytes_{0};
  asio::steady_timer acceptBackoff_;  // I/O thread only
  asio::steady_timer replyBudgetRecheck_;  // I/O thread only
  bool replyBudgetRecheckArmed_ = false;   // I/O thread only
  int spareFd_ = -1;  // /dev/null, given up at the descriptor limit to accept (and close) one connection
  LogRateLimit acceptFailures_;
  LogRateLimit refusedConnections_;
  LogRateLimit budgetDisconnects_;
  // Messages taken from sessions and not yet ended: counted up on the I/O thread, down there or by the worker
  // that ends a message itself (Session::endMessageHere).
  std::atomic<size_t> inFlight_{0};
  uint64_t housekeepingTicks_ = 0;  // I/O thread only
  // Set once, on the I/O thread; workers read it to know whether a shutdown waits for their message.
  std::atomic<bool> draining_{false};
  bool drainGraceArmed_ = false;  // I/O thread only: the drain's last wait for replies to reach their clients
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point lastActivity_;
  // Until then the I/O thread polls instead of sleeping (runLoop); steady_clock ticks. I/O thread only.
  int64_t hotUntil_ = 0;
  bool fromSystemd_ = false;
  int socketLockFd_ = -1;  // the socket path's lock (ListeningSocket::lockFd), held until the socket is removed
};

}  // namespace memq
