// The memq command line against a real memqd: every command's --json output, the exit codes of docs/man/memq.1 (0 ok, 1 the
// daemon answered with an error, 2 usage error, 3 unreachable), daemon autostart, start and stop, lossless
// export/import between two daemons, import from the reference's memory.db, `memq review` without a terminal, file
// arguments relative to the working directory; human output's escaping of stored control characters, warnings on
// stderr (from every front end: CLI, MCP, hook, against a scripted daemon), and Ctrl-C while the pager runs.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <set>
#include <sstream>

#include "memqd_fixture.h"

namespace memq::testing {
namespace {

using json = nlohmann::json;

// A small git repository: src/auth/jwt.ts and src/auth/session.ts change together three times.
void makeGitProject(const fs::path& root) {
  initGitRepo(root);
  writeTextFile(root / "README.md", "demo\n");
  writeTextFile(root / "package.json", "{}\n");
  writeTextFile(root / "src/app.ts", "import { verify } from './auth/jwt';\n");
  for (int i = 0; i < 3; ++i) {
    writeTextFile(root / "src/auth/jwt.ts", "export const verify = " + std::to_string(i) + ";\n");
    writeTextFile(root / "src/auth/session.ts", "import { verify } from './jwt';\nexport const v = " + std::to_string(i) + ";\n");
    commitAll(root, "auth change " + std::to_string(i));
  }
}

json parseJson(const CommandResult& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON:\n" << r.out << "\nstderr:\n" << r.err;
  return j;
}

// A JSON array's elements in sorted order, for comparing lists whose order is not part of the contract.
json sorted(json list) {
  std::sort(list.begin(), list.end());
  return list;
}

std::vector<json> parseJsonl(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    out.push_back(j);
  }
  return out;
}

// A temp directory removed when the test leaves its scope, even through a failed ASSERT.
struct ScopedDir {
  fs::path path;
  ~ScopedDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Byte-identical JSONL, reporting only the lines that differ.
void expectSameJsonl(const std::string& actual, const std::string& expected) {
  if (actual == expected) return;
  std::istringstream a(actual), e(expected);
  std::string la, le;
  for (int n = 1;; ++n) {
    bool ha = static_cast<bool>(std::getline(a, la)), he = static_cast<bool>(std::getline(e, le));
    if (!ha && !he) break;
    if (!ha || !he || la != le) {
      ADD_FAILURE() << "line " << n << " differs\n  actual:   " << (ha ? la : "(none)")
                    << "\n  expected: " << (he ? le : "(none)");
    }
  }
  EXPECT_EQ(actual.size(), expected.size()) << "the exports differ";
}

class CliTest : public MemqdTest {
 protected:
  void SetUp() override {
    makeWorkDir("cli");
    ASSERT_NO_FATAL_FAILURE(makeGitProject(project_));
    startDaemon();
  }

  // memq ARGS in `cwd` (the project by default).
  CommandResult run(const std::string& args, const std::string& cwd = "", const std::string& input = "") {
    return daemon_->memq(args, cwd.empty() ? project_ : cwd, input);
  }
  // memq --json ARGS: exit 0 and the JSON result on stdout.
  json ok(const std::string& args, const std::string& cwd = "") {
    CommandResult r = run("--json " + args, cwd);
    EXPECT_EQ(r.exitCode, 0) << "memq --json " << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return parseJson(r);
  }
  std::string saveId(const std::string& args) {
    json r = ok("save " + args);
    EXPECT_TRUE(r.contains("id")) << r.dump();
    return r.value("id", "");
  }
};

// ---- every command -------------------------------------------------------------------------------------------

TEST_F(CliTest, EveryCommandAnswersInJsonMode) {
  json saved = ok("save 'JWT expiry uses the container clock' --details 'see the verify helper' --category gotcha "
                  "--topic auth --topic jwt --file src/auth/jwt.ts --source agent");
  EXPECT_EQ(saved["status"], "created");
  EXPECT_EQ(saved["scope"], "project");
  EXPECT_TRUE(saved["similar"].is_array());
  EXPECT_TRUE(saved["warnings"].is_array());
  const std::string id = saved["id"];
  ASSERT_EQ(id.size(), 36u);

  json dedup = ok("save 'JWT expiry uses the container clock' --details 'see the verify helper' --topic tokens --merge-topics");
  EXPECT_EQ(dedup["status"], "deduped");
  EXPECT_EQ(dedup["id"], id);

  json got = ok("get " + id.substr(0, 8));
  EXPECT_EQ(got["id"], id);
  EXPECT_EQ(got["summary"], "JWT expiry uses the container clock");
  EXPECT_EQ(got["details"], "see the verify helper");
  EXPECT_EQ(got["category"], "gotcha");
  EXPECT_EQ(got["topics"], json({"auth", "jwt", "tokens"}));
  EXPECT_EQ(got["files"], json({"src/auth/jwt.ts"}));
  EXPECT_EQ(got["source"], "agent");
  EXPECT_EQ(got["state"], "active");

  json updated = ok("update " + id + " --details 'verify() reads Date.now()' --file src/auth/jwt.ts --file src/auth/session.ts");
  EXPECT_EQ(updated["details"], "verify() reads Date.now()");
  EXPECT_EQ(sorted(updated["files"]), sorted({"src/auth/jwt.ts", "src/auth/session.ts"}));
  EXPECT_EQ(updated["summary"], got["summary"]);

  const std::string pref = saveId("'Use pnpm, not npm' --category pref --topic tooling --file package.json");
  json list = ok("list");
  EXPECT_EQ(list["total"], 2);
  EXPECT_EQ(list["memories"].size(), 2u);
  EXPECT_EQ(ok("list --category pref")["memories"][0]["id"], pref);
  EXPECT_EQ(ok("list --topic tooling")["total"], 1);
  EXPECT_EQ(ok("list --file src/auth/session.ts")["memories"][0]["id"], id);
  EXPECT_EQ(ok("list --limit 1")["memories"].size(), 1u);

  json search = ok("search container clock");
  ASSERT_FALSE(search["memories"].empty()) << search.dump();
  EXPECT_EQ(search["memories"][0]["id"], id);

  json recall = ok("recall 'jwt expiry' --file src/auth/jwt.ts --limit 2 --explain");
  ASSERT_FALSE(recall["memories"].empty()) << recall.dump();
  EXPECT_EQ(recall["memories"][0]["id"], id);
  EXPECT_TRUE(recall["memories"][0].contains("score"));
  EXPECT_TRUE(recall["memories"][0]["signals"].is_array());
  // --explain names the ranker's terms of each hit; without it no hit carries them.
  EXPECT_GT(recall["memories"][0]["explain"]["terms"].value("relevance", 0.0), 0.0) << recall.dump();
  EXPECT_FALSE(ok("recall 'jwt expiry' --file src/auth/jwt.ts --limit 2")["memories"][0].contains("explain"));
  json reference = ok("recall --file src/auth/jwt.ts --ranker reference --explain");
  ASSERT_FALSE(reference["memories"].empty()) << reference.dump();
  EXPECT_GT(reference["memories"][0]["explain"]["terms"].value("directional", 0.0), 0.0) << reference.dump();
  EXPECT_TRUE(ok("recall --file src/auth/jwt.ts --ranker reference")["memories"].is_array());

  EXPECT_TRUE(ok("pin " + id)["pinned"].get<bool>());
  EXPECT_EQ(ok("list --pinned")["total"], 1);
  EXPECT_FALSE(ok("unpin " + id)["pinned"].get<bool>());

  json attached = ok("attach " + pref + " README.md src/app.ts");
  EXPECT_EQ(sorted(attached["files"]), sorted({"package.json", "README.md", "src/app.ts"}));
  json detached = ok("detach " + pref + " README.md");
  EXPECT_EQ(sorted(detached["files"]), sorted({"package.json", "src/app.ts"}));

  json hidden = ok("hide " + pref + " --reason 'not now'");
  EXPECT_EQ(hidden["state"], "hidden");
  EXPECT_EQ(ok("list --state hidden")["total"], 1);
  EXPECT_EQ(ok("restore " + pref)["state"], "active");

  json hint = ok("hint read --file src/auth/jwt.ts");
  EXPECT_TRUE(hint["lines"].is_array());
  EXPECT_TRUE(hint["hints"].is_array());
  ASSERT_FALSE(hint["hints"].empty()) << hint.dump();
  EXPECT_EQ(hint["hints"][0]["id"].get<std::string>().substr(0, 8), id.substr(0, 8));

  json refresh = ok("refresh");
  EXPECT_TRUE(refresh.contains("head")) << refresh.dump();
  json cochange = ok("cochange src/auth/jwt.ts");
  ASSERT_TRUE(cochange["neighbors"].is_array()) << cochange.dump();
  ASSERT_FALSE(cochange["neighbors"].empty()) << cochange.dump();
  EXPECT_EQ(cochange["neighbors"][0]["path"], "src/auth/session.ts");
  EXPECT_EQ(cochange["neighbors"][0]["count"], 3);
  json blast = ok("blast src/auth/jwt.ts");
  EXPECT_TRUE(blast.contains("radius")) << blast.dump();

  const std::string newer = saveId("'Build with cmake and ninja' --category decision");
  const std::string older = saveId("'Build with make' --category decision");
  json sup = ok("supersede " + older + " --by " + newer);
  EXPECT_EQ(sup["old"]["state"], "superseded");
  EXPECT_EQ(sup["old"]["superseded_by"], newer);
  EXPECT_EQ(sup["new"]["id"], newer);

  const std::string wrong = saveId("'Tests run with mocha'");
  json rejected = ok("reject " + wrong + " --reason 'we use vitest'");
  EXPECT_EQ(rejected["state"], "rejected");
  CommandResult refused = run("--json save 'Tests run with mocha'");
  EXPECT_EQ(refused.exitCode, 4) << refused.err;  // a refused save exits 4, and --json still prints the result
  EXPECT_EQ(parseJson(refused)["status"], "rejected");
  EXPECT_EQ(ok("unreject " + wrong)["state"], "active");
  ok("reject " + wrong + " --reason 'still wrong'");
  EXPECT_EQ(ok("purge " + wrong + " --yes")["purged"], true);
  EXPECT_EQ(run("--json get " + wrong).exitCode, 1);

  json review = ok("review clusters");
  EXPECT_TRUE(review.is_array()) << review.dump();
  EXPECT_TRUE(ok("review stale").is_array());
  EXPECT_TRUE(ok("review dead").is_array());

  json audit = ok("audit --id " + id);
  ASSERT_TRUE(audit["events"].is_array());
  std::set<std::string> actions;
  for (const auto& e : audit["events"]) actions.insert(e["action"].get<std::string>());
  for (const char* a : {"create", "dedup", "update", "pin", "unpin"}) EXPECT_TRUE(actions.count(a)) << a << audit.dump();

  CommandResult exported = run("export --state all");
  ASSERT_EQ(exported.exitCode, 0) << exported.err;
  int memories = 0, tombstones = 0;
  for (const auto& l : parseJsonl(exported.out)) (l["type"] == "tombstone" ? tombstones : memories)++;
  EXPECT_EQ(memories, 4) << exported.out;
  EXPECT_EQ(tombstones, 1) << exported.out;  // the purged memory's rejection outlives it
  fs::path file = dir_ / "again.jsonl";
  writeTextFile(file, exported.out);
  json imported = ok("import " + shellQuote(file.string()));
  EXPECT_EQ(imported["created"], 0);
  EXPECT_TRUE(imported.contains("deduped") && imported.contains("rejected") && imported.contains("tombstones"));

  json stats = ok("stats");
  ASSERT_TRUE(stats["scopes"].contains("project")) << stats.dump();
  EXPECT_TRUE(stats["scopes"]["project"]["states"].is_object());

  json status = ok("status");
  EXPECT_EQ(status["pid"], daemon_->pid());
  EXPECT_EQ(status["socket"], daemon_->socket());
  EXPECT_TRUE(status.contains("version"));
  CommandResult plainStatus = run("status");
  EXPECT_EQ(plainStatus.exitCode, 0) << plainStatus.err;
  EXPECT_NE(plainStatus.out.find("vector scan " + status.value("scan_kernel", "?")), std::string::npos)
      << plainStatus.out;
  EXPECT_EQ(ok("daemon status")["pid"], daemon_->pid());
  CommandResult start = run("daemon start");  // already running: says so and succeeds
  EXPECT_EQ(start.exitCode, 0) << start.err;
  EXPECT_NE(start.out.find("already running"), std::string::npos) << start.out;
  EXPECT_TRUE(daemon_->running());
}

TEST_F(CliTest, HumanOutputShowsShortIdsAndNoColourWithoutATerminal) {
  const std::string id = saveId("'Use pnpm, not npm' --category pref");
  CommandResult list = run("list");
  ASSERT_EQ(list.exitCode, 0) << list.err;
  EXPECT_NE(list.out.find(id.substr(0, 8)), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find(id), std::string::npos) << "full id in the list: " << list.out;
  EXPECT_EQ(list.out.find('\x1b'), std::string::npos) << "colour without a terminal";
  CommandResult get = run("get " + id.substr(0, 6));
  ASSERT_EQ(get.exitCode, 0) << get.err;
  EXPECT_NE(get.out.find("Use pnpm, not npm"), std::string::npos);
  CommandResult save = run("save 'Use pnpm, not npm'");
  EXPECT_EQ(save.exitCode, 0);
  EXPECT_EQ(save.out.rfind("deduped " + id.substr(0, 8), 0), 0u) << save.out;
}

// memqd stores any valid UTF-8, terminal escape sequences included: human output shows every control character of a
// memory's text as an escape (a summary saved as `Use pnpm\e]0;pwned\a\e[2J` must not retitle the window and clear
// the screen of whoever lists it), and --json still carries the text exactly.
TEST_F(CliTest, HumanOutputShowsControlCharactersOfStoredTextAsEscapes) {
  const std::string esc = "\x1b", bel = "\x07", cr = "\r", csi = "\xc2\x9b";  // U+009B, a C1 control: CSI
  const std::string summary =
      "Use pnpm" + esc + "]0;pwned" + bel + esc + "[2J not npm" + cr + " over" + csi + "31m red";
  const std::string details = "first line" + esc + "[1A\nsecond" + bel + " line";
  const std::string topic = "tool" + esc + "[5mblink";
  json saved =
      ok("save " + shellQuote(summary) + " --details " + shellQuote(details) + " --topic " + shellQuote(topic));
  const std::string id = saved.value("id", "");
  ASSERT_EQ(id.size(), 36u) << saved.dump();

  // --json round-trips the exact text.
  json got = ok("get " + id);
  EXPECT_EQ(got["summary"], summary);
  EXPECT_EQ(got["details"], details);
  EXPECT_EQ(got["topics"], json::array({topic}));
  EXPECT_EQ(ok("list")["memories"][0]["summary"], summary);

  auto expectNoRawControls = [&](const CommandResult& r, const std::string& what) {
    EXPECT_EQ(r.exitCode, 0) << what << ": " << r.err;
    for (const std::string& raw : {esc, bel, cr, csi, std::string("\x9b")}) {
      EXPECT_EQ(r.out.find(raw), std::string::npos) << what << " printed a raw control character:\n" << r.out;
    }
    // Shown instead: C0 controls as \xNN, C1 ones as \u00NN.
    EXPECT_NE(r.out.find("Use pnpm\\x1b]0;pwned\\x07\\x1b[2J not npm\\x0d over\\u009b31m red"), std::string::npos)
        << what << ":\n" << r.out;
  };
  CommandResult get = run("get " + id);
  expectNoRawControls(get, "memq get");
  // The details keep their line break (the second line under the first, in line with the values), not the rest.
  EXPECT_NE(get.out.find("first line\\x1b[1A\n" + std::string(14, ' ') + "second\\x07 line"), std::string::npos)
      << get.out;
  EXPECT_NE(get.out.find("tool\\x1b[5mblink"), std::string::npos) << get.out;
  expectNoRawControls(run("list"), "memq list");
  expectNoRawControls(run("recall pnpm"), "memq recall");
  expectNoRawControls(run("search pnpm"), "memq search");
  CommandResult again = run("save " + shellQuote(summary) + " --details " + shellQuote(details));
  EXPECT_EQ(again.out.find(esc), std::string::npos) << again.out;
}

// A save's warnings (here: a summary cut to 200 characters) go to stderr, as every command's do: stdout is the
// answer, `deduped ID (project)` and the like, for scripts to read.
TEST_F(CliTest, SaveWarningsGoToStderrNotStdout) {
  CommandResult r = run("save " + std::string(260, 'x'));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.rfind("created ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << "a warning on stdout:\n" << r.out;
  EXPECT_NE(r.err.find("warning: summary truncated to 200 characters"), std::string::npos) << r.err;
  // --json keeps them in the result.
  json j = ok("save " + std::string(260, 'y'));
  ASSERT_EQ(j["warnings"].size(), 1u) << j.dump();
}

// The pager runs in memq's process group, so Ctrl-C on the terminal reaches memq too: memq must wait for the pager
// (which decides what Ctrl-C means) rather than die and leave it holding the terminal. On a pseudo-terminal, with a
// pager that ignores Ctrl-C and takes a second after its input ends.
TEST_F(CliTest, CtrlCWhileThePagerRunsLeavesMemqWaitingForThePager) {
  saveId("'Use pnpm, not npm'");
  const fs::path started = dir_ / "pager.started", finished = dir_ / "pager.finished";
  const std::string pager = "trap '' INT QUIT; touch " + shellQuote(started.string()) + "; cat >/dev/null; sleep 1; " +
                            "touch " + shellQuote(finished.string());
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0) << std::strerror(errno);
  ASSERT_EQ(::grantpt(master), 0) << std::strerror(errno);
  ASSERT_EQ(::unlockpt(master), 0) << std::strerror(errno);
  const std::string terminal = ::ptsname(master);
  const std::string bin = binDir() + "/memq";
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A session of its own whose controlling terminal is the pseudo-terminal: memq and its pager are its foreground
    // process group, which Ctrl-C signals.
    ::setsid();
    const int tty = ::open(terminal.c_str(), O_RDWR);
    if (tty < 0 || ::ioctl(tty, TIOCSCTTY, 0) != 0) ::_exit(126);
    ::dup2(tty, 0);
    ::dup2(tty, 1);
    ::dup2(tty, 2);
    if (tty > 2) ::close(tty);
    ::close(master);
    if (::chdir(project_.c_str()) != 0) ::_exit(126);
    ::setenv("MEMQ_SOCKET", daemon_->socket().c_str(), 1);
    ::setenv("MEMQ_DATA_DIR", daemon_->dataDir().c_str(), 1);
    ::setenv("MEMQ_PAGER", pager.c_str(), 1);
    ::execl(bin.c_str(), bin.c_str(), "list", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0) << std::strerror(errno);
  // Whatever happens, nothing of the session outlives the test.
  struct KillSession {
    pid_t leader;
    int master;
    ~KillSession() {
      ::kill(-leader, SIGKILL);
      ::close(master);
    }
  } killSession{pid, master};
  // Reads what memq writes on the terminal, so that it never blocks on a full one; true once memq has exited.
  int status = 0;
  auto exited = [&] {
    char buf[4096];
    for (pollfd p{master, POLLIN, 0}; ::poll(&p, 1, 0) > 0 && ::read(master, buf, sizeof buf) > 0;) {
    }
    return ::waitpid(pid, &status, WNOHANG) == pid;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool gone = false;
  while (!fs::exists(started) && !(gone = exited()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(gone) << "memq exited before its pager started";
  ASSERT_TRUE(fs::exists(started)) << "the pager did not start";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // memq is past starting the pager, waiting for it
  ASSERT_EQ(::write(master, "\x03", 1), 1) << std::strerror(errno);  // Ctrl-C
  while (!(gone = exited()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(gone) << "memq did not exit";
  const bool pagerFinished = fs::exists(finished);
  EXPECT_TRUE(WIFEXITED(status)) << "memq was killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
  EXPECT_TRUE(pagerFinished) << "memq exited while its pager still ran";
}

// ---- exit codes ---------------------------------------------------------------------------------------------

TEST_F(CliTest, TheDaemonsErrorsExitOneWithTheErrorObjectOnStderr) {
  CommandResult r = run("--json get ffffffff");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  json err = json::parse(r.err, nullptr, false);
  ASSERT_TRUE(err.is_object()) << r.err;
  EXPECT_EQ(err["code"], -32001);
  EXPECT_TRUE(err["message"].is_string());

  CommandResult human = run("get ffffffff");
  EXPECT_EQ(human.exitCode, 1);
  EXPECT_NE(human.err.find("NotFound"), std::string::npos) << human.err;

  r = run("--json save 'x y z' --category nope");
  EXPECT_EQ(r.exitCode, 1);
  err = json::parse(r.err, nullptr, false);
  EXPECT_EQ(err["code"], -32602) << r.err;
  EXPECT_EQ(err["data"]["field"], "category") << r.err;

  r = run("--json save 'outside the root' --file ../../etc/passwd");
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;

  const std::string id = saveId("'Some memory'");
  EXPECT_EQ(run("--json supersede " + id + " --by ffffffff").exitCode, 1);
  EXPECT_EQ(run("--json attach ffffffff README.md").exitCode, 1);
  EXPECT_EQ(run("--json export --state bogus").exitCode, 1);
  fs::path bad = dir_ / "bad.jsonl";
  writeTextFile(bad, "{\"summary\": 42}\nnot json\n");
  EXPECT_EQ(run("--json import " + shellQuote(bad.string())).exitCode, 1);
  EXPECT_EQ(ok("list")["total"], 1);  // nothing half-imported
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  const std::string id = saveId("'Some memory'");
  const char* cases[] = {
      "",                                 // no command
      "frobnicate",                       // unknown command
      "--bogus list",                     // unknown global option
      "--scope everywhere list",          // bad scope
      "--project /nonexistent/dir list",  // project is not a directory
      "--socket",                         // option without its value
      "save",                             // missing summary
      "save a b",                         // two summaries
      "save x --colour red",              // unknown option
      "save x --details",                 // missing value
      "get",                              // missing id
      "get a b",                          // too many ids
      "update ID",                        // nothing to change
      "list extra",                       // positional
      "list --limit ten",                 // not a number
      "list --limit -1",                  // negative
      "list --limit 0",                   // below memory/list's minimum: the daemon's bounds, checked before it
      "list --limit 1001",                // above its maximum
      "search x --limit 101",
      "recall x --limit 0",
      "audit --limit 1001",
      "cochange src/app.ts --limit 500",
      "search",                           // missing query
      "recall",                           // neither query nor file
      "recall x --max-chars lots",        // not a number
      "reject ID",                        // no reason
      "reject ID --reason ''",            // empty reason
      "purge ID",                         // no --yes
      "supersede ID",                     // no --by
      "attach ID",                        // no paths
      "detach",                           // nothing
      "hint",                             // no tool
      "cochange",                         // no path
      "blast a b",                        // two paths
      "refresh now",                      // argument
      "stats x",                          // argument
      "status x",                         // argument
      "import",                           // no file
      "import /nonexistent/file.jsonl",   // unreadable
      "import a b",                       // two files
      "import --from-empryo /nonexistent/memory.db",
      "export --state",                   // missing value
      "review everything",                // unknown review kind
      "daemon",                           // no action
      "daemon jump",                      // unknown action
      "mcp now",                          // argument
      "list --limit 4294967297",          // past an int: not a smaller limit
      "recall x --threshold abc",         // not a number
      "recall x --threshold 0,5",         // not a number either
      "bench",                            // no benchmark
      "bench retrieval",                  // no dataset
      "--socket a --socket b list",       // a global option twice: one would be dropped
      "--scope global --scope project list",
      "--socket '' list",                 // an empty socket path is not the default one
      "--project '' list",                // nor an empty project the working directory
      "team connect 'postgresql://u@h/db?password=secret'",    // a URI's password parameter
      "team connect 'postgresql://u@h/db?a=b&sslpassword=x'",  // another parameter before it
  };
  for (const char* c : cases) {
    std::string args = c;
    for (size_t p; (p = args.find("ID")) != std::string::npos;) args.replace(p, 2, id);
    CommandResult r = run(args);
    EXPECT_EQ(r.exitCode, 2) << "memq " << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << "memq " << args << " says nothing";
    CommandResult j = run("--json " + args);
    EXPECT_EQ(j.exitCode, 2) << "memq --json " << args << "\nstderr: " << j.err;
  }
  // Usage errors change nothing.
  json m = ok("get " + id);
  EXPECT_EQ(m["state"], "active");
  EXPECT_EQ(ok("list")["total"], 1);
  EXPECT_EQ(run("--help").exitCode, 0);
  EXPECT_EQ(run("--version").exitCode, 0);
}

// Output that does not reach its file is a failure: a list cut short by a full disk, or --json that is not whole
// JSON, must not exit 0.
TEST_F(CliTest, OutputThatCannotBeWrittenExitsOneAndSaysSo) {
  const std::string id = saveId("'Use pnpm, not npm'");
  for (const std::string& args : std::vector<std::string>{"list", "--json list", "--json get " + id, "get " + id,
                                                          "--json status", "stats", "export"}) {
    CommandResult r = run(args + " >/dev/full");
    EXPECT_EQ(r.exitCode, 1) << "memq " << args << " >/dev/full\nstderr: " << r.err;
    EXPECT_NE(r.err.find("cannot write the output"), std::string::npos) << "memq " << args << ": " << r.err;
  }
  EXPECT_EQ(run("list").exitCode, 0);
}

// JSON carries only UTF-8: an argument that is not (a file named in Latin-1) is refused before anything is sent, not
// saved under a name with U+FFFD in it while memq reports success.
TEST_F(CliTest, AnArgumentThatIsNotUtf8IsRefusedAndNothingIsSaved) {
  const std::string latin1 = "\"$(printf 'caf\\351.c')\"";
  for (const std::string& args : std::vector<std::string>{"save 'Note on the cafe file' --file " + latin1,
                                                          "save " + latin1, "recall --file " + latin1,
                                                          "--project " + latin1 + " list"}) {
    CommandResult r = run(args);
    EXPECT_EQ(r.exitCode, 2) << "memq " << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find("is not UTF-8"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("caf\\xe9.c"), std::string::npos) << "the argument is not shown as an escape: " << r.err;
  }
  EXPECT_EQ(ok("list")["total"], 0);

  // A path memq only opens itself may be any bytes, as file names are: a file to import named in Latin-1.
  ASSERT_EQ(run("export >" + latin1).exitCode, 0);
  CommandResult imported = run("import " + latin1);
  EXPECT_EQ(imported.exitCode, 0) << imported.err;
}

// A daemon error quoting a path that is not UTF-8 (from MEMQ_SOCKET, which no argument check sees) is still printed
// as JSON with --json, not an abort.
TEST_F(CliTest, AnUnreachableSocketPathThatIsNotUtf8IsReportedAsJson) {
  CommandResult r = runCommand("MEMQ_SOCKET=\"$(printf '" + dir_.string() + "/no\\377where/s')\" '" + binDir() +
                               "/memq' --json status");
  EXPECT_EQ(r.exitCode, 3) << r.err;
  json err = json::parse(r.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << "stderr is not JSON: " << r.err;
  EXPECT_TRUE(err.contains("message")) << r.err;
}

// --json stays JSON a program reads back unchanged, but with the characters a terminal acts on inside a string (a C1
// CSI, a bidirectional override) escaped: `memq --json get` on a terminal must not clear the screen or reorder it.
TEST_F(CliTest, JsonOutputEscapesTheCharactersATerminalWouldActOn) {
  const std::string summary = "Use pnpm \xc2\x9b" "2J and \xe2\x80\xae" "reversed\xe2\x80\xac done";
  const std::string id = saveId(shellQuote(summary));
  CommandResult r = run("--json get " + id);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << "a raw C1 CSI in --json output";
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << "a raw right-to-left override in --json output";
  EXPECT_NE(r.out.find("\\u009b"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\u202e"), std::string::npos) << r.out;
  EXPECT_EQ(parseJson(r)["summary"], summary) << "the escapes change what a program reads";
}

// Whether stderr gets colour is decided by stderr: a save's warning written to a file while stdout is a terminal
// (under script(1)) has no escape sequence in it.
TEST_F(CliTest, WarningsWrittenToAFileHaveNoColourWhileStdoutIsATerminal) {
  const fs::path err = dir_ / "warnings.err";
  CommandResult r = runCommand("cd " + shellQuote(project_) + " && MEMQ_SOCKET=" +
                               shellQuote(daemon_->socket()) + " script -qec " +
                               shellQuote(shellQuote(binDir() + "/memq") + " save " + std::string(260, 'x') + " 2>" +
                                          shellQuote(err.string())) +
                               " /dev/null");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  const std::string warnings = readTextFile(err);
  EXPECT_NE(warnings.find("warning: summary truncated"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find('\x1b'), std::string::npos) << "colour on a stderr that is a file: " << warnings;
  EXPECT_NE(r.out.find("created "), std::string::npos) << "stdout did not reach the terminal: " << r.out;
}

// On a terminal (under script(1)): a pager that cannot be run loses the output, so memq says so and exits 1; and
// with no pager asked for and the default, less, not installed (a minimal system), the output goes straight to the
// terminal instead of nowhere.
TEST_F(CliTest, APagerThatCannotRunIsReportedAndAMissingLessMeansNoPager) {
  saveId("'Use pnpm, not npm'");
  const std::string env = "cd " + shellQuote(project_) + " && MEMQ_SOCKET=" + shellQuote(daemon_->socket()) + " ";
  const std::string list = shellQuote(binDir() + "/memq") + " list";
  CommandResult missing = runCommand(env + "MEMQ_PAGER=memq-no-such-pager /usr/bin/script -qec " + shellQuote(list) +
                                     " /dev/null");
  EXPECT_EQ(missing.exitCode, 1) << missing.out << missing.err;
  EXPECT_NE(missing.out.find("the pager 'memq-no-such-pager' could not be run"), std::string::npos) << missing.out;

  const fs::path emptyPath = dir_ / "no-less-here";
  fs::create_directories(emptyPath);
  CommandResult noLess = runCommand(env + "env -u PAGER -u MEMQ_PAGER PATH=" + shellQuote(emptyPath.string()) +
                                    " /usr/bin/script -qec " + shellQuote(list) + " /dev/null");
  EXPECT_EQ(noLess.exitCode, 0) << noLess.out << noLess.err;
  EXPECT_NE(noLess.out.find("Use pnpm, not npm"), std::string::npos) << "the list went nowhere: " << noLess.out;
}

// A memqd that acknowledges daemon/shutdown and goes on answering (still finishing a long commit, say): `daemon stop`
// must not say it stopped, or `daemon restart` would start a second daemon beside it.
TEST(DaemonStop, ADaemonStillAnsweringAfterTheWaitIsReportedAndExitsNonZero) {
  const fs::path dir = makeTempDir("stop");
  const std::string path = (dir / "memqd.sock").string();
  const int listener = listeningUnixSocket(path);
  ASSERT_GE(listener, 0) << std::strerror(errno);
  std::atomic<bool> done{false};
  std::thread server([&] {
    while (!done) {
      pollfd ready{listener, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0) continue;
      const int conn = ::accept(listener, nullptr, nullptr);
      if (conn < 0) continue;
      std::string line;
      char buf[4096];
      for (pollfd in{conn, POLLIN, 0}; line.find('\n') == std::string::npos && ::poll(&in, 1, 200) > 0;) {
        const ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) break;
        line.append(buf, static_cast<size_t>(n));
      }
      if (auto request = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
          request.is_object()) {
        const std::string reply =
            nlohmann::json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", {{"stopping", true}}}}.dump() + "\n";
        (void)!::write(conn, reply.data(), reply.size());
      }
      ::close(conn);
    }
  });
  CommandResult r = runCommand("MEMQ_SOCKET=" + shellQuote(path) + " " + shellQuote(binDir() + "/memq") + " daemon stop");
  done = true;
  server.join();
  ::close(listener);
  EXPECT_EQ(r.exitCode, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find("memqd stopped"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("still answering"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// A stand-in for memqd on a Unix socket: answers each request with `answer(method)` (an empty object when that is
// null) and ignores notifications, one connection at a time. For replies memqd gives only in states a test cannot
// easily reach: recall's and search's "team scope offline" warning needs a PostgreSQL server that went away.
class ScriptedDaemon {
 public:
  ScriptedDaemon(const std::string& path, std::function<json(const std::string& method)> answer)
      : listener_(listeningUnixSocket(path)), answer_(std::move(answer)) {
    if (listener_ >= 0) server_ = std::thread([this] { serve(); });
  }
  ~ScriptedDaemon() {
    done_ = true;
    if (server_.joinable()) server_.join();
    if (listener_ >= 0) ::close(listener_);
  }
  ScriptedDaemon(const ScriptedDaemon&) = delete;
  ScriptedDaemon& operator=(const ScriptedDaemon&) = delete;
  bool listening() const { return listener_ >= 0; }

 private:
  void serve() {
    while (!done_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0) continue;
      const int conn = ::accept(listener_, nullptr, nullptr);
      if (conn < 0) continue;
      converse(conn);
      ::close(conn);
    }
  }
  // Answers the requests of one connection until the client closes it (or the test is over).
  void converse(int conn) {
    std::string received;
    char buf[4096];
    while (!done_) {
      pollfd in{conn, POLLIN, 0};
      if (::poll(&in, 1, 100) <= 0) continue;
      const ssize_t n = ::read(conn, buf, sizeof buf);
      if (n <= 0) return;
      received.append(buf, static_cast<size_t>(n));
      for (size_t end; (end = received.find('\n')) != std::string::npos;) {
        const json request = json::parse(received.substr(0, end), nullptr, false);
        received.erase(0, end + 1);
        if (!request.is_object() || !request.contains("id")) continue;  // a notification: no reply
        json result = answer_(request.value("method", ""));
        if (result.is_null()) result = json::object();
        const std::string reply = json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump() + "\n";
        if (::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) return;
      }
    }
  }

  int listener_;
  std::function<json(const std::string&)> answer_;
  std::atomic<bool> done_{false};
  std::thread server_;
};

// A recall or search answered from a team scope's local copy carries a warning: `memq recall` and `memq search`
// print it on stderr (stdout stays the hits), the MCP tools add it to their text and structuredContent, and the
// UserPromptSubmit hook adds a line "memq: WARNING" to the context it gives the agent.
TEST(RepliesWithWarnings, EveryFrontEndPassesTheWarningOfARecallOrSearchOn) {
  ScopedDir scoped{makeTempDir("warn")};
  const std::string socket = (scoped.path / "memqd.sock").string();
  const std::string project = (scoped.path / "proj").string();
  fs::create_directories(project);
  const std::string offline =
      "team scope offline: the team server (db.example.com) cannot be reached; answered from the local copy";
  const json hit = {{"id", "5f0c2a1e-8d7b-4c3a-9e21-0a1b2c3d4e5f"}, {"scope", "team"}, {"category", "context"},
                    {"summary", "The cache is warmed by the nightly job"}, {"details", ""},
                    {"topics", json::array()}, {"files", json::array()}, {"pinned", false}, {"state", "active"},
                    {"use_count", 0}, {"score", 0.5}, {"signals", {"fts"}}};
  ScriptedDaemon daemon(socket, [&](const std::string& method) -> json {
    if (method == "memory/recall" || method == "memory/search") {
      return {{"memories", json::array({hit})}, {"warnings", json::array({offline})}};
    }
    return json::object();  // initialize
  });
  ASSERT_TRUE(daemon.listening()) << std::strerror(errno);
  const std::string memq = "cd " + shellQuote(project) + " && MEMQ_SOCKET=" + shellQuote(socket) + " " +
                           shellQuote(binDir() + "/memq") + " ";

  for (const char* command : {"recall cache warmed", "search cache warmed"}) {
    CommandResult r = runCommand(memq + command);
    EXPECT_EQ(r.exitCode, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("The cache is warmed by the nightly job"), std::string::npos) << command << ": " << r.out;
    EXPECT_EQ(r.out.find("team scope offline"), std::string::npos) << command << ": stdout is the hits\n" << r.out;
    EXPECT_NE(r.err.find("warning: " + offline), std::string::npos) << command << ": " << r.err;
    CommandResult j = runCommand(memq + "--json " + command);
    EXPECT_EQ(json::parse(j.out, nullptr, false)["warnings"], json::array({offline})) << command << ": " << j.out;
  }

  const std::string mcpInput =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_recall","arguments":{"query":"cache warmed"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"cache warmed"}}})"
      "\n";
  CommandResult mcp = runCommand(memq + "mcp", mcpInput);
  EXPECT_EQ(mcp.exitCode, 0) << mcp.err;
  std::vector<json> replies = parseJsonl(mcp.out);
  ASSERT_EQ(replies.size(), 3u) << mcp.out;
  for (size_t i = 1; i < 3; ++i) {
    const json& result = replies[i]["result"];
    EXPECT_EQ(result["isError"], false) << result.dump();
    const std::string text = result["content"][0].value("text", "");
    EXPECT_NE(text.find("The cache is warmed by the nightly job"), std::string::npos) << text;
    EXPECT_NE(text.find("\nwarning: " + offline), std::string::npos) << text;
    EXPECT_EQ(result["structuredContent"]["warnings"], json::array({offline})) << result.dump();
  }

  const json prompt = {{"session_id", "session-1"}, {"cwd", project}, {"hook_event_name", "UserPromptSubmit"},
                       {"prompt", "how is the cache warmed?"}};
  CommandResult hook = runCommand(memq + "hook claude-code UserPromptSubmit", prompt.dump());
  EXPECT_EQ(hook.exitCode, 0) << hook.err;
  const json reply = json::parse(hook.out, nullptr, false);
  ASSERT_TRUE(reply.is_object()) << hook.out << hook.err;
  const std::string context = reply["hookSpecificOutput"].value("additionalContext", "");
  EXPECT_NE(context.find("The cache is warmed by the nightly job"), std::string::npos) << context;
  EXPECT_NE(context.find("</recalled_memories>\nmemq: " + offline), std::string::npos) << context;
}

// The memqd processes serving `socket` (by their command line), for telling how many a race left running.
std::vector<pid_t> memqdsServing(const std::string& socket) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::vector<std::string> argv;
    std::istringstream cmdline(readTextFile(it->path() / "cmdline"));
    for (std::string arg; std::getline(cmdline, arg, '\0');) argv.push_back(arg);
    if (argv.empty() || fs::path(argv[0]).filename() != "memqd") continue;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--socket" && argv[i + 1] == socket) out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

// `memq daemon start` racing a command that autostarts memqd (as a user starts the daemon while an agent's hook
// runs): both take the start lock, so one starts memqd and the other finds it. Before, `daemon start` did not take
// it, and when the other's memqd won, ours refused to start and `daemon start` exited 3 with a daemon running. A race:
// several rounds, each on a fresh socket directory.
TEST(DaemonStart, RacingAnAutostartingCommandBothSucceedAndOneMemqdServes) {
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ScopedDir scoped{makeTempDir("race")};
    const fs::path& dir = scoped.path;
    const std::string socket = (dir / "run/memqd.sock").string();
    // Every memqd on this socket is stopped when the round ends, however it ends.
    struct StopMemqds {
      std::string socket;
      ~StopMemqds() {
        for (pid_t pid : memqdsServing(socket)) ::kill(pid, SIGTERM);
        for (int i = 0; i < 500 && !memqdsServing(socket).empty(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    } stopMemqds{socket};
    fs::create_directories(dir / "proj");
    const std::string memq = "cd " + shellQuote((dir / "proj").string()) + " && MEMQ_SOCKET=" + shellQuote(socket) +
                             " MEMQ_DATA_DIR=" + shellQuote((dir / "data").string()) + " " +
                             shellQuote(binDir() + "/memq") + " ";
    auto background = [&](const std::string& args, const std::string& name) {
      return "(" + memq + args + " >" + shellQuote((dir / (name + ".out")).string()) + " 2>&1; echo $? >" +
             shellQuote((dir / (name + ".rc")).string()) + ") & ";
    };
    runCommand(background("daemon start", "start") + background("--json list", "list") + "wait");
    EXPECT_EQ(readTextFile(dir / "start.rc"), "0\n") << readTextFile(dir / "start.out");
    EXPECT_EQ(readTextFile(dir / "list.rc"), "0\n") << readTextFile(dir / "list.out");
    // A memqd that lost a start exits on its own: give it a moment.
    std::vector<pid_t> serving = memqdsServing(socket);
    for (int i = 0; i < 200 && serving.size() > 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      serving = memqdsServing(socket);
    }
    ASSERT_EQ(serving.size(), 1u) << "memqd processes on " << socket << ": " << serving.size();
    long pidInFile = 0;
    std::ifstream(dir / "run/memqd.pid") >> pidInFile;
    EXPECT_EQ(pidInFile, static_cast<long>(serving[0]));
    CommandResult status = runCommand(memq + "--json status");
    EXPECT_EQ(json::parse(status.out, nullptr, false)["pid"], serving[0]) << status.out << status.err;
  }
}

// The memq binary alone in a directory, with a PATH that has no memqd: autostart cannot work.
class UnreachableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("unr");
    fs::create_directories(dir_ / "bin");
    fs::copy_file(fs::path(binDir()) / "memq", dir_ / "bin/memq");
    fs::create_directories(dir_ / "proj");
    socket_ = (dir_ / "nobody.sock").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  CommandResult isolated(const std::string& args, const std::string& socketEnv = "") {
    return runCommand("cd " + shellQuote((dir_ / "proj").string()) + " && PATH=" + shellQuote((dir_ / "empty").string()) +
                      " MEMQ_SOCKET=" + shellQuote(socketEnv.empty() ? socket_ : socketEnv) +
                      " MEMQ_DATA_DIR=" + shellQuote((dir_ / "data").string()) + " " + shellQuote((dir_ / "bin/memq").string()) +
                      " " + args);
  }
  fs::path dir_;
  std::string socket_;
};

TEST_F(UnreachableTest, EveryDaemonCommandExitsThreeWhenNoDaemonCanBeStarted) {
  const char* commands[] = {"save 'a memory'", "get abcd", "list", "search jwt", "recall jwt", "hide abcd",
                            "pin abcd", "supersede abcd --by efgh", "reject abcd --reason r", "purge abcd --yes",
                            "attach abcd x.ts", "hint read", "cochange x.ts", "blast x.ts", "refresh", "audit",
                            "export", "stats", "status", "daemon start"};
  for (const char* c : commands) {
    CommandResult r = isolated(c);
    EXPECT_EQ(r.exitCode, 3) << "memq " << c << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c << ": " << r.out;
    EXPECT_NE(r.err.find("memqd"), std::string::npos) << c << ": " << r.err;
  }
  CommandResult j = isolated("--json list");
  EXPECT_EQ(j.exitCode, 3);
  json err = json::parse(j.err, nullptr, false);
  ASSERT_TRUE(err.is_object()) << j.err;
  EXPECT_TRUE(err["message"].is_string());
  // Stopping a daemon that is not there is not an error.
  EXPECT_EQ(isolated("daemon stop").exitCode, 0);
  EXPECT_FALSE(fs::exists(socket_));
}

TEST_F(UnreachableTest, ASocketWhoseDirectoryCannotBeCreatedExitsThree) {
  // memqd is found (next to the real memq) but cannot make the socket's directory: a path under a regular file.
  writeTextFile(dir_ / "plainfile", "x");
  std::string socket = (dir_ / "plainfile/sub/memqd.sock").string();
  CommandResult r = runCommand("cd " + shellQuote((dir_ / "proj").string()) + " && MEMQ_DATA_DIR=" +
                               shellQuote((dir_ / "data").string()) + " " + shellQuote(binDir() + "/memq") + " --socket " +
                               shellQuote(socket) + " list");
  EXPECT_EQ(r.exitCode, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("memqd"), std::string::npos) << r.err;
}

TEST_F(UnreachableTest, AutostartStartsMemqdNextToMemqAndDaemonStopStopsIt) {
  std::string socket = (dir_ / "auto/memqd.sock").string();
  std::string env = "cd " + shellQuote((dir_ / "proj").string()) + " && MEMQ_SOCKET=" + shellQuote(socket) +
                    " MEMQ_DATA_DIR=" + shellQuote((dir_ / "data").string()) + " " + shellQuote(binDir() + "/memq") + " ";
  // Whatever happens below, no detached memqd outlives the test.
  AutostartedMemqdReaper reaper{dir_ / "auto/memqd.pid"};
  CommandResult saved = runCommand(env + "--json save 'autostarted daemons keep this'");
  ASSERT_EQ(saved.exitCode, 0) << saved.err;
  EXPECT_TRUE(fs::exists(socket));
  CommandResult status = runCommand(env + "--json status");
  ASSERT_EQ(status.exitCode, 0) << status.err;
  json s = json::parse(status.out, nullptr, false);
  EXPECT_EQ(s["socket"], socket) << status.out;
  EXPECT_TRUE(fs::exists(dir_ / "data")) << "the detached memqd uses MEMQ_DATA_DIR";
  CommandResult stop = runCommand(env + "daemon stop");
  EXPECT_EQ(stop.exitCode, 0) << stop.err;
  EXPECT_NE(stop.out.find("stopped"), std::string::npos) << stop.out;
  EXPECT_FALSE(RpcClient::connect(socket, std::chrono::milliseconds(200)).isOk());
  // `daemon start` brings it back, with the memory that was saved before.
  CommandResult start = runCommand(env + "daemon start");
  EXPECT_EQ(start.exitCode, 0) << start.err;
  CommandResult list = runCommand(env + "--json list");
  EXPECT_EQ(list.exitCode, 0) << list.err;
  EXPECT_EQ(json::parse(list.out, nullptr, false)["total"], 1) << list.out;
  CommandResult restart = runCommand(env + "daemon restart");
  EXPECT_EQ(restart.exitCode, 0) << restart.err;
  EXPECT_EQ(runCommand(env + "daemon stop").exitCode, 0);
  EXPECT_FALSE(fs::exists(dir_ / "auto/memqd.pid"));
}

// ---- review ---------------------------------------------------------------------------------------------------

TEST_F(CliTest, ReviewWithoutATerminalRefusesAndPointsToJson) {
  saveId("'Use pnpm, not npm' --category pref");
  for (const char* args : {"review", "review clusters", "review stale", "review dead"}) {
    CommandResult r = run(args, "", "k\nk\nk\n");
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("terminal"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ok("list")["memories"][0]["state"], "active");  // nothing was applied
}

// `daemon stop` says "not running" (exit 0) only when no memqd can be serving the socket: no socket file, or nobody
// accepting on it. A socket memq cannot reach at all (here a path too long for a Unix socket) is reported, exit 3:
// a memqd may be running there for all memq knows.
TEST_F(UnreachableTest, DaemonStopSaysNotRunningOnlyWhenNobodyCanBeServingTheSocket) {
  CommandResult none = isolated("daemon stop");
  EXPECT_EQ(none.exitCode, 0) << none.err;
  EXPECT_NE(none.out.find("not running"), std::string::npos) << none.out;
  const fs::path stale = dir_ / "stale.sock";  // a socket file left by a memqd that died: nobody accepts on it
  const int fd = listeningUnixSocket(stale.string());
  ASSERT_GE(fd, 0);
  ::close(fd);
  CommandResult left = isolated("daemon stop", stale.string());
  EXPECT_EQ(left.exitCode, 0) << left.err;
  EXPECT_NE(left.out.find("not running"), std::string::npos) << left.out;

  const std::string tooLong = (dir_ / std::string(120, 's')).string() + ".sock";
  CommandResult unreachable = isolated("daemon stop", tooLong);
  EXPECT_EQ(unreachable.exitCode, 3) << unreachable.out << unreachable.err;
  EXPECT_EQ(unreachable.out.find("not running"), std::string::npos) << unreachable.out;
  EXPECT_NE(unreachable.err.find("longer than"), std::string::npos) << unreachable.err;
}

TEST_F(UnreachableTest, ReviewRefusesWithoutATerminalBeforeLookingForADaemon) {
  CommandResult r = isolated("review");
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
}

// ---- paths relative to the working directory ------------------------------------------------------------------

TEST_F(CliTest, FileArgumentsAreRelativeToTheWorkingDirectoryInsideTheProject) {
  const std::string src = project_ + "/src";
  json saved = ok("save 'Tokens are verified with the container clock' --file auth/jwt.ts --category gotcha", src);
  const std::string id = saved["id"];
  EXPECT_EQ(ok("get " + id)["files"], json({"src/auth/jwt.ts"}));

  // `cd src && memq recall --file auth/jwt.ts` means src/auth/jwt.ts.
  json recall = ok("recall --file auth/jwt.ts", src);
  ASSERT_EQ(recall["memories"].size(), 1u) << recall.dump();
  EXPECT_EQ(recall["memories"][0]["id"], id);
  EXPECT_EQ(ok("recall --file auth/jwt.ts", src + "/auth")["memories"].size(), 0u);  // would be src/auth/auth/jwt.ts
  EXPECT_EQ(ok("recall --file jwt.ts", src + "/auth")["memories"].size(), 1u);
  EXPECT_EQ(ok("recall --file ../src/auth/jwt.ts", src)["memories"].size(), 1u);
  EXPECT_EQ(ok("recall --file " + shellQuote(project_ + "/src/auth/jwt.ts"), src)["memories"].size(), 1u);

  EXPECT_EQ(ok("list --file auth/jwt.ts", src)["total"], 1);
  json attached = ok("attach " + id + " auth/session.ts", src);
  EXPECT_EQ(sorted(attached["files"]), sorted({"src/auth/jwt.ts", "src/auth/session.ts"}));
  json detached = ok("detach " + id + " session.ts", src + "/auth");
  EXPECT_EQ(detached["files"], json({"src/auth/jwt.ts"}));
  json updated = ok("update " + id + " --file app.ts", src);
  EXPECT_EQ(updated["files"], json({"src/app.ts"}));
  ok("update " + id + " --file auth/jwt.ts", src);
  EXPECT_EQ(ok("cochange auth/jwt.ts", src)["file"], "src/auth/jwt.ts");
  EXPECT_EQ(ok("blast auth/jwt.ts", src)["file"], "src/auth/jwt.ts");
  json hint = ok("hint edit --file auth/jwt.ts", src);
  ASSERT_FALSE(hint["hints"].empty()) << hint.dump();

  // From outside the project (--project given), paths are relative to the project root.
  const std::string outside = dir_.string();
  EXPECT_EQ(ok("--project " + shellQuote(project_) + " recall --file src/auth/jwt.ts", outside)["memories"].size(), 1u);
  EXPECT_EQ(ok("--project " + shellQuote(src) + " recall --file src/auth/jwt.ts", outside)["memories"].size(), 1u);
  EXPECT_EQ(ok("--project " + shellQuote(project_) + " list --file src/auth/jwt.ts", outside)["total"], 1);
  // Inside the work tree but outside --project's directory (a sibling of it), paths are still the working
  // directory's: the project is the whole work tree.
  fs::create_directories(fs::path(project_) / "docs");
  EXPECT_EQ(ok("--project ../../docs recall --file jwt.ts", src + "/auth")["memories"].size(), 1u);
  EXPECT_EQ(ok("--project ../../docs list --file jwt.ts", src + "/auth")["total"], 1);

  // Results show paths relative to the project root, whatever the working directory.
  EXPECT_EQ(ok("get " + id, src + "/auth")["files"], json({"src/auth/jwt.ts"}));
  // A path that leaves the project from a subdirectory is refused by the daemon.
  EXPECT_EQ(run("--json attach " + id + " ../../../etc/passwd", src).exitCode, 1);
}

// ---- export / import ----------------------------------------------------------------------------------------

TEST_F(CliTest, ExportImportIsLosslessAcrossDaemons) {
  const std::string pref = saveId("'Use pnpm, not npm' --category pref --topic tooling --file package.json --source user");
  const std::string gotcha = saveId(
      "'JWT expiry uses the container clock' --details 'verify() reads Date.now()' --category gotcha --topic auth "
      "--topic jwt --file src/auth/jwt.ts --file src/auth/session.ts");
  const std::string older = saveId("'Build with make' --category decision");
  const std::string newer = saveId("'Build with cmake and ninja' --category decision --topic build");
  const std::string hidden = saveId("'Deploys happen on Fridays' --category context");
  const std::string wrong = saveId("'Tests run with mocha'");
  const std::string purged = saveId("'The API key lives in the repo'");
  const std::string plain = saveId("'A memory without a category'");
  // The user's global scope travels too, and stays global.
  const std::string global = ok("--scope global save 'Prefer early returns' --category pref --topic style")["id"];
  const std::string globalWrong = ok("--scope global save 'Always use tabs'")["id"];
  ok("reject " + globalWrong + " --reason 'spaces, actually'");
  ok("pin " + gotcha);
  ok("supersede " + older + " --by " + newer);
  ok("hide " + hidden + " --reason 'not now'");
  ok("reject " + wrong + " --reason 'we use vitest'");
  ok("reject " + purged + " --reason 'never'");
  ok("purge " + purged + " --yes");
  ok("recall 'jwt expiry container clock'");  // marks the hits used: use_count and last_used_at move
  ok("update " + plain + " --details 'edited later'");

  CommandResult first = run("export --state all");
  ASSERT_EQ(first.exitCode, 0) << first.err;
  auto lines = parseJsonl(first.out);
  std::map<std::string, json> byId;
  int tombstones = 0;
  for (const auto& l : lines) {
    if (l["type"] == "tombstone") {
      ++tombstones;
      EXPECT_EQ(l.value("content_hash", "").size(), 64u) << l.dump();
      continue;
    }
    EXPECT_EQ(l["type"], "memory") << l.dump();
    byId[l["id"]] = l;
  }
  ASSERT_EQ(byId.size(), 9u) << first.out;
  EXPECT_EQ(tombstones, 3) << first.out;  // the rejected memories' and the purged one's
  EXPECT_EQ(byId[global]["scope"], "global");
  EXPECT_EQ(byId[globalWrong]["scope"], "global");
  EXPECT_EQ(byId[gotcha]["scope"], "project");
  EXPECT_EQ(byId[pref]["source"], "user");
  EXPECT_EQ(byId[gotcha]["pinned"], true);
  EXPECT_EQ(byId[gotcha]["topics"], json({"auth", "jwt"}));
  ASSERT_EQ(byId[gotcha]["files"].size(), 2u);
  EXPECT_EQ(byId[gotcha]["files"][0]["path"], "src/auth/jwt.ts");
  EXPECT_TRUE(byId[gotcha]["files"][0]["blob_id"].is_string()) << "blob ids of tracked files are recorded";
  EXPECT_GE(byId[gotcha]["use_count"].get<int>(), 1);
  EXPECT_EQ(byId[older]["state"], "superseded");
  EXPECT_EQ(byId[older]["superseded_by"], newer);
  EXPECT_EQ(byId[hidden]["state"], "hidden");
  EXPECT_EQ(byId[hidden]["state_reason"], "not now");
  EXPECT_EQ(byId[wrong]["state"], "rejected");
  EXPECT_EQ(byId[wrong]["state_reason"], "we use vitest");
  EXPECT_NE(byId[plain]["updated_at"], byId[plain]["created_at"]);
  EXPECT_EQ(byId.count(purged), 0u);

  // A second daemon, another data dir, another project: import, export, compare byte for byte.
  ScopedDir scoped2{makeTempDir("cli2")};
  const fs::path& dir2 = scoped2.path;
  const std::string project2 = (dir2 / "other").string();
  makeGitProject(project2);
  {
    Memqd second(dir2);
    ASSERT_TRUE(second.start()) << second.log();
    fs::path file = dir2 / "memories.jsonl";
    writeTextFile(file, first.out);
    CommandResult imported = second.memq("--json import " + shellQuote(file.string()), project2);
    ASSERT_EQ(imported.exitCode, 0) << imported.err;
    json counts = parseJson(imported);
    EXPECT_EQ(counts["created"], 9) << counts.dump();
    EXPECT_EQ(counts["tombstones"], 3) << counts.dump();
    CommandResult again = second.memq("export --state all", project2);
    ASSERT_EQ(again.exitCode, 0) << again.err;
    expectSameJsonl(again.out, first.out);

    // Importing the same file again changes nothing.
    CommandResult twice = second.memq("--json import - < " + shellQuote(file.string()), project2);
    ASSERT_EQ(twice.exitCode, 0) << twice.err;
    EXPECT_EQ(parseJson(twice)["created"], 0) << twice.out;
    expectSameJsonl(second.memq("export --state all", project2).out, first.out);

    // The tombstones work in the new home: neither the rejected nor the purged text can come back.
    // (Tombstones are per scope: the global one blocks global saves.)
    const std::pair<const char*, const char*> blocked[] = {{"", "Tests run with mocha"},
                                                           {"", "The API key lives in the repo"},
                                                           {"--scope global ", "Always use tabs"}};
    for (const auto& [scope, text] : blocked) {
      CommandResult r = second.memq(std::string("--json ") + scope + "save " + shellQuote(text), project2);
      ASSERT_EQ(r.exitCode, 4) << r.err;  // refused
      EXPECT_EQ(parseJson(r)["status"], "rejected") << text;
    }
    // And the states still behave: the superseded memory names its replacement, the hidden one stays put away.
    CommandResult dup = second.memq("--json save 'Build with make'", project2);
    EXPECT_EQ(parseJson(dup)["status"], "exists_superseded") << dup.out;
    CommandResult recall = second.memq("--json recall 'Deploys happen on Fridays'", project2);
    // Named, not iterated as parseJson(recall)["memories"]: a range-for does not keep that temporary alive.
    json recalled = parseJson(recall);
    for (const auto& m : recalled["memories"]) EXPECT_NE(m["id"], hidden);
    // The global memory landed in the second daemon's global scope, so every project sees it.
    CommandResult globals = second.memq("--json --scope global list", dir2.string());
    ASSERT_EQ(globals.exitCode, 0) << globals.err;
    json g = parseJson(globals);
    ASSERT_EQ(g["total"], 1) << g.dump();
    EXPECT_EQ(g["memories"][0]["id"], global);

    // --scope on the command line puts everything in that scope.
    ScopedDir scoped3{makeTempDir("cli3")};
    const fs::path& dir3 = scoped3.path;
    const std::string project3 = (dir3 / "third").string();
    makeGitProject(project3);
    {
      Memqd third(dir3);
      ASSERT_TRUE(third.start()) << third.log();
      CommandResult all = third.memq("--json --scope project import " + shellQuote(file.string()), project3);
      ASSERT_EQ(all.exitCode, 0) << all.err;
      EXPECT_EQ(parseJson(all)["created"], 9);
      EXPECT_EQ(parseJson(third.memq("--json --scope global list", project3))["total"], 0);
      EXPECT_EQ(parseJson(third.memq("--json --scope project list --state all --limit 100", project3))["total"], 9);
    }
  }
}

TEST_F(CliTest, ExportWithoutStateGivesActiveMemoriesOnly) {
  const std::string a = saveId("'Active memory'");
  const std::string h = saveId("'Hidden memory'");
  ok("hide " + h);
  auto lines = parseJsonl(run("export").out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], a);
  lines = parseJsonl(run("export --state hidden").out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], h);
}

// ---- import from the reference's memory.db ----------------------------------------------------------------------

// The reference's schema (version 3), as its init() and migrations leave a database.
void createReferenceSchema(SQLite::Database& db) {
  db.exec(R"sql(
    CREATE TABLE IF NOT EXISTS schema_version (
      version INTEGER PRIMARY KEY,
      applied_at TEXT NOT NULL DEFAULT (datetime('now'))
    );
    CREATE TABLE IF NOT EXISTS memories (
      id TEXT PRIMARY KEY,
      category TEXT CHECK (category IS NULL OR category IN ('pref', 'decision', 'gotcha', 'context')),
      summary TEXT NOT NULL,
      details TEXT NOT NULL DEFAULT '',
      topics TEXT NOT NULL DEFAULT '[]',
      source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
      session_id TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      last_used_at TEXT NOT NULL DEFAULT (datetime('now')),
      use_count INTEGER NOT NULL DEFAULT 0,
      content_hash TEXT NOT NULL UNIQUE,
      pinned INTEGER NOT NULL DEFAULT 0,
      hidden INTEGER NOT NULL DEFAULT 0,
      superseded_by TEXT REFERENCES memories(id) ON DELETE SET NULL,
      embedding BLOB,
      embedding_model TEXT,
      embedding_dim INTEGER,
      surface_count INTEGER NOT NULL DEFAULT 0,
      surface_acted_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS idx_memories_category ON memories(category) WHERE hidden = 0;
    CREATE INDEX IF NOT EXISTS idx_memories_last_used ON memories(last_used_at) WHERE hidden = 0;
    CREATE INDEX IF NOT EXISTS idx_memories_pinned ON memories(pinned) WHERE hidden = 0;
    CREATE INDEX IF NOT EXISTS idx_memories_hash ON memories(content_hash);
    CREATE TABLE IF NOT EXISTS memory_files (
      memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
      file_id INTEGER,
      path TEXT NOT NULL,
      PRIMARY KEY (memory_id, path)
    );
    CREATE INDEX IF NOT EXISTS idx_memory_files_file ON memory_files(file_id) WHERE file_id IS NOT NULL;
    CREATE INDEX IF NOT EXISTS idx_memory_files_path ON memory_files(path);
    CREATE TABLE IF NOT EXISTS memory_edges (
      src_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
      dst_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('similar', 'supersedes')),
      weight REAL NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      PRIMARY KEY (src_id, dst_id, kind)
    );
    CREATE INDEX IF NOT EXISTS idx_memory_edges_src ON memory_edges(src_id);
    CREATE INDEX IF NOT EXISTS idx_memory_edges_dst ON memory_edges(dst_id);
    CREATE INDEX IF NOT EXISTS idx_memory_edges_kind ON memory_edges(kind);
    CREATE VIRTUAL TABLE memories_fts USING fts5(summary, details, topics, content='memories', content_rowid='rowid',
                                                 tokenize='unicode61 remove_diacritics 2');
    INSERT OR IGNORE INTO schema_version (version) VALUES (3);
  )sql");
  // The trigram table's remove_diacritics needs SQLite 3.45; older SQLite gets it without.
  try {
    db.exec("CREATE VIRTUAL TABLE memories_fts_tri USING fts5(summary, details, topics, content='memories', "
            "content_rowid='rowid', tokenize='trigram case_sensitive 0 remove_diacritics 1')");
  } catch (const SQLite::Exception&) {
    db.exec("CREATE VIRTUAL TABLE memories_fts_tri USING fts5(summary, details, topics, content='memories', "
            "content_rowid='rowid', tokenize='trigram case_sensitive 0')");
  }
  db.exec(R"sql(
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
      INSERT INTO memories_fts(rowid, summary, details, topics) VALUES (new.rowid, new.summary, new.details, new.topics);
      INSERT INTO memories_fts_tri(rowid, summary, details, topics) VALUES (new.rowid, new.summary, new.details, new.topics);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
      INSERT INTO memories_fts(memories_fts, rowid, summary, details, topics)
        VALUES ('delete', old.rowid, old.summary, old.details, old.topics);
      INSERT INTO memories_fts_tri(memories_fts_tri, rowid, summary, details, topics)
        VALUES ('delete', old.rowid, old.summary, old.details, old.topics);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
      INSERT INTO memories_fts(memories_fts, rowid, summary, details, topics)
        VALUES ('delete', old.rowid, old.summary, old.details, old.topics);
      INSERT INTO memories_fts_tri(memories_fts_tri, rowid, summary, details, topics)
        VALUES ('delete', old.rowid, old.summary, old.details, old.topics);
      INSERT INTO memories_fts(rowid, summary, details, topics) VALUES (new.rowid, new.summary, new.details, new.topics);
      INSERT INTO memories_fts_tri(rowid, summary, details, topics) VALUES (new.rowid, new.summary, new.details, new.topics);
    END;
  )sql");
}

struct RefRow {
  std::string id, category, summary, details, topics, source, createdAt, lastUsedAt;
  int useCount = 0, pinned = 0, hidden = 0;
  std::string supersededBy;  // "" = NULL
};

void insertRow(SQLite::Database& db, const RefRow& r) {
  SQLite::Statement q(db,
                      "INSERT INTO memories (id, category, summary, details, topics, source, created_at, last_used_at, "
                      "use_count, content_hash, pinned, hidden, superseded_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  q.bind(1, r.id);
  if (r.category.empty()) q.bind(2); else q.bind(2, r.category);
  q.bind(3, r.summary);
  q.bind(4, r.details);
  q.bind(5, r.topics);
  q.bind(6, r.source);
  q.bind(7, r.createdAt);
  q.bind(8, r.lastUsedAt);
  q.bind(9, r.useCount);
  q.bind(10, "hash-" + r.id);  // the reference's hash; memq recomputes its own
  q.bind(11, r.pinned);
  q.bind(12, r.hidden);
  if (r.supersededBy.empty()) q.bind(13); else q.bind(13, r.supersededBy);
  q.exec();
}

void insertFile(SQLite::Database& db, const std::string& memoryId, std::optional<int> fileId, const std::string& path) {
  SQLite::Statement q(db, "INSERT INTO memory_files (memory_id, file_id, path) VALUES (?,?,?)");
  q.bind(1, memoryId);
  if (fileId) q.bind(2, *fileId); else q.bind(2);
  q.bind(3, path);
  q.exec();
}

TEST_F(CliTest, ImportFromEmpryoBringsStatesFilesAndTopics) {
  const std::string active = "5f0c2a1e-8d7b-4c3a-9e21-0a1b2c3d4e5f";
  const std::string hiddenId = "6a1d3b2f-9e8c-4d4b-8f32-1b2c3d4e5f60";
  const std::string oldId = "7b2e4c30-af9d-4e5c-9043-2c3d4e5f6071";
  const std::string newId = "8c3f5d41-b0ae-4f6d-a154-3d4e5f607182";
  const std::string bare = "9d406e52-c1bf-4a7e-b265-4e5f60718293";
  const std::string restored = "ae517f63-d2c0-4b8f-8376-5f6071829304";
  fs::path dbPath = dir_ / "empryo/memory.db";
  fs::create_directories(dbPath.parent_path());
  {
    SQLite::Database db(dbPath.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA foreign_keys = ON");
    createReferenceSchema(db);
    insertRow(db, {active, "gotcha", "JWT expiry uses the container clock", "verify() reads Date.now()",
                   R"(["auth","jwt"])", "agent", "2024-01-02T03:04:05.678Z", "2024-02-01T00:00:00.000Z", 4, 1, 0, ""});
    insertRow(db, {hiddenId, "pref", "Use tabs in Makefiles", "", "[]", "user", "2024-01-03T00:00:00.000Z",
                   "2024-01-03T00:00:00.000Z", 0, 0, 1, ""});
    insertRow(db, {newId, "decision", "Build with cmake and ninja", "", R"(["build", 3, null, "ci"])", "agent",
                   "2024-01-05T00:00:00.000Z", "2024-01-05T00:00:00.000Z", 1, 0, 0, ""});
    insertRow(db, {oldId, "decision", "Build with make", "", R"(["build"])", "agent", "2024-01-04T00:00:00.000Z",
                   "2024-01-04T00:00:00.000Z", 2, 0, 1, newId});
    // Raw SQL timestamps, a NULL category, topics that are not JSON.
    insertRow(db, {bare, "", "Deploys go through the staging cluster", "", "not json", "agent", "2024-01-06 07:08:09",
                   "2024-01-06 07:08:09", 0, 0, 0, ""});
    // Restored after a supersede: visible in the reference (hidden = 0) although superseded_by stayed set.
    insertRow(db, {restored, "context", "The cache lives in Redis", "", "[]", "agent", "2024-01-07T00:00:00.000Z",
                   "2024-01-07T00:00:00.000Z", 0, 0, 0, newId});
    insertFile(db, active, 12, "src/auth/jwt.ts");
    insertFile(db, active, std::nullopt, "./src/auth/session.ts");
    insertFile(db, hiddenId, 0, "Makefile");
    insertFile(db, oldId, 7, "Makefile");
    insertFile(db, newId, 8, "CMakeLists.txt");
    insertFile(db, newId, std::nullopt, "/elsewhere/absolute.txt");  // never matched in the reference
  }

  json r = ok("import --from-empryo " + shellQuote(dbPath.string()));
  EXPECT_EQ(r["created"], 6) << r.dump();
  EXPECT_EQ(r["rejected"], 0) << r.dump();

  json all = ok("list --state all --limit 100");
  ASSERT_EQ(all["total"], 6) << all.dump();
  std::map<std::string, json> byId;
  for (const auto& m : all["memories"]) byId[m["id"]] = m;
  ASSERT_EQ(byId.size(), 6u);

  const json& a = byId[active];
  EXPECT_EQ(a["state"], "active");
  EXPECT_EQ(a["category"], "gotcha");
  EXPECT_EQ(a["summary"], "JWT expiry uses the container clock");
  EXPECT_EQ(a["details"], "verify() reads Date.now()");
  EXPECT_EQ(a["topics"], json({"auth", "jwt"}));
  EXPECT_EQ(sorted(a["files"]), sorted({"src/auth/jwt.ts", "src/auth/session.ts"}));
  EXPECT_EQ(a["pinned"], true);
  EXPECT_EQ(a["use_count"], 4);
  EXPECT_EQ(a["source"], "agent");
  EXPECT_EQ(a["created_at"], "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(a["last_used_at"], "2024-02-01T00:00:00.000Z");
  EXPECT_EQ(a["content_hash"].get<std::string>().size(), 64u);

  EXPECT_EQ(byId[hiddenId]["state"], "hidden");
  EXPECT_EQ(byId[hiddenId]["category"], "pref");
  EXPECT_EQ(byId[hiddenId]["source"], "user");
  EXPECT_EQ(byId[hiddenId]["files"], json({"Makefile"}));

  EXPECT_EQ(byId[oldId]["state"], "superseded");
  EXPECT_EQ(byId[oldId]["superseded_by"], newId);
  EXPECT_EQ(byId[oldId]["files"], json({"Makefile"}));
  EXPECT_EQ(byId[oldId]["topics"], json({"build"}));

  EXPECT_EQ(byId[newId]["state"], "active");
  EXPECT_EQ(byId[newId]["topics"], json({"build", "ci"}));
  EXPECT_EQ(byId[newId]["files"], json({"CMakeLists.txt"}));

  EXPECT_EQ(byId[bare]["state"], "active");
  EXPECT_TRUE(byId[bare]["category"].is_null());
  EXPECT_EQ(byId[bare]["topics"], json::array());
  EXPECT_EQ(byId[bare]["files"], json::array());
  EXPECT_EQ(byId[bare]["created_at"], "2024-01-06T07:08:09.000Z");

  EXPECT_EQ(byId[restored]["state"], "active");

  // The imported memories are live: recall by text and by file finds the active ones only.
  json recall = ok("recall --file Makefile");
  for (const auto& m : recall["memories"]) {
    EXPECT_NE(m["id"], hiddenId);
    EXPECT_NE(m["id"], oldId);
  }
  json byText = ok("recall 'jwt expiry container clock'");
  ASSERT_FALSE(byText["memories"].empty());
  EXPECT_EQ(byText["memories"][0]["id"], active);

  // Importing again creates nothing new.
  json again = ok("import --from-empryo " + shellQuote(dbPath.string()));
  EXPECT_EQ(again["created"], 0) << again.dump();
  EXPECT_EQ(ok("list --state all --limit 100")["total"], 6);

  // Not a reference database: a usage error naming the file.
  writeTextFile(dir_ / "notadb.db", "hello");
  CommandResult bad = run("import --from-empryo " + shellQuote((dir_ / "notadb.db").string()));
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("notadb.db"), std::string::npos) << bad.err;
}

// The reference stored the paths it was given: an absolute one, or one that climbs out of the project, never named a
// file of it, and memqd refuses such a path, with it the whole import. They are left out, as are a memory's refs past
// the 16 memqd keeps, and one line on stderr says how many; stdout is the counts as ever.
TEST_F(CliTest, ImportFromEmpryoLeavesOutRefsOutsideTheProjectAndPastSixteenAndSaysHowMany) {
  const std::string outside = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
  const std::string many = "1b2c3d4e-5f60-4b7c-9d8e-0f1a2b3c4d5e";
  fs::path dbPath = dir_ / "empryo/memory.db";
  fs::create_directories(dbPath.parent_path());
  {
    SQLite::Database db(dbPath.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    createReferenceSchema(db);
    insertRow(db, {outside, "gotcha", "Paths outside the project were stored as given", "", "[]", "agent",
                   "2024-01-02T00:00:00.000Z", "2024-01-02T00:00:00.000Z", 0, 0, 0, ""});
    insertRow(db, {many, "context", "A memory about twenty files", "", "[]", "agent", "2024-01-03T00:00:00.000Z",
                   "2024-01-03T00:00:00.000Z", 0, 0, 0, ""});
    insertFile(db, outside, std::nullopt, "/elsewhere/absolute.ts");
    insertFile(db, outside, std::nullopt, "../sibling/outside.ts");
    insertFile(db, outside, std::nullopt, "src/../../climbs/out.ts");
    insertFile(db, outside, std::nullopt, "src/auth/jwt.ts");
    for (int i = 0; i < 20; ++i) {
      insertFile(db, many, std::nullopt, "src/f" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".ts");
    }
  }

  CommandResult r = run("import --from-empryo " + shellQuote(dbPath.string()));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "created 2, deduped 0, rejected 0, tombstones 0\n");
  EXPECT_NE(r.err.find("memq: import: 3 file refs skipped (absolute or outside the project), 4 dropped past 16 per "
                       "memory"),
            std::string::npos)
      << r.err;

  json all = ok("list --state all --limit 100");
  ASSERT_EQ(all["total"], 2) << all.dump();
  std::map<std::string, json> byId;
  for (const auto& m : all["memories"]) byId[m["id"]] = m;
  EXPECT_EQ(byId[outside]["files"], json({"src/auth/jwt.ts"}));
  json first16 = json::array();
  for (int i = 0; i < 16; ++i) first16.push_back("src/f" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".ts");
  EXPECT_EQ(sorted(byId[many]["files"]), first16);

  // Nothing left out, nothing said.
  fs::path cleanPath = dir_ / "empryo/clean.db";
  {
    SQLite::Database db(cleanPath.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    createReferenceSchema(db);
    insertRow(db, {"2c3d4e5f-6071-4c8d-8e9f-1a2b3c4d5e6f", "", "A memory with one file", "", "[]", "user",
                   "2024-01-04T00:00:00.000Z", "2024-01-04T00:00:00.000Z", 0, 0, 0, ""});
    insertFile(db, "2c3d4e5f-6071-4c8d-8e9f-1a2b3c4d5e6f", std::nullopt, "./README.md");
  }
  CommandResult clean = run("import --from-empryo " + shellQuote(cleanPath.string()));
  ASSERT_EQ(clean.exitCode, 0) << clean.err;
  EXPECT_EQ(clean.err.find("import:"), std::string::npos) << clean.err;
}

// A superseded memory names its replacement, and memqd refuses one that names none. The reference may hold a
// superseded memory whose replacement is gone (a row deleted with foreign keys off): it comes over hidden, restorable,
// and the line on stderr says so; one whose replacement is there stays superseded by it.
TEST_F(CliTest, ImportFromEmpryoBringsASupersededMemoryWithoutItsReplacementOverHidden) {
  const std::string orphan = "3d4e5f60-7182-4d9e-9fa0-2b3c4d5e6f70";
  const std::string gone = "4e5f6071-8293-4eaf-a0b1-3c4d5e6f7081";
  const std::string oldId = "5f607182-93a4-4fb0-b1c2-4d5e6f708192";
  const std::string newId = "60718293-a4b5-4c01-82d3-5e6f708192a3";
  fs::path dbPath = dir_ / "empryo/orphan.db";
  fs::create_directories(dbPath.parent_path());
  {
    SQLite::Database db(dbPath.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    db.exec("PRAGMA foreign_keys = OFF");  // superseded_by names a row the database does not hold
    createReferenceSchema(db);
    insertRow(db, {orphan, "decision", "Deploy from the release branch", "", "[]", "agent", "2024-01-02T00:00:00.000Z",
                   "2024-01-02T00:00:00.000Z", 0, 0, 1, gone});
    insertRow(db, {newId, "decision", "Deploy from tags", "", "[]", "agent", "2024-01-04T00:00:00.000Z",
                   "2024-01-04T00:00:00.000Z", 0, 0, 0, ""});
    insertRow(db, {oldId, "decision", "Deploy from main", "", "[]", "agent", "2024-01-03T00:00:00.000Z",
                   "2024-01-03T00:00:00.000Z", 0, 0, 1, newId});
  }

  CommandResult r = run("import --from-empryo " + shellQuote(dbPath.string()));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "created 3, deduped 0, rejected 0, tombstones 0\n");
  EXPECT_NE(r.err.find("memq: import: 1 superseded memory imported as hidden (its replacement is not in the "
                       "database)"),
            std::string::npos)
      << r.err;

  json all = ok("list --state all --limit 100");
  ASSERT_EQ(all["total"], 3) << all.dump();
  std::map<std::string, json> byId;
  for (const auto& m : all["memories"]) byId[m["id"]] = m;
  EXPECT_EQ(byId[orphan]["state"], "hidden");
  EXPECT_TRUE(byId[orphan]["superseded_by"].is_null()) << byId[orphan].dump();
  EXPECT_EQ(byId[oldId]["state"], "superseded");
  EXPECT_EQ(byId[oldId]["superseded_by"], newId);
  EXPECT_EQ(byId[newId]["state"], "active");

  // A save of the orphan's text is told it is hidden (and how to restore it), not "superseded by ?".
  json saved = ok("save 'Deploy from the release branch'");
  EXPECT_EQ(saved["status"], "exists_hidden") << saved.dump();
  EXPECT_EQ(saved["id"], orphan);
}

}  // namespace
}  // namespace memq::testing
