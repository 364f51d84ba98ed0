// TeamSync (daemon/team/team_sync.h) on a replica of its own against a real PostgreSQL 15: after an outage a save's
// reply finds its write in the replica while the sync thread is still sleeping out its backoff, and wakes that
// thread; a rejected memory's tombstone reaches a replica that catches up only after the memory was purged; a login
// the server refuses is Forbidden and queues nothing, while a server that is down queues the save and answers a
// state change "offline".
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/embed/hashbag.h"
#include "daemon/model/content_hash.h"
#include "daemon/store/memory_store.h"
#include "daemon/team/team_sync.h"
#include "team/team_fixture.h"

namespace memq::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Polls `done` until it holds or `deadline` passes: a liveness bound (generous), never a measure.
bool eventually(const std::function<bool()>& done, milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

SaveInput note(const std::string& summary) {
  SaveInput in;
  in.summary = summary;
  return in;
}

std::string describe(const Tombstone& t) {
  return t.contentHash + " " + t.memoryId + " '" + t.reason + "' " + t.actor + " " + t.at;
}

// What Service::teamSave (daemon/service/team_operations.cc) does with a team save's answer: a save the server cannot
// be reached for (ScopeUnavailable) is queued in the outbox; any other error is the reply.
Result<TeamSaveResult> saveAsMemqdDoes(TeamSync& team, const SaveInput& input) {
  auto saved = team.save(input, "");
  if (!saved && saved.status().code() == ErrorCode::kScopeUnavailable) {
    Status queued = team.queue(OutboxRecord{"", input, ""});
    EXPECT_TRUE(queued.isOk()) << queued.toString();
  }
  return saved;
}

std::string reasonOf(const Status& st) {
  return st.data().is_object() ? st.data().value("reason", "") : "";
}

// A team scope as memqd opens one (daemon/service/team_scopes.cc): a MemoryStore replica in a directory of its own,
// fed by a TeamSync whose hooks take one lock around every store call (memqd's scope lock).
class Replica {
 public:
  // `backoff`, when given, is the sync thread's backoff from the first failed attempt on (min and max).
  Replica(const std::string& conninfo, const std::string& name, std::optional<milliseconds> backoff = std::nullopt) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("memq-team-sync-" + std::to_string(::getpid()) + "-" + info->name() + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    StoreOptions so;
    so.path = (dir_ / "replica.db").string();
    so.scope = "team";
    so.embedder = &embedder_;
    auto opened = MemoryStore::open(so);
    if (!opened) {
      ADD_FAILURE() << "cannot open the replica: " << opened.status().toString();
      return;
    }
    store_ = std::move(*opened);
    TeamReplicaHooks hooks;
    hooks.lastSeq = [this]() -> Result<int64_t> {
      std::lock_guard<std::mutex> lock(mutex_);
      return store_->replicaSeq();
    };
    hooks.mark = [this]() -> Result<ReplicaMark> {
      std::lock_guard<std::mutex> lock(mutex_);
      return store_->replicaMark();
    };
    hooks.reset = [this]() -> Status {
      std::lock_guard<std::mutex> lock(mutex_);
      return store_->resetReplica();
    };
    hooks.apply = [this](std::vector<ReplicatedChange> changes) -> Result<std::vector<ReplicatedChange>> {
      std::lock_guard<std::mutex> lock(mutex_);
      return store_->applyReplicated(std::move(changes));
    };
    TeamSyncOptions options;
    options.conninfo = conninfo;
    options.outboxPath = (dir_ / "replica.outbox").string();
    if (backoff) {
      options.minBackoff = *backoff;
      options.maxBackoff = *backoff;
    }
    team_ = std::make_unique<TeamSync>(std::move(options), std::move(hooks));
    team_->start();
  }
  ~Replica() {
    team_.reset();  // joins the sync thread before the replica closes
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  TeamSync& team() { return *team_; }
  bool ready() const { return team_ != nullptr; }

  Result<Memory> get(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return store_->get(id);
  }
  int64_t lastSeq() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto seq = store_->replicaSeq();
    return seq ? *seq : -1;
  }
  std::vector<Tombstone> tombstones() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto all = store_->tombstones();
    EXPECT_TRUE(all.isOk()) << all.status().toString();
    return all ? *all : std::vector<Tombstone>{};
  }

 private:
  fs::path dir_;
  HashbagEmbedder embedder_;
  std::mutex mutex_;
  std::unique_ptr<MemoryStore> store_;
  std::unique_ptr<TeamSync> team_;
};

// ---- a request reads its own write after an outage -----------------------------------------------------------------

TEST(TeamSyncOutageTest, AfterAnOutageASaveReadsItsOwnWriteWhileTheSyncThreadSleepsOutItsBackoff) {
  // A server of its own, killed and started again mid-test; the shared one keeps serving the other tests. Durable:
  // a server without fsync and synchronous commit loses its last roles and rows to the kill.
  PgCluster server;
  ASSERT_EQ(server.start(/*durable=*/true), "");
  ASSERT_EQ(server.createRole("memq_owner", {}, "CREATEROLE"), "");
  ASSERT_EQ(server.createDatabase("outage", "memq_owner"), "");
  {
    auto owner = TeamClient::connect(server.conninfo("outage", "memq_owner"));
    ASSERT_TRUE(owner.isOk()) << owner.status().toString();
    Status migrated = (*owner)->migrate();
    ASSERT_TRUE(migrated.isOk()) << migrated.toString();
  }
  ASSERT_EQ(server.createRole("alice", {"memq_team_writer"}), "");
  // The sync thread backs off 20 s from the first failed attempt on: what a real outage of a few seconds grows its
  // backoff to (0.1 s doubling, at most 5 s), made certain and longer than every deadline below, so that only a
  // request that does the work itself (and wakes the thread) meets them.
  Replica replica(server.conninfo("outage", "alice"), "outage", seconds(20));
  ASSERT_TRUE(replica.ready());
  ASSERT_TRUE(eventually([&] { return replica.team().online(); }, seconds(15))) << replica.team().status().lastError;
  // The request connection is opened before the outage: the restart closes it, and the next request replaces it.
  auto before = replica.team().save(note("Saved before the outage: the request connection is opened here"), "");
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  EXPECT_TRUE(replica.get(before->id).isOk());

  server.kill();
  ASSERT_TRUE(eventually([&] { return !replica.team().online(); }, seconds(10)))
      << "the sync thread did not see the server go";
  ASSERT_EQ(server.restart(), "");

  auto after = replica.team().save(note("Saved once the server is back, while the sync thread still sleeps"), "");
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_EQ(after->status, SaveStatus::kCreated);
  ASSERT_TRUE(after->seq.has_value());
  // memory/get right after the reply answers from the replica: the write is there, not 20 s later.
  auto held = replica.get(after->id);
  EXPECT_TRUE(held.isOk()) << "the save's reply came before its write reached the replica: "
                           << held.status().toString();
  EXPECT_GE(replica.lastSeq(), *after->seq);
  // And team/status says online well within the backoff the sync thread was sleeping out: the save woke it.
  EXPECT_TRUE(eventually([&] { return replica.team().online(); }, seconds(5)))
      << "the sync thread slept out its backoff although a request had reached the server";
}

// ---- a purged rejected memory's tombstone -------------------------------------------------------------------------

class TeamSyncTest : public TeamFixture {};

TEST_F(TeamSyncTest, AReplicaThatCatchesUpAfterARejectedMemoryWasPurgedHoldsItsTombstone) {
  Replica following(cluster_->conninfo(db_, "alice"), "following");
  ASSERT_TRUE(following.ready());
  ASSERT_TRUE(eventually([&] { return following.team().online(); }, seconds(15)));
  const std::string summary = "Deploys copy the build to the shared drive by hand";
  auto saved = following.team().save(note(summary), "");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  ASSERT_EQ(saved->status, SaveStatus::kCreated);
  Status rejected = following.team().setState(saved->id, "reject", std::string("deploys go through the pipeline"));
  ASSERT_TRUE(rejected.isOk()) << rejected.toString();
  ASSERT_EQ(following.tombstones().size(), 1u) << "a replica that held the row got its tombstone with the reject";

  auto mona = connectAs("mona");
  ASSERT_TRUE(mona);
  auto purged = mona->purge(saved->id);
  ASSERT_TRUE(purged.isOk()) << purged.status().toString();
  ASSERT_TRUE(eventually([&] { return following.lastSeq() >= *purged; }, seconds(10)));
  EXPECT_FALSE(following.get(saved->id).isOk()) << "the purge deletes the row";

  // A teammate who joins now: the journal's create and reject rows bring no memory (it is gone), only the purge row.
  Replica newcomer(cluster_->conninfo(db_, "bob"), "newcomer");
  ASSERT_TRUE(newcomer.ready());
  ASSERT_TRUE(eventually([&] { return newcomer.team().online(); }, seconds(15)));
  EXPECT_EQ(newcomer.lastSeq(), *purged);
  EXPECT_FALSE(newcomer.get(saved->id).isOk());
  const std::vector<Tombstone> expected = following.tombstones();
  const std::vector<Tombstone> got = newcomer.tombstones();
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(got.size(), 1u) << "the rejected text's tombstone is missing from a replica that caught up after the "
                               "purge: its export would let the text back in";
  EXPECT_EQ(describe(got[0]), describe(expected[0]));
  EXPECT_EQ(got[0].contentHash, contentHash(summary, ""));
  EXPECT_EQ(got[0].memoryId, saved->id);
  EXPECT_EQ(got[0].reason, "deploys go through the pipeline");
  EXPECT_EQ(got[0].actor, "team:alice");
}

// ---- a refused login is not an unreachable server -----------------------------------------------------------------

TEST_F(TeamSyncTest, ALoginTheServerRefusesIsForbiddenAndQueuesNothing) {
  // Roles are the cluster's, made once whichever test runs first; CONNECT is revoked on this test's database only.
  const std::string roles =
      "DO $$ BEGIN "
      "IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'nora') THEN "
      "  CREATE ROLE nora NOLOGIN IN ROLE memq_team_writer; END IF; "
      "IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'carl') THEN "
      "  CREATE ROLE carl LOGIN CONNECTION LIMIT 0 IN ROLE memq_team_writer; END IF; "
      "IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'paula') THEN "
      "  CREATE ROLE paula LOGIN PASSWORD 'paulas-pw-7' IN ROLE memq_team_writer, " +
      std::string(kPasswordGroup) + "; END IF; END $$";
  SqlOutcome made = sql(roles);
  ASSERT_TRUE(made.ok) << made.message;
  const auto expectRefused = [](const std::string& conninfo) {
    auto connected = TeamClient::connect(conninfo);
    ASSERT_FALSE(connected.isOk());
    EXPECT_EQ(connected.status().code(), ErrorCode::kForbidden) << connected.status().toString();
    EXPECT_EQ(reasonOf(connected.status()), "login_refused") << connected.status().toString();
    EXPECT_EQ(connected.status().message().find("not-paulas"), std::string::npos) << connected.status().message();
    EXPECT_EQ(connected.status().message().find("LOCATION"), std::string::npos) << connected.status().message();
  };
  {
    SCOPED_TRACE("a role without LOGIN (28000)");
    expectRefused(cluster_->conninfo(db_, "nora"));
  }
  {
    SCOPED_TRACE("no password to give");
    expectRefused(cluster_->conninfo(db_, "paula") + " passfile=/nonexistent");
  }
  {
    SCOPED_TRACE("a wrong password (28P01)");
    expectRefused(cluster_->conninfo(db_, "paula") + " passfile=/nonexistent password=not-paulas");
  }
  // The server answered, but cannot take the connection now (53300 too many connections): as good as unreachable.
  auto busy = TeamClient::connect(cluster_->conninfo(db_, "carl"));
  ASSERT_FALSE(busy.isOk());
  EXPECT_EQ(busy.status().code(), ErrorCode::kScopeUnavailable) << busy.status().toString();
  EXPECT_NE(busy.status().message().find("53300"), std::string::npos) << busy.status().message();

  SqlOutcome revoked = sql("REVOKE CONNECT ON DATABASE \"" + db_ + "\" FROM PUBLIC");
  ASSERT_TRUE(revoked.ok) << revoked.message;
  {
    SCOPED_TRACE("CONNECT revoked (42501)");
    expectRefused(cluster_->conninfo(db_, "alice"));
  }

  // Through the team scope: each save is Forbidden (the second one too, answered within the request connection's
  // retry interval from the first attempt), so memqd queues none; a state change is Forbidden as well.
  Replica refused(cluster_->conninfo(db_, "alice"), "refused");
  ASSERT_TRUE(refused.ready());
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    auto saved = saveAsMemqdDoes(refused.team(), note("Saved by a role whose CONNECT was revoked"));
    ASSERT_FALSE(saved.isOk());
    EXPECT_EQ(saved.status().code(), ErrorCode::kForbidden) << saved.status().toString();
    EXPECT_EQ(reasonOf(saved.status()), "login_refused") << saved.status().toString();
  }
  Status hidden = refused.team().setState("00000000-0000-4000-8000-000000000000", "hide", std::nullopt);
  EXPECT_EQ(hidden.code(), ErrorCode::kForbidden) << hidden.toString();
  const TeamSyncStatus status = refused.team().status();
  EXPECT_EQ(status.queued, 0u) << "a save the server refused the login for was queued";
  EXPECT_FALSE(status.online);
  EXPECT_NE(status.lastError.find("refused the login"), std::string::npos) << status.lastError;
}

TEST(TeamSyncOutageTest, AServerThatIsDownQueuesTheSaveAndAnswersTheFirstStateChangeOffline) {
  Replica down("host=/nonexistent-memq-dir port=5432 dbname=memq user=alice", "down");
  ASSERT_TRUE(down.ready());
  // The outage's first state change, which makes the request connection's first attempt: "offline", as every later
  // one (docs/team.md), not the attempt's connect_failed.
  Status hidden = down.team().setState("00000000-0000-4000-8000-000000000000", "hide", std::nullopt);
  EXPECT_EQ(hidden.code(), ErrorCode::kScopeUnavailable) << hidden.toString();
  EXPECT_EQ(reasonOf(hidden), "offline") << hidden.toString();
  Status purged = down.team().purge("00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(purged.code(), ErrorCode::kScopeUnavailable) << purged.toString();
  EXPECT_EQ(reasonOf(purged), "offline") << purged.toString();
  auto saved = saveAsMemqdDoes(down.team(), note("Saved while the team server is down"));
  ASSERT_FALSE(saved.isOk());
  EXPECT_EQ(saved.status().code(), ErrorCode::kScopeUnavailable) << saved.status().toString();
  EXPECT_EQ(down.team().status().queued, 1u) << "a save for a server that cannot be reached is queued";
}

}  // namespace
}  // namespace memq::test
