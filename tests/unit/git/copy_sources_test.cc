// CopySources with real repositories: a file HEAD does not have is traced to the HEAD file it was copied or moved
// from (and edited), and nothing else is: not a file HEAD has, not unrelated content, not another extension.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "daemon/git/copy_sources.h"
#include "tests/unit/git/git_fixture.h"

namespace memq {
namespace {

using memq::testing::GitRepo;
using memq::testing::TempDir;

std::string blobIdOf(const std::string& content) {
  git_oid oid;
  ensureLibgit2();
  git_odb_hash(&oid, content.data(), content.size(), GIT_OBJECT_BLOB);
  return oidHex(oid);
}

std::string numbered(int n, const std::string& tag) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += "static int " + tag + "_" + std::to_string(i) + " = " + std::to_string(i) + ";\n";
  return out;
}

class CopySourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = std::make_unique<GitRepo>(tmp_.path() + "/project");
    repo_->commit({{"lib/bpf.c", numbered(300, "bpf")}, {"lib/utils.c", numbered(200, "util")},
                   {"include/bpf.h", numbered(300, "bpf")}},
                  "start");
    git_repository* raw = nullptr;
    ensureLibgit2();
    ASSERT_EQ(git_repository_open(&raw, repo_->dir().c_str()), 0);
    sources_ = std::make_unique<CopySources>(RepositoryPtr(raw));
  }

  std::optional<std::string> sourceOf(const std::string& path, const std::string& content) {
    return sources_->sourceOf(repo_->rev("HEAD^{tree}"), path, content, blobIdOf(content));
  }

  TempDir tmp_;
  std::unique_ptr<GitRepo> repo_;
  std::unique_ptr<CopySources> sources_;
};

TEST_F(CopySourcesTest, AnEditedCopyIsTracedToItsOriginal) {
  std::string edited = "/* legacy loader */\n" + numbered(280, "bpf") + "int added(void);\n";
  EXPECT_EQ(sourceOf("lib/bpf_legacy.c", edited), "lib/bpf.c");
}

TEST_F(CopySourcesTest, AMoveNotYetCommittedIsTracedToTheFileItLeft) {
  repo_->git("mv lib/utils.c lib/helpers.c");
  repo_->write("lib/helpers.c", numbered(190, "util") + "int more(void);\n");
  EXPECT_EQ(sourceOf("lib/helpers.c", numbered(190, "util") + "int more(void);\n"), "lib/utils.c");
}

TEST_F(CopySourcesTest, AFileHeadHasHasNoSource) {
  EXPECT_EQ(sourceOf("lib/utils.c", numbered(300, "bpf")), std::nullopt);
}

TEST_F(CopySourcesTest, UnrelatedContentOrAnotherExtensionHasNoSource) {
  EXPECT_EQ(sourceOf("lib/new.c", numbered(300, "fresh")), std::nullopt);
  // include/bpf.h holds the same lines, but a .c file is not a copy of a header, and lib/bpf.c is a .c.
  EXPECT_EQ(sourceOf("lib/copy.h", numbered(300, "bpf")), "include/bpf.h");
  EXPECT_EQ(sourceOf("lib/copy.txt", numbered(300, "bpf")), std::nullopt);
}

TEST_F(CopySourcesTest, OnceTheCopyIsCommittedItIsItsOwnFile) {
  const std::string copy = numbered(300, "bpf");
  ASSERT_EQ(sourceOf("lib/bpf2.c", copy), "lib/bpf.c");
  repo_->commit({{"lib/bpf2.c", copy}}, "copy");
  EXPECT_EQ(sourceOf("lib/bpf2.c", copy), std::nullopt);
}

// The signature cache is bounded: past its bound a signature is computed for the scan and not kept, so a scan of
// more candidates than it holds computes again only those past it the next time (clearing the cache when it filled
// computed all of them again at every scan); and it keeps only signatures of the tree read last.
TEST(CopySourcesCache, PastItsBoundAScanComputesAgainOnlyTheSignaturesItCouldNotKeep) {
  TempDir tmp;
  GitRepo repo(tmp.path() + "/project");
  std::map<std::string, std::string> files;
  for (int i = 0; i < 6; ++i) files["src/f" + std::to_string(i) + ".c"] = numbered(100, "f" + std::to_string(i));
  repo.commit(files, "six files of one size");
  git_repository* raw = nullptr;
  ensureLibgit2();
  ASSERT_EQ(git_repository_open(&raw, repo.dir().c_str()), 0);
  CopySources sources(RepositoryPtr(raw), /*maxSignatures=*/4);
  const std::string tree = repo.rev("HEAD^{tree}");
  const std::string first = numbered(100, "f2") + "int added_once;\n";
  EXPECT_EQ(sources.sourceOf(tree, "src/new.c", first, blobIdOf(first)), "src/f2.c");
  EXPECT_EQ(sources.signaturesComputed(), 6u);
  // The file edited again: a new blob, so a new scan of the same six candidates.
  const std::string second = first + "int added_twice;\n";
  EXPECT_EQ(sources.sourceOf(tree, "src/new.c", second, blobIdOf(second)), "src/f2.c");
  EXPECT_EQ(sources.signaturesComputed(), 6u + 2u) << "the scan computed again signatures it had kept";
}

TEST(CopySourcesOutsideGit, NothingHasASource) {
  CopySources none(nullptr);
  EXPECT_EQ(none.sourceOf(std::string(40, '0'), "a.c", numbered(100, "a"), blobIdOf(numbered(100, "a"))), std::nullopt);
}

}  // namespace
}  // namespace memq
