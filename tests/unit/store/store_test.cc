// MemoryStore on real SQLite files in a temp directory: the correction model, the journal, migrations, refusals.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <random>

#include "daemon/embed/hashbag.h"
#include "daemon/model/content_hash.h"
#include "daemon/store/database.h"
#include "daemon/store/memory_store.h"
#include "tests/unit/store/store_fixture.h"

namespace memq {
namespace {

namespace fs = std::filesystem;

class StoreTest : public testing::StoreFixture {
 protected:
  StoreTest() : StoreFixture("store") {}
  void SetUp() override {
    StoreFixture::SetUp();
    path_ = (dir_ / "data" / "memory.db").string();
    open();
  }
  void open(int maxVersion = -1) {
    store_.reset();
    StoreOptions o = optionsAt(dir_ / "data");
    o.maxSchemaVersion = maxVersion;
    auto s = MemoryStore::open(o);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    store_ = std::move(*s);
  }
  SaveOutcome save(const std::string& summary, const std::string& details = "",
                   std::vector<std::string> files = {}, std::vector<std::string> topics = {}) {
    SaveInput in;
    in.summary = summary;
    in.details = details;
    in.files = {files.begin(), files.end()};
    in.topics = topics;
    auto r = saveInput(*store_, in);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : SaveOutcome{};
  }
  int64_t count(const std::string& sql) { return MemoryStoreTestAccess::database(*store_).execAndGet(sql).getInt64(); }
  // After an upgrade that changes how FTS5 merges the full-text lanes: `setting` is `value` in both lanes' config, both
  // pass FTS5's integrity check, and both still find `word` in exactly the rows `ids` (a row indexed before and one
  // after).
  void expectLanesAnswerAfterMergeUpgrade(const char* setting, int value, const std::string& word,
                                          const std::vector<std::string>& ids) {
    for (const std::string lane : {"memories_fts", "memories_fts_tri"}) {
      EXPECT_EQ(count("SELECT v FROM " + lane + "_config WHERE k = '" + setting + "'"), value) << lane;
      EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO " + lane + "(" + lane +
                                                                      ") VALUES('integrity-check')"))
          << lane;
      EXPECT_EQ(count("SELECT COUNT(*) FROM " + lane + " WHERE " + lane + " MATCH '" + word + "'"),
                static_cast<int64_t>(ids.size()))
          << lane;
    }
    for (const auto& id : ids) EXPECT_TRUE(store_->get(id).isOk()) << id;
  }
  // A fresh database created at schema `version`, for a test of the migrations after it.
  void startAtSchema(int version) {
    store_.reset();
    fs::remove_all(dir_ / "data");
    open(version);
  }
  int64_t events(const std::string& id, const std::string& action) {
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_), "SELECT COUNT(*) FROM memory_events WHERE memory_id = ? AND action = ?");
    q.bind(1, id);
    q.bind(2, action);
    q.executeStep();
    return q.getColumn(0).getInt64();
  }
  std::vector<std::string> recallableIds() {
    ListFilter f;
    auto l = store_->list(f);
    std::vector<std::string> ids;
    for (const auto& m : l->memories) ids.push_back(m.id);
    return ids;
  }

  std::string path_;
  Actor user_{"user", "test"};
};

TEST_F(StoreTest, SaveCreatesThenDedupsActive) {
  auto a = save("Use pnpm, not npm", "", {"package.json"}, {"tooling"});
  EXPECT_EQ(a.status, "created");
  auto b = save("  use   PNPM, not npm ", "", {"pnpm-workspace.yaml"});
  EXPECT_EQ(b.status, "deduped");
  EXPECT_EQ(b.id, a.id);
  auto m = store_->get(a.id);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->useCount, 1);
  ASSERT_EQ(m->files.size(), 2u);  // the new ref was added
  EXPECT_EQ(events(a.id, "create"), 1);
  EXPECT_EQ(events(a.id, "dedup"), 1);
}

TEST_F(StoreTest, ADedupKeepsTheCategoryAndSaysWhenTheSaveAskedForAnother) {
  auto saveAs = [&](const std::optional<std::string>& category) {
    SaveInput in;
    in.summary = "Deploys wait for the staging smoke test";
    in.category = category;
    auto r = store_->save(*normalizeSave(in, root_), {}, actor_);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return *r;
  };
  const auto created = saveAs(std::string("decision"));
  const auto same = saveAs(std::string("decision"));
  EXPECT_EQ(same.status, "deduped");
  EXPECT_TRUE(same.warnings.empty());
  const auto other = saveAs(std::string("gotcha"));
  EXPECT_EQ(other.status, "deduped");
  ASSERT_EQ(other.warnings.size(), 1u);
  EXPECT_EQ(other.warnings[0], "category gotcha not applied: memory " + created.id +
                                   " keeps its category decision (memory/update changes it)");
  EXPECT_EQ(store_->get(created.id)->category, "decision");
  EXPECT_TRUE(saveAs(std::nullopt).warnings.empty()) << "a save naming no category asks for none";
}

TEST_F(StoreTest, ATextThatTruncationMakesIdenticalToAnotherSaysSo) {
  // Two texts that differ only past the details bound: both are cut, and the cut texts are the same.
  const std::string details(kMaxDetailsUnits, 'd');
  const auto first = save("Long notes are cut at the details bound", details + " one tail");
  const auto longer = save("Long notes are cut at the details bound", details + " another tail");
  EXPECT_EQ(longer.status, "deduped");
  EXPECT_EQ(longer.id, first.id);
  EXPECT_NE(std::find(longer.warnings.begin(), longer.warnings.end(),
                      "after truncation this text is identical to memory " + first.id),
            longer.warnings.end());
}

TEST_F(StoreTest, DedupMergesTopicsOnlyWhenAsked) {
  auto a = save("JWT expiry uses the container clock", "", {}, {"auth"});
  SaveInput in;
  in.summary = "JWT expiry uses the container clock";
  in.topics = {"AUTH", "jwt"};
  auto n = normalizeSave(in, root_);
  auto r = store_->save(*n, {}, actor_);
  EXPECT_EQ(r->memory->topics, std::vector<std::string>{"auth"});
  in.mergeTopics = true;
  n = normalizeSave(in, root_);
  r = store_->save(*n, {}, actor_);
  EXPECT_TRUE(r->topicsMerged);
  EXPECT_EQ(r->memory->topics, (std::vector<std::string>{"auth", "jwt"}));
  // Merging folds case as saving does, beyond ASCII too.
  in.topics = {"JWT", "\xc3\x84rger"};
  n = normalizeSave(in, root_);
  r = store_->save(*n, {}, actor_);
  in.topics = {"\xc3\xa4rger"};
  n = normalizeSave(in, root_);
  r = store_->save(*n, {}, actor_);
  EXPECT_EQ(r->memory->topics, (std::vector<std::string>{"auth", "jwt", "\xc3\x84rger"}));
}

TEST_F(StoreTest, ResavingHiddenTextNeverRevivesIt) {
  auto a = save("Deploys go through the staging cluster first");
  ASSERT_TRUE(store_->hide(a.id, std::string("not now"), user_).isOk());
  auto b = save("Deploys go through the staging cluster first");
  EXPECT_EQ(b.status, "exists_hidden");
  EXPECT_EQ(b.id, a.id);
  EXPECT_EQ(store_->get(a.id)->state, MemoryState::kHidden);  // the reference's "dedup wakes hidden" is absent
  EXPECT_TRUE(recallableIds().empty());
  EXPECT_EQ(events(a.id, "blocked_save"), 1);
}

TEST_F(StoreTest, ResavingSupersededTextNamesTheReplacement) {
  auto oldM = save("Tests run with jest");
  auto newM = save("Tests run with vitest");
  auto s = store_->supersede(oldM.id, newM.id, user_);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->first.state, MemoryState::kSuperseded);
  auto again = save("Tests run with jest");
  EXPECT_EQ(again.status, "exists_superseded");
  ASSERT_TRUE(again.supersededBy.has_value());
  EXPECT_EQ(*again.supersededBy, newM.id);
  EXPECT_EQ(store_->get(oldM.id)->state, MemoryState::kSuperseded);
  EXPECT_EQ(recallableIds(), std::vector<std::string>{newM.id});
}

TEST_F(StoreTest, RejectedTextStaysRefusedEvenAfterPurge) {
  auto a = save("Always run migrations by hand in production");
  ASSERT_TRUE(store_->reject(a.id, "wrong: migrations run in CI", user_).isOk());
  auto b = save("always run migrations by hand in production");
  EXPECT_EQ(b.status, "rejected");
  ASSERT_TRUE(b.reason.has_value());
  EXPECT_EQ(*b.reason, "wrong: migrations run in CI");
  ASSERT_TRUE(store_->purge(a.id, true, user_).isOk());
  EXPECT_FALSE(store_->get(a.id).isOk());
  auto c = save("Always run migrations by hand in production");
  EXPECT_EQ(c.status, "rejected");
  EXPECT_EQ(count("SELECT COUNT(*) FROM memories"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tombstones"), 1);
}

// The tombstone holds the rejected text: an edit that moved the row to new text would leave it behind, and once the
// row was purged nothing would stop the new text from being saved again.
TEST_F(StoreTest, ARejectedMemorysTextCannotBeEditedAwayFromItsTombstone) {
  auto a = save("Deploy on Fridays after five");
  ASSERT_TRUE(store_->reject(a.id, "wrong: no deploys on Fridays", user_).isOk());
  const int64_t events = count("SELECT COUNT(*) FROM memory_events");
  auto edited = store_->update(a.id, UpdateInput{.summary = std::string("Deploy on Fridays before noon")}, user_);
  ASSERT_FALSE(edited.isOk());
  EXPECT_EQ(edited.status().code(), ErrorCode::kConflict);
  EXPECT_EQ(edited.status().data()["state"], "rejected");
  EXPECT_EQ(store_->get(a.id)->summary, "Deploy on Fridays after five");
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_events"), events);
  // What does not touch the text still changes.
  auto topics = store_->update(a.id, UpdateInput{.topics = std::vector<std::string>{"deploys"}}, user_);
  ASSERT_TRUE(topics.isOk()) << topics.status().toString();
  EXPECT_EQ(topics->state, MemoryState::kRejected);
  ASSERT_TRUE(store_->purge(a.id, true, user_).isOk());
  EXPECT_EQ(save("Deploy on Fridays after five").status, "rejected");
}

TEST_F(StoreTest, RejectNeedsAReasonAndUnrejectNeedsAUser) {
  auto a = save("Use tabs");
  auto r = store_->reject(a.id, "", user_);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().data()["field"], "reason");
  ASSERT_TRUE(store_->reject(a.id, "we use spaces", user_).isOk());
  auto u = store_->unreject(a.id, actor_);
  ASSERT_FALSE(u.isOk());
  EXPECT_EQ(u.status().code(), ErrorCode::kForbidden);
  auto ok = store_->unreject(a.id, user_);
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->state, MemoryState::kActive);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tombstones"), 0);
  EXPECT_EQ(save("Use tabs").status, "deduped");
}

TEST_F(StoreTest, RestoreIsTheOnlyWayBackAndClearsSupersededBy) {
  auto a = save("Cache keys include the tenant id");
  auto b = save("Cache keys include tenant and region");
  ASSERT_TRUE(store_->supersede(a.id, b.id, user_).isOk());
  auto r = store_->restore(a.id, user_);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->state, MemoryState::kActive);
  EXPECT_FALSE(r->supersededBy.has_value());
  ASSERT_TRUE(store_->reject(a.id, "wrong", user_).isOk());
  auto again = store_->restore(a.id, user_);
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(again.status().code(), ErrorCode::kConflict);
}

TEST_F(StoreTest, JournalIsAppendOnly) {
  auto a = save("Prefer small commits");
  EXPECT_THROW(MemoryStoreTestAccess::database(*store_).exec("DELETE FROM memory_events"), SQLite::Exception);
  EXPECT_THROW(MemoryStoreTestAccess::database(*store_).exec("UPDATE memory_events SET action = 'hide'"), SQLite::Exception);
  EXPECT_THROW(MemoryStoreTestAccess::database(*store_).exec("UPDATE memory_events SET detail = '{}', scrubbed = 1"), SQLite::Exception);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_events"), 1);
}

TEST_F(StoreTest, EveryStateChangeHasExactlyOneEvent) {
  auto a = save("Lint with ruff");
  auto b = save("Lint with ruff and mypy");
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, user_).isOk());
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, user_).isOk());  // no change, no event
  ASSERT_TRUE(store_->restore(a.id, user_).isOk());
  ASSERT_TRUE(store_->setPinned(a.id, true, user_).isOk());
  ASSERT_TRUE(store_->setPinned(a.id, true, user_).isOk());
  ASSERT_TRUE(store_->setPinned(a.id, false, user_).isOk());
  ASSERT_TRUE(store_->supersede(a.id, b.id, user_).isOk());
  ASSERT_TRUE(store_->restore(a.id, user_).isOk());
  ASSERT_TRUE(store_->reject(a.id, "no", user_).isOk());
  ASSERT_TRUE(store_->unreject(a.id, user_).isOk());
  for (const char* action : {"create", "hide", "pin", "unpin", "supersede", "reject", "unreject"}) {
    EXPECT_EQ(events(a.id, action), 1) << action;
  }
  EXPECT_EQ(events(a.id, "restore"), 2);
  auto log = store_->audit({.memoryId = a.id, .sinceSeq = 0, .limit = 100});
  ASSERT_TRUE(log.isOk());
  EXPECT_EQ(log->size(), 9u);
  EXPECT_EQ(log->front().actor, "agent:test");
}

TEST_F(StoreTest, PurgeScrubsTextFromTheJournalButKeepsEvents) {
  auto a = save("The staging password rotates on Mondays", "ask ops");
  ASSERT_TRUE(store_->update(a.id, UpdateInput{.details = std::string("ask the ops channel")}, user_).isOk());
  auto no = store_->purge(a.id, false, user_);
  ASSERT_FALSE(no.isOk());
  EXPECT_EQ(no.code(), ErrorCode::kForbidden);
  ASSERT_TRUE(store_->purge(a.id, true, user_).isOk());
  auto log = store_->audit({.memoryId = a.id, .sinceSeq = 0, .limit = 100});
  ASSERT_EQ(log->size(), 3u);
  for (const auto& e : *log) {
    EXPECT_EQ(e.detail.dump().find("staging password"), std::string::npos) << e.action;
    EXPECT_EQ(e.detail.dump().find("ops channel"), std::string::npos) << e.action;
  }
  EXPECT_TRUE((*log)[0].scrubbed);
  EXPECT_EQ((*log)[2].action, "purge");
  EXPECT_EQ(count("SELECT COUNT(*) FROM scrub_grants"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_files"), 0);
}

TEST_F(StoreTest, HoldsNoRowsOnlyWhileTheFileHoldsNone) {
  // Recall skips a scope that says it holds no rows, so a wrong "none" would hide every memory in it.
  EXPECT_TRUE(store_->holdsNoRows());
  // A row written by another connection to the same file.
  auto other = MemoryStore::open(optionsAt(dir_ / "data"));
  ASSERT_TRUE(other.isOk()) << other.status().toString();
  SaveInput in;
  in.summary = "written by the other connection";
  auto written = saveInput(**other, in);
  ASSERT_TRUE(written.isOk()) << written.status().toString();
  EXPECT_FALSE(store_->holdsNoRows());
  // Gone again once purged, then rows of this connection's own stream of saves, the later ones answered before the
  // applier has written them.
  ASSERT_TRUE((*other)->purge(written->id, true, user_).isOk());
  EXPECT_TRUE(store_->holdsNoRows());
  for (int i = 0; i < 5; ++i) save("a save of the stream, number " + std::to_string(i));
  EXPECT_FALSE(store_->holdsNoRows());
  // A hidden row is still a row: the lanes leave it out themselves.
  for (const std::string& id : recallableIds()) ASSERT_TRUE(store_->hide(id, std::nullopt, user_).isOk());
  EXPECT_FALSE(store_->holdsNoRows());
}

TEST_F(StoreTest, ASaveIntoALargeIndexLinksTheNeighboursAScanByOneThreadFinds) {
  // From 32,768 rows a save's neighbour scan is shared with a scan helper; its edges must be what one thread's scan of
  // the same index finds. The rows are imported (one transaction), the saves then go through the save path.
  std::mt19937 rng(7);
  std::vector<std::string> vocabulary;
  for (int w = 0; w < 400; ++w) vocabulary.push_back("w" + std::to_string(w * 7919 % 100003));
  auto sentence = [&] {
    std::string text;
    const size_t words = 5 + rng() % 6;
    for (size_t i = 0; i < words; ++i) text += (i ? " " : "") + vocabulary[rng() % vocabulary.size()];
    return text;
  };
  ImportBatch batch;
  const size_t rows = 33000;
  for (size_t i = 0; i < rows; ++i) {
    Memory m;
    char id[40];
    std::snprintf(id, sizeof id, "%08zx-0000-4000-8000-000000000000", i + 1);
    m.id = id;
    m.summary = sentence();
    m.contentHash = contentHash(m.summary, "");
    m.createdAt = m.updatedAt = m.lastUsedAt = "2026-01-01T00:00:00.000Z";
    batch.memories.push_back({m, i + 1});
  }
  auto imported = store_->importBatch(batch, user_);
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  ASSERT_GE(store_->activeIndex().size(), 32768u);
  size_t linked = 0;
  for (int s = 0; s < 6; ++s) {
    // An imported row's words with one changed: close to that row, and sharing words with many others.
    std::string summary = batch.memories[rng() % rows].memory.summary + " " + vocabulary[rng() % vocabulary.size()];
    const std::vector<float> vec = embedder_.embed(memoryEmbedSource(summary, "", {}));
    std::vector<VectorIndex::Hit> expected = store_->activeIndex().topK(vec, 9, 0.4f);
    if (expected.size() > 8) expected.resize(8);
    const SaveOutcome out = save(summary);
    ASSERT_EQ(out.status, "created");
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                        "SELECT dst_pk FROM memory_edges WHERE kind = 'similar' AND src_pk = ? ORDER BY dst_pk");
    q.bind(1, *store_->pkOf(out.id));
    std::vector<int64_t> edges;
    while (q.executeStep()) edges.push_back(q.getColumn(0).getInt64());
    std::vector<int64_t> want;
    for (const auto& h : expected) want.push_back(h.key);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(edges, want) << summary;
    linked += edges.size();
  }
  EXPECT_GT(linked, 6u);  // the saves did find neighbours
}

TEST_F(StoreTest, UpdateLeavesAbsentFieldsAndRefusesCollisions) {
  auto a = save("Run the e2e suite nightly", "it is slow", {"ci.yml"}, {"ci"});
  auto b = save("Run unit tests on every push");
  UpdateInput in;
  in.details = std::string("it takes 40 minutes");
  auto u = store_->update(a.id, in, user_);
  ASSERT_TRUE(u.isOk());
  EXPECT_EQ(u->summary, "Run the e2e suite nightly");
  EXPECT_EQ(u->topics, std::vector<std::string>{"ci"});
  ASSERT_EQ(u->files.size(), 1u);
  EXPECT_EQ(u->details, "it takes 40 minutes");
  UpdateInput clash;
  clash.summary = std::string("run unit tests on every push");
  clash.details = std::string("");
  auto c = store_->update(a.id, clash, user_);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), ErrorCode::kConflict);
  EXPECT_EQ(store_->get(a.id)->details, "it takes 40 minutes");
  EXPECT_EQ(store_->get(b.id)->state, MemoryState::kActive);
}

TEST_F(StoreTest, PrefixLookupAndAmbiguity) {
  auto a = save("One");
  auto m = store_->matchIds(a.id.substr(0, 8));
  ASSERT_TRUE(m.isOk());
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0], a.id);
  EXPECT_TRUE(store_->matchIds(a.id.substr(0, 3))->empty());
  EXPECT_TRUE(store_->matchIds("%%%%")->empty());  // not a LIKE wildcard
  // Two ids sharing a prefix: both come back as candidates.
  Memory x;
  x.id = "abcd0000-0000-4000-8000-000000000001";
  x.summary = "first of a pair";
  x.contentHash = contentHash(x.summary, "");
  x.createdAt = x.updatedAt = x.lastUsedAt = "2026-01-01T00:00:00.000Z";
  ASSERT_EQ(*store_->importRecord(x, user_), "created");
  x.id = "abcd0000-0000-4000-8000-000000000002";
  x.summary = "second of a pair";
  x.contentHash = contentHash(x.summary, "");
  ASSERT_EQ(*store_->importRecord(x, user_), "created");
  EXPECT_EQ(store_->matchIds("abcd0000")->size(), 2u);
  EXPECT_EQ(store_->matchIds("ABCD0000")->size(), 2u);  // ids are lowercase; a prefix matches either case
}

TEST_F(StoreTest, UsageBumpsDoNotReindexFullText) {
  auto a = save("Usage feedback must not rewrite the FTS index");
  auto pk = store_->pkOf(a.id);
  ASSERT_TRUE(pk.has_value());
  // total_changes counts rows written by triggers too: a re-index would add FTS rows to the count.
  int before = MemoryStoreTestAccess::database(*store_).getTotalChanges();
  ASSERT_TRUE(store_->markUsed({*pk}).isOk());
  ASSERT_TRUE(store_->flushUsage().isOk());  // markUsed itself writes nothing (usage_test.cc)
  EXPECT_EQ(MemoryStoreTestAccess::database(*store_).getTotalChanges() - before, 1);
  before = MemoryStoreTestAccess::database(*store_).getTotalChanges();
  ASSERT_TRUE(store_->setPinned(a.id, true, user_).isOk());
  // The row, its event, and the two counts of changes to mirrored rows (migration 0011's, and the connection's own).
  EXPECT_EQ(MemoryStoreTestAccess::database(*store_).getTotalChanges() - before, 4);
  before = MemoryStoreTestAccess::database(*store_).getTotalChanges();
  ASSERT_TRUE(store_->update(a.id, UpdateInput{.details = std::string("now with details")}, user_).isOk());
  EXPECT_GT(MemoryStoreTestAccess::database(*store_).getTotalChanges() - before, 4);  // text changed: both FTS lanes re-indexed
}

// Another connection's commit makes the mirror read every row again only when it changed one: the project's
// co-change cache commits on a connection of its own after each new commit in the repository, and a rebuild of every
// row (0.2 s at 10k memories) on the next recall is what that cost before.
TEST_F(StoreTest, AnotherConnectionsCommitReloadsTheMirrorOnlyWhenItChangedARow) {
  auto a = save("The mirror is rebuilt only when rows change");
  auto b = save("Another memory about caches");
  // The store's own writes of every kind, before and between the other connection's commits: never "another's".
  ASSERT_TRUE(store_->setPinned(a.id, true, user_).isOk());
  ASSERT_TRUE(store_->update(b.id, UpdateInput{.details = std::string("rewritten by the store itself")}, user_).isOk());
  ASSERT_TRUE(store_->markUsed({*store_->pkOf(a.id)}).isOk());
  ASSERT_TRUE(store_->flushUsage().isOk());
  auto searchable = [&](const std::string& words) {
    auto hits = store_->searchFts(FtsLane::kUnicode, words, 5);
    EXPECT_TRUE(hits.isOk()) << hits.status().toString();
    return hits.isOk() && !hits->empty();
  };
  ASSERT_TRUE(searchable("rebuilt"));
  const uint64_t loads = MemoryStoreTestAccess::mirrorRowLoads(*store_);

  SQLite::Database other(path_, SQLite::OPEN_READWRITE);
  other.exec("PRAGMA busy_timeout = 5000");
  other.exec("INSERT INTO scrub_grants (memory_id) VALUES ('no-such-memory')");  // a table no mirror reads
  other.exec("UPDATE memories SET use_count = use_count + 1");                   // uses alone
  ASSERT_TRUE(store_->setPinned(a.id, false, user_).isOk());                     // the store's own, in between
  ASSERT_TRUE(searchable("rebuilt"));
  EXPECT_EQ(MemoryStoreTestAccess::mirrorRowLoads(*store_), loads) << "a commit that changed no row rebuilt the rows";

  other.exec("UPDATE memories SET summary = 'Edited elsewhere: wombats', details = '' WHERE id = '" + b.id + "'");
  EXPECT_TRUE(searchable("wombats")) << "a row changed by another connection was not read again";
  EXPECT_EQ(MemoryStoreTestAccess::mirrorRowLoads(*store_), loads + 1);
}

// The store counts its own changes (TEMP triggers, StoreSql::countOwnChanges) under exactly the conditions migration
// 0011 counts everyone's: a column in one list and not the other would make every own write of it look like
// another connection's (a rebuild each time), or another's invisible.
TEST_F(StoreTest, TheOwnChangeCounterFiresOnExactlyTheColumnsTheMigrationsCounterDoes) {
  auto columnsOf = [&](const std::string& schema, const std::string& trigger) {
    const std::string sql = MemoryStoreTestAccess::database(*store_)
                                .execAndGet("SELECT sql FROM " + schema + " WHERE type = 'trigger' AND name = '" +
                                            trigger + "'")
                                .getString();
    const size_t from = sql.find("UPDATE OF");
    const size_t to = sql.find(" ON ", from);
    EXPECT_NE(from, std::string::npos) << sql;
    std::string columns;
    for (char c : sql.substr(from + 9, to - from - 9)) {
      if (c != ' ' && c != '\n') columns += c;
    }
    return columns;
  };
  const std::string everyone = columnsOf("sqlite_master", "mirror_generation_update");
  EXPECT_FALSE(everyone.empty());
  EXPECT_EQ(columnsOf("sqlite_temp_master", "mirror_own_update"), everyone);
  EXPECT_EQ(everyone.find("use_count"), std::string::npos);
  EXPECT_EQ(everyone.find("last_used_at"), std::string::npos);
}

TEST_F(StoreTest, ListFilters) {
  SaveInput in;
  in.summary = "Gotcha: the CI cache keys on the lockfile";
  in.category = "gotcha";
  in.topics = {"CI"};
  in.files = {"ci.yml"};
  auto n = normalizeSave(in, root_);
  auto g = store_->save(*n, {{"ci.yml", std::nullopt}}, actor_);
  save("A plain note");
  EXPECT_EQ(store_->list(ListFilter{.category = std::optional<std::string>("gotcha")})->total, 1);
  EXPECT_EQ(store_->list(ListFilter{.category = std::optional<std::string>()})->total, 1);
  EXPECT_EQ(store_->list(ListFilter{.topic = "ci"})->total, 1);
  EXPECT_EQ(store_->list(ListFilter{.file = "ci.yml"})->total, 1);
  ASSERT_TRUE(store_->hide(g->id, std::nullopt, user_).isOk());
  EXPECT_EQ(store_->list(ListFilter{})->total, 1);
  EXPECT_EQ(store_->list(ListFilter{.state = MemoryState::kHidden})->total, 1);
  EXPECT_EQ(store_->list(ListFilter{.state = std::nullopt})->total, 2);
}

TEST_F(StoreTest, AttachAndDetach) {
  auto a = save("Auth lives in src/auth");
  auto m = store_->attach(a.id, {{"src/auth/jwt.ts", std::nullopt}}, user_);
  ASSERT_TRUE(m.isOk());
  ASSERT_EQ(m->files.size(), 1u);
  m = store_->detach(a.id, {"src/auth/jwt.ts"}, user_);
  EXPECT_TRUE(m->files.empty());
  EXPECT_EQ(events(a.id, "attach"), 1);
  EXPECT_EQ(events(a.id, "detach"), 1);
}

TEST_F(StoreTest, ReopenKeepsEverything) {
  auto a = save("Survives a reopen", "details", {"a.c"}, {"t"});
  ASSERT_TRUE(store_->hide(save("hidden one").id, std::nullopt, user_).isOk());
  open();
  auto m = store_->get(a.id);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->details, "details");
  EXPECT_EQ(store_->list(ListFilter{.state = std::nullopt})->total, 2);
  EXPECT_EQ(store_->activeIndex().size(), 1u);
}

TEST_F(StoreTest, BothFullTextLanesNameTheRightRowsAfterAVacuum) {
  // Purged rows leave gaps in the keys; a VACUUM that renumbered the rows would leave the external-content lanes
  // pointing at other rows' text.
  std::vector<std::string> ids;
  for (const char* word : {"amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet"}) {
    ids.push_back(save(std::string("The ") + word + " build step needs its own cache").id);
  }
  for (size_t i : {0, 2, 3}) ASSERT_TRUE(store_->purge(ids[i], true, user_).isOk());
  store_.reset();
  {
    SQLite::Database db(path_, SQLite::OPEN_READWRITE);
    db.exec("VACUUM");
  }
  open();
  const std::vector<std::pair<std::string, std::string>> kept = {
      {"basalt", ids[1]}, {"emerald", ids[4]}, {"feldspar", ids[5]}, {"garnet", ids[6]}};
  for (const std::string lane : {"memories_fts", "memories_fts_tri"}) {
    EXPECT_NO_THROW(MemoryStoreTestAccess::database(*store_).exec("INSERT INTO " + lane + "(" + lane +
                                                                    ") VALUES('integrity-check')"))
        << lane;
    for (const auto& [word, id] : kept) {
      SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                          "SELECT m.id FROM " + lane + " f JOIN memories m ON m.pk = f.rowid WHERE " + lane +
                              " MATCH ?");
      q.bind(1, word);
      ASSERT_TRUE(q.executeStep()) << lane << " " << word;
      EXPECT_EQ(q.getColumn(0).getString(), id) << lane << " " << word;
      EXPECT_FALSE(q.executeStep()) << lane << " " << word;
    }
  }
  for (const FtsLane lane : {FtsLane::kUnicode, FtsLane::kTrigram}) {
    for (const auto& [word, id] : kept) {
      auto hits = store_->searchFts(lane, "\"" + word + "\"", 10);
      ASSERT_TRUE(hits.isOk());
      ASSERT_EQ(hits->size(), 1u) << word;
      EXPECT_EQ(hits->front().pk, *store_->pkOf(id)) << word;
    }
  }
}

TEST_F(StoreTest, OpeningEmbedsRowsWithoutAVectorAndKeepsOtherModelsVectorsApart) {
  const auto a = save("The cache warms up after each deploy");
  const auto b = save("Fonts are vendored under assets/fonts");
  const std::string pkA = std::to_string(store_->get(a.id)->pk);
  const std::string pkB = std::to_string(store_->get(b.id)->pk);
  const std::string model(HashbagEmbedder().model());
  auto vectors = [&](const std::string& pk, const std::string& ofModel) {
    return count("SELECT COUNT(*) FROM memory_embeddings WHERE memory_pk = " + pk + " AND model = '" + ofModel + "'");
  };
  // Another embedder's vector beside a's own, and b's own vector gone (a row written by a build that did not embed).
  MemoryStoreTestAccess::database(*store_).exec(
      "INSERT INTO memory_embeddings(memory_pk, model, dim, vector) VALUES(" + pkA + ", 'other-model', 3, zeroblob(12))");
  MemoryStoreTestAccess::database(*store_).exec("DELETE FROM memory_embeddings WHERE memory_pk = " + pkB);
  open();
  EXPECT_EQ(vectors(pkB, model), 1) << "embedded again when the store opened";
  EXPECT_EQ(vectors(pkA, model), 1);
  EXPECT_EQ(vectors(pkA, "other-model"), 1) << "another model's vector is neither read nor overwritten";
  ASSERT_EQ(store_->activeIndex().size(), 2u);
  const auto expected = HashbagEmbedder().embed(memoryEmbedSource("Fonts are vendored under assets/fonts", "", {}));
  auto score = store_->activeIndex().score(*store_->pkOf(b.id), expected);
  ASSERT_TRUE(score.has_value());
  EXPECT_NEAR(*score, 1.0f, 1e-5);
}

// A stored vector that is not a unit vector of finite components (a damaged file, a row written by hand) is embedded
// again when the store opens: a NaN would leave the row out of semantic recall for good, and a huge or tiny one would
// score inf or 0 against every query.
TEST_F(StoreTest, OpeningEmbedsAgainAStoredVectorThatIsNotAFiniteUnitVector) {
  const auto nan = save("The cache warms up after each deploy");
  const auto huge = save("Fonts are vendored under assets/fonts");
  const std::string model(HashbagEmbedder().model());
  const size_t dim = HashbagEmbedder().dim();
  auto overwrite = [&](const std::string& id, float value) {
    std::vector<float> bad(dim, value);
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                        "UPDATE memory_embeddings SET vector = ? WHERE memory_pk = ? AND model = ?");
    q.bind(1, bad.data(), static_cast<int>(bad.size() * sizeof(float)));
    q.bind(2, *store_->pkOf(id));
    q.bind(3, model);
    ASSERT_EQ(q.exec(), 1);
  };
  overwrite(nan.id, std::nanf(""));
  overwrite(huge.id, 1e30f);
  open();
  ASSERT_EQ(store_->activeIndex().size(), 2u) << "a row was left out of the index";
  for (const auto& [id, text] : {std::pair{nan.id, "The cache warms up after each deploy"},
                                 std::pair{huge.id, "Fonts are vendored under assets/fonts"}}) {
    const auto expected = HashbagEmbedder().embed(memoryEmbedSource(text, "", {}));
    auto score = store_->activeIndex().score(*store_->pkOf(id), expected);
    ASSERT_TRUE(score.has_value()) << text;
    EXPECT_NEAR(*score, 1.0f, 1e-5) << text;
  }
  // And stored again: the next open reads them as they are.
  SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                      "SELECT vector FROM memory_embeddings WHERE memory_pk = ? AND model = ?");
  q.bind(1, *store_->pkOf(nan.id));
  q.bind(2, model);
  ASSERT_TRUE(q.executeStep());
  const auto* stored = static_cast<const float*>(q.getColumn(0).getBlob());
  EXPECT_TRUE(std::isfinite(stored[0]));
}

TEST_F(StoreTest, LoadManyReturnsTheAskedRowsInTheAskedOrderWithTheirFilesAcrossChunks) {
  // More than one chunk of the loader's IN lists (32 pks), lists of every length up to it (up to 8 distinct pks, one
  // by one: 7 asked and the missing one), a pk asked for twice and one that does not exist: each row comes back as
  // get() reads it, in the order asked, a repeat twice.
  std::vector<int64_t> pks;
  std::vector<std::string> ids;
  for (int i = 0; i < 70; ++i) {
    std::vector<std::string> files;
    for (int f = 0; f < i % 3; ++f) files.push_back("src/f" + std::to_string(i) + "_" + std::to_string(f) + ".c");
    auto out = save("loader row " + std::to_string(i), "details " + std::to_string(i), files,
                    {"topic" + std::to_string(i % 4)});
    ids.push_back(out.id);
    pks.push_back(*store_->pkOf(out.id));
  }
  auto check = [&](const std::vector<int64_t>& asked) {
    size_t expectedRows = 0;
    for (int64_t pk : asked) expectedRows += pk == 1'000'000 ? 0 : 1;
    auto loaded = store_->loadMany(asked);
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    ASSERT_EQ(loaded->size(), expectedRows) << asked.size();
    size_t next = 0;
    for (int64_t pk : asked) {
      if (pk == 1'000'000) continue;
      const Memory& m = (*loaded)[next++];
      ASSERT_EQ(m.pk, pk) << asked.size();
      auto expected = store_->get(m.id);
      ASSERT_TRUE(expected.isOk());
      EXPECT_EQ(m.summary, expected->summary);
      EXPECT_EQ(m.details, expected->details);
      EXPECT_EQ(m.topics, expected->topics);
      ASSERT_EQ(m.files.size(), expected->files.size()) << m.id;
      for (size_t f = 0; f < m.files.size(); ++f) EXPECT_EQ(m.files[f].path, expected->files[f].path);
    }
  };
  std::mt19937 rng(5);
  for (size_t n : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{31}, size_t{32}, size_t{33}, size_t{70}}) {
    std::vector<int64_t> asked = pks;
    std::shuffle(asked.begin(), asked.end(), rng);
    asked.resize(n);
    asked.push_back(asked.front());       // twice
    asked.insert(asked.begin() + static_cast<std::ptrdiff_t>(n / 2), 1'000'000);  // no such row
    check(asked);
  }
  // The 32 lowest pks and the 32nd of them again, shuffled: in pk order its two copies fall on either side of the
  // first chunk's end, so reading the pks in order alone would still read it (and its file ref) twice.
  std::vector<int64_t> straddling(pks.begin(), pks.begin() + 32);
  straddling.push_back(pks[31]);
  std::shuffle(straddling.begin(), straddling.end(), rng);
  check(straddling);
}

TEST_F(StoreTest, OlderSchemaUpgradesKeepingMemories) {
  if (latestSchemaVersion() < 2) GTEST_SKIP() << "only one migration so far";
  startAtSchema(latestSchemaVersion() - 1);
  auto a = save("Written by the previous schema");
  open();
  EXPECT_EQ(schemaVersion(MemoryStoreTestAccess::database(*store_)), latestSchemaVersion());
  EXPECT_TRUE(store_->get(a.id).isOk());
}

// A memqd still running the previous schema holds the database's save journal: a newer one opening the same file
// must not upgrade it under it (the older one would go on writing rows by its schema), and upgrades once it is gone.
TEST_F(StoreTest, AnUpgradeWaitsForTheProcessWritingTheDatabaseByTheOlderSchema) {
  if (latestSchemaVersion() < 2) GTEST_SKIP() << "only one migration so far";
  store_.reset();
  fs::remove_all(dir_ / "data");
  StoreOptions older = optionsAt(dir_ / "data");
  older.maxSchemaVersion = latestSchemaVersion() - 1;
  older.saveBatch = 8;  // the journal is kept, and locked, while the store is open
  auto running = MemoryStore::open(older);
  ASSERT_TRUE(running.isOk()) << running.status().toString();
  SaveInput in;
  in.summary = "Saved by the memqd of the previous schema";
  auto kept = saveInput(**running, in);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();

  auto newer = MemoryStore::open(optionsAt(dir_ / "data"));
  ASSERT_FALSE(newer.isOk());
  EXPECT_EQ(newer.status().code(), ErrorCode::kConflict) << newer.status().toString();
  EXPECT_NE(newer.status().message().find("memory.db-saves"), std::string::npos) << newer.status().message();
  EXPECT_EQ(schemaVersion(MemoryStoreTestAccess::database(**running)), latestSchemaVersion() - 1);
  EXPECT_TRUE((*running)->get(kept->id).isOk());

  running->reset();  // the older memqd stops
  open();
  EXPECT_EQ(schemaVersion(MemoryStoreTestAccess::database(*store_)), latestSchemaVersion());
  EXPECT_TRUE(store_->get(kept->id).isOk());
}

TEST_F(StoreTest, UpgradeToLeanWritesKeepsVectorsAndEdges) {
  // 0003 rebuilds memory_embeddings and drops the edges' dst index; rows written before must come through intact.
  if (latestSchemaVersion() < 3) GTEST_SKIP() << "no migration 0003";
  startAtSchema(2);
  auto a = save("Use bun for installing packages in this repo");
  auto b = save("Use bun for installing the packages in this repo");
  std::vector<unsigned char> before;
  {
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_), "SELECT vector FROM memory_embeddings ORDER BY memory_pk");
    while (q.executeStep()) {
      auto blob = static_cast<const unsigned char*>(q.getColumn(0).getBlob());
      before.insert(before.end(), blob, blob + q.getColumn(0).getBytes());
    }
  }
  const int64_t edges = count("SELECT COUNT(*) FROM memory_edges");
  ASSERT_EQ(edges, 1);  // one row per edge, as this memq writes at any schema (0006)
  open();
  EXPECT_EQ(schemaVersion(MemoryStoreTestAccess::database(*store_)), latestSchemaVersion());
  std::vector<unsigned char> after;
  {
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_), "SELECT vector FROM memory_embeddings ORDER BY memory_pk");
    while (q.executeStep()) {
      auto blob = static_cast<const unsigned char*>(q.getColumn(0).getBlob());
      after.insert(after.end(), blob, blob + q.getColumn(0).getBytes());
    }
  }
  EXPECT_EQ(after, before);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), edges);
  EXPECT_EQ(store_->activeIndex().size(), 2u);
  // The edge goes when one side leaves the active state, and comes back with it.
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, user_).isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), 0);
  ASSERT_TRUE(store_->restore(a.id, user_).isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), 1);
  // A purge cascades over the edges too.
  ASSERT_TRUE(store_->purge(b.id, true, user_).isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_embeddings"), 1);
}

TEST_F(StoreTest, TheDatabaseIsNotMemoryMapped) {
  // A mapped connection keeps every page it reads in memqd's resident set (about 240 MiB at 100k memories); the
  // store reads through SQLite's page cache instead.
  EXPECT_EQ(count("PRAGMA mmap_size"), 0);
}

TEST_F(StoreTest, UpgradeToIncrementalMergesKeepsTheFullTextLanesAnswering) {
  // 0010 changes when FTS5 merges a level's segments whole, nothing the lanes hold: rows indexed before still match,
  // the lanes pass their integrity checks, and both merge a level whole only at 64 segments from then on.
  if (latestSchemaVersion() < 10) GTEST_SKIP() << "no migration 0010";
  startAtSchema(9);
  auto a = save("Indexed before the crisis merge setting changed, about wombats");
  for (const char* lane : {"memories_fts", "memories_fts_tri"}) {
    EXPECT_EQ(count(std::string("SELECT COUNT(*) FROM ") + lane + "_config WHERE k = 'crisismerge'"), 0) << lane;
  }
  open();
  auto b = save("Indexed after the crisis merge setting changed, about wombats");
  expectLanesAnswerAfterMergeUpgrade("crisismerge", 64, "wombats", {a.id, b.id});
  expectLanesAnswerAfterMergeUpgrade("automerge", 16, "wombats", {a.id, b.id});
}

TEST_F(StoreTest, UpgradeToMergesOfSixteenKeepsTheFullTextLanesAnswering) {
  // 0005 changes how FTS5 merges the lanes' segments, nothing they hold: rows indexed before still match, the
  // lanes pass their integrity checks, and both merge 16 segments at a time from then on.
  if (latestSchemaVersion() < 5) GTEST_SKIP() << "no migration 0005";
  startAtSchema(4);
  auto a = save("Indexed before the merge setting changed, about quokkas");
  open();
  auto b = save("Indexed after the merge setting changed, about quokkas");
  expectLanesAnswerAfterMergeUpgrade("automerge", 16, "quokkas", {a.id, b.id});
}

TEST_F(StoreTest, UpgradeToEdgesStoredOnceKeepsEveryEdge) {
  // Up to 0005 memq stored a similar edge in both directions. 0006 keeps one row per edge, (higher pk, lower pk),
  // keeps a pair an older file held in one direction only, and still lists both directions in similar_edges.
  if (latestSchemaVersion() < 6) GTEST_SKIP() << "no migration 0006";
  startAtSchema(5);
  auto a = save("Use bun for installing packages in this repo");
  auto b = save("Use bun for installing the packages in this repo");
  auto c = save("Use bun for installing all the packages in this repo");
  auto pkOf = [&](const std::string& id) { return store_->pkOf(id).value_or(0); };
  // The rows as an older memq wrote them: every edge mirrored, plus one pair (c, a) held only as (a -> c).
  MemoryStoreTestAccess::database(*store_).exec("DELETE FROM memory_edges");
  auto put = [&](int64_t src, int64_t dst, double weight) {
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                        "INSERT INTO memory_edges(src_pk, dst_pk, kind, weight, created_at) VALUES (?, ?, 'similar', ?, "
                        "'2026-01-01T00:00:00.000Z')");
    q.bind(1, src);
    q.bind(2, dst);
    q.bind(3, weight);
    q.exec();
  };
  put(pkOf(b.id), pkOf(a.id), 0.9);
  put(pkOf(a.id), pkOf(b.id), 0.9);
  put(pkOf(a.id), pkOf(c.id), 0.8);
  // And an edge to a memory that is gone, as a file edited with foreign keys off could hold: dropped, and the
  // upgrade still goes through.
  MemoryStoreTestAccess::database(*store_).exec("PRAGMA foreign_keys = OFF");
  put(pkOf(a.id), 99999, 0.7);
  MemoryStoreTestAccess::database(*store_).exec("PRAGMA foreign_keys = ON");
  open();
  ASSERT_EQ(schemaVersion(MemoryStoreTestAccess::database(*store_)), latestSchemaVersion());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE src_pk < dst_pk"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE src_pk = " + std::to_string(pkOf(c.id)) +
                  " AND dst_pk = " + std::to_string(pkOf(a.id)) + " AND weight = 0.8"),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM similar_edges"), 4);
  EXPECT_EQ(count("SELECT COUNT(*) FROM similar_edges WHERE src_pk = " + std::to_string(pkOf(a.id))), 2);
  // Clusters read every edge, whichever way it was stored.
  auto edges = store_->similarEdges(0.7);
  ASSERT_TRUE(edges.isOk());
  EXPECT_EQ(edges->size(), 2u);
  // Hiding the lower end removes its edges, found through idx_memory_edges_dst.
  std::string plan;
  {
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                        "EXPLAIN QUERY PLAN DELETE FROM memory_edges WHERE dst_pk = 1 AND kind = 'similar'");
    while (q.executeStep()) plan += q.getColumn(3).getString() + "\n";
  }
  EXPECT_NE(plan.find("idx_memory_edges_dst"), std::string::npos) << plan;
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, user_).isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges"), 0);
}

TEST_F(StoreTest, AnUpgradeDeletesWhatAMemoryDeletedByHandLeftBehindAndKeepsEveryOtherRow) {
  // A memory deleted in the sqlite3 shell (foreign keys off, its default) leaves its vector, file refs and edges
  // naming a row that is gone. 0003 copies every vector into a new table: the migrations run with foreign keys off,
  // so the copy goes through, and before the commit the rows naming the missing memory are deleted, nothing else.
  if (latestSchemaVersion() < 3) GTEST_SKIP() << "no migration 0003";
  startAtSchema(2);
  auto a = save("Use bun for installing packages in this repo", "", {"package.json"});
  auto b = save("Use bun for installing the packages in this repo", "", {"bun.lockb"});
  auto c = save("Deploys wait for the staging smoke test", "", {"deploy.sh"});
  const std::string gone = std::to_string(store_->pkOf(b.id).value_or(0));
  auto rows = [&](const std::string& sql) {
    std::vector<std::string> out;
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_), sql);
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  };
  const std::string vectors = "SELECT memory_pk || '|' || model || '|' || dim || '|' || hex(vector) FROM "
                              "memory_embeddings WHERE memory_pk <> " + gone + " ORDER BY 1";
  const std::string files = "SELECT memory_pk || '|' || path || '|' || COALESCE(blob_id, '') FROM memory_files "
                            "WHERE memory_pk <> " + gone + " ORDER BY 1";
  const std::string edges = "SELECT src_pk || '|' || dst_pk || '|' || kind || '|' || weight FROM memory_edges WHERE "
                            "src_pk <> " + gone + " AND dst_pk <> " + gone + " ORDER BY 1";
  const std::string memories = "SELECT id || '|' || summary FROM memories ORDER BY 1";
  const std::string eventsSql = "SELECT seq || '|' || memory_id || '|' || action FROM memory_events ORDER BY seq";
  // b has all three kinds of row to leave behind.
  ASSERT_EQ(count("SELECT COUNT(*) FROM memory_embeddings WHERE memory_pk = " + gone), 1);
  ASSERT_EQ(count("SELECT COUNT(*) FROM memory_files WHERE memory_pk = " + gone), 1);
  ASSERT_GE(count("SELECT COUNT(*) FROM memory_edges WHERE src_pk = " + gone + " OR dst_pk = " + gone), 1);
  const auto vectorsBefore = rows(vectors);
  const auto filesBefore = rows(files);
  const auto edgesBefore = rows(edges);
  const auto eventsBefore = rows(eventsSql);
  ASSERT_EQ(vectorsBefore.size(), 2u);
  ASSERT_EQ(filesBefore.size(), 2u);
  store_.reset();
  {
    SQLite::Database shell(path_, SQLite::OPEN_READWRITE);
    shell.exec("PRAGMA foreign_keys = OFF");  // the sqlite3 shell's default
    shell.exec("DELETE FROM memories WHERE pk = " + gone);
  }
  const auto memoriesLeft = [&] {
    SQLite::Database shell(path_, SQLite::OPEN_READONLY);
    std::vector<std::string> out;
    SQLite::Statement q(shell, memories);
    while (q.executeStep()) out.push_back(q.getColumn(0).getString());
    return out;
  }();
  ASSERT_EQ(memoriesLeft.size(), 2u);

  ASSERT_NO_FATAL_FAILURE(open());
  EXPECT_EQ(schemaVersion(MemoryStoreTestAccess::database(*store_)), latestSchemaVersion());
  EXPECT_EQ(count("SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_embeddings WHERE memory_pk = " + gone), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_files WHERE memory_pk = " + gone), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE src_pk = " + gone + " OR dst_pk = " + gone), 0);
  EXPECT_EQ(rows(vectors), vectorsBefore);
  EXPECT_EQ(rows(files), filesBefore);
  EXPECT_EQ(rows(edges), edgesBefore);
  EXPECT_EQ(rows(memories), memoriesLeft);
  EXPECT_EQ(rows(eventsSql), eventsBefore);
  EXPECT_TRUE(store_->get(a.id).isOk());
  EXPECT_TRUE(store_->get(c.id).isOk());
  EXPECT_EQ(store_->get(b.id).status().code(), ErrorCode::kNotFound);
  // Foreign keys are on again once migrated: a purge takes the memory's vector and file refs with it.
  EXPECT_EQ(count("PRAGMA foreign_keys"), 1);
  ASSERT_TRUE(store_->purge(c.id, true, user_).isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_embeddings"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_files"), 1);
}

TEST_F(StoreTest, AnUpgradeFindingAnOrphanInATableMemqCannotRebuildIsRefusedNamingIt) {
  // Only rows that are nothing without their memory are deleted; a row of any other table naming a missing row
  // stops the upgrade, which rolls back and leaves the file as it was.
  if (latestSchemaVersion() < 3) GTEST_SKIP() << "no migration 0003";
  startAtSchema(2);
  save("Written before a table of the user's own");
  store_.reset();
  {
    SQLite::Database shell(path_, SQLite::OPEN_READWRITE);
    shell.exec("CREATE TABLE my_notes (memory_pk INTEGER REFERENCES memories(pk), note TEXT NOT NULL)");
    shell.exec("INSERT INTO my_notes VALUES (99999, 'about a memory that is gone')");
  }
  auto s = MemoryStore::open(optionsAt(dir_ / "data"));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), ErrorCode::kStorageError);
  EXPECT_NE(s.status().message().find("table my_notes"), std::string::npos) << s.status().toString();
  EXPECT_NE(s.status().message().find(path_), std::string::npos) << s.status().toString();
  SQLite::Database after(path_, SQLite::OPEN_READONLY);
  EXPECT_EQ(after.execAndGet("SELECT MAX(version) FROM schema_version").getInt(), 2);
  EXPECT_EQ(after.execAndGet("SELECT COUNT(*) FROM my_notes").getInt(), 1);
  EXPECT_EQ(after.execAndGet("SELECT COUNT(*) FROM memories").getInt(), 1);
}

TEST_F(StoreTest, CreatedRecordIsWhatGetReadsBack) {
  // save() builds the returned record from what it wrote; it must match a fresh read field for field.
  SaveInput in;
  in.summary = "Record built from the write";
  in.details = "with details";
  in.category = "gotcha";
  in.topics = {"Zeta", "alpha"};
  in.files = {"src/b.c", "src/a.c", "include/x.h"};
  in.sessionId = "s-1";
  auto n = normalizeSave(in, root_);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  std::vector<FileRef> refs = {{"src/b.c", "1111"}, {"src/a.c", std::nullopt}, {"include/x.h", "2222"},
                               {"src/b.c", "3333"}};  // a repeated path keeps its first ref
  auto r = store_->save(*n, refs, actor_);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->status, "created");
  ASSERT_TRUE(r->memory.has_value());
  auto g = store_->get(r->id);
  ASSERT_TRUE(g.isOk());
  EXPECT_EQ(memoryToJson(*r->memory), memoryToJson(*g));
  EXPECT_EQ(r->memory->pk, g->pk);
  ASSERT_EQ(g->files.size(), 3u);
  EXPECT_EQ(g->files[1].path, "src/a.c");
  EXPECT_EQ(r->memory->files[2].blobId, std::optional<std::string>("1111"));
}

TEST_F(StoreTest, NewerSchemaIsAClearError) {
  MemoryStoreTestAccess::database(*store_).exec("INSERT INTO schema_version(version, applied_at) VALUES (999, 'future')");
  store_.reset();
  StoreOptions o;
  o.path = path_;
  o.embedder = &embedder_;
  auto s = MemoryStore::open(o);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), ErrorCode::kStorageError);
  EXPECT_NE(s.status().message().find("newer memq"), std::string::npos);
}

TEST_F(StoreTest, FilesAndDirectoriesArePrivate) {
  save("make the WAL exist");
  struct stat st{};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((path_ + "-wal").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_ / "data").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(StoreTest, SimilarEdgesAndHintsCoverActiveOnly) {
  auto a = save("Use bun for installing packages in this repo");
  auto b = save("Use bun for installing the packages in this repo");
  EXPECT_FALSE(b.similar.empty());
  EXPECT_EQ(b.similar[0].id, a.id);
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, user_).isOk());
  auto c = save("Use bun for installing all packages in this repo");
  for (const auto& h : c.similar) EXPECT_NE(h.id, a.id);
  EXPECT_TRUE(std::any_of(c.similar.begin(), c.similar.end(), [&](const auto& h) { return h.id == b.id; }))
      << "the active near-duplicate is still named";
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges e JOIN memories m ON m.pk IN (e.src_pk, e.dst_pk) "
                  "WHERE m.state != 'active'"), 0);
}

TEST_F(StoreTest, SimilarEdgesAreStoredOnceAndWeighedByCosine) {
  std::vector<std::string> ids;
  for (const char* s : {"Run the linter before every commit in this repo", "Run the linter before each commit here",
                        "Always run the linter before a commit in this repo", "Before every commit run the linter",
                        "Deploys go through the staging cluster first"}) {
    ids.push_back(save(s).id);
  }
  SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                      "SELECT src_pk, dst_pk, weight, created_at FROM memory_edges WHERE kind = 'similar'");
  int rows = 0;
  while (q.executeStep()) {
    ++rows;
    const int64_t src = q.getColumn(0).getInt64();
    const int64_t dst = q.getColumn(1).getInt64();
    EXPECT_GT(src, dst);  // one row per edge: (higher pk, lower pk)
    auto expected = store_->activeIndex().score(src, store_->activeIndex().vectorOf(dst));
    ASSERT_TRUE(expected.has_value());
    EXPECT_FLOAT_EQ(static_cast<float>(q.getColumn(2).getDouble()), *expected);
    EXPECT_GE(*expected, 0.4f);
    EXPECT_FALSE(q.getColumn(3).getString().empty());
  }
  EXPECT_GE(rows, 3);  // the four linter memories: at least three of their six pairs reach 0.4
  // similar_edges lists an edge from both ends: the first two memories' edge, both ways, with one weight.
  const std::string first = std::to_string(store_->get(ids[0])->pk);
  const std::string second = std::to_string(store_->get(ids[1])->pk);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE src_pk = " + second + " AND dst_pk = " + first), 1);
  EXPECT_EQ(count("SELECT COUNT(DISTINCT weight) FROM similar_edges WHERE (src_pk, dst_pk) IN ((" + first + ", " +
                  second + "), (" + second + ", " + first + "))"),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM similar_edges WHERE src_pk = " + first + " AND dst_pk = " + second), 1);
  // Re-linking after an update neither doubles an edge nor turns it around.
  ASSERT_TRUE(store_->update(ids[0], UpdateInput{.summary = "Run the linter before every single commit in this repo"},
                             user_)
                  .isOk());
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE kind = 'similar' AND src_pk < dst_pk"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM (SELECT MIN(src_pk, dst_pk), MAX(src_pk, dst_pk) FROM memory_edges "
                  "GROUP BY 1, 2 HAVING COUNT(*) > 1)"),
            0);
}

TEST_F(StoreTest, AnUpdateOrASupersedeLeavesNoSimilarEdgeOfTheOldText) {
  auto similarEdgesOf = [&](const std::string& id) {
    const std::string pk = std::to_string(store_->get(id)->pk);
    return count("SELECT COUNT(*) FROM memory_edges WHERE kind = 'similar' AND " + pk + " IN (src_pk, dst_pk)");
  };
  const auto a = save("Run the linter before every commit in this repo");
  const auto b = save("Run the linter before each commit here");
  const auto c = save("Always run the linter before a commit in this repo");
  ASSERT_GT(similarEdgesOf(a.id), 0);
  ASSERT_GT(similarEdgesOf(b.id), 0);
  // Rewritten to text like none of the others: the edges its old text had are gone, not kept beside no new ones.
  ASSERT_TRUE(store_->update(a.id, UpdateInput{.summary = "Deploys go through the staging cluster first"}, user_)
                  .isOk());
  EXPECT_EQ(similarEdgesOf(a.id), 0);
  // Superseded, a row is no one's neighbour; the supersedes edge is what links it to its replacement.
  ASSERT_TRUE(store_->supersede(b.id, c.id, user_).isOk());
  EXPECT_EQ(similarEdgesOf(b.id), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM memory_edges WHERE kind = 'supersedes' AND src_pk = " +
                  std::to_string(store_->get(c.id)->pk) + " AND dst_pk = " + std::to_string(store_->get(b.id)->pk)),
            1);
}

TEST_F(StoreTest, ParaphraseOfRejectedContentIsWrittenWithAWarning) {
  auto a = save("Use npm for installs in this repository always");
  ASSERT_TRUE(store_->reject(a.id, "we use pnpm", user_).isOk());
  auto b = save("Use npm for installs in this repository, always");
  EXPECT_EQ(b.status, "created");
  bool warned = false;
  for (const auto& w : b.warnings) warned |= w.rfind("similar_rejected", 0) == 0;
  EXPECT_TRUE(warned);
}

// The unicode lane answers from the in-memory text index; after every kind of write it must still give exactly
// what SQLite's FTS5 gives for the same expression (rows, order, bm25), and another connection's commit must be
// seen too.
class TextLaneTest : public StoreTest {
 protected:
  // rankedActive's SQL: the best `limit` + inactive rows by bm25, active ones kept.
  std::vector<FtsHit> sqlLane(const std::string& match, int limit) {
    int64_t inactive = count("SELECT COUNT(*) FROM memories WHERE state != 'active'");
    SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                        "SELECT f.rowid, bm25(memories_fts), m.state = 'active' FROM memories_fts f "
                        "CROSS JOIN memories m ON m.pk = f.rowid WHERE memories_fts MATCH ? "
                        "ORDER BY bm25(memories_fts) LIMIT ?");
    q.bind(1, match);
    q.bind(2, limit + inactive);
    std::vector<FtsHit> out;
    int rank = 0;
    while (static_cast<int>(out.size()) < limit && q.executeStep()) {
      if (q.getColumn(2).getInt() != 0) out.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getDouble(), ++rank});
    }
    return out;
  }
  void expectSameLane(const std::string& why) {
    SCOPED_TRACE(why);
    for (const std::string match : {"\"jwt\"*", "\"clock\"* OR \"cache\"*", "\"src/jwt.ts\"*", "\"arger\"* OR \"auth\"*",
                                    "\"the\"* OR \"container\"* OR \"expiry\"*", "\"tok\"*"}) {
      auto mine = store_->searchFts(FtsLane::kUnicode, match, 30);
      ASSERT_TRUE(mine.isOk());
      auto expected = sqlLane(match, 30);
      ASSERT_EQ(mine->size(), expected.size()) << match;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ((*mine)[i].pk, expected[i].pk) << match;
        EXPECT_NEAR((*mine)[i].bm25, expected[i].bm25, 1e-9 * std::abs(expected[i].bm25)) << match;
        EXPECT_EQ((*mine)[i].rank, expected[i].rank);
      }
      SQLite::Statement all(MemoryStoreTestAccess::database(*store_),
                            "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?");
      all.bind(1, match);
      auto matches = store_->matchText(match);
      ASSERT_TRUE(matches.isOk());
      size_t n = 0;
      while (all.executeStep()) {
        ++n;
        auto bm25 = matches->bm25Of(all.getColumn(0).getInt64());
        ASSERT_TRUE(bm25.has_value()) << match;
        EXPECT_NEAR(*bm25, all.getColumn(1).getDouble(), 1e-9 * std::abs(*bm25));
      }
      EXPECT_EQ(matches->size(), n) << match;
      // Recall's rescoring: every row's bm25 from its own tokens, the same doubles as the full evaluation.
      std::vector<int64_t> pks = {-1};
      SQLite::Statement rows(MemoryStoreTestAccess::database(*store_), "SELECT pk FROM memories");
      while (rows.executeStep()) pks.push_back(rows.getColumn(0).getInt64());
      auto points = store_->textBm25(match, pks);
      ASSERT_TRUE(points.isOk());
      ASSERT_EQ(points->size(), pks.size());
      for (size_t i = 0; i < pks.size(); ++i) EXPECT_EQ((*points)[i], matches->bm25Of(pks[i])) << match;
    }
    // The file lane, from the mirror, against findByPaths' SQL, which sees only the uses written.
    ASSERT_TRUE(store_->flushUsage().isOk());
    for (const std::vector<std::string>& paths : {std::vector<std::string>{"src/jwt.ts"},
                                                 std::vector<std::string>{"src/jwt.ts", "src/jwks.ts", "src/jwt.ts"},
                                                 std::vector<std::string>{"lib/clock.c", "src/jwks.ts", "none.c"}}) {
      std::string in;
      for (size_t i = 0; i < paths.size(); ++i) in += i ? ",?" : "?";
      SQLite::Statement q(MemoryStoreTestAccess::database(*store_),
                          "SELECT m.pk, COUNT(*) FROM memory_files mf CROSS JOIN memories m ON m.pk = mf.memory_pk "
                          "WHERE mf.path IN (" + in + ") AND m.state = 'active' "
                          "GROUP BY m.pk ORDER BY m.last_used_at DESC, m.pk DESC LIMIT 200");
      for (size_t i = 0; i < paths.size(); ++i) q.bind(static_cast<int>(i + 1), paths[i]);
      std::vector<std::pair<int64_t, int>> expected;
      while (q.executeStep()) expected.emplace_back(q.getColumn(0).getInt64(), q.getColumn(1).getInt());
      auto hits = store_->findByPaths(paths, 200);
      ASSERT_TRUE(hits.isOk());
      std::vector<std::pair<int64_t, int>> actual;
      for (const auto& h : *hits) actual.emplace_back(h.pk, h.matchedFiles);
      EXPECT_EQ(actual, expected) << paths.size() << " paths";
      auto each = store_->findByEachPath(paths, 2);
      ASSERT_TRUE(each.isOk());
      ASSERT_EQ(each->size(), paths.size());
      for (size_t i = 0; i < paths.size(); ++i) {
        auto one = store_->findByPaths({paths[i]}, 2);
        ASSERT_TRUE(one.isOk());
        ASSERT_EQ((*each)[i].size(), one->size());
        for (size_t k = 0; k < one->size(); ++k) EXPECT_EQ((*each)[i][k].pk, (*one)[k].pk);
      }
    }
  }
};

TEST_F(TextLaneTest, EveryWriteKeepsTheLaneIdenticalToFts5) {
  auto a = save("JWT expiry uses the container clock", "tokens in src/jwt.ts", {"src/jwt.ts"}, {"auth"});
  auto b = save("Cache the JWKS keys", "the cache lives in src/jwks.ts; tokenizer note", {"src/jwks.ts"}, {"cache"});
  auto c = save("Ärger with the clock", "container clock skew", {"lib/clock.c", "src/jwt.ts"}, {"time"});
  auto d = save("Tokens expire", "expiry is 15 minutes", {"src/jwks.ts", "src/jwt.ts"}, {"auth"});
  expectSameLane("saved");
  ASSERT_TRUE(store_->markUsed({*store_->pkOf(b.id)}).isOk());
  expectSameLane("used");
  ASSERT_TRUE(store_->attach(b.id, {{"lib/clock.c", std::nullopt}}, actor_).isOk());
  ASSERT_TRUE(store_->detach(d.id, {"src/jwt.ts"}, actor_).isOk());
  expectSameLane("attached and detached");
  ASSERT_TRUE(store_->hide(a.id, std::nullopt, actor_).isOk());
  expectSameLane("hidden");
  EXPECT_TRUE(store_->searchFts(FtsLane::kUnicode, "\"src/jwt.ts\"*", 30)->empty());
  ASSERT_TRUE(store_->restore(a.id, actor_).isOk());
  expectSameLane("restored");
  UpdateInput u;
  u.details = "now the expiry lives in src/auth/jwt.ts";
  u.topics = std::vector<std::string>{"auth", "jwt"};
  ASSERT_TRUE(store_->update(a.id, u, actor_).isOk());
  expectSameLane("updated");
  ASSERT_TRUE(store_->supersede(d.id, a.id, actor_).isOk());
  expectSameLane("superseded");
  ASSERT_TRUE(store_->reject(b.id, "wrong", actor_).isOk());
  expectSameLane("rejected");
  ASSERT_TRUE(store_->unreject(b.id, user_).isOk());
  expectSameLane("unrejected");
  SaveInput in;
  in.summary = "Ärger with the clock";
  in.details = "container clock skew";
  in.topics = {"tokenizer", "arger"};
  in.mergeTopics = true;
  auto merged = store_->save(*normalizeSave(in, root_), {}, actor_);
  ASSERT_TRUE(merged.isOk());
  EXPECT_TRUE(merged->topicsMerged);
  expectSameLane("dedup merged topics");
  ASSERT_TRUE(store_->purge(c.id, true, user_).isOk());
  expectSameLane("purged");
  Memory imported = *store_->get(b.id);
  imported.id = "00000000-0000-4000-8000-000000000001";
  imported.summary = "Imported clock note";
  imported.contentHash = contentHash(imported.summary, imported.details);
  ASSERT_EQ(*store_->importRecord(imported, user_), "created");
  expectSameLane("imported");

  // A commit by another connection (a second process on the same file) is picked up before the next search.
  {
    SQLite::Database other(path_, SQLite::OPEN_READWRITE);
    other.exec("UPDATE memories SET summary = 'clock clock clock' WHERE id = '" + b.id + "'");
  }
  expectSameLane("written by another connection");
  // Last use stored in other shapes (hand edits, older writers): the file lane still orders as SQLite orders TEXT.
  {
    SQLite::Database other(path_, SQLite::OPEN_READWRITE);
    // Each with a change a mirror holds (updated_at named in the SET), or the uses alone would not be read again.
    other.exec("UPDATE memories SET last_used_at = '2026-01-01T00:00:00Z', updated_at = updated_at WHERE id = '" + a.id + "'");
    other.exec("UPDATE memories SET last_used_at = '2026-01-01T00:00:00.000Z', updated_at = updated_at WHERE id = '" + b.id + "'");
    other.exec("UPDATE memories SET last_used_at = '2026-01-01 23:00:00', updated_at = updated_at WHERE id = '" + imported.id + "'");
  }
  expectSameLane("last use in other shapes");
  open();
  expectSameLane("reopened");
}

TEST_F(StoreTest, TheSemanticLaneBegunAheadAnswersAsTheIndexDoesAndNeverWithAHiddenRow) {
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back(save("deploy step " + std::to_string(i) + " needs the staging cache cleared",
                       "topic " + std::to_string(i % 7) + " of the release checklist").id);
  }
  ASSERT_TRUE(store_->hide(ids[3], std::string("not now"), user_).isOk());
  const std::vector<std::string> queries = {"staging cache", "release checklist topic 3", "deploy step 3",
                                            "nothing like any of them"};
  // Every scan begun before any is asked for: they run at once, beside this thread.
  std::vector<std::future<std::vector<VectorIndex::Hit>>> begun;
  for (const auto& q : queries) begun.push_back(store_->beginNearestActive(embedder_.embed(q), 20, 0.18f));
  const int64_t hiddenPk = *store_->pkOf(ids[3]);
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto hits = begun[i].get();
    const auto expected = store_->activeIndex().topK(embedder_.embed(queries[i]), 20, 0.18f);
    ASSERT_EQ(hits.size(), expected.size()) << queries[i];
    for (size_t h = 0; h < hits.size(); ++h) {
      EXPECT_EQ(hits[h].key, expected[h].key) << queries[i];
      EXPECT_EQ(hits[h].score, expected[h].score) << queries[i];
      EXPECT_NE(hits[h].key, hiddenPk) << queries[i];
    }
  }
  EXPECT_FALSE(store_->beginNearestActive(embedder_.embed("staging cache"), 20, 0.18f).get().empty());
}

}  // namespace
}  // namespace memq
