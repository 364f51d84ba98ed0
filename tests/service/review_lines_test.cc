// Line anchors in review/stale and hints/for_tool through the Service, with a real git repository and real SQLite:
// review says whether the anchored lines themselves were moved, rewritten or deleted (and a memory whose anchored
// lines only moved is not stale by that file), with the lines then and now and the text a change touched; hints with
// lines put the memory anchored on them first, and never surface a hidden, superseded or rejected one.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../unit/git/git_fixture.h"
#include "daemon/embed/hashbag.h"
#include "tests/service/git_service.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/service/review_lines.h"
#include "daemon/service/service.h"

namespace memq {
namespace {

using memq::testing::GitServiceTest;
using memq::testing::numberedLines;

// src/b.c with lines `from`..`to` removed (0, 0: none) and those in `rewrittenFrom`..`rewrittenTo` replaced.
std::string editedB(int from, int to, int rewrittenFrom, int rewrittenTo) {
  std::string out;
  for (int i = 1; i <= 200; ++i) {
    if (i >= from && i <= to) continue;
    out += (i >= rewrittenFrom && i <= rewrittenTo ? "rewritten " : "b ") + std::to_string(i) + "\n";
  }
  return out;
}

class ReviewLinesTest : public GitServiceTest {
 protected:
  ReviewLinesTest() : GitServiceTest("review-lines-test") {}

  void SetUp() override {
    GitServiceTest::SetUp();
    repo_->commit({{"src/a.c", numberedLines(10, "a")}, {"src/b.c", numberedLines(200, "b")}}, "start");
    startService();
    connect(client_);
  }

  using GitServiceTest::ctx;
  CallContext ctx() { return ctx(client_); }

  std::string save(const std::string& summary, std::vector<FileEntry> files, const char* category = nullptr) {
    SaveInput in;
    in.summary = summary;
    in.files = std::move(files);
    if (category != nullptr) in.category = std::string(category);
    auto r = service_->save(ctx(), in);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r->id : "";
  }

  StaleReport stale() {
    auto r = service_->reviewStale(ctx(), ReviewRequest{});
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : StaleReport{};
  }

  static const StaleMemory* find(const StaleReport& report, const std::string& id) {
    for (const auto& m : report.memories) {
      if (m.memory.id == id) return &m;
    }
    return nullptr;
  }

  static const StaleAnchoredLines* linesOn(const StaleMemory& m, const std::string& path) {
    for (const auto& a : m.anchoredLines) {
      if (a.now.path == path) return &a;
    }
    return nullptr;
  }

  ClientState client_;
};

TEST_F(ReviewLinesTest, LinesInsertedAboveOnlyMoveAnAnchorAndAMemoryWithMovedLinesIsNotStale) {
  const std::string moved = save("the parser resets here", {FileEntry("src/b.c", LineRanges{{150, 160}})});
  const std::string plain = save("the whole parser file", {"src/b.c"});
  EXPECT_TRUE(stale().memories.empty());
  repo_->write("src/b.c", numberedLines(10, "new") + numberedLines(200, "b"));
  StaleReport report = stale();
  EXPECT_EQ(find(report, moved), nullptr) << "its anchored lines only moved";
  const StaleMemory* p = find(report, plain);
  ASSERT_NE(p, nullptr) << "a plain ref is stale by its blob id, as before";
  EXPECT_EQ(p->files, std::vector<std::string>{"src/b.c"});
  EXPECT_TRUE(p->anchoredLines.empty());
}

TEST_F(ReviewLinesTest, AStaleMemoryShowsEveryAnchoredFileThenAndNow) {
  const std::string id = save("the parser resets and a.c reads it",
                              {FileEntry("src/a.c", LineRanges{{4, 5}}), FileEntry("src/b.c", LineRanges{{20, 30}})});
  const std::string blobA = memq::testing::trimmed(repo_->git("rev-parse HEAD:src/a.c"));
  repo_->write("src/b.c", numberedLines(10, "new") + numberedLines(200, "b"));  // moved
  repo_->write("src/a.c", "a 1\na 2\na 3\nchanged 4\na 5\na 6\na 7\na 8\na 9\na 10\n");  // line 4 rewritten
  StaleReport report = stale();
  const StaleMemory* m = find(report, id);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->files, std::vector<std::string>{"src/a.c"}) << "src/b.c's lines only moved";
  const StaleAnchoredLines* b = linesOn(*m, "src/b.c");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->now.state, AnchoredLinesState::kMoved);
  EXPECT_EQ(b->linesThen, (LineRanges{{20, 30}}));
  EXPECT_EQ(b->now.lines, (LineRanges{{30, 40}}));
  EXPECT_TRUE(b->textThen.text.empty() && b->textNow.text.empty()) << "moved lines have no text to show";
  const StaleAnchoredLines* a = linesOn(*m, "src/a.c");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->now.state, AnchoredLinesState::kRewritten);
  EXPECT_EQ(a->blobThen, blobA);
  EXPECT_EQ(a->linesThen, (LineRanges{{4, 5}}));
  EXPECT_EQ(a->now.lines, (LineRanges{{4, 5}}));
  // Only the line the edit touched, then and now.
  EXPECT_EQ(a->textThen.text, std::vector<std::string>{"a 4"});
  EXPECT_EQ(a->textNow.text, std::vector<std::string>{"changed 4"});
}

TEST_F(ReviewLinesTest, RewrittenAndDeletedLinesAreStaleWithTheTextThenAndNow) {
  const std::string early = save("the parser resets here", {FileEntry("src/b.c", LineRanges{{20, 30}})});
  const std::string late = save("the parser resets there", {FileEntry("src/b.c", LineRanges{{150, 160}})});
  const std::string between = save("the parser reads here", {FileEntry("src/b.c", LineRanges{{80, 85}})});
  repo_->write("src/b.c", editedB(20, 30, 150, 160));  // early's lines deleted, late's rewritten, between's moved
  StaleReport report = stale();
  EXPECT_EQ(find(report, between), nullptr);
  const StaleMemory* e = find(report, early);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->anchoredLines.size(), 1u);
  const StaleAnchoredLines& deleted = e->anchoredLines[0];
  EXPECT_EQ(deleted.now.state, AnchoredLinesState::kDeleted);
  EXPECT_EQ(deleted.linesThen, (LineRanges{{20, 30}}));
  EXPECT_TRUE(deleted.now.lines.empty());
  EXPECT_EQ(deleted.textThen.text, (std::vector<std::string>{"b 20", "b 21", "b 22"}));
  EXPECT_EQ(deleted.textThen.more, 8u);  // bounded: three lines and a count of the rest
  EXPECT_TRUE(deleted.textNow.text.empty());
  const StaleMemory* l = find(report, late);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->files, std::vector<std::string>{"src/b.c"});
  ASSERT_EQ(l->anchoredLines.size(), 1u);
  const StaleAnchoredLines& rewritten = l->anchoredLines[0];
  EXPECT_EQ(rewritten.now.state, AnchoredLinesState::kRewritten);
  EXPECT_EQ(rewritten.now.lines, (LineRanges{{139, 149}}));  // eleven lines higher, after the deletion
  EXPECT_EQ(rewritten.textThen.text, (std::vector<std::string>{"b 150", "b 151", "b 152"}));
  EXPECT_EQ(rewritten.textNow.text, (std::vector<std::string>{"rewritten 150", "rewritten 151", "rewritten 152"}));
  EXPECT_EQ(rewritten.textNow.more, 8u);
}

TEST_F(ReviewLinesTest, TheTextThenOfAnUncommittedVersionComesFromTheContentMemqKeeps) {
  repo_->write("src/a.c", "dirty 1\ndirty 2\ndirty 3\n");
  const std::string id = save("about the dirty copy", {FileEntry("src/a.c", LineRanges{{2, 2}})});
  repo_->write("src/a.c", "dirty 1\nclean 2\ndirty 3\n");
  StaleReport report = stale();
  const StaleMemory* m = find(report, id);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->anchoredLines.size(), 1u);
  EXPECT_EQ(m->anchoredLines[0].now.state, AnchoredLinesState::kRewritten);
  EXPECT_EQ(m->anchoredLines[0].textThen.text, std::vector<std::string>{"dirty 2"});
  EXPECT_EQ(m->anchoredLines[0].textNow.text, std::vector<std::string>{"clean 2"});
}

TEST(LinesExcerptTest, CutsLongLinesAtACodePointAndReplacesIllFormedBytes) {
  const std::string longLine = std::string(130, 'x');
  const std::string content = "one\r\n" + longLine + "\n\xff\xfe ok\nlast";
  LinesExcerpt e = linesExcerpt(content, {{1, 4}});
  ASSERT_EQ(e.text.size(), 3u);
  EXPECT_EQ(e.text[0], "one");
  EXPECT_EQ(e.text[1], std::string(120, 'x') + "…");
  EXPECT_EQ(e.text[2], "\xEF\xBF\xBD\xEF\xBF\xBD ok");
  EXPECT_EQ(e.more, 1u);
  EXPECT_TRUE(linesExcerpt(content, {{9, 12}}).text.empty());  // past the end: nothing to show
}

// --- hints/for_tool with lines ---

class HintLinesTest : public ReviewLinesTest {
 protected:
  void SetUp() override {
    ReviewLinesTest::SetUp();
    early_ = save("the parser resets here", {FileEntry("src/b.c", LineRanges{{20, 30}})}, "decision");
    late_ = save("the lexer resets there", {FileEntry("src/b.c", LineRanges{{150, 160}})}, "decision");
  }

  // The hints a fresh connection (nothing shown yet, no cooldown) gets reading `lines` of src/b.c.
  HintResult hintsOn(const LineRanges& lines) {
    ClientState client;
    connect(client);
    HintsRequest request;
    request.tool = "read";
    request.files = {"src/b.c"};
    if (!lines.empty()) request.lines = {{"src/b.c", lines}};
    auto r = service_->hintsForTool(ctx(client), request);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? *r : HintResult{};
  }

  std::string firstHint(const LineRanges& lines) {
    HintResult r = hintsOn(lines);
    return r.hints.empty() ? "" : r.hints[0].id;
  }

  std::string early_, late_;
};

TEST_F(HintLinesTest, TheMemoryAnchoredOnTheToolsLinesComesFirst) {
  EXPECT_EQ(firstHint({{152, 153}}), late_);
  EXPECT_EQ(firstHint({{22, 23}}), early_);
  EXPECT_EQ(firstHint({{35, 36}}), early_);  // neither covers them: the nearer one
  EXPECT_EQ(firstHint({{140, 141}}), late_);
  // Carried through an edit: fifty lines inserted above move the late anchor to 200-210.
  repo_->write("src/b.c", numberedLines(50, "new") + numberedLines(200, "b"));
  EXPECT_EQ(firstHint({{202, 203}}), late_);
  EXPECT_EQ(firstHint({{72, 73}}), early_);
}

TEST_F(HintLinesTest, TheCategoryOrderStaysFirst) {
  const std::string gotcha = save("the reader has a gotcha", {FileEntry("src/b.c", LineRanges{{100, 101}})}, "gotcha");
  HintResult r = hintsOn({{152, 153}});
  ASSERT_FALSE(r.hints.empty());
  EXPECT_EQ(r.hints[0].id, gotcha);  // loud hints are shown before quiet ones, lines or not
}

TEST_F(HintLinesTest, HiddenSupersededAndRejectedMemoriesNeverSurface) {
  // Controls, so that a call answering nothing fails: each memory is the hint on its lines while it is active, and
  // once it is put away another active memory on src/b.c is the hint in its place (one quiet hint is shown).
  ASSERT_EQ(firstHint({{150, 160}}), late_);
  ASSERT_TRUE(service_->hide(ctx(), {late_, std::nullopt}).isOk());
  HintResult hidden = hintsOn({{150, 160}});
  for (const auto& h : hidden.hints) EXPECT_NE(h.id, late_);
  ASSERT_FALSE(hidden.hints.empty());
  EXPECT_EQ(hidden.hints[0].id, early_) << "the active memory on the same file still surfaces";
  EXPECT_EQ(hidden.more, 0);  // not even counted
  ASSERT_TRUE(service_->restore(ctx(), {late_, std::nullopt}).isOk());
  ASSERT_EQ(firstHint({{150, 160}}), late_) << "restored, it surfaces again";
  ASSERT_TRUE(service_->reject(ctx(), {late_, std::string("wrong")}).isOk());
  HintResult rejected = hintsOn({{150, 160}});
  for (const auto& h : rejected.hints) EXPECT_NE(h.id, late_);
  ASSERT_FALSE(rejected.hints.empty());
  EXPECT_EQ(rejected.hints[0].id, early_);
  ASSERT_EQ(firstHint({{20, 30}}), early_);
  // The replacement is anchored on the same lines, so it is the hint there once early_ is superseded.
  const std::string replacement =
      save("the parser resets on every token", {FileEntry("src/b.c", LineRanges{{20, 30}})}, "decision");
  ASSERT_TRUE(service_->supersede(ctx(), {early_, replacement}).isOk());
  HintResult superseded = hintsOn({{20, 30}});
  for (const auto& h : superseded.hints) EXPECT_NE(h.id, early_);
  ASSERT_FALSE(superseded.hints.empty());
  EXPECT_EQ(superseded.hints[0].id, replacement);
}

}  // namespace
}  // namespace memq
