// The team scope end to end: two memqd processes (separate data dirs, sockets and login roles, as two teammates on
// two clones) sharing one team database on a throwaway PostgreSQL cluster (tests/common/pg_cluster.h). Saves and
// state changes of one reach the other's recall and subscribers; the correction model holds across them; a reader
// role reads but cannot write; a server that goes away leaves local scopes working, team recall warning, team saves
// queued (also across a kill -9 of memqd) and sent when it is back; a durable server killed in the middle of a
// stream of saves loses none it acknowledged, and every queued one arrives once; hostile input gets the local codes
// through the team path and changes nothing on the server.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/pg_cluster.h"
#include "daemon/team/team_client.h"
#include "embedded_migrations.h"
#include "integration/memqd_fixture.h"
#include "protocol/error_code.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::PgCluster;

// How long a test waits for a change to travel from one memqd to the other (server, sync thread, replica) or for a
// replica to catch up: a bound on liveness, generous enough for a loaded `ctest -j` under a sanitizer, never a
// measure of speed. How fast a change travels is a figure EveryCommittedTeamSaveReachesARemoteSubscriber prints.
constexpr milliseconds kDeliveryDeadline = seconds(30);

PgCluster* gCluster = nullptr;
std::string gStartError;

class TeamClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    spdlog::set_level(spdlog::level::warn);
    gCluster = new PgCluster();
    gStartError = gCluster->start();
    for (const auto& [role, groups, attrs] :
         std::vector<std::tuple<std::string, std::vector<std::string>, std::string>>{
             {"memq_owner", {}, "CREATEROLE"}}) {
      if (gStartError.empty()) gStartError = gCluster->createRole(role, groups, attrs);
    }
  }
  void TearDown() override {
    delete gCluster;
    gCluster = nullptr;
  }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new TeamClusterEnvironment);

// One teammate: a clone (a git repository of its own) and a memqd connected to the team database as `role`.
struct Teammate {
  fs::path dir;
  std::string project;
  std::unique_ptr<Memqd> daemon;
};

class TeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Not skipped: `make test` installs the server, so a missing one is a broken setup, not an optional test.
    ASSERT_TRUE(cluster_ && gStartError.empty()) << gStartError;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    db_ = std::string("it_") + info->name();
    std::transform(db_.begin(), db_.end(), db_.begin(), [](unsigned char c) { return std::tolower(c); });
    db_ = db_.substr(0, 63);
    ASSERT_EQ(cluster_->createDatabase(db_, "memq_owner"), "");
    auto owner = TeamClient::connect(cluster_->conninfo(db_, "memq_owner"));
    ASSERT_TRUE(owner.isOk()) << owner.status().toString();
    Status migrated = (*owner)->migrate();
    ASSERT_TRUE(migrated.isOk()) << migrated.toString();
    // Login roles are the cluster's, made once per cluster (the group roles exist once the schema is migrated).
    static std::set<const PgCluster*> rolesMade;
    if (rolesMade.insert(cluster_).second) {
      ASSERT_EQ(cluster_->createRole("alice", {"memq_team_writer"}), "");
      ASSERT_EQ(cluster_->createRole("bob", {"memq_team_writer"}), "");
      ASSERT_EQ(cluster_->createRole("rita", {"memq_team_reader"}), "");
      ASSERT_EQ(cluster_->createRole("mona", {"memq_team_maintainer"}), "");
    }
    root_ = makeTempDir("team");
  }
  void TearDown() override {
    for (auto* t : {&a_, &b_, &r_, &m_}) t->daemon.reset();
    // A test that stopped the server leaves it running for the next one.
    (void)cluster_->restart();
    if (!root_.empty()) fs::remove_all(root_);
  }

  std::string conninfo(const std::string& role) const { return cluster_->conninfo(db_, role); }

  // Stops the server as a crash would. The cluster runs with synchronous_commit off: a CHECKPOINT first, so that
  // what it acknowledged is on disk (a real server loses no committed transaction).
  void stopServer() {
    auto r = test::runSql(cluster_->conninfo(), "CHECKPOINT");
    ASSERT_TRUE(r.ok) << r.message;
    cluster_->kill();
  }

  // A clone and its memqd, connected to the team as `role` (through the CLI when `viaCli`).
  void startTeammate(Teammate& t, const std::string& name, const std::string& role, bool viaCli = false) {
    t.dir = root_ / name;
    t.project = (t.dir / "proj").string();
    initGitRepo(t.project);
    writeTextFile(fs::path(t.project) / "README.md", "# " + name + "\n");
    commitAll(t.project, "init");
    if (!t.daemon) t.daemon = std::make_unique<Memqd>(t.dir);
    ASSERT_TRUE(t.daemon->start()) << t.daemon->log();
    if (viaCli) {
      auto r = t.daemon->memq("team connect " + shellQuote(conninfo(role)), t.project);
      ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("connected as role " + role), std::string::npos) << r.out;
    } else {
      auto c = t.daemon->client(t.project);
      auto r = c.call("team/connect", {{"conninfo", conninfo(role)}});
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      ASSERT_TRUE((*r)["online"].get<bool>()) << r->dump();
      EXPECT_EQ((*r)["role"], role);
    }
  }

  // A teammate's project (an empty git repository) and memqd, with no team scope yet.
  void startUnconnected(Teammate& t, const std::string& name) {
    t.dir = root_ / name;
    t.project = (t.dir / "proj").string();
    initGitRepo(t.project);
    t.daemon = std::make_unique<Memqd>(t.dir);
    ASSERT_TRUE(t.daemon->start()) << t.daemon->log();
  }

  static Result<json> teamSave(RpcClient& c, const std::string& summary, json extra = json::object()) {
    json params = {{"summary", summary}, {"scope", "team"}};
    params.update(extra);
    return c.call("memory/save", params);
  }

  // Waits (up to `deadline`) for a memory/changed notification of the team scope naming `id` (any id when empty).
  static json waitForChange(RpcClient& subscriber, const std::string& id, milliseconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < end) {
      auto left = std::chrono::duration_cast<milliseconds>(end - std::chrono::steady_clock::now());
      auto msg = subscriber.readMessage(std::max(left, milliseconds(1)));
      if (!msg) break;
      if ((*msg).value("method", "") != "memory/changed") continue;
      const json& p = (*msg)["params"];
      if (p.value("scope", "") == "team" && (id.empty() || p.value("id", "") == id)) return p;
    }
    return json();
  }

  // The ids recall (scope all) returns for `query` in `t`'s project.
  static std::vector<std::string> recallIds(Teammate& t, const std::string& query, json* reply = nullptr) {
    auto c = t.daemon->client(t.project);
    auto r = c.call("memory/recall", {{"query", query}, {"limit", 20}});
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    std::vector<std::string> ids;
    if (!r) return ids;
    if (reply) *reply = *r;
    for (const auto& m : (*r)["memories"]) ids.push_back(m["id"].get<std::string>());
    return ids;
  }

  // Polls `done` until it holds (true) or `deadline` passes (false): waits on a condition, never a fixed sleep.
  static bool eventually(const std::function<bool()>& done, milliseconds deadline,
                         milliseconds poll = milliseconds(20)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(poll);
    }
    return true;
  }

  // Polls `t`'s recall until it returns `id` (true) or `deadline` passes.
  static bool recallReturnsWithin(Teammate& t, const std::string& query, const std::string& id, milliseconds deadline) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    do {
      auto ids = recallIds(t, query);
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) return true;
      std::this_thread::sleep_for(milliseconds(50));
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }

  std::string serverCount(const std::string& table = "memories") {
    auto r = test::runSql(conninfo("memq_admin"), "SELECT count(*) FROM memq_team." + table);
    EXPECT_TRUE(r.ok) << r.message;
    return r.rows.empty() ? "" : r.rows[0][0].value_or("");
  }

  // The server the test runs against: the shared one (fsync off), or a fixture's own.
  PgCluster* cluster_ = gCluster;
  std::string db_;
  fs::path root_;
  Teammate a_, b_, r_, m_;  // alice, bob (writers), rita (reader), mona (maintainer)
};

TEST_F(TeamTest, ASaveByOneTeammateReachesTheOthersRecallAndSubscriber) {
  startTeammate(a_, "a", "alice", /*viaCli=*/true);
  startTeammate(b_, "b", "bob");
  auto subscriber = b_.daemon->client(b_.project, "listener");
  ASSERT_TRUE(subscriber.call("subscribe", {{"scopes", {"team"}}}).isOk());
  auto everyScope = b_.daemon->client(b_.project, "every-scope listener");
  ASSERT_TRUE(everyScope.call("subscribe", {{"scopes", {"project", "global", "team"}}}).isOk());

  auto writer = a_.daemon->client(a_.project);
  auto saved = teamSave(writer, "Release builds need the LTO flag set in the toolchain file");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  EXPECT_EQ((*saved)["status"], "created");
  EXPECT_EQ((*saved)["scope"], "team");
  const std::string id = (*saved)["id"].get<std::string>();
  json change = waitForChange(subscriber, id, kDeliveryDeadline);
  ASSERT_FALSE(change.is_null()) << "B's subscriber never heard of " << id << "\n" << b_.daemon->log();
  EXPECT_EQ(change["action"], "create");
  EXPECT_FALSE(waitForChange(everyScope, id, kDeliveryDeadline).is_null()) << "subscribed to all three scopes";
  // stats reads the team scope with the others, as its result schema says.
  auto stats = b_.daemon->client(b_.project).call("stats", json::object());
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  expectMatchesResultSchema("stats", *stats);
  EXPECT_TRUE((*stats)["scopes"].contains("team")) << stats->dump();

  // Read your own write: A's own recall has it at once, from its replica.
  auto own = recallIds(a_, "LTO flag toolchain");
  EXPECT_NE(std::find(own.begin(), own.end(), id), own.end());
  json reply;
  auto ids = recallIds(b_, "LTO flag toolchain", &reply);
  ASSERT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << reply.dump();
  EXPECT_EQ(reply["memories"][0]["scope"], "team");
  EXPECT_FALSE(reply.contains("warnings")) << reply.dump();
  // A project save stays local: B never sees it.
  auto local = writer.call("memory/save", {{"summary", "Alice keeps her scratch notes in the project scope"}});
  ASSERT_TRUE(local.isOk());
  EXPECT_EQ((*local)["scope"], "project");
  EXPECT_EQ(serverCount(), "1");

  // Export leaves the team's memories to the server unless asked; import never writes the replica.
  auto exported = writer.call("export", json::object());
  ASSERT_TRUE(exported.isOk());
  EXPECT_EQ((*exported)["jsonl"].get<std::string>().find(id), std::string::npos);
  auto teamExport = writer.call("export", {{"scope", "team"}});
  ASSERT_TRUE(teamExport.isOk());
  EXPECT_NE((*teamExport)["jsonl"].get<std::string>().find(id), std::string::npos);
  auto imported = writer.call("import", {{"jsonl", (*teamExport)["jsonl"]}, {"scope", "team"}});
  ASSERT_FALSE(imported.isOk());
  EXPECT_EQ(imported.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(imported.status().data().value("field", ""), "scope");

  // The CLI shows the scope's state.
  auto status = a_.daemon->memq("team status", a_.project);
  EXPECT_EQ(status.exitCode, 0) << status.err;
  EXPECT_NE(status.out.find("connected as role alice"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("queued saves: 0"), std::string::npos) << status.out;
}

TEST_F(TeamTest, RejectedHiddenAndSupersededTeamMemoriesNeverComeBackOnTheOtherTeammate) {
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  auto subscriber = b_.daemon->client(b_.project, "listener");
  ASSERT_TRUE(subscriber.call("subscribe", {{"scopes", {"team"}}}).isOk());
  auto c = a_.daemon->client(a_.project, "alice", {{"source", "user"}});
  auto bad = teamSave(c, "Deploys go out on Fridays after five");
  auto stale = teamSave(c, "The staging database lives on host pg-old");
  auto old = teamSave(c, "Integration tests use port 8080");
  auto replacement = teamSave(c, "Integration tests use port 9090 since the proxy moved");
  for (auto* r : {&bad, &stale, &old, &replacement}) ASSERT_TRUE(r->isOk()) << r->status().toString();
  const std::string badId = (*bad)["id"], staleId = (*stale)["id"], oldId = (*old)["id"];
  ASSERT_TRUE(c.call("memory/reject", {{"id", badId}, {"reason", "we never deploy on Fridays"}}).isOk());
  ASSERT_TRUE(c.call("memory/hide", {{"id", staleId}}).isOk());
  auto sup = c.call("memory/supersede", {{"id", oldId}, {"by", (*replacement)["id"]}});
  ASSERT_TRUE(sup.isOk()) << sup.status().toString();
  EXPECT_EQ((*sup)["old"]["state"], "superseded");
  // B has seen the last change (the supersede) once its notification arrives: the journal is applied in order.
  json last;
  for (int i = 0; i < 8; ++i) {
    last = waitForChange(subscriber, "", kDeliveryDeadline);
    if (last.is_null() || last.value("action", "") == "supersede") break;
  }
  ASSERT_EQ(last.value("action", ""), "supersede") << b_.daemon->log();

  auto bc = b_.daemon->client(b_.project);
  auto again = teamSave(bc, "Deploys go out on Fridays after five");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)["status"], "rejected");
  EXPECT_EQ((*again)["id"], badId);
  EXPECT_EQ((*again)["reason"], "we never deploy on Fridays");
  auto hidden = teamSave(bc, "The staging database lives on host pg-old");
  ASSERT_TRUE(hidden.isOk());
  EXPECT_EQ((*hidden)["status"], "exists_hidden");
  auto superseded = teamSave(bc, "Integration tests use port 8080");
  ASSERT_TRUE(superseded.isOk());
  EXPECT_EQ((*superseded)["status"], "exists_superseded");
  EXPECT_EQ((*superseded)["superseded_by"], (*replacement)["id"]);
  for (const auto& q : {"Deploys Fridays", "staging database host", "Integration tests port"}) {
    auto ids = recallIds(b_, q);
    for (const auto& gone : {badId, staleId, oldId}) {
      EXPECT_EQ(std::find(ids.begin(), ids.end(), gone), ids.end()) << q << " returned " << gone;
    }
  }
  EXPECT_EQ(serverCount(), "4");  // none of B's re-saves wrote a row
  // Text, files and pins stay as the server holds them.
  auto pin = bc.call("memory/pin", {{"id", (*replacement)["id"]}});
  ASSERT_FALSE(pin.isOk());
  EXPECT_EQ(pin.status().code(), ErrorCode::kInvalidParams);
  // attach says so too, whatever the files it names: the refusal is about the memory, not the files.
  for (const json& files : {json::array({"/etc/hosts"}), json::array({{{"path", "src/a.ts"}, {"lines", {{1, 2}}}}})}) {
    auto attach = bc.call("memory/attach", {{"id", (*replacement)["id"]}, {"files", files}});
    ASSERT_FALSE(attach.isOk()) << files.dump();
    EXPECT_EQ(attach.status().code(), ErrorCode::kInvalidParams) << files.dump();
    EXPECT_NE(attach.status().message().find("team memories"), std::string::npos) << attach.status().message();
  }
}

TEST_F(TeamTest, AMaintainersPurgeRemovesTheMemoryFromEveryReplicaAndItsRejectedTextStaysRefused) {
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  startTeammate(m_, "m", "mona");
  auto subscriber = b_.daemon->client(b_.project, "listener");
  ASSERT_TRUE(subscriber.call("subscribe", {{"scopes", {"team"}}}).isOk());
  auto c = a_.daemon->client(a_.project);
  auto saved = teamSave(c, "Secrets live in the repo's env file");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  const std::string id = (*saved)["id"];
  ASSERT_TRUE(c.call("memory/reject", {{"id", id}, {"reason", "secrets never go in the repository"}}).isOk());

  // A writer may not purge: the CLI says why and exits non-zero, and nothing changes.
  auto byWriter = a_.daemon->memq("purge " + id + " --yes", a_.project);
  EXPECT_NE(byWriter.exitCode, 0) << byWriter.out;
  EXPECT_NE(byWriter.err.find("ermission"), std::string::npos) << byWriter.err;
  EXPECT_EQ(serverCount(), "1");

  // mona's memqd may not know the id yet: it resolves ids in its replica, so wait for it there.
  auto mc = m_.daemon->client(m_.project);
  (void)eventually([&] { return mc.call("memory/get", {{"id", id}}).isOk(); }, kDeliveryDeadline);
  auto purged = m_.daemon->memq("purge " + id + " --yes", m_.project);
  ASSERT_EQ(purged.exitCode, 0) << purged.out << purged.err;
  EXPECT_NE(purged.out.find("purged"), std::string::npos) << purged.out;
  EXPECT_EQ(serverCount(), "0");
  EXPECT_EQ(serverCount("tombstones"), "1");

  // B's subscriber is told of the reject and then the purge, in journal order.
  std::string action;
  for (int i = 0; i < 4 && action != "purge"; ++i) {
    json change = waitForChange(subscriber, id, kDeliveryDeadline);
    if (change.is_null()) break;
    action = change.value("action", "");
  }
  ASSERT_EQ(action, "purge") << b_.daemon->log();
  auto bc = b_.daemon->client(b_.project);
  auto get = bc.call("memory/get", {{"id", id}});
  ASSERT_FALSE(get.isOk());
  EXPECT_EQ(get.status().code(), ErrorCode::kNotFound);
  auto again = teamSave(bc, "Secrets live in the repo's env file");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)["status"], "rejected");
  EXPECT_EQ((*again)["reason"], "secrets never go in the repository");
  EXPECT_TRUE(recallIds(b_, "secrets env file repo").empty());
  EXPECT_EQ(serverCount(), "0");
}

TEST_F(TeamTest, ATeamSaveIsToldOfATeammatesSimilarMemoryAndWarnedNearARejectedOne) {
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  auto c = a_.daemon->client(a_.project, "alice", {{"source", "user"}});
  auto bun = teamSave(c, "Use bun for installing packages in this repo");
  auto npm = teamSave(c, "Use npm for installs in this repository always");
  ASSERT_TRUE(bun.isOk() && npm.isOk());
  ASSERT_TRUE(c.call("memory/reject", {{"id", (*npm)["id"]}, {"reason", "we use pnpm"}}).isOk());
  ASSERT_TRUE(recallReturnsWithin(b_, "bun installing packages", (*bun)["id"], kDeliveryDeadline));
  auto bc = b_.daemon->client(b_.project);
  (void)eventually([&] { return bc.call("memory/get", {{"id", (*npm)["id"]}})->value("state", "") == "rejected"; },
                   kDeliveryDeadline);

  // B's near-duplicate is written, and its reply names A's memory, as a local save's would.
  auto near = teamSave(bc, "Use bun for installing the packages in this repo");
  ASSERT_TRUE(near.isOk()) << near.status().toString();
  EXPECT_EQ((*near)["status"], "created");
  ASSERT_TRUE((*near)["similar"].is_array() && !(*near)["similar"].empty()) << near->dump();
  EXPECT_EQ((*near)["similar"][0]["id"], (*bun)["id"]);
  // A paraphrase of the rejected memory is written with a similar_rejected warning.
  auto paraphrase = teamSave(bc, "Use npm for installs in this repository, always");
  ASSERT_TRUE(paraphrase.isOk()) << paraphrase.status().toString();
  EXPECT_EQ((*paraphrase)["status"], "created");
  bool warned = false;
  for (const auto& w : paraphrase->value("warnings", json::array())) {
    warned |= w.get<std::string>().rfind("similar_rejected", 0) == 0;
  }
  EXPECT_TRUE(warned) << paraphrase->dump();
  // The same text again, asking for another category: a dedup that keeps the memory's, and says so.
  auto again = teamSave(bc, "Use bun for installing the packages in this repo", {{"category", "gotcha"}});
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ((*again)["status"], "deduped");
  EXPECT_EQ((*again)["warnings"], json::array({"category gotcha not applied: memory " + (*near)["id"].get<std::string>() +
                                               " keeps no category (a team memory keeps the category it was saved "
                                               "with)"}))
      << again->dump();
}

TEST_F(TeamTest, AReplicaAheadOfARestoredServerStartsOverFromTheServersJournal) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  std::vector<std::string> before;
  for (int i = 0; i < 3; ++i) {
    auto saved = teamSave(c, "Before the restore, note " + std::to_string(i) + " about the flaky cache test");
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    before.push_back((*saved)["id"]);
  }
  // The database is replaced by an older state of it (here: a new one under the same name) whose journal has rows
  // at the seqs the replica already passed, but other rows.
  auto dropped = test::runSql(cluster_->conninfo(), "DROP DATABASE " + db_ + " WITH (FORCE)");
  ASSERT_TRUE(dropped.ok) << dropped.message;
  ASSERT_EQ(cluster_->createDatabase(db_, "memq_owner"), "");
  auto owner = TeamClient::connect(conninfo("memq_owner"));
  ASSERT_TRUE(owner.isOk() && (*owner)->migrate().isOk());
  auto bob = TeamClient::connect(conninfo("bob"));
  ASSERT_TRUE(bob.isOk());
  std::set<std::string> after;
  for (int i = 0; i < 4; ++i) {
    SaveInput in;
    in.summary = "After the restore, note " + std::to_string(i) + " about the release checklist";
    auto saved = (*bob)->save(in, "");
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    after.insert(saved->id);
  }

  // Once A's memqd is back on the server, its replica holds the server's memories and nothing else.
  auto teamIds = [&] {
    std::set<std::string> ids;
    auto r = c.call("memory/list", {{"scope", "team"}, {"limit", 50}});
    if (r) {
      for (const auto& m : (*r)["memories"]) ids.insert(m["id"].get<std::string>());
    }
    return ids;
  };
  (void)eventually([&] { return teamIds() == after; }, seconds(15), milliseconds(50));
  ASSERT_EQ(teamIds(), after) << a_.daemon->log();
  for (const auto& id : before) {
    EXPECT_EQ(c.call("memory/get", {{"id", id}}).status().code(), ErrorCode::kNotFound) << id;
  }
  EXPECT_NE(a_.daemon->log().find("replica is rebuilt"), std::string::npos);
  // And it goes on from there: a new save by A reaches the server (at once, or queued first: the request
  // connection A had may be one the drop cut) and A's replica.
  auto next = teamSave(c, "After the rebuild the replica follows the server again");
  ASSERT_TRUE(next.isOk()) << next.status().toString();
  (void)eventually([&] { return teamIds().size() == 5u; }, seconds(15), milliseconds(50));
  EXPECT_EQ(serverCount(), "5");
  EXPECT_EQ(teamIds().size(), 5u);
}

TEST_F(TeamTest, AReaderRoleRecallsTeamMemoriesButItsSaveIsForbiddenAndNothingIsQueued) {
  startTeammate(a_, "a", "alice");
  startTeammate(r_, "r", "rita");
  auto c = a_.daemon->client(a_.project);
  auto saved = teamSave(c, "Code review needs two approvals on the release branch");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  ASSERT_TRUE(recallReturnsWithin(r_, "code review approvals release", (*saved)["id"], kDeliveryDeadline));
  auto rc = r_.daemon->client(r_.project);
  auto refused = teamSave(rc, "Readers should not be able to write this");
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kForbidden) << refused.status().toString();
  auto status = rc.call("team/status", json::object());
  ASSERT_TRUE(status.isOk());
  EXPECT_EQ((*status)["queued"], 0);
  EXPECT_EQ(serverCount(), "1");
}

TEST_F(TeamTest, WithTheServerDownLocalScopesWorkTeamRecallWarnsAndATeamSaveIsQueuedThenDelivered) {
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  auto c = a_.daemon->client(a_.project);
  auto before = teamSave(c, "The cache is warmed by the nightly job");
  ASSERT_TRUE(before.isOk());
  stopServer();

  auto local = c.call("memory/save", {{"summary", "Local notes keep working while the team server is down"}});
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  // Team recall reads the replica and never waits on the server. A recall that did would wait until the server came
  // back (the sync thread retries for as long as it is down: forever, here) or, on a connection to a server gone
  // silent, for the 30 s statement_timeout and tcp_user_timeout memqd sets (docs/team.md). Each connect attempt's
  // connect_timeout (2 s) is no measure here: the killed local server refuses at once. Ten seconds is far above a
  // recall from the replica on a loaded machine under a sanitizer, and far below a hang.
  constexpr auto kNoHangBound = seconds(10);
  json reply;
  const auto t0 = std::chrono::steady_clock::now();
  auto ids = recallIds(a_, "cache warmed nightly job", &reply);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kNoHangBound) << "team recall must not hang on a dead server";
  EXPECT_NE(std::find(ids.begin(), ids.end(), (*before)["id"]), ids.end()) << "answered from the replica";
  ASSERT_TRUE(reply.contains("warnings")) << reply.dump();
  EXPECT_NE(reply["warnings"][0].get<std::string>().find("team scope offline"), std::string::npos) << reply.dump();
  auto localIds = recallIds(a_, "Local notes team server down");
  EXPECT_EQ(localIds.size(), 1u);

  auto queued = teamSave(c, "Queued while offline: the build cache key includes the compiler version");
  ASSERT_TRUE(queued.isOk()) << queued.status().toString();
  EXPECT_EQ((*queued)["status"], "queued");
  EXPECT_TRUE((*queued)["id"].is_null());
  auto cli = a_.daemon->memq("--scope team save " + shellQuote("Queued from the CLI while the server is down"),
                             a_.project);
  EXPECT_EQ(cli.exitCode, 0) << cli.err;
  EXPECT_NE(cli.out.find("queued"), std::string::npos) << cli.out;
  // And through the MCP bridge: a queued save is a tool result (no id yet), never a crash of the bridge.
  const std::string mcpInput =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_save","arguments":{"summary":"Queued through MCP while the server is down"}}})"
      "\n";
  auto mcp = a_.daemon->memq("--scope team mcp", a_.project, mcpInput);
  EXPECT_EQ(mcp.exitCode, 0) << mcp.err;
  const auto nl = mcp.out.find('\n');
  ASSERT_NE(nl, std::string::npos) << mcp.out;
  const json toolReply = json::parse(mcp.out.substr(nl + 1), nullptr, false);
  ASSERT_TRUE(toolReply.is_object()) << mcp.out;
  EXPECT_EQ(toolReply["result"]["isError"], false) << toolReply.dump();
  EXPECT_EQ(toolReply["result"]["structuredContent"]["status"], "queued") << toolReply.dump();
  EXPECT_TRUE(toolReply["result"]["structuredContent"]["id"].is_null()) << toolReply.dump();
  // Input the server would refuse is refused here too, offline: never queued.
  auto badBlob = teamSave(c, "An anchored note with a blob id that is not one",
                          {{"files", json::array({{{"path", "src/a.ts"}, {"lines", {{1, 2}}}, {"blob", "xyz"}}})}});
  ASSERT_FALSE(badBlob.isOk()) << badBlob->dump();
  EXPECT_EQ(badBlob.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(badBlob.status().data().value("field", ""), "files[0].blob");
  auto status = c.call("team/status", json::object());
  ASSERT_TRUE(status.isOk());
  EXPECT_FALSE((*status)["online"].get<bool>());
  EXPECT_EQ((*status)["queued"], 3);  // the API's, the CLI's and the MCP bridge's

  auto subscriber = b_.daemon->client(b_.project, "listener");
  ASSERT_TRUE(subscriber.call("subscribe", {{"scopes", {"team"}}}).isOk());
  ASSERT_EQ(cluster_->restart(), "");
  // Reconnects back off to at most 5 s; the outbox is drained first thing after.
  json change = waitForChange(subscriber, "", kDeliveryDeadline);
  ASSERT_FALSE(change.is_null()) << a_.daemon->log();
  auto found = test::runSql(conninfo("memq_admin"),
                            "SELECT id, created_by FROM memq_team.memories WHERE summary LIKE 'Queued while offline%'");
  ASSERT_TRUE(found.ok && found.rows.size() == 1) << found.message;
  EXPECT_EQ(found.rows[0][1].value_or(""), "alice");
  EXPECT_TRUE(
      recallReturnsWithin(b_, "build cache key compiler version", found.rows[0][0].value_or(""), kDeliveryDeadline));
  EXPECT_EQ(serverCount(), "4");  // each queued save arrived exactly once
  json now;
  (void)eventually(
      [&] {
        now = *c.call("team/status", json::object());
        return now["queued"] == 0 && now["online"].get<bool>();
      },
      kDeliveryDeadline);
  EXPECT_EQ(now["queued"], 0) << now.dump();
  EXPECT_TRUE(now["online"].get<bool>()) << now.dump();
}

// A queued save the server fails for a reason not about the save (here its function is missing, as in a database
// not set up yet or a standby after a failover) stays in the outbox, and arrives once the server can take it.
TEST_F(TeamTest, AQueuedSaveTheServerCannotTakeYetStaysQueuedUntilItCan) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  const std::string admin = conninfo("memq_admin");
  auto renamed = test::runSql(admin, "ALTER FUNCTION memq_team.memq_save RENAME TO memq_save_away");
  ASSERT_TRUE(renamed.ok) << renamed.message;
  stopServer();
  auto queued = teamSave(c, "Queued while the server cannot take saves: the outbox keeps it");
  ASSERT_TRUE(queued.isOk()) << queued.status().toString();
  ASSERT_EQ((*queued)["status"], "queued");
  ASSERT_EQ(cluster_->restart(), "");
  // The sync thread connects, tries the record, and the server fails it: kept, and said in team/status.
  json status;
  ASSERT_TRUE(eventually(
      [&] {
        status = *c.call("team/status", json::object());
        return status.value("error", "").find("outbox") != std::string::npos;
      },
      seconds(15)))
      << status.dump() << a_.daemon->log();
  EXPECT_EQ(status["queued"], 1) << status.dump();
  auto back = test::runSql(admin, "ALTER FUNCTION memq_team.memq_save_away RENAME TO memq_save");
  ASSERT_TRUE(back.ok) << back.message;
  EXPECT_TRUE(eventually([&] { return serverCount() == "1"; }, seconds(15))) << a_.daemon->log();
  EXPECT_TRUE(eventually([&] { return c.call("team/status", json::object())->value("queued", -1) == 0; },
                         kDeliveryDeadline));
}

// Two spellings of one server (its parameters in another order) are one team scope: one replica, one outbox, one
// sync thread draining it.
TEST_F(TeamTest, TwoSpellingsOfOneServerAreOneTeamScope) {
  startTeammate(a_, "a", "alice");
  const std::string other = (a_.dir / "other").string();
  initGitRepo(other);
  std::vector<std::string> words;
  std::istringstream in(conninfo("alice"));
  for (std::string w; in >> w;) words.push_back(w);
  ASSERT_GE(words.size(), 2u);
  std::string reordered;
  for (auto it = words.rbegin(); it != words.rend(); ++it) reordered += (reordered.empty() ? "" : " ") + *it;
  ASSERT_NE(reordered, conninfo("alice"));
  auto c = a_.daemon->client(other);
  auto connected = c.call("team/connect", {{"conninfo", reordered}});
  ASSERT_TRUE(connected.isOk()) << connected.status().toString();
  const std::string log = a_.daemon->log();
  size_t opened = 0;
  for (size_t at = log.find("opened team scope"); at != std::string::npos; at = log.find("opened team scope", at + 1)) {
    ++opened;
  }
  EXPECT_EQ(opened, 1u) << log;
}

// After the server restarts, the next request is served on a new connection, not failed on the one the restart
// closed: the server is up, so a state change succeeds and a save is created, not queued.
TEST_F(TeamTest, TheFirstRequestsAfterAServerRestartAreServed) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  auto first = teamSave(c, "Before the restart: the request connection is opened by this save");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  stopServer();
  ASSERT_EQ(cluster_->restart(), "");
  ASSERT_TRUE(eventually([&] { return c.call("team/status", json::object())->value("online", false); }, seconds(15)));
  auto hidden = c.call("memory/hide", {{"id", (*first)["id"]}, {"scope", "team"}});
  ASSERT_TRUE(hidden.isOk()) << hidden.status().toString();
  auto second = teamSave(c, "After the restart: saved on a new connection");
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ((*second)["status"], "created") << second->dump();
}

// A project connected to another server leaves the first: with no project naming it and nothing queued for it, its
// scope (connections, sync thread) is closed, not kept until memqd stops.
TEST_F(TeamTest, AProjectConnectedElsewhereClosesTheScopeItLeft) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  auto moved = c.call("team/connect", {{"conninfo", conninfo("bob")}});
  ASSERT_TRUE(moved.isOk()) << moved.status().toString();
  EXPECT_EQ((*moved)["role"], "bob");
  const std::string log = a_.daemon->log();
  const size_t closed = log.find("closed team scope");
  ASSERT_NE(closed, std::string::npos) << log;
  EXPECT_NE(log.substr(closed, log.find('\n', closed) - closed).find("alice"), std::string::npos) << log;
  auto status = c.call("team/status", json::object());
  ASSERT_TRUE(status.isOk());
  EXPECT_NE((*status)["conninfo"].get<std::string>().find("bob"), std::string::npos) << status->dump();
}

TEST_F(TeamTest, ASaveQueuedBeforeAKill9OfMemqdIsSentAfterItRestarts) {
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  stopServer();
  {
    auto c = a_.daemon->client(a_.project);
    auto queued = teamSave(c, "Survives a crash: the outbox is fsynced before the reply");
    ASSERT_TRUE(queued.isOk()) << queued.status().toString();
    ASSERT_EQ((*queued)["status"], "queued");
  }
  a_.daemon->kill9();
  ASSERT_EQ(cluster_->restart(), "");
  ASSERT_TRUE(a_.daemon->start()) << a_.daemon->log();
  // No request names the project: memqd opens the scope of a non-empty outbox at start and sends it.
  (void)eventually([&] { return serverCount() == "1"; }, seconds(10), milliseconds(50));
  ASSERT_EQ(serverCount(), "1") << a_.daemon->log();
  auto found = test::runSql(conninfo("memq_admin"), "SELECT id FROM memq_team.memories");
  ASSERT_TRUE(found.ok);
  EXPECT_TRUE(recallReturnsWithin(b_, "outbox fsynced crash", found.rows[0][0].value_or(""), kDeliveryDeadline));
}

TEST_F(TeamTest, ASecretInATeamSaveIsRedactedBeforeItReachesTheServer) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  const std::string token = std::string("ghp_") + "0123456789abcdefghijklmnopqrstuvwxyzAB";
  auto saved = teamSave(c, "The CI token lives in the vault", {{"details", "it was " + token + " until rotated"}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  auto r = test::runSql(conninfo("memq_admin"), "SELECT details FROM memq_team.memories");
  ASSERT_TRUE(r.ok) << r.message;
  ASSERT_EQ(r.rows.size(), 1u);
  const std::string details = r.rows[0][0].value_or("");
  EXPECT_EQ(details.find(token), std::string::npos) << details;
  EXPECT_NE(details.find("[REDACTED:github_token]"), std::string::npos) << details;
}

TEST_F(TeamTest, HostileInputThroughTheTeamPathGetsTheLocalCodesAndChangesNothingOnTheServer) {
  startTeammate(a_, "a", "alice");
  auto c = a_.daemon->client(a_.project);
  auto kept = teamSave(c, "A memory the hostile requests must leave alone");
  ASSERT_TRUE(kept.isOk());
  const std::string events = serverCount("audit");
  struct Case {
    std::string name;
    std::string method;
    json params;
  };
  const std::vector<Case> cases = {
      {"an oversized file list", "memory/save", {{"summary", "many files"}, {"files", std::vector<std::string>(40, "README.md")}}},
      {"an empty summary", "memory/save", {{"summary", ""}}},
      {"a NUL in the summary", "memory/save", {{"summary", std::string("before\0after", 12)}}},
      {"a path outside the project", "memory/save", {{"summary", "escape"}, {"files", {"../../etc/passwd"}}}},
      {"bad lines", "memory/save", {{"summary", "lines"}, {"files", {{{"path", "README.md"}, {"lines", {{5, 2}}}}}}}},
      {"bad state", "memory/list", {{"state", "bogus"}}},
      {"reject without a reason", "memory/reject", {{"id", (*kept)["id"]}}},
  };
  for (const auto& k : cases) {
    json local = k.params, team = k.params;
    team["scope"] = "team";
    auto l = c.call(k.method, local);
    auto t = c.call(k.method, team);
    EXPECT_EQ(l.isOk(), t.isOk()) << k.name;
    if (!l.isOk() && !t.isOk()) {
      EXPECT_EQ(l.status().code(), t.status().code()) << k.name << ": " << t.status().toString();
      EXPECT_EQ(l.status().data().value("field", ""), t.status().data().value("field", "")) << k.name;
    }
  }
  auto badScope = c.call("memory/save", {{"summary", "nowhere"}, {"scope", "teams"}});
  ASSERT_FALSE(badScope.isOk());
  EXPECT_EQ(badScope.status().code(), ErrorCode::kInvalidParams);
  // Invalid UTF-8 cannot be written by a JSON library: sent as raw bytes, once per scope.
  std::vector<int> codes;
  for (const std::string scope : {"project", "team"}) {
    auto raw = a_.daemon->client(a_.project);
    const std::string request = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"memory/save\",\"params\":{\"scope\":\"" +
                                scope + "\",\"summary\":\"bad \xff\xfe bytes\"}}\n";
    ASSERT_TRUE(raw.sendRaw(request).isOk());
    auto reply = raw.readMessage(seconds(5));
    ASSERT_TRUE(reply.isOk()) << reply.status().toString();
    ASSERT_TRUE(reply->contains("error")) << scope;
    codes.push_back((*reply)["error"]["code"].get<int>());
  }
  EXPECT_EQ(codes[0], codes[1]);
  EXPECT_EQ(serverCount(), "1");
  EXPECT_EQ(serverCount("audit"), events);
  EXPECT_EQ(serverCount("tombstones"), "0");
  // Oversized text is cut as a local save cuts it, with the same warning: the server holds the cut text.
  auto localLong = c.call("memory/save", {{"summary", std::string(300000, 'x')}});
  auto teamLong = teamSave(c, std::string(300000, 'y'));
  ASSERT_TRUE(localLong.isOk() && teamLong.isOk()) << teamLong.status().toString();
  EXPECT_EQ((*localLong)["warnings"], (*teamLong)["warnings"]);
  auto cut = test::runSql(conninfo("memq_admin"), "SELECT length(summary) FROM memq_team.memories WHERE summary LIKE 'yyy%'");
  ASSERT_TRUE(cut.ok && cut.rows.size() == 1) << cut.message;
  EXPECT_EQ(cut.rows[0][0].value_or(""), "200");
}

TEST_F(TeamTest, AConninfoWithAPasswordIsRefusedAndNeverStored) {
  ASSERT_NO_FATAL_FAILURE(startUnconnected(a_, "a"));
  auto cli = a_.daemon->memq("team connect " + shellQuote(conninfo("alice") + " password=hunter2"), a_.project);
  EXPECT_EQ(cli.exitCode, 2) << cli.out << cli.err;
  EXPECT_NE(cli.err.find("passfile"), std::string::npos) << cli.err;
  auto c = a_.daemon->client(a_.project);
  for (const std::string& named : {"postgresql://alice:hunter2@localhost/" + db_,
                                   conninfo("alice") + " sslpassword=hunter2"}) {
    auto viaRpc = c.call("team/connect", {{"conninfo", named}});
    ASSERT_FALSE(viaRpc.isOk()) << named;
    EXPECT_EQ(viaRpc.status().code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(viaRpc.status().data().value("field", ""), "conninfo");
  }
  auto sslCli = a_.daemon->memq("team connect " + shellQuote(conninfo("alice") + " sslpassword=hunter2"), a_.project);
  EXPECT_EQ(sslCli.exitCode, 2) << sslCli.out << sslCli.err;
  auto status = c.call("team/status", json::object());
  ASSERT_TRUE(status.isOk());
  EXPECT_FALSE((*status)["configured"].get<bool>());
  EXPECT_EQ(readTextFile(fs::path(a_.project) / ".git" / "config").find("hunter2"), std::string::npos);
  EXPECT_EQ(a_.daemon->log().find("hunter2"), std::string::npos);
  auto saved = teamSave(c, "no team here");
  ASSERT_FALSE(saved.isOk());
  EXPECT_EQ(saved.status().code(), ErrorCode::kScopeUnavailable);
}

TEST_F(TeamTest, AConnectWhoseReplicaCannotBeOpenedStoresNothing) {
  ASSERT_NO_FATAL_FAILURE(startUnconnected(a_, "a"));
  // Where the replicas go is a file: no replica can be made there.
  const fs::path replicas = fs::path(a_.daemon->dataDir()) / "team";
  writeTextFile(replicas, "not a directory\n");
  auto c = a_.daemon->client(a_.project);
  auto refused = c.call("team/connect", {{"conninfo", conninfo("alice")}});
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kStorageError) << refused.status().toString();
  auto notSet = c.call("team/status", json::object());
  ASSERT_TRUE(notSet.isOk()) << notSet.status().toString();
  EXPECT_FALSE((*notSet)["configured"].get<bool>()) << "the project's setting was written anyway: " << notSet->dump();
  fs::remove(replicas);
  auto connected = c.call("team/connect", {{"conninfo", conninfo("alice")}});
  ASSERT_TRUE(connected.isOk()) << connected.status().toString();
  EXPECT_TRUE(c.call("team/status", json::object())->value("configured", false));
}

TEST_F(TeamTest, TheFirstConnectAsTheOwnerMigratesAnEmptyDatabaseAndAWriterIsToldHow) {
  const std::string fresh = "fresh_" + db_.substr(0, 50);
  ASSERT_EQ(cluster_->createDatabase(fresh, "memq_owner"), "");
  ASSERT_NO_FATAL_FAILURE(startUnconnected(a_, "a"));
  auto c = a_.daemon->client(a_.project);
  auto writer = c.call("team/connect", {{"conninfo", cluster_->conninfo(fresh, "alice")}});
  ASSERT_FALSE(writer.isOk());
  EXPECT_EQ(writer.status().code(), ErrorCode::kForbidden) << writer.status().toString();
  EXPECT_NE(writer.status().message().find("owner"), std::string::npos) << writer.status().message();
  auto notSet = c.call("team/status", json::object());
  ASSERT_TRUE(notSet.isOk());
  EXPECT_FALSE((*notSet)["configured"].get<bool>()) << "a refused connect stores nothing";
  auto owner = c.call("team/connect", {{"conninfo", cluster_->conninfo(fresh, "memq_owner")}});
  ASSERT_TRUE(owner.isOk()) << owner.status().toString();
  EXPECT_TRUE((*owner)["online"].get<bool>()) << owner->dump();
  auto version = test::runSql(cluster_->conninfo(fresh), "SELECT max(version) FROM memq_team.schema_version");
  ASSERT_TRUE(version.ok) << version.message;
  EXPECT_EQ(version.rows[0][0].value_or(""), std::to_string(embeddedTeamMigrations().back().version));
  auto writerNow = c.call("team/connect", {{"conninfo", cluster_->conninfo(fresh, "alice")}});
  ASSERT_TRUE(writerNow.isOk()) << writerNow.status().toString();
  EXPECT_EQ((*writerNow)["role"], "alice");
}

TEST_F(TeamTest, EveryCommittedTeamSaveReachesARemoteSubscriber) {
  // Each of 40 saves must reach the other memqd's subscriber (waited on, with a deadline, never a sleep). How fast
  // is a figure, not an assertion: it is printed, and docs/performance.md quotes it.
  startTeammate(a_, "a", "alice");
  startTeammate(b_, "b", "bob");
  auto subscriber = b_.daemon->client(b_.project, "listener");
  ASSERT_TRUE(subscriber.call("subscribe", {{"scopes", {"team"}}}).isOk());
  auto writer = a_.daemon->client(a_.project);
  std::vector<double> ms;
  for (int i = 0; i < 40; ++i) {
    // From before the request: an upper bound of commit -> subscriber (it includes the save's own round trip, and
    // the notification may come in before A's reply, which waits for A's replica).
    const auto sent = std::chrono::steady_clock::now();
    auto saved = teamSave(writer, "Latency probe number " + std::to_string(i) + " for the team sync thread");
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    json change = waitForChange(subscriber, (*saved)["id"].get<std::string>(), kDeliveryDeadline);
    ASSERT_FALSE(change.is_null()) << "save " << i << " never reached the remote subscriber";
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
  }
  std::sort(ms.begin(), ms.end());
  const double p50 = ms[ms.size() / 2];
  const double p95 = ms[ms.size() * 95 / 100];
  std::printf("save request -> remote subscriber: p50 %.1f ms, p95 %.1f ms over %zu saves\n", p50, p95, ms.size());
}


// A server of its own, durable as a real one runs (fsync, synchronous commit and full page writes on), so that a
// kill loses exactly what a crash loses: nothing the server acknowledged.
class TeamDurableServerTest : public TeamTest {
 protected:
  void SetUp() override {
    durable_ = std::make_unique<PgCluster>();
    ASSERT_EQ(durable_->start(/*durable=*/true), "");
    ASSERT_EQ(durable_->createRole("memq_owner", {}, "CREATEROLE"), "");
    cluster_ = durable_.get();
    TeamTest::SetUp();
  }
  void TearDown() override {
    TeamTest::TearDown();
    cluster_ = gCluster;
    durable_.reset();
  }

  std::unique_ptr<PgCluster> durable_;
};

TEST_F(TeamDurableServerTest, KillingTheServerMidSaveLosesNoAcknowledgedSaveAndLocalScopesKeepServing) {
  startTeammate(a_, "a", "alice");
  // One writer saves without pause; the server dies (pg_ctl stop -m immediate: no checkpoint, connections cut) in
  // the middle of that stream; the writer stops after 20 more answers, and the server comes back.
  struct Outcome {
    std::string summary;
    std::string status;  // created, deduped, queued; empty when the save was refused
    std::string id;
    std::string error;
    ErrorCode code = ErrorCode::kOk;
  };
  std::vector<Outcome> outcomes;
  std::atomic<int> created{0}, answeredWhileDown{0};
  std::atomic<bool> down{false};
  std::thread writer([&] {
    auto c = a_.daemon->client(a_.project);
    for (int i = 0;; ++i) {
      Outcome o;
      o.summary = "Durable stream item " + std::to_string(i) + ": release tags are signed with the CI key";
      const bool wasDown = down.load();
      auto r = teamSave(c, o.summary);
      if (r) {
        o.status = (*r)["status"].get<std::string>();
        if ((*r)["id"].is_string()) o.id = (*r)["id"].get<std::string>();
        if (o.status == "created") ++created;
      } else {
        o.error = r.status().toString();
        o.code = r.status().code();
      }
      outcomes.push_back(std::move(o));
      if (wasDown && ++answeredWhileDown >= 20) break;
    }
  });
  const bool streaming = eventually([&] { return created.load() >= 40; }, seconds(30), milliseconds(5));
  cluster_->kill();
  down = true;
  const bool answeredOffline = eventually([&] { return answeredWhileDown.load() >= 20; }, seconds(30), milliseconds(5));
  writer.join();

  // memqd keeps serving the local scopes while the server is gone.
  auto c = a_.daemon->client(a_.project);
  auto local = c.call("memory/save", {{"summary", "The project scope still saves while the team server is down"}});
  EXPECT_TRUE(local.isOk()) << local.status().toString();
  EXPECT_EQ(recallIds(a_, "project scope saves team server down").size(), 1u);

  ASSERT_EQ(cluster_->restart(), "");
  down = false;
  // The outbox drains after the reconnect (backoff at most 5 s).
  const bool drained = eventually(
      [&] {
        auto s = c.call("team/status", json::object());
        return s && (*s)["online"].get<bool>() && (*s)["queued"] == 0;
      },
      seconds(30));
  ASSERT_TRUE(streaming && answeredOffline && drained) << a_.daemon->log();

  auto rows = test::runSql(conninfo("memq_admin"), "SELECT id, summary FROM memq_team.memories");
  ASSERT_TRUE(rows.ok) << rows.message;
  std::map<std::string, std::string> idBySummary;
  std::set<std::string> ids;
  for (const auto& row : rows.rows) {
    ids.insert(row[0].value_or(""));
    const std::string summary = row[1].value_or("");
    EXPECT_TRUE(idBySummary.emplace(summary, row[0].value_or("")).second) << "stored twice: " << summary;
  }
  int queued = 0, refused = 0;
  for (const auto& o : outcomes) {
    if (o.status == "created" || o.status == "deduped") {
      EXPECT_TRUE(ids.count(o.id)) << "acknowledged and lost: " << o.summary;
    } else if (o.status == "queued") {
      ++queued;
      EXPECT_TRUE(idBySummary.count(o.summary)) << "queued and lost: " << o.summary;
    } else {
      ++refused;  // refused with an error: it may or may not have reached the server, and was not acknowledged
      EXPECT_EQ(o.code, ErrorCode::kScopeUnavailable) << o.error;
    }
  }
  EXPECT_GT(queued + refused, 0) << "the server was killed while saves were being answered";
  EXPECT_EQ(static_cast<size_t>(rows.rows.size()), idBySummary.size());
  std::printf("%zu saves: %d created before the kill or after the restart, %d queued, %d refused; %zu on the server\n",
              outcomes.size(), created.load(), queued, refused, rows.rows.size());
  // Still answering.
  EXPECT_TRUE(c.call("memory/recall", {{"query", "release tags signed"}, {"scope", "team"}}).isOk());
}

}  // namespace
}  // namespace memq::testing
