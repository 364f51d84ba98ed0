// The team scope's server (schema/team/, daemon/team/TeamClient) against a real PostgreSQL 15: migrations, the
// correction model across teammates, the audit journal's actor and append-only rule, privileges, notifications,
// reading the journal, hostile input, and a server that goes away.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "daemon/model/content_hash.h"
#include "daemon/team/team_config.h"
#include "embedded_migrations.h"
#include "migration_runner.h"
#include "team/team_fixture.h"

namespace memq::test {
namespace {

using std::chrono::milliseconds;

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new TeamClusterEnvironment());

const std::string kPrivilege = "42501";   // insufficient_privilege
const std::string kAppendOnly = "MQ004";  // the journal's trigger (schema/team/0001_team_core.sql)

// ---- migrations ---------------------------------------------------------------------------------------------------

class TeamMigrationTest : public TeamFixture {};

TEST_F(TeamMigrationTest, MigrationsApplyToAnEmptyDatabaseAndRerunningChangesNothing) {
  ASSERT_EQ(cluster_->createDatabase("t_empty_for_migration", "memq_owner"), "");
  auto owner = connectAs("memq_owner", "t_empty_for_migration");
  ASSERT_TRUE(owner);
  auto before = owner->schemaVersion();
  ASSERT_TRUE(before.isOk()) << before.status().toString();
  EXPECT_EQ(*before, 0);

  ASSERT_TRUE(owner->migrate().isOk());
  const int latest = latestVersion(embeddedTeamMigrations());
  EXPECT_EQ(*owner->schemaVersion(), latest);
  const std::string conn = cluster_->conninfo("t_empty_for_migration");
  for (const char* table : {"memories", "tombstones", "audit", "schema_version"}) {
    SqlOutcome r = runSql(conn, std::string("SELECT to_regclass('memq_team.") + table + "') IS NOT NULL");
    ASSERT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.rows[0][0], "t") << table;
  }
  const std::string recorded = "SELECT count(*) FROM memq_team.schema_version";
  EXPECT_EQ(runSql(conn, recorded).rows[0][0], std::to_string(embeddedTeamMigrations().size()));

  // Again: nothing applied twice (a second CREATE TABLE would fail), nothing recorded twice.
  Status again = owner->migrate();
  EXPECT_TRUE(again.isOk()) << again.toString();
  EXPECT_EQ(*owner->schemaVersion(), latest);
  EXPECT_EQ(runSql(conn, recorded).rows[0][0], std::to_string(embeddedTeamMigrations().size()));
}

TEST_F(TeamMigrationTest, AVersion1DatabaseUpgradesInPlaceAndItsRowsCanThenBePurged) {
  ASSERT_EQ(cluster_->createDatabase("t_upgrade_from_1", "memq_owner"), "");
  auto owner = connectAs("memq_owner", "t_upgrade_from_1");
  ASSERT_TRUE(owner && owner->migrate(1).isOk());
  auto alice = connectAs("alice", "t_upgrade_from_1");
  auto saved = alice->save(text("Saved before the upgrade"), "");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  EXPECT_EQ(connectAs("mona", "t_upgrade_from_1")->purge(saved->id).status().code(), ErrorCode::kStorageError)
      << "version 1 has no purge";

  ASSERT_TRUE(owner->migrate().isOk());
  EXPECT_EQ(*owner->schemaVersion(), latestVersion(embeddedTeamMigrations()));
  auto purged = connectAs("mona", "t_upgrade_from_1")->purge(saved->id);
  EXPECT_TRUE(purged.isOk()) << purged.status().toString();
}

TEST_F(TeamMigrationTest, ADatabaseRecordedAtANewerVersionIsRefusedUntouched) {
  ASSERT_TRUE(sql("INSERT INTO memq_team.schema_version (version) VALUES (9999)", "memq_owner").ok);
  Status st = owner_->migrate();
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), ErrorCode::kStorageError) << st.toString();
  EXPECT_NE(st.message().find("newer memq (schema version 9999"), std::string::npos) << st.message();
  EXPECT_EQ(scalar("SELECT max(version) FROM memq_team.schema_version"), "9999");
}

TEST_F(TeamMigrationTest, AFailingMigrationLeavesNothingBehind) {
  // The schema is made by hand up to the version table, with a `memories` table already there: migration 1 fails
  // on it, and neither its roles' grants, its functions nor its version row may remain.
  ASSERT_EQ(cluster_->createDatabase("t_half_made", "memq_owner"), "");
  const std::string conn = cluster_->conninfo("t_half_made", "memq_owner");
  ASSERT_TRUE(runSql(conn, "CREATE SCHEMA memq_team; CREATE TABLE memq_team.memories (x int)").ok);
  auto owner = connectAs("memq_owner", "t_half_made");
  ASSERT_TRUE(owner);
  Status st = owner->migrate();
  EXPECT_EQ(st.code(), ErrorCode::kStorageError) << st.toString();
  EXPECT_EQ(*owner->schemaVersion(), 0);
  EXPECT_EQ(runSql(conn, "SELECT to_regclass('memq_team.audit') IS NULL").rows[0][0], "t");
}

// ---- the correction model across teammates ----------------------------------------------------------------------

class TeamModelTest : public TeamFixture {};

TEST_F(TeamModelTest, OnlyAMaintainerPurgesAndARejectedTextStaysRefusedAfterThePurge) {
  auto alice = connectAs("alice");
  auto mona = connectAs("mona");
  auto saved = alice->save(text("Deploys go through the blue cluster"), "");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  ASSERT_TRUE(alice->setState(saved->id, "reject", std::string("the blue cluster is gone")).isOk());

  // A writer may not purge; a reader neither: nothing changes.
  auto byWriter = alice->purge(saved->id);
  EXPECT_EQ(byWriter.status().code(), ErrorCode::kForbidden) << byWriter.status().toString();
  EXPECT_EQ(connectAs("rita")->purge(saved->id).status().code(), ErrorCode::kForbidden);
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "1");

  auto purged = mona->purge(saved->id);
  ASSERT_TRUE(purged.isOk()) << purged.status().toString();
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "0");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.tombstones"), "1");
  EXPECT_EQ(scalar("SELECT actor || ':' || action || ':' || (detail->>'tombstone_kept') FROM memq_team.audit "
                   "WHERE seq = " + std::to_string(*purged)),
            "mona:purge:true");
  // The journal keeps every row, the purge's last.
  EXPECT_EQ(scalar("SELECT string_agg(action, ',' ORDER BY seq) FROM memq_team.audit"), "create,reject,purge");

  // The text is still refused, by whoever saves it.
  auto again = connectAs("bob")->save(text("deploys go through the BLUE cluster"), "");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, SaveStatus::kRejected);
  EXPECT_EQ(again->reason, "the blue cluster is gone");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "0");

  // Gone: a second purge is NotFound.
  EXPECT_EQ(mona->purge(saved->id).status().code(), ErrorCode::kNotFound);
}

TEST_F(TeamModelTest, AMemoryThatAnotherIsSupersededByCannotBePurgedUntilThatOneIsRestored) {
  auto alice = connectAs("alice");
  auto mona = connectAs("mona");
  auto oldOne = alice->save(text("Tests run with make check"), "");
  auto newOne = alice->save(text("Tests run with make test"), "");
  ASSERT_TRUE(oldOne.isOk() && newOne.isOk());
  ASSERT_TRUE(alice->setState(oldOne->id, "supersede", std::nullopt, newOne->id).isOk());
  auto refused = mona->purge(newOne->id);
  EXPECT_EQ(refused.status().code(), ErrorCode::kConflict) << refused.status().toString();
  EXPECT_NE(refused.status().message().find(oldOne->id), std::string::npos) << refused.status().message();
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "2");
  ASSERT_TRUE(alice->setState(oldOne->id, "restore", std::nullopt).isOk());
  EXPECT_TRUE(mona->purge(newOne->id).isOk());
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "1");
}

TEST_F(TeamModelTest, ARejectionByOneTeammateBlocksAnothersSave) {
  auto alice = connectAs("alice");
  auto bob = connectAs("bob");
  auto saved = alice->save(text("Use the staging bucket for uploads"), "");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  ASSERT_EQ(saved->status, SaveStatus::kCreated);
  auto rejected = alice->setState(saved->id, "reject", std::string("staging was shut down"));
  ASSERT_TRUE(rejected.isOk()) << rejected.status().toString();
  ASSERT_TRUE(rejected->has_value());

  // The same text, spelled with other case and white space: the same content hash, refused.
  auto blocked = bob->save(text("  use the STAGING bucket   for uploads "), "");
  ASSERT_TRUE(blocked.isOk()) << blocked.status().toString();
  EXPECT_EQ(blocked->status, SaveStatus::kRejected);
  EXPECT_EQ(blocked->id, saved->id);
  EXPECT_EQ(blocked->reason, "staging was shut down");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories WHERE state = 'active'"), "0");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "1");
  // Exactly one journal row for the blocked save, by bob.
  EXPECT_EQ(scalar("SELECT string_agg(actor || ':' || action, ',' ORDER BY seq) FROM memq_team.audit"),
            "alice:create,alice:reject,bob:blocked_save");
}

TEST_F(TeamModelTest, AnIdenticalActiveSaveReturnsTheFirstIdAndHiddenOrSupersededTextIsNotRevived) {
  auto alice = connectAs("alice");
  auto bob = connectAs("bob");
  auto first = alice->save(text("Run migrations with make migrate"), "");
  ASSERT_TRUE(first.isOk());
  auto again = bob->save(text("Run migrations with make migrate"), "");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, SaveStatus::kDeduped);
  EXPECT_EQ(again->id, first->id);
  EXPECT_FALSE(again->seq.has_value());
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "1");

  ASSERT_TRUE(alice->setState(first->id, "hide", std::nullopt).isOk());
  auto hidden = bob->save(text("Run migrations with make migrate"), "");
  ASSERT_TRUE(hidden.isOk());
  EXPECT_EQ(hidden->status, SaveStatus::kExistsHidden);
  EXPECT_EQ((*bob->get(first->id))->state, "hidden");

  auto replacement = alice->save(text("Run migrations with make db-migrate"), "");
  ASSERT_TRUE(replacement.isOk());
  ASSERT_TRUE(alice->setState(first->id, "supersede", std::nullopt, replacement->id).isOk());
  auto superseded = bob->save(text("Run migrations with make migrate"), "");
  ASSERT_TRUE(superseded.isOk());
  EXPECT_EQ(superseded->status, SaveStatus::kExistsSuperseded);
  EXPECT_EQ(superseded->supersededBy, replacement->id);
  EXPECT_EQ((*bob->get(first->id))->state, "superseded");
}

TEST_F(TeamModelTest, FilesAreStoredAsTheProtocolWritesThemWithNormalisedPathsAndLines) {
  auto alice = connectAs("alice");
  SaveInput in = text("The parser and its tests");
  const std::string blob(40, 'c');
  in.files = {"./src//parse.cc", FileEntry("src/parse_test.cc", LineRanges{{5, 9}, {1, 2}, {3, 3}}, blob),
              "src/parse.cc"};
  in.topics = {"parser", "Parser", "tests"};
  in.category = "context";
  auto saved = alice->save(in, "/work/project");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  auto got = alice->get(saved->id);
  ASSERT_TRUE(got.isOk() && got->has_value());
  EXPECT_EQ((*got)->files, nlohmann::json::parse(R"(["src/parse.cc",
      {"path": "src/parse_test.cc", "lines": [[1, 3], [5, 9]], "blob": ")" + blob + R"("}])"));
  EXPECT_EQ((*got)->topics, nlohmann::json::parse(R"(["parser", "tests"])"));
  EXPECT_EQ((*got)->category, "context");
  EXPECT_EQ((*got)->contentHash, contentHash("The parser and its tests", ""));
  EXPECT_EQ((*got)->createdBy, "alice");
}

TEST_F(TeamModelTest, StateChangesFollowTheCorrectionModel) {
  auto alice = connectAs("alice");
  auto a = alice->save(text("Tabs in the Makefile"), "");
  auto b = alice->save(text("Spaces in the Makefile"), "");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_TRUE(alice->setState(b->id, "hide", std::nullopt).isOk());
  // A hidden replacement is refused; hiding twice changes nothing and writes nothing.
  auto byHidden = alice->setState(a->id, "supersede", std::nullopt, b->id);
  EXPECT_EQ(byHidden.status().code(), ErrorCode::kConflict) << byHidden.status().toString();
  auto twice = alice->setState(b->id, "hide", std::nullopt);
  ASSERT_TRUE(twice.isOk());
  EXPECT_FALSE(twice->has_value());
  // A rejected memory is not restored, only unrejected; unrejecting takes the tombstone back.
  ASSERT_TRUE(alice->setState(a->id, "reject", std::string("wrong")).isOk());
  EXPECT_EQ(alice->setState(a->id, "restore", std::nullopt).status().code(), ErrorCode::kConflict);
  EXPECT_EQ(alice->setState(a->id, "reject", std::nullopt).status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(alice->setState(b->id, "unreject", std::nullopt).status().code(), ErrorCode::kConflict);
  ASSERT_TRUE(alice->setState(a->id, "unreject", std::nullopt).isOk());
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.tombstones"), "0");
  auto resaved = alice->save(text("Tabs in the Makefile"), "");
  ASSERT_TRUE(resaved.isOk());
  EXPECT_EQ(resaved->status, SaveStatus::kDeduped);
  auto missing = alice->setState("00000000-0000-4000-8000-000000000000", "hide", std::nullopt);
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.status().data().value("field", ""), "id");
}

// ---- the journal: who, append-only, notifications, reading it ---------------------------------------------------

class TeamJournalTest : public TeamFixture {
 protected:
  // A memq_save call in raw SQL, with the hash the client would compute.
  static std::string rawSave(const std::string& summary) {
    return "SELECT status FROM memq_team.memq_save('" + summary + "', '', NULL, '[]', '[]', '" +
           contentHash(summary, "") + "')";
  }
};

TEST_F(TeamJournalTest, TheActorIsTheAuthenticatedRoleWhateverTheClientSends) {
  auto alice = connectAs("alice");
  EXPECT_EQ(*alice->role(), "alice");
  auto saved = alice->save(text("Deploys go through the release branch"), "");
  ASSERT_TRUE(saved.isOk());
  auto events = alice->eventsSince(0, 10);
  ASSERT_TRUE(events.isOk());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].actor, "alice");
  EXPECT_EQ((*events)[0].memory->createdBy, "alice");

  // SET ROLE changes current_user, not the role that logged in: the row still says alice.
  SqlOutcome asGroup = sql("SET ROLE memq_team_writer; " + rawSave("Staging is eu-west-1"), "alice");
  ASSERT_TRUE(asGroup.ok) << asGroup.message;
  EXPECT_EQ(scalar("SELECT actor FROM memq_team.audit ORDER BY seq DESC LIMIT 1"), "alice");
  // Taking on another teammate's identity is refused; writing the journal directly is refused.
  EXPECT_FALSE(sql("SET ROLE bob", "alice").ok);
  EXPECT_FALSE(sql("SET SESSION AUTHORIZATION bob", "alice").ok);
  SqlOutcome forged =
      sql("INSERT INTO memq_team.audit (actor, action, memory_id) VALUES ('bob', 'create', 'x')", "alice");
  EXPECT_EQ(forged.sqlstate, kPrivilege) << forged.message;
  // Even the owner, who may insert, cannot name the actor: the trigger writes the authenticated role.
  SqlOutcome owner = sql(
      "INSERT INTO memq_team.audit (actor, action, memory_id) VALUES ('bob', 'create', 'x') RETURNING actor",
      "memq_owner");
  ASSERT_TRUE(owner.ok) << owner.message;
  EXPECT_EQ(owner.rows[0][0], "memq_owner");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.audit WHERE actor = 'bob'"), "0");
}

TEST_F(TeamJournalTest, AReaderReadsButCannotWrite) {
  auto alice = connectAs("alice");
  auto saved = alice->save(text("The CI cache key includes the lockfile"), "");
  ASSERT_TRUE(saved.isOk());
  auto rita = connectAs("rita");
  auto got = rita->get(saved->id);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->summary, "The CI cache key includes the lockfile");
  EXPECT_TRUE(rita->eventsSince(0, 10).isOk());

  auto save = rita->save(text("Readers should not write"), "");
  EXPECT_EQ(save.status().code(), ErrorCode::kForbidden) << save.status().toString();
  auto hide = rita->setState(saved->id, "hide", std::nullopt);
  EXPECT_EQ(hide.status().code(), ErrorCode::kForbidden) << hide.status().toString();
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.audit"), "1");
  EXPECT_EQ(scalar("SELECT state FROM memq_team.memories"), "active");
}

TEST_F(TeamJournalTest, NoRoleCanUpdateDeleteOrTruncateTheJournal) {
  auto alice = connectAs("alice");
  ASSERT_TRUE(alice->save(text("Keep the journal"), "").isOk());
  const std::string before = scalar("SELECT string_agg(seq || actor || action || memory_id, ',') FROM memq_team.audit");
  const std::vector<std::string> writes = {"UPDATE memq_team.audit SET actor = 'bob'", "DELETE FROM memq_team.audit",
                                           "TRUNCATE memq_team.audit"};
  for (const std::string& statement : writes) {
    SCOPED_TRACE(statement);
    // Writers and readers hold no privilege on the table.
    for (const char* role : {"alice", "rita"}) {
      SqlOutcome r = sql(statement, role);
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.sqlstate, kPrivilege) << role << ": " << r.message;
    }
    // The owner (not a superuser) and even the superuser are stopped by the journal's triggers.
    for (const char* role : {"memq_owner", "memq_admin"}) {
      SqlOutcome r = sql(statement, role);
      EXPECT_FALSE(r.ok);
      EXPECT_EQ(r.sqlstate, kAppendOnly) << role << ": " << r.message;
      EXPECT_NE(r.message.find("append-only"), std::string::npos) << r.message;
    }
  }
  EXPECT_EQ(scalar("SELECT string_agg(seq || actor || action || memory_id, ',') FROM memq_team.audit"), before);
}

TEST_F(TeamJournalTest, ASaveWakesAListeningConnectionWithItsSeq) {
  auto listener = connectAs("bob");
  ASSERT_TRUE(listener->listen().isOk());
  auto alice = connectAs("alice");
  auto saved = alice->save(text("Feature flags live in flags.yaml"), "");
  ASSERT_TRUE(saved.isOk());
  ASSERT_TRUE(saved->seq.has_value());
  auto woke = listener->waitForNotification(milliseconds(10000));
  ASSERT_TRUE(woke.isOk()) << woke.status().toString();
  ASSERT_TRUE(woke->has_value()) << "no notification within 10 s";
  EXPECT_EQ(**woke, *saved->seq);

  // A deduplicated save changes nothing and notifies no one: the next notification is the hide's.
  ASSERT_TRUE(alice->save(text("Feature flags live in flags.yaml"), "").isOk());
  auto hide = alice->setState(saved->id, "hide", std::nullopt);
  ASSERT_TRUE(hide.isOk() && hide->has_value());
  auto next = listener->waitForNotification(milliseconds(10000));
  ASSERT_TRUE(next.isOk() && next->has_value());
  EXPECT_EQ(**next, **hide);
}

TEST_F(TeamJournalTest, EventsSinceReturnsEachEventOnceInSeqOrder) {
  auto alice = connectAs("alice");
  auto bob = connectAs("bob");
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto s = (i % 2 ? bob : alice)->save(text("Note number " + std::to_string(i)), "");
    ASSERT_TRUE(s.isOk());
    ids.push_back(s->id);
  }
  ASSERT_TRUE(alice->setState(ids[0], "hide", std::nullopt).isOk());

  std::vector<int64_t> seen;
  int64_t cursor = 0;
  while (true) {
    auto page = bob->eventsSince(cursor, 2);
    ASSERT_TRUE(page.isOk()) << page.status().toString();
    if (page->empty()) break;
    EXPECT_LE(page->size(), 2u);
    for (const auto& e : *page) seen.push_back(e.seq);
    cursor = page->back().seq;
  }
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), seen.size());
  // Each event carries the memory as it is now: the first one's create shows it hidden.
  auto all = bob->eventsSince(0, 100);
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ((*all)[0].action, "create");
  ASSERT_TRUE((*all)[0].memory.has_value());
  EXPECT_EQ((*all)[0].memory->state, "hidden");
  EXPECT_EQ((*all)[5].action, "hide");
  EXPECT_EQ((*all)[5].detail.value("from", ""), "active");

  // Later changes come after the cursor, and only they.
  ASSERT_TRUE(alice->save(text("One more note"), "").isOk());
  auto later = bob->eventsSince(cursor, 100);
  ASSERT_TRUE(later.isOk());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_GT((*later)[0].seq, cursor);
}

TEST_F(TeamJournalTest, AReaderFollowingConcurrentWritersSeesEveryEventOnce) {
  // Two writers save at once while a reader follows the journal by cursor: seq order is commit order, so the
  // reader never skips a row that commits after a larger seq it has already seen.
  constexpr int kPerWriter = 25;
  std::atomic<int> writersDone{0};
  auto writer = [&](const std::string& role) {
    auto c = TeamClient::connect(cluster_->conninfo(db_, role));
    for (int i = 0; c && i < kPerWriter; ++i) (void)(*c)->save(text(role + " note " + std::to_string(i)), "");
    ++writersDone;
  };
  std::thread a(writer, "alice"), b(writer, "bob");
  auto reader = connectAs("rita");
  std::vector<int64_t> seen;
  int64_t cursor = 0;
  while (true) {
    const bool finished = writersDone == 2;
    auto page = reader->eventsSince(cursor, 7);
    ASSERT_TRUE(page.isOk());
    for (const auto& e : *page) seen.push_back(e.seq);
    if (!page->empty()) cursor = page->back().seq;
    if (finished && page->empty()) break;
  }
  a.join();
  b.join();
  SqlOutcome all = sql("SELECT seq FROM memq_team.audit ORDER BY seq");
  std::vector<int64_t> expected;
  for (const auto& row : all.rows) expected.push_back(std::stoll(*row[0]));
  EXPECT_EQ(expected.size(), static_cast<size_t>(2 * kPerWriter));
  EXPECT_EQ(seen, expected);
}

// ---- hostile input ------------------------------------------------------------------------------------------------

class TeamHostileTest : public TeamFixture {
 protected:
  // The rows of all three tables, to show a refused request changed nothing.
  std::string everything() {
    return scalar("SELECT (SELECT count(*) FROM memq_team.memories) || '/' || "
                  "(SELECT count(*) FROM memq_team.audit) || '/' || (SELECT count(*) FROM memq_team.tombstones)");
  }
};

TEST_F(TeamHostileTest, BadSavesGetTheLocalCodesNamingTheFieldAndChangeNothing) {
  auto alice = connectAs("alice");
  ASSERT_TRUE(alice->save(text("A seed memory"), "").isOk());
  const std::string baseline = everything();
  struct Case {
    std::string name;
    SaveInput input;
    ErrorCode code;
    std::string field;
  };
  std::vector<Case> cases = {
      {"summary_not_utf8", text("bad \xff\xfe bytes"), ErrorCode::kInvalidParams, "summary"},
      {"details_not_utf8", text("fine", "\xc3\x28"), ErrorCode::kInvalidParams, "details"},
      {"nul_in_summary", text(std::string("cut\0here", 8)), ErrorCode::kInvalidParams, "summary"},
      {"nul_in_details", text("x", std::string("a\0b", 3)), ErrorCode::kInvalidParams, "details"},
      {"summary_is_empty", text(""), ErrorCode::kInvalidParams, "summary"},
      {"summary_is_white_space", text(" \t\n "), ErrorCode::kInvalidParams, "summary"},
  };
  SaveInput category = text("x");
  category.category = "rm -rf /";
  cases.push_back({"bogus_category", category, ErrorCode::kInvalidParams, "category"});
  SaveInput nulPath = text("x");
  nulPath.files = {std::string("src/a\0b.cc", 10)};
  cases.push_back({"nul_in_a_path", nulPath, ErrorCode::kInvalidParams, "files[0]"});
  SaveInput traversal = text("x");
  traversal.files = {"../../etc/passwd"};
  cases.push_back({"path_traversal", traversal, ErrorCode::kForbidden, "files[0]"});
  SaveInput many = text("x");
  for (int i = 0; i < 17; ++i) many.files.push_back("src/f" + std::to_string(i) + ".cc");
  cases.push_back({"too_many_files", many, ErrorCode::kInvalidParams, "files"});
  SaveInput badLines = text("x");
  badLines.files = {FileEntry("src/a.cc", LineRanges{{0, 3}})};
  cases.push_back({"line_zero", badLines, ErrorCode::kInvalidParams, "files[0].lines[0]"});
  SaveInput badBlob = text("x");
  badBlob.files = {FileEntry("src/a.cc", LineRanges{{1, 3}}, std::string("'; DROP TABLE x; --"))};
  cases.push_back({"blob_not_hex", badBlob, ErrorCode::kInvalidParams, "files[0].blob"});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = alice->save(c.input, "/work/project");
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), c.code) << r.status().toString();
    EXPECT_EQ(r.status().data().is_object() ? r.status().data().value("field", "") : "", c.field)
        << r.status().toString();
    EXPECT_EQ(everything(), baseline);
  }
}

TEST_F(TeamHostileTest, BadStateChangesGetADefinedErrorAndChangeNothing) {
  auto alice = connectAs("alice");
  auto seed = alice->save(text("A seed memory"), "");
  ASSERT_TRUE(seed.isOk());
  const std::string baseline = everything();
  struct Case {
    std::string name, id, action;
    std::optional<std::string> reason, by;
    ErrorCode code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"bad_action", seed->id, "obliterate", std::nullopt, std::nullopt, ErrorCode::kInvalidParams, "action"},
      {"action_is_sql", seed->id, "hide'; DELETE FROM memq_team.memories; --", std::nullopt, std::nullopt,
       ErrorCode::kInvalidParams, "action"},
      {"state_name_as_action", seed->id, "rejected", std::string("r"), std::nullopt, ErrorCode::kInvalidParams,
       "action"},
      {"id_is_sql", "' OR 1=1; --", "hide", std::nullopt, std::nullopt, ErrorCode::kNotFound, "id"},
      {"id_with_a_nul", seed->id + std::string("\0x", 2), "hide", std::nullopt, std::nullopt,
       ErrorCode::kInvalidParams, "id"},
      {"reason_not_utf8", seed->id, "reject", std::string("\xff"), std::nullopt, ErrorCode::kInvalidParams,
       "reason"},
      {"supersede_itself", seed->id, "supersede", std::nullopt, seed->id, ErrorCode::kInvalidParams, "by"},
      {"supersede_by_nothing", seed->id, "supersede", std::nullopt, std::string("%"), ErrorCode::kNotFound, "by"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = alice->setState(c.id, c.action, c.reason, c.by);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), c.code) << r.status().toString();
    EXPECT_EQ(r.status().data().is_object() ? r.status().data().value("field", "") : "", c.field)
        << r.status().toString();
    EXPECT_EQ(everything(), baseline);
    EXPECT_EQ((*alice->get(seed->id))->state, "active");
  }
}

TEST_F(TeamHostileTest, SqlMetacharactersAreStoredAsTextAndHugeTextIsTruncatedAsLocally) {
  auto alice = connectAs("alice");
  const std::string sqlish = "'); DROP TABLE memq_team.audit; -- $1 \\ \" %_";
  auto s = alice->save(text(sqlish, "SELECT pg_sleep(10); $$ $body$"), "");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->status, SaveStatus::kCreated);
  auto got = alice->get(s->id);
  ASSERT_TRUE(got.isOk() && got->has_value());
  EXPECT_EQ((*got)->summary, sqlish);
  EXPECT_EQ((*got)->details, "SELECT pg_sleep(10); $$ $body$");
  EXPECT_EQ(scalar("SELECT to_regclass('memq_team.audit') IS NOT NULL"), "t");

  // A megabyte of summary and of details: cut to 200 and 2000 with a warning each, as a local save does.
  auto huge = alice->save(text(std::string(1000 * 1000, 'm'), std::string(1000 * 1000, 'd')), "");
  ASSERT_TRUE(huge.isOk()) << huge.status().toString();
  EXPECT_EQ(huge->status, SaveStatus::kCreated);
  EXPECT_EQ(huge->warnings.size(), 2u);
  auto big = alice->get(huge->id);
  EXPECT_EQ((*big)->summary.size(), 200u);
  EXPECT_EQ((*big)->details.size(), 2000u);
}

// A SQL string literal of text with no single quote (the tests' own texts).
std::string quoteLiteral(const std::string& text) { return "'" + text + "'"; }

TEST_F(TeamHostileTest, TheServerHashesTextOfAnyScriptAsTheClientDoes) {
  // Text in several scripts, with Unicode white space and the case mappings that differ from a simple per-letter
  // one (final sigma, dotted capital I, sharp s): memq's hash is accepted and one of other text is refused.
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"ΟΔΥΣΣΕΥΣ ΚΑΙ ΣΟΦΙΑ", "Σ Σα ΑΣ."},
      {"\u0130stanbul\u3000\u00a0yap\u0131land\u0131rmas\u0131", "  Stra\u00dfe\u2003\u1e9e  "},
      {"Сборка ЛОМАЕТСЯ без --no-cache", "\ufeffЖурнал\u2028Ошибок"},
      {"デプロイ手順\u205fＡＢＣ", "Ǆ ǅ ǆ \U0001F600"},
  };
  for (const auto& [summary, details] : texts) {
    const std::string& s = summary;
    const std::string& d = details;
    auto alice = connectAs("alice");
    auto saved = alice->save(text(s, d), "");
    ASSERT_TRUE(saved.isOk()) << s << ": " << saved.status().toString();
    EXPECT_EQ(saved->status, SaveStatus::kCreated) << s;
    SqlOutcome forged = sql("SELECT * FROM memq_team.memq_save(" + quoteLiteral(s + "!") + ", " + quoteLiteral(d) +
                                ", NULL, '[]', '[]', '" + contentHash(s, d) + "')",
                            "alice");
    EXPECT_EQ(forged.sqlstate, "MQ003") << s << ": " << forged.message;
  }
}

TEST_F(TeamHostileTest, RejectedTextOfAnyScriptCannotComeBackWithAMadeUpHash) {
  auto alice = connectAs("alice");
  const std::string s = "Ключи хранятся в репозитории", d = "Σημείωση";
  auto saved = alice->save(text(s, d), "");
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  ASSERT_TRUE(alice->setState(saved->id, "reject", std::string("keys never go in the repository")).isOk());
  // The same text with the hash of another: refused; it never becomes a second, active row.
  SqlOutcome forged = sql("SELECT * FROM memq_team.memq_save(" + quoteLiteral(s) + ", " + quoteLiteral(d) +
                              ", NULL, '[]', '[]', '" + contentHash("something else", "") + "')",
                          "bob");
  EXPECT_EQ(forged.sqlstate, "MQ003") << forged.message;
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "1");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories WHERE state = 'active'"), "0");
}

TEST_F(TeamHostileTest, TheServerRefusesWhatTheClientWouldNotSend) {
  // A writer calling the function directly, past TeamClient's checks: the server holds the line itself.
  const std::string hash = contentHash("honest text", "");
  const std::string call = "SELECT * FROM memq_team.memq_save(";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a hash of other text", call + "'honest text', '', NULL, '[]', '[]', '" + contentHash("other", "") + "')"},
      {"a hash that is no hash", call + "'honest text', '', NULL, '[]', '[]', 'not-a-hash')"},
      {"a summary too long", call + "repeat('x', 201), '', NULL, '[]', '[]', '" + hash + "')"},
      {"files that are no array", call + "'honest text', '', NULL, '[]', '{\"a\": 1}', '" + hash + "')"},
      {"a bogus category", call + "'honest text', '', 'rm', '[]', '[]', '" + hash + "')"},
      {"a topic too long", call + "'honest text', '', NULL, jsonb_build_array(repeat('t', 33)), '[]', '" + hash +
                               "')"},
      {"a path too long", call + "'honest text', '', NULL, '[]', jsonb_build_array(repeat('p', 4096)), '" + hash +
                              "')"},
      {"65 ranges", call + "'honest text', '', NULL, '[]', jsonb_build_array(jsonb_build_object('path', 'a.c', "
                           "'lines', (SELECT jsonb_agg(jsonb_build_array(i * 2, i * 2)) FROM generate_series(1, 65) i)"
                           ")), '" + hash + "')"},
      {"a range backwards", call + "'honest text', '', NULL, '[]', '[{\"path\": \"a.c\", \"lines\": [[9, 3]]}]', '" +
                                   hash + "')"},
      {"line zero", call + "'honest text', '', NULL, '[]', '[{\"path\": \"a.c\", \"lines\": [[0, 3]]}]', '" + hash +
                           "')"},
      {"an extra key", call + "'honest text', '', NULL, '[]', '[{\"path\": \"a.c\", \"lines\": [[1, 3]], "
                              "\"x\": 1}]', '" + hash + "')"},
  };
  for (const auto& [name, statement] : cases) {
    SqlOutcome r = sql(statement, "alice");
    EXPECT_FALSE(r.ok) << name;
    EXPECT_EQ(r.sqlstate, "MQ003") << name << ": " << r.message;
  }
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.memories"), "0");
  EXPECT_EQ(scalar("SELECT count(*) FROM memq_team.audit"), "0");
  // The same call with well-formed values is accepted: the refusals above are the values', not the call's.
  SqlOutcome fine = sql(call + "'honest text', '', 'gotcha', '[\"t\"]', '[\"b.c\", {\"path\": \"a.c\", "
                               "\"lines\": [[1, 3], [7, 7]], \"blob\": \"" + std::string(40, 'a') + "\"}]', '" +
                            hash + "')",
                        "alice");
  EXPECT_TRUE(fine.ok) << fine.message;
  // The helpers the functions use are not callable by teammates.
  EXPECT_EQ(sql("SELECT memq_team.append_event('create', 'x', '{}')", "alice").sqlstate, kPrivilege);
}

// ---- connections --------------------------------------------------------------------------------------------------

TEST(TeamConninfoTest, APasswordNeverReachesTheDisplayedConninfo) {
  const std::string kv = conninfoWithoutPassword("host=/tmp/x user=alice password=s3cret dbname=memq");
  EXPECT_EQ(kv.find("s3cret"), std::string::npos) << kv;
  const std::string keyPass = conninfoWithoutPassword("host=/tmp/x user=alice sslpassword=k3ypass dbname=memq");
  EXPECT_EQ(keyPass.find("k3ypass"), std::string::npos) << keyPass;
  EXPECT_NE(kv.find("user='alice'"), std::string::npos) << kv;
  const std::string uri = conninfoWithoutPassword("postgresql://alice:s3cret@localhost:1/memq?sslmode=disable");
  EXPECT_EQ(uri.find("s3cret"), std::string::npos) << uri;
  EXPECT_NE(uri.find("dbname='memq'"), std::string::npos) << uri;
  // A malformed URI is refused without quoting it: the part libpq would quote may be the password.
  auto malformed = TeamClient::connect("postgresql://alice:s3cret%zz@localhost/memq");
  ASSERT_FALSE(malformed.isOk());
  EXPECT_EQ(malformed.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(malformed.status().message().find("s3cret"), std::string::npos) << malformed.status().message();
  // A server that is not there: ScopeUnavailable, and the message shows no password either.
  auto c = TeamClient::connect("host=/nonexistent-memq-dir user=alice password=s3cret dbname=memq");
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(c.status().message().find("s3cret"), std::string::npos) << c.status().message();
}

// A silent server is given up in about 30 s (keepalives, tcp_user_timeout) and a connection attempt in `seconds`,
// unless the conninfo names its own values.
TEST(TeamConninfoTest, TimeoutsAreAddedUnlessTheConninfoNamesThem) {
  const std::string added = withTimeouts("host=db.internal dbname=memq", 2);
  for (const char* expected : {"connect_timeout=2", "keepalives_idle=15", "keepalives_interval=5", "keepalives_count=3",
                               "tcp_user_timeout=30000", "host='db.internal'"}) {
    EXPECT_NE(added.find(expected), std::string::npos) << expected << " in " << added;
  }
  const std::string own = withTimeouts("host=db.internal keepalives_idle=60 connect_timeout=9", 2);
  EXPECT_NE(own.find("keepalives_idle='60'"), std::string::npos) << own;
  EXPECT_EQ(own.find("keepalives_idle=15"), std::string::npos) << own;
  EXPECT_NE(own.find("connect_timeout='9'"), std::string::npos) << own;
  EXPECT_EQ(own.find("connect_timeout=2"), std::string::npos) << own;
}

class TeamConnectionTest : public TeamFixture {};

TEST_F(TeamConnectionTest, APasswordComesFromAPassfileAndNeverShows) {
  static bool made = false;  // roles are the cluster's, not the database's
  if (!made) {
    ASSERT_EQ(cluster_->createPasswordRole("pat", "s3cret-pw", {"memq_team_writer"}), "");
    made = true;
  }
  const std::string passfile = cluster_->dir() + "/pgpass";
  {
    std::ofstream out(passfile);
    out << cluster_->dir() << ":5432:" << db_ << ":pat:s3cret-pw\n";
  }
  ASSERT_EQ(::chmod(passfile.c_str(), 0600), 0);  // libpq ignores a passfile others may read
  auto viaFile = TeamClient::connect(cluster_->conninfo(db_, "pat") + " passfile=" + passfile);
  ASSERT_TRUE(viaFile.isOk()) << viaFile.status().toString();
  EXPECT_EQ(*(*viaFile)->role(), "pat");
  // Without it the server wants the password; a wrong one is refused, and no message shows what was given. Both are
  // the server's answer, not a server that cannot be reached: Forbidden (a save is not queued for it).
  auto none = TeamClient::connect(cluster_->conninfo(db_, "pat") + " passfile=/nonexistent");
  EXPECT_EQ(none.status().code(), ErrorCode::kForbidden) << none.status().toString();
  auto wrong = TeamClient::connect(cluster_->conninfo(db_, "pat") + " passfile=/nonexistent password=not-it");
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().code(), ErrorCode::kForbidden) << wrong.status().toString();
  EXPECT_EQ(wrong.status().message().find("not-it"), std::string::npos) << wrong.status().message();
  auto given = TeamClient::connect(cluster_->conninfo(db_, "pat") + " passfile=/nonexistent password=s3cret-pw");
  ASSERT_TRUE(given.isOk()) << given.status().toString();
  EXPECT_EQ((*given)->displayConninfo().find("s3cret-pw"), std::string::npos) << (*given)->displayConninfo();
}

TEST_F(TeamConnectionTest, AnEmptyConninfoTakesEverythingFromThePgEnvironment) {
  const std::vector<std::pair<const char*, std::string>> env = {
      {"PGHOST", cluster_->dir()}, {"PGPORT", "5432"}, {"PGUSER", "bob"}, {"PGDATABASE", db_}};
  for (const auto& [name, value] : env) ::setenv(name, value.c_str(), 1);
  auto c = TeamClient::connect("");
  for (const auto& [name, value] : env) ::unsetenv(name);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(*(*c)->role(), "bob");
  EXPECT_EQ(*(*c)->schemaVersion(), latestVersion(embeddedTeamMigrations()));
}

TEST_F(TeamConnectionTest, AServerThatGoesAwayIsConnectionLostNotAStorageError) {
  // A cluster of its own, killed mid-test; the shared one keeps serving the other tests.
  PgCluster doomed;
  ASSERT_EQ(doomed.start(), "");
  ASSERT_EQ(doomed.createRole("memq_owner", {}, "CREATEROLE"), "");
  ASSERT_EQ(doomed.createDatabase("doomed", "memq_owner"), "");
  auto c = TeamClient::connect(doomed.conninfo("doomed", "memq_owner"));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE((*c)->migrate().isOk());
  ASSERT_TRUE((*c)->listen().isOk());
  doomed.kill();
  auto save = (*c)->save(text("Saved into the void"), "");
  ASSERT_FALSE(save.isOk());
  EXPECT_EQ(save.status().code(), ErrorCode::kScopeUnavailable) << save.status().toString();
  const nlohmann::json& data = save.status().data();
  EXPECT_EQ(data.is_object() ? data.value("reason", "") : "", "connection_lost") << save.status().toString();
  auto wait = (*c)->waitForNotification(milliseconds(2000));
  ASSERT_FALSE(wait.isOk());
  EXPECT_EQ(wait.status().code(), ErrorCode::kScopeUnavailable) << wait.status().toString();
}

}  // namespace
}  // namespace memq::test
