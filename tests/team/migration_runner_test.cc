// The migration runner both backends share (schema/migration_runner.h), against a recording backend: which scripts
// run, in which order, in one transaction, and what is refused. The SQLite side is covered by tests/unit/store, the
// PostgreSQL side by team_server_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "migration_runner.h"

namespace memq::test {
namespace {

class RecordingBackend : public MigrationBackend {
 public:
  int recorded = 0;
  int failAt = -1;  // the version whose apply fails
  std::vector<std::string> calls;

  Result<int> recordedVersion() override { return recorded; }
  Status begin() override {
    calls.push_back("begin");
    return Status::ok();
  }
  Status apply(const Migration& m) override {
    calls.push_back(std::string(m.name));
    if (m.version == failAt) return Status::storage("boom");
    return Status::ok();
  }
  Status commit() override {
    calls.push_back("commit");
    return Status::ok();
  }
  void rollback() override { calls.push_back("rollback"); }
};

const std::vector<Migration> kThree = {{1, "0001_a", ""}, {2, "0002_b", ""}, {5, "0005_c", ""}};

TEST(MigrationRunnerTest, AppliesThoseAboveTheRecordedVersionInOrderInOneTransaction) {
  RecordingBackend b;
  b.recorded = 1;
  ASSERT_TRUE(runMigrations(b, kThree, -1, "db").isOk());
  EXPECT_EQ(b.calls, (std::vector<std::string>{"begin", "0002_b", "0005_c", "commit"}));
}

TEST(MigrationRunnerTest, StopsAtMaxVersionAndDoesNothingWhenCurrent) {
  RecordingBackend b;
  ASSERT_TRUE(runMigrations(b, kThree, 2, "db").isOk());
  EXPECT_EQ(b.calls, (std::vector<std::string>{"begin", "0001_a", "0002_b", "commit"}));
  RecordingBackend current;
  current.recorded = 5;
  ASSERT_TRUE(runMigrations(current, kThree, -1, "db").isOk());
  EXPECT_TRUE(current.calls.empty());
}

TEST(MigrationRunnerTest, AFailingScriptRollsEverythingBack) {
  RecordingBackend b;
  b.failAt = 2;
  Status st = runMigrations(b, kThree, -1, "db");
  EXPECT_EQ(st.code(), ErrorCode::kStorageError);
  EXPECT_EQ(b.calls, (std::vector<std::string>{"begin", "0001_a", "0002_b", "rollback"}));
}

TEST(MigrationRunnerTest, ANewerRecordedVersionIsRefusedWithoutATransaction) {
  RecordingBackend b;
  b.recorded = 6;
  Status st = runMigrations(b, kThree, -1, "database /x/memory.db");
  EXPECT_EQ(st.code(), ErrorCode::kStorageError);
  EXPECT_EQ(st.message(), "database /x/memory.db was written by a newer memq (schema version 6; this memqd knows up "
                          "to 5); upgrade memq to open it");
  EXPECT_TRUE(b.calls.empty());
}

}  // namespace
}  // namespace memq::test
