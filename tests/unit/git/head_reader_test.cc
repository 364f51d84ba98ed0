// Unit tests of HeadReader over real repositories built with the git command line: HEAD kept while its files are
// unchanged, and every way HEAD moves seen at once (a commit, a branch switch, a detached HEAD, a reset, refs
// packed and then moved, packed-refs rewritten, a linked worktree's own HEAD); an unborn branch, a HEAD outside
// refs/heads, a branch that is itself symbolic and files changed moments ago resolved on every read.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "daemon/git/head_reader.h"
#include "unit/git/git_fixture.h"

namespace memq {
namespace {

using testing::GitRepo;
using testing::TempDir;

constexpr int64_t kSettleNs = 40'000'000;  // 40 ms: the tests wait 100 ms for a change to settle

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

class HeadReaderTest : public ::testing::Test {
 protected:
  HeadReaderTest() : repo_(dir_.path() + "/repo") { repo_.commit({{"a.c", "one\n"}}, "start"); }

  void SetUp() override { repository_ = open(repo_.dir()); }

  static RepositoryPtr open(const std::string& dir) {
    ensureLibgit2();
    git_repository* raw = nullptr;
    EXPECT_EQ(git_repository_open(&raw, dir.c_str()), 0);
    return RepositoryPtr(raw);
  }

  // HEAD as `reader` reads it, as 40-hex ("" when none).
  std::string read(HeadReader& reader, git_repository* repository = nullptr) {
    const std::optional<git_oid> oid = reader.read(repository != nullptr ? repository : repository_.get());
    return oid ? oidHex(*oid) : "";
  }

  TempDir dir_;
  GitRepo repo_;
  RepositoryPtr repository_;
};

TEST_F(HeadReaderTest, HeadIsResolvedOnceWhileItsFilesAreUnchanged) {
  settle();
  HeadReader reader(kSettleNs);
  EXPECT_EQ(read(reader), repo_.rev("HEAD"));
  EXPECT_EQ(read(reader), repo_.rev("HEAD"));
  EXPECT_EQ(read(reader), repo_.rev("HEAD"));
  EXPECT_EQ(reader.resolutions(), 1u);
}

TEST_F(HeadReaderTest, EveryMoveOfHeadIsSeenByTheNextRead) {
  settle();
  HeadReader reader(kSettleNs);
  const std::string first = repo_.rev("HEAD");
  EXPECT_EQ(read(reader), first);

  const std::string second = repo_.commit({{"a.c", "two\n"}});  // the branch's loose ref rewritten
  EXPECT_EQ(read(reader), second);

  repo_.git("checkout -q -b side " + first);  // HEAD names another branch
  EXPECT_EQ(read(reader), first);

  repo_.git("checkout -q --detach main");  // HEAD holds the commit itself
  EXPECT_EQ(read(reader), second);
  repo_.git("checkout -q --detach " + first);
  EXPECT_EQ(read(reader), first);

  repo_.git("checkout -q main");
  repo_.git("pack-refs --all");  // the loose ref removed: the branch only in packed-refs
  EXPECT_EQ(read(reader), second);
  repo_.git("update-ref refs/heads/main " + first);  // moved by a new loose ref beside the packed one
  EXPECT_EQ(read(reader), first);
  repo_.git("reset -q --hard " + second);
  EXPECT_EQ(read(reader), second);
  repo_.git("pack-refs --all");
  settle();
  EXPECT_EQ(read(reader), second);
  EXPECT_EQ(read(reader), second);  // kept
  // packed-refs rewritten by another tool, the branch still only there.
  std::string packed;
  {
    std::ifstream in(repo_.dir() + "/.git/packed-refs");
    packed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_NE(packed.find(second), std::string::npos);
  packed.replace(packed.find(second), second.size(), first);
  testing::writeFile(repo_.dir() + "/.git/packed-refs", packed);
  EXPECT_EQ(read(reader), first);
  repo_.git("reset -q --hard " + second);
  EXPECT_EQ(read(reader), second);

  settle();
  const size_t resolutions = reader.resolutions();
  EXPECT_EQ(read(reader), second);
  EXPECT_EQ(read(reader), second);
  EXPECT_EQ(reader.resolutions(), resolutions + 1);  // settled again: kept from the first of these two reads
}

TEST_F(HeadReaderTest, ALinkedWorktreeReadsItsOwnHead) {
  const std::string first = repo_.rev("HEAD");
  repo_.git("worktree add -q -b other " + testing::shellQuote(dir_.path() + "/linked"));
  const std::string second = repo_.commit({{"a.c", "two\n"}});
  RepositoryPtr linked = open(dir_.path() + "/linked");
  settle();
  HeadReader mainReader(kSettleNs), linkedReader(kSettleNs);
  EXPECT_EQ(read(mainReader), second);
  EXPECT_EQ(read(linkedReader, linked.get()), first);
  GitRepo linkedRepo(dir_.path() + "/linked", false);
  const std::string third = linkedRepo.commit({{"b.c", "three\n"}});
  EXPECT_EQ(read(linkedReader, linked.get()), third);
  EXPECT_EQ(read(mainReader), second);
}

TEST_F(HeadReaderTest, AnUnbornBranchIsNoHeadAndIsResolvedEveryTime) {
  GitRepo empty(dir_.path() + "/empty");
  RepositoryPtr repository = open(empty.dir());
  settle();
  HeadReader reader(kSettleNs);
  EXPECT_EQ(read(reader, repository.get()), "");
  EXPECT_EQ(read(reader, repository.get()), "");
  EXPECT_EQ(reader.resolutions(), 2u);
  const std::string first = empty.commit({{"a.c", "one\n"}});
  EXPECT_EQ(read(reader, repository.get()), first);
}

TEST_F(HeadReaderTest, AHeadOutsideRefsHeadsIsResolvedOnEveryRead) {
  // Such a ref may live in a linked worktree's own git dir, whose stamps the reader does not take: never kept.
  const std::string first = repo_.rev("HEAD");
  const std::string second = repo_.commit({{"a.c", "two\n"}});
  repo_.git("update-ref refs/custom/tip " + first);
  repo_.git("symbolic-ref HEAD refs/custom/tip");
  settle();
  HeadReader reader(kSettleNs);
  EXPECT_EQ(read(reader), first);
  EXPECT_EQ(read(reader), first);
  EXPECT_EQ(reader.resolutions(), 2u);
  repo_.git("update-ref refs/custom/tip " + second);
  EXPECT_EQ(read(reader), second);
}

TEST_F(HeadReaderTest, ABranchThatIsItselfSymbolicIsResolvedOnEveryRead) {
  const std::string first = repo_.rev("HEAD");
  const std::string second = repo_.commit({{"a.c", "two\n"}});
  repo_.git("branch -q old " + first);
  repo_.git("symbolic-ref refs/heads/alias refs/heads/old");
  repo_.git("symbolic-ref HEAD refs/heads/alias");
  settle();
  HeadReader reader(kSettleNs);
  EXPECT_EQ(read(reader), first);
  EXPECT_EQ(read(reader), first);
  EXPECT_EQ(reader.resolutions(), 2u);
  repo_.git("symbolic-ref refs/heads/alias refs/heads/main");  // the alias's target moves; HEAD's file does not
  EXPECT_EQ(read(reader), second);
}

TEST_F(HeadReaderTest, FilesChangedMomentsAgoAreResolvedOnEveryRead) {
  // A ref rewritten twice within one clock tick could keep its stamp: a stamp younger than the settle time proves
  // nothing.
  HeadReader reader;  // the default two seconds; the commit was made just now
  EXPECT_EQ(read(reader), repo_.rev("HEAD"));
  EXPECT_EQ(read(reader), repo_.rev("HEAD"));
  EXPECT_EQ(reader.resolutions(), 2u);
}

}  // namespace
}  // namespace memq
