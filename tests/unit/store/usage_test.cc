// Usage feedback (MemoryStore::markUsed) is deferred: recall's marks reach the mirror and every read at once, and
// the database only when the pending usage is flushed — by the housekeeping checkpoint, before any other write,
// before list and export, and at a clean close. These tests read the database file through a second connection to
// tell "written" from "pending", and check that no path loses or double-counts a use.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/store/store_fixture.h"

namespace memq::testing {
namespace {

class UsageTest : public StoreFixture {
 protected:
  UsageTest() : StoreFixture("usage") {}

  void SetUp() override {
    StoreFixture::SetUp();
    open();
  }
  void open() {
    store_.reset();
    StoreOptions o = optionsAt(dir_ / "data");
    // A clock a second ahead at each reading, so that every save and use has its own time.
    o.clock = [this] {
      char at[32];
      std::snprintf(at, sizeof at, "2026-01-01T00:%02d:%02d.000Z", ticks_ / 60 % 60, ticks_ % 60);
      ++ticks_;
      return std::string(at);
    };
    auto s = MemoryStore::open(o);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(*s);
  }
  std::string save(const std::string& summary, std::vector<std::string> files = {}) {
    SaveInput in;
    in.summary = summary;
    in.files = {files.begin(), files.end()};
    auto r = saveInput(*store_, in);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r->id : std::string();
  }
  int ticks_ = 0;
  int64_t pk(const std::string& id) { return *store_->pkOf(id); }
  // use_count as committed in the file, read by a connection of its own.
  int64_t writtenUseCount(const std::string& id) {
    SQLite::Database raw((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READONLY);
    SQLite::Statement q(raw, "SELECT use_count FROM memories WHERE id = ?");
    q.bind(1, id);
    EXPECT_TRUE(q.executeStep()) << id;
    return q.getColumn(0).getInt64();
  }
  int64_t readUseCount(const std::string& id) {
    auto m = store_->get(id);
    EXPECT_TRUE(m.isOk()) << m.status().toString();
    return m.isOk() ? m->useCount : -1;
  }
};

TEST_F(UsageTest, MarkUsedWritesNothingYetAndEveryReadAnswersIt) {
  const std::string id = save("deferred usage probe");
  const std::string before = store_->get(id)->lastUsedAt;
  ASSERT_TRUE(store_->markUsed({pk(id), pk(id)}).isOk());
  EXPECT_EQ(writtenUseCount(id), 0) << "markUsed committed on the caller's path";
  EXPECT_EQ(store_->pendingUsageRows(), 1u);
  EXPECT_EQ(readUseCount(id), 2);
  EXPECT_GE(store_->get(id)->lastUsedAt, before);
  auto loaded = store_->loadMany({pk(id)});
  ASSERT_TRUE(loaded.isOk());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].useCount, 2);
  auto rows = store_->mirroredRows({pk(id)});
  ASSERT_TRUE(rows.has_value());
  ASSERT_NE((*rows)[0], nullptr);
  EXPECT_EQ((*rows)[0]->useCount, 2);
}

TEST_F(UsageTest, TheHousekeepingCheckpointWritesPendingUsage) {
  const std::string id = save("checkpoint flush probe");
  ASSERT_TRUE(store_->markUsed({pk(id)}).isOk());
  ASSERT_TRUE(store_->checkpoint().isOk());
  EXPECT_EQ(writtenUseCount(id), 1);
  EXPECT_EQ(store_->pendingUsageRows(), 0u);
  EXPECT_EQ(readUseCount(id), 1) << "a flushed use was counted twice";
}

// A store retires when its database file was moved or replaced (the registry forgets it): a housekeeping checkpoint
// that still holds it must write nothing into that file, the uses it had not written included.
TEST_F(UsageTest, ARetiredStoresCheckpointWritesNothing) {
  const std::string id = save("retired store probe");
  ASSERT_TRUE(store_->markUsed({pk(id)}).isOk());
  (void)store_->retire();
  EXPECT_TRUE(store_->checkpoint().isOk());
  EXPECT_EQ(writtenUseCount(id), 0) << "a retired store wrote its pending uses";
}

TEST_F(UsageTest, AnotherWriteWritesPendingUsageFirstAndCountsItOnce) {
  const std::string id = save("write flush probe");
  ASSERT_TRUE(store_->markUsed({pk(id), pk(id), pk(id)}).isOk());
  ASSERT_TRUE(store_->setPinned(id, true, actor_).isOk());
  EXPECT_EQ(writtenUseCount(id), 3);
  EXPECT_EQ(readUseCount(id), 3);
  UpdateInput details;
  details.details = "changed after use";
  ASSERT_TRUE(store_->update(id, details, actor_).isOk());
  EXPECT_EQ(readUseCount(id), 3);
  EXPECT_EQ(writtenUseCount(id), 3);
}

TEST_F(UsageTest, ListSortsByTheUsesNotYetWritten) {
  const std::string older = save("list order older");
  const std::string newer = save("list order newer");
  ASSERT_TRUE(store_->markUsed({pk(older)}).isOk());
  auto l = store_->list(ListFilter{});
  ASSERT_TRUE(l.isOk());
  ASSERT_EQ(l->memories.size(), 2u);
  EXPECT_EQ(l->memories[0].id, older) << "list ordered by last use without the pending use";
  EXPECT_EQ(l->memories[0].useCount, 1);
  EXPECT_EQ(writtenUseCount(older), 1);
  EXPECT_EQ(writtenUseCount(newer), 0);
}

TEST_F(UsageTest, ACleanCloseWritesPendingUsage) {
  const std::string id = save("close flush probe");
  ASSERT_TRUE(store_->markUsed({pk(id), pk(id)}).isOk());
  open();  // closes the store, then opens the file again
  EXPECT_EQ(readUseCount(id), 2);
  EXPECT_EQ(writtenUseCount(id), 2);
}

TEST_F(UsageTest, AMirrorRebuiltFromTheFileKeepsPendingUses) {
  const std::string id = save("mirror rebuild probe", {"src/a.c"});
  ASSERT_TRUE(store_->markUsed({pk(id)}).isOk());
  {
    // A commit by another connection makes the mirror rebuild from the file, which does not hold the use yet.
    auto other = MemoryStore::open(optionsAt(dir_ / "data"));
    ASSERT_TRUE(other.isOk()) << other.status().toString();
    ASSERT_TRUE((*other)->setPinned(id, true, actor_).isOk());
  }
  auto rows = store_->mirroredRows({pk(id)});
  ASSERT_TRUE(rows.has_value());
  ASSERT_NE((*rows)[0], nullptr);
  EXPECT_TRUE((*rows)[0]->pinned) << "the mirror did not rebuild";
  EXPECT_EQ((*rows)[0]->useCount, 1);
  EXPECT_EQ(readUseCount(id), 1);
}

TEST_F(UsageTest, UsesOfAMemoryPurgedByAnotherConnectionAreDropped) {
  const std::string kept = save("purge probe kept");
  const std::string gone = save("purge probe gone");
  ASSERT_TRUE(store_->markUsed({pk(kept), pk(gone)}).isOk());
  {
    auto other = MemoryStore::open(optionsAt(dir_ / "data"));
    ASSERT_TRUE(other.isOk()) << other.status().toString();
    ASSERT_TRUE((*other)->purge(gone, /*confirm=*/true, actor_).isOk());
  }
  ASSERT_TRUE(store_->flushUsage().isOk());
  EXPECT_EQ(store_->pendingUsageRows(), 0u);
  EXPECT_EQ(writtenUseCount(kept), 1);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 1);
}

}  // namespace
}  // namespace memq::testing
