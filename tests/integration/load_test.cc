// memqd under load, over its socket: 64 clients doing mixed work for a bounded time (every request answered, memory
// bounded after warm-up, no error in the log, every acknowledged save findable), and a client that never reads its
// replies (disconnected at the write-queue bound, without stalling anyone else). Workloads are bounded in count and
// time; the only clock assertion is a generous liveness bound, never a speed target.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Lines of memqd's log at error or critical level (spdlog's default pattern: "[time] [logger] [level] message").
std::vector<std::string> errorLines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("] [error] ") != std::string::npos || line.find("] [critical] ") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

// The error codes of docs/protocol.md's table: any other code is not a defined answer.
bool isDefinedErrorCode(int code) {
  return (code >= -32009 && code <= -32001) || code == -32700 || (code >= -32603 && code <= -32600);
}

// A project of 16 small C files (no git) and its daemon.
class LoadTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("load");
    for (int i = 0; i < 16; ++i) {
      writeTextFile(fs::path(project_) / "src" / ("mod" + std::to_string(i) + ".c"),
                    "int mod" + std::to_string(i) + "(void) { return " + std::to_string(i) + "; }\n");
    }
    startDaemon();
  }
};

// What one load client saw.
struct ClientTally {
  std::vector<std::pair<std::string, std::string>> saved;  // acknowledged saves: id, summary
  std::map<int, int> errors;                                // error replies by code
  int results = 0;
  int transportFailures = 0;
  int wrongDedups = 0;  // a re-save of the client's last note that was not deduped into it
  std::string firstTransportFailure;
};

TEST_F(LoadTest, SixtyFourClientsGetAnswersInBoundedMemoryAndEveryAcknowledgedSaveIsFound) {
  constexpr int kClients = 64;
  // Bounded in time: a warm-up phase (scopes open, caches and the worker pool fill), then the measured phase.
  constexpr auto kWarmUp = std::chrono::seconds(6);
  constexpr auto kMeasured = std::chrono::seconds(14);
  // Bounded in size too: after this many new notes a client's saves re-save its last note (a dedup, still a write),
  // so the databases, and with them SQLite's page cache and mapped pages, stop growing however fast the machine is.
  constexpr size_t kNewNotesPerClient = 40;
  std::vector<ClientTally> tallies(kClients);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      ClientTally& tally = tallies[t];
      auto conn = RpcClient::connect(daemon_->socket(), std::chrono::seconds(10));
      if (!conn) {
        ++tally.transportFailures;
        tally.firstTransportFailure = conn.status().toString();
        return;
      }
      RpcClient& c = *conn;
      auto init = c.call("initialize", {{"client_name", "load-" + std::to_string(t)}, {"project_root", project_}});
      if (!init) {
        ++tally.transportFailures;
        tally.firstTransportFailure = init.status().toString();
        return;
      }
      size_t hidden = 0;  // saved[0, hidden) were hidden
      for (int i = 0; !stop.load(); ++i) {
        const std::string file = "src/mod" + std::to_string((t + i) % 16) + ".c";
        std::string method;
        json params;
        switch (i % 6) {
          case 0:
            method = "memory/save";
            if (tally.saved.size() < kNewNotesPerClient) {
              params = {{"summary", "client " + std::to_string(t) + " note " + std::to_string(i) + " about mod" +
                                        std::to_string((t + i) % 16)},
                        {"details", "written under load by client " + std::to_string(t)},
                        {"files", {file}},
                        {"category", i % 12 == 0 ? "gotcha" : "context"}};
            } else {
              params = {{"summary", tally.saved.back().second}, {"files", {file}}};  // the last note is never hidden
            }
            break;
          case 1:
            method = "memory/recall";
            params = {{"query", "note about mod" + std::to_string(i % 16)}, {"files", {file}}, {"limit", 5}};
            break;
          case 2:
            method = tally.saved.empty() ? "stats" : "memory/get";
            params = tally.saved.empty() ? json::object() : json{{"id", tally.saved.back().first}};
            break;
          case 3:
            if (hidden + 2 < tally.saved.size()) {
              method = "memory/hide";
              params = {{"id", tally.saved[hidden++].first}, {"reason", "load"}};
            } else {
              method = "memory/search";
              params = {{"query", "client " + std::to_string(t)}};
            }
            break;
          case 4:
            method = "hints/for_tool";
            params = {{"tool", i % 12 == 4 ? "edit" : "read"}, {"files", {file}}};
            break;
          case 5:
            method = "hints/turn";
            params = json::object();
            break;
        }
        auto r = c.call(method, params);
        if (r) {
          ++tally.results;
          if (method == "memory/save" && (*r)["status"] == "created") {
            tally.saved.emplace_back((*r)["id"], params["summary"]);
          } else if (method == "memory/save" && ((*r)["status"] != "deduped" || (*r)["id"] != tally.saved.back().first)) {
            ++tally.wrongDedups;
          }
        } else if (isTransportError(r.status())) {
          if (tally.transportFailures++ == 0) tally.firstTransportFailure = method + ": " + r.status().toString();
          return;  // the connection is gone: nothing more can be answered on it
        } else {
          ++tally.errors[static_cast<int>(r.status().code())];
        }
      }
    });
  }
  std::this_thread::sleep_for(kWarmUp);
  const long warmRss = procStatusKib(daemon_->pid(), "VmRSS");
  const long warmAnon = procStatusKib(daemon_->pid(), "RssAnon");
  std::this_thread::sleep_for(kMeasured);
  const long endRss = procStatusKib(daemon_->pid(), "VmRSS");
  const long endAnon = procStatusKib(daemon_->pid(), "RssAnon");
  stop = true;
  for (auto& th : threads) th.join();

  int results = 0, saves = 0, transport = 0;
  std::map<int, int> errors;
  for (const auto& tally : tallies) {
    results += tally.results;
    saves += static_cast<int>(tally.saved.size());
    transport += tally.transportFailures;
    for (const auto& [code, n] : tally.errors) errors[code] += n;
    EXPECT_EQ(tally.transportFailures, 0) << tally.firstTransportFailure;
    EXPECT_EQ(tally.wrongDedups, 0);
  }
  int errorReplies = 0;
  for (const auto& [code, n] : errors) errorReplies += n;
  std::printf("load: %d clients, %d results, %d acknowledged saves, %d error replies, %d transport failures\n",
              kClients, results, saves, errorReplies, transport);
  std::printf("load: VmRSS %ld KiB after warm-up, %ld KiB at the end; RssAnon %ld -> %ld KiB\n", warmRss, endRss,
              warmAnon, endAnon);

  // Every request got a result or a defined error. Busy is defined only past 1024 queued messages; 64 clients with
  // one request in flight each can never queue that many, so here it is a failure like any other error. The workload
  // makes no request that should fail at all.
  for (const auto& [code, n] : errors) {
    EXPECT_TRUE(isDefinedErrorCode(code)) << "undefined error code " << code << " (" << n << " times)";
    ADD_FAILURE() << n << " error replies with code " << code;
  }
  EXPECT_GT(saves, kClients);  // every client got work done

  // Memory bounded: no more than 25% + 16 MiB of growth from the end of warm-up to the end of the run.
  ASSERT_GT(warmRss, 0);
  ASSERT_GT(endRss, 0);
  EXPECT_LE(endRss, warmRss + warmRss / 4 + 16 * 1024)
      << "memqd grew from " << warmRss << " KiB to " << endRss << " KiB under a steady load";

  // No error (or worse) in memqd's own log.
  auto bad = errorLines(daemon_->log());
  EXPECT_TRUE(bad.empty()) << bad.size() << " error lines, the first: " << bad.front();

  // Every acknowledged save is findable by id, with the text it was saved with.
  auto checker = daemon_->client(project_, "checker");
  int missing = 0;
  for (const auto& tally : tallies) {
    for (const auto& [id, summary] : tally.saved) {
      auto got = checker.call("memory/get", {{"id", id}});
      if (!got || (*got)["summary"] != summary) {
        if (++missing <= 5) ADD_FAILURE() << "acknowledged save " << id << " not found: " << got.status().toString();
      }
    }
  }
  EXPECT_EQ(missing, 0);
  EXPECT_TRUE(daemon_->running());
}

// A raw connection that sends requests and never reads: what a stuck client looks like to memqd.
class SilentReader {
 public:
  explicit SilentReader(const std::string& socketPath) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socketPath.c_str(), sizeof addr.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~SilentReader() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool sendAll(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads (at last) whatever is buffered until the daemon's close shows: EOF or ECONNRESET. Returns the errno-like
  // outcome ("eof", "reset", "timeout", or an error) and counts the reply lines received.
  std::string drainUntilClosed(Clock::duration timeout, size_t* lines) {
    auto deadline = Clock::now() + timeout;
    char buf[1 << 16];
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return "eof";
      if (n < 0) return errno == ECONNRESET ? "reset" : std::strerror(errno);
      for (ssize_t i = 0; i < n; ++i) *lines += buf[i] == '\n';
    }
    return "timeout";
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

TEST_F(LoadTest, AClientThatNeverReadsIsDisconnectedAtTheQueueBoundAndOthersKeepTheirPace) {
  // 300 memories of about 2 KB: each memory/list page of 300 is a reply of well over half a MiB.
  constexpr int kMemories = 300;
  {
    auto c = daemon_->client(project_, "filler");
    for (int i = 0; i < kMemories; ++i) {
      std::string details;
      while (details.size() < 1900) details += "line " + std::to_string(details.size()) + " of memory " + std::to_string(i) + "; ";
      auto r = c.call("memory/save", {{"summary", "bulky memory " + std::to_string(i)}, {"details", details}});
      ASSERT_TRUE(r.isOk()) << r.status().toString();
    }
  }
  // The stuck client asks for 200 such pages (well over 100 MiB of replies) and reads none of them.
  constexpr int kRequests = 200;
  SilentReader stuck(daemon_->socket());
  ASSERT_TRUE(stuck.connected());
  std::string requests = json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                              {"params", {{"client_name", "stuck"}, {"project_root", project_}}}}
                             .dump() +
                         "\n";
  for (int i = 1; i <= kRequests; ++i) {
    requests += json{{"jsonrpc", "2.0"}, {"id", i}, {"method", "memory/list"}, {"params", {{"limit", kMemories}}}}
                    .dump() +
                "\n";
  }
  ASSERT_TRUE(stuck.sendAll(requests));

  // Meanwhile, other clients get their answers: a liveness bound (10 s for 60 calls each), not a speed target.
  constexpr int kOthers = 4, kCalls = 60;
  std::vector<std::thread> others;
  std::atomic<int> answered{0};
  std::vector<Clock::duration> took(kOthers);
  for (int t = 0; t < kOthers; ++t) {
    others.emplace_back([&, t] {
      auto start = Clock::now();
      auto c = RpcClient::connect(daemon_->socket(), std::chrono::seconds(10));
      if (!c) return;
      if (!c->call("initialize", {{"client_name", "other"}, {"project_root", project_}})) return;
      std::string lastId;
      for (int i = 0; i < kCalls; ++i) {
        Result<json> r = Status::internal("unset");
        if (i % 3 == 0) {
          r = c->call("memory/save", {{"summary", "other " + std::to_string(t) + " call " + std::to_string(i)}},
                      std::chrono::seconds(10));
          if (r) lastId = (*r)["id"];
        } else if (i % 3 == 1) {
          r = c->call("memory/get", {{"id", lastId}}, std::chrono::seconds(10));
        } else {
          r = c->call("memory/recall", {{"query", "other call " + std::to_string(i)}}, std::chrono::seconds(10));
        }
        if (r) ++answered;
      }
      took[t] = Clock::now() - start;
    });
  }
  for (auto& th : others) th.join();
  EXPECT_EQ(answered.load(), kOthers * kCalls);
  for (int t = 0; t < kOthers; ++t) {
    double seconds = std::chrono::duration<double>(took[t]).count();
    std::printf("slow reader: client %d answered %d calls in %.2f s\n", t, kCalls, seconds);
    EXPECT_LT(seconds, 10.0) << "client " << t << " was held up behind the stuck reader";
  }

  // The stuck client is cut off once its unread replies pass the bound (16 MiB); only then does it look: it finds
  // what the kernel buffered, then EOF or a reset, long before 200 replies could have reached it.
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (daemon_->log().find("disconnecting the slow client") == std::string::npos && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(daemon_->log().find("disconnecting the slow client"), std::string::npos)
      << "the stuck client was never disconnected";
  size_t lines = 0;
  std::string outcome = stuck.drainUntilClosed(std::chrono::seconds(60), &lines);
  EXPECT_TRUE(outcome == "eof" || outcome == "reset") << outcome;
  EXPECT_LT(lines, static_cast<size_t>(kRequests)) << "every reply was delivered: nothing was bounded";
  std::printf("slow reader: closed (%s) after %zu of %d replies\n", outcome.c_str(), lines, kRequests + 1);

  // And the daemon goes on serving.
  auto after = daemon_->client(project_, "after");
  auto st = after.call("stats", json::object());
  EXPECT_TRUE(st.isOk()) << st.status().toString();
  EXPECT_TRUE(daemon_->running());
  auto bad = errorLines(daemon_->log());
  EXPECT_TRUE(bad.empty()) << bad.size() << " error lines, the first: " << bad.front();
}

}  // namespace
}  // namespace memq::testing
