// The repository's HEAD as a request sees it, through the Service with a real git repository: a recall, a co-change
// or a blast-radius request made right after a commit counts that commit, though the repository signals looked at
// HEAD a moment before (they re-read it on their own at most once a second).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/service/service.h"
#include "tests/service/git_service.h"

namespace memq {
namespace {

using memq::testing::GitServiceTest;

class RepoHeadTest : public GitServiceTest {
 protected:
  RepoHeadTest() : GitServiceTest("repo-head-test") {}

  void SetUp() override {
    GitServiceTest::SetUp();
    // Each file in a commit of its own: no two have changed together yet.
    repo_->touch({"src/a.c"});
    repo_->touch({"src/c.c"});
    startService();
    connect(client_);
  }

  // Whether the recall for src/a.c returns `id` as a co-change neighbour of it.
  bool cameAsCochange(const std::string& id) {
    RecallRequest request;
    request.query = "queue drain ordering";
    request.files = {"src/a.c"};
    request.limit = 10;
    request.threshold = 0;
    auto hits = service_->recall(ctx(client_), RecallParams{request, /*markUsed=*/false});
    EXPECT_TRUE(hits.isOk()) << hits.status().toString();
    if (!hits.isOk()) return false;
    for (const auto& h : hits->hits) {
      if (h.memory.id == id) return h.signals.cochangeAffinity;
    }
    return false;
  }

  ClientState client_;
};

TEST_F(RepoHeadTest, ARecallRightAfterACommitCountsItsCoChanges) {
  SaveInput in;
  in.summary = "the worker pool's shutdown waits for every job";
  in.files = {FileEntry("src/c.c")};
  auto saved = service_->save(ctx(client_), in);
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  EXPECT_FALSE(cameAsCochange(saved->id)) << "src/a.c and src/c.c have not changed together";
  // Changed together twice, committed between two recalls a few milliseconds apart.
  repo_->touch({"src/a.c", "src/c.c"});
  repo_->touch({"src/a.c", "src/c.c"});
  EXPECT_TRUE(cameAsCochange(saved->id));
}

TEST_F(RepoHeadTest, ACoChangeRequestRightAfterACommitNamesItsHead) {
  CochangeRequest request;
  request.file = "src/a.c";
  request.limit = 5;
  auto first = service_->repoCochange(ctx(client_), request);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_TRUE(first->neighbors.empty());
  repo_->touch({"src/a.c", "src/c.c"});
  const std::string head = repo_->touch({"src/a.c", "src/c.c"});
  auto second = service_->repoCochange(ctx(client_), request);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(second->head, head);
  ASSERT_EQ(second->neighbors.size(), 1u);
  EXPECT_EQ(second->neighbors[0].path, "src/c.c");
}

TEST_F(RepoHeadTest, ABlastRadiusRequestRightAfterACommitCountsItsIncludes) {
  repo_->commit({{"src/c.h", "int c(void);\n"}}, "a header nothing includes");
  FileRequest request;
  request.file = "src/c.h";
  auto first = service_->repoBlastRadius(ctx(client_), request);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(first->radius, 0);
  repo_->commit({{"src/a.c", "#include \"c.h\"\nint a(void) { return c(); }\n"}}, "a.c includes it");
  auto second = service_->repoBlastRadius(ctx(client_), request);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_EQ(second->radius, 1);
  EXPECT_EQ(second->dependents, std::vector<std::string>{"src/a.c"});
}

}  // namespace
}  // namespace memq
