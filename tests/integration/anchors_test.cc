// Anchored file refs against a real memqd: the {path, lines, blob?} form over the socket (replies write an anchored
// ref as an object and a plain one as the string it always was), the schema's refusals, queries with lines, the CLI's
// `--file path:40-60,72`, and anchors (with the content memq keeps) surviving SIGKILL after their saves were
// acknowledged from the save journal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memqd_fixture.h"
#include "raw_conn.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

std::string numberedLines(int n, const std::string& tag = "line") {
  std::string out;
  for (int i = 1; i <= n; ++i) out += tag + " " + std::to_string(i) + "\n";
  return out;
}

std::string fieldOf(const Status& s) {
  return s.data().is_object() && s.data().contains("field") ? s.data()["field"].get<std::string>() : "";
}

class AnchorsIntegrationTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("anchors");
    initGitRepo(project_);
    writeTextFile(fs::path(project_) / "src/a.c", numberedLines(10));
    commitAll(project_, "start");
    startDaemon();
  }
};

TEST_F(AnchorsIntegrationTest, AnAnchoredRefIsAnObjectInEveryReplyAndAPlainOneStaysAString) {
  RpcClient c = daemon_->client(project_);
  auto saved = c.call("memory/save", {{"summary", "the parser's error path"},
                                      {"files", {{{"path", "src/a.c"}, {"lines", {{4, 6}, {2, 2}}}}, "README"}}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  const json& files = (*saved)["memory"]["files"];
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], "README");  // refs in path order
  ASSERT_TRUE(files[1].is_object());
  EXPECT_EQ(files[1]["path"], "src/a.c");
  EXPECT_EQ(files[1]["lines"], json({{2, 2}, {4, 6}}));
  EXPECT_EQ(files[1]["blob"].get<std::string>().size(), 40u);
  const std::string id = (*saved)["id"].get<std::string>();
  auto got = c.call("memory/get", {{"id", id}});
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ((*got)["files"], files);
  auto listed = c.call("memory/list", json::object());
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ((*listed)["memories"][0]["files"], files);
  auto recalled = c.call("memory/recall", {{"files", {{{"path", "src/a.c"}, {"lines", {{5, 5}}}}}}});
  ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
  ASSERT_FALSE((*recalled)["memories"].empty());
  EXPECT_EQ((*recalled)["memories"][0]["files"], files);
  auto hints = c.call("hints/for_tool", {{"tool", "Edit"}, {"files", {{{"path", "src/a.c"}, {"lines", {{5, 5}}}}}}});
  ASSERT_TRUE(hints.isOk()) << hints.status().toString();
}

TEST_F(AnchorsIntegrationTest, MalformedEntriesAreRefusedNamingTheFieldAndNothingIsStored) {
  RpcClient c = daemon_->client(project_);
  struct Case {
    json files;
    std::string field;
  };
  const std::vector<Case> cases = {
      {json::array({{{"path", "src/a.c"}, {"lines", {{1, 2}}}, {"colour", "red"}}}), "files[0].colour"},
      {json::array({{{"path", "src/a.c"}}}), "files[0].lines"},
      {json::array({{{"path", "src/a.c"}, {"lines", {{1}}}}}), "files[0].lines[0]"},
      {json::array({{{"path", "src/a.c"}, {"lines", {{-1, 2}}}}}), "files[0].lines[0][0]"},
      {json::array({{{"path", "src/a.c"}, {"lines", {{3, 1}}}}}), "files[0].lines[0]"},
      {json::array({{{"path", "src/a.c"}, {"lines", {{1, 11}}}}}), "files[0].lines[0]"},
      {json::array({{{"path", "src/a.c"}, {"lines", {{1, 1}}}, {"blob", std::string(40, 'b')}}}), "files[0].blob"},
      {json::array({"src/a.c", 7}), "files[1]"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.files.dump());
    auto r = c.call("memory/save", {{"summary", "refused " + k.files.dump()}, {"files", k.files}});
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << r.status().toString();
    EXPECT_EQ(fieldOf(r.status()), k.field) << r.status().toString();
  }
  // detach names files, not lines.
  auto d = c.call("memory/detach", {{"id", "abcd"}, {"files", {{{"path", "src/a.c"}, {"lines", {{1, 1}}}}}}});
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.status().code(), ErrorCode::kInvalidParams);
  // A query's lines are checked on their own.
  auto q = c.call("memory/recall", {{"files", {{{"path", "src/a.c"}, {"lines", {{0, 1}}}}}}});
  ASSERT_FALSE(q.isOk());
  EXPECT_EQ(fieldOf(q.status()), "files[0].lines[0]");
  auto l = c.call("memory/list", {{"state", "all"}});
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ((*l)["total"], 0);
}

TEST_F(AnchorsIntegrationTest, TheCliSavesAndShowsPathColonLines) {
  CommandResult saved = daemon_->memq("--json save 'jwt expiry is checked here' --file src/a.c:3-5,8 --file README",
                                      project_);
  ASSERT_EQ(saved.exitCode, 0) << saved.err;
  const std::string id = json::parse(saved.out)["id"].get<std::string>();
  CommandResult got = daemon_->memq("get " + id.substr(0, 8), project_);
  ASSERT_EQ(got.exitCode, 0) << got.err;
  EXPECT_NE(got.out.find("README, src/a.c:3-5,8"), std::string::npos) << got.out;
  CommandResult listed = daemon_->memq("list", project_);
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  EXPECT_NE(listed.out.find("src/a.c:3-5,8"), std::string::npos) << listed.out;
  // From a subdirectory, the path is relative to it, as for plain files.
  CommandResult attached = daemon_->memq("attach " + id.substr(0, 8) + " a.c:1", project_ + "/src");
  ASSERT_EQ(attached.exitCode, 0) << attached.err;
  EXPECT_NE(attached.out.find("src/a.c:1"), std::string::npos) << attached.out;
  CommandResult updated = daemon_->memq("update " + id.substr(0, 8) + " --file src/a.c:9-10", project_);
  ASSERT_EQ(updated.exitCode, 0) << updated.err;
  EXPECT_NE(updated.out.find("src/a.c:9-10"), std::string::npos) << updated.out;

  CommandResult recalled = daemon_->memq("--json recall --file src/a.c:9", project_);
  ASSERT_EQ(recalled.exitCode, 0) << recalled.err;
  EXPECT_EQ(json::parse(recalled.out)["memories"][0]["id"], id);
  // A suffix that reads as lines but is not valid is the client's usage error; one past the end is the daemon's.
  CommandResult zero = daemon_->memq("save 'line zero' --file src/a.c:0", project_);
  EXPECT_EQ(zero.exitCode, 2);
  EXPECT_NE(zero.err.find("src/a.c:0"), std::string::npos) << zero.err;
  CommandResult past = daemon_->memq("save 'past the end' --file src/a.c:11", project_);
  EXPECT_EQ(past.exitCode, 1);
  EXPECT_NE(past.err.find("files[0].lines[0]"), std::string::npos) << past.err;
  CommandResult count = daemon_->memq("--json list --state all", project_);
  EXPECT_EQ(json::parse(count.out)["total"], 1);
}

TEST_F(AnchorsIntegrationTest, ARecallThroughTheCliRanksByTheLinesAfterAnEditAboveThem) {
  writeTextFile(fs::path(project_) / "src/b.c", numberedLines(200, "b"));
  commitAll(project_, "b");
  auto saveOn = [&](const std::string& summary, const std::string& lines) {
    CommandResult r = daemon_->memq("--json save '" + summary + "' --file src/b.c:" + lines, project_);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.exitCode == 0 ? json::parse(r.out)["id"].get<std::string>() : std::string();
  };
  const std::string early = saveOn("the token cache is flushed here", "20-30");
  const std::string late = saveOn("the token cache is flushed there", "150-160");
  // Twenty lines inserted at the top, not committed: late's lines are 170-180 now.
  writeTextFile(fs::path(project_) / "src/b.c", numberedLines(20, "new") + numberedLines(200, "b"));
  auto first = [&](const std::string& lines) {
    CommandResult r = daemon_->memq("--json recall 'token cache flushed' --explain --file src/b.c:" + lines, project_);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json out = json::parse(r.out);
    EXPECT_FALSE(out["memories"].empty()) << r.out;
    return out["memories"].empty() ? json() : out["memories"][0];
  };
  json onLate = first("172-175");
  EXPECT_EQ(onLate["id"], late);
  EXPECT_TRUE(onLate.dump().find("lines_owned") != std::string::npos) << onLate.dump();
  EXPECT_EQ(first("42-44")["id"], early);
}

TEST_F(AnchorsIntegrationTest, AnchorsAndKeptContentSurviveSigkillAfterAcknowledgement) {
  // An uncommitted edit: its content is kept by memq, and travels in the save journal.
  writeTextFile(fs::path(project_) / "src/a.c", numberedLines(20, "edited"));
  std::vector<std::string> ids;
  std::vector<uint32_t> lines;  // the line each acknowledged save anchored
  bool replayed = false;
  // Rounds of 300 saves sent back to back on one connection (they join one stream of saves); SIGKILL once the first
  // 150 are acknowledged, while the rest are still being answered, so the batch holding the acknowledged ones is
  // still open and the restart must replay them from the journal, however fast or slow the machine is.
  for (int round = 0; round < 5 && !replayed; ++round) {
    RawConn raw(daemon_->socket());
    ASSERT_TRUE(raw.send(json({{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                               {"params", {{"client_name", "anchors"}, {"project_root", project_}}}})
                             .dump() +
                         "\n"));
    ASSERT_TRUE(raw.readJson().has_value());
    std::string stream;
    for (int i = 0; i < 300; ++i) {
      const int line = 1 + (round * 300 + i) % 20;
      stream += json({{"jsonrpc", "2.0"},
                      {"id", i + 1},
                      {"method", "memory/save"},
                      {"params",
                       {{"summary", "anchored save " + std::to_string(round) + "." + std::to_string(i)},
                        {"files", {{{"path", "src/a.c"}, {"lines", {{line, line}}}}}}}}})
                    .dump() +
                "\n";
    }
    ASSERT_TRUE(raw.send(stream));
    std::vector<json> acknowledged;
    for (int i = 0; i < 150; ++i) {
      auto reply = raw.readJson(std::chrono::milliseconds(60000));
      ASSERT_TRUE(reply.has_value()) << "reply " << i;
      acknowledged.push_back(*reply);
    }
    daemon_->kill9();
    for (const auto& r : acknowledged) {
      ASSERT_TRUE(r.contains("result")) << r.dump();
      const int n = r["id"].get<int>() - 1;
      ids.push_back(r["result"]["id"].get<std::string>());
      lines.push_back(1 + static_cast<uint32_t>((round * 300 + n) % 20));
    }
    ASSERT_TRUE(daemon_->start()) << daemon_->log();
    replayed = daemon_->log().find("from the save journal") != std::string::npos;
  }
  RpcClient after = daemon_->client(project_);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto m = after.call("memory/get", {{"id", ids[i]}});
    ASSERT_TRUE(m.isOk()) << "save " << i << ": " << m.status().toString();
    const json& f = (*m)["files"][0];
    ASSERT_TRUE(f.is_object()) << (*m)["files"].dump();
    EXPECT_EQ(f["lines"], json({{lines[i], lines[i]}}));
  }
  auto stats = after.call("stats", json::object());
  ASSERT_TRUE(stats.isOk());
  EXPECT_EQ((*stats)["scopes"]["project"]["kept_versions"], 1);  // one edit, one copy, however many anchors
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  // Under a sanitizer each save runs several times slower, so the batch is often idle long enough to commit before
  // the kill; what a run must show there is only that nothing acknowledged was lost (above).
  (void)replayed;
#else
  EXPECT_TRUE(replayed) << "no save was replayed from the journal: the test did not cover batched saves";
#endif
}

}  // namespace
}  // namespace memq::testing
