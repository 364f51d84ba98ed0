// After memqd stops on SIGTERM, each scope's database file holds everything: the WAL is folded into it at close
// (checkpointForClose, database.h), so the -wal is gone or empty and the database file alone, copied without its WAL
// or save journal, holds every saved memory. An idle read-only connection of another process stays open on the
// project's database across the stop (SQLite's own checkpoint at close would then not run). The uses recall records
// (mark_used), which memqd writes after the reply, are in the file too.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/integration/memqd_fixture.h"

namespace memq::testing {
namespace {

class CleanShutdownTest : public MemqdTest {
 protected:
  // After a clean stop: the WAL is gone or empty, and a copy of the database file alone (opened in place, SQLite
  // would also read what a -wal left behind holds) is what the test reads.
  fs::path databaseFileAlone(const std::string& dbPath) {
    const fs::path wal = dbPath + "-wal";
    if (fs::exists(wal)) {
      EXPECT_EQ(fs::file_size(wal), 0u) << "memqd stopped cleanly but its WAL still holds frames";
    }
    const fs::path copy = dir_ / "copy";
    fs::create_directories(copy);
    fs::copy_file(dbPath, copy / "memory.db");
    return copy / "memory.db";
  }
};

TEST_F(CleanShutdownTest, SigtermLeavesEverySaveInTheDatabaseFileAndNoWal) {
  makeWorkDir("clean-stop");
  fs::create_directories(project_);
  startDaemon();
  constexpr int kSaves = 600;
  std::string dbPath;
  {
    RpcClient c = daemon_->client(project_);
    auto init = c.call("initialize", {{"client_name", "clean-stop"}, {"project_root", project_}});
    ASSERT_TRUE(init.isOk()) << init.status().toString();
    dbPath = (*init)["project"]["db_path"].get<std::string>();
    for (int i = 0; i < kSaves; ++i) {
      auto r = c.call("memory/save", {{"summary", "clean shutdown memory " + std::to_string(i) + " folds the wal"},
                                      {"details", std::string(200 + i % 9 * 100, 'w')},
                                      {"topics", {"wal", "t" + std::to_string(i % 5)}}});
      ASSERT_TRUE(r.isOk()) << i << ": " << r.status().toString();
    }
  }
  ASSERT_TRUE(fs::exists(dbPath)) << dbPath;
  auto other = std::make_unique<SQLite::Database>(dbPath, SQLite::OPEN_READONLY);
  ASSERT_EQ(daemon_->stop(), 0) << daemon_->log();

  SQLite::Database raw(databaseFileAlone(dbPath).string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), kSaves);
  EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  other.reset();
}

TEST_F(CleanShutdownTest, UsesRecordedByRecallAreInTheDatabaseFileAfterSigterm) {
  makeWorkDir("clean-stop-usage");
  fs::create_directories(project_);
  startDaemon();
  std::string dbPath, id;
  {
    RpcClient c = daemon_->client(project_);
    auto init = c.call("initialize", {{"client_name", "clean-stop"}, {"project_root", project_}});
    ASSERT_TRUE(init.isOk()) << init.status().toString();
    dbPath = (*init)["project"]["db_path"].get<std::string>();
    auto saved = c.call("memory/save", {{"summary", "the staging deploy needs no-cache builds"}});
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    id = (*saved)["id"].get<std::string>();
    for (int i = 0; i < 3; ++i) {
      auto r = c.call("memory/recall", {{"query", "staging deploy no-cache"}, {"threshold", 0}});
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      ASSERT_EQ((*r)["memories"].size(), 1u) << r->dump();
    }
    auto got = c.call("memory/get", {{"id", id}});
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    EXPECT_EQ((*got)["use_count"], 3) << got->dump();
  }
  ASSERT_EQ(daemon_->stop(), 0) << daemon_->log();
  SQLite::Database raw(databaseFileAlone(dbPath).string(), SQLite::OPEN_READONLY);
  SQLite::Statement q(raw, "SELECT use_count FROM memories WHERE id = ?");
  q.bind(1, id);
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getInt64(), 3) << "uses recorded before the stop were lost";
}

}  // namespace
}  // namespace memq::testing
