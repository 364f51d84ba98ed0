// CopySources with real repositories: a file HEAD does not have is traced to the HEAD file it was copied or moved
// from (and edited), and nothing else is: not a file HEAD has, not unrelated content, not another extension.
#include <gtest/gtest.h>

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

TEST(CopySourcesOutsideGit, NothingHasASource) {
  CopySources none(nullptr);
  EXPECT_EQ(none.sourceOf(std::string(40, '0'), "a.c", numbered(100, "a"), blobIdOf(numbered(100, "a"))), std::nullopt);
}

}  // namespace
}  // namespace memq
