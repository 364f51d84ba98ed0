// memqd over its socket: every method reachable, errors per docs/protocol.md, framing, batches, hints per connection,
// notifications, concurrency, and the socket's ownership rules. A real daemon, a real socket, real SQLite files.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "daemon/embed/vector_index.h"
#include "daemon/server/listener.h"
#include "memqd_fixture.h"
#include "raw_conn.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

// How long a test waits for something memqd must do (a notification delivered, a batch committed): a bound on
// liveness, not a measure of speed, so it is generous enough for a loaded `ctest -j` under a sanitizer. How fast is
// the benchmarks' question (docs/performance.md).
constexpr auto kLivenessDeadline = std::chrono::seconds(30);

// A temp dir removed when it leaves scope, so a test that fails an ASSERT (and returns early) leaves no /tmp/mq-*
// behind.
struct ScopedTempDir {
  fs::path path;
  ~ScopedTempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("d");
    project_ = (dir_ / "proj").string();
    fs::create_directories(project_ + "/src");
    std::ofstream(project_ + "/src/jwt.ts") << "export const x = 1;\n";
    daemon_ = std::make_unique<Memqd>(dir_);
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }
  json save(RpcClient& c, const std::string& summary, json extra = json::object()) {
    json p = {{"summary", summary}};
    p.update(extra);
    auto r = c.call("memory/save", p);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r ? *r : json();
  }
  // One short-lived connection naming `tab`, as an agent hook makes: `method` (hints/for_tool reads src/jwt.ts,
  // anything else gets no params), then the connection closes.
  json onceInTab(const std::string& tab, const std::string& method = "hints/for_tool") {
    auto c = daemon_->client(project_, "hook", {{"tab", tab}});
    auto r = c.call(method, method == "hints/for_tool" ? json{{"tool", "read"}, {"files", {"src/jwt.ts"}}}
                                                       : json::object());
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r ? *r : json();
  }
  // How many of `n` new decisions (each saved through `setup` on a file of its own, named after `name`) reach `c`'s
  // hints when it reads that file: a decision, unlike a gotcha or a pref, does not slip through a spent budget.
  size_t newDecisionsShown(RpcClient& setup, RpcClient& c, const std::string& name, int n) {
    size_t shown = 0;
    for (int i = 0; i < n; ++i) {
      const std::string file = "src/" + name + std::to_string(i) + ".ts";
      save(setup, "The " + name + " " + std::to_string(i) + " file must be built before the tests run",
           {{"files", {file}}, {"category", "decision"}});
      auto h = c.call("hints/for_tool", {{"tool", "read"}, {"files", {file}}});
      EXPECT_TRUE(h.isOk()) << h.status().toString();
      if (h) shown += (*h)["hints"].size();
    }
    return shown;
  }

  fs::path dir_;
  std::string project_;
  std::unique_ptr<Memqd> daemon_;
};

TEST_F(DaemonTest, EveryMethodAnswersWithItsDocumentedResult) {
  auto c = daemon_->client(project_);
  json a = save(c, "JWT expiry uses the container clock", {{"files", {"src/jwt.ts"}}, {"category", "gotcha"}});
  json b = save(c, "Use pnpm, not npm", {{"category", "pref"}});
  expectMatchesResultSchema("memory/save", a);
  std::string id = a["id"], idB = b["id"];
  struct Step {
    std::string method;
    json params;
  } steps[] = {
      {"memory/get", {{"id", id.substr(0, 8)}}},
      {"memory/update", {{"id", id}, {"details", "fix in src/jwt.ts"}}},
      {"memory/list", json::object()},
      {"memory/search", {{"query", "container clock"}}},
      {"memory/recall", {{"query", "jwt expiry"}, {"files", {"src/jwt.ts"}}}},
      {"memory/pin", {{"id", id}}},
      {"memory/unpin", {{"id", id}}},
      {"memory/attach", {{"id", idB}, {"files", {"package.json"}}}},
      {"memory/detach", {{"id", idB}, {"files", {"package.json"}}}},
      {"memory/hide", {{"id", idB}, {"reason", "test"}}},
      {"memory/restore", {{"id", idB}}},
      {"hints/turn", json::object()},
      {"hints/for_tool", {{"tool", "read"}, {"files", {"src/jwt.ts"}}}},
      {"repo/cochange", {{"file", "src/jwt.ts"}}},
      {"repo/blast_radius", {{"file", "src/jwt.ts"}}},
      {"repo/refresh", json::object()},
      {"review/clusters", json::object()},
      {"review/stale", json::object()},
      {"review/dead", json::object()},
      {"audit/list", {{"id", id}}},
      {"export", {{"state", "all"}}},
      {"stats", json::object()},
      {"daemon/status", json::object()},
      {"subscribe", json::object()},
      // A team server that does not exist: set up offline, then removed again.
      {"team/connect", {{"conninfo", "host=" + (dir_ / "no-server").string() + " dbname=memq_team user=alice"}}},
      {"team/status", json::object()},
      {"team/disconnect", json::object()},
  };
  std::set<std::string> covered = {"initialize", "memory/save"};
  for (const auto& s : steps) {
    auto r = c.call(s.method, s.params);
    ASSERT_TRUE(r.isOk()) << s.method << ": " << r.status().toString();
    expectMatchesResultSchema(s.method, *r);
    covered.insert(s.method);
  }
  json c2 = save(c, "Tests run with vitest");
  auto sup = c.call("memory/supersede", {{"id", idB}, {"by", c2["id"]}});
  ASSERT_TRUE(sup.isOk()) << sup.status().toString();
  expectMatchesResultSchema("memory/supersede", *sup);
  auto rej = c.call("memory/reject", {{"id", c2["id"]}, {"reason", "we use jest"}});
  ASSERT_TRUE(rej.isOk()) << rej.status().toString();
  expectMatchesResultSchema("memory/reject", *rej);
  auto unrej = c.call("memory/unreject", {{"id", c2["id"]}, {"source", "user"}});
  ASSERT_TRUE(unrej.isOk()) << unrej.status().toString();
  // A memory superseded by it would point at nothing: the replacement is purged once that one is restored.
  auto refusedPurge = c.call("memory/purge", {{"id", c2["id"]}, {"confirm", true}});
  ASSERT_FALSE(refusedPurge.isOk());
  EXPECT_EQ(refusedPurge.status().code(), ErrorCode::kConflict);
  ASSERT_TRUE(c.call("memory/restore", {{"id", idB}}).isOk());
  auto purge = c.call("memory/purge", {{"id", c2["id"]}, {"confirm", true}});
  ASSERT_TRUE(purge.isOk()) << purge.status().toString();
  expectMatchesResultSchema("memory/purge", *purge);
  auto exported = c.call("export", {{"state", "all"}});
  auto imp = c.call("import", {{"jsonl", (*exported)["jsonl"]}});
  ASSERT_TRUE(imp.isOk()) << imp.status().toString();
  expectMatchesResultSchema("import", *imp);
  covered.insert({"memory/supersede", "memory/reject", "memory/unreject", "memory/purge", "import"});
  auto down = c.call("daemon/shutdown", json::object());
  ASSERT_TRUE(down.isOk());
  covered.insert("daemon/shutdown");
  EXPECT_EQ(daemon_->waitExit(), 0);
  for (const auto& m : methodSchemas()) EXPECT_TRUE(covered.count(std::string(m.method))) << m.method;
}

TEST_F(DaemonTest, ProtocolErrorsAreDefinedAndTheConnectionSurvives) {
  auto c = daemon_->client(project_);
  auto unknown = c.call("memory/forget", json::object());
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kMethodNotFound);
  auto wrongType = c.call("memory/save", {{"summary", 42}});
  ASSERT_FALSE(wrongType.isOk());
  EXPECT_EQ(wrongType.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(wrongType.status().data()["field"], "summary");
  ASSERT_TRUE(c.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n").isOk());
  auto line = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(json::parse(*line)["error"]["code"], -32700);
  EXPECT_TRUE(c.call("stats", json::object()).isOk());  // the next line is still served
  // Over the size limit: InvalidRequest, and the connection still works.
  std::string big = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/save\",\"params\":{\"summary\":\"" +
                    std::string(2 << 20, 'x') + "\"}}\n";
  ASSERT_TRUE(c.sendRaw(big).isOk());
  line = c.readRawLine(std::chrono::seconds(10));
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(json::parse(*line)["error"]["code"], -32600);
  EXPECT_TRUE(c.call("stats", json::object()).isOk());
  // Nothing was written by the rejected requests.
  auto list = c.call("memory/list", json::object());
  EXPECT_EQ((*list)["total"], 0);
}

TEST_F(DaemonTest, ABatchMixingGoodAndBadRequestsAnswersEach) {
  auto c = daemon_->client(project_);
  std::string batch =
      R"([{"jsonrpc":"2.0","id":1,"method":"memory/save","params":{"summary":"batch one"}},)"
      R"({"jsonrpc":"2.0","id":2,"method":"nope"},)"
      R"({"jsonrpc":"2.0","id":3,"method":"memory/save","params":{"summary":""}},)"
      R"({"jsonrpc":"2.0","method":"hints/turn"},)"
      R"({"foo":"bar"},)"
      R"({"jsonrpc":"2.0","id":"s","method":"stats"}])"
      "\n";
  ASSERT_TRUE(c.sendRaw(batch).isOk());
  auto line = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(line.isOk());
  json replies = json::parse(*line);
  ASSERT_TRUE(replies.is_array());
  ASSERT_EQ(replies.size(), 5u);  // the notification gets no reply
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_TRUE(replies[0].contains("result"));
  EXPECT_EQ(replies[1]["error"]["code"], -32601);
  EXPECT_EQ(replies[2]["error"]["code"], -32602);
  EXPECT_EQ(replies[3]["error"]["code"], -32600);
  EXPECT_EQ(replies[4]["id"], "s");
}

TEST_F(DaemonTest, SavesLeftInABatchAreCommittedWithNoFurtherRequest) {
  auto c = daemon_->connect();
  auto init = c.call("initialize", {{"client_name", "batcher"}, {"project_root", project_}});
  ASSERT_TRUE(init.isOk()) << init.status().toString();
  const std::string dbPath = (*init)["project"]["db_path"].get<std::string>();
  // Six saves in one message run back to back: all but the first share a batch that the replies do not wait for.
  std::string batch = "[";
  for (int i = 0; i < 6; ++i) {
    batch += std::string(i ? "," : "") + R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
             R"(,"method":"memory/save","params":{"summary":"batched over the socket )" + std::to_string(i) + R"("}})";
  }
  ASSERT_TRUE(c.sendRaw(batch + "]\n").isOk());
  auto line = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(line.isOk()) << line.status().toString();
  json replies = json::parse(*line);
  ASSERT_EQ(replies.size(), 6u);
  for (const auto& r : replies) ASSERT_TRUE(r.contains("result")) << r.dump();
  // Nothing else is sent: memqd's own timers commit the batch (the save-commit timer, else the checkpoint every 3 s),
  // which another connection to the file then sees. The deadline is liveness only: a batch that nothing commits stays
  // invisible to other readers however long they wait; how soon it commits is the benchmarks' to measure.
  int64_t committed = 0;
  const auto deadline = std::chrono::steady_clock::now() + kLivenessDeadline;
  while (committed < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    SQLite::Database db(dbPath, SQLite::OPEN_READONLY);
    committed = db.execAndGet("SELECT COUNT(*) FROM memories").getInt64();
  }
  EXPECT_EQ(committed, 6) << "saves acknowledged but never committed without a further request";
}

TEST_F(DaemonTest, ContentLengthFramingIsAnsweredInKind) {
  auto c = daemon_->connect();
  std::string body = R"({"jsonrpc":"2.0","id":9,"method":"daemon/status"})";
  ASSERT_TRUE(c.sendRaw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body).isOk());
  auto header = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(header.isOk());
  EXPECT_EQ(header->rfind("Content-Length: ", 0), 0u) << *header;
}

TEST_F(DaemonTest, HintStateIsPerConnectionAndSubagentsInherit) {
  auto setup = daemon_->client(project_);
  save(setup, "The JWT clock skew is 30 s", {{"files", {"src/jwt.ts"}}, {"category", "gotcha"}});
  json note = save(setup, "Token refresh lives in jwt.ts", {{"files", {"src/jwt.ts"}}, {"category", "context"}});
  auto tabA = daemon_->client(project_, "tab-a");
  std::string tokenA = daemon_->lastSession();
  auto tabB = daemon_->client(project_, "tab-b");
  json read = {{"tool", "read"}, {"files", {"src/jwt.ts"}}};
  auto a1 = tabA.call("hints/for_tool", read);
  ASSERT_TRUE(a1.isOk()) << a1.status().toString();
  ASSERT_EQ((*a1)["hints"].size(), 1u);  // the gotcha is loud; the context note waits as "+1 more"
  EXPECT_EQ((*a1)["more"], 1);
  // A subagent of tab A starts from what A has seen so far: the gotcha (not pinned, not pref) does not come back, the
  // context note A has not been shown yet does (a subagent started after A's next read would inherit it too).
  auto sub = daemon_->client(project_, "sub", {{"parent", tokenA}});
  auto s1 = sub.call("hints/for_tool", read);
  ASSERT_TRUE(s1.isOk()) << s1.status().toString();
  for (const auto& h : (*s1)["hints"]) EXPECT_NE(h["label"], "gotcha");
  ASSERT_EQ((*s1)["hints"].size(), 1u);
  EXPECT_EQ((*s1)["hints"][0]["id"], note["id"]);
  auto a2 = tabA.call("hints/for_tool", read);
  ASSERT_EQ((*a2)["hints"].size(), 1u);  // the gotcha was surfaced this turn; the quiet note gets its turn
  EXPECT_EQ((*a2)["hints"][0]["label"], "");
  auto a2b = tabA.call("hints/for_tool", read);
  EXPECT_TRUE((*a2b)["hints"].empty());  // both already surfaced this turn on this tab
  auto b1 = tabB.call("hints/for_tool", read);
  EXPECT_EQ((*b1)["hints"].size(), 1u);  // another tab has its own state
  // Cooldown counts real turns: not back after one turn, back after more than 10.
  tabA.call("hints/turn", json::object());
  auto a3 = tabA.call("hints/for_tool", read);
  for (const auto& h : (*a3)["hints"]) EXPECT_NE(h["label"], "gotcha");
  for (int i = 0; i < 11; ++i) tabA.call("hints/turn", json::object());
  auto a4 = tabA.call("hints/for_tool", read);
  ASSERT_FALSE((*a4)["hints"].empty());
  EXPECT_EQ((*a4)["hints"][0]["label"], "gotcha");
}

TEST_F(DaemonTest, ConnectionsNamingOneTabShareItsHintStateAfterEachCloses) {
  // Agent hooks connect once per tool call: with `tab`, what one connection surfaced is known to the next.
  auto setup = daemon_->client(project_);
  save(setup, "The JWT clock skew is 30 s", {{"files", {"src/jwt.ts"}}, {"category", "gotcha"}});
  json read = {{"tool", "read"}, {"files", {"src/jwt.ts"}}};
  EXPECT_EQ(onceInTab("session-1")["hints"].size(), 1u);
  EXPECT_TRUE(onceInTab("session-1")["hints"].empty());  // surfaced this turn by an earlier connection of the tab
  EXPECT_EQ(onceInTab("session-2")["hints"].size(), 1u);  // another tab
  EXPECT_EQ(onceInTab("session-1", "hints/turn")["turn"], 1);
  EXPECT_TRUE(onceInTab("session-1")["hints"].empty());  // in its 10-turn cooldown
  for (int i = 0; i < 10; ++i) onceInTab("session-1", "hints/turn");
  auto back = onceInTab("session-1");
  ASSERT_EQ(back["hints"].size(), 1u);
  EXPECT_EQ(back["hints"][0]["label"], "gotcha");
  // A connection without a tab keeps its own state, as before.
  auto plain = daemon_->client(project_, "plain");
  auto p1 = plain.call("hints/for_tool", read);
  ASSERT_TRUE(p1.isOk());
  EXPECT_EQ((*p1)["hints"].size(), 1u);
}

TEST_F(DaemonTest, ASubagentNamingItsParentsTabGetsItsOwnSubagentState) {
  auto setup = daemon_->client(project_);
  save(setup, "Use pnpm, not npm", {{"files", {"src/pkg.json"}}, {"category", "pref"}});
  json read = {{"tool", "read"}, {"files", {"src/pkg.json"}}};
  auto parent = daemon_->client(project_, "hook", {{"tab", "session-9"}});
  const std::string parentToken = daemon_->lastSession();
  auto p1 = parent.call("hints/for_tool", read);
  ASSERT_TRUE(p1.isOk()) << p1.status().toString();
  ASSERT_EQ((*p1)["hints"].size(), 1u);
  // Same tab, as a subagent: a pref still reaches a subagent once, so it is not the parent's state it reads.
  auto sub = daemon_->client(project_, "hook", {{"tab", "session-9"}, {"parent", parentToken}});
  auto s1 = sub.call("hints/for_tool", read);
  ASSERT_TRUE(s1.isOk()) << s1.status().toString();
  EXPECT_EQ((*s1)["hints"].size(), 1u) << s1->dump();
  // And the parent's tab was not turned into a subagent's: it still knows it showed the pref this turn, and it
  // keeps the parent's budget (60), not a subagent's (10, one of it spent above): twelve new decisions all show (a
  // decision, unlike a gotcha or a pref, does not slip through a spent budget).
  auto again = daemon_->client(project_, "hook", {{"tab", "session-9"}});
  auto a1 = again.call("hints/for_tool", read);
  ASSERT_TRUE(a1.isOk());
  EXPECT_TRUE((*a1)["hints"].empty()) << a1->dump();
  EXPECT_EQ(newDecisionsShown(setup, again, "module", 12), 12u);
}

// A connection that was a subagent and initializes again as a plain one gets a plain connection's state: the
// parent's budget (60), not the subagent's (10): twelve new decisions all show.
TEST_F(DaemonTest, ASubagentInitializedAgainWithoutAParentLeavesTheSubagentsState) {
  auto setup = daemon_->client(project_);
  auto parent = daemon_->client(project_, "hook", {{"tab", "session-3"}});
  const std::string parentToken = daemon_->lastSession();
  auto c = daemon_->client(project_, "agent", {{"parent", parentToken}});
  ASSERT_TRUE(c.call("initialize", {{"client_name", "agent"}, {"project_root", project_}}).isOk());
  EXPECT_EQ(newDecisionsShown(setup, c, "part", 12), 12u);
}

TEST_F(DaemonTest, RetainedTabsAreBoundedAndAKeptTabIsNeverEvictedToMakeRoomForItself) {
  constexpr int kMaxRetainedTabs = 4096;  // daemon/service/service.h
  auto setup = daemon_->client(project_);
  save(setup, "The JWT clock skew is 30 s", {{"files", {"src/jwt.ts"}}, {"category", "gotcha"}});
  EXPECT_EQ(onceInTab("target")["hints"].size(), 1u);
  EXPECT_EQ(onceInTab("early")["hints"].size(), 1u);
  // A tab's idle time counts from when memqd sees its connection close, which a loaded machine may delay past the
  // next connections: wait until only `setup` and this one are left, so "early" is idle longer than every flood tab.
  auto watcher = daemon_->connect();
  for (int i = 0; i < 2000; ++i) {
    auto status = watcher.call("daemon/status", json::object());
    ASSERT_TRUE(status.isOk()) << status.status().toString();
    if ((*status)["connections"] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 2; i < kMaxRetainedTabs; ++i) daemon_->client(project_, "hook", {{"tab", "flood-" + std::to_string(i)}});
  // Every slot is taken by an idle tab, "target" the longest idle; coming back to it keeps its state (it is not the
  // one evicted to make room for itself).
  EXPECT_TRUE(onceInTab("target")["hints"].empty());
  // A new tab makes room by forgetting the longest idle one: "early" starts over, "target" (just used) does not.
  onceInTab("late", "hints/turn");
  EXPECT_EQ(onceInTab("early")["hints"].size(), 1u);
  EXPECT_TRUE(onceInTab("target")["hints"].empty());
}

TEST_F(DaemonTest, AnInvalidTabIsRefusedNamingTheField) {
  for (const json& tab : {json(""), json(std::string(257, 't')), json(42)}) {
    auto c = daemon_->connect();
    auto r = c.call("initialize", {{"client_name", "hook"}, {"tab", tab}});
    ASSERT_FALSE(r.isOk()) << tab.dump();
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
    EXPECT_NE(r.status().message().find("tab"), std::string::npos) << r.status().message();
    // Nothing changed: the connection is still uninitialised.
    EXPECT_EQ(c.call("hints/turn", json::object()).status().code(), ErrorCode::kNotInitialized);
  }
}

TEST_F(DaemonTest, HintsNeedInitialize) {
  auto c = daemon_->connect();
  auto r = c.call("hints/turn", json::object());
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotInitialized);
}

TEST_F(DaemonTest, AWriteOnAnotherConnectionReachesASubscriberAsACreateNotification) {
  auto listener = daemon_->client(project_, "listener");
  ASSERT_TRUE(listener.call("subscribe", json::object()).isOk());
  auto writer = daemon_->client(project_, "writer");
  json saved = save(writer, "Notifications reach subscribers");
  auto msg = listener.readMessage(kLivenessDeadline);
  ASSERT_TRUE(msg.isOk()) << "no notification of the save: " << msg.status().toString();
  EXPECT_EQ((*msg)["method"], "memory/changed");
  EXPECT_EQ((*msg)["params"]["id"], saved["id"]);
  EXPECT_EQ((*msg)["params"]["action"], "create");
}

TEST_F(DaemonTest, ASubscribedWriterSeesItsChangeNotificationBeforeTheReply) {
  // Replies may be written by the worker that made them; a change's notification must still come first.
  auto writer = daemon_->client(project_, "writer");
  ASSERT_TRUE(writer.call("subscribe", json::object()).isOk());
  for (int i = 0; i < 20; ++i) {
    json request = {{"jsonrpc", "2.0"}, {"id", 1000 + i}, {"method", "memory/save"},
                    {"params", {{"summary", "Ordered notification " + std::to_string(i)}}}};
    ASSERT_TRUE(writer.sendRaw(request.dump() + "\n").isOk());
    auto first = writer.readMessage(std::chrono::seconds(5));
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    EXPECT_EQ((*first)["method"], "memory/changed") << first->dump();
    auto second = writer.readMessage(std::chrono::seconds(5));
    ASSERT_TRUE(second.isOk()) << second.status().toString();
    EXPECT_EQ((*second)["id"], 1000 + i) << second->dump();
    EXPECT_EQ((*first)["params"]["id"], (*second)["result"]["id"]);
  }
}

TEST_F(DaemonTest, ThirtyTwoClientsDoingMixedWorkLoseNothing) {
  constexpr int kClients = 32, kCalls = 500;
  std::atomic<int> errors{0};
  std::vector<std::vector<std::string>> saved(kClients);
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      auto c = RpcClient::connect(daemon_->socket(), std::chrono::seconds(5));
      if (!c) {
        errors += kCalls;
        return;
      }
      c->call("initialize", {{"client_name", "load"}, {"project_root", project_}});
      for (int i = 0; i < kCalls; ++i) {
        Result<json> r = Status::internal("unset");
        switch (i % 3) {
          case 0:
            r = c->call("memory/save", {{"summary", "load note t" + std::to_string(t) + "n" + std::to_string(i)}});
            if (r) saved[t].push_back((*r)["id"]);
            break;
          case 1:
            // A query naming one earlier note: the concurrency is the point here, not full-text scoring of every row.
            r = c->call("memory/recall", {{"query", "t" + std::to_string(t) + "n" + std::to_string(i - 1)}});
            break;
          case 2:
            r = saved[t].empty() ? c->call("stats", json::object()) : c->call("memory/get", {{"id", saved[t].back()}});
            break;
        }
        if (!r) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  auto c = daemon_->client(project_);
  auto list = c.call("memory/list", {{"limit", 1}});
  int expected = 0;
  for (const auto& s : saved) expected += static_cast<int>(s.size());
  EXPECT_EQ(expected, kClients * ((kCalls + 2) / 3));
  EXPECT_EQ((*list)["total"], expected);
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameSocketExitsNamingTheFirst) {
  auto r = runCommand("'" + binDir() + "/memqd' --foreground --socket '" + daemon_->socket() + "' --data-dir '" +
                      (dir_ / "data2").string() + "'");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("already serving"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(daemon_->pid())), std::string::npos) << r.err;
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameProjectReadsItAndWritesOnceTheFirstLetsGo) {
  // Another memqd, on its own socket and data dir, serving the same project (two users' setups sharing a
  // checkout, a test harness): one process writes the project's database at a time.
  auto first = daemon_->client(project_);
  const std::string savedId = save(first, "Saved through the first daemon")["id"].get<std::string>();
  Memqd other(dir_ / "other");
  fs::create_directories(dir_ / "other");
  ASSERT_TRUE(other.start()) << other.log();
  auto second = other.client(project_);
  auto read = second.call("memory/get", {{"id", savedId}});
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ((*read)["summary"], "Saved through the first daemon");

  EXPECT_NE(other.log().find("its save journal is locked"), std::string::npos) << other.log();  // said at open
  const std::string projectDb = fs::canonical(project_).string() + "/.memq/memory.db";
  auto readOnly = [](RpcClient& c) {
    auto status = c.call("daemon/status", json::object());
    EXPECT_TRUE(status.isOk()) << status.status().toString();
    return status.isOk() ? (*status)["read_only_scopes"] : json();
  };
  EXPECT_EQ(readOnly(second), json::array({projectDb}));
  EXPECT_EQ(readOnly(first), json::array());
  auto shown = other.memq("status", project_);
  EXPECT_EQ(shown.exitCode, 0) << shown.err;
  EXPECT_NE(shown.out.find("read only: " + projectDb), std::string::npos) << shown.out;
  // What the first commits after the second opened the database, the second reads, by text and by embedding.
  const std::string laterId = save(first, "Hedgehogs hibernate under the compost heap")["id"].get<std::string>();
  auto found = second.call("memory/recall", {{"query", "hedgehogs hibernate compost"}, {"limit", 3}});
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_FALSE((*found)["memories"].empty()) << found->dump();
  const json& hit = (*found)["memories"][0];
  EXPECT_EQ(hit["id"], laterId) << found->dump();
  EXPECT_NE(std::find(hit["signals"].begin(), hit["signals"].end(), "semantic"), hit["signals"].end()) << hit.dump();

  auto refused = second.call("memory/save", {{"summary", "Saved through the second daemon"}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kScopeUnavailable) << refused.status().toString();
  EXPECT_NE(refused.status().message().find("another process"), std::string::npos) << refused.status().message();
  auto cli = other.memq("save 'Saved through the second daemon by the CLI'", project_);
  EXPECT_EQ(cli.exitCode, 1) << cli.out << cli.err;
  EXPECT_NE(cli.err.find("another process"), std::string::npos) << cli.err;
  // The global scope is the second daemon's own (its data dir): it writes there.
  EXPECT_TRUE(second.call("memory/save", {{"summary", "A global note of the second daemon"}, {"scope", "global"}})
                  .isOk());
  // Nothing of the refused saves reached the project: the first daemon lists its two memories.
  auto listed = first.call("memory/list", json::object());
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ((*listed)["memories"].size(), 2u) << listed->dump();

  // Once the first daemon has exited (closing the database), the second writes the project.
  daemon_->stop();
  auto written = second.call("memory/save", {{"summary", "Saved through the second daemon"}});
  ASSERT_TRUE(written.isOk()) << written.status().toString();
  EXPECT_EQ((*written)["status"], "created");
  EXPECT_EQ(readOnly(second), json::array());  // taken over
  auto again = second.call("memory/get", {{"id", (*written)["id"]}});
  EXPECT_TRUE(again.isOk()) << again.status().toString();
}

TEST(MemqdFlags, AnUnknownLogLevelIsAUsageErrorNamingTheOption) {
  const ScopedTempDir scoped{makeTempDir("lvl")};
  const fs::path& dir = scoped.path;
  const std::string socket = (dir / "memqd.sock").string();
  auto r = runCommand("'" + binDir() + "/memqd' --foreground --log-level nonsense --socket '" + socket +
                      "' --data-dir '" + (dir / "data").string() + "'");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--log-level"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nonsense"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(socket));
  // "off" is a real level (the one unknown names used to fall to), and spdlog's short names are accepted.
  for (const char* level : {"off", "warn"}) {
    auto ok = runCommand("'" + binDir() + "/memqd' --log-level " + level + " --foreground --socket '" + socket +
                         "' --data-dir '" + (dir / "data").string() + "' --idle-exit 1");
    EXPECT_EQ(ok.exitCode, 0) << level << ": " << ok.err;
  }
}

TEST_F(DaemonTest, AStaleSocketFileIsReplaced) {
  daemon_->kill9();  // leaves the socket file behind, with nobody listening
  ASSERT_TRUE(fs::exists(daemon_->socket()));
  Memqd again(dir_);
  ASSERT_TRUE(again.start()) << again.log();
  auto c = again.connect();
  EXPECT_TRUE(c.call("daemon/status", json::object()).isOk());
}

TEST_F(DaemonTest, SocketAndDirectoryArePrivate) {
  struct stat st{};
  ASSERT_EQ(::stat(daemon_->socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A directory memqd creates for its socket is private. (One that already exists keeps its mode, as the test's
  // own directory does: HostileServerTest.)
  Memqd fresh(dir_ / "fresh");
  ASSERT_TRUE(fresh.start()) << fresh.log();
  ASSERT_EQ(::stat(fs::path(fresh.socket()).parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
}

TEST(PeerCheck, OnlyTheDaemonsOwnUidIsAllowed) {
  std::string why;
  EXPECT_TRUE(peerAllowed(1000, 1000, &why));
  EXPECT_FALSE(peerAllowed(1001, 1000, &why));
  EXPECT_NE(why.find("1001"), std::string::npos);
  EXPECT_FALSE(peerAllowed(-1, 1000, &why));
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  EXPECT_EQ(peerUid(fds[0]), static_cast<long>(::geteuid()));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(DaemonTest, AClientThatHalfClosesGetsItsReplyAndTheDaemonLives) {
  // What `printf '...' | socat - UNIX-CONNECT:sock` does: send, then shut down the write side at once.
  for (int i = 0; i < 20; ++i) {
    auto c = daemon_->connect();
    ASSERT_TRUE(c.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon/status\"}\n"
                          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}\n")
                    .isOk());
    ASSERT_TRUE(c.closeWrite().isOk());
    auto first = c.readRawLine(std::chrono::seconds(5));
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    EXPECT_EQ(json::parse(*first)["id"], 1);
    auto second = c.readRawLine(std::chrono::seconds(5));
    ASSERT_TRUE(second.isOk()) << second.status().toString();
    EXPECT_EQ(json::parse(*second)["id"], 2);
  }
  EXPECT_TRUE(daemon_->running());
}

TEST_F(DaemonTest, RequestsPipelinedBehindAShutdownAreAnsweredBusyAndRunNothing) {
  std::string id;
  {
    auto c = daemon_->client(project_);
    id = save(c, "A memory a request after the shutdown tries to purge")["id"].get<std::string>();
  }
  auto c = daemon_->connect();
  const json shutdown = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "daemon/shutdown"}};
  const json purge = {{"jsonrpc", "2.0"},
                      {"id", 2},
                      {"method", "memory/purge"},
                      {"params", {{"id", id}, {"confirm", true}, {"project_root", project_}}}};
  // Notifications behind it (one, and a batch of them) run nothing and, as every notification, get no reply: the
  // purge's Busy is the next line.
  const json statsNote = {{"jsonrpc", "2.0"}, {"method", "stats"}};
  const json notes = json::array({statsNote, statsNote});
  ASSERT_TRUE(
      c.sendRaw(shutdown.dump() + "\n" + statsNote.dump() + "\n" + notes.dump() + "\n" + purge.dump() + "\n").isOk());
  auto first = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_TRUE(json::parse(*first).contains("result")) << *first;
  auto second = c.readRawLine(std::chrono::seconds(5));
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  const json refused = json::parse(*second);
  EXPECT_EQ(refused["id"], 2);
  EXPECT_EQ(refused["error"]["code"], static_cast<int>(ErrorCode::kBusy)) << *second;
  EXPECT_EQ(daemon_->waitExit(), 0) << daemon_->log();

  daemon_ = std::make_unique<Memqd>(dir_);
  ASSERT_TRUE(daemon_->start()) << daemon_->log();
  auto after = daemon_->client(project_);
  auto kept = after.call("memory/get", {{"id", id}});
  EXPECT_TRUE(kept.isOk()) << "the purge sent after the shutdown ran: " << kept.status().toString();
}

// The I/O thread answers only quick methods itself; a message that merely looks like one (its method key written
// with an escape, a quick method named inside params, a batch) goes to a worker like any other.
TEST_F(DaemonTest, OnlyAQuickCallItselfIsAnsweredOnTheIoThread) {
  auto c = daemon_->client(project_);
  auto inlineCount = [&] {
    auto s = c.call("daemon/status", json::object());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s ? (*s)["messages_answered_inline"].template get<uint64_t>() : uint64_t{0};
  };
  const std::vector<std::string> disguised = {
      R"({"jsonrpc":"2.0","id":1,"m\u0065thod":"review/clusters","x":{"method":"memory/get"}})",
      R"({"jsonrpc":"2.0","id":1,"params":{"method":"memory/get"},"method":"review/clusters"})",
      R"([{"jsonrpc":"2.0","id":1,"method":"memory/get","params":{"id":"abcd"}},{"jsonrpc":"2.0","id":2,"method":"review/clusters"}])",
  };
  // Each status call counts itself when it is answered inline, which a housekeeping job running at that moment
  // prevents: so a disguised message answered inline shows as a step of 2 between two status calls, and a plain
  // quick call as one, at least once in a few tries.
  for (const auto& message : disguised) {
    SCOPED_TRACE(message);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const uint64_t before = inlineCount();
      ASSERT_TRUE(c.sendRaw(message + "\n").isOk());
      auto reply = c.readRawLine(std::chrono::seconds(10));
      ASSERT_TRUE(reply.isOk()) << reply.status().toString();
      EXPECT_LE(inlineCount(), before + 1) << "the disguised message was answered on the I/O thread";
    }
  }
  bool quickInline = false;
  for (int attempt = 0; attempt < 10 && !quickInline; ++attempt) {
    const uint64_t before = inlineCount();
    ASSERT_TRUE(c.call("memory/search", {{"query", "anything"}}).isOk());
    quickInline = inlineCount() == before + 2;
  }
  EXPECT_TRUE(quickInline) << "a plain memory/search was never answered on the I/O thread";

  // A quick method's request is answered there only while it is short: a recall of a long query (its parse and its
  // work grow with it) goes to a worker, so that other connections do not wait for it. Its scope is open, as the
  // short recall answered inline shows, so only its length sends it there.
  bool shortRecallInline = false;
  for (int attempt = 0; attempt < 10 && !shortRecallInline; ++attempt) {
    const uint64_t before = inlineCount();
    ASSERT_TRUE(c.call("memory/recall", {{"query", "how are migrations run"}}).isOk());
    shortRecallInline = inlineCount() == before + 2;
  }
  ASSERT_TRUE(shortRecallInline) << "a short memory/recall was never answered on the I/O thread";
  std::string longQuery;
  while (longQuery.size() < (size_t{64} << 10)) longQuery += "how are migrations run ";  // 4 x the inline bound
  for (int attempt = 0; attempt < 3; ++attempt) {
    const uint64_t before = inlineCount();
    auto recalled = c.call("memory/recall", {{"query", longQuery}});
    ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
    EXPECT_LE(inlineCount(), before + 1) << "a recall of a " << longQuery.size() << "-byte query was answered on the "
                                         << "I/O thread";
  }
}

TEST_F(DaemonTest, RestoreRecordsItsReasonInTheJournalAsHideDoes) {
  auto c = daemon_->client(project_);
  std::string id = save(c, "Restored memories say why")["id"];
  ASSERT_TRUE(c.call("memory/hide", {{"id", id}, {"reason", "looked outdated"}}).isOk());
  ASSERT_TRUE(c.call("memory/restore", {{"id", id}, {"reason", "still true after the migration"}}).isOk());
  auto audit = c.call("audit/list", {{"id", id}});
  ASSERT_TRUE(audit.isOk()) << audit.status().toString();
  std::map<std::string, json> byAction;
  for (const auto& e : (*audit)["events"]) byAction[e["action"]] = e["detail"];
  EXPECT_EQ(byAction["hide"]["reason"], "looked outdated");
  EXPECT_EQ(byAction["restore"]["reason"], "still true after the migration") << audit->dump();
}

TEST_F(DaemonTest, AuditSinceKeepsEventsAtOrAfterTheTime) {
  auto c = daemon_->client(project_);
  std::string first = save(c, "The first journal entry")["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the journal stamps milliseconds
  std::string second = save(c, "The second journal entry")["id"];
  auto all = c.call("audit/list", {{"scope", "project"}});
  ASSERT_TRUE(all.isOk());
  ASSERT_EQ((*all)["events"].size(), 2u);
  const std::string firstAt = (*all)["events"][0]["at"], secondAt = (*all)["events"][1]["at"];
  ASSERT_LT(firstAt, secondAt);
  auto idsSince = [&](const std::string& since) {
    std::vector<std::string> ids;
    auto r = c.call("audit/list", {{"scope", "project"}, {"since", since}});
    EXPECT_TRUE(r.isOk()) << since << ": " << r.status().toString();
    if (r) {
      for (const auto& e : (*r)["events"]) ids.push_back(e["memory_id"]);
    }
    return ids;
  };
  EXPECT_EQ(idsSince(secondAt), std::vector<std::string>{second});  // at or after: the event at that instant counts
  EXPECT_EQ(idsSince(firstAt), (std::vector<std::string>{first, second}));
  EXPECT_EQ(idsSince(firstAt.substr(0, 10)), (std::vector<std::string>{first, second}));  // a date: from midnight UTC
  EXPECT_TRUE(idsSince("2999-01-01T00:00:00Z").empty());
  // The same instant written with an offset: 23:00 on the previous day at -01:00 is midnight UTC.
  EXPECT_TRUE(idsSince("2999-01-01T23:00:00-01:00").empty());
  EXPECT_EQ(idsSince("2000-01-01T01:00:00+01:00").size(), 2u);
  for (const char* bad : {"yesterday", "2026-02-31", "2026-11-29T25:00", "2026-11-29T10:00:00+5"}) {
    auto r = c.call("audit/list", {{"since", bad}});
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << bad;
    EXPECT_EQ(r.status().data()["field"], "since") << bad;
  }
  // The CLI sends --since.
  auto cli = daemon_->memq("--json --project " + shellQuote(project_) + " audit --since " + secondAt);
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  json printed = json::parse(cli.out);
  ASSERT_EQ(printed["events"].size(), 1u) << cli.out;
  EXPECT_EQ(printed["events"][0]["memory_id"], second);
}

TEST_F(DaemonTest, UpdateReportsTheRedactionsAndTruncationsOfItsNewText) {
  auto c = daemon_->client(project_);
  std::string id = save(c, "The staging database login")["id"];
  auto clean = c.call("memory/update", {{"id", id}, {"details", "ask the platform team"}});
  ASSERT_TRUE(clean.isOk()) << clean.status().toString();
  expectMatchesResultSchema("memory/update", *clean);
  EXPECT_EQ((*clean)["redactions"], json::array());
  EXPECT_EQ((*clean)["warnings"], json::array());
  // Text cut on the way in is said, as a save says it.
  auto longer = c.call("memory/update", {{"id", id}, {"summary", std::string(260, 'x')}});
  ASSERT_TRUE(longer.isOk()) << longer.status().toString();
  expectMatchesResultSchema("memory/update", *longer);
  ASSERT_EQ((*longer)["warnings"].size(), 1u) << longer->dump();
  EXPECT_NE((*longer)["warnings"][0].get<std::string>().find("summary"), std::string::npos) << longer->dump();
  EXPECT_LT((*longer)["summary"].get<std::string>().size(), 260u);
  auto secret = c.call("memory/update", {{"id", id}, {"details", "password: Tr0ub4dor&3xQz81"}});
  ASSERT_TRUE(secret.isOk()) << secret.status().toString();
  expectMatchesResultSchema("memory/update", *secret);
  EXPECT_EQ((*secret)["redactions"], json::array({{{"kind", "password"}, {"field", "details"}}})) << secret->dump();
  EXPECT_EQ((*secret)["details"].get<std::string>().find("Tr0ub4dor"), std::string::npos);
}

TEST_F(DaemonTest, APerRequestWriteScopeNarrowsTheConnectionsAndNeverWidensIt) {
  auto c = daemon_->client(project_);  // write_scope project (the default)
  std::string id = save(c, "Narrowed writes leave this alone")["id"];
  auto total = [&](const std::string& scope) {
    auto r = c.call("memory/list", {{"scope", scope}, {"state", "all"}});
    return r ? (*r)["total"].get<int>() : -1;
  };
  // none: every write of the request is refused and nothing changes.
  auto noneSave = c.call("memory/save", {{"summary", "must not be written"}, {"write_scope", "none"}});
  ASSERT_FALSE(noneSave.isOk());
  EXPECT_EQ(noneSave.status().code(), ErrorCode::kScopeUnavailable);
  auto noneHide = c.call("memory/hide", {{"id", id}, {"write_scope", "none"}});
  ASSERT_FALSE(noneHide.isOk());
  EXPECT_EQ(noneHide.status().code(), ErrorCode::kScopeUnavailable);
  auto noneImport = c.call("import", {{"jsonl", "{\"summary\":\"imported\"}\n"}, {"write_scope", "none"}});
  EXPECT_EQ(noneImport.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ((*c.call("memory/get", {{"id", id}}))["state"], "active");
  // Wider or different than the connection's: ScopeUnavailable naming write_scope.
  auto wider = c.call("memory/save", {{"summary", "must not reach global"}, {"write_scope", "global"}});
  ASSERT_FALSE(wider.isOk());
  EXPECT_EQ(wider.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(wider.status().data()["field"], "write_scope");
  EXPECT_EQ(total("project"), 1);
  EXPECT_EQ(total("global"), 0);
  // The same value is honoured, and a `scope` contradicting it is refused.
  auto same = c.call("memory/save", {{"summary", "written to the project"}, {"write_scope", "project"}});
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ((*same)["scope"], "project");
  auto contradicted =
      c.call("memory/save", {{"summary", "contradiction"}, {"write_scope", "project"}, {"scope", "global"}});
  ASSERT_FALSE(contradicted.isOk());
  EXPECT_EQ(contradicted.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(contradicted.status().data()["field"], "scope");
  EXPECT_EQ(total("global"), 0);
  // A global-writing connection narrowed per request: its saves land in global.
  auto g = daemon_->client(project_, "global-writer", {{"write_scope", "global"}});
  auto toGlobal = g.call("memory/save", {{"summary", "a global preference"}, {"write_scope", "global"}});
  ASSERT_TRUE(toGlobal.isOk()) << toGlobal.status().toString();
  EXPECT_EQ((*toGlobal)["scope"], "global");
  auto moved = g.call("memory/save", {{"summary", "not to the project"}, {"write_scope", "project"}});
  EXPECT_EQ(moved.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(total("project"), 2);
  EXPECT_EQ(total("global"), 1);
}

TEST_F(DaemonTest, GetFindsAFullIdInEitherScopeAndStillResolvesPrefixes) {
  auto c = daemon_->client(project_);
  std::string inProject = save(c, "A project memory for get")["id"];
  std::string inGlobal = save(c, "A global memory for get", {{"scope", "global"}})["id"];
  auto project = c.call("memory/get", {{"id", inProject}});
  ASSERT_TRUE(project.isOk()) << project.status().toString();
  EXPECT_EQ((*project)["id"], inProject);
  EXPECT_EQ((*project)["scope"], "project");
  auto global = c.call("memory/get", {{"id", inGlobal}});
  ASSERT_TRUE(global.isOk()) << global.status().toString();
  EXPECT_EQ((*global)["id"], inGlobal);
  EXPECT_EQ((*global)["scope"], "global");
  // The request's `scope` limits where a full id is looked for.
  auto elsewhere = c.call("memory/get", {{"id", inProject}, {"scope", "global"}});
  ASSERT_FALSE(elsewhere.isOk());
  EXPECT_EQ(elsewhere.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(elsewhere.status().data()["field"], "id");
  auto prefix = c.call("memory/get", {{"id", inGlobal.substr(0, 8)}});
  ASSERT_TRUE(prefix.isOk()) << prefix.status().toString();
  EXPECT_EQ((*prefix)["id"], inGlobal);
  auto unknown = c.call("memory/get", {{"id", "00000000-0000-4000-8000-000000000000"}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(unknown.status().data()["field"], "id");
  auto empty = c.call("memory/get", {{"id", ""}});
  ASSERT_FALSE(empty.isOk());
  EXPECT_EQ(empty.status().data()["field"], "id");
}

TEST_F(DaemonTest, PipelinedRequestsAreAllAnsweredInOrder) {
  // Requests sent back to back without waiting: some arrive in one read behind the one being handled, some while
  // it is being handled, some split across writes. Every one is answered, in order, and none waits for more input.
  auto c = daemon_->client(project_);
  std::string id = save(c, "Pipelined gets read this")["id"];
  for (int round = 0; round < 20; ++round) {
    std::string burst;
    const int count = 1 + round * 3;
    for (int i = 0; i < count; ++i) {
      json request = {{"jsonrpc", "2.0"}, {"id", i}, {"method", i % 3 == 2 ? "stats" : "memory/get"}};
      if (i % 3 != 2) request["params"] = {{"id", id}};
      burst += request.dump() + "\n";
    }
    // The burst's last request is split across two writes.
    const size_t cut = burst.size() - 10;
    ASSERT_TRUE(c.sendRaw(burst.substr(0, cut)).isOk());
    if (round % 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(c.sendRaw(burst.substr(cut)).isOk());
    for (int i = 0; i < count; ++i) {
      auto line = c.readRawLine(std::chrono::seconds(5));
      ASSERT_TRUE(line.isOk()) << "round " << round << ", reply " << i << ": " << line.status().toString();
      json reply = json::parse(*line);
      EXPECT_EQ(reply["id"], i);
      EXPECT_TRUE(reply.contains("result")) << *line;
    }
  }
}

TEST_F(DaemonTest, ALoneClientsQuickRequestsAreAnsweredOnTheIoThreadAndOthersOnAWorker) {
  // daemon/status counts the messages answered without a worker hand-off: quick methods while nothing else runs.
  auto c = daemon_->client(project_);
  std::string id = save(c, "Answered where it was read")["id"];
  auto answeredInline = [&] {
    auto st = c.call("daemon/status", json::object());
    EXPECT_TRUE(st.isOk()) << st.status().toString();
    return st.isOk() ? (*st)["messages_answered_inline"].get<int64_t>() : -1;
  };
  const int64_t before = answeredInline();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c.call("memory/get", {{"id", id}}).isOk());
  // Ten gets and the status call itself; a housekeeping job (a checkpoint every few seconds) running meanwhile
  // sends the calls it overlaps to a worker.
  const int64_t gets = answeredInline() - before;
  EXPECT_GE(gets, 6);
  EXPECT_LE(gets, 11);
  const int64_t beforeList = answeredInline();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.call("memory/list", json::object()).isOk());
  EXPECT_LE(answeredInline() - beforeList, 1) << "memory/list pages can run long: a worker answers them";
}

TEST_F(DaemonTest, AQuickRequestWhoseScopeIsNotOpenYetIsAnsweredOnAWorker) {
  // Opening a scope's database can take seconds (a large one loads its vectors and text index): the I/O thread
  // leaves that to a worker and goes on reading every other connection. Each project below is located at
  // initialize, and its database opened by its first recall; once it is open, a recall alone is answered inline.
  auto status = daemon_->connect();
  auto answeredInline = [&] {
    auto st = status.call("daemon/status", json::object());
    EXPECT_TRUE(st.isOk()) << st.status().toString();
    return st.isOk() ? (*st)["messages_answered_inline"].get<int64_t>() : -1;
  };
  bool openAnsweredInline = false;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("project " + std::to_string(i));
    const std::string root = (dir_ / ("cold" + std::to_string(i))).string();
    fs::create_directories(root);
    auto c = daemon_->client(root);
    const int64_t before = answeredInline();
    ASSERT_TRUE(c.call("memory/recall", {{"query", "a project not opened yet"}}).isOk());
    // The recall and the status call after it: only the status call may have been answered inline.
    EXPECT_LE(answeredInline() - before, 1) << "the recall that opened its project ran on the I/O thread";
    // A housekeeping job running at that moment sends a call to a worker too: so at least once in a few tries.
    for (int attempt = 0; attempt < 10 && !openAnsweredInline; ++attempt) {
      const int64_t again = answeredInline();
      ASSERT_TRUE(c.call("memory/recall", {{"query", "a project open now"}}).isOk());
      openAnsweredInline = answeredInline() == again + 2;
    }
  }
  EXPECT_TRUE(openAnsweredInline) << "a recall of an open project was never answered on the I/O thread";
}

// The I/O thread's count of times it went to sleep (the main thread: it runs the I/O loop), and the CPU the whole
// process has used, in clock ticks, both from /proc.
int64_t ioThreadSleeps(pid_t pid) {
  return procStatusField("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/status",
                         "voluntary_ctxt_switches");
}

// utime + stime (fields 14 and 15) of a /proc stat file.
int64_t cpuTicksIn(const std::string& statPath) {
  const std::string text = readTextFile(statPath);
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
  return f.size() > 12 ? std::stoll(f[11]) + std::stoll(f[12]) : -1;
}

int64_t cpuTicks(pid_t pid) { return cpuTicksIn("/proc/" + std::to_string(pid) + "/stat"); }

// The CPU of the I/O thread alone (the main thread).
int64_t ioThreadCpuTicks(pid_t pid) {
  return cpuTicksIn("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/stat");
}

// A temporary directory for the daemons a test starts, with a project root inside it.
class MemqdInTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("memqd");
    project_ = dir_ / "proj";
    fs::create_directories(project_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  fs::path project_;
};

class MemqdHotPoll : public MemqdInTempDir {};
class MemqdStatus : public MemqdInTempDir {};
class MemqdSilentConnections : public MemqdInTempDir {};

// The widest window memqd takes (--hot-poll-us 100000), where a test needs the window to be open when the next
// request comes: a client's 0.2 ms pause between requests stretches to several ms when `ctest -j` or a sanitizer
// takes its core, past the default 1 ms window, and a count of sleeps would then measure the scheduler. Whether the
// default window pays off is the benchmarks' question (docs/performance.md); these tests assert what a window does.
constexpr int kHotPollWindowUs = 100000;
// A client that works a little between requests, as an agent's hook or a benchmark's loop does.
constexpr auto kClientPause = std::chrono::microseconds(200);

TEST_F(MemqdHotPoll, AClientThatPausesBetweenRequestsFindsTheIoThreadAwakeAndAnIdleMemqdSleeps) {
  constexpr int kGets = 200;
  auto sleepsOverGets = [&](int windowUs) {
    Memqd daemon(dir_, {"--hot-poll-us", std::to_string(windowUs)});
    EXPECT_TRUE(daemon.start()) << daemon.log();
    auto c = daemon.client(project_.string());
    auto saved = c.call("memory/save", {{"summary", "asked for again and again"}});
    EXPECT_TRUE(saved.isOk()) << saved.status().toString();
    const std::string id = saved ? (*saved)["id"].get<std::string>() : "";
    const int64_t before = ioThreadSleeps(daemon.pid());
    for (int i = 0; i < kGets; ++i) {
      std::this_thread::sleep_for(kClientPause);
      EXPECT_TRUE(c.call("memory/get", {{"id", id}}).isOk());
    }
    const int64_t sleeps = ioThreadSleeps(daemon.pid()) - before;
    // Idle: once the window after the last reply has passed (waited out five times over), memqd uses next to no
    // CPU. A thread that kept polling would use all of the 1.5 s: a fifth of it is far from both.
    std::this_thread::sleep_for(std::chrono::microseconds(5 * kHotPollWindowUs));
    const int64_t ticks = cpuTicks(daemon.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_LT(cpuTicks(daemon.pid()) - ticks, sysconf(_SC_CLK_TCK) / 5) << "an idle memqd must sleep";
    EXPECT_EQ(daemon.stop(), 0);
    return sleeps;
  };
  // Within the window, the next request arrives while the thread still polls: most gets find it awake (a worker or
  // background job running meanwhile makes it sleep now and then). With polling off it sleeps before most gets.
  // Majorities, not counts: how many of the rest a loaded machine turns around is not the behaviour.
  const int64_t hot = sleepsOverGets(kHotPollWindowUs);
  const int64_t cold = sleepsOverGets(0);
  EXPECT_LT(hot, kGets / 2) << "most gets inside the window must find the I/O thread awake";
  EXPECT_GT(cold, kGets / 2) << "with polling off, the I/O thread must sleep before most gets";
}

TEST_F(MemqdHotPoll, AfterASaveTheIoThreadSleepsAtOnceLeavingTheCoresToTheApplierAndTheClient) {
  // A save hands its rows to the applier thread, which then needs a core: an I/O thread that polled after the reply
  // would hold the other one, and the client would wait for a core to send its next request. So after a save the
  // thread sleeps at once, and a client saving with pauses between its requests finds it asleep nearly every time
  // (where the same client's gets find it awake: the test above). With the widest window, a thread that did poll
  // after a save would be found awake by nearly every save, however long the client's pauses stretch.
  constexpr int kSaves = 200;
  Memqd daemon(dir_, {"--hot-poll-us", std::to_string(kHotPollWindowUs)});
  ASSERT_TRUE(daemon.start()) << daemon.log();
  auto c = daemon.client(project_.string());
  ASSERT_TRUE(c.call("memory/save", {{"summary", "the first save opens the scope"}}).isOk());
  // initialize was answered on the I/O thread and opened a window: let it close (waited out five times over), so
  // that only what the saves do is counted.
  std::this_thread::sleep_for(std::chrono::microseconds(5 * kHotPollWindowUs));
  const int64_t before = ioThreadSleeps(daemon.pid());
  for (int i = 0; i < kSaves; ++i) {
    std::this_thread::sleep_for(kClientPause);
    auto saved = c.call("memory/save", {{"summary", "saved in a stream, number " + std::to_string(i)}});
    EXPECT_TRUE(saved.isOk()) << saved.status().toString();
  }
  EXPECT_GT(ioThreadSleeps(daemon.pid()) - before, kSaves / 2) << "most saves must find the I/O thread asleep";
  EXPECT_EQ(daemon.stop(), 0);
}

TEST_F(MemqdHotPoll, TheIoThreadDoesNotPollWhileAWorkerRuns) {
  // With a 100 ms window, a get answered on the I/O thread would keep it polling for 100 ms. An import sent right after
  // goes to a worker and runs for longer than that; while it runs the I/O thread must sleep and leave the cores to
  // the worker, so it uses next to no CPU over the import (reading the request and writing the reply: 0 or 1 tick
  // here). A thread that polled on would use most of the window (10 or 11 ticks of 10 ms here).
  Memqd daemon(dir_, {"--hot-poll-us", std::to_string(kHotPollWindowUs)});
  ASSERT_TRUE(daemon.start()) << daemon.log();
  auto c = daemon.client(project_.string());
  auto saved = c.call("memory/save", {{"summary", "read once before the import"}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  std::string jsonl;
  for (int i = 0; i < 5000; ++i) {
    jsonl += json{{"summary", "imported note " + std::to_string(i) + " on the parser's error recovery"}}.dump() + "\n";
  }
  const json importParams = {{"jsonl", jsonl}};
  // The save opened the project's scope; this get opens the global one it also reads (on a worker: a scope not open
  // yet is never opened on the I/O thread), so that the get below is answered on the I/O thread and polls.
  ASSERT_TRUE(c.call("memory/get", {{"id", (*saved)["id"]}}).isOk());
  const int64_t before = ioThreadCpuTicks(daemon.pid());
  ASSERT_TRUE(c.call("memory/get", {{"id", (*saved)["id"]}}).isOk());
  auto imported = c.call("import", importParams);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  EXPECT_EQ((*imported)["created"], 5000) << imported->dump();
  EXPECT_LT(ioThreadCpuTicks(daemon.pid()) - before, sysconf(_SC_CLK_TCK) / 20) << "the I/O thread polled past 50 ms";
  EXPECT_EQ(daemon.stop(), 0);
}

// A launch of memqd with the environment variable `name` set to `value`, or unset when it is nullopt: in memqd's
// process only.
MemqdLaunch launchWithEnv(std::string name, std::optional<std::string> value) {
  MemqdLaunch launch;
  launch.inChild = [name = std::move(name), value = std::move(value)] {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  };
  return launch;
}

TEST_F(MemqdStatus, NamesTheVectorScanItRunsAndTheOneMemqScanKernelPicks) {
  // memqd reads MEMQ_SCAN_KERNEL from the environment it starts with.
  auto scanOf = [&](std::optional<std::string> chosen) {
    Memqd daemon(dir_, launchWithEnv("MEMQ_SCAN_KERNEL", std::move(chosen)));
    EXPECT_TRUE(daemon.start()) << daemon.log();
    auto c = daemon.client(project_.string());
    auto status = c.call("daemon/status", json::object());
    EXPECT_TRUE(status.isOk()) << status.status().toString();
    std::string kernel = status ? status->value("scan_kernel", "") : "";
    EXPECT_EQ(daemon.stop(), 0);
    return kernel;
  };
  // Unset, memqd runs the best kernel this CPU has; named, the one named where the CPU runs it, else the best.
  using Kernel = VectorIndex::Kernel;
  const Kernel best = VectorIndex::supports(Kernel::kAvx512Vnni) ? Kernel::kAvx512Vnni
                      : VectorIndex::supports(Kernel::kAvx2)     ? Kernel::kAvx2
                                                                 : Kernel::kPortable;
  EXPECT_EQ(scanOf(std::nullopt), VectorIndex::kernelName(best));
  EXPECT_EQ(scanOf("scalar"), "scalar");  // every CPU runs the portable kernel
  if (VectorIndex::supports(Kernel::kAvx2)) {
    EXPECT_EQ(scanOf("avx2"), "avx2");
  }
  if (!VectorIndex::supports(Kernel::kAvx512Vnni)) {
    EXPECT_EQ(scanOf("avx512"), VectorIndex::kernelName(best)) << "a kernel this CPU cannot run is not used";
  }
}

// The environment a running process started with, as the kernel holds it (after an exec, the exec's): its bytes, in
// which glibc may have cut GLIBC_TUNABLES at its ':' separators while reading it.
std::string processEnviron(pid_t pid) { return readTextFile("/proc/" + std::to_string(pid) + "/environ"); }

// The kernel's transparent huge page mode: "always", "madvise" (a process asks, as glibc does with
// glibc.malloc.hugetlb=1) or "never".
std::string hugePageMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  for (const char* mode : {"always", "madvise"}) {
    if (line.find(std::string("[") + mode + "]") != std::string::npos) return mode;
  }
  return "never";
}

TEST_F(MemqdStatus, AsksForHugePagesForItsHeapWhereTheKernelGivesThemOnRequestUnlessGlibcTunablesDecides) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's: memqd does not ask";
#endif
  struct Seen {
    bool reported = false;  // daemon/status's heap_huge_pages
    std::string environ;    // of the process answering
    std::string name;       // its name, as pgrep and ps show it
    long hugeKib = -1;      // AnonHugePages after the saves; -1 where the kernel does not say
  };
  auto startWith = [&](std::vector<std::pair<std::string, std::string>> env, int saves) {
    MemqdLaunch launch;
    launch.inChild = [env] {
      ::unsetenv("GLIBC_TUNABLES");
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    };
    Memqd daemon(dir_, std::move(launch));
    Seen seen;
    EXPECT_TRUE(daemon.start()) << daemon.log();
    auto c = daemon.client(project_.string());
    auto status = c.call("daemon/status", json::object());
    EXPECT_TRUE(status.isOk()) << status.status().toString();
    if (status) {
      seen.reported = status->value("heap_huge_pages", false);
      // Re-executed in place: the process answering is the one started, under the same pid.
      EXPECT_EQ((*status)["pid"], daemon.pid());
    }
    seen.environ = processEnviron(daemon.pid());
    seen.name = readTextFile("/proc/" + std::to_string(daemon.pid()) + "/comm");
    // The rows of the vector index fill 2 MiB in 1,366 saves: at least one whole huge page of its storage.
    for (int i = 0; i < saves; ++i) {
      const std::string text = "note " + std::to_string(i) + " about the parser's buffer and its growth policy";
      auto saved = c.call("memory/save", {{"summary", text}, {"files", {"src/f" + std::to_string(i % 7) + ".c"}}});
      if (!saved) {
        ADD_FAILURE() << saved.status().toString();
        break;
      }
    }
    seen.hugeKib = procStatusField("/proc/" + std::to_string(daemon.pid()) + "/smaps_rollup", "AnonHugePages");
    EXPECT_EQ(daemon.stop(), 0);
    return seen;
  };
  const std::string mode = hugePageMode();
  const bool asks = mode == "madvise";  // with `always` the kernel gives them unasked, with `never` not at all
  auto hasHugetlbOne = [](const Seen& seen) {
    return seen.environ.find("glibc.malloc.hugetlb=1") != std::string::npos;
  };

  const Seen plain = startWith({}, 1500);
  EXPECT_EQ(plain.reported, mode != "never");
  EXPECT_EQ(hasHugetlbOne(plain), asks) << "re-executed only where the kernel gives huge pages on request";
  EXPECT_EQ(plain.name, "memqd\n") << "re-executed under another name";
  if (asks && plain.hugeKib >= 0) {
    EXPECT_GT(plain.hugeKib, 0) << "the heap grew without a single huge page";
  }

  // A user's own tunables are kept, and the huge page setting added after them.
  const Seen other = startWith({{"GLIBC_TUNABLES", "glibc.malloc.mxfast=64"}}, 0);
  EXPECT_EQ(other.reported, mode != "never");
  EXPECT_NE(other.environ.find("GLIBC_TUNABLES=glibc.malloc.mxfast=64"), std::string::npos);
  EXPECT_EQ(hasHugetlbOne(other), asks);

  // A user's choice about huge pages wins: no re-execution, and with `madvise` no huge pages for the heap.
  const Seen off = startWith({{"GLIBC_TUNABLES", "glibc.malloc.hugetlb=0"}}, 1500);
  EXPECT_EQ(off.reported, mode == "always");
  EXPECT_NE(off.environ.find("GLIBC_TUNABLES=glibc.malloc.hugetlb=0"), std::string::npos);
  EXPECT_FALSE(hasHugetlbOne(off));
  if (asks && off.hugeKib >= 0) {
    EXPECT_EQ(off.hugeKib, 0);
  }

  // An image memqd executed itself never executes again, whatever became of GLIBC_TUNABLES on the way.
  const Seen again = startWith({{"MEMQD_HEAP_REEXECUTED", "1"}}, 0);
  EXPECT_FALSE(hasHugetlbOne(again));
  EXPECT_EQ(again.reported, mode == "always");
}

// Whitespace is what framing skips between messages: a connection that sends nothing else has sent nothing, and the
// silent-connection timeout closes it as it closes one that sends nothing at all, however often a space comes (the
// timeout counts from accept). A connection that has sent a request is never closed for silence.
TEST_F(MemqdSilentConnections, AConnectionSendingOnlyWhitespaceIsClosedAsASilentOneIs) {
  const int silentTimeoutMs = 500;
  Memqd daemon(dir_, {"--silent-timeout-ms", std::to_string(silentTimeoutMs)});
  ASSERT_TRUE(daemon.start()) << daemon.log();
  const std::string status = R"({"jsonrpc":"2.0","id":1,"method":"daemon/status"})" "\n";
  RawConn served(daemon.socket());
  ASSERT_TRUE(served.connected());
  ASSERT_TRUE(served.send(" \n\t" + status));
  auto reply = served.readJson();
  ASSERT_TRUE(reply && reply->contains("result")) << (reply ? reply->dump() : "no reply");

  RawConn silent(daemon.socket());
  RawConn blank(daemon.socket());
  ASSERT_TRUE(silent.connected() && blank.connected());
  bool blankClosed = false;
  for (auto deadline = std::chrono::steady_clock::now() + kLivenessDeadline;
       !blankClosed && std::chrono::steady_clock::now() < deadline;) {
    blankClosed = !blank.send(" ") || blank.closedWithin(std::chrono::milliseconds(silentTimeoutMs / 5)) ||
                  !blank.send("\r\n\t") || blank.closedWithin(std::chrono::milliseconds(silentTimeoutMs / 5));
  }
  EXPECT_TRUE(blankClosed) << "a connection that sent only whitespace was never closed as silent";
  EXPECT_TRUE(silent.closedWithin(kLivenessDeadline)) << "a silent connection was never closed";

  // `served` was accepted before `silent`, whose timeout has passed: so has its own, and it is still served.
  ASSERT_TRUE(served.send(status));
  reply = served.readJson();
  EXPECT_TRUE(reply && reply->contains("result")) << "a connection that had sent a request was closed as silent";
}

TEST(MemqdFlags, AHotPollOutsideItsRangeIsAUsageErrorNamingTheOption) {
  const ScopedTempDir scoped{makeTempDir("hotflag")};
  const fs::path& dir = scoped.path;
  const std::string socket = (dir / "memqd.sock").string();
  for (const char* value : {"-1", "100001", "soon"}) {
    auto r = runCommand("'" + binDir() + "/memqd' --foreground --hot-poll-us " + value + " --socket '" + socket +
                        "' --data-dir '" + (dir / "data").string() + "'");
    EXPECT_EQ(r.exitCode, 2) << value << ": " << r.err;
    EXPECT_NE(r.err.find("--hot-poll-us"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(socket));
  }
}

TEST_F(DaemonTest, AConninfoLibpqCannotParseIsRefusedWithoutQuotingItsSecretInTheReplyOrTheLog) {
  auto c = daemon_->client(project_);
  for (const std::string conninfo : {"postgresql://alice:Hunter2%zz@db/memq_team",
                                     "host=db dbname=memq_team user=alice Hunter2secret"}) {
    auto r = c.call("team/connect", {{"conninfo", conninfo}});
    ASSERT_FALSE(r.isOk()) << conninfo;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << r.status().toString();
    EXPECT_NE(r.status().message().find("is not a libpq conninfo"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("Hunter2"), std::string::npos) << r.status().message();
  }
  ASSERT_TRUE(c.call("daemon/status", json::object()).isOk());  // its log line follows the team/connect ones
  EXPECT_NE(daemon_->log().find("team/connect"), std::string::npos);
  EXPECT_EQ(daemon_->log().find("Hunter2"), std::string::npos) << daemon_->log();
}

TEST_F(DaemonTest, AtExitThePidFileIsRemovedOnlyWhileItNamesThisMemqd) {
  // The socket goes when draining begins, so a memqd a client starts meanwhile writes its own pid: that one stays.
  const fs::path pidFile = fs::path(daemon_->socket()).parent_path() / "memqd.pid";
  // memqd writes its pid file right after it starts listening: a client may connect a moment before it is there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const std::string ours = std::to_string(daemon_->pid()) + "\n";
  while (readTextFile(pidFile) != ours && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(readTextFile(pidFile), ours);
  { std::ofstream(pidFile, std::ios::trunc) << "1\n"; }
  EXPECT_EQ(daemon_->stop(), 0);
  EXPECT_EQ(readTextFile(pidFile), "1\n") << "memqd removed a pid file that named another process";
}

TEST(MemqdSignals, AForegroundMemqdOutlivesTheReaderOfItsLog) {
  // stderr is a pipe whose reader exits after one byte: every later log line is a write to a pipe with no reader.
  const ScopedTempDir scoped{makeTempDir("pipe")};
  const fs::path& dir = scoped.path;
  const std::string socket = (dir / "memqd.sock").string();
  ASSERT_EQ(std::system(("('" + binDir() + "/memqd' --foreground --socket '" + socket + "' --data-dir '" +
                         (dir / "data").string() + "' --idle-exit 60 2>&1 | head -c 1 >/dev/null) >/dev/null 2>&1 &")
                            .c_str()),
            0);
  auto c = RpcClient::connect(socket, std::chrono::seconds(5));
  for (int tries = 0; !c.isOk() && tries < 200; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c = RpcClient::connect(socket, std::chrono::seconds(5));
  }
  ASSERT_TRUE(c.isOk()) << "memqd did not start";
  for (int i = 0; i < 20; ++i) {
    // Each request writes a log line; the first write after the reader left used to end memqd (SIGPIPE).
    ASSERT_TRUE(c->call("daemon/status", json::object()).isOk()) << "memqd is gone after request " << i;
  }
  auto fresh = RpcClient::connect(socket, std::chrono::seconds(5));
  ASSERT_TRUE(fresh.isOk());
  EXPECT_TRUE(fresh->call("daemon/shutdown", json::object()).isOk());
}

TEST_F(DaemonTest, ShutdownDrainsAndExitsZero) {
  auto c = daemon_->client(project_);
  save(c, "before shutdown");
  EXPECT_EQ(daemon_->stop(), 0);
  EXPECT_FALSE(fs::exists(daemon_->socket()));
}

}  // namespace
}  // namespace memq::testing
