// Project location (work tree top, subdirectory roots, linked worktrees, outside git), blob ids for staleness,
// and the degraded cases: empty repository, detached HEAD, shallow clone, no repository at all.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "daemon/git/git_repo_signals.h"
#include "daemon/git/repo_location.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;
using testing::trimmed;

TEST(LocateProject, WorkTreeTopSubdirectoryAndOutsideGit) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"sub/dir/file.c"});

  auto top = locateProject(repo.dir() + "/sub/dir");
  ASSERT_TRUE(top.isOk());
  EXPECT_TRUE(top->inGit);
  EXPECT_EQ(top->root, repo.dir());
  EXPECT_EQ(top->gitWorkTreeTop, repo.dir());
  EXPECT_EQ(top->repoPrefix, "");
  EXPECT_EQ(top->gitCommonDir, repo.dir() + "/.git");
  EXPECT_EQ(top->gitDir, repo.dir() + "/.git");
  EXPECT_EQ(top->dbPath, repo.dir() + "/.git/memq/memory.db");

  auto exact = locateProject(repo.dir() + "/sub/dir/", /*exactRoot=*/true);
  ASSERT_TRUE(exact.isOk());
  EXPECT_EQ(exact->root, repo.dir() + "/sub/dir");
  EXPECT_EQ(exact->repoPrefix, "sub/dir");
  EXPECT_EQ(exact->dbPath, repo.dir() + "/.git/memq/memory.db");

  auto exactTop = locateProject(repo.dir(), /*exactRoot=*/true);
  ASSERT_TRUE(exactTop.isOk());
  EXPECT_EQ(exactTop->repoPrefix, "");

  std::filesystem::create_directories(tmp.path() + "/plain/x");
  auto plain = locateProject(tmp.path() + "/plain/x");
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain->inGit);
  EXPECT_EQ(plain->root, tmp.path() + "/plain/x");
  EXPECT_EQ(plain->dbPath, tmp.path() + "/plain/x/.memq/memory.db");
  EXPECT_EQ(plain->gitCommonDir, "");

  auto missing = locateProject(tmp.path() + "/nope");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

TEST(LocateProject, SymlinkedDirectoryResolvesToTheRealRoot) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"a.c"});
  std::filesystem::create_directory_symlink(repo.dir(), tmp.path() + "/link");
  auto loc = locateProject(tmp.path() + "/link");
  ASSERT_TRUE(loc.isOk());
  EXPECT_EQ(loc->root, repo.dir());
}

TEST(LocateProject, LinkedWorktreesShareTheCommonDatabaseButKeepTheirOwnHead) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "b.c"});
  repo.git("worktree add -q -b feature " + testing::shellQuote(tmp.path() + "/wt"));
  GitRepo wt(tmp.path() + "/wt", /*init=*/false);
  wt.touch({"a.c", "c.c"});
  wt.touch({"a.c", "c.c"});

  auto main = locateProject(repo.dir());
  auto linked = locateProject(tmp.path() + "/wt");
  ASSERT_TRUE(main.isOk());
  ASSERT_TRUE(linked.isOk());
  EXPECT_EQ(linked->root, tmp.path() + "/wt");
  EXPECT_EQ(linked->gitCommonDir, repo.dir() + "/.git");
  EXPECT_EQ(linked->gitDir, repo.dir() + "/.git/worktrees/wt");
  EXPECT_EQ(linked->dbPath, main->dbPath);

  testing::createMigratedDatabase(main->dbPath);
  GitRepoSignals mainSignals(main.value());
  GitRepoSignals wtSignals(linked.value());
  EXPECT_EQ(mainSignals.cochangeNeighbors("a.c", 5).size(), 1u);
  EXPECT_EQ(wtSignals.cochangeNeighbors("a.c", 5).size(), 2u);
  EXPECT_EQ(wtSignals.head(), wt.rev("HEAD"));
  // Each worktree keeps its own cached graph: neither invalidates the other.
  EXPECT_EQ(GitRepoSignals(main.value()).refreshDetailed().walkedCommits, 0);
  EXPECT_EQ(GitRepoSignals(linked.value()).refreshDetailed().walkedCommits, 0);
}

TEST(Staleness, BlobIdsFollowEditsAndDeletions) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.commit({{"src/a.c", "int a;\n"}, {"src/b.c", "int b;\n"}, {"gone.c", "x\n"}});
  GitSignalsOptions opts;
  opts.headCheckInterval = std::chrono::milliseconds(0);
  GitRepoSignals s(locateProject(repo.dir()).value(), opts);

  const std::string recorded = repo.rev("HEAD:src/a.c");
  EXPECT_EQ(s.blobIdAtHead("src/a.c"), recorded);
  EXPECT_EQ(s.workTreeBlobId("src/a.c"), recorded);
  EXPECT_EQ(s.currentBlobId("src/a.c"), recorded);  // fresh

  repo.write("src/a.c", "int a = 2;\n");
  auto changed = s.currentBlobId("src/a.c");
  ASSERT_TRUE(changed.has_value());
  EXPECT_NE(*changed, recorded);  // stale
  EXPECT_EQ(*changed, trimmed(repo.git("hash-object src/a.c")));
  EXPECT_EQ(s.blobIdAtHead("src/a.c"), recorded);

  // Deleted in the work tree only: dead already, though HEAD still has it.
  repo.remove("src/b.c");
  EXPECT_EQ(s.workTreeBlobId("src/b.c"), std::nullopt);
  EXPECT_EQ(s.currentBlobId("src/b.c"), std::nullopt);
  EXPECT_EQ(s.blobIdAtHead("src/b.c"), repo.rev("HEAD:src/b.c"));
  // Deleted and committed: dead.
  repo.git("rm -q gone.c");
  repo.git("commit -q -m rm");
  EXPECT_EQ(s.currentBlobId("gone.c"), std::nullopt);
  EXPECT_EQ(s.currentBlobId("never-existed.c"), std::nullopt);
  // Directories, absolute paths and escapes are not files.
  EXPECT_EQ(s.currentBlobId("src"), std::nullopt);
  EXPECT_EQ(s.currentBlobId(repo.dir() + "/src/a.c"), std::nullopt);
  EXPECT_EQ(s.currentBlobId("../repo/src/a.c"), std::nullopt);
  // An untracked file has a work-tree id but none at HEAD.
  repo.write("new.c", "n\n");
  EXPECT_EQ(s.currentBlobId("new.c"), trimmed(repo.git("hash-object new.c")));
  EXPECT_EQ(s.blobIdAtHead("new.c"), std::nullopt);
}

// A file written moments ago is hashed from the bytes read (its stamp could stay the same through a second write in
// the same clock tick), through the filters git applies when it stores the file, and hashed again only when the
// bytes differ from the last hash's.
TEST(Staleness, AFileEditedMomentsAgoIsHashedFromItsBytesAsGitWouldStoreThem) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.commit({{".gitattributes", "*.txt text\n"}, {"src/a.c", "int a;\n"}});
  GitRepoSignals s(locateProject(repo.dir()).value());
  const std::string path = repo.dir() + "/src/a.c";

  repo.write("src/a.c", "int a = 1;\n");
  EXPECT_EQ(s.workTreeBlobId("src/a.c"), trimmed(repo.git("hash-object src/a.c")));
  EXPECT_EQ(s.workTreeBlobId("src/a.c"), trimmed(repo.git("hash-object src/a.c")));  // the same bytes
  // The same size, the modification time given back: only the bytes tell.
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  repo.write("src/a.c", "int a = 9;\n");
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_EQ(s.workTreeBlobId("src/a.c"), trimmed(repo.git("hash-object src/a.c")));
  EXPECT_NE(s.workTreeBlobId("src/a.c"), s.blobIdAtHead("src/a.c"));

  // Line endings converted on the way in (.gitattributes `text`): the id of what git would store.
  repo.write("notes.txt", "one\r\ntwo\r\n");
  const std::string stored = trimmed(repo.git("hash-object notes.txt"));
  EXPECT_NE(stored, trimmed(repo.git("hash-object --no-filters notes.txt")));
  EXPECT_EQ(s.workTreeBlobId("notes.txt"), stored);
}

TEST(Staleness, SymlinksHashTheirTargetTextLikeGit) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.write("target.c", "x\n");
  std::filesystem::create_symlink("target.c", repo.dir() + "/link.c");
  repo.git("add -A");
  repo.git("commit -q -m link");
  GitRepoSignals s(locateProject(repo.dir()).value());
  EXPECT_EQ(s.workTreeBlobId("link.c"), repo.rev("HEAD:link.c"));
}

TEST(Staleness, SubdirectoryRootPathsAreRootRelative) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.commit({{"svc/a.c", "a\n"}, {"a.c", "top\n"}});
  GitRepoSignals s(locateProject(repo.dir() + "/svc", true).value());
  EXPECT_EQ(s.blobIdAtHead("a.c"), repo.rev("HEAD:svc/a.c"));
  EXPECT_EQ(s.currentBlobId("a.c"), repo.rev("HEAD:svc/a.c"));
  EXPECT_EQ(s.currentBlobId("../a.c"), std::nullopt);
}

TEST(Staleness, OutsideGitHashesFilesLikeGitWould) {
  TempDir tmp;
  testing::writeFile(tmp.path() + "/notes.txt", "hello\n");
  auto loc = locateProject(tmp.path());
  ASSERT_TRUE(loc.isOk());
  GitRepoSignals s(loc.value());
  // `git hash-object` of "hello\n", a fixed value.
  EXPECT_EQ(s.currentBlobId("notes.txt"), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(s.blobIdAtHead("notes.txt"), std::nullopt);
}

TEST(Degraded, EmptyRepositoryGivesEmptySignals) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.write("a.c", "x\n");
  auto loc = locateProject(repo.dir());
  ASSERT_TRUE(loc.isOk());
  testing::createMigratedDatabase(loc->dbPath);
  GitRepoSignals s(loc.value());
  RefreshStats r = s.refreshDetailed();
  EXPECT_FALSE(r.status.isOk());
  EXPECT_EQ(r.head, "");
  EXPECT_EQ(s.head(), "");
  EXPECT_TRUE(s.cochangeNeighbors("a.c", 5).empty());
  EXPECT_EQ(s.blastRadius("a.c"), 0);
  EXPECT_TRUE(s.dependents("a.c").empty());
  EXPECT_EQ(s.blobIdAtHead("a.c"), std::nullopt);
  EXPECT_EQ(s.currentBlobId("a.c"), trimmed(repo.git("hash-object a.c")));

  // The first commit brings the signals to life.
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "b.c"});
  EXPECT_TRUE(s.refreshDetailed().status.isOk());
  EXPECT_EQ(s.cochangeNeighbors("a.c", 5).size(), 1u);
}

TEST(Degraded, DetachedHeadUsesTheCheckedOutCommit) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "c.c"});
  repo.touch({"a.c", "c.c"});
  repo.git("checkout -q --detach HEAD~2");
  GitRepoSignals s(locateProject(repo.dir()).value());
  auto n = s.cochangeNeighbors("a.c", 5);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].path, "b.c");
  EXPECT_EQ(s.head(), repo.rev("HEAD"));
  EXPECT_EQ(s.refreshDetailed().head, repo.rev("HEAD"));
}

TEST(Degraded, ShallowCloneReadsWhatItHas) {
  TempDir tmp;
  GitRepo origin(tmp.path() + "/origin");
  for (int i = 0; i < 6; ++i) origin.touch({"a.c", "b.c"});
  testing::run("git clone -q --depth 3 file://" + origin.dir() + " " + testing::shellQuote(tmp.path() + "/shallow"));
  GitRepo shallow(tmp.path() + "/shallow", /*init=*/false);
  auto loc = locateProject(shallow.dir());
  ASSERT_TRUE(loc.isOk());
  testing::createMigratedDatabase(loc->dbPath);
  GitRepoSignals s(loc.value());
  RefreshStats r = s.refreshDetailed();
  EXPECT_TRUE(r.status.isOk()) << r.status.toString();
  EXPECT_LE(r.totalCommits, 3);
  // Two fully readable commits pair a and b; the boundary commit (parent missing) is not counted, so it
  // cannot pretend to have changed the whole tree.
  auto n = s.cochangeNeighbors("a.c", 5);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].path, "b.c");
  EXPECT_EQ(n[0].count, 2);
  EXPECT_EQ(s.blastRadius("a.c"), 0);

  // Incremental refresh on top of a shallow history.
  shallow.touch({"a.c", "b.c"});
  RefreshStats next = s.refreshDetailed();
  EXPECT_EQ(next.walkedCommits, 1);
  EXPECT_EQ(s.cochangeNeighbors("a.c", 5)[0].count, 3);
}

TEST(Degraded, NotARepositoryGivesEmptySignals) {
  TempDir tmp;
  testing::writeFile(tmp.path() + "/a.c", "x\n");
  auto loc = locateProject(tmp.path());
  ASSERT_TRUE(loc.isOk());
  GitRepoSignals s(loc.value());
  EXPECT_TRUE(s.cochangeNeighbors("a.c", 5).empty());
  EXPECT_EQ(s.blastRadius("a.c"), 0);
  EXPECT_EQ(s.head(), "");
  EXPECT_EQ(s.blastDamped(3), 1.0);
  RefreshStats r = s.refreshDetailed();
  EXPECT_FALSE(r.status.isOk());
  EXPECT_EQ(r.walkedCommits, 0);
}

TEST(Degraded, ALocationWhoseRepositoryVanishedGivesEmptySignals) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"a.c", "b.c"});
  ProjectLocation loc = locateProject(repo.dir()).value();
  std::filesystem::remove_all(repo.dir() + "/.git");
  GitRepoSignals s(loc);
  EXPECT_TRUE(s.cochangeNeighbors("a.c", 5).empty());
  EXPECT_EQ(s.blastRadius("a.c"), 0);
  EXPECT_FALSE(s.refreshDetailed().status.isOk());
}

TEST(Degraded, MissingDatabaseOnlyLosesTheCache) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/repo");
  repo.touch({"a.c", "b.c"});
  repo.touch({"a.c", "b.c"});
  ProjectLocation loc = locateProject(repo.dir()).value();
  GitRepoSignals s(loc);  // no database file yet
  EXPECT_EQ(s.cochangeNeighbors("a.c", 5).size(), 1u);
  // The store creates the database later: the next refresh writes a full graph, not a delta onto nothing.
  testing::createMigratedDatabase(loc.dbPath);
  repo.touch({"a.c", "c.c"});
  EXPECT_EQ(s.refreshDetailed().walkedCommits, 1);
  GitRepoSignals restarted(loc);
  RefreshStats r = restarted.refreshDetailed();
  EXPECT_EQ(r.walkedCommits, 0);
  EXPECT_EQ(r.totalCommits, 3);
}

}  // namespace
}  // namespace memq
