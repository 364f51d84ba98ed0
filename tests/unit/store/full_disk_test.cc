// MemoryStore on a database that cannot grow: SQLite's max_page_count stands in for a full disk (SQLITE_FULL, as a
// real ENOSPC gives), set on the store's own connection of a real file. A save that needs a new page must fail with
// StorageError and leave nothing behind; the store keeps serving reads, and saves once the file may grow again.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "daemon/embed/hashbag.h"
#include "daemon/store/memory_store.h"
#include "tests/unit/store/store_fixture.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

class FullDiskTest : public testing::StoreFixture {
 protected:
  FullDiskTest() : StoreFixture("full") {}
  void SetUp() override {
    StoreFixture::SetUp();
    auto s = MemoryStore::open(optionsAt(dir_ / "data"));
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(*s);
  }

  Result<SaveOutcome> trySave(const std::string& summary, const std::string& details,
                              const std::vector<std::string>& files) {
    SaveInput in;
    in.summary = summary;
    in.details = details;
    in.files = {files.begin(), files.end()};
    in.topics = {"storage"};
    return saveInput(*store_, in);
  }

  int64_t count(const std::string& sql) { return MemoryStoreTestAccess::database(*store_).execAndGet(sql).getInt64(); }

  // Every place a save writes to: the row, both full-text indexes, file refs, edges, vectors, the journal.
  std::map<std::string, int64_t> rowCounts() {
    std::map<std::string, int64_t> out;
    for (const char* table : {"memories", "memory_files", "memory_edges", "memory_embeddings", "memory_events",
                              "memories_fts_docsize", "memories_fts_tri_docsize"}) {
      out[table] = count(std::string("SELECT COUNT(*) FROM ") + table);
    }
    return out;
  }

  // Text unlike any other memory's, so a save of it must create a row, and long enough (details are capped at 2000
  // UTF-16 units) that the row, its journal entry and its index entries need new pages.
  static std::string distinctText(const std::string& tag) {
    std::string s;
    std::mt19937 rng(std::hash<std::string>{}(tag));
    while (s.size() < 1990) s += tag + std::to_string(rng() % 1000000) + " ";
    return s.substr(0, 1990);
  }

};

TEST_F(FullDiskTest, ASaveThatCannotGrowTheFileFailsCleanlyAndLeavesNoPartialRow) {
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto r = trySave("Earlier note number " + std::to_string(i) + " about zebrafish" + std::to_string(i),
                     distinctText("early" + std::to_string(i)), {"src/a" + std::to_string(i) + ".c"});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ids.push_back(r->id);
  }
  // From here on the file may not gain a single page: SQLite answers SQLITE_FULL, as on a full disk. Pages on the
  // free list still take a save or two; the first save that needs a new page is the one under test.
  const int64_t pages = count("PRAGMA page_count");
  ASSERT_EQ(count("PRAGMA max_page_count = " + std::to_string(pages)), pages);
  std::map<std::string, int64_t> before;
  size_t activeBefore = 0;
  Result<SaveOutcome> full = Status::internal("no save tried");
  int fitted = 0;
  auto summaryOf = [](int n) { return "Quokka" + std::to_string(n) + "x lives on Rottnest island"; };
  auto filesOf = [](int n) { return std::vector<std::string>{"src/quokka" + std::to_string(n) + ".c", "src/b.c"}; };
  for (; fitted < 50; ++fitted) {
    before = rowCounts();
    activeBefore = store_->activeIndex().size();
    full = trySave(summaryOf(fitted), distinctText("quokka" + std::to_string(fitted)), filesOf(fitted));
    if (!full.isOk()) break;
  }
  ASSERT_FALSE(full.isOk()) << "50 saves fitted in a file that may not grow";
  EXPECT_EQ(count("PRAGMA page_count"), pages);
  EXPECT_EQ(full.status().code(), ErrorCode::kStorageError);
  EXPECT_NE(full.status().message().find("full"), std::string::npos) << full.status().message();
  EXPECT_EQ(full.status().data().value("scope", ""), "project");
  EXPECT_EQ(full.status().data().value("path", ""), store_->path());

  // Nothing of it anywhere: no row, no full-text entry, no file ref, no edge, no vector, no audit event.
  const std::string token = "quokka" + std::to_string(fitted) + "x";
  EXPECT_EQ(rowCounts(), before);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH '" + token + "'"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH '" + token + "'"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_files WHERE path = '" + filesOf(fitted)[0] + "'"), 0);
  EXPECT_EQ(store_->activeIndex().size(), activeBefore);
  auto journal = store_->audit(AuditFilter{.memoryId = std::nullopt, .sinceSeq = 0, .limit = 1000});
  ASSERT_TRUE(journal.isOk());
  EXPECT_EQ(static_cast<int64_t>(journal->size()), before.at("memory_events"));
  // The full-text indexes still agree with their content table.
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));

  // Reads keep working on the full file.
  for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  ListFilter all;
  all.limit = 1000;
  auto list = store_->list(all);
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  EXPECT_EQ(list->total, before.at("memories"));
  auto hits = store_->searchFts(FtsLane::kUnicode, "zebrafish7", 10);
  ASSERT_TRUE(hits.isOk()) << hits.status().toString();
  EXPECT_EQ(hits->size(), 1u);

  // Once there is room again, the same save goes through, whole.
  MemoryStoreTestAccess::database(*store_).exec("PRAGMA max_page_count = 1073741823");
  auto roomy = trySave(summaryOf(fitted), distinctText("quokka" + std::to_string(fitted)), filesOf(fitted));
  ASSERT_TRUE(roomy.isOk()) << roomy.status().toString();
  EXPECT_EQ(roomy->status, "created");
  auto after = rowCounts();
  EXPECT_EQ(after["memories"], before.at("memories") + 1);
  EXPECT_EQ(after["memory_files"], before.at("memory_files") + 2);
  EXPECT_EQ(after["memory_embeddings"], before.at("memory_embeddings") + 1);
  EXPECT_EQ(after["memory_events"], before.at("memory_events") + 1);
  EXPECT_EQ(after["memories_fts_docsize"], before.at("memories_fts_docsize") + 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH '" + token + "'"), 1);
  EXPECT_EQ(store_->activeIndex().size(), activeBefore + 1);
  EXPECT_TRUE(store_->get(roomy->id).isOk());
  EXPECT_EQ(MemoryStoreTestAccess::database(*store_).execAndGet("PRAGMA integrity_check").getString(), "ok");
  std::printf("saves that fitted in free pages before SQLITE_FULL: %d\n", fitted);
}

}  // namespace
}  // namespace memq
