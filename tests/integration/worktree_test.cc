// Linked git worktrees (docs/design.md §4): every worktree of a repository shares the one database in the common git dir,
// while repository signals (staleness by blob id, blast radius, co-change) come from the worktree the request's
// project_root names. A real repository with `git worktree add`, a real memqd.
#include <gtest/gtest.h>

#include <set>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

void git(const fs::path& dir, const std::string& args) {
  auto r = runCommand("git -C " + shellQuote(dir.string()) +
                      " -c user.name=memq -c user.email=memq@example.com -c commit.gpgsign=false " + args);
  ASSERT_EQ(r.exitCode, 0) << args << "\n" << r.out << r.err;
}

class WorktreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::canonical(makeTempDir("wt"));
    main_ = dir_ / "main";
    linked_ = dir_ / "linked";
    fs::create_directories(main_);
    ASSERT_EQ(runCommand("git -c init.defaultBranch=main init -q " + shellQuote(main_.string())).exitCode, 0);
    writeTextFile(main_ / "src" / "token.ts", "export const ttl = 60;\n");
    git(main_, "add -A");
    git(main_, "commit -q -m init");
    git(main_, "worktree add -q -b feature " + shellQuote(linked_.string()));
    // The linked worktree moves on: a new dependent of token.ts is committed there, and token.ts itself is edited
    // without committing. The main worktree has neither.
    writeTextFile(linked_ / "src" / "login.ts", "import { ttl } from \"./token\";\nexport const t = ttl;\n");
    git(linked_, "add -A");
    git(linked_, "commit -q -m login");
    writeTextFile(linked_ / "src" / "token.ts", "export const ttl = 3600;\n");
    daemon_ = std::make_unique<Memqd>(dir_);
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
  }
  void TearDown() override {
    daemon_.reset();
    fs::remove_all(dir_);
  }

  fs::path dir_, main_, linked_;
  std::unique_ptr<Memqd> daemon_;
};

TEST_F(WorktreeTest, WorktreesShareMemoriesButEachGetsItsOwnRepositorySignals) {
  // The main worktree is opened first: before the fix, every later worktree got its signals.
  auto onMain = daemon_->connect();
  auto initMain = onMain.call("initialize", {{"client_name", "main"}, {"project_root", main_.string()}});
  ASSERT_TRUE(initMain.isOk()) << initMain.status().toString();
  auto saved = onMain.call("memory/save", {{"summary", "Token TTL is one minute"}, {"files", {"src/token.ts"}}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  const std::string id = (*saved)["id"];

  auto onLinked = daemon_->connect();
  auto initLinked = onLinked.call("initialize", {{"client_name", "linked"}, {"project_root", linked_.string()}});
  ASSERT_TRUE(initLinked.isOk()) << initLinked.status().toString();
  EXPECT_EQ((*initLinked)["project"]["root"], linked_.string());
  EXPECT_EQ((*initLinked)["project"]["db_path"], (*initMain)["project"]["db_path"]);

  // Same memories on both sides.
  auto fromLinked = onLinked.call("memory/get", {{"id", id}});
  ASSERT_TRUE(fromLinked.isOk()) << fromLinked.status().toString();
  auto savedInLinked = onLinked.call(
      "memory/save", {{"summary", "Login reads the TTL"}, {"files", {(linked_ / "src" / "login.ts").string()}}});
  ASSERT_TRUE(savedInLinked.isOk()) << savedInLinked.status().toString();  // an absolute path inside this worktree
  EXPECT_EQ((*savedInLinked)["memory"]["files"], json::array({"src/login.ts"}));
  auto listMain = onMain.call("memory/list", {{"scope", "project"}});
  ASSERT_TRUE(listMain.isOk());
  EXPECT_EQ((*listMain)["total"], 2);

  // Staleness by blob id against each worktree's own files.
  json recall = {{"query", "token ttl"}, {"files", {"src/token.ts"}}, {"mark_used", false}, {"scope", "project"}};
  auto hitsMain = onMain.call("memory/recall", recall);
  auto hitsLinked = onLinked.call("memory/recall", recall);
  ASSERT_TRUE(hitsMain.isOk() && hitsLinked.isOk());
  auto staleOf = [&](const json& hits) -> json {
    for (const auto& h : hits["memories"]) {
      if (h["id"] == id) return h["stale"];
    }
    return nullptr;
  };
  EXPECT_EQ(staleOf(*hitsMain), false) << hitsMain->dump();
  EXPECT_EQ(staleOf(*hitsLinked), true) << hitsLinked->dump();
  auto staleMain = onMain.call("review/stale", json::object());
  auto staleLinked = onLinked.call("review/stale", json::object());
  EXPECT_TRUE((*staleMain)["memories"].empty()) << staleMain->dump();
  ASSERT_EQ((*staleLinked)["memories"].size(), 1u) << staleLinked->dump();
  EXPECT_EQ((*staleLinked)["memories"][0]["changed_files"], json::array({"src/token.ts"}));

  // Blast radius at each worktree's HEAD: login.ts exists only on the linked worktree's branch.
  auto blastMain = onMain.call("repo/blast_radius", {{"file", "src/token.ts"}});
  auto blastLinked = onLinked.call("repo/blast_radius", {{"file", "src/token.ts"}});
  ASSERT_TRUE(blastMain.isOk() && blastLinked.isOk());
  EXPECT_EQ((*blastMain)["radius"], 0) << blastMain->dump();
  EXPECT_EQ((*blastLinked)["radius"], 1) << blastLinked->dump();
  EXPECT_EQ((*blastLinked)["dependents"], json::array({"src/login.ts"}));

  // One database open for the repository, however many worktrees use it.
  auto status = onMain.call("daemon/status", json::object());
  std::set<std::string> projectDbs;
  for (const auto& p : (*status)["open_scopes"]) {
    if (p.get<std::string>().find("/memq/memory.db") != std::string::npos) projectDbs.insert(p.get<std::string>());
  }
  EXPECT_EQ(projectDbs.size(), 1u) << status->dump();
}

}  // namespace
}  // namespace memq::testing
