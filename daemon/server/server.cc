// memqd's runtime; see server.h.
#include "daemon/server/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <string_view>
#include <thread>

#include "daemon/embed/vector_index.h"
#include "daemon/server/process_memory.h"
#include "daemon/server/request_params.h"
#include "daemon/server/session.h"
#include "daemon/server/version.h"
#include "daemon/service/anchor_rebase.h"
#include "daemon/util/cpu_relax.h"
#include "protocol/envelope.h"

namespace memq {

Server::Server(ServerOptions options, Service& service)
    : options_(std::move(options)),
      service_(service),
      work_(asio::make_work_guard(io_)),
      workers_(options_.workerThreads),
      housekeeping_(io_),
      saveCommit_(io_),
      signals_(io_, SIGINT, SIGTERM),
      dispatcher_(service, ServerHooks{[this] { return status(); }, [this] { requestShutdown(); }}),
      acceptBackoff_(io_),
      replyBudgetRecheck_(io_) {
  started_ = lastActivity_ = std::chrono::steady_clock::now();
  spareFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  service_.setChangeListener([this](const ChangeEvent& e) {
    ++pendingBroadcasts_;
    asio::post(io_, [this, e] {
      broadcast(e);
      --pendingBroadcasts_;
    });
  });
}

Server::~Server() {
  service_.setChangeListener(nullptr);
  workers_.join();
  if (spareFd_ >= 0) ::close(spareFd_);
  if (socketLockFd_ >= 0) ::close(socketLockFd_);
}

Status Server::listen() {
  auto sock = openListeningSocket(options_.socketPath);
  if (!sock) return sock.status();
  fromSystemd_ = sock->fromSystemd;
  socketLockFd_ = sock->lockFd;
  acceptor_.emplace(io_);
  asio::error_code ec;
  acceptor_->assign(asio::local::stream_protocol(), sock->fd, ec);
  if (ec) return Status(ErrorCode::kInternalError, "cannot adopt the listening socket: " + ec.message());
  spdlog::info("memqd {} listening on {}{}", getpid(), options_.socketPath, fromSystemd_ ? " (systemd)" : "");
  return Status::ok();
}

void Server::run() {
  signals_.async_wait([this](const asio::error_code& ec, int sig) {
    if (!ec) {
      spdlog::info("signal {}: draining and exiting", sig);
      requestShutdown();
    }
  });
  accept();
  armHousekeeping();
  runLoop();
  workers_.join();
  spdlog::info("memqd stopped after serving {} requests", requestsServed_.load());
}

void Server::stayHot() {
  if (options_.hotPoll.count() <= 0) return;
  hotUntil_ = (std::chrono::steady_clock::now() + options_.hotPoll).time_since_epoch().count();
}

void Server::runLoop() {
  // Why poll: a client that sends its next request soon after a reply (an agent's hook, then its tool call; a
  // benchmark) would otherwise find the thread asleep. Waking it costs a futex and a context switch, and on a
  // virtual machine the idle vCPU has halted and its caches gone cold: recalls after a 1 ms sleep ran 30-80% slower
  // than back to back (docs/performance.md). Polling never runs while a worker or a background job could use the
  // core, and ends after hotPoll, so an idle memqd sleeps as before.
  if (options_.hotPoll.count() <= 0) {
    io_.run();
    return;
  }
  while (!io_.stopped()) {
    if (io_.poll() > 0) continue;
    if (io_.stopped()) break;
    const bool hot = std::chrono::steady_clock::now().time_since_epoch().count() < hotUntil_;
    if (hot && nothingElseRuns(0)) {
      cpuRelax();
      continue;
    }
    if (io_.run_one() == 0) break;
  }
}

namespace {

constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// How long a client over the reply budget must have read nothing before it is the one cut off
// (enforceReplyBudget): far longer than a reading client takes between two reads, far shorter than a stuck one waits.
constexpr auto kReplyBudgetGrace = std::chrono::milliseconds(100);

bool outOfResources(const asio::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == std::errc::too_many_files_open_in_system ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

void Server::accept() {
  if (!acceptor_ || draining_) return;
  acceptor_->async_accept([this](const asio::error_code& ec, asio::local::stream_protocol::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      if (outOfResources(ec)) {
        backOffAccept(ec);
        return;
      }
      uint64_t suppressed = 0;
      if (acceptFailures_.admit(&suppressed)) spdlog::warn("accept failed: {}{}", ec.message(), suppressedNote(suppressed));
      accept();
      return;
    }
    std::string why;
    if (!peerAllowed(peerUid(socket.native_handle()), ::geteuid(), &why)) {
      uint64_t suppressed = 0;
      if (refusedConnections_.admit(&suppressed)) spdlog::warn("refused a connection: {}{}", why, suppressedNote(suppressed));
      asio::error_code ignored;
      socket.close(ignored);
      accept();
      return;
    }
    if (sessions_.size() >= options_.maxConnections) {
      // Closed before anything is read or written: the client sees end of file on its first read.
      uint64_t suppressed = 0;
      if (refusedConnections_.admit(&suppressed)) {
        spdlog::warn("refused a connection: {} connections are open, the most allowed (--max-connections){}",
                     sessions_.size(), suppressedNote(suppressed));
      }
      asio::error_code ignored;
      socket.close(ignored);
      accept();
      return;
    }
    auto session = std::make_shared<Session>(*this, std::move(socket), options_.maxMessageBytes, ++connectionsAccepted_,
                                             options_.partialMessageTimeout, options_.silentConnectionTimeout);
    sessions_.insert(session);
    liveSessions_ = sessions_.size();
    lastActivity_ = std::chrono::steady_clock::now();
    session->start();
    accept();
  });
}

void Server::backOffAccept(const asio::error_code& ec) {
  // The connection that found no descriptor still waits in the backlog. With the spare descriptor given up for a
  // moment it is accepted and closed at once, so its client hears end of file instead of hanging.
  bool refusedOne = false;
  if (spareFd_ >= 0) {
    ::close(spareFd_);
    int fd = ::accept4(acceptor_->native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      ::close(fd);
      refusedOne = true;
    }
    spareFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  uint64_t suppressed = 0;
  if (acceptFailures_.admit(&suppressed)) {
    spdlog::warn("accept failed: {}; {}accepting again in {} ms{}", ec.message(),
                 refusedOne ? "closed one waiting connection, " : "", kAcceptBackoff.count(),
                 suppressedNote(suppressed));
  }
  acceptBackoff_.expires_after(kAcceptBackoff);
  acceptBackoff_.async_wait([this](const asio::error_code& waited) {
    if (!waited) accept();
  });
}

void Server::enforceReplyBudgetSoon() {
  if (queuedReplyBytes_.load() <= options_.maxQueuedReplyBytes) return;
  asio::post(io_, [this] { enforceReplyBudget(); });
}

void Server::enforceReplyBudget() {
  // The connection closed is the one whose client has gone longest without reading, not the one holding the most
  // bytes: a large reply (an export page of 4 MiB) is mostly unread for the moment after it is queued, however
  // steadily its client reads, while connections that never read can each hold a little less. Among equally stalled
  // ones, the most bytes go first. And only a client that has read nothing for kReplyBudgetGrace: at the moment the
  // bound is passed the replies that pass it are the newest, and a client reading steadily may have read its last
  // bytes only a moment before; the grace tells the two apart. Meanwhile the total may pass the bound by what the
  // connections queue in that time, each within its own bound (Session::kMaxQueuedBytes).
  while (queuedReplyBytes_.load() > options_.maxQueuedReplyBytes) {
    std::shared_ptr<Session> worst;
    Session::UnreadReplies worstUnread;
    for (const auto& s : sessions_) {
      const Session::UnreadReplies unread = s->unreadReplies();
      if (unread.bytes == 0) continue;
      if (!worst || unread.waitingSince < worstUnread.waitingSince ||
          (unread.waitingSince == worstUnread.waitingSince && unread.bytes > worstUnread.bytes)) {
        worst = s;
        worstUnread = unread;
      }
    }
    if (!worst) return;
    const auto stalled = std::chrono::steady_clock::now() - worstUnread.waitingSince;
    if (stalled < kReplyBudgetGrace) {
      if (!replyBudgetRecheckArmed_) {
        replyBudgetRecheckArmed_ = true;
        replyBudgetRecheck_.expires_after(kReplyBudgetGrace - stalled);
        replyBudgetRecheck_.async_wait([this](const asio::error_code& ec) {
          replyBudgetRecheckArmed_ = false;
          if (!ec) enforceReplyBudget();
        });
      }
      return;
    }
    uint64_t suppressed = 0;
    if (budgetDisconnects_.admit(&suppressed)) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(stalled);
      spdlog::warn("connection {}: {} bytes of replies unread, its client reading none for {} ms, the longest of any "
                   "connection, while all hold {} (--max-queued-reply-bytes {}); disconnecting it{}",
                   worst->number(), worstUnread.bytes, waited.count(), queuedReplyBytes_.load(),
                   options_.maxQueuedReplyBytes, suppressedNote(suppressed));
    }
    worst->close("over the bound of reply bytes queued for all connections");
  }
}

namespace {

// The value of the first "method" key in a message's text, read without parsing it (the dispatcher parses it
// properly), or "". A wrong guess changes only which thread answers, never the answer.
std::string_view methodNamed(std::string_view message) {
  const size_t key = message.find("\"method\"");
  if (key == std::string_view::npos) return {};
  size_t i = key + 8;
  while (i < message.size() && (message[i] == ' ' || message[i] == ':')) ++i;
  if (i >= message.size() || message[i] != '"') return {};
  const size_t end = message.find('"', i + 1);
  if (end == std::string_view::npos) return {};
  return message.substr(i + 1, end - i - 1);
}

// A method short enough to answer on the I/O thread, and the scopes its request resolves.
struct QuickMethod {
  std::string_view name;
  Service::ScopeUse scopes;
};

// Methods short enough to answer on the I/O thread: reads of a few rows, recall, hints, and a save (journalled and
// answered from memory). Nothing that can run long (list pages, export, import, reviews, repository walks).
constexpr QuickMethod kQuickMethods[] = {
    {"memory/get", Service::ScopeUse::kRead},     {"memory/recall", Service::ScopeUse::kRead},
    {"memory/search", Service::ScopeUse::kRead},  {"memory/save", Service::ScopeUse::kWrite},
    {"hints/for_tool", Service::ScopeUse::kRead}, {"hints/turn", Service::ScopeUse::kNone},
    {"daemon/status", Service::ScopeUse::kNone},  {"initialize", Service::ScopeUse::kLocation},
};

// The longest message answered on the I/O thread. A quick method is quick for the requests agents send (a recall's
// query of a sentence, a save of a paragraph naming a few files: far shorter than this), but its parse and its work
// grow with its text: a recall of a 990 KB query took 80-150 ms there, and every other connection waited that long for
// the I/O thread (daemon/status p50 1.3 -> 95 ms). A longer message goes to a worker, whose hand-off costs little
// beside the work such a message brings.
constexpr size_t kMaxInlineMessageBytes = size_t{16} << 10;

// The quick method `method` names; nullptr for any other.
const QuickMethod* quickMethod(std::string_view method) {
  for (const QuickMethod& quick : kQuickMethods) {
    if (quick.name == method) return &quick;
  }
  return nullptr;
}

}  // namespace

void Server::submit(std::shared_ptr<Session> session, std::string message) {
  ++inFlight_;
  lastActivity_ = std::chrono::steady_clock::now();
  const bool overloaded = queuedJobs_.load() >= options_.maxQueuedJobs;
  if (overloaded || draining_.load()) {
    // Load shedding, or a message that arrived after daemon/shutdown (pipelined behind it, or sent while the
    // daemon drains): answered Busy without running anything, so nothing runs after a shutdown was acknowledged.
    // The reply carries the request's id when it has one.
    auto env = parseEnvelope(message);
    nlohmann::json id = env.items.size() == 1 && env.items[0].call ? env.items[0].call->id : nlohmann::json();
    const Status busy = overloaded ? Status(ErrorCode::kBusy, "memqd is overloaded; retry shortly",
                                            nlohmann::json{{"queued", queuedJobs_.load()}})
                                   : Status(ErrorCode::kBusy, "memqd is shutting down; nothing was run");
    // A message of notifications only (one, or a batch of them) is answered with nothing, as JSON-RPC 2.0 requires
    // of every notification; an invalid element is not one, and gets the error.
    const bool onlyNotifications = std::all_of(env.items.begin(), env.items.end(), [](const EnvelopeItem& item) {
      return item.call && item.call->isNotification();
    });
    std::string reply = onlyNotifications ? std::string() : serializeMessage(makeErrorReply(id, busy));
    asio::post(io_, [this, session, reply = std::move(reply)] {
      --inFlight_;
      session->finished(reply.empty() ? std::nullopt : std::optional<std::string>(reply));
      finishIfDrained();
    });
    return;
  }
  if (std::optional<Envelope> quick = answeredInline(session->client(), message)) {
    ++answeredInline_;
    // Not after a save: the save applier thread takes the other core now, and a poll would keep it from the client.
    const bool save = quick->items[0].call->method == "memory/save";
    handle(session, *quick);
    if (!save) stayHot();
    return;
  }
  ++queuedJobs_;
  asio::post(workers_, [this, session, message = std::move(message)] {
    --queuedJobs_;
    if (session->closedNow()) {
      // The connection closed while its message waited (the client hung up, or memqd dropped it): no one would read
      // the reply, so nothing is run. The message still ends on the I/O thread, as any other.
      spdlog::debug("connection {} closed before its message ran; not run", session->number());
      asio::post(io_, [this, session] {
        --inFlight_;
        session->finished(std::nullopt);
        finishIfDrained();
      });
      return;
    }
    handle(session, parseEnvelope(message));
  });
}

std::optional<Envelope> Server::answeredInline(ClientState& client, std::string_view message) const {
  // A worker hand-off costs the round trip a thread wake-up (a futex, a context switch, on a virtual machine an
  // interrupt to the other core): for a get that is most of memqd's share of it. So a quick request is answered on
  // the I/O thread itself, but only while nothing else runs: it is the only message in flight (counted in submit),
  // no job or broadcast waits, and no housekeeping job holds a scope. Then no other connection is waiting for the
  // I/O thread, and the request cannot wait behind a scope lock another request holds.
  // Nor a long message: its size is checked first, before its text is searched or parsed here at all
  // (kMaxInlineMessageBytes). The message's text is searched for its method only then, and only a message that looks
  // quick is parsed here: the parse decides, so a batch, or a method named twice or in escapes, still goes to a
  // worker.
  if (message.size() > kMaxInlineMessageBytes || !nothingElseRuns(1) || quickMethod(methodNamed(message)) == nullptr) {
    return std::nullopt;
  }
  Envelope envelope = parseEnvelope(message);
  const QuickMethod* quick =
      envelope.batch || !envelope.items[0].call ? nullptr : quickMethod(envelope.items[0].call->method);
  if (quick == nullptr) return std::nullopt;  // a worker parses it again: rare, and never a request answered quickly
  // A request whose scope is not open yet (the first after memqd started, or after the scope was closed idle) goes
  // to a worker: opening a large database takes seconds, and on this thread no other connection would be read
  // meanwhile. Its params are read as the dispatcher reads them; any it cannot read send the request to a worker.
  if (quick->scopes != Service::ScopeUse::kNone) {
    static const nlohmann::json kNoParams = nlohmann::json::object();
    const nlohmann::json& params = envelope.items[0].call->params;
    if (!params.is_null() && !params.is_object()) return std::nullopt;
    auto common = readCommonParams(params.is_null() ? kNoParams : params);
    if (!common || !service_.scopesOpenFor(client, *common, quick->scopes)) return std::nullopt;
  }
  return envelope;
}

bool Server::nothingElseRuns(size_t messagesInFlight) const {
  return inFlight_.load() == messagesInFlight && queuedJobs_.load() == 0 && backgroundJobs_.load() == 0 &&
         pendingBroadcasts_.load() == 0 && !draining_.load();
}

void Server::handle(const std::shared_ptr<Session>& session, const Envelope& message) {
  Dispatcher::MessageLog log;
  std::optional<std::string> reply = dispatcher_.handleEnvelope(session->client(), message, &log);
  requestsServed_ += log.calls;
  if (service_.hasPendingSaves()) scheduleSaveCommit();
  // The reply is written here when nothing is ahead of it, saving the client a wake-up of the I/O thread on its
  // round trip (context switches dominate a get's cost on small machines, docs/performance.md).
  bool nothingLeftToWrite = !reply;
  if (reply && pendingBroadcasts_.load() == 0) {
    const Session::DirectWrite written = session->writeReplyNow(*reply);
    if (written != Session::DirectWrite::kNotWritten) reply.reset();
    nothingLeftToWrite = written == Session::DirectWrite::kWhole;
  }
  // Logged once the reply is out: the log line (flushed per line) is no part of the client's wait.
  spdlog::info("[{}] {}", session->number(), log.line);
  // With all of the reply written and no one on the I/O thread waiting for this message to end, the message ends
  // here: the I/O thread is not woken (an epoll interrupt, its run-queue lock, a context switch per request) and
  // takes the connection's next message when it arrives.
  if (nothingLeftToWrite && !draining_.load() && session->endMessageHere()) {
    // A shutdown that began after the check above waits for in-flight requests: the last one tells it.
    if (--inFlight_ == 0 && draining_.load()) asio::post(io_, [this] { finishIfDrained(); });
    return;
  }
  asio::post(io_, [this, session, reply = std::move(reply)]() mutable {
    --inFlight_;
    session->finished(std::move(reply));
    finishIfDrained();
  });
}

void Server::sessionClosed(Session* session) {
  service_.forget(session->client());
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->get() == session) {
      // Keep the object alive until the current handler returns.
      asio::post(io_, [keep = *it] {});
      sessions_.erase(it);
      liveSessions_ = sessions_.size();
      break;
    }
  }
  lastActivity_ = std::chrono::steady_clock::now();
  finishIfDrained();
}

void Server::broadcast(const ChangeEvent& e) {
  const std::string scope = toString(e.scope);
  nlohmann::json params = {{"scope", scope}, {"id", e.id}, {"action", e.action}};
  if (!e.projectRoot.empty()) params["project_root"] = e.projectRoot;
  std::string text = serializeMessage(makeNotification("memory/changed", params));
  auto copy = sessions_;  // notify may close a slow session, which erases from sessions_
  for (auto& s : copy) s->notify(scope, text);
}

void Server::requestShutdown() {
  asio::post(io_, [this] {
    if (draining_) return;
    draining_ = true;
    spdlog::info("shutting down: {} request(s) in flight", inFlight_.load());
    asio::error_code ignored;
    if (acceptor_) acceptor_->close(ignored);
    acceptBackoff_.cancel();
    replyBudgetRecheck_.cancel();
    if (!fromSystemd_) ::unlink(options_.socketPath.c_str());
    if (socketLockFd_ >= 0) {
      // The socket is gone: a memqd started now (a restart, a client's autostart) may take the path while this one
      // drains.
      ::close(socketLockFd_);
      socketLockFd_ = -1;
    }
    signals_.cancel(ignored);
    // No connection's input is read from here on: what each has buffered is answered (Busy), then it closes. A
    // client that kept sending would otherwise keep a message in flight for ever, and the drain waits for none.
    auto open = sessions_;
    for (auto& s : open) s->endInput();
    finishIfDrained();
  });
}

void Server::finishIfDrained() {
  if (!draining_ || inFlight_ > 0) return;
  auto copy = sessions_;
  for (auto& s : copy) s->closeWhenFlushed();
  if (sessions_.empty()) {
    housekeeping_.cancel();
    saveCommit_.cancel();
    work_.reset();
    io_.stop();
  } else if (!drainGraceArmed_) {
    // Give queued replies (the shutdown acknowledgement among them) a moment to reach their clients. Armed once:
    // every session that closes meanwhile comes back here, and re-arming would cancel the wait, end it at once and
    // cut the replies still being written.
    drainGraceArmed_ = true;
    housekeeping_.expires_after(std::chrono::milliseconds(500));
    housekeeping_.async_wait([this](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;  // every session closed first: the loop was stopped above
      auto rest = sessions_;
      for (auto& s : rest) s->close("shutdown");
      work_.reset();
      io_.stop();
    });
  }
}

namespace {

constexpr auto kSaveCommitDelay = std::chrono::milliseconds(10);  // the timer of scheduleSaveCommit
constexpr auto kBatchIdle = std::chrono::milliseconds(5);         // a batch this long without a save is committed

}  // namespace

void Server::postBackgroundJob(std::function<void()> job) {
  ++backgroundJobs_;
  asio::post(workers_, [this, job = std::move(job)] {
    job();
    --backgroundJobs_;
  });
}

void Server::scheduleSaveCommit() {
  // Saves that follow each other share one transaction (StoreOptions::saveBatch); each is acknowledged once it is
  // in the save journal. This commits the last batch of a stream soon after the stream stops (a batch still being
  // added to is left to fill: it commits itself when full), and is re-armed while any batch stays open.
  if (saveCommitScheduled_.exchange(true)) return;
  asio::post(io_, [this] {
    saveCommit_.expires_after(kSaveCommitDelay);
    saveCommit_.async_wait([this](const asio::error_code& ec) {
      if (ec) {
        saveCommitScheduled_ = false;
        return;
      }
      postBackgroundJob([this] {
        saveCommitScheduled_ = false;
        service_.commitPendingSaves(kBatchIdle);
        if (service_.hasPendingSaves() && !draining_.load()) scheduleSaveCommit();
      });
    });
  });
}

void Server::armHousekeeping() {
  if (draining_) return;
  housekeeping_.expires_after(std::chrono::seconds(1));
  housekeeping_.async_wait([this](const asio::error_code& ec) {
    if (ec || draining_) return;
    auto now = std::chrono::steady_clock::now();
    if (options_.idleExitSeconds > 0 && sessions_.empty() && inFlight_ == 0 &&
        now - lastActivity_ > std::chrono::seconds(options_.idleExitSeconds)) {
      spdlog::info("idle for {} s: exiting", options_.idleExitSeconds);
      requestShutdown();
      return;
    }
    ++housekeepingTicks_;
    if (housekeepingTicks_ % 3 == 0) {
      postBackgroundJob([this] { service_.scopes().checkpointAll(); });
    }
    if (housekeepingTicks_ % 5 == 0) {
      // What follows HEAD, brought up to a HEAD that moved: the renames recall follows, and the anchors re-based so
      // that the next recall carries each through a held diff.
      postBackgroundJob([this] {
        for (auto& scope : service_.scopes().projectScopes()) {
          if (scope->repo) scope->repo->followRenames();
          rebaseAnchorsToHead(*scope);
        }
      });
    }
    if (housekeepingTicks_ % 60 == 0) {
      postBackgroundJob([this] { service_.scopes().closeIdle(std::chrono::minutes(10)); });
    }
    armHousekeeping();
  });
}

nlohmann::json Server::status() {
  auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return {{"version", kMemqdVersion},
          {"pid", ::getpid()},
          {"uptime_s", uptime},
          {"socket", options_.socketPath},
          {"socket_activated", fromSystemd_},
          {"open_scopes", service_.scopes().openScopePaths()},
          {"read_only_scopes", service_.scopes().readOnlyScopePaths()},
          {"connections", liveSessions_.load()},
          {"requests_served", requestsServed_.load()},
          {"messages_answered_inline", answeredInline_.load()},
          {"embedder", std::string(service_.embedder().model())},
          {"scan_kernel", VectorIndex::kernelName()},
          {"heap_huge_pages", heapUsesHugePages()}};
}

}  // namespace memq
