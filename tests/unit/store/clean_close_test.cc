// A cleanly closed store folds its WAL into the database file (checkpointForClose, database.h): afterwards the -wal
// is gone or empty, and the database file alone, copied elsewhere without the WAL or the save journal, holds every
// saved row. Checked with saves in batches applied in the background (as memqd saves) and one commit per save, and
// with another connection open on the file while the store closes (then SQLite's own checkpoint at close cannot
// run, since the closing connection is not the file's last).
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "daemon/store/database.h"
#include "tests/unit/store/store_fixture.h"

namespace memq::testing {
namespace {

namespace fs = std::filesystem;

class CleanCloseTest : public StoreFixture {
 protected:
  CleanCloseTest() : StoreFixture("clean-close") {}

  fs::path dbPath() const { return dir_ / "data" / "memory.db"; }

  // Opens a store on dbPath() (batches of `batch`, in the background when `background`) and saves `n` memories.
  void saveMany(int n, int batch, bool background) {
    StoreOptions o = optionsAt(dir_ / "data");
    o.saveBatch = batch;
    o.applySavesInBackground = background;
    auto opened = MemoryStore::open(o);
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(*opened);
    for (int i = 0; i < n; ++i) {
      SaveInput in;
      in.summary = "clean close memory " + std::to_string(i) + " about the wal and checkpoints";
      in.details = std::string(300 + i % 5 * 200, 'x');
      in.topics = {"wal", "t" + std::to_string(i % 7)};
      ASSERT_TRUE(saveInput(*store_, in).isOk()) << i;
    }
  }

  // The -wal after close: absent or empty; and the database file alone (no WAL, no journal) holds `n` rows.
  void expectFolded(int n) {
    const fs::path wal = dbPath().string() + "-wal";
    if (fs::exists(wal)) {
      EXPECT_EQ(fs::file_size(wal), 0u) << "the WAL still holds frames after a clean close";
    }
    const fs::path copy = dir_ / "copy";
    fs::create_directories(copy);
    fs::copy_file(dbPath(), copy / "memory.db");
    SQLite::Database raw((copy / "memory.db").string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), n);
    EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  }
};

TEST_F(CleanCloseTest, BackgroundBatchesAreInTheDatabaseFileAfterClose) {
  saveMany(700, 256, true);
  store_.reset();
  expectFolded(700);
}

TEST_F(CleanCloseTest, OneCommitPerSaveIsInTheDatabaseFileAfterClose) {
  saveMany(300, 1, false);
  store_.reset();
  expectFolded(300);
}

TEST_F(CleanCloseTest, TheWalIsFoldedEvenWhileAnotherConnectionStaysOpen) {
  saveMany(700, 256, true);
  ASSERT_TRUE(store_->commitPendingSaves());
  // Another connection, idle, open across the close: the store's connection is not the file's last, so SQLite
  // would leave the WAL as it is; the checkpoint at close folds it anyway.
  auto other = std::make_unique<SQLite::Database>(dbPath().string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(other->execAndGet("SELECT COUNT(*) FROM memories").getInt64(), 700);
  EXPECT_GT(fs::file_size(dbPath().string() + "-wal"), 0u);  // the saves are in the WAL before the close
  store_.reset();
  expectFolded(700);
  other.reset();
}

TEST(CheckpointForClose, IsANoOpOutsideWalMode) {
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  db.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  EXPECT_TRUE(checkpointForClose(db));
}

}  // namespace
}  // namespace memq::testing
