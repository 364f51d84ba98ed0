// Unit tests of RenameMap over real repositories built with the git command line: renames committed (one, a
// chain, with an edit), staged and only on disk, a project root below the repository's top, HEAD moving forward
// and elsewhere (a long move walked by refresh, not by a lookup), the earlier path that exists again being left
// alone, the work tree read again only when a directory or the index changed, and a rename found on disk searched
// for again when the queried file or an ignore file that rules on it changed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/git/rename_map.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;

// Distinct lines, so that any two versions of one file are similar by content and two files are not.
std::string body(const std::string& tag, int n = 40) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += tag + " line " + std::to_string(i) + " of the file's text\n";
  return out;
}

class RenameMapTest : public ::testing::Test {
 protected:
  RenameMapTest() : repo_(dir_.path() + "/repo") {
    repo_.commit({{"src/a.c", body("alpha")}, {"src/other.c", body("other")}}, "start");
  }

  std::unique_ptr<RenameMap> open(const std::string& dir = "", bool exactRoot = false, RenameOptions options = {}) {
    auto location = locateProject(dir.empty() ? repo_.dir() : dir, exactRoot);
    EXPECT_TRUE(location.isOk()) << location.status().toString();
    auto map = RenameMap::open(*location, options);
    EXPECT_NE(map, nullptr);
    return map;
  }

  // Options whose stamps are trusted once 40 ms old, so that settle() (a wait past that) makes them so.
  // A stamp settles 200 ms after it was made: the counts of reads below assume a lookup right after a move comes
  // within that (on a machine busy with other tests a 40 ms window was sometimes missed), and settle() waits past it.
  static RenameOptions settlingQuickly(bool watched = true) {
    RenameOptions options;
    options.settle = std::chrono::milliseconds(200);
    options.watchDirectories = watched;
    return options;
  }
  static void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(500)); }
  void move(const std::string& from, const std::string& to) {
    std::filesystem::rename(repo_.dir() + "/" + from, repo_.dir() + "/" + to);
  }

  // The earlier paths of `path`, empty when it was never renamed.
  static std::vector<std::string> earlier(RenameMap& map, const std::string& path) {
    for (auto& r : map.renamedFrom({path})) {
      if (r.path == path) return r.earlier;
    }
    return {};
  }

  TempDir dir_;
  GitRepo repo_;
};

TEST_F(RenameMapTest, ACommittedRenameIsFollowedBack) {
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  auto map = open();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_TRUE(earlier(*map, "src/other.c").empty());
  EXPECT_TRUE(earlier(*map, "src/a.c").empty());
}

TEST_F(RenameMapTest, ARenameWithAnEditIsARenameWhileTheContentIsSimilar) {
  repo_.git("mv src/a.c src/b.c");
  repo_.write("src/b.c", "/* moved */\n" + body("alpha", 36) + "a new last line\n");
  repo_.git("commit -qam 'rename and edit'");
  // A file replaced by other content under a new name is no rename.
  repo_.git("rm -q src/other.c");
  repo_.write("src/new.c", body("unrelated"));
  repo_.git("add src/new.c");
  repo_.git("commit -qm replace");
  auto map = open();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_TRUE(earlier(*map, "src/new.c").empty());
}

TEST_F(RenameMapTest, AChainIsFollowedNearestFirst) {
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm one");
  repo_.commit({{"README", "unrelated\n"}}, "between");
  std::filesystem::create_directories(repo_.dir() + "/lib");
  repo_.git("mv src/b.c lib/c.c");
  repo_.git("commit -qm two");
  auto map = open();
  EXPECT_EQ(earlier(*map, "lib/c.c"), (std::vector<std::string>{"src/b.c", "src/a.c"}));
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});  // b.c is gone; its past is still known
}

TEST_F(RenameMapTest, StagedAndOnDiskRenamesAreFollowedBeforeTheyAreCommitted) {
  auto map = open();
  repo_.git("mv src/a.c src/b.c");  // staged
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  repo_.git("reset -q --hard");
  // Moved on disk only: a.c deleted in the work tree, c.c untracked, with an edit.
  move("src/a.c", "src/c.c");
  repo_.write("src/c.c", body("alpha", 38) + "edited\n");
  EXPECT_EQ(earlier(*map, "src/c.c"), std::vector<std::string>{"src/a.c"});
  // Into a new directory, not added.
  std::filesystem::create_directories(repo_.dir() + "/new/dir");
  move("src/c.c", "new/dir/moved.c");
  EXPECT_EQ(earlier(*map, "new/dir/moved.c"), std::vector<std::string>{"src/a.c"});
  move("new/dir/moved.c", "src/c.c");
  // An uncommitted rename of a committed one: the chain goes on into history.
  std::filesystem::remove(repo_.dir() + "/src/c.c");
  repo_.git("checkout -q -- src/a.c");
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  move("src/b.c", "src/d.c");
  EXPECT_EQ(earlier(*map, "src/d.c"), (std::vector<std::string>{"src/b.c", "src/a.c"}));
}

TEST_F(RenameMapTest, AnEarlierPathThatIsAFileAgainIsNotFollowed) {
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  repo_.commit({{"src/a.c", body("a new alpha")}}, "a new a.c");
  auto map = open();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());  // refs on src/a.c are about the file there now
}

TEST_F(RenameMapTest, HeadMovingForwardAddsItsRenamesAndMovingElsewhereDropsThem) {
  auto map = open();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  EXPECT_EQ(map->refresh(), 1);  // one new commit diffed
  EXPECT_EQ(map->refresh(), 0);
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  repo_.git("reset -q --hard HEAD~1");  // the rename is no longer in HEAD's history
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
}

TEST_F(RenameMapTest, ALongMoveOfHeadIsWalkedByRefreshNotByALookup) {
  auto map = open();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());  // the first lookup walks history itself
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  // 70 more commits: more than a lookup walks on its own.
  for (int i = 0; i < 70; ++i) repo_.git("commit -q --allow-empty -m filler");
  const size_t walks = map->lookupWalks();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());  // answered from what was known
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->lookupWalks(), walks + 1) << "every lookup walked the same 64 commits again";
  EXPECT_EQ(map->refresh(), 71);
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  // A short step forward is a lookup's own.
  repo_.git("mv src/b.c src/c.c");
  repo_.git("commit -qm again");
  EXPECT_EQ(earlier(*map, "src/c.c"), (std::vector<std::string>{"src/b.c", "src/a.c"}));
  EXPECT_EQ(map->refresh(), 0);
}

// libgit2's rename_limit caps the removed files tried per added one only, so the limit once let every added file of a
// large move be compared by content. With more than renameLimit² removed × added files (here 3 × 3 > 2²) a diff
// looks for exact renames only; a smaller one (1 × 1) is searched by content as before.
TEST_F(RenameMapTest, ADiffPastTheRenameLimitFindsExactRenamesOnly) {
  repo_.commit({{"src/x1.c", body("one")}, {"src/x2.c", body("two")}, {"src/x3.c", body("three")}}, "three files");
  repo_.git("mv src/x1.c src/y1.c");
  repo_.git("mv src/x2.c src/y2.c");
  repo_.git("mv src/x3.c src/y3.c");
  repo_.write("src/y3.c", body("three", 38) + "edited\n");
  repo_.git("commit -qam 'three moves, one edited'");
  repo_.git("mv src/a.c src/w.c");
  repo_.write("src/w.c", body("alpha", 38) + "edited\n");
  repo_.git("commit -qam 'one edited move'");
  RenameOptions options;
  options.renameLimit = 2;
  auto map = open("", false, options);
  EXPECT_EQ(earlier(*map, "src/y1.c"), std::vector<std::string>{"src/x1.c"});
  EXPECT_EQ(earlier(*map, "src/y2.c"), std::vector<std::string>{"src/x2.c"});
  EXPECT_TRUE(earlier(*map, "src/y3.c").empty()) << "an edited move is not searched for past the limit";
  EXPECT_EQ(earlier(*map, "src/w.c"), std::vector<std::string>{"src/a.c"});
  // The default limit searches the same three by content.
  EXPECT_EQ(earlier(*open(), "src/y3.c"), std::vector<std::string>{"src/x3.c"});
}

TEST_F(RenameMapTest, ARootBelowTheTopSeesItsOwnPaths) {
  repo_.git("mv src/a.c src/b.c");
  repo_.git("commit -qm rename");
  auto map = open(repo_.dir() + "/src", /*exactRoot=*/true);
  EXPECT_EQ(earlier(*map, "b.c"), std::vector<std::string>{"a.c"});
}

// The files HEAD has and the work tree lacks are read once and kept while nothing they were read against changes:
// a later lookup asks the directories' watch (or stats the directories) instead of diffing every tracked file. A
// move on disk, in any directory, and a change of the index are seen by the next lookup. With the stamps alone, a
// read right after a change is not trusted (the directory's time proves nothing yet); a watch is.
class RenameMapWorkTreeTest : public RenameMapTest, public ::testing::WithParamInterface<bool> {};

// Whether the test's repository can be watched (a local file system, inotify to be had).
bool watchable(const std::string& dir) { return DirectoryWatch::open({dir}) != nullptr; }

TEST_P(RenameMapWorkTreeTest, TheWorkTreeIsReadAgainOnlyWhenADirectoryOrTheIndexChanged) {
  const bool watched = GetParam();
  if (watched && !watchable(repo_.dir())) GTEST_SKIP() << repo_.dir() << " cannot be watched here";
  repo_.commit({{"src/deep/x.c", body("deep")}}, "deep");
  auto map = open("", false, settlingQuickly(watched));
  settle();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->workTreeReads(), 1u);
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_TRUE(earlier(*map, "src/new.c").empty());
  EXPECT_EQ(map->workTreeReads(), 1u);  // nothing changed: the first read answers
  EXPECT_TRUE(earlier(*map, "src/a.c").empty());  // a path HEAD has needs no read at all
  EXPECT_EQ(map->workTreeReads(), 1u);

  // Moved on disk after the read: src changed, so the next lookup reads again and finds the rename.
  move("src/a.c", "src/b.c");
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->workTreeReads(), 2u);
  // Stamped moments after the move, src's time proves nothing: read again once more. A watch needs no such read.
  size_t reads = watched ? 2 : 3;
  settle();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->workTreeReads(), reads);

  // A move two directories down.
  move("src/deep/x.c", "src/deep/y.c");
  EXPECT_EQ(earlier(*map, "src/deep/y.c"), std::vector<std::string>{"src/deep/x.c"});
  EXPECT_EQ(map->workTreeReads(), ++reads);

  // Put back, then a change of the index alone: a file taken out of it (still on disk) is one HEAD has and the
  // index lacks.
  move("src/b.c", "src/a.c");
  move("src/deep/y.c", "src/deep/x.c");
  settle();
  EXPECT_TRUE(earlier(*map, "src/z.c").empty());
  EXPECT_TRUE(earlier(*map, "src/z.c").empty());
  EXPECT_EQ(map->workTreeReads(), ++reads);
  repo_.git("rm -q --cached src/other.c");
  EXPECT_TRUE(earlier(*map, "src/z.c").empty());
  EXPECT_EQ(map->workTreeReads(), ++reads);
  settle();
  EXPECT_TRUE(earlier(*map, "src/z.c").empty());
  EXPECT_TRUE(earlier(*map, "src/z.c").empty());
  reads += 1;  // the last read was stamped moments after the index changed (the index is stamped, never watched)
  EXPECT_EQ(map->workTreeReads(), reads);

  // A directory of HEAD's tree moved away whole, then made again with its file back under another name.
  move("src/deep", "elsewhere");
  EXPECT_TRUE(earlier(*map, "src/deep/w.c").empty());
  EXPECT_EQ(map->workTreeReads(), ++reads);
  std::filesystem::create_directories(repo_.dir() + "/src/deep");
  move("elsewhere/x.c", "src/deep/w.c");
  EXPECT_EQ(earlier(*map, "src/deep/w.c"), std::vector<std::string>{"src/deep/x.c"});
  EXPECT_EQ(map->workTreeReads(), ++reads);
  // The directory made again is watched as well: a move inside it alone is seen.
  move("src/deep/w.c", "src/deep/x.c");
  EXPECT_TRUE(earlier(*map, "src/deep/w.c").empty());
  EXPECT_EQ(map->workTreeReads(), ++reads);
}

INSTANTIATE_TEST_SUITE_P(WatchedAndStamped, RenameMapWorkTreeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Watched" : "Stamped"; });

// The renames found for a set of queried paths are kept with the queried files' stamps: asked again they cost no
// search, and a file rewritten in place (its directory's times unchanged) is searched for again, so a rename it no
// longer is never comes back.
TEST_F(RenameMapTest, ARenameFoundOnDiskIsKeptOnlyWhileTheQueriedFileIsUnchanged) {
  auto map = open("", false, settlingQuickly());
  move("src/a.c", "src/b.c");
  settle();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->renameSearches(), 1u);
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->renameSearches(), 1u);  // the same paths, nothing changed: the kept answer
  EXPECT_TRUE(map->renamedFrom({"src/b.c", "src/c.c"}).size() == 1);
  EXPECT_EQ(map->renameSearches(), 2u);  // another set of paths is another search

  // Rewritten in place: nothing like a.c any more, and src's times are as they were.
  testing::writeFile(repo_.dir() + "/src/b.c", body("unrelated"));
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->renameSearches(), 3u);
  EXPECT_EQ(map->workTreeReads(), 1u);  // the deleted files were not read again: only the search saw the edit
  settle();
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());  // stamped too soon after the edit: searched again
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->renameSearches(), 4u);
}

// An ignored file is no rename's target. A kept answer stands only while the ignore files that rule on its queried
// paths are as they were: an in-place edit of .gitignore or of the repository's info/exclude (no directory entry
// comes or goes, so neither the watch nor a directory's times show it) is searched again, so a file ignored since
// does not keep the rename it was.
TEST_F(RenameMapTest, ARenameFoundOnDiskIsSearchedAgainWhenAnIgnoreFileChanges) {
  const std::string gitignore = repo_.dir() + "/.gitignore";
  const std::string exclude = repo_.dir() + "/.git/info/exclude";
  testing::writeFile(gitignore, "*.o\n");
  testing::writeFile(exclude, "");
  auto map = open("", false, settlingQuickly());
  move("src/a.c", "src/b.c");
  settle();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->renameSearches(), 1u);

  auto appendTo = [](const std::string& path, const std::string& line) {
    std::ofstream(path, std::ios::app) << line;  // in place: the same inode, no entry made or removed
  };
  appendTo(gitignore, "src/b.c\n");
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->renameSearches(), 2u);

  testing::writeFile(gitignore, "*.o\n");  // rewritten in place: b.c is untracked again
  settle();
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->renameSearches(), 3u);

  appendTo(exclude, "b.c\n");
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->renameSearches(), 4u);
  EXPECT_EQ(map->workTreeReads(), 1u);  // the deleted files were read once: only the searches saw the edits
}

TEST_F(RenameMapTest, AWorkTreeChangedMomentsAgoIsReadOnEveryLookup) {
  // Directories and an index changed within the settle time (2 s by default) prove nothing by their times: a
  // second change in the same clock tick would leave them as they are. Without a watch, the directories' times are
  // all there is; with one, the index written moments ago still is.
  for (const bool watched : {false, true}) {
    RenameOptions options;
    options.watchDirectories = watched;
    auto map = open("", false, options);
    EXPECT_TRUE(earlier(*map, "src/b.c").empty());
    EXPECT_TRUE(earlier(*map, "src/b.c").empty());
    EXPECT_EQ(map->workTreeReads(), 2u) << (watched ? "watched" : "stamped");
  }
}

// With the directories watched, a move made right after a read (within the same clock tick, where a directory's
// time could stay as it was) is still seen, and a read right after a change is trusted from then on.
TEST_F(RenameMapTest, AWatchSeesAMoveMadeRightAfterARead) {
  if (!watchable(repo_.dir())) GTEST_SKIP() << repo_.dir() << " cannot be watched here";
  auto map = open("", false, settlingQuickly());
  settle();  // the index settles
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  move("src/a.c", "src/b.c");
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(earlier(*map, "src/b.c"), std::vector<std::string>{"src/a.c"});
  EXPECT_EQ(map->workTreeReads(), 2u);
  move("src/b.c", "src/a.c");
  EXPECT_TRUE(earlier(*map, "src/b.c").empty());
  EXPECT_EQ(map->workTreeReads(), 3u);
}

}  // namespace
}  // namespace memq
