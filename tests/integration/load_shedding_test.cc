// Load shedding (docs/protocol.md, Busy): past ServerOptions::maxQueuedJobs messages waiting for the workers, a
// message is answered Busy at once, with data.queued, and runs nothing; the message queued before it runs once a
// worker is free. And a message waiting for a worker whose client closed its connection is not run at all, while a
// client that shut down only its sending side is answered. memqd's bound is 1024 queued messages, which a test could
// only fill in a race against the workers; so here a Server in the test's process, on a real socket and real SQLite
// files, has one worker (and for load shedding a bound of 1), and its worker is held inside a project's first open
// (the project's repository signals, ServiceOptions::repoFactory) until the test lets it go.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/embed/hashbag.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/server/server.h"
#include "daemon/service/service.h"
#include "protocol/error_code.h"
#include "raw_conn.h"
#include "tests/unit/git/git_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

// A bound on liveness (a reply that must come), not a measure of speed.
constexpr milliseconds kLiveness{20000};

// Holds the threads that reach hold() until release(), once armed.
class Gate {
 public:
  void arm() {
    std::lock_guard lock(mutex_);
    armed_ = true;
  }
  void hold() {
    std::unique_lock lock(mutex_);
    if (!armed_) return;
    ++held_;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(120), [&] { return released_; });
  }
  bool awaitHeld() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kLiveness, [&] { return held_ > 0; });
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool released_ = false;
  int held_ = 0;
};

std::string request(int id, const std::string& method, const json& params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
}

// A connection for what RawConn does not do: shut down only its sending side, as socat and `nc -N` do at the end of
// their input, then read the replies that still come.
class HalfClosingConn {
 public:
  explicit HalfClosingConn(const std::string& socketPath) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socketPath.c_str());
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~HalfClosingConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  HalfClosingConn(const HalfClosingConn&) = delete;
  HalfClosingConn& operator=(const HalfClosingConn&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  bool shutDownSending() { return ::shutdown(fd_, SHUT_WR) == 0; }
  // The next line memqd sends, parsed; nullopt once memqd closed the connection, or after `timeout`.
  std::optional<json> readJson(milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        json line = json::parse(buffer_.substr(0, nl), nullptr, false);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd readable{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char bytes[4096];
      const ssize_t n = ::recv(fd_, bytes, sizeof bytes, 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(bytes, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// A Server in the test's process with one worker, on a real socket and real SQLite files, whose worker the test can
// hold inside the first open of the project `held` (gate), and a second project, `other`, that opens at once.
class HeldWorkerServer {
 public:
  explicit HeldWorkerServer(size_t maxQueuedJobs) : held_(tmp_.path() + "/held"), other(tmp_.path() + "/other") {
    held_.commit({{"README.md", "a repository whose first open the test holds\n"}});
    fs::create_directories(other);
    fs::create_directories(tmp_.path() + "/data");
    ServiceOptions so;
    so.dataDir = tmp_.path() + "/data";
    so.embedder = &embedder_;
    so.saveBatch = 1;
    so.repoFactory = [this](const ProjectLocation& loc) -> std::shared_ptr<RepoSignals> {
      gate.hold();
      return std::make_shared<GitRepoSignals>(loc);
    };
    service_ = std::make_unique<Service>(so);
    ServerOptions opts;
    opts.socketPath = tmp_.path() + "/memqd.sock";
    opts.workerThreads = 1;
    if (maxQueuedJobs > 0) opts.maxQueuedJobs = maxQueuedJobs;
    socketPath = opts.socketPath;
    server_ = std::make_unique<Server>(opts, *service_);
    listening = server_->listen().isOk();
    if (listening) serving_ = std::thread([this] { server_->run(); });
  }
  ~HeldWorkerServer() {
    gate.release();
    if (serving_.joinable()) {
      server_->requestShutdown();
      serving_.join();
    }
  }
  Server& server() { return *server_; }
  const std::string& heldRoot() const { return held_.dir(); }

 private:
  TempDir tmp_;
  GitRepo held_;

 public:
  const std::string other;
  Gate gate;
  std::string socketPath;
  bool listening = false;

 private:
  HashbagEmbedder embedder_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
  std::thread serving_;
};

TEST(LoadShedding, PastTheQueueBoundAMessageIsAnsweredBusyAndRunsNothing) {
  HeldWorkerServer memqd(/*maxQueuedJobs=*/1);
  ASSERT_TRUE(memqd.listening);
  Gate& gate = memqd.gate;
  const std::string& other = memqd.other;
  RawConn a(memqd.socketPath), b(memqd.socketPath), c(memqd.socketPath);
  ASSERT_TRUE(a.connected() && b.connected() && c.connected());
  for (RawConn* conn : {&a, &b, &c}) {
    ASSERT_TRUE(conn->send(request(1, "initialize", {{"client_name", "load-shedding-test"}, {"project_root", other}})));
    auto reply = conn->readJson(kLiveness);
    ASSERT_TRUE(reply && reply->contains("result")) << (reply ? reply->dump() : "no reply");
  }

  // The only worker opens the held repository's scope, and stays inside it.
  gate.arm();
  ASSERT_TRUE(a.send(request(2, "memory/list", {{"project_root", memqd.heldRoot()}})));
  ASSERT_TRUE(gate.awaitHeld()) << "the list never reached the repository's open";
  // Two saves: the first the I/O thread reads is queued (the bound's one place), the second is past the bound.
  ASSERT_TRUE(b.send(request(3, "memory/save", {{"summary", "Save from connection b"}})));
  ASSERT_TRUE(c.send(request(4, "memory/save", {{"summary", "Save from connection c"}})));
  RawConn* busy = nullptr;
  std::optional<json> busyReply;
  for (auto deadline = std::chrono::steady_clock::now() + kLiveness;
       !busy && std::chrono::steady_clock::now() < deadline;) {
    for (RawConn* conn : {&b, &c}) {
      if (auto reply = conn->readJson(milliseconds(20))) {
        busy = conn;
        busyReply = reply;
        break;
      }
    }
  }
  ASSERT_NE(busy, nullptr) << "neither save was answered while the worker was held";
  RawConn* queued = busy == &b ? &c : &b;
  ASSERT_TRUE(busyReply->contains("error")) << "a save past the bound ran: " << busyReply->dump();
  EXPECT_EQ((*busyReply)["error"]["code"], static_cast<int>(ErrorCode::kBusy)) << busyReply->dump();
  EXPECT_EQ((*busyReply)["error"]["data"]["queued"], 1) << busyReply->dump();
  EXPECT_EQ((*busyReply)["id"], busy == &b ? 3 : 4) << "the Busy reply does not carry its request's id";
  EXPECT_FALSE(queued->readJson(milliseconds(200)).has_value()) << "the queued save ran with the worker held";

  gate.release();
  auto listed = a.readJson(kLiveness);
  ASSERT_TRUE(listed && listed->contains("result")) << (listed ? listed->dump() : "no reply");
  auto saved = queued->readJson(kLiveness);
  ASSERT_TRUE(saved && saved->contains("result")) << (saved ? saved->dump() : "no reply");

  // Nothing of the Busy save was run: only the queued one's text is in the project.
  ASSERT_TRUE(b.send(request(5, "memory/list", json::object())));
  auto after = b.readJson(kLiveness);
  ASSERT_TRUE(after && after->contains("result")) << (after ? after->dump() : "no reply");
  const auto& memories = (*after)["result"]["memories"];
  ASSERT_EQ(memories.size(), 1u) << after->dump();
  EXPECT_EQ(memories[0]["summary"], queued == &b ? "Save from connection b" : "Save from connection c");
}

// A client that closed its whole connection while its request waited for a worker is gone: nobody would read the
// reply, and a loop of connect, send and close would fill the queue with such work, so the request is not run. A
// client that shut down only its sending side still reads, and is answered.
TEST(LoadShedding, ARequestWhoseClientHungUpBeforeAWorkerTookItIsNotRunButAHalfClosedClientIsAnswered) {
  HeldWorkerServer memqd(/*maxQueuedJobs=*/0);
  ASSERT_TRUE(memqd.listening);
  Gate& gate = memqd.gate;
  Server& server = memqd.server();
  const std::string& other = memqd.other;
  RawConn a(memqd.socketPath), gone(memqd.socketPath);
  HalfClosingConn half(memqd.socketPath);
  ASSERT_TRUE(a.connected() && gone.connected() && half.connected());
  const std::string initialize = request(1, "initialize", {{"client_name", "hang-up-test"}, {"project_root", other}});
  for (RawConn* conn : {&a, &gone}) {
    ASSERT_TRUE(conn->send(initialize));
    auto reply = conn->readJson(kLiveness);
    ASSERT_TRUE(reply && reply->contains("result")) << (reply ? reply->dump() : "no reply");
  }
  ASSERT_TRUE(half.send(initialize));
  auto initialized = half.readJson(kLiveness);
  ASSERT_TRUE(initialized && initialized->contains("result")) << (initialized ? initialized->dump() : "no reply");
  ASSERT_EQ(server.openConnections(), 3u);

  // The only worker opens the held repository's scope, and stays inside it: the saves below wait for it.
  gate.arm();
  ASSERT_TRUE(a.send(request(2, "memory/list", {{"project_root", memqd.heldRoot()}})));
  ASSERT_TRUE(gate.awaitHeld()) << "the list never reached the repository's open";
  ASSERT_TRUE(half.send(request(3, "memory/save", {{"summary", "Save from a client that half-closed"}})));
  ASSERT_TRUE(half.shutDownSending());
  ASSERT_TRUE(gone.send(request(4, "memory/save", {{"summary", "Save from a client that hung up"}})));
  gone.closeNow();
  // memqd closes the connection of the client that hung up at once, its save still waiting for the worker; the
  // half-closed one stays open for its reply.
  for (auto deadline = std::chrono::steady_clock::now() + kLiveness;
       server.openConnections() > 2 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_EQ(server.openConnections(), 2u) << "the connection of a client that hung up was kept for its request";

  gate.release();
  auto listed = a.readJson(kLiveness);
  ASSERT_TRUE(listed && listed->contains("result")) << (listed ? listed->dump() : "no reply");
  auto saved = half.readJson(kLiveness);
  ASSERT_TRUE(saved && saved->contains("result")) << (saved ? saved->dump() : "no reply");
  EXPECT_EQ((*saved)["id"], 3);

  // The one worker takes messages in order: this list runs after the save of the client that hung up was dropped.
  ASSERT_TRUE(a.send(request(5, "memory/list", json::object())));
  auto after = a.readJson(kLiveness);
  ASSERT_TRUE(after && after->contains("result")) << (after ? after->dump() : "no reply");
  const auto& memories = (*after)["result"]["memories"];
  ASSERT_EQ(memories.size(), 1u) << after->dump();
  EXPECT_EQ(memories[0]["summary"], "Save from a client that half-closed");
}

}  // namespace
}  // namespace memq::testing
