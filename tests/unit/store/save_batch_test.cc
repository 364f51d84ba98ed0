// Saves in batches (StoreOptions::saveBatch) and the save journal behind them: a batched save is readable at once,
// every acknowledged save survives the process dying before its batch commits (the files are copied as a SIGKILL
// would leave them, and the copy opened), a replay never applies a save twice, a save that fails leaves the rest of
// its batch alone, the journal's format rejects what it must (and fits the largest save), a torn record is cut
// before anything follows it, a database deleted gets back only the saves it had not committed, and a batch SQLite
// rolled back by itself is applied again from the journal.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/embed/hashbag.h"
#include "daemon/service/file_anchors.h"
#include "daemon/store/memory_store.h"
#include "daemon/store/save_journal.h"
#include "daemon/store/save_record.h"
#include "tests/unit/store/store_fixture.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

fs::path tempDir(const std::string& tag) {
  auto dir = fs::temp_directory_path() / ("memq-" + tag + "-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  return dir;
}

// ---- the journal file ----

TEST(SaveJournalTest, RecordsComeBackInOrderUnderTheHeadersCommittedNumber) {
  auto dir = tempDir("journal");
  auto j = SaveJournal::open((dir / "j").string());
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  ASSERT_TRUE((*j)->reset(7).isOk());
  ASSERT_TRUE((*j)->append("first").isOk());
  ASSERT_TRUE((*j)->append(std::string("se\0cond", 7)).isOk());
  auto c = (*j)->read();
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->committedBelow, 7u);
  ASSERT_EQ(c->records.size(), 2u);
  EXPECT_EQ(c->records[0], "first");
  EXPECT_EQ(c->records[1], std::string("se\0cond", 7));
  EXPECT_FALSE(c->tornTail);
  // The number rewritten in place (a commit that leaves newer records in the file): the records stay.
  ASSERT_TRUE((*j)->markCommittedBelow(9).isOk());
  ASSERT_TRUE((*j)->append("third").isOk());
  c = (*j)->read();
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->committedBelow, 9u);
  ASSERT_EQ(c->records.size(), 3u);
  EXPECT_EQ(c->records[2], "third");
  // Reset empties it under a new number.
  ASSERT_TRUE((*j)->reset(10).isOk());
  c = (*j)->read();
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->committedBelow, 10u);
  EXPECT_TRUE(c->records.empty());
  fs::remove_all(dir);
}

TEST(SaveJournalTest, ATornOrDamagedTailEndsTheRecordsAndAForeignHeaderIsAnError) {
  auto dir = tempDir("journal");
  const std::string path = (dir / "j").string();
  {
    auto j = SaveJournal::open(path);
    ASSERT_TRUE(j.isOk());
    ASSERT_TRUE((*j)->reset(3).isOk());
    for (const char* r : {"one", "two", "three"}) ASSERT_TRUE((*j)->append(r).isOk());
  }
  const auto whole = fs::file_size(path);
  // Cut inside the last record (a crash mid-append): the first two stand.
  fs::resize_file(path, whole - 2);
  {
    auto c = (*SaveJournal::open(path))->read();
    ASSERT_TRUE(c.isOk());
    ASSERT_EQ(c->records.size(), 2u);
    EXPECT_EQ(c->records[1], "two");
    EXPECT_TRUE(c->tornTail);
  }
  // A flipped byte inside the second record: its checksum fails, and nothing after it is trusted.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16 + 12 + 3 + 12 + 1);
    f.put('X');
  }
  {
    auto c = (*SaveJournal::open(path))->read();
    ASSERT_TRUE(c.isOk());
    ASSERT_EQ(c->records.size(), 1u);
    EXPECT_EQ(c->records[0], "one");
  }
  // Not a journal at all: an error naming the file, not an empty journal.
  std::ofstream(path, std::ios::trunc) << "this is not a memq save journal";
  auto c = (*SaveJournal::open(path))->read();
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kStorageError);
  EXPECT_NE(c.status().message().find(path), std::string::npos) << c.status().message();
  // Shorter than a header (emptied, or created, when the process stopped): nothing to replay.
  std::ofstream(path, std::ios::trunc) << "memq";
  c = (*SaveJournal::open(path))->read();
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->committedBelow, 0u);
  EXPECT_TRUE(c->records.empty());
  fs::remove_all(dir);
}

// Appends "<length><checksum><body>" cut short, as a process killed in the middle of a record's write leaves it.
void appendTornRecord(const fs::path& path) {
  std::string torn("\xc8\x00\x00\x00", 4);           // 200 bytes announced
  torn += std::string(8, '\x5a');                        // a checksum
  torn += "{\"actor_client\":\"test\",\"at\":";  // and the first of them
  std::ofstream(path, std::ios::binary | std::ios::app) << torn;
}

TEST(SaveJournalTest, RecoverCutsATornTailSoThatTheNextRecordIsRead) {
  auto dir = tempDir("journal");
  const fs::path path = dir / "j";
  {
    auto j = SaveJournal::open(path.string());
    ASSERT_TRUE(j.isOk());
    ASSERT_TRUE((*j)->reset(3).isOk());
    for (const char* r : {"{\"one\":1}", "{\"two\":2}"}) ASSERT_TRUE((*j)->append(r).isOk());
  }
  const auto whole = fs::file_size(path);
  appendTornRecord(path);
  {
    auto j = SaveJournal::open(path.string());
    ASSERT_TRUE(j.isOk());
    auto c = (*j)->recover();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ(c->records.size(), 2u);
    EXPECT_TRUE(c->tornTail);
    EXPECT_EQ(c->wholeBytes, whole);
    EXPECT_EQ(c->recordsAfterDamage, 0u);  // a torn append: nothing after it
    EXPECT_EQ(fs::file_size(path), whole);
    ASSERT_TRUE((*j)->append("{\"three\":3}").isOk());
  }
  // Without the cut the third record would follow the torn bytes, and a read would stop before it.
  auto c = (*SaveJournal::open(path.string()))->read();
  ASSERT_TRUE(c.isOk());
  ASSERT_EQ(c->records.size(), 3u);
  EXPECT_EQ(c->records[2], "{\"three\":3}");
  EXPECT_FALSE(c->tornTail);
  fs::remove_all(dir);
}

TEST(SaveJournalTest, WholeRecordsAfterDamageAreCountedBeforeTheyAreCut) {
  auto dir = tempDir("journal");
  const fs::path path = dir / "j";
  {
    auto j = SaveJournal::open(path.string());
    ASSERT_TRUE(j.isOk());
    ASSERT_TRUE((*j)->reset(3).isOk());
    for (const char* r : {"{\"one\":1}", "{\"two\":2}", "{\"three\":3}", "{\"four\":4}"}) {
      ASSERT_TRUE((*j)->append(r).isOk());
    }
  }
  const uint64_t secondRecordAt = 16 + 12 + 9;
  {
    // A byte of the second record's body damaged on disk: the third and fourth are whole, but after damage.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(secondRecordAt + 12 + 3));
    f.put('X');
  }
  auto j = SaveJournal::open(path.string());
  ASSERT_TRUE(j.isOk());
  auto c = (*j)->recover();
  ASSERT_TRUE(c.isOk());
  ASSERT_EQ(c->records.size(), 1u);
  EXPECT_TRUE(c->tornTail);
  EXPECT_EQ(c->wholeBytes, secondRecordAt);
  EXPECT_EQ(c->recordsAfterDamage, 2u);  // what the error logged at open names
  EXPECT_EQ(fs::file_size(path), secondRecordAt);
  // The file as found is kept beside it, so that the whole records after the damage can be recovered by hand.
  ASSERT_FALSE(c->damagedCopy.empty());
  EXPECT_EQ(fs::path(c->damagedCopy).parent_path(), dir);
  EXPECT_EQ(fs::file_size(c->damagedCopy), 16u + 4 * 12 + 9 + 9 + 11 + 10);
  fs::remove_all(dir);
}

// A save whose every file (kMaxFiles) is anchored in a version memq keeps, of the largest size the service anchors:
// its record, with the longest text a save may have, fits the journal and reads back whole. (16 MiB, the bound
// before, refused a save with six such refs every time.)
TEST(SaveJournalTest, ASaveAnchoredInTheLargestKeptVersionsOfAllItsFilesFitsItsRecord) {
  std::mt19937_64 random(7);
  std::string version(kMaxAnchoredFileBytes, '\0');
  for (char& c : version) c = static_cast<char>(random());  // incompressible, and not UTF-8
  const auto kept = std::make_shared<const std::string>(std::move(version));
  SaveRecord record;
  record.input.summary = std::string(kMaxSummaryUnits, '\x01');  // escaped as \u0001: six bytes each
  record.input.details = std::string(kMaxDetailsUnits, '\x01');
  record.input.contentHash = std::string(64, 'a');
  record.id = "id";
  record.at = "2024-01-01T00:00:00.000Z";
  record.seq = 5;
  for (size_t i = 0; i < kMaxFiles; ++i) {
    const std::string path = "src/file_" + std::to_string(i) + ".txt";
    record.files.push_back({path, std::nullopt, FileAnchor{LineRanges{{1, 2}}, std::string(40, 'b'), kept}});
    record.input.files.push_back(path);
  }
  const std::string text = record.toJson();
  EXPECT_LE(text.size(), kMaxSaveRecordBytes);
  EXPECT_GT(text.size(), size_t{16} << 20);

  auto dir = tempDir("journal");
  const std::string path = (dir / "j").string();
  {
    auto j = SaveJournal::open(path);
    ASSERT_TRUE(j.isOk());
    ASSERT_TRUE((*j)->reset(5).isOk());
    ASSERT_TRUE((*j)->append(text).isOk());
  }
  auto c = (*SaveJournal::open(path))->read();
  ASSERT_TRUE(c.isOk());
  ASSERT_EQ(c->records.size(), 1u);
  const SaveRecord back = SaveRecord::fromJson(c->records[0]);
  ASSERT_EQ(back.files.size(), kMaxFiles);
  for (const auto& f : back.files) {
    ASSERT_TRUE(f.anchor && f.anchor->keptContent);
    EXPECT_TRUE(*f.anchor->keptContent == *kept) << f.path;
  }
  fs::remove_all(dir);
}

// ---- a store that batches saves ----

class SaveBatchTest : public testing::StoreFixture {
 protected:
  SaveBatchTest() : StoreFixture("batch") {}
  void SetUp() override {
    StoreFixture::SetUp();
    store_ = openAt(dir_ / "data");
    // The first save after a pause commits on its own; the saves of each test follow it, and so are batched.
    auto lead = save(*store_, "The note that opens the stream");
    ASSERT_TRUE(lead.isOk()) << lead.status().toString();
    ASSERT_FALSE(store_->hasPendingSaves());
  }

  std::unique_ptr<MemoryStore> openAt(const fs::path& dataDir, int saveBatch = 64) {
    StoreOptions o = optionsAt(dataDir);
    o.saveBatch = saveBatch;
    o.saveStreamGap = std::chrono::hours(1);  // every save joins the open batch, however slow the machine
    o.applySavesInBackground = background_;
    if (maxJournalBytes_) o.maxJournalBytes = *maxJournalBytes_;
    auto s = MemoryStore::open(o);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(*s) : nullptr;
  }

  Result<SaveOutcome> save(MemoryStore& store, const std::string& summary, std::vector<std::string> topics = {"t"},
                           bool mergeTopics = false) {
    SaveInput in;
    in.summary = summary;
    in.details = "details of " + summary;
    in.topics = std::move(topics);
    in.files = {"src/batch.cc"};
    in.mergeTopics = mergeTopics;
    return saveInput(store, in);
  }

  // The files a SIGKILL leaves: the database, its WAL (committed frames only count) and the save journal, copied
  // while the store is still open (the test's, or the one in `dataDir`).
  fs::path crashCopy(const std::string& name, const fs::path& dataDir = {}) {
    auto to = dir_ / name;
    fs::create_directories(to);
    for (const char* suffix : {"", "-wal", "-saves"}) {
      auto from = (dataDir.empty() ? dir_ / "data" : dataDir) / (std::string("memory.db") + suffix);
      if (fs::exists(from)) fs::copy_file(from, to / (std::string("memory.db") + suffix));
    }
    return to;
  }

  // The files copied as a SIGKILL would leave them, then opened: the database file alone holds only SetUp's save (the
  // batch never committed), the open replays `replayed` saves, and each acknowledged save reads back as it was
  // answered (same id, time and text). The reopened store is left in `reopened` (null if it did not open).
  void reopenAfterCrash(const std::string& name, const std::vector<SaveOutcome>& acked, size_t replayed,
                        std::unique_ptr<MemoryStore>& reopened) {
    const auto copy = crashCopy(name);
    {
      SQLite::Database raw((copy / "memory.db").string(), SQLite::OPEN_READONLY);
      EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), 1);
    }
    reopened = openAt(copy);
    ASSERT_NE(reopened, nullptr);
    EXPECT_EQ(reopened->replayedSaves(), replayed);
    for (const auto& a : acked) {
      auto m = reopened->get(a.id);
      ASSERT_TRUE(m.isOk()) << a.id << ": " << m.status().toString();
      EXPECT_EQ(m->createdAt, a.memory->createdAt);
      EXPECT_EQ(m->summary, a.memory->summary);
    }
  }

  // Another connection (another process, in effect) on the test's database, with a trigger that makes every commit of
  // a batch fail (it writes save_batches) until the trigger is dropped through it. Created while no batch is open.
  std::unique_ptr<SQLite::Database> failCommitsFromAnotherConnection() {
    auto other = std::make_unique<SQLite::Database>((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READWRITE);
    other->exec("PRAGMA busy_timeout = 5000");
    other->exec("CREATE TRIGGER fail_commit BEFORE UPDATE ON save_batches BEGIN SELECT RAISE(ABORT, 'injected'); END");
    return other;
  }

  // The database at `dataDir` deleted, its WAL and shared memory with it; the save journal stays.
  static void removeDatabase(const fs::path& dataDir) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dataDir / (std::string("memory.db") + suffix));
  }

  bool background_ = false;  // StoreOptions::applySavesInBackground for every store the test opens
  std::optional<uint64_t> maxJournalBytes_;  // StoreOptions::maxJournalBytes, if not the default
};

TEST_F(SaveBatchTest, SavesInABatchAreReadAtOnceAndCommitBeforeAnyOtherWrite) {
  auto first = save(*store_, "Batched note alpha about wombats");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  auto second = save(*store_, "Batched note beta about echidnas");
  ASSERT_TRUE(second.isOk());
  EXPECT_TRUE(store_->hasPendingSaves());
  // Read before the commit: by id, in a list, through the in-memory text lane and the vector index.
  EXPECT_TRUE(store_->get(second->id).isOk());
  ListFilter all;
  EXPECT_EQ(store_->list(all)->total, 3);
  auto hits = store_->searchFts(FtsLane::kUnicode, "echidnas", 5);
  ASSERT_TRUE(hits.isOk());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ(store_->activeIndex().size(), 3u);
  // The trigram lane is read from SQLite's index: the query commits the batch first, so it finds both.
  auto tri = store_->searchFts(FtsLane::kTrigram, "\"wombat\"", 5);
  ASSERT_TRUE(tri.isOk()) << tri.status().toString();
  EXPECT_EQ(tri->size(), 1u);
  EXPECT_FALSE(store_->hasPendingSaves());

  // Any other write commits the open batch before its own transaction.
  auto third = save(*store_, "Batched note gamma about quolls");
  ASSERT_TRUE(third.isOk());
  EXPECT_TRUE(store_->hasPendingSaves());
  auto hidden = store_->hide(third->id, std::string("test"), actor_);
  ASSERT_TRUE(hidden.isOk()) << hidden.status().toString();
  EXPECT_FALSE(store_->hasPendingSaves());
  EXPECT_EQ(hidden->state, MemoryState::kHidden);
  EXPECT_EQ(MemoryStoreTestAccess::database(*store_).execAndGet("PRAGMA integrity_check").getString(), "ok");
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
}

TEST_F(SaveBatchTest, TheFirstSaveAfterAPauseCommitsOnItsOwn) {
  // SetUp's save was the first: committed before it returned, so it is in the database file itself.
  SQLite::Database raw((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), 1);
  // With no pause allowed between saves, none is batched.
  StoreOptions o;
  o.path = (dir_ / "strict2" / "memory.db").string();
  o.projectRoot = root_;
  o.embedder = &embedder_;
  o.saveBatch = 64;
  o.saveStreamGap = std::chrono::milliseconds(0);
  auto unbatched = MemoryStore::open(o);
  ASSERT_TRUE(unbatched.isOk());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(save(**unbatched, "Spaced note " + std::to_string(i)).isOk());
    EXPECT_FALSE((*unbatched)->hasPendingSaves()) << i;
  }
}

TEST_F(SaveBatchTest, EveryAcknowledgedSaveOfAnUncommittedBatchComesBackAfterACrash) {
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 10; ++i) {
    auto r = save(*store_, "Crash-time note " + std::to_string(i) + " about numbats");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(*r);
  }
  // A save of the same text again: a dedup inside the batch (use count 1), replayed as one too.
  ASSERT_EQ(save(*store_, "Crash-time note 3 about numbats")->status, "deduped");
  ASSERT_TRUE(store_->hasPendingSaves());
  std::unique_ptr<MemoryStore> reopened;
  reopenAfterCrash("crashed", acked, 11u, reopened);
  ASSERT_NE(reopened, nullptr);
  const auto copy = dir_ / "crashed";
  EXPECT_EQ(reopened->get(acked[3].id)->useCount, 1);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memory_events WHERE action = 'create'"), 11);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memory_events WHERE action = 'dedup'"), 1);
  // Indexed in both full-text lanes and the vector index, as a save that committed is.
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'numbat'"), 10);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'numbats'"), 10);
  EXPECT_EQ(reopened->activeIndex().size(), 11u);
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*reopened).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(
      MemoryStoreTestAccess::database(*reopened).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
  // Applied once: opening again replays nothing, and a store that does not batch leaves no journal behind.
  reopened.reset();
  auto again = openAt(copy, 1);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->replayedSaves(), 0u);
  EXPECT_EQ(count(*again, "SELECT COUNT(*) FROM memories"), 11);
  EXPECT_EQ(again->get(acked[3].id)->useCount, 1);
  again.reset();
  EXPECT_FALSE(fs::exists(copy / "memory.db-saves"));
}

TEST_F(SaveBatchTest, AReplayedSaveKeepsItsAnchorsAndTheContentItKeeps) {
  // Content that is not UTF-8 (a Latin-1 file): the journal carries it in base64, byte for byte.
  const auto kept = std::make_shared<const std::string>("caf\xe9\nline 2\n\xff\xfe line 3\n");
  const std::string blob(40, 'c');
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 3; ++i) {
    SaveInput in;
    in.summary = "Anchored note " + std::to_string(i) + " about the Latin-1 file";
    in.files = {"src/latin1.txt", "src/plain.c"};
    auto n = normalizeSave(in, root_);
    ASSERT_TRUE(n.isOk());
    std::vector<FileRef> refs = {
        {"src/latin1.txt", std::nullopt, FileAnchor{{{1, 1}, {3, 3}}, blob, kept}},
        {"src/plain.c", std::string("2222"), std::nullopt}};
    auto r = store_->save(*n, refs, actor_);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->memory->files[0].anchor->keptContent, nullptr);  // an answer never carries the bytes
    acked.push_back(*r);
  }
  ASSERT_TRUE(store_->hasPendingSaves());
  std::unique_ptr<MemoryStore> reopened;
  reopenAfterCrash("crashed", acked, 3u, reopened);
  ASSERT_NE(reopened, nullptr);
  for (const auto& a : acked) {
    auto m = reopened->get(a.id);
    ASSERT_TRUE(m.isOk());
    ASSERT_EQ(m->files.size(), 2u);
    ASSERT_TRUE(m->files[0].anchor.has_value());
    EXPECT_EQ(m->files[0].anchor->lines, (LineRanges{{1, 1}, {3, 3}}));
    EXPECT_EQ(m->files[0].anchor->blob, blob);
    EXPECT_FALSE(m->files[1].anchor.has_value());
  }
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM anchor_versions"), 1);
  SQLite::Statement q(MemoryStoreTestAccess::database(*reopened), "SELECT content FROM anchor_versions");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(std::string(static_cast<const char*>(q.getColumn(0).getBlob()), q.getColumn(0).getBytes()), *kept);
}

TEST_F(SaveBatchTest, AReplayedSaveIsTheSaveThatWasAnsweredFieldForField) {
  // Every field the journal record carries (category, topics, source, session, file refs with and without a blob
  // id, text that needs escaping) comes back from the journal as it was answered.
  SaveInput in;
  in.summary = "Quote \" backslash \\ tab \t newline \n and \xc3\xa9t\xc3\xa9 \xf0\x9f\xa6\x98";
  in.details = std::string("control \x01 and a long line ") + std::string(300, 'x');
  in.category = "gotcha";
  in.topics = {"Zeta", "alpha"};
  in.source = "user";
  in.sessionId = "session-7";
  in.files = {"src/b.c", "src/a.c"};
  auto n = normalizeSave(in, root_);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  auto r = store_->save(*n, {{"src/b.c", "1111"}, {"src/a.c", std::nullopt}}, actor_);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_TRUE(store_->hasPendingSaves());
  std::unique_ptr<MemoryStore> reopened;
  reopenAfterCrash("crashed", {*r}, 1u, reopened);
  ASSERT_NE(reopened, nullptr);
  auto m = reopened->get(r->id);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(memoryToJson(*m).dump(), memoryToJson(*r->memory).dump());
  // The file refs as stored, blob ids included (a record does not show them).
  auto refs = [](MemoryStore& s) {
    std::string out;
    SQLite::Statement q(MemoryStoreTestAccess::database(s), "SELECT path, COALESCE(blob_id, '-') FROM memory_files ORDER BY path");
    while (q.executeStep()) out += q.getColumn(0).getString() + "@" + q.getColumn(1).getString() + " ";
    return out;
  };
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_EQ(refs(*reopened), refs(*store_));
  EXPECT_NE(refs(*store_).find("src/b.c@1111"), std::string::npos);
  // The create event too: who, when and what.
  AuditFilter filter;
  filter.memoryId = r->id;
  auto replayed = reopened->audit(filter);
  auto original = store_->audit(filter);
  ASSERT_TRUE(replayed.isOk());
  ASSERT_TRUE(original.isOk());
  ASSERT_EQ(replayed->size(), 1u);
  ASSERT_EQ(original->size(), 1u);
  EXPECT_EQ((*replayed)[0].actor, (*original)[0].actor);
  EXPECT_EQ((*replayed)[0].at, (*original)[0].at);
  EXPECT_EQ((*replayed)[0].detail.dump(), (*original)[0].detail.dump());
}

TEST_F(SaveBatchTest, AJournalOfACommittedBatchIsNotAppliedAgain) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(save(*store_, "Committed note " + std::to_string(i)).isOk());
  // The journal as it was just before the commit, beside the database as it is just after: a process that died
  // between the two steps of a commit.
  const auto journalBefore = dir_ / "journal-before";
  fs::copy_file(dir_ / "data" / "memory.db-saves", journalBefore);
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  auto copy = crashCopy("after-commit");
  fs::copy_file(journalBefore, copy / "memory.db-saves", fs::copy_options::overwrite_existing);
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 0u);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 6);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memory_events"), 6);
  // The next batch is journalled under a newer number, so a crash in it is replayed.
  ASSERT_TRUE(save(*reopened, "A note of the next batch").isOk());
  reopened.reset();
  auto last = openAt(copy);
  EXPECT_EQ(count(*last, "SELECT COUNT(*) FROM memories"), 7);
}

TEST_F(SaveBatchTest, ASaveCutShortInTheJournalIsNotReplayedAndTheRestAre) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(save(*store_, "Torn-tail note " + std::to_string(i)).isOk());
  auto copy = crashCopy("torn");
  fs::resize_file(copy / "memory.db-saves", fs::file_size(copy / "memory.db-saves") - 5);
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 3u);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 4);
}

TEST_F(SaveBatchTest, NewTopicsOnAMemoryOfTheSameBatchKeepTheTextIndexesExact) {
  auto created = save(*store_, "Topic merge note about bilbies", {"one"});
  ASSERT_TRUE(created.isOk());
  ASSERT_TRUE(store_->hasPendingSaves());
  auto merged = save(*store_, "Topic merge note about bilbies", {"marsupial"}, /*mergeTopics=*/true);
  ASSERT_TRUE(merged.isOk()) << merged.status().toString();
  EXPECT_EQ(merged->status, "deduped");
  EXPECT_TRUE(merged->topicsMerged);
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'marsupial'"), 1);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'marsupial'"), 1);
}

TEST_F(SaveBatchTest, ATopicMergeThatFailsLeavesTheBatchsRowsToBeIndexedAtCommit) {
  auto created = save(*store_, "Topic merge that fails, about dunnarts", {"one"});
  ASSERT_TRUE(created.isOk());
  ASSERT_TRUE(store_->hasPendingSaves());
  // The merge writes the batch's rows into the FTS lanes, then fails on its audit event: its savepoint undoes both.
  MemoryStoreTestAccess::database(*store_).exec(
      "CREATE TEMP TRIGGER fail_dedup BEFORE INSERT ON memory_events WHEN NEW.action = 'dedup' "
      "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  auto merged = save(*store_, "Topic merge that fails, about dunnarts", {"marsupial"}, /*mergeTopics=*/true);
  ASSERT_FALSE(merged.isOk());
  MemoryStoreTestAccess::database(*store_).exec("DROP TRIGGER temp.fail_dedup");
  ASSERT_TRUE(save(*store_, "A later note of the same batch about antechinus").isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  // Both rows of the batch are in both lanes, and the lanes agree with their content table.
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'dunnarts'"), 1);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'dunnart'"), 1);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'antechinus'"), 1);
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
}

TEST_F(SaveBatchTest, ASaveThatFailsInABatchLeavesTheOthersAndIsNeverReplayed) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Before the full disk " + std::to_string(i));
    ASSERT_TRUE(r.isOk());
    ids.push_back(r->id);
  }
  ASSERT_TRUE(store_->hasPendingSaves());
  // No page may be added from here on (SQLITE_FULL, as on a full disk): sooner or later a save needs one.
  const int64_t pages = count(*store_, "PRAGMA page_count");
  count(*store_, "PRAGMA max_page_count = " + std::to_string(pages));
  std::string big(1900, 'x');
  Result<SaveOutcome> failed = Status::internal("none tried");
  std::string failedSummary;
  for (int i = 0; i < 200; ++i) {
    failedSummary = "Too big for the disk " + std::to_string(i) + " " + big.substr(0, 400);
    failed = save(*store_, failedSummary);
    if (!failed.isOk()) break;
    ids.push_back(failed->id);
  }
  ASSERT_FALSE(failed.isOk()) << "200 saves fitted in a file that may not grow";
  EXPECT_EQ(failed.status().code(), ErrorCode::kStorageError);
  MemoryStoreTestAccess::database(*store_).exec("PRAGMA max_page_count = 1073741823");
  auto copy = crashCopy("after-failure");
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  // Every acknowledged save is there, the failed one is not, here and in a copy replayed from the journal.
  auto replayed = openAt(copy);
  ASSERT_NE(replayed, nullptr);
  for (MemoryStore* s : {store_.get(), replayed.get()}) {
    for (const auto& id : ids) EXPECT_TRUE(s->get(id).isOk()) << id;
    EXPECT_EQ(count(*s, "SELECT COUNT(*) FROM memories"), static_cast<int64_t>(ids.size()) + 1);
    SQLite::Statement q(MemoryStoreTestAccess::database(*s), "SELECT COUNT(*) FROM memories WHERE summary = ?");
    q.bind(1, failedSummary);
    ASSERT_TRUE(q.executeStep());
    EXPECT_EQ(q.getColumn(0).getInt64(), 0);
    EXPECT_EQ(MemoryStoreTestAccess::database(*s).execAndGet("PRAGMA integrity_check").getString(), "ok");
    EXPECT_NO_THROW(MemoryStoreTestAccess::database(*s).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
  }
}

TEST_F(SaveBatchTest, AReadAfterAFailedCommitSeesEveryAcknowledgedSave) {
  // Another connection makes the batch's commit fail, then lets commits through again: the acknowledged saves wait
  // in the journal, and the next call, a read, applies them first instead of answering without them.
  auto other = failCommitsFromAnotherConnection();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Acknowledged before a commit that fails " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ids.push_back(r->id);
  }
  auto failed = store_->commitPendingSaves();  // as memqd's timer does
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.code(), ErrorCode::kStorageError);
  ASSERT_TRUE(store_->hasPendingSaves());
  other->exec("DROP TRIGGER fail_commit");  // commits go through again
  for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_FALSE(store_->hasPendingSaves());
  EXPECT_EQ(store_->activeIndex().size(), 4u);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 4);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memory_events"), 4);
}

// A replay that is due when a recall's semantic lane scans on a helper thread: the recall's other lanes (the
// trigram lane settles the saves first) must not replay into the index under the scan, nor, when the replay's
// commit fails again, rebuild it from under the scan. The replay happens at the first call after the scan.
TEST_F(SaveBatchTest, AReplayDueDuringARecallsVectorScanWaitsUntilTheScanIsOver) {
  auto other = failCommitsFromAnotherConnection();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Acknowledged while a scan runs " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ids.push_back(r->id);
  }
  ASSERT_FALSE(store_->commitPendingSaves().isOk());  // the replay is due from here on
  auto scan = store_->beginNearestActive(embedder_.embed("acknowledged while a scan runs"), 3, 0.0f);
  const VectorIndex* scanned = &store_->activeIndex();
  const size_t rows = scanned->size();
  (void)store_->searchFts(FtsLane::kTrigram, "\"scan runs\"", 5);  // settles: the replay would run here
  EXPECT_EQ(&store_->activeIndex(), scanned) << "the index under the scan was replaced";
  EXPECT_EQ(store_->activeIndex().size(), rows) << "the index under the scan was written";
  (void)scan.get();
  other->exec("DROP TRIGGER fail_commit");
  for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_EQ(store_->activeIndex().size(), 4u);
}

// A save that failed after it was journalled, whose record the journal could not cut (an I/O error), is voided by
// a record after it: a replay applies the others and never that one, whose client was told it failed.
TEST_F(SaveBatchTest, AReplaySkipsASaveItsJournalVoided) {
  std::vector<SaveOutcome> acked;
  for (const char* text : {"Acknowledged before the void", "Failed after it was journalled", "Acknowledged after"}) {
    auto r = save(*store_, text);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(*r);
  }
  const auto copy = crashCopy("voided");
  {
    auto journal = SaveJournal::open((copy / "memory.db-saves").string());
    ASSERT_TRUE(journal.isOk()) << journal.status().toString();
    auto contents = (*journal)->read();
    ASSERT_TRUE(contents.isOk());
    std::optional<uint64_t> failedSeq;
    for (const auto& text : contents->records) {
      if (voidedSeq(text)) continue;
      const SaveRecord r = SaveRecord::fromJson(text);
      if (r.id == acked[1].id) failedSeq = r.seq;
    }
    ASSERT_TRUE(failedSeq.has_value());
    ASSERT_TRUE((*journal)->append(voidRecordText(*failedSeq)).isOk());
  }
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 2u);
  EXPECT_TRUE(reopened->get(acked[0].id).isOk());
  EXPECT_EQ(reopened->get(acked[1].id).status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(reopened->get(acked[2].id).isOk());
  EXPECT_EQ(voidedSeq(voidRecordText(42)), std::optional<uint64_t>(42));
  EXPECT_FALSE(voidedSeq("{\"void\":4x}").has_value());
}

TEST_F(SaveBatchTest, ASecondOpenerOfTheDatabaseLeavesTheOwnersOpenBatchAlone) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(save(*store_, "Owner's note " + std::to_string(i)).isOk());
  ASSERT_TRUE(store_->hasPendingSaves());
  // Another store on the same file (a second process, in effect: the journal's lock is per open file): it must not
  // replay the owner's uncommitted saves, which would write them twice once the owner commits.
  auto second = openAt(dir_ / "data");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->replayedSaves(), 0u);
  second.reset();
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 4);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memory_events"), 4);
}

// A save voided in the journal, then a record whose write a kill cut short: the replay at the next open leaves the
// journal's last number at the voided save's, so the file is not emptied, and the torn bytes must be cut before the
// next save is journalled, or that save would follow bytes no read gets past.
TEST_F(SaveBatchTest, ATornRecordAfterAVoidedSaveIsCutBeforeTheNextSaveIsJournalled) {
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Journalled before the kill " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(*r);
  }
  const auto copy = crashCopy("torn");
  const fs::path journal = copy / "memory.db-saves";
  {
    auto j = SaveJournal::open(journal.string());
    ASSERT_TRUE(j.isOk()) << j.status().toString();
    auto contents = (*j)->read();
    ASSERT_TRUE(contents.isOk());
    ASSERT_EQ(contents->records.size(), 3u);
    const SaveRecord last = SaveRecord::fromJson(contents->records.back());
    ASSERT_EQ(last.id, acked[2].id);
    ASSERT_TRUE((*j)->append(voidRecordText(last.seq)).isOk());  // the third failed after it was journalled
  }
  const auto whole = fs::file_size(journal);
  appendTornRecord(journal);  // the next save's record, cut short by the kill
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 2u);
  EXPECT_EQ(fs::file_size(journal), whole) << "the torn bytes were left in the journal";
  // Saves after the reopen (the first commits on its own, the rest stay in the journal), then a kill again.
  std::vector<SaveOutcome> later;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*reopened, "Journalled after the reopen " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    later.push_back(*r);
  }
  ASSERT_TRUE(reopened->hasPendingSaves());
  auto again = openAt(crashCopy("torn-again", copy));
  ASSERT_NE(again, nullptr);
  for (const auto& a : later) EXPECT_TRUE(again->get(a.id).isOk()) << a.id;
  EXPECT_EQ(again->get(acked[2].id).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(count(*again, "SELECT COUNT(*) FROM memories"), 6);
}

// A process that died between a batch's commit and the emptying of its journal leaves the journal holding committed
// saves. The next open applies none and empties the journal: a database created at the path once this one is deleted
// must not get them (what was in a database the user deleted is gone with it).
TEST_F(SaveBatchTest, ADatabaseDeletedAfterItsCommitGetsNoSaveBackFromTheJournal) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(save(*store_, "Committed before the deletion " + std::to_string(i)).isOk());
  const auto journalBefore = dir_ / "journal-before";
  fs::copy_file(dir_ / "data" / "memory.db-saves", journalBefore);
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  const auto copy = crashCopy("after-commit");
  fs::copy_file(journalBefore, copy / "memory.db-saves", fs::copy_options::overwrite_existing);
  {
    auto reopened = openAt(copy);
    ASSERT_NE(reopened, nullptr);
    EXPECT_EQ(reopened->replayedSaves(), 0u);
    EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 6);
  }
  removeDatabase(copy);
  auto fresh = openAt(copy);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->replayedSaves(), 0u);
  EXPECT_EQ(count(*fresh, "SELECT COUNT(*) FROM memories"), 0);
}

// A journal an older memq wrote, whose records carry no sequence numbers: which of its saves the database holds
// cannot be told. The database opens (reads answer, and say what they leave out); every write is refused, and the
// message names the file and what to do.
TEST_F(SaveBatchTest, AJournalWhoseRecordsHaveNoNumbersIsRefusedWithWhatToDo) {
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(save(*store_, "Journalled by an older memq " + std::to_string(i)).isOk());
  const auto copy = crashCopy("unnumbered");
  const std::string journalPath = (copy / "memory.db-saves").string();
  {
    auto j = SaveJournal::open(journalPath);
    ASSERT_TRUE(j.isOk()) << j.status().toString();
    auto contents = (*j)->read();
    ASSERT_TRUE(contents.isOk());
    ASSERT_EQ(contents->records.size(), 2u);
    ASSERT_TRUE((*j)->reset(contents->committedBelow).isOk());
    for (const auto& text : contents->records) {
      auto record = nlohmann::json::parse(text);
      record.erase("seq");
      ASSERT_TRUE((*j)->append(record.dump()).isOk());
    }
  }
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 0u);
  auto refused = save(*reopened, "Saved past a journal without numbers");
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kStorageError);
  const std::string message = refused.status().message();
  EXPECT_NE(message.find(journalPath), std::string::npos) << message;
  EXPECT_NE(message.find("no sequence numbers"), std::string::npos) << message;
  EXPECT_NE(message.find("move the file aside"), std::string::npos) << message;
  auto warning = reopened->unappliedSavesWarning();
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("move the file aside"), std::string::npos) << *warning;
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 1);
}

// SQLite may roll a batch's transaction back by itself (an I/O error, a full disk, lack of memory), in a statement
// whose error nothing sees (a read publish() makes); a ROLLBACK on the store's connection does the same here. The
// next save must not build on the lost batch (a SAVEPOINT outside a transaction commits on its own), nor the commit
// write applied_batch outside one, which marked the lost saves committed: they are applied again from the journal.
TEST_F(SaveBatchTest, ABatchSQLiteRolledBackByItselfIsAppliedAgainNotMarkedCommitted) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "In a batch SQLite rolls back " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ids.push_back(r->id);
  }
  MemoryStoreTestAccess::database(*store_).exec("ROLLBACK");
  auto after = save(*store_, "Saved after SQLite rolled the batch back");
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  ids.push_back(after->id);
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 5);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memory_events"), 5);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'rolls back'"), 3);
  EXPECT_EQ(store_->activeIndex().size(), 5u);
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec(
      "INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
}

// ---- saves applied in the background (StoreOptions::applySavesInBackground) ----

class BackgroundSaveTest : public SaveBatchTest {
 protected:
  BackgroundSaveTest() { background_ = true; }

  // Every saved row's summary with its use count, and every similar edge by the summaries it joins: what two stores
  // fed the same saves must agree on, whatever ids they drew.
  std::multiset<std::string> rowsOf(MemoryStore& store) {
    std::multiset<std::string> out;
    SQLite::Statement q(MemoryStoreTestAccess::database(store), "SELECT summary, use_count, state, topics FROM memories");
    while (q.executeStep()) {
      out.insert(q.getColumn(0).getString() + "|" + q.getColumn(1).getString() + "|" + q.getColumn(2).getString() +
                 "|" + q.getColumn(3).getString());
    }
    SQLite::Statement e(MemoryStoreTestAccess::database(store),
                        "SELECT a.summary, b.summary, printf('%.6f', e.weight) FROM memory_edges e "
                        "JOIN memories a ON a.pk = e.src_pk JOIN memories b ON b.pk = e.dst_pk");
    while (e.executeStep()) {
      out.insert("edge " + e.getColumn(0).getString() + " -> " + e.getColumn(1).getString() + " " +
                 e.getColumn(2).getString());
    }
    SQLite::Statement ev(MemoryStoreTestAccess::database(store), "SELECT action, COUNT(*) FROM memory_events GROUP BY action");
    while (ev.executeStep()) out.insert("events " + ev.getColumn(0).getString() + " " + ev.getColumn(1).getString());
    return out;
  }

  // A save's answer without the ids and times a store draws: similar hints by summary.
  static std::string answerOf(const Result<SaveOutcome>& r) {
    if (!r.isOk()) return "error " + r.status().toString();
    std::string out = r->status + (r->topicsMerged ? " merged" : "");
    for (const auto& h : r->similar) out += " | " + h.kind + " " + h.summary + " " + std::to_string(h.weight);
    for (const auto& w : r->warnings) out += " | warning " + w.substr(0, w.find(" to rejected memory"));
    if (r->memory) out += " | use " + std::to_string(r->memory->useCount) + " files " +
                          std::to_string(r->memory->files.size()) + " topics " + std::to_string(r->memory->topics.size());
    return out;
  }
};

TEST_F(BackgroundSaveTest, AnswersAndRowsAreThoseOfTheSynchronousPath) {
  background_ = false;
  auto sync = openAt(dir_ / "sync");
  ASSERT_NE(sync, nullptr);
  ASSERT_TRUE(save(*sync, "The note that opens the stream").isOk());
  background_ = true;
  // Paraphrases (semantic hints and edges among rows not yet committed), a duplicate and a topic merge of rows not
  // yet committed, rejected content and a paraphrase of it: each answer and, once committed, each row, edge and
  // event must be the same in both stores.
  std::vector<std::function<Result<SaveOutcome>(MemoryStore&)>> steps;
  for (int i = 0; i < 12; ++i) {
    steps.push_back([this, i](MemoryStore& s) {
      return save(s, "Use pnpm, not npm, to install the packages of workspace " + std::to_string(i % 4) +
                         (i >= 4 ? " in the monorepo" : "") + (i >= 8 ? " on CI" : ""));
    });
  }
  steps.push_back([this](MemoryStore& s) { return save(s, "Use pnpm, not npm, to install the packages of workspace 2"); });
  steps.push_back([this](MemoryStore& s) {
    return save(s, "Use pnpm, not npm, to install the packages of workspace 3", {"tooling"}, /*mergeTopics=*/true);
  });
  steps.push_back([this](MemoryStore& s) { return save(s, "Deploy with make deploy-prod from the main branch only"); });
  steps.push_back([this](MemoryStore& s) -> Result<SaveOutcome> {
    auto r = save(s, "Deploy with make deploy-prod from a release branch only");
    if (!r.isOk()) return r;
    auto rejected = s.reject(r->id, "wrong: releases deploy from main", actor_);
    if (!rejected.isOk()) return rejected.status();
    return r;
  });
  steps.push_back([this](MemoryStore& s) { return save(s, "Deploy with make deploy-prod from a release branch only"); });
  steps.push_back([this](MemoryStore& s) { return save(s, "Deploy with make deploy-prod from a release branch, only"); });
  for (int i = 0; i < 6; ++i) {
    steps.push_back([this, i](MemoryStore& s) { return save(s, "JWT expiry check number " + std::to_string(i)); });
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    auto a = steps[i](*sync);
    auto b = steps[i](*store_);
    EXPECT_EQ(answerOf(b), answerOf(a)) << "step " << i;
  }
  EXPECT_EQ(sync->savesAnsweredInBackground(), 0u);
  EXPECT_GE(store_->savesAnsweredInBackground(), 15u);  // the path under test was taken
  ASSERT_TRUE(sync->commitPendingSaves().isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_EQ(rowsOf(*store_), rowsOf(*sync));
  EXPECT_EQ(store_->activeIndex().size(), sync->activeIndex().size());
  // The in-memory lanes agree with SQLite's, and SQLite's lanes with their rows.
  auto hits = store_->searchFts(FtsLane::kUnicode, "\"monorepo\"", 50);
  ASSERT_TRUE(hits.isOk());
  EXPECT_EQ(hits->size(), 8u);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'monorepo'"), 8);
  EXPECT_EQ(MemoryStoreTestAccess::database(*store_).execAndGet("PRAGMA integrity_check").getString(), "ok");
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')"));
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
}

TEST_F(BackgroundSaveTest, EveryAcknowledgedSaveComesBackAfterACrash) {
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 40; ++i) {
    auto r = save(*store_, "Background note " + std::to_string(i) + " about bandicoots");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(*r);
  }
  ASSERT_GE(store_->savesAnsweredInBackground(), 40u);
  // Readable at once, before anything is committed.
  EXPECT_TRUE(store_->get(acked.back().id).isOk());
  MemoryStoreTestAccess::waitForAppliedSaves(*store_);
  ASSERT_TRUE(store_->hasPendingSaves());
  std::unique_ptr<MemoryStore> reopened;
  reopenAfterCrash("crashed", acked, 40u, reopened);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memory_events WHERE action = 'create'"), 41);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories_fts_tri WHERE memories_fts_tri MATCH 'bandicoot'"), 40);
}

TEST_F(BackgroundSaveTest, OnlyTheStoreHoldingTheJournalWritesSoAnAnsweredIdAlwaysExists) {
  // The owner answers a save in the background: the id is given before its row is written.
  auto answered = save(*store_, "Promised before it is written");
  ASSERT_TRUE(answered.isOk()) << answered.status().toString();
  ASSERT_EQ(answered->status, "created");
  ASSERT_GE(store_->savesAnsweredInBackground(), 1u);
  auto listed = store_->list(ListFilter{});
  ASSERT_TRUE(listed.isOk());
  std::string leadId;
  for (const auto& m : listed->memories) {
    if (m.summary == "The note that opens the stream") leadId = m.id;
  }
  ASSERT_FALSE(leadId.empty());

  // A second store on the file (another memqd serving the project, in effect) only reads. Had it saved the same
  // text first, the owner's commit would find the content taken, and the id it answered would never exist.
  auto second = openAt(dir_ / "data");
  ASSERT_NE(second, nullptr);
  auto refused = save(*second, "Promised before it is written");
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kScopeUnavailable) << refused.status().toString();
  EXPECT_NE(refused.status().message().find("memory.db-saves"), std::string::npos) << refused.status().message();
  EXPECT_EQ(second->hide(leadId, std::string("test"), actor_).status().code(), ErrorCode::kScopeUnavailable);
  EXPECT_EQ(second->importRecord(*second->get(leadId), actor_).status().code(), ErrorCode::kScopeUnavailable);
  ASSERT_TRUE(second->markUsed({1}).isOk());  // uses are advisory: not recorded, not an error
  ASSERT_TRUE(second->flushUsage().isOk());
  EXPECT_TRUE(second->get(leadId).isOk());  // reads work
  EXPECT_EQ(second->get(leadId)->state, MemoryState::kActive);

  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_TRUE(store_->get(answered->id).isOk());
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 2);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories WHERE use_count > 0"), 0);

  // Once the owner has closed the database, the second store takes the journal over and writes.
  store_.reset();
  auto again = save(*second, "Promised before it is written");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, "deduped");
  EXPECT_EQ(again->id, answered->id);
  auto fresh = save(*second, "Written once the owner closed");
  ASSERT_TRUE(fresh.isOk()) << fresh.status().toString();
  EXPECT_TRUE(second->hide(leadId, std::string("test"), actor_).isOk());
  ASSERT_TRUE(second->commitPendingSaves().isOk());
  EXPECT_EQ(count(*second, "SELECT COUNT(*) FROM memories"), 3);
}

TEST_F(SaveBatchTest, AStoreThatOnlyReadsFollowsTheWritersCommitsAndTakesOverWithCurrentIndexes) {
  auto kangaroo = save(*store_, "Kangaroos hop across the outback at dawn");
  ASSERT_TRUE(kangaroo.isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  auto second = openAt(dir_ / "data");
  ASSERT_NE(second, nullptr);
  auto nearest = [&](MemoryStore& store, const std::string& text) {
    std::set<int64_t> pks;
    for (const auto& h : store.beginNearestActive(embedder_.embed(text), 10, 0.0f).get()) pks.insert(h.key);
    return pks;
  };
  // The writer saves and purges after the reader opened: the reader's semantic lane follows both.
  const std::string kangarooText = "Kangaroos hop across the outback at dawn";
  const int64_t kangarooPk = store_->pkOf(kangaroo->id).value_or(-1);
  ASSERT_EQ(nearest(*second, kangarooText).count(kangarooPk), 1u);  // the control: found before the purge
  auto wombat = save(*store_, "Wombats dig burrows under the eucalyptus");
  ASSERT_TRUE(wombat.isOk());
  ASSERT_TRUE(store_->purge(kangaroo->id, true, actor_).isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_EQ(nearest(*second, "Wombats dig burrows under the eucalyptus").count(store_->pkOf(wombat->id).value_or(-1)),
            1u);
  EXPECT_EQ(nearest(*second, kangarooText).count(kangarooPk), 0u);  // the purged kangaroo is gone

  // Taken over once the writer closed: a save close to a memory the writer saved since the reader's last read is
  // told of it (its neighbours come from the rows there now).
  auto emu = save(*store_, "Emus sprint along the fence line");
  ASSERT_TRUE(emu.isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  store_.reset();
  auto close = save(*second, "Emus sprint along the fence line at dusk");
  ASSERT_TRUE(close.isOk()) << close.status().toString();
  std::vector<std::string> similar;
  for (const auto& h : close->similar) similar.push_back(h.summary);
  EXPECT_NE(std::find(similar.begin(), similar.end(), "Emus sprint along the fence line"), similar.end())
      << ::testing::PrintToString(similar);
  ASSERT_TRUE(second->commitPendingSaves().isOk());
  EXPECT_EQ(count(*second, "SELECT COUNT(*) FROM memories WHERE state = 'active'"), 4);
}

// While it follows, the other process's use counts are no change to a reader's rows (they would rebuild every row at
// each of its flushes); once it has taken over it reads them, or it would rank by them as they were for good.
TEST_F(SaveBatchTest, AStoreThatTakesOverReadsTheUsesTheWriterRecordedWhileItFollowed) {
  auto used = save(*store_, "Platypuses lay eggs and hunt by electroreception");
  ASSERT_TRUE(used.isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  const int64_t pk = store_->pkOf(used->id).value_or(-1);
  auto reader = openAt(dir_ / "data");
  ASSERT_NE(reader, nullptr);
  auto mirroredUses = [&](MemoryStore& s) {
    auto rows = s.mirroredRows({pk});
    return rows && rows->size() == 1 && (*rows)[0] != nullptr ? (*rows)[0]->useCount : -1;
  };
  ASSERT_EQ(mirroredUses(*reader), 0);
  ASSERT_TRUE(store_->markUsed({pk, pk, pk}).isOk());
  ASSERT_TRUE(store_->flushUsage().isOk());
  EXPECT_EQ(mirroredUses(*reader), 0);  // following: uses alone are no change
  store_.reset();
  ASSERT_TRUE(save(*reader, "Echidnas also lay eggs").isOk());  // taken over
  EXPECT_EQ(mirroredUses(*reader), 3);
}

TEST_F(SaveBatchTest, AFollowingStoreNeverRebuildsTheIndexAScanIsReading) {
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  auto reader = openAt(dir_ / "data");
  ASSERT_NE(reader, nullptr);
  const VectorIndex* scanned = &reader->activeIndex();
  auto pending = reader->beginNearestActive(embedder_.embed("platypus"), 5, 0.0f);
  // The writer commits while the reader's scan runs on a helper; the reader's next read must leave the index be.
  ASSERT_TRUE(save(*store_, "Platypuses lay eggs in riverbank burrows").isOk());
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  ASSERT_TRUE(reader->searchFts(FtsLane::kUnicode, "platypuses", 5).isOk());
  EXPECT_EQ(&reader->activeIndex(), scanned);
  EXPECT_EQ(pending.get().size(), 1u);  // the lead, as the index was when the scan began
  // Once the scan is over, the next read rebuilds it with the writer's commit.
  auto hits = reader->searchFts(FtsLane::kUnicode, "platypuses", 5);
  ASSERT_TRUE(hits.isOk());
  EXPECT_NE(&reader->activeIndex(), scanned);
  EXPECT_EQ(reader->activeIndex().size(), 2u);
  EXPECT_EQ(hits->size(), 1u);
}

TEST_F(SaveBatchTest, AStoreThatOnlyReadLeavesTheWritersWalAloneWhenItCloses) {
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  const fs::path wal = dir_ / "data" / "memory.db-wal";
  const auto walBytes = fs::file_size(wal);
  ASSERT_GT(walBytes, 0u);  // the writer's commits are still in its WAL
  {
    auto reader = openAt(dir_ / "data");
    ASSERT_NE(reader, nullptr);
    ASSERT_TRUE(reader->writesElsewhere());
    ASSERT_TRUE(reader->get(store_->list(ListFilter{})->memories.front().id).isOk());
  }
  // Closed without the checkpoint a writer's close makes (which would have cut the WAL to nothing here, nothing
  // holding it open): the file is the writer's to fold when it closes.
  EXPECT_EQ(fs::file_size(wal), walBytes);
  store_.reset();
  EXPECT_TRUE(!fs::exists(wal) || fs::file_size(wal) == 0u);  // the control: the writer's own close folds it
}

TEST_F(SaveBatchTest, ATakeoverThatCannotReadTheJournalKeepsRefusingWrites) {
  auto second = openAt(dir_ / "data");
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->writesElsewhere());
  store_.reset();
  // The journal the writer left is not memq's any more: its saves cannot be known, so none may be written past it.
  std::ofstream(dir_ / "data" / "memory.db-saves", std::ios::trunc) << "this is not a memq save journal";
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto r = save(*second, "Written past a journal nobody can read");
    ASSERT_FALSE(r.isOk()) << "attempt " << attempt;
    EXPECT_EQ(r.status().code(), ErrorCode::kStorageError) << r.status().toString();
    EXPECT_NE(r.status().message().find("memory.db-saves"), std::string::npos) << r.status().message();
    EXPECT_TRUE(second->writesElsewhere());
  }
  EXPECT_EQ(count(*second, "SELECT COUNT(*) FROM memories"), 1);
}

TEST_F(BackgroundSaveTest, AStoreThatOnlyReadsReplaysAKilledWritersJournalAtItsNextCheckpoint) {
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 5; ++i) {
    auto r = save(*store_, "Acknowledged by a writer that dies " + std::to_string(i));
    ASSERT_TRUE(r.isOk());
    acked.push_back(*r);
  }
  MemoryStoreTestAccess::waitForAppliedSaves(*store_);
  const auto copy = crashCopy("killed");  // the files a SIGKILL leaves, journal included
  // The dead writer's journal lock, held as a live process would hold it, while another store opens the files.
  auto held = SaveJournal::open((copy / "memory.db-saves").string());
  ASSERT_TRUE(held.isOk()) << held.status().toString();
  auto reader = openAt(copy);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->get(acked.front().id).status().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(reader->checkpoint().isOk());
  EXPECT_EQ(reader->get(acked.front().id).status().code(), ErrorCode::kNotFound);  // still held: still reading
  held->reset();  // the process is gone, and the kernel has let its lock go
  ASSERT_TRUE(reader->checkpoint().isOk());
  EXPECT_EQ(reader->replayedSaves(), 5u);
  for (const auto& a : acked) EXPECT_TRUE(reader->get(a.id).isOk()) << a.id;
}

TEST_F(BackgroundSaveTest, ACheckpointDuringAStreamNeitherWaitsForNorCommitsItsBatch) {
  // The housekeeping timer checkpoints every few seconds: in the middle of a stream it must leave the applier's
  // batch open (committing it would make the stream wait), and nothing of the stream is lost for it.
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    auto r = save(*store_, "Saved around a checkpoint " + std::to_string(i));
    ASSERT_TRUE(r.isOk());
    ids.push_back(r->id);
    if (i == 4) {
      ASSERT_TRUE(store_->checkpoint().isOk());
      EXPECT_TRUE(store_->hasOpenBatch());  // still handed off: nothing was committed or waited for
    }
  }
  ASSERT_GE(store_->savesAnsweredInBackground(), 10u);
  {
    SQLite::Database raw((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), 1);  // none of the stream committed
  }
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 11);
}

TEST_F(BackgroundSaveTest, AJournalPastItsBoundIsEmptiedBeforeTheNextSaveIsAnswered) {
  // In a long stream a commit always finds newer saves in the journal, so it is never emptied on its own: past
  // maxJournalBytes the next save is applied and committed, with every save before it, before it is answered.
  constexpr uint64_t kBound = 4096;
  maxJournalBytes_ = kBound;
  store_.reset();  // reopened with the bound
  store_ = openAt(dir_ / "data");
  ASSERT_NE(store_, nullptr);
  const fs::path journal = dir_ / "data" / "memory.db-saves";
  const uint64_t emptied = fs::file_size(journal);  // the header alone
  int synchronous = 0;
  std::vector<SaveOutcome> acked;
  for (int i = 0; i < 40; ++i) {
    const uint64_t before = fs::file_size(journal);
    const size_t inBackground = store_->savesAnsweredInBackground();
    auto r = save(*store_, "Bounded journal note " + std::to_string(i) + " about wombats and their burrows");
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(*r);
    if (before > kBound) {
      ++synchronous;
      EXPECT_EQ(store_->savesAnsweredInBackground(), inBackground) << "save " << i << " was queued past the bound";
      EXPECT_EQ(fs::file_size(journal), emptied) << "save " << i << " left the journal full";
    } else if (i > 0) {  // the first save after the reopen starts a stream: it commits on its own
      EXPECT_EQ(store_->savesAnsweredInBackground(), inBackground + 1) << "save " << i;
    }
    EXPECT_LE(fs::file_size(journal), kBound + 1024) << "save " << i;  // at most one record past the bound
  }
  EXPECT_GE(synchronous, 3);  // the 40 records are several times the bound
  // Nothing was lost on the way: a crash now gives back every save, the committed and the journalled.
  MemoryStoreTestAccess::waitForAppliedSaves(*store_);
  const auto copy = crashCopy("crashed");
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  for (const auto& a : acked) EXPECT_TRUE(reopened->get(a.id).isOk()) << a.id;
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 41);
}

TEST_F(BackgroundSaveTest, AJournalHoldingCommittedAndUncommittedSavesReplaysOnlyTheUncommitted) {
  // The applier commits a batch while newer saves are already journalled: the file then holds both. Built here from
  // the journal of a committed batch followed by the records of one that is not.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(save(*store_, "Committed background note " + std::to_string(i)).isOk());
  MemoryStoreTestAccess::waitForAppliedSaves(*store_);
  const std::string committedRecords = [&] {
    std::ifstream f(dir_ / "data" / "memory.db-saves", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  std::vector<std::string> later;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Uncommitted background note " + std::to_string(i));
    ASSERT_TRUE(r.isOk());
    later.push_back(r->id);
  }
  MemoryStoreTestAccess::waitForAppliedSaves(*store_);
  auto copy = crashCopy("mixed");
  const std::string laterRecords = [&] {
    std::ifstream f(copy / "memory.db-saves", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  {
    std::ofstream f(copy / "memory.db-saves", std::ios::binary | std::ios::trunc);
    f << committedRecords << laterRecords.substr(16);  // one header, then both batches' records
  }
  auto reopened = openAt(copy);
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 3u);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 9);
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memory_events"), 9);
  for (const auto& id : later) EXPECT_TRUE(reopened->get(id).isOk()) << id;
}

TEST_F(BackgroundSaveTest, AnApplierThatFailsLosesNoAcknowledgedSave) {
  const int64_t pages = count(*store_, "PRAGMA page_count");
  count(*store_, "PRAGMA max_page_count = " + std::to_string(pages));  // SQLITE_FULL once a page is needed
  std::string big(400, 'x');
  std::vector<std::string> acked;
  Result<SaveOutcome> failed = Status::internal("none tried");
  for (int i = 0; i < 400; ++i) {
    failed = save(*store_, "Written after the disk filled " + std::to_string(i) + " " + big);
    if (!failed.isOk()) break;
    acked.push_back(failed->id);
  }
  // The applier failed in the background; a later save found out, could not apply the journal either, and said so.
  ASSERT_FALSE(failed.isOk()) << "400 saves fitted in a file that may not grow";
  EXPECT_EQ(failed.status().code(), ErrorCode::kStorageError);
  EXPECT_GT(store_->savesAnsweredInBackground(), 0u);
  EXPECT_TRUE(store_->hasPendingSaves());
  ASSERT_FALSE(acked.empty());
  // Reads still answer from what is committed.
  EXPECT_TRUE(store_->list(ListFilter{}).isOk());
  auto copy = crashCopy("after-failure");
  MemoryStoreTestAccess::database(*store_).exec("PRAGMA max_page_count = 1073741823");
  // The next write applies the journal: every acknowledged save, once.
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  auto replayed = openAt(copy);
  ASSERT_NE(replayed, nullptr);
  for (MemoryStore* s : {store_.get(), replayed.get()}) {
    for (const auto& id : acked) EXPECT_TRUE(s->get(id).isOk()) << id;
    EXPECT_EQ(count(*s, "SELECT COUNT(*) FROM memories"), static_cast<int64_t>(acked.size()) + 1);
    EXPECT_EQ(count(*s, "SELECT COUNT(*) FROM memory_events"), static_cast<int64_t>(acked.size()) + 1);
    EXPECT_EQ(s->activeIndex().size(), acked.size() + 1);
    EXPECT_EQ(MemoryStoreTestAccess::database(*s).execAndGet("PRAGMA integrity_check").getString(), "ok");
    EXPECT_NO_THROW(MemoryStoreTestAccess::database(*s).exec("INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
  }
}

TEST_F(BackgroundSaveTest, AReadAfterTheApplierFailedSeesEveryAcknowledgedSave) {
  // Another connection (as another process could) makes the applier's commit fail, then lets commits through again
  // before anything else reaches the store: the next call, a read, must replay the rolled-back batch first.
  auto other = failCommitsFromAnotherConnection();
  std::vector<std::string> acked;
  for (int i = 0; i < 64; ++i) {  // saveBatch: the applier commits after the last
    auto r = save(*store_, "Acknowledged before the failed commit " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(r->id);
  }
  ASSERT_GE(store_->savesAnsweredInBackground(), 64u);
  ASSERT_TRUE(MemoryStoreTestAccess::waitForApplierIdle(*store_));  // it failed, and rolled the batch back
  other->exec("DROP TRIGGER fail_commit");  // commits go through again
  for (const auto& id : acked) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_EQ(store_->activeIndex().size(), 65u);
  ListFilter all;
  EXPECT_EQ(store_->list(all)->total, 65);
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 65);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memory_events"), 65);
}

// ---- what a read says while acknowledged saves cannot be applied ----

TEST_F(SaveBatchTest, WhileTheJournalCannotBeAppliedAReadSaysWhatItLeavesOut) {
  auto other = failCommitsFromAnotherConnection();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Acknowledged while commits fail " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ids.push_back(r->id);
  }
  EXPECT_FALSE(store_->unappliedSavesWarning().has_value());  // readable: in the open batch
  ASSERT_FALSE(store_->commitPendingSaves().isOk());
  // A read retries the journal, fails again, and answers from the committed rows: without the three, and says so.
  ListFilter all;
  auto listed = store_->list(all);
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_EQ(listed->total, 1);
  auto warning = store_->unappliedSavesWarning();
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("3 acknowledged saves"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("could not be applied"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("injected"), std::string::npos) << *warning;  // why
  EXPECT_EQ(store_->get(ids[0]).status().code(), ErrorCode::kNotFound);

  other->exec("DROP TRIGGER fail_commit");
  // A read retries once a second after a failed attempt; then every acknowledged save is read, and no warning.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  listed = store_->list(all);
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ(listed->total, 4);
  EXPECT_FALSE(store_->unappliedSavesWarning().has_value());
}

// ---- files removed or replaced under an open store ----

TEST_F(SaveBatchTest, ADatabaseMovedAwayGetsNoSaveAndItsJournalledSavesReachTheFileAtThePath) {
  std::vector<std::string> acked;
  for (int i = 0; i < 3; ++i) {
    auto r = save(*store_, "Journalled before the database moved " + std::to_string(i));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(r->id);
  }
  ASSERT_TRUE(store_->hasPendingSaves());
  ASSERT_TRUE(store_->checkFilesInPlace().isOk());
  // The database, its WAL and shared memory move away; the journal stays at its path.
  const auto aside = dir_ / "aside";
  fs::create_directories(aside);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const auto from = dir_ / "data" / (std::string("memory.db") + suffix);
    if (fs::exists(from)) fs::rename(from, aside / (std::string("memory.db") + suffix));
  }
  auto moved = store_->checkFilesInPlace();
  ASSERT_FALSE(moved.isOk());
  EXPECT_EQ(moved.code(), ErrorCode::kStorageError);
  EXPECT_NE(moved.message().find("was removed, replaced or moved"), std::string::npos) << moved.message();

  // A save is not acknowledged, and the batch is not committed into the moved file.
  auto refused = save(*store_, "Saved after the database moved");
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kStorageError);
  EXPECT_FALSE(store_->commitPendingSaves().isOk());
  const std::string fate = store_->retire();
  EXPECT_NE(fate.find("3 acknowledged saves not committed stay in the save journal"), std::string::npos) << fate;
  EXPECT_FALSE(save(*store_, "Saved to a retired store").isOk());
  store_.reset();
  {
    SQLite::Database raw((aside / "memory.db").string(), SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM memories").getInt64(), 1);  // SetUp's save only
  }
  // The store opened at the path next replays them into the file there.
  auto reopened = openAt(dir_ / "data");
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->replayedSaves(), 3u);
  for (const auto& id : acked) EXPECT_TRUE(reopened->get(id).isOk()) << id;
  EXPECT_EQ(count(*reopened, "SELECT COUNT(*) FROM memories"), 3);
  EXPECT_TRUE(reopened->checkFilesInPlace().isOk());
}

TEST_F(BackgroundSaveTest, ARemovedDirectoryGetsNoAcknowledgedSave) {
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(save(*store_, "Streamed before the removal " + std::to_string(i)).isOk());
  fs::remove_all(dir_ / "data");  // a project deleted: the database, its WAL and the journal
  for (int i = 0; i < 20; ++i) {
    auto r = save(*store_, "Streamed after the removal " + std::to_string(i));
    ASSERT_FALSE(r.isOk()) << "acknowledged a save into a removed file: " << r->id;
    EXPECT_EQ(r.status().code(), ErrorCode::kStorageError);
  }
  const std::string fate = store_->retire();
  EXPECT_TRUE(fate.find("went with it") != std::string::npos ||
              fate.find("every acknowledged save was committed") != std::string::npos)
      << fate;
  EXPECT_FALSE(fs::exists(dir_ / "data"));  // retiring creates nothing
  store_.reset();
  auto fresh = openAt(dir_ / "data");
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(count(*fresh, "SELECT COUNT(*) FROM memories"), 0);
  ASSERT_TRUE(save(*fresh, "Saved into the new file").isOk());
}

// During a stream the applier commits while newer saves are already journalled, so the journal keeps the committed
// records. The database deleted then (a project removed and cloned again), the one created at the path gets the
// saves the deleted one had not committed, which stay in the journal for it, and none of those it had.
TEST_F(BackgroundSaveTest, ADatabaseDeletedDuringAStreamGetsBackOnlyTheSavesItHadNotCommitted) {
  store_.reset();
  store_ = openAt(dir_ / "data", /*saveBatch=*/4);
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(save(*store_, "The first save after the reopen commits on its own").isOk());
  std::vector<std::string> acked;
  {
    // Another connection holds the write lock while the stream is answered: the applier waits for it (busy_timeout)
    // with every save journalled, then commits two batches of 4, each with newer records in the journal.
    SQLite::Database other((dir_ / "data" / "memory.db").string(), SQLite::OPEN_READWRITE);
    other.exec("BEGIN IMMEDIATE");
    for (int i = 0; i < 10; ++i) {
      auto r = save(*store_, "Streamed before the database was deleted " + std::to_string(i));
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      acked.push_back(r->id);
    }
    ASSERT_EQ(store_->savesAnsweredInBackground(), 10u);
    other.exec("ROLLBACK");
  }
  ASSERT_FALSE(MemoryStoreTestAccess::waitForApplierIdle(*store_));
  removeDatabase(dir_ / "data");
  const std::string fate = store_->retire();
  EXPECT_NE(fate.find("2 acknowledged saves not committed stay in the save journal"), std::string::npos) << fate;
  store_.reset();
  auto fresh = openAt(dir_ / "data", /*saveBatch=*/4);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->replayedSaves(), 2u);
  EXPECT_EQ(count(*fresh, "SELECT COUNT(*) FROM memories"), 2);
  for (size_t i = 0; i < acked.size(); ++i) EXPECT_EQ(fresh->get(acked[i]).isOk(), i >= 8) << "save " << i;
}

// The same loss under the applier: a ROLLBACK on the connection while the applier is idle with its batch open. Its
// next save must fail (its statements would each commit on their own), and the batch be applied again from the
// journal, not marked committed by a commit outside any transaction.
TEST_F(BackgroundSaveTest, ABatchSQLiteRolledBackUnderTheApplierIsAppliedAgainFromTheJournal) {
  std::vector<std::string> acked;
  auto saveAndKeep = [&](const std::string& summary) {
    auto r = save(*store_, summary);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    acked.push_back(r->id);
  };
  for (int i = 0; i < 5; ++i) saveAndKeep("Written by the applier into a batch SQLite rolls back " + std::to_string(i));
  ASSERT_EQ(store_->savesAnsweredInBackground(), 5u);
  ASSERT_FALSE(MemoryStoreTestAccess::waitForApplierIdle(*store_));  // written into the open batch, not committed
  MemoryStoreTestAccess::connectionLeftToTheApplier(*store_).exec("ROLLBACK");
  for (int i = 0; i < 3; ++i) saveAndKeep("Saved after the applier's batch was lost " + std::to_string(i));
  ASSERT_TRUE(store_->commitPendingSaves().isOk());
  for (const auto& id : acked) EXPECT_TRUE(store_->get(id).isOk()) << id;
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memories"), 9);
  EXPECT_EQ(count(*store_, "SELECT COUNT(*) FROM memory_events"), 9);
  EXPECT_EQ(store_->activeIndex().size(), 9u);
  EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec(
      "INSERT INTO memories_fts_tri(memories_fts_tri) VALUES('integrity-check')"));
}

}  // namespace
}  // namespace memq
