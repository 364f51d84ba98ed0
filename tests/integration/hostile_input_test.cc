// Hostile input in the fields nobody scanned or bounded, against a real memqd: credentials in a state change's
// `reason`, a save's `session_id`, a file path and `initialize`'s `client_name` (redacted, or refused under
// --secrets=refuse, and found in no log line, audit entry or database byte); a NUL inside `project_root`; a 100 KB
// path; `..` after a symlink; a query naming 256 files, and `memq bench retrieval` passing a change's files through.
#include <gtest/gtest.h>

#include "memqd_fixture.h"
#include "protocol/error_code.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

struct Secret {
  std::string kind;  // what the scanner reports
  std::string text;  // the credential as a user would paste it
  std::string body;  // the part that must be found nowhere
  std::string redacted;  // text as stored in redact mode
};

// Assembled at run time so that this source file is not itself a credential a scanner would flag.
std::vector<Secret> secrets() {
  const std::string github = std::string("Zq8Vf3LmN0pR6sT1uW4x") + "Y7zA2bC5dE9gH1jK";
  const std::string stripe = std::string("51Hx2kLq9ZvN4pT1") + "sR8wYb3Dc7";
  const std::string google = std::string("SyD-9tSrke72PouQM") + "nMX-a7eZSW0jkFMBWY";
  const std::string npm = std::string("a1B2c3D4e5F6g7H8i9J0") + "k1L2m3N4o5P6q7R8";
  const std::string slack = std::string("T024BE7LD/B01ABCDEF12/") + "aB3dE5fG7hI9jK1lM3nO5pQ7";
  const std::string azure = std::string("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2") + "UVErCz4I6tq/K1SZ==";
  const std::string aws = std::string("AKIA") + "Q3EGRJ7N2XW5Z4MC";
  return {
      {"aws_access_key", aws, aws, "[REDACTED:aws_access_key]"},
      {"github_token", "ghp_" + github, github, "[REDACTED:github_token]"},
      {"stripe_key", "sk_" + std::string("live_") + stripe, stripe, "[REDACTED:stripe_key]"},
      {"google_api_key", "AIza" + google, google, "[REDACTED:google_api_key]"},
      {"npm_token", "npm_" + npm, npm, "[REDACTED:npm_token]"},
      {"slack_webhook", "https://hooks.slack.com/services/" + slack, slack,
       "https://hooks.slack.com/services/[REDACTED:slack_webhook]"},
      {"azure_key", "AccountName=memqstore;AccountKey=" + azure, azure.substr(0, 40),
       "AccountName=memqstore;AccountKey=[REDACTED:azure_key]"},
      {"password", "--password Wq7#vL2!mZ9pK4xR", "Wq7#vL2!mZ9pK4xR", "--password [REDACTED:password]"},
  };
}

// Every file under the data dir and the project (databases, WAL, shm, journals), the log, and the audit journal as
// audit/list shows it. `control` is text known to be stored: finding it proves the byte search looks in the right
// place.
void expectNowhere(Memqd& daemon, const std::string& project, RpcClient& c, const std::vector<Secret>& all,
                   const std::string& control, const std::string& where) {
  const std::string log = daemon.log();
  auto audit = c.call("audit/list", {{"limit", 1000}});
  ASSERT_TRUE(audit.isOk()) << audit.status().toString();
  const std::string journal = audit->dump();
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& dir : {fs::path(daemon.dataDir()), fs::path(project)}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) files.emplace_back(e.path().string(), readTextFile(e.path()));
    }
  }
  bool sawControl = false;
  for (const auto& [path, bytes] : files) sawControl |= bytes.find(control) != std::string::npos;
  EXPECT_TRUE(sawControl) << where << ": '" << control << "' is in no file; is the search looking in the right place?";
  for (const auto& s : all) {
    EXPECT_EQ(log.find(s.body), std::string::npos) << where << ": the log holds the " << s.kind;
    EXPECT_EQ(journal.find(s.body), std::string::npos) << where << ": the audit journal holds the " << s.kind;
    for (const auto& [path, bytes] : files) {
      EXPECT_EQ(bytes.find(s.body), std::string::npos) << where << ": " << path << " holds the " << s.kind;
    }
  }
}

class HostileInputTest : public MemqdTest {
 protected:
  // A daemon logging at trace level, so that a secret written to the log at any level would be found.
  void start(std::vector<std::string> args = {}) {
    makeWorkDir("hin");
    fs::create_directories(project_ + "/src");
    args.push_back("--log-level");
    args.push_back("trace");
    startDaemon(std::move(args));
  }
  size_t countEvents(RpcClient& c) {
    auto a = c.call("audit/list", {{"limit", 1000}});
    EXPECT_TRUE(a.isOk()) << a.status().toString();
    return a ? (*a)["events"].size() : size_t{0};
  }
  int64_t countMemories(RpcClient& c) {
    auto l = c.call("memory/list", {{"state", "all"}});
    EXPECT_TRUE(l.isOk()) << l.status().toString();
    return l ? (*l)["total"].get<int64_t>() : -1;
  }
};

// A refusal with InvalidParams naming `field` and the secret's kind, quoting no part of the secret.
void expectRefused(const Result<json>& r, const std::string& field, const Secret& s) {
  ASSERT_FALSE(r.isOk()) << "accepted: " << r->dump();
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << r.status().toString();
  EXPECT_EQ(r.status().data().value("field", ""), field) << r.status().toString();
  EXPECT_EQ(r.status().data().value("kinds", json()), json::array({s.kind})) << r.status().toString();
  EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().toString().find(s.body), std::string::npos) << "the error quotes the secret";
}

TEST_F(HostileInputTest, CredentialsInReasonSessionIdAndClientNameAreRedactedEverywhere) {
  start();
  for (const auto& s : secrets()) {
    SCOPED_TRACE(s.kind);
    // client_name becomes the actor of every audit event this connection causes.
    RpcClient c = daemon_->client(project_, "agent " + s.text);
    auto saved = c.call("memory/save", {{"summary", "memory about " + s.kind}, {"session_id", "sess " + s.text}});
    ASSERT_TRUE(saved.isOk()) << saved.status().toString();
    const std::string id = (*saved)["id"];
    EXPECT_EQ((*saved)["redactions"], json::array({{{"kind", s.kind}, {"field", "session_id"}}}));
    auto got = c.call("memory/get", {{"id", id}});
    ASSERT_TRUE(got.isOk());
    EXPECT_EQ((*got)["session_id"], "sess " + s.redacted);

    auto hidden = c.call("memory/hide", {{"id", id}, {"reason", "leaked " + s.text}});
    ASSERT_TRUE(hidden.isOk()) << hidden.status().toString();
    EXPECT_EQ((*hidden)["state_reason"], "leaked " + s.redacted);
    auto restored = c.call("memory/restore", {{"id", id}, {"reason", "back " + s.text}});
    ASSERT_TRUE(restored.isOk()) << restored.status().toString();
    auto rejected = c.call("memory/reject", {{"id", id}, {"reason", "wrong " + s.text}});
    ASSERT_TRUE(rejected.isOk()) << rejected.status().toString();
    EXPECT_EQ((*rejected)["state_reason"], "wrong " + s.redacted);

    auto events = c.call("audit/list", {{"id", id}, {"limit", 100}});
    ASSERT_TRUE(events.isOk()) << events.status().toString();
    ASSERT_GE((*events)["events"].size(), 4u) << events->dump();
    for (const auto& e : (*events)["events"]) {
      EXPECT_EQ(e["actor"], "agent:agent " + s.redacted) << e.dump();
    }
    EXPECT_EQ(events->dump().find(s.body), std::string::npos) << events->dump();
  }
  RpcClient c = daemon_->client(project_);
  expectNowhere(*daemon_, project_, c, secrets(), "memory about aws_access_key", "redact, daemon running");
  daemon_->stop();
  ASSERT_TRUE(daemon_->start());
  RpcClient after = daemon_->client(project_);
  expectNowhere(*daemon_, project_, after, secrets(), "memory about aws_access_key", "redact, after a restart");
}

TEST_F(HostileInputTest, RefuseModeRefusesEachFreeTextFieldNamingItAndChangesNothing) {
  start({"--secrets=refuse"});
  RpcClient c = daemon_->client(project_);
  auto ok = c.call("memory/save", {{"summary", "A harmless memory"}});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  const std::string id = (*ok)["id"];
  auto hidden = c.call("memory/hide", {{"id", id}, {"reason", "parked"}});
  ASSERT_TRUE(hidden.isOk()) << hidden.status().toString();
  const size_t events = countEvents(c);
  const int64_t memories = countMemories(c);
  for (const auto& s : secrets()) {
    SCOPED_TRACE(s.kind);
    RpcClient fresh = daemon_->connect();
    auto init = fresh.call("initialize", {{"client_name", "agent " + s.text}, {"project_root", project_}});
    expectRefused(init, "client_name", s);
    // A refused initialize leaves the connection as it was: still not initialized.
    auto hint = fresh.call("hints/turn", json::object());
    ASSERT_FALSE(hint.isOk());
    EXPECT_EQ(hint.status().code(), ErrorCode::kNotInitialized);

    expectRefused(c.call("memory/save", {{"summary", "with a session " + s.kind}, {"session_id", "sess " + s.text}}),
                  "session_id", s);
    expectRefused(c.call("memory/restore", {{"id", id}, {"reason", "back " + s.text}}), "reason", s);
    expectRefused(c.call("memory/reject", {{"id", id}, {"reason", "wrong " + s.text}}), "reason", s);
    expectRefused(c.call("memory/hide", {{"id", id}, {"reason", "again " + s.text}}), "reason", s);
    EXPECT_EQ(countEvents(c), events);
    EXPECT_EQ(countMemories(c), memories);
    auto m = c.call("memory/get", {{"id", id}});
    ASSERT_TRUE(m.isOk());
    EXPECT_EQ((*m)["state"], "hidden");
    EXPECT_EQ((*m)["state_reason"], "parked");
  }
  expectNowhere(*daemon_, project_, c, secrets(), "A harmless memory", "refuse");
}

TEST_F(HostileInputTest, ACredentialInAPathIsRefusedNamingTheFieldInEveryMethodAndEveryMode) {
  start();
  RpcClient c = daemon_->client(project_);
  auto ok = c.call("memory/save", {{"summary", "A memory with a file"}, {"files", {"src/ok.c"}}});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  const std::string id = (*ok)["id"];
  const size_t events = countEvents(c);
  for (const auto& s : secrets()) {
    SCOPED_TRACE(s.kind);
    const std::string path = s.text + "/f.txt";
    expectRefused(c.call("memory/save", {{"summary", "file " + s.kind}, {"files", {"src/ok.c", path}}}), "files[1]", s);
    expectRefused(c.call("memory/update", {{"id", id}, {"files", {path}}}), "files[0]", s);
    expectRefused(c.call("memory/attach", {{"id", id}, {"files", {path}}}), "files[0]", s);
    expectRefused(c.call("memory/detach", {{"id", id}, {"files", {path}}}), "files[0]", s);
    expectRefused(c.call("memory/recall", {{"query", "file"}, {"files", {"src/ok.c", path}}}), "files[1]", s);
    expectRefused(c.call("hints/for_tool", {{"tool", "read"}, {"files", {path}}}), "files[0]", s);
    expectRefused(c.call("memory/list", {{"file", path}}), "file", s);
    expectRefused(c.call("repo/cochange", {{"file", path}}), "file", s);
    EXPECT_EQ(countEvents(c), events);
  }
  auto m = c.call("memory/get", {{"id", id}});
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ((*m)["files"], json::array({"src/ok.c"}));
  EXPECT_EQ(countMemories(c), 1);
  expectNowhere(*daemon_, project_, c, secrets(), "A memory with a file", "a path");
}

TEST_F(HostileInputTest, ANulInsideProjectRootIsRefusedNamingItAndNothingLandsInThePrefix) {
  start();
  // The prefix before the NUL is a real project: the file system, handed the path's c_str(), would open it.
  const std::string cut = project_ + std::string("\0/../elsewhere", 14);
  ASSERT_EQ(cut.find('\0'), project_.size());
  RpcClient plain = daemon_->client("");
  auto saved = plain.call("memory/save", {{"project_root", cut}, {"scope", "project"}, {"summary", "lands where?"}});
  ASSERT_FALSE(saved.isOk()) << saved->dump();
  EXPECT_EQ(saved.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(saved.status().data().value("field", ""), "project_root");
  EXPECT_NE(saved.status().message().find("NUL"), std::string::npos) << saved.status().message();
  for (const char* method : {"memory/list", "memory/get", "stats", "export"}) {
    json params = {{"project_root", cut}};
    if (std::string(method) == "memory/get") params["id"] = "00000000";
    auto r = plain.call(method, params);
    ASSERT_FALSE(r.isOk()) << method;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << method;
    EXPECT_EQ(r.status().data().value("field", ""), "project_root") << method;
  }
  RpcClient fresh = daemon_->connect();
  auto init = fresh.call("initialize", {{"client_name", "t"}, {"project_root", cut}});
  ASSERT_FALSE(init.isOk());
  EXPECT_EQ(init.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(init.status().data().value("field", ""), "project_root");
  // Nothing was opened or written in the prefix's project.
  EXPECT_FALSE(fs::exists(project_ + "/.memq")) << "memqd opened the project the NUL cut the path to";
  RpcClient c = daemon_->client(project_);
  auto listed = c.call("memory/list", {{"state", "all"}});
  ASSERT_TRUE(listed.isOk());
  EXPECT_EQ((*listed)["total"], 0);
  // A project_root too long to be a path is refused the same way.
  auto longRoot = plain.call("memory/list", {{"project_root", "/" + std::string(5000, 'd')}});
  ASSERT_FALSE(longRoot.isOk());
  EXPECT_EQ(longRoot.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(longRoot.status().data().value("field", ""), "project_root");
}

TEST_F(HostileInputTest, APathOf100KilobytesIsRefusedNamingTheFieldWithoutQuotingIt) {
  start();
  RpcClient c = daemon_->client(project_);
  const std::string huge = "src/" + std::string(100 * 1024, 'q');
  const std::string marker(512, 'q');  // any quote of the path would hold this
  struct Call {
    std::string method;
    json params;
    std::string field;
  } calls[] = {
      {"memory/save", {{"summary", "long path"}, {"files", {"src/a.c", huge}}}, "files[1]"},
      {"memory/recall", {{"query", "long"}, {"files", {huge}}}, "files[0]"},
      {"hints/for_tool", {{"tool", "edit"}, {"files", {huge}}}, "files[0]"},
      {"memory/list", {{"file", huge}}, "file"},
  };
  for (const auto& call : calls) {
    SCOPED_TRACE(call.method);
    auto r = c.call(call.method, call.params);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
    EXPECT_EQ(r.status().data().value("field", ""), call.field);
    EXPECT_NE(r.status().message().find("4095"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().toString().find(marker), std::string::npos) << "the error quotes the path";
  }
  EXPECT_EQ(countMemories(c), 0);
  EXPECT_EQ(daemon_->log().find(marker), std::string::npos) << "the log quotes the path";
}

TEST_F(HostileInputTest, DotDotAfterASymlinkNamesTheFileTheKernelOpens) {
  start();
  fs::create_directories(project_ + "/lib/deep");
  fs::create_symlink("../lib/deep", project_ + "/src/link");
  writeTextFile(project_ + "/lib/x.c", "int x;\n");
  RpcClient c = daemon_->client(project_);
  auto saved = c.call("memory/save", {{"summary", "x is special"}, {"files", {"src/link/../x.c"}}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  auto stored = c.call("memory/get", {{"id", (*saved)["id"]}});
  ASSERT_TRUE(stored.isOk()) << stored.status().toString();
  // What the kernel opens for src/link/../x.c: lib/deep/../x.c, i.e. lib/x.c (not the lexical src/x.c).
  const fs::path opened = fs::canonical(project_ + "/src/link/../x.c");
  ASSERT_EQ(opened, fs::canonical(project_ + "/lib/x.c"));
  EXPECT_EQ((*stored)["files"], json::array({"lib/x.c"}));
  auto byFile = c.call("memory/list", {{"file", "lib/x.c"}});
  ASSERT_TRUE(byFile.isOk());
  EXPECT_EQ((*byFile)["total"], 1);
  // Recall names the file the same way: the memory is found through the symlinked spelling.
  auto recalled = c.call("memory/recall", {{"files", {"src/link/../x.c"}}, {"threshold", 0}});
  ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
  EXPECT_NE(recalled->dump().find((*saved)["id"].get<std::string>()), std::string::npos) << recalled->dump();
  // Climbing out of a symlink that points outside the project lands outside it: Forbidden, although the text
  // (src/x.c, lexically) stays inside.
  fs::create_directories(dir_ / "elsewhere" / "a");
  fs::create_symlink(dir_ / "elsewhere" / "a", project_ + "/src/ext");
  auto outside = c.call("memory/save", {{"summary", "escape"}, {"files", {"src/ext/../x.c"}}});
  ASSERT_FALSE(outside.isOk()) << outside->dump();
  EXPECT_EQ(outside.status().code(), ErrorCode::kForbidden);
  EXPECT_EQ(outside.status().data().value("field", ""), "files[0]");
  EXPECT_EQ(countMemories(c), 1);
}

TEST_F(HostileInputTest, RecallAndHintsNameUpTo256FilesWhileAMemoryHolds16) {
  start();
  RpcClient c = daemon_->client(project_);
  auto saved = c.call("memory/save", {{"summary", "f200 needs care"}, {"category", "gotcha"}, {"files", {"src/f200.c"}}});
  ASSERT_TRUE(saved.isOk()) << saved.status().toString();
  const std::string id = (*saved)["id"];
  json files = json::array();
  for (int i = 0; i < 256; ++i) files.push_back("src/f" + std::to_string(i) + ".c");

  auto recalled = c.call("memory/recall", {{"files", files}, {"threshold", 0}});
  ASSERT_TRUE(recalled.isOk()) << recalled.status().toString();
  ASSERT_FALSE((*recalled)["memories"].empty()) << recalled->dump();
  EXPECT_EQ((*recalled)["memories"][0]["id"], id);
  RpcClient tab = daemon_->client(project_, "hints");
  auto hints = tab.call("hints/for_tool", {{"tool", "edit"}, {"files", files}});
  ASSERT_TRUE(hints.isOk()) << hints.status().toString();
  EXPECT_NE(hints->dump().find(id.substr(0, 8)), std::string::npos) << hints->dump();

  files.push_back("src/one-more.c");
  for (const char* method : {"memory/recall", "hints/for_tool"}) {
    json params = {{"files", files}};
    if (std::string(method) == "hints/for_tool") params["tool"] = "edit";
    auto r = tab.call(method, params);
    ASSERT_FALSE(r.isOk()) << method;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams) << method;
    EXPECT_EQ(r.status().data().value("field", ""), "files") << method << ": " << r.status().toString();
  }
  // What a memory holds stays bounded at 16.
  json seventeen = json::array();
  for (int i = 0; i < 17; ++i) seventeen.push_back("src/g" + std::to_string(i) + ".c");
  auto tooMany = c.call("memory/save", {{"summary", "too many files"}, {"files", seventeen}});
  ASSERT_FALSE(tooMany.isOk());
  EXPECT_EQ(tooMany.status().code(), ErrorCode::kInvalidParams);
  EXPECT_EQ(tooMany.status().data().value("field", ""), "files");
}

TEST_F(HostileInputTest, BenchRetrievalPassesAChangeOfFortyFilesToRecall) {
  start();
  // A corpus of two commits and one query whose change touches 40 files (more than a memory may hold).
  const fs::path dataset = dir_ / "dataset";
  std::string corpus;
  corpus += json{{"id", "c1"}, {"split", 0}, {"created_at", "2024-01-02T03:04:05Z"}, {"summary", "parser: fix the lexer"},
                 {"details", "the lexer dropped the last token"}, {"files", {"src/lexer.c", "src/parser.c"}}}
                .dump() +
            "\n";
  corpus += json{{"id", "c2"}, {"split", 0}, {"created_at", "2024-01-03T03:04:05Z"}, {"summary", "docs: typo"},
                 {"files", {"README.md"}}}
                .dump() +
            "\n";
  json edited = json::array({"src/lexer.c"});
  for (int i = 0; i < 39; ++i) edited.push_back("src/gen/part" + std::to_string(i) + ".c");
  const std::string queries = json{{"qid", 1},
                                   {"split", 0},
                                   {"text", "the lexer drops a token"},
                                   {"edited_files", edited},
                                   {"relevant", {"c1"}}}
                                  .dump() +
                              "\n";
  writeTextFile(dataset / "corpus.jsonl", corpus);
  writeTextFile(dataset / "queries.jsonl", queries);
  CommandResult r = daemon_->memq("bench retrieval --dataset " + shellQuote(dataset.string()) + " --ranker default --json");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  json out = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  ASSERT_EQ(out["rankers"].size(), 1u) << r.out;
  EXPECT_EQ(out["rankers"][0]["queries"], 1) << r.out;
  EXPECT_GT(out["rankers"][0]["r_at_10"].get<double>(), 0.0) << r.out;
}

}  // namespace
}  // namespace memq::testing
