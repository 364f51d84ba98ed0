// Co-change over real repositories built with the git command line: exact neighbours and strengths, the
// ignore list and the per-commit cap, incremental refresh, rebuild after a rewrite, window eviction, the
// database cache, and a project root that is a subdirectory.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <thread>

#include "daemon/git/cochange_builder.h"
#include "daemon/git/git_repo_signals.h"
#include "daemon/git/repo_location.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;

ProjectLocation locate(const std::string& dir, bool exactRoot = false) {
  auto loc = locateProject(dir, exactRoot);
  EXPECT_TRUE(loc.isOk()) << loc.status().toString();
  return loc.value();
}

// A repository plus its migrated project database, like a scope the store has opened.
struct Project {
  TempDir tmp;
  GitRepo repo{tmp.path() + "/repo"};
  ProjectLocation location() {
    ProjectLocation loc = locate(repo.dir());
    if (!std::filesystem::exists(loc.dbPath)) testing::createMigratedDatabase(loc.dbPath);
    return loc;
  }
};

// Options whose lookups re-read HEAD at most once per `interval`.
GitSignalsOptions headCheckedEvery(std::chrono::milliseconds interval) {
  GitSignalsOptions opts;
  opts.headCheckInterval = interval;
  return opts;
}

struct Expected {
  std::string path;
  int count;
  double strength;
};

void expectNeighbors(const std::vector<CoChangeNeighbor>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].path, want[i].path) << "at " << i;
    EXPECT_EQ(got[i].count, want[i].count) << want[i].path;
    EXPECT_NEAR(got[i].strength, want[i].strength, 1e-12) << want[i].path;
  }
}

// a: 4 changes, b: 3, c: 2, d: 1. Pairs: a-b 3, a-c 2, b-c 1 (below the floor).
void buildKnownHistory(GitRepo& repo) {
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "c.c"});
  repo.touch({"a.c", "b.c", "c.c"});
  repo.touch({"d.c"});
}

TEST(CoChange, KnownHistoryGivesExactNeighboursAndStrengths) {
  Project p;
  buildKnownHistory(p.repo);
  GitRepoSignals signals(p.location());
  expectNeighbors(signals.cochangeNeighbors("a.c", 10),
                  {{"b.c", 3, 3 / std::sqrt(4.0 * 3)}, {"c.c", 2, 2 / std::sqrt(4.0 * 2)}});
  expectNeighbors(signals.cochangeNeighbors("b.c", 10), {{"a.c", 3, 3 / std::sqrt(4.0 * 3)}});
  expectNeighbors(signals.cochangeNeighbors("c.c", 10), {{"a.c", 2, 2 / std::sqrt(4.0 * 2)}});
  EXPECT_TRUE(signals.cochangeNeighbors("d.c", 10).empty());
  EXPECT_TRUE(signals.cochangeNeighbors("unknown.c", 10).empty());
  expectNeighbors(signals.cochangeNeighbors("a.c", 1), {{"b.c", 3, 3 / std::sqrt(4.0 * 3)}});
  // Spellings of the same root-relative path; a path escaping the root gets nothing.
  EXPECT_EQ(signals.cochangeNeighbors("./a.c", 10).size(), 2u);
  EXPECT_TRUE(signals.cochangeNeighbors("../repo/a.c", 10).empty());
  EXPECT_EQ(signals.head(), p.repo.rev("HEAD"));
}

TEST(CoChange, RenamesCountAsBothPathsAndDeletedPartnersAreDropped) {
  Project p;
  p.repo.touch({"x.c", "old.c"});
  p.repo.touch({"x.c", "old.c"});
  p.repo.touch({"x.c", "y.c"});
  p.repo.touch({"x.c", "y.c"});
  p.repo.git("mv old.c new.c");
  p.repo.git("commit -q -m rename");
  GitRepoSignals signals(p.location());
  // old.c is gone at HEAD: serving it would waste a slot on a file nobody can open.
  auto n = signals.cochangeNeighbors("x.c", 10);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].path, "y.c");
}

// The hand-rolled tree merge must name exactly the files `git diff-tree` names, including the corners of git's
// tree order ("a.c" vs "a/", "a-b" vs "a/") and files turning into directories.
TEST(CoChange, CommitFilesMatchGitDiffTree) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.commit({{"a.c", "1"}, {"a/b.c", "1"}, {"a-b", "1"}, {"a0", "1"}, {"x", "file"}, {"d/e/f.c", "1"},
               {"keep/k.c", "1"}, {"tool.sh", "1"}});
  repo.commit({{"a.c", "2"}, {"a/b.c", "2"}, {"a/new.c", "1"}, {"a0", "2"}});
  repo.remove("x");
  repo.write("x/inside.c", "now a directory");
  std::filesystem::remove_all(repo.dir() + "/d");
  repo.git("update-index --chmod=+x tool.sh");  // mode only: not a content change
  repo.commit({{"a-b", "2"}, {"z.c", "1"}});

  ensureLibgit2();
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, repo.dir().c_str()), 0);
  RepositoryPtr r(raw);
  CoChangeOptions opts;
  opts.ignoreGlobs = {};
  CoChangeBuilder builder(r.get(), opts);
  for (const char* rev : {"HEAD", "HEAD~1", "HEAD~2"}) {
    std::string expected = repo.git(std::string("diff-tree --root --no-commit-id --name-only -r --no-renames ") + rev);
    std::vector<std::string> want;
    std::istringstream lines(expected);
    for (std::string line; std::getline(lines, line);) {
      // git lists the chmod; co-change deliberately does not.
      if (!line.empty() && !(line == "tool.sh" && std::string(rev) == "HEAD")) want.push_back(line);
    }
    std::sort(want.begin(), want.end());
    git_oid oid;
    ASSERT_EQ(git_oid_fromstr(&oid, repo.rev(rev).c_str()), 0);
    git_commit* c = nullptr;
    ASSERT_EQ(git_commit_lookup(&c, r.get(), &oid), 0);
    CommitPtr commit(c);
    std::vector<std::string> got;
    ASSERT_TRUE(builder.commitFiles(commit.get(), got));
    EXPECT_EQ(got, want) << rev;
  }
}

TEST(CoChange, LockfilesAndGeneratedFilesAreNobodysNeighbour) {
  Project p;
  for (int i = 0; i < 4; ++i) {
    p.repo.touch({"src/app.ts", "src/api.ts", "package-lock.json", "yarn.lock", "rust/Cargo.lock",
                  "node_modules/left-pad/index.js", "dist/app.min.js", "go.sum"});
  }
  GitRepoSignals signals(p.location());
  expectNeighbors(signals.cochangeNeighbors("src/app.ts", 10), {{"src/api.ts", 4, 1.0}});
  for (const char* f : {"package-lock.json", "yarn.lock", "rust/Cargo.lock", "node_modules/left-pad/index.js",
                        "dist/app.min.js", "go.sum"}) {
    EXPECT_TRUE(signals.cochangeNeighbors(f, 10).empty()) << f;
  }
}

TEST(CoChange, CustomIgnoreGlobsReplaceTheDefaults) {
  Project p;
  for (int i = 0; i < 2; ++i) p.repo.touch({"a.c", "b.c", "CHANGELOG.md", "yarn.lock"});
  GitSignalsOptions opts;
  opts.cochange.ignoreGlobs = {"*.md"};
  GitRepoSignals signals(p.location(), opts);
  auto n = signals.cochangeNeighbors("a.c", 10);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].path, "b.c");
  EXPECT_EQ(n[1].path, "yarn.lock");
}

TEST(CoChange, ACommitOfMoreThanThirtyFilesContributesNothing) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  p.repo.touch({"a.c", "b.c"});
  std::vector<std::string> big = {"a.c"};
  for (int i = 0; i < 39; ++i) big.push_back("z" + std::to_string(i) + ".c");
  p.repo.touch(big, "40 files");
  p.repo.touch(big, "40 files again");
  // 3 real files plus 40 ignored ones is a 3-file commit: the cap applies after the ignore list.
  std::vector<std::string> vendored = {"a.c", "b.c", "c.c"};
  for (int i = 0; i < 40; ++i) vendored.push_back("vendor/lib/v" + std::to_string(i) + ".go");
  p.repo.touch(vendored, "vendor update");

  GitRepoSignals signals(p.location());
  // The 40-file commits add neither pairs nor changes: a changed 3 times (2 + the vendored commit), like b.
  expectNeighbors(signals.cochangeNeighbors("a.c", 10), {{"b.c", 3, 1.0}});
  EXPECT_TRUE(signals.cochangeNeighbors("z0.c", 10).empty());
  RefreshStats s = signals.refreshDetailed();
  EXPECT_EQ(s.totalCommits, 5);  // skipped commits still occupy their window slot
}

TEST(CoChange, OneNewCommitIsWalkedIncrementallyAndTheCacheSurvivesARestart) {
  Project p;
  buildKnownHistory(p.repo);
  const ProjectLocation loc = p.location();
  {
    GitRepoSignals signals(loc);
    RefreshStats first = signals.refreshDetailed();
    EXPECT_TRUE(first.rebuilt);
    EXPECT_EQ(first.walkedCommits, 5);
    EXPECT_EQ(first.totalCommits, 5);
    EXPECT_EQ(first.pairs, 2);
    EXPECT_EQ(first.head, p.repo.rev("HEAD"));

    p.repo.touch({"c.c", "d.c"});
    p.repo.touch({"b.c", "c.c"});  // b-c reaches 2 now: the count-1 pair must have been kept
    p.repo.touch({"c.c", "d.c"});
    RefreshStats second = signals.refreshDetailed();
    EXPECT_FALSE(second.rebuilt);
    EXPECT_EQ(second.walkedCommits, 3);
    EXPECT_EQ(second.totalCommits, 8);

    p.repo.touch({"e.c"});
    RefreshStats third = signals.refreshDetailed();
    EXPECT_FALSE(third.rebuilt);
    EXPECT_EQ(third.walkedCommits, 1);
    EXPECT_EQ(third.head, p.repo.rev("HEAD"));
    RefreshStats idle = signals.refreshDetailed();
    EXPECT_EQ(idle.walkedCommits, 0);
    EXPECT_FALSE(idle.rebuilt);
  }
  // c: 5 changes, a: 4, b: 4, d: 3. c-d 2, b-c 2, a-c 2, a-b 3.
  std::vector<Expected> wantC = {{"d.c", 2, 2 / std::sqrt(5.0 * 3)},
                                 {"a.c", 2, 2 / std::sqrt(5.0 * 4)},
                                 {"b.c", 2, 2 / std::sqrt(5.0 * 4)}};
  GitRepoSignals restarted(loc);
  RefreshStats fromCache = restarted.refreshDetailed();
  EXPECT_FALSE(fromCache.rebuilt);
  EXPECT_EQ(fromCache.walkedCommits, 0);
  EXPECT_EQ(fromCache.totalCommits, 9);
  expectNeighbors(restarted.cochangeNeighbors("c.c", 10), wantC);

  // The same answer as a cold build without any cache.
  GitSignalsOptions opts;
  ProjectLocation noDb = loc;
  noDb.dbPath = p.tmp.path() + "/nowhere/memory.db";
  GitRepoSignals cold(noDb, opts);
  expectNeighbors(cold.cochangeNeighbors("c.c", 10), wantC);

  SQLite::Database db(loc.dbPath);
  SQLite::Statement q(db, "SELECT head FROM cochange_graphs WHERE worktree = ''");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), p.repo.rev("HEAD"));
}

TEST(CoChange, HeadMovingSidewaysRebuilds) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  p.repo.touch({"a.c", "b.c"});
  const std::string base = p.repo.rev("HEAD");
  p.repo.touch({"a.c", "x.c"});
  p.repo.touch({"a.c", "x.c"});
  GitRepoSignals signals(p.location());
  EXPECT_EQ(signals.cochangeNeighbors("a.c", 10).size(), 2u);

  p.repo.git("reset -q --hard " + base);
  p.repo.touch({"a.c", "y.c"});
  RefreshStats s = signals.refreshDetailed();
  EXPECT_TRUE(s.rebuilt);
  EXPECT_EQ(s.walkedCommits, 3);
  EXPECT_EQ(s.totalCommits, 3);
  // x.c's co-changes were on the abandoned line and must be gone; a changed 3 times, b twice, y once.
  expectNeighbors(signals.cochangeNeighbors("a.c", 10), {{"b.c", 2, 2 / std::sqrt(3.0 * 2)}});
  EXPECT_TRUE(signals.cochangeNeighbors("x.c", 10).empty());
}

// HEAD moved far back (a checkout of an old tag, a bisect step): the walk that looks for the old head in the new
// one's history reads several windows' worth of commits at most (8 windows and 1,024) before it gives up and
// rebuilds, which reads one window from the new head; it does not read every commit in between.
TEST(CoChange, HeadMovingFarBackReadsAFewWindowsNotTheWholeHistoryBetween) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  p.repo.touch({"a.c", "b.c"});
  const std::string old = p.repo.rev("HEAD");
  // 1,200 commits on top of it, through git fast-import (a commit each through the command line takes seconds).
  std::string stream;
  for (int i = 1; i <= 1200; ++i) {
    const std::string content = "v" + std::to_string(i) + "\n";
    stream += "commit refs/heads/main\nmark :" + std::to_string(i) + "\ncommitter memq <memq@example.com> " +
              std::to_string(1800000000 + i) + " +0000\ndata 5\ntouch\n" +
              (i == 1 ? "from " + old : "from :" + std::to_string(i - 1)) + "\nM 100644 inline a.c\ndata " +
              std::to_string(content.size()) + "\n" + content + "M 100644 inline n" + std::to_string(i % 7) +
              ".c\ndata " + std::to_string(content.size()) + "\n" + content + "\n";
  }
  const std::string streamFile = p.tmp.path() + "/history.stream";
  testing::writeFile(streamFile, stream);
  p.repo.git("fast-import --quiet < " + testing::shellQuote(streamFile));
  p.repo.git("reset -q --hard main");
  GitSignalsOptions opts;
  opts.cochange.window = 10;
  GitRepoSignals signals(p.location(), opts);
  ASSERT_TRUE(signals.refreshDetailed().status.isOk());

  p.repo.git("checkout -q --detach " + old);
  RefreshStats s = signals.refreshDetailed();
  ASSERT_TRUE(s.status.isOk()) << s.status.toString();
  EXPECT_TRUE(s.rebuilt);
  EXPECT_EQ(s.totalCommits, 2);
  EXPECT_LE(s.readCommits, 8 * 10 + 1024 + 10) << "the walk read the history between the two heads";
  // The counts are those of the old head's history alone.
  expectNeighbors(signals.cochangeNeighbors("a.c", 10), {{"b.c", 2, 1.0}});
}

TEST(CoChange, LookupsNoticeANewHeadWithoutAnExplicitRefresh) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  GitRepoSignals signals(p.location(), headCheckedEvery(std::chrono::milliseconds(0)));
  EXPECT_TRUE(signals.cochangeNeighbors("a.c", 10).empty());
  p.repo.touch({"a.c", "b.c"});
  EXPECT_EQ(signals.cochangeNeighbors("a.c", 10).size(), 1u);
}

TEST(CoChange, HeadChecksAreRateLimited) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  GitRepoSignals signals(p.location(), headCheckedEvery(std::chrono::hours(1)));
  EXPECT_TRUE(signals.cochangeNeighbors("a.c", 10).empty());
  p.repo.touch({"a.c", "b.c"});
  // Within the interval the lookup answers from what it has; an explicit refresh always looks.
  EXPECT_TRUE(signals.cochangeNeighbors("a.c", 10).empty());
  signals.refresh();
  EXPECT_EQ(signals.cochangeNeighbors("a.c", 10).size(), 1u);
}

TEST(CoChange, ObservingHeadNowSeesANewHeadWithinTheInterval) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  GitRepoSignals signals(p.location(), headCheckedEvery(std::chrono::hours(1)));
  EXPECT_TRUE(signals.cochangeNeighbors("a.c", 10).empty());
  const std::string before = signals.head();
  const std::string commit = p.repo.touch({"a.c", "b.c"});
  EXPECT_EQ(signals.head(), before) << "within the interval a lookup keeps its view of HEAD";
  // What a request does at its start: the lookups after it see the commit made just before.
  signals.observeHeadNow();
  EXPECT_EQ(signals.head(), commit);
  EXPECT_EQ(signals.cochangeNeighbors("a.c", 10).size(), 1u);
  // With HEAD unchanged, looking again keeps the same view.
  signals.observeHeadNow();
  EXPECT_EQ(signals.head(), commit);
}

// A commit landing between a request's observation of HEAD and the snapshot's build: the snapshot built carries the
// new HEAD, and the lookups after it must take it rather than rebuild it per queried file until the interval ends.
TEST(CoChange, ACommitAfterHeadWasObservedBuildsTheSnapshotOnce) {
  Project p;
  p.repo.touch({"a.c", "b.c"});
  GitRepoSignals signals(p.location(), headCheckedEvery(std::chrono::hours(1)));
  signals.observeHeadNow();
  const std::string commit = p.repo.touch({"a.c", "b.c"});

  EXPECT_EQ(signals.cochangeNeighbors("a.c", 10).size(), 1u);  // the new commit counts: never older than observed
  EXPECT_EQ(signals.cochangeNeighbors("b.c", 10).size(), 1u);
  EXPECT_TRUE(signals.cochangeNeighbors("c.c", 10).empty());
  EXPECT_EQ(signals.snapshotBuilds(), 1);
  EXPECT_EQ(signals.head(), commit);
}

TEST(CoChange, WindowEvictsTheOldestCommitsIncrementally) {
  Project p;
  p.repo.touch({"a.c", "b.c"});  // falls out of a window of 4 after the next refresh
  p.repo.touch({"a.c", "b.c"});
  p.repo.touch({"a.c", "c.c"});
  p.repo.touch({"a.c", "c.c"});
  GitSignalsOptions opts;
  opts.cochange.window = 4;
  const ProjectLocation loc = p.location();
  GitRepoSignals signals(loc, opts);
  RefreshStats first = signals.refreshDetailed();
  EXPECT_EQ(first.totalCommits, 4);
  expectNeighbors(signals.cochangeNeighbors("a.c", 10),
                  {{"b.c", 2, 2 / std::sqrt(4.0 * 2)}, {"c.c", 2, 2 / std::sqrt(4.0 * 2)}});

  p.repo.touch({"c.c", "d.c"});
  RefreshStats second = signals.refreshDetailed();
  EXPECT_FALSE(second.rebuilt);
  EXPECT_EQ(second.walkedCommits, 1);
  EXPECT_EQ(second.evictedCommits, 1);
  EXPECT_EQ(second.totalCommits, 4);
  // a-b lost one co-change (count 1 now): no longer a neighbour.
  std::vector<Expected> want = {{"c.c", 2, 2 / std::sqrt(3.0 * 3)}};
  expectNeighbors(signals.cochangeNeighbors("a.c", 10), want);

  // The incremental result equals a cold build of the same window, and the saved delta reloads the same.
  ProjectLocation noDb = loc;
  noDb.dbPath = p.tmp.path() + "/nowhere/memory.db";
  GitRepoSignals cold(noDb, opts);
  expectNeighbors(cold.cochangeNeighbors("a.c", 10), want);
  expectNeighbors(cold.cochangeNeighbors("c.c", 10), {{"a.c", 2, 2 / std::sqrt(3.0 * 3)}});
  GitRepoSignals reloaded(loc, opts);
  EXPECT_EQ(reloaded.refreshDetailed().walkedCommits, 0);
  expectNeighbors(reloaded.cochangeNeighbors("a.c", 10), want);

  // More new commits than the window holds: start over.
  for (int i = 0; i < 5; ++i) p.repo.touch({"e.c", "f.c"});
  RefreshStats third = signals.refreshDetailed();
  EXPECT_TRUE(third.rebuilt);
  EXPECT_EQ(third.totalCommits, 4);
  expectNeighbors(signals.cochangeNeighbors("e.c", 10), {{"f.c", 4, 1.0}});
}

// A counted commit that can no longer be diffed when it leaves the window (its parent pruned since, as a clone made
// shallower and then garbage-collected leaves it): its counts cannot be taken out, so the window is built again;
// nothing of it stays counted.
TEST(CoChange, ACommitThatCannotBeDiffedWhenItLeavesTheWindowRebuildsInsteadOfStayingCounted) {
  Project p;
  p.repo.touch({"x.c"});
  p.repo.touch({"a.c", "b.c"});  // its parent is pruned below; it leaves the window at the next refresh
  const std::string parent = testing::trimmed(p.repo.git("rev-parse HEAD~1"));
  p.repo.touch({"a.c", "b.c"});
  p.repo.touch({"a.c", "c.c"});
  p.repo.touch({"a.c", "c.c"});
  GitSignalsOptions opts;
  opts.cochange.window = 4;
  const ProjectLocation loc = p.location();
  {
    GitRepoSignals first(loc, opts);
    EXPECT_EQ(first.refreshDetailed().totalCommits, 4);  // saved to the cache
  }
  ASSERT_TRUE(std::filesystem::remove(p.repo.dir() + "/.git/objects/" + parent.substr(0, 2) + "/" + parent.substr(2)));

  p.repo.touch({"c.c", "d.c"});
  GitRepoSignals signals(loc, opts);  // a restart: the window comes from the cache, the new commit is walked
  RefreshStats second = signals.refreshDetailed();
  EXPECT_TRUE(second.rebuilt);
  // a-b co-changed once in the window now (count 1): no longer a neighbour, as in a cold build.
  expectNeighbors(signals.cochangeNeighbors("a.c", 10), {{"c.c", 2, 2 / std::sqrt(3.0 * 3)}});
}

// A pair row naming a file id without a file row once went into the counts as it was: an id inside the loaded range
// silently lost the pair, one past it was written out of bounds by the snapshot build.
TEST(CoChange, ACacheWhosePairsNameNoLoadedFileIsRebuiltFromHistory) {
  Project p;
  buildKnownHistory(p.repo);
  const ProjectLocation loc = p.location();
  ASSERT_TRUE(GitRepoSignals(loc).refreshDetailed().rebuilt);
  const std::vector<Expected> wantA = {{"b.c", 3, 3 / std::sqrt(4.0 * 3)}, {"c.c", 2, 2 / std::sqrt(4.0 * 2)}};
  auto damage = [&](const std::string& sql) {
    SQLite::Database db(loc.dbPath, SQLite::OPEN_READWRITE);
    EXPECT_EQ(db.exec(sql), 1) << sql;
  };
  auto expectRebuiltRight = [&] {
    GitRepoSignals restarted(loc);
    RefreshStats s = restarted.refreshDetailed();
    EXPECT_TRUE(s.rebuilt);
    EXPECT_EQ(s.walkedCommits, 5);
    EXPECT_EQ(s.pairs, 2);
    expectNeighbors(restarted.cochangeNeighbors("a.c", 10), wantA);
    // The rebuild rewrote the cache: the next start reads it whole again.
    GitRepoSignals again(loc);
    RefreshStats cached = again.refreshDetailed();
    EXPECT_FALSE(cached.rebuilt);
    EXPECT_EQ(cached.walkedCommits, 0);
    expectNeighbors(again.cochangeNeighbors("a.c", 10), wantA);
  };
  // c.c's file row gone while the pair a-c still names its id (d.c's id comes after it, so it is inside the range).
  damage("DELETE FROM cochange_files WHERE path = 'c.c'");
  expectRebuiltRight();
  // The pair a-b naming an id far past every file row.
  damage("UPDATE cochange_pairs SET b = 1000000 WHERE a = (SELECT id FROM cochange_files WHERE path = 'a.c') "
         "AND b = (SELECT id FROM cochange_files WHERE path = 'b.c')");
  expectRebuiltRight();
}

TEST(CoChange, ChangedSettingsInvalidateTheCache) {
  Project p;
  for (int i = 0; i < 3; ++i) p.repo.touch({"a.c", "b.c"});
  const ProjectLocation loc = p.location();
  GitRepoSignals(loc).refresh();
  GitSignalsOptions opts;
  opts.cochange.window = 2;
  GitRepoSignals narrower(loc, opts);
  RefreshStats s = narrower.refreshDetailed();
  EXPECT_TRUE(s.rebuilt);
  EXPECT_EQ(s.totalCommits, 2);
}

TEST(CoChange, MergeCommitsAreSkippedButTheirBranchesCount) {
  Project p;
  p.repo.touch({"base.c"});
  p.repo.git("checkout -q -b side");
  p.repo.touch({"s1.c", "s2.c"});
  p.repo.touch({"s1.c", "s2.c"});
  p.repo.git("checkout -q main");
  p.repo.touch({"m1.c", "m2.c"});
  p.repo.touch({"m1.c", "m2.c"});
  p.repo.git("merge -q --no-ff side -m merge");
  GitRepoSignals signals(p.location());
  RefreshStats s = signals.refreshDetailed();
  EXPECT_EQ(s.totalCommits, 5);  // the merge itself is not a window commit
  expectNeighbors(signals.cochangeNeighbors("s1.c", 10), {{"s2.c", 2, 1.0}});
  expectNeighbors(signals.cochangeNeighbors("m1.c", 10), {{"m2.c", 2, 1.0}});
}

TEST(CoChange, SubdirectoryRootGetsRelativeNeighboursAndExcludesOutsiders) {
  Project p;
  p.repo.touch({"sub/x.c", "sub/y.c", "top.c", "other/z.c"});
  p.repo.touch({"sub/x.c", "sub/y.c", "top.c", "other/z.c"});
  p.repo.touch({"sub/deep/w.c", "sub/x.c"});
  p.repo.touch({"sub/deep/w.c", "sub/x.c"});
  testing::createMigratedDatabase(locate(p.repo.dir()).dbPath);

  ProjectLocation sub = locate(p.repo.dir() + "/sub", /*exactRoot=*/true);
  EXPECT_EQ(sub.repoPrefix, "sub");
  GitRepoSignals subSignals(sub);
  expectNeighbors(subSignals.cochangeNeighbors("x.c", 10),
                  {{"deep/w.c", 2, 2 / std::sqrt(4.0 * 2)}, {"y.c", 2, 2 / std::sqrt(4.0 * 2)}});
  expectNeighbors(subSignals.cochangeNeighbors("deep/w.c", 10), {{"x.c", 2, 2 / std::sqrt(4.0 * 2)}});
  EXPECT_TRUE(subSignals.cochangeNeighbors("top.c", 10).empty());
  EXPECT_TRUE(subSignals.cochangeNeighbors("sub/x.c", 10).empty());

  // The whole repository, sharing the same cache rows (paths are stored repository-relative).
  GitRepoSignals whole(locate(p.repo.dir()));
  EXPECT_EQ(whole.refreshDetailed().walkedCommits, 0);
  const double s = 2 / std::sqrt(4.0 * 2);
  expectNeighbors(whole.cochangeNeighbors("sub/x.c", 10),
                  {{"other/z.c", 2, s}, {"sub/deep/w.c", 2, s}, {"sub/y.c", 2, s}, {"top.c", 2, s}});
}

TEST(CoChange, ConcurrentLookupsDuringCommitsAndRefreshes) {
  Project p;
  for (int i = 0; i < 3; ++i) p.repo.touch({"a.c", "b.c", "c.c"});
  GitRepoSignals signals(p.location(), headCheckedEvery(std::chrono::milliseconds(0)));
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  std::atomic<int> lookups{0};
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        auto n = signals.cochangeNeighbors("a.c", 5);
        EXPECT_LE(n.size(), 3u);
        signals.blastRadius("a.c");
        signals.currentBlobId("a.c");
        ++lookups;
      }
    });
  }
  for (int i = 0; i < 5; ++i) {
    p.repo.touch({"a.c", "d.c"});
    signals.refresh();
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_GT(lookups.load(), 0);
  expectNeighbors(signals.cochangeNeighbors("a.c", 1), {{"d.c", 5, 5 / std::sqrt(8.0 * 5)}});
}

}  // namespace
}  // namespace memq
