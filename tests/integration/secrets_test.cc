// Secrets over the wire: a save (or update, or import) holding credentials is stored redacted and says so in
// `redactions`; with --secrets=refuse it is refused naming the field and the kind, and nothing is written. In both
// modes the secret reaches neither the daemon's log, nor the audit journal, nor any byte of the data directory.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <sstream>

#include "daemon/service/file_anchors.h"
#include "daemon/util/base64.h"
#include "memqd_fixture.h"
#include "protocol/error_code.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

// Assembled at run time so that this source file is not itself a credential a scanner would flag.
const std::string kAws = std::string("AKIA") + "Q3EGRJ7N2XW5Z4MC";
const std::string kGithub = std::string("ghp_") + "Zq8Vf3LmN0pR6sT1uW4xY7zA2bC5dE9gH1jK";
const std::string kPemBody = "MIIEowIBAAKCAQEAw7Zq1Jk9Lx3mP0aR8tV2nB6yC4eF1gH5iJ0kL7oQ";
const std::string kPem = "-----BEGIN RSA PRIVATE KEY-----\n" + kPemBody + "\nZ9yX8wV7u6T5s4R3q2P1o0N==\n" +
                         "-----END RSA PRIVATE KEY-----";
const std::string kDbPassword = "Wq7#vL2!mZ9pK4xR";
const std::string kConnPassword = "n8Rt5Yq2Zx7Lp3Vb";
const std::string kUpdatePassword = "Tr0ub4dor&3xQz81";
const std::string kImportToken = std::string("glpat-") + "Hk3Lm9Qp2Rs7Tv4Wx8Yz";

// Every file under the data dir (databases, WAL, shm), the log, and the journal as audit/list shows it.
// `control` is text known to be stored: finding it proves the byte search looks in the right place.
void expectNowhere(Memqd& daemon, const std::string& project, RpcClient& c, const std::vector<std::string>& secrets,
                   const std::string& control, const std::string& where) {
  std::string log = daemon.log();
  auto audit = c.call("audit/list", {{"limit", 1000}});
  ASSERT_TRUE(audit.isOk()) << audit.status().toString();
  std::string journal = audit->dump();
  std::vector<std::pair<std::string, std::string>> files;
  // The data dir (global scope) and the project (its scope lives in <root>/.memq): every file, WAL and shm included.
  for (const auto& dir : {fs::path(daemon.dataDir()), fs::path(project)}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) files.emplace_back(e.path().string(), readTextFile(e.path()));
    }
  }
  bool sawProjectDb = false;
  for (const auto& [path, bytes] : files) sawProjectDb |= path.find("/.memq/memory.db") != std::string::npos;
  EXPECT_TRUE(sawProjectDb) << where << ": the project database was not among the files searched";
  bool sawControl = false;
  for (const auto& [path, bytes] : files) sawControl |= bytes.find(control) != std::string::npos;
  EXPECT_TRUE(sawControl) << where << ": '" << control << "' is in no file; is the search looking in the right place?";
  ASSERT_FALSE(files.empty());
  for (const auto& s : secrets) {
    EXPECT_EQ(log.find(s), std::string::npos) << where << ": the log holds a secret";
    EXPECT_EQ(journal.find(s), std::string::npos) << where << ": the audit journal holds a secret";
    for (const auto& [path, bytes] : files) {
      EXPECT_EQ(bytes.find(s), std::string::npos) << where << ": " << path << " holds a secret";
    }
  }
}

// Each test starts its daemon with its own flags (redact or refuse), always logging at trace level so that a
// secret written to the log at any level would be found.
class SecretsTest : public MemqdTest {
 protected:
  void start(std::vector<std::string> args) {
    makeWorkDir("sec");
    fs::create_directories(project_ + "/src");
    args.push_back("--log-level");
    args.push_back("trace");
    startDaemon(std::move(args));
  }
};

std::vector<std::string> allSecrets() {
  return {kAws, kGithub, kPemBody, kDbPassword, kConnPassword, kUpdatePassword, kImportToken};
}

TEST_F(SecretsTest, ASaveIsRedactedBeforeItIsStoredAndTheResultListsTheRedactions) {
  start({});
  RpcClient c = daemon_->client(project_);
  json params = {{"summary", "CI deploys with key " + kAws + " from the vault"},
                 {"details", "The deploy key:\n" + kPem + "\nDB_PASSWORD=" + kDbPassword +
                                 "\nDATABASE_URL=postgres://app:" + kConnPassword + "@db.internal:5432/prod"},
                 {"topics", {"deploy", kGithub}},
                 {"category", "context"}};
  auto r = c.call("memory/save", params);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ((*r)["status"], "created");
  json expected = json::array({{{"kind", "aws_access_key"}, {"field", "summary"}},
                               {{"kind", "private_key"}, {"field", "details"}},
                               {{"kind", "password"}, {"field", "details"}},
                               {{"kind", "connection_string"}, {"field", "details"}},
                               {{"kind", "github_token"}, {"field", "topics[1]"}}});
  EXPECT_EQ((*r)["redactions"], expected);
  for (const auto& s : allSecrets()) EXPECT_EQ(r->dump().find(s), std::string::npos) << "the reply holds a secret";

  auto m = c.call("memory/get", {{"id", (*r)["id"]}});
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ((*m)["summary"], "CI deploys with key [REDACTED:aws_access_key] from the vault");
  EXPECT_EQ((*m)["details"], "The deploy key:\n[REDACTED:private_key]\nDB_PASSWORD=[REDACTED:password]\n"
                             "DATABASE_URL=postgres://app:[REDACTED:connection_string]@db.internal:5432/prod");
  EXPECT_EQ((*m)["topics"], json::array({"deploy", "[REDACTED:github_token]"}));

  // Searching for the secret brings no trace of it back; the prose around it still finds the memory.
  auto hit = c.call("memory/search", {{"query", kAws}});
  ASSERT_TRUE(hit.isOk()) << hit.status().toString();
  EXPECT_EQ(hit->dump().find(kAws), std::string::npos);
  auto prose = c.call("memory/search", {{"query", "deploys vault"}});
  ASSERT_TRUE(prose.isOk());
  EXPECT_NE(prose->dump().find((*r)["id"].get<std::string>()), std::string::npos);

  // Saving the same text again dedups onto the redacted memory (the content hash is of the redacted text).
  auto again = c.call("memory/save", params);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ((*again)["status"], "deduped");
  EXPECT_EQ((*again)["id"], (*r)["id"]);

  // memory/update redacts the same way.
  auto u = c.call("memory/update", {{"id", (*r)["id"]}, {"details", "rotated: password: " + kUpdatePassword}});
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  EXPECT_EQ((*u)["details"], "rotated: password: [REDACTED:password]");

  // import too.
  auto imp = c.call("import", {{"jsonl", json{{"summary", "mirror token " + kImportToken}}.dump() + "\n"}});
  ASSERT_TRUE(imp.isOk()) << imp.status().toString();
  EXPECT_EQ((*imp)["created"], 1);
  auto listed = c.call("memory/list", {{"limit", 10}});
  ASSERT_TRUE(listed.isOk());
  EXPECT_NE(listed->dump().find("mirror token [REDACTED:gitlab_token]"), std::string::npos) << listed->dump();

  expectNowhere(*daemon_, project_, c, allSecrets(), "key [REDACTED:aws_access_key] from the vault", "redact, daemon running");
  daemon_->stop();
  ASSERT_TRUE(daemon_->start());
  RpcClient after = daemon_->client(project_);
  expectNowhere(*daemon_, project_, after, allSecrets(), "key [REDACTED:aws_access_key] from the vault", "redact, after a restart");
}

// The files of the scopes' data only: the data dir and the project's .memq (not the project's own files, which hold
// the credential the test put there), every byte of each.
std::string scopeDataBytes(const Memqd& daemon, const std::string& project) {
  std::string all;
  for (const auto& dir : {fs::path(daemon.dataDir()), fs::path(project) / ".memq"}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) all += readTextFile(e.path());
    }
  }
  return all;
}

// Lines anchored in a file the repository does not hold are kept by memq itself, byte for byte, so they cannot be
// redacted: a version holding a credential (an .env) is not kept, saved or imported. The anchor keeps its lines.
TEST_F(SecretsTest, AFileVersionHoldingACredentialIsNotKeptByASaveOrAnImport) {
  start({});
  RpcClient c = daemon_->client(project_);
  writeTextFile(fs::path(project_) / ".env", "APP_ENV=production\nDB_PASSWORD=" + kDbPassword + "\n");
  writeTextFile(fs::path(project_) / "src/settings.c", "int port = 8080;\nint workers = 4;\n");
  auto r = c.call("memory/save", {{"summary", "production settings live in .env and src/settings.c"},
                                  {"files", {{{"path", ".env"}, {"lines", {{1, 1}}}},
                                             {{"path", "src/settings.c"}, {"lines", {{2, 2}}}}}}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ((*r)["status"], "created");
  const std::string warnings = (*r)["warnings"].dump();
  EXPECT_NE(warnings.find("files[0]: .env is not in the repository and holds a credential (password)"),
            std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("settings.c"), std::string::npos) << warnings;
  EXPECT_EQ(r->dump().find(kDbPassword), std::string::npos);
  auto m = c.call("memory/get", {{"id", (*r)["id"]}});
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ((*m)["files"].size(), 2u) << m->dump();

  // An import of a line that carries such a version (an export written by hand, or before this rule).
  const std::string oldEnv = "DB_PASSWORD=" + kConnPassword + "\n";
  json line = {{"type", "memory"},
               {"summary", "the staging settings were in the old .env"},
               {"files", {{{"path", ".env.staging"}, {"lines", {{1, 1}}}, {"blob", gitBlobId(oldEnv)},
                           {"kept", base64Encode(oldEnv)}}}}};
  auto imp = c.call("import", {{"jsonl", line.dump() + "\n"}});
  ASSERT_TRUE(imp.isOk()) << imp.status().toString();
  EXPECT_EQ((*imp)["created"], 1);

  // Neither version is in any byte of the scopes' data, nor in an export; the version without one is.
  const std::string stored = scopeDataBytes(*daemon_, project_);
  EXPECT_NE(stored.find("int workers = 4;"), std::string::npos) << "the version without a credential is kept";
  EXPECT_EQ(stored.find(kDbPassword), std::string::npos);
  EXPECT_EQ(stored.find(kConnPassword), std::string::npos);
  auto exported = c.call("export", json::object());
  ASSERT_TRUE(exported.isOk()) << exported.status().toString();
  std::istringstream in((*exported)["jsonl"].get<std::string>());
  size_t versions = 0;
  for (std::string text; std::getline(in, text);) {
    const json j = json::parse(text);
    if (j["type"] != "version") continue;
    ++versions;
    EXPECT_EQ(j["blob"], gitBlobId("int port = 8080;\nint workers = 4;\n")) << text.substr(0, 200);
  }
  EXPECT_EQ(versions, 1u);

  // A version kept before memq refused to keep such versions (written here into the database by hand) is not
  // exported: the memory's line names its anchor without `kept`, and no version line carries it.
  daemon_->stop();
  {
    SQLite::Database db(project_ + "/.memq/memory.db", SQLite::OPEN_READWRITE);
    SQLite::Statement q(db, "UPDATE anchor_versions SET content = ? WHERE blob_id = ?");
    const std::string leaked = "int port = 8080;\nDB_PASSWORD=" + kUpdatePassword + "\n";
    q.bind(1, leaked.data(), static_cast<int>(leaked.size()));
    q.bind(2, gitBlobId("int port = 8080;\nint workers = 4;\n"));
    ASSERT_EQ(q.exec(), 1);
  }
  ASSERT_TRUE(daemon_->start());
  RpcClient after = daemon_->client(project_);
  auto again = after.call("export", json::object());
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  const std::string jsonl = (*again)["jsonl"].get<std::string>();
  EXPECT_EQ(jsonl.find("\"type\":\"version\""), std::string::npos) << jsonl.substr(0, 400);
  EXPECT_EQ(jsonl.find("\"kept\""), std::string::npos) << jsonl.substr(0, 400);
  EXPECT_NE(jsonl.find("src/settings.c"), std::string::npos) << "the anchor is still exported";
}

TEST_F(SecretsTest, OrdinaryTextIsStoredUnchangedWithNoRedactions) {
  start({});
  RpcClient c = daemon_->client(project_);
  std::string summary = "Fixed in 3f2a9c8e1b7d4a6f0c5e2d9b8a7f6e5d4c3b2a19; see src/secrets/token_store.cc";
  std::string details = "Session 550e8400-e29b-41d4-a716-446655440000 reset the password field; token: parser fix. "
                        "api_key=<your key> and password: changeme are placeholders.";
  auto r = c.call("memory/save", {{"summary", summary}, {"details", details}, {"topics", {"auth", "tokens"}}});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ((*r)["redactions"], json::array());
  auto m = c.call("memory/get", {{"id", (*r)["id"]}});
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ((*m)["summary"], summary);
  EXPECT_EQ((*m)["details"], details);
}

TEST_F(SecretsTest, RefuseModeRefusesNamingTheFieldAndKindAndWritesNothing) {
  start({"--secrets=refuse"});
  RpcClient c = daemon_->client(project_);
  auto ok = c.call("memory/save", {{"summary", "A harmless memory"}});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  auto countEvents = [&] {
    auto a = c.call("audit/list", {{"limit", 1000}});
    return a ? (*a)["events"].size() : size_t{0};
  };
  auto countMemories = [&] {
    auto l = c.call("memory/list", {{"state", "all"}});
    return l ? (*l)["total"].get<int64_t>() : int64_t{-1};
  };
  const size_t events = countEvents();
  const int64_t memories = countMemories();

  struct Case {
    std::string method;
    json params;
    std::string field;
    std::string kind;
  } cases[] = {
      {"memory/save", {{"summary", "key " + kAws}}, "summary", "aws_access_key"},
      {"memory/save", {{"summary", "deploy"}, {"details", kPem}}, "details", "private_key"},
      {"memory/save", {{"summary", "deploy"}, {"details", "DB_PASSWORD=" + kDbPassword}}, "details", "password"},
      {"memory/save", {{"summary", "x"}, {"topics", {"ok", kGithub}}}, "topics[1]", "github_token"},
      {"memory/save", {{"summary", "db at postgres://app:" + kConnPassword + "@db/prod"}}, "summary",
       "connection_string"},
      {"memory/update", {{"id", (*ok)["id"]}, {"details", "password: " + kUpdatePassword}}, "details", "password"},
      {"import", {{"jsonl", json{{"summary", "mirror " + kImportToken}}.dump() + "\n"}}, "jsonl[line 1].summary",
       "gitlab_token"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.method + " " + tc.field);
    auto r = c.call(tc.method, tc.params);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidParams);
    // An import's line errors name `jsonl` and the line (data.line); the message names the line's field.
    EXPECT_EQ(r.status().data().value("field", ""), tc.method == "import" ? std::string("jsonl") : tc.field);
    if (tc.method == "import") {
      EXPECT_EQ(r.status().data().value("line", 0), 1);
    }
    EXPECT_EQ(r.status().data()["kinds"], json::array({tc.kind}));
    EXPECT_NE(r.status().message().find("credential"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(tc.kind), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(tc.field), std::string::npos) << r.status().message();
    for (const auto& s : allSecrets()) EXPECT_EQ(r.status().toString().find(s), std::string::npos);
    EXPECT_EQ(countMemories(), memories);
    EXPECT_EQ(countEvents(), events);
  }
  auto m = c.call("memory/get", {{"id", (*ok)["id"]}});
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ((*m)["details"], "");
  expectNowhere(*daemon_, project_, c, allSecrets(), "A harmless memory", "refuse");
}

}  // namespace
}  // namespace memq::testing
