// The working set of a tab (daemon/service/working_set.h): its bookkeeping on its own (read and edited kept apart,
// newest first, bounded in files, events and ranges), and through the Service with a real git repository and real
// SQLite: hints/for_tool feeding it, a save anchored to the lines the tab edited (a named file, no files, opted out,
// lines that no longer fit), and a recall that names a file without lines ranked by the tab's lines.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../unit/git/git_fixture.h"
#include "daemon/embed/hashbag.h"
#include "tests/service/git_service.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/file_anchors.h"
#include "daemon/service/service.h"
#include "daemon/service/working_set.h"

namespace memq {
namespace {

using memq::testing::GitServiceTest;
using memq::testing::numberedLines;
using Kind = WorkingSet::Kind;

// --- the bookkeeping ---------------------------------------------------------------------------------------------

TEST(WorkingSetTest, ReadAndEditedLinesAreKeptApartAndEditedOnesComeFirst) {
  WorkingSet ws;
  ws.note("/p", "a.c", Kind::kRead, {{1, 5}});
  ws.note("/p", "a.c", Kind::kRead, {{4, 8}, {20, 20}});
  EXPECT_EQ(ws.linesFor("/p", "a.c"), (LineRanges{{1, 8}, {20, 20}}));  // merged
  EXPECT_TRUE(ws.editedLines("/p", "a.c").empty());
  ws.note("/p", "a.c", Kind::kEdited, {{30, 31}});
  EXPECT_EQ(ws.linesFor("/p", "a.c"), (LineRanges{{30, 31}}));  // edited first, the reads left aside
  EXPECT_EQ(ws.editedLines("/p", "a.c"), (LineRanges{{30, 31}}));
  ws.note("/p", "a.c", Kind::kEdited, {});  // no lines: nothing recorded
  EXPECT_EQ(ws.editedLines("/p", "a.c"), (LineRanges{{30, 31}}));
  EXPECT_TRUE(ws.linesFor("/p", "b.c").empty());
  EXPECT_TRUE(ws.linesFor("/q", "a.c").empty());  // another project's a.c
}

TEST(WorkingSetTest, TheFileEditedLastIsTheNewestEditNotTheNewestRead) {
  WorkingSet ws;
  EXPECT_FALSE(ws.lastEdited("/p").has_value());
  ws.note("/p", "a.c", Kind::kEdited, {{1, 2}});
  ws.note("/p", "b.c", Kind::kEdited, {{7, 9}});
  ws.note("/p", "a.c", Kind::kRead, {{40, 50}});
  ws.note("/q", "c.c", Kind::kEdited, {{3, 3}});
  auto last = ws.lastEdited("/p");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->path, "b.c");
  EXPECT_EQ(last->lines, (LineRanges{{7, 9}}));
  EXPECT_EQ(ws.paths("/p"), (std::vector<std::string>{"a.c", "b.c"}));  // most recently touched first
}

TEST(WorkingSetTest, OnlyTheLastThirtyTwoFilesAreKept) {
  WorkingSet ws;
  for (size_t i = 0; i <= WorkingSet::kMaxFiles; ++i) {
    ws.note("/p", "f" + std::to_string(i) + ".c", Kind::kRead, {{1, 1}});
  }
  const auto paths = ws.paths("/p");
  ASSERT_EQ(paths.size(), WorkingSet::kMaxFiles);
  EXPECT_EQ(paths.front(), "f" + std::to_string(WorkingSet::kMaxFiles) + ".c");
  EXPECT_TRUE(ws.linesFor("/p", "f0.c").empty());  // the least recently touched went
  // Touching a file again makes it the newest: f1.c survives the next new file, f2.c does not.
  ws.note("/p", "f1.c", Kind::kRead, {{2, 2}});
  ws.note("/p", "new.c", Kind::kRead, {{1, 1}});
  EXPECT_FALSE(ws.linesFor("/p", "f1.c").empty());
  EXPECT_TRUE(ws.linesFor("/p", "f2.c").empty());
}

TEST(WorkingSetTest, OlderEventsGoFirstPastSixteenEventsOrSixtyFourRanges) {
  WorkingSet ws;
  // Seventeen edits of single lines far apart: the oldest (line 10) is dropped.
  for (uint32_t i = 1; i <= WorkingSet::kMaxEvents + 1; ++i) ws.note("/p", "a.c", Kind::kEdited, {{10 * i, 10 * i}});
  LineRanges edited = ws.editedLines("/p", "a.c");
  ASSERT_EQ(edited.size(), WorkingSet::kMaxEvents);
  EXPECT_EQ(edited.front(), (LineRange{20, 20}));
  EXPECT_EQ(edited.back(), (LineRange{170, 170}));
  // One event of 60 ranges, then one of 10 more: together they would be 70, so the older one goes.
  LineRanges sixty, ten;
  for (uint32_t i = 1; i <= 60; ++i) sixty.push_back({1000 + 3 * i, 1000 + 3 * i});
  for (uint32_t i = 1; i <= 10; ++i) ten.push_back({5000 + 3 * i, 5000 + 3 * i});
  ws.note("/p", "b.c", Kind::kRead, sixty);
  EXPECT_EQ(ws.linesFor("/p", "b.c").size(), 60u);
  ws.note("/p", "b.c", Kind::kRead, ten);
  EXPECT_EQ(ws.linesFor("/p", "b.c"), ten);
}

// --- through the Service -----------------------------------------------------------------------------------------

// connect(client, tab): a connection of tab `tab` (a new hook run of that agent session), or of no tab ("").
class WorkingSetServiceTest : public GitServiceTest {
 protected:
  WorkingSetServiceTest() : GitServiceTest("working-set-test") {}

  void SetUp() override {
    GitServiceTest::SetUp();
    repo_->commit({{"src/a.c", numberedLines(10)}, {"src/b.c", numberedLines(200, "b")}}, "start");
    startService();
    connect(agent_, "session-1");
  }

  // What the Claude Code hook sends after a tool call: hints/for_tool with the lines the tool touched.
  void toolUsed(ClientState& client, const std::string& tool, const std::string& path, const LineRanges& lines) {
    HintsRequest request;
    request.tool = tool;
    request.files = {path};
    request.lines = {{path, lines}};
    auto r = service_->hintsForTool(ctx(client), request);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
  }

  Result<SaveResult> save(ClientState& client, const std::string& summary, std::vector<FileEntry> files,
                          bool anchor = true) {
    SaveInput in;
    in.summary = summary;
    in.files = std::move(files);
    in.anchorToWorkingSet = anchor;
    return service_->save(ctx(client), in);
  }

  // The stored memory `id`'s ref of `path`, re-read with memory/get.
  std::optional<FileRef> storedRef(const std::string& id, const std::string& path) {
    auto got = service_->get(ctx(agent_), {id});
    EXPECT_TRUE(got.isOk()) << got.status().toString();
    if (!got.isOk()) return std::nullopt;
    for (const auto& f : got->memory.files) {
      if (f.path == path) return f;
    }
    return std::nullopt;
  }

  size_t storedFiles(const std::string& id) {
    auto got = service_->get(ctx(agent_), {id});
    return got.isOk() ? got->memory.files.size() : 99;
  }

  ClientState agent_;
};

// The reply's `anchored` says what was written: a save of text that exists hidden, or was rejected, writes nothing.
TEST_F(WorkingSetServiceTest, ASaveThatWroteNothingReportsNothingAnchored) {
  auto first = save(agent_, "the cache warms at midnight", {"src/b.c"});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_TRUE(service_->hide(ctx(agent_), StateChangeRequest{first->id, std::string("old")}).isOk());
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  auto again = save(agent_, "the cache warms at midnight", {"src/b.c"});
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, SaveStatus::kExistsHidden);
  EXPECT_TRUE(again->anchored.empty());
}

// A dedup adds the refs the memory lacked and leaves the ones it had as they were: only the added are anchored.
TEST_F(WorkingSetServiceTest, ADedupReportsAnchoredOnlyTheRefsItAdded) {
  auto first = save(agent_, "the parser retries twice", {"src/b.c"});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  toolUsed(agent_, "edit", "src/a.c", {{3, 4}});
  auto again = save(agent_, "the parser retries twice", {"src/b.c", "src/a.c"});
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(again->status, SaveStatus::kDeduped);
  ASSERT_EQ(again->anchored.size(), 1u);
  EXPECT_EQ(again->anchored[0].path, "src/a.c");
  auto b = storedRef(again->id, "src/b.c");
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->anchor.has_value()) << "the ref the memory had was re-anchored";
}

TEST_F(WorkingSetServiceTest, ASaveNamingAFileIsAnchoredToTheLinesTheTabEditedThere) {
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  toolUsed(agent_, "read", "src/b.c", {{1, 100}});  // read lines never anchor a save
  // The save comes over another connection of the same tab (each hook run and CLI call is one).
  ClientState later;
  connect(later, "session-1");
  auto r = save(later, "the retry loop gives up after three tries", {"src/b.c", "src/a.c"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->anchored.size(), 1u);  // what the reply shows the user
  EXPECT_EQ(r->anchored[0].path, "src/b.c");
  EXPECT_EQ(r->anchored[0].lines, (LineRanges{{150, 152}}));
  auto b = storedRef(r->id, "src/b.c");
  ASSERT_TRUE(b && b->anchor) << "src/b.c was stored without an anchor";
  EXPECT_EQ(b->anchor->lines, (LineRanges{{150, 152}}));
  EXPECT_EQ(b->anchor->blob, testing::trimmed(repo_->git("rev-parse HEAD:src/b.c")));
  auto a = storedRef(r->id, "src/a.c");
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->anchor.has_value());  // the tab did not edit src/a.c
}

// Lines the tab edited in a file git does not track that holds a credential are anchored, but memq keeps no copy of
// that version, and the save's warnings say so as they do for lines the save names itself.
TEST_F(WorkingSetServiceTest, LinesEditedInAFileHoldingACredentialAreAnchoredWithAWarningAndNoCopyKept) {
  // Assembled at run time so that this source file is not itself a credential a scanner would flag.
  repo_->write(".env", "APP_ENV=production\nDB_PASSWORD=" + std::string("Wq7#vL2!") + "mZ9pK4xR\n");
  toolUsed(agent_, "edit", ".env", {{2, 2}});
  auto r = save(agent_, "production settings are in .env", {".env"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->anchored.size(), 1u);
  const std::string warnings = ::testing::PrintToString(r->warnings);
  EXPECT_NE(warnings.find(".env is not in the repository and holds a credential (password)"), std::string::npos)
      << warnings;
  auto env = storedRef(r->id, ".env");
  ASSERT_TRUE(env && env->anchor) << ".env was stored without an anchor";
  EXPECT_EQ(env->anchor->lines, (LineRanges{{2, 2}}));
  EXPECT_EQ(env->blobId, std::optional<std::string>(env->anchor->blob)) << "the ref names the version its lines are in";
}

TEST_F(WorkingSetServiceTest, LinesTheSaveNamesAreKeptAndOtherTabsAreNotAnchored) {
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  auto own = save(agent_, "the header is parsed twice", {FileEntry("src/b.c", LineRanges{{5, 6}})});
  ASSERT_TRUE(own.isOk()) << own.status().toString();
  EXPECT_TRUE(own->anchored.empty());
  EXPECT_EQ(storedRef(own->id, "src/b.c")->anchor->lines, (LineRanges{{5, 6}}));

  ClientState other, plain;
  connect(other, "session-2");
  connect(plain, "");
  for (ClientState* c : {&other, &plain}) {
    auto r = save(*c, std::string("another session's note ") + (c == &other ? "one" : "two"), {"src/b.c"});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_TRUE(r->anchored.empty());
    EXPECT_FALSE(storedRef(r->id, "src/b.c")->anchor.has_value());
  }
}

TEST_F(WorkingSetServiceTest, ASaveNamingNoFilesGetsTheFileEditedLastWithItsLines) {
  toolUsed(agent_, "edit", "src/a.c", {{2, 3}});
  toolUsed(agent_, "write", "src/b.c", {{40, 41}});
  toolUsed(agent_, "read", "src/a.c", {{1, 10}});
  toolUsed(agent_, "diff", "src/a.c", {{9, 9}});  // not a read or an edit: recorded as neither
  auto r = save(agent_, "the pool is sized from the config", {});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->anchored.size(), 1u);
  EXPECT_EQ(r->anchored[0].path, "src/b.c");
  ASSERT_TRUE(r->memory.has_value());
  ASSERT_EQ(r->memory->files.size(), 1u);
  EXPECT_EQ(r->memory->files[0].path, "src/b.c");
  auto b = storedRef(r->id, "src/b.c");
  ASSERT_TRUE(b && b->anchor);
  EXPECT_EQ(b->anchor->lines, (LineRanges{{40, 41}}));
}

TEST_F(WorkingSetServiceTest, AToolCallWhoseHintsFailLeavesTheWorkingSetAsItWas) {
  ASSERT_TRUE(save(agent_, "the b parser keeps a cursor", {"src/b.c"}, /*anchor=*/false).isOk());
  // Another connection renames a column a hint's memory is read with, and the in-memory indexes are not: the
  // hints find the memory of src/b.c, then fail reading it.
  {
    SQLite::Database other(repo_->dir() + "/.git/memq/memory.db", SQLite::OPEN_READWRITE);
    other.exec("ALTER TABLE memories RENAME COLUMN category TO category_gone");
  }
  HintsRequest request;
  request.tool = "edit";
  request.files = {"src/b.c"};
  request.lines = {{"src/b.c", {{150, 152}}}};
  auto failed = service_->hintsForTool(ctx(agent_), request);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().code(), ErrorCode::kStorageError) << failed.status().toString();
  {
    SQLite::Database other(repo_->dir() + "/.git/memq/memory.db", SQLite::OPEN_READWRITE);
    other.exec("ALTER TABLE memories RENAME COLUMN category_gone TO category");
  }
  // The edit the failed request reported is not the tab's: a save naming src/b.c is not anchored to its lines.
  auto r = save(agent_, "the b parser resets its cursor", {"src/b.c"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(r->anchored.empty());
  // Once a request answers, its lines are the tab's (the control: the same edit, reported again).
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  auto anchored = save(agent_, "the b parser rewinds its cursor", {"src/b.c"});
  ASSERT_TRUE(anchored.isOk()) << anchored.status().toString();
  ASSERT_EQ(anchored->anchored.size(), 1u);
  EXPECT_EQ(anchored->anchored[0].lines, (LineRanges{{150, 152}}));
}

TEST_F(WorkingSetServiceTest, AnchorFalseSavesTheFilesAsNamed) {
  toolUsed(agent_, "edit", "src/b.c", {{150, 152}});
  auto named = save(agent_, "named without anchor", {"src/b.c"}, /*anchor=*/false);
  ASSERT_TRUE(named.isOk()) << named.status().toString();
  EXPECT_TRUE(named->anchored.empty());
  EXPECT_FALSE(storedRef(named->id, "src/b.c")->anchor.has_value());
  auto none = save(agent_, "no files and no anchor", {}, /*anchor=*/false);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_EQ(storedFiles(none->id), 0u);
}

TEST_F(WorkingSetServiceTest, EditedLinesThatNoLongerFitTheFileLeaveTheSavePlainWithAWarning) {
  toolUsed(agent_, "edit", "src/a.c", {{8, 10}});
  repo_->write("src/a.c", numberedLines(3));  // the file shrank since: line 8 is gone
  auto named = save(agent_, "about a file that shrank", {"src/a.c"});
  ASSERT_TRUE(named.isOk()) << named.status().toString();
  EXPECT_TRUE(named->anchored.empty());
  EXPECT_FALSE(storedRef(named->id, "src/a.c")->anchor.has_value());
  ASSERT_FALSE(named->warnings.empty());
  EXPECT_NE(named->warnings.back().find("src/a.c was not anchored"), std::string::npos) << named->warnings.back();
  EXPECT_NE(named->warnings.back().find("past the end"), std::string::npos) << named->warnings.back();
  // Naming no files, the save gets none rather than a file whose lines it cannot name.
  auto none = save(agent_, "no files named after the shrink", {});
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_EQ(storedFiles(none->id), 0u);
  EXPECT_FALSE(none->warnings.empty());
}

TEST_F(WorkingSetServiceTest, AnUncommittedEditIsAnchoredInAVersionMemqKeeps) {
  repo_->write("src/a.c", numberedLines(4, "new") + numberedLines(10));
  toolUsed(agent_, "edit", "src/a.c", {{1, 4}});
  auto r = save(agent_, "four lines added on top", {});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto a = storedRef(r->id, "src/a.c");
  ASSERT_TRUE(a && a->anchor);
  EXPECT_EQ(a->anchor->lines, (LineRanges{{1, 4}}));
  EXPECT_EQ(a->anchor->blob, gitBlobId(numberedLines(4, "new") + numberedLines(10)));  // the work tree's version
  // Not in the object database: memq keeps that version's content with the save.
  auto stats = service_->stats(ctx(agent_), {});
  ASSERT_TRUE(stats.isOk());
  int64_t kept = -1;
  for (const auto& scope : stats->scopes) {
    if (scope.scope == ScopeKind::kProject) kept = scope.counters.value("kept_versions", int64_t{-1});
  }
  EXPECT_EQ(kept, 1);
}

// Two memories of src/b.c anchored far apart; the early one is the better text match for the query.
class WorkingSetRecallTest : public WorkingSetServiceTest {
 protected:
  void SetUp() override {
    WorkingSetServiceTest::SetUp();
    ClientState writer;
    connect(writer, "");
    auto early = save(writer, "parser state machine resets", {FileEntry("src/b.c", LineRanges{{20, 30}})});
    ASSERT_TRUE(early.isOk()) << early.status().toString();
    early_ = early->id;
    auto late = save(writer, "parser state machine resets on a timeout there",
                     {FileEntry("src/b.c", LineRanges{{150, 160}})});
    ASSERT_TRUE(late.isOk()) << late.status().toString();
    late_ = late->id;
  }

  std::vector<std::string> recallOn(ClientState& client, std::vector<std::string> files, RecallHits* out = nullptr) {
    RecallRequest request;
    request.query = "parser state machine resets";
    request.files = std::move(files);
    request.limit = 5;
    request.threshold = 0;
    request.explain = true;
    auto hits = service_->recall(ctx(client), RecallParams{request, /*markUsed=*/false});
    EXPECT_TRUE(hits.isOk()) << hits.status().toString();
    std::vector<std::string> ids;
    if (!hits.isOk()) return ids;
    for (const auto& h : hits->hits) ids.push_back(h.memory.id);
    if (out != nullptr) *out = *hits;
    return ids;
  }

  std::string early_, late_;
};

TEST_F(WorkingSetRecallTest, AFileNamedWithoutLinesIsRankedByTheLinesTheTabEdited) {
  ClientState fresh;
  connect(fresh, "session-9");
  ASSERT_EQ(recallOn(fresh, {"src/b.c"}).front(), early_);  // by text alone
  toolUsed(agent_, "read", "src/b.c", {{20, 30}});
  toolUsed(agent_, "edit", "src/b.c", {{152, 155}});
  RecallHits hits;
  auto ids = recallOn(agent_, {"src/b.c"}, &hits);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], late_);  // the edited lines, not the read ones
  EXPECT_EQ(hits.hits[0].signals.lineOverlap, 4u);
}

TEST_F(WorkingSetRecallTest, ReadLinesRankWhenTheTabEditedNothingThere) {
  toolUsed(agent_, "read", "src/b.c", {{155, 158}});
  EXPECT_EQ(recallOn(agent_, {"src/b.c"}).front(), late_);
}

TEST_F(WorkingSetRecallTest, ARecallNamingNoFilesTakesNoLinesFromTheTab) {
  toolUsed(agent_, "edit", "src/b.c", {{152, 155}});
  RecallHits hits;
  auto ids = recallOn(agent_, {}, &hits);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], early_);
  for (const auto& h : hits.hits) EXPECT_EQ(h.signals.lineOverlap, 0u) << h.memory.id;
}

}  // namespace
}  // namespace memq
