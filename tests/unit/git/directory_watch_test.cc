// DirectoryWatch on real directories: an entry created, removed or moved is a change and a write to a file is not;
// rearm drops what was seen and watches a directory made since; no watch is given where it could not see every
// change (a top that is missing, a file system that is not a local disk's).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/git/directory_watch.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(DirectoryWatchTest, EntriesComingAndGoingAreChangesAndWritesAreNot) {
  TempDir tmp;
  const std::string top = tmp.path(), sub = tmp.path() + "/sub";
  fs::create_directories(sub);
  std::ofstream(sub + "/a.c") << "a\n";
  auto watch = DirectoryWatch::open({top, sub});
  if (!watch) GTEST_SKIP() << top << " cannot be watched here";
  EXPECT_FALSE(watch->changed());
  std::ofstream(sub + "/a.c", std::ios::app) << "more\n";  // a write: no entry changed
  EXPECT_FALSE(watch->changed());
  fs::rename(sub + "/a.c", sub + "/b.c");
  EXPECT_TRUE(watch->changed());
  EXPECT_TRUE(watch->changed());  // and from then on

  ASSERT_TRUE(watch->rearm({top, sub}));
  EXPECT_FALSE(watch->changed());
  fs::remove(sub + "/b.c");
  EXPECT_TRUE(watch->changed());

  // A directory of the set missing when armed is seen coming (in its parent), and watched once armed again.
  const std::string later = sub + "/later";
  ASSERT_TRUE(watch->rearm({top, sub, later}));
  fs::create_directories(later);
  EXPECT_TRUE(watch->changed());
  ASSERT_TRUE(watch->rearm({top, sub, later}));
  std::ofstream(later + "/c.c") << "c\n";
  EXPECT_TRUE(watch->changed());
}

TEST(DirectoryWatchTest, NoWatchWhereItCouldMissAChange) {
  TempDir tmp;
  EXPECT_EQ(DirectoryWatch::open({tmp.path() + "/missing"}), nullptr);  // nothing would show the top coming
  EXPECT_EQ(DirectoryWatch::open({}), nullptr);
  EXPECT_EQ(DirectoryWatch::open({"/proc"}), nullptr);  // not a local disk's file system
  std::vector<std::string> tooMany(DirectoryWatch::directoryBudget() + 1, tmp.path());
  EXPECT_EQ(DirectoryWatch::open(tooMany), nullptr);
}

TEST(DirectoryWatchTest, TheBudgetIsTheProcesssNotOneWatchs) {
  // Many projects watched at once must not take more of the user's inotify watches than one may.
  TempDir tmp;
  const size_t budget = DirectoryWatch::directoryBudget();
  ASSERT_EQ(DirectoryWatch::directoriesWatched(), 0u);
  auto most = DirectoryWatch::open(std::vector<std::string>(budget - 1, tmp.path()));
  ASSERT_NE(most, nullptr);
  EXPECT_EQ(DirectoryWatch::directoriesWatched(), budget - 1);
  EXPECT_EQ(DirectoryWatch::open({tmp.path(), tmp.path()}), nullptr) << "past the process's budget";
  auto last = DirectoryWatch::open({tmp.path()});
  ASSERT_NE(last, nullptr);
  // A watch armed again over more directories takes them from the budget too, and gives back what it drops.
  EXPECT_FALSE(last->rearm({tmp.path(), tmp.path()}));
  most.reset();
  EXPECT_EQ(DirectoryWatch::directoriesWatched(), 1u);
  auto next = DirectoryWatch::open({tmp.path(), tmp.path()});
  EXPECT_NE(next, nullptr);
  next.reset();
  last.reset();
  EXPECT_EQ(DirectoryWatch::directoriesWatched(), 0u);
}

}  // namespace
}  // namespace memq
