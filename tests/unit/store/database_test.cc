// openDatabase, SaveJournal::open and the migration runner on what they are given beside the rows: the mode of a
// file that is already there (only group's and others' bits are taken away), and a list of migrations that is not
// in strictly increasing order (refused before anything is asked of the database).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "daemon/store/database.h"
#include "daemon/store/save_journal.h"
#include "migration_runner.h"
#include "tests/unit/store/store_fixture.h"

namespace memq::testing {
namespace {

namespace fs = std::filesystem;

mode_t modeOf(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class FileModeTest : public StoreFixture {
 protected:
  FileModeTest() : StoreFixture("file-mode") {}

  fs::path dbPath() const { return dir_ / "data" / "memory.db"; }

  Result<std::unique_ptr<SQLite::Database>> open() {
    DatabaseOptions o;
    o.path = dbPath().string();
    return openDatabase(o);
  }

  // A database as memqd leaves it after a clean close: the file alone, no -wal or -shm.
  void createDatabase() {
    auto db = open();
    ASSERT_TRUE(db.isOk()) << db.status().toString();
  }
};

TEST_F(FileModeTest, ADatabaseOthersMayReadIsTightenedTo0600) {
  createDatabase();
  ASSERT_EQ(::chmod(dbPath().c_str(), 0644), 0);
  auto db = open();
  ASSERT_TRUE(db.isOk()) << db.status().toString();
  EXPECT_EQ(modeOf(dbPath()), 0600u);
}

TEST_F(FileModeTest, AReadOnlyDatabaseLosesOthersBitsButNeverGainsOwnerWrite) {
  createDatabase();
  ASSERT_EQ(::chmod(dbPath().c_str(), 0444), 0);
  // Opened read-only, or refused (as root, SQLite may write it anyway): either is fine, a crash or a file made
  // writable is not, and a refusal names the file.
  auto db = open();
  if (!db.isOk()) {
    EXPECT_TRUE(db.status().code() == ErrorCode::kStorageError || db.status().code() == ErrorCode::kScopeUnavailable)
        << db.status().toString();
    EXPECT_NE(db.status().message().find(dbPath().string()), std::string::npos) << db.status().toString();
  }
  EXPECT_EQ(modeOf(dbPath()), 0400u);
}

TEST_F(FileModeTest, TheSaveJournalLosesOnlyGroupAndOtherBits) {
  fs::create_directories(dir_ / "data");
  const fs::path journal = dbPath().string() + "-saves";
  ASSERT_TRUE(SaveJournal::open(journal.string()).isOk());
  ASSERT_EQ(::chmod(journal.c_str(), 0644), 0);
  ASSERT_TRUE(SaveJournal::open(journal.string()).isOk());
  EXPECT_EQ(modeOf(journal), 0600u);
  // The owner's bits stay as they were, the execute bit too.
  ASSERT_EQ(::chmod(journal.c_str(), 0744), 0);
  ASSERT_TRUE(SaveJournal::open(journal.string()).isOk());
  EXPECT_EQ(modeOf(journal), 0700u);
  // Read-only: memqd's user cannot open it for writing (then it is refused, naming it, and left as it was), or,
  // as root, can and it becomes 0400; never writable by its owner.
  ASSERT_EQ(::chmod(journal.c_str(), 0444), 0);
  auto readOnly = SaveJournal::open(journal.string());
  if (readOnly.isOk()) {
    EXPECT_EQ(modeOf(journal), 0400u);
  } else {
    EXPECT_NE(readOnly.status().message().find(journal.string()), std::string::npos) << readOnly.status().toString();
    EXPECT_EQ(modeOf(journal), 0444u);
  }
}

// Records what the runner asks of it, the recorded version included.
class RecordingBackend : public MigrationBackend {
 public:
  std::vector<std::string> calls;

  Result<int> recordedVersion() override {
    calls.push_back("recordedVersion");
    return 0;
  }
  Status begin() override {
    calls.push_back("begin");
    return Status::ok();
  }
  Status apply(const Migration& m) override {
    calls.push_back(std::string(m.name));
    return Status::ok();
  }
  Status commit() override {
    calls.push_back("commit");
    return Status::ok();
  }
  void rollback() override { calls.push_back("rollback"); }
};

TEST(MigrationOrderTest, TwoMigrationsWithOneNumberAreRefusedBeforeTheDatabaseIsAsked) {
  // Two 0002_*.sql, as two merged branches would leave them.
  const std::vector<Migration> twice = {{1, "0001_core", ""}, {2, "0002_mine", ""}, {2, "0002_theirs", ""}};
  RecordingBackend b;
  Status st = runMigrations(b, twice, -1, "database /x/memory.db");
  EXPECT_EQ(st.code(), ErrorCode::kInternalError);
  EXPECT_NE(st.message().find("database /x/memory.db"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("0002_theirs (version 2) follows 0002_mine (version 2)"), std::string::npos)
      << st.message();
  EXPECT_TRUE(b.calls.empty());
}

TEST(MigrationOrderTest, MigrationsOutOfOrderAreRefusedAndAscendingOnesWithAGapRun) {
  RecordingBackend descending;
  const std::vector<Migration> outOfOrder = {{1, "0001_a", ""}, {3, "0003_c", ""}, {2, "0002_b", ""}};
  EXPECT_EQ(runMigrations(descending, outOfOrder, -1, "db").code(), ErrorCode::kInternalError);
  EXPECT_TRUE(descending.calls.empty());
  // Strictly increasing is all the runner asks; the build asks for no gaps (embed_migrations.cmake).
  RecordingBackend ascending;
  const std::vector<Migration> gap = {{1, "0001_a", ""}, {3, "0003_c", ""}};
  ASSERT_TRUE(runMigrations(ascending, gap, -1, "db").isOk());
  EXPECT_EQ(ascending.calls,
            (std::vector<std::string>{"recordedVersion", "begin", "recordedVersion", "0001_a", "0003_c", "commit"}));
}

}  // namespace
}  // namespace memq::testing
